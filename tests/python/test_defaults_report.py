"""analysis.defaults_report: the acceptance criteria of the defaults sweeps, and the table
read from real run files."""

import math
import subprocess

import pytest

from analysis import defaults_report as report

HALF_WEIGHT = 0.5 * 0.4 * 9.81


def squeezed(fx=10.0, fy=0.0, fz=HALF_WEIGHT, fz_std=0.01, drift=-1e-3):
    summary = {"cube_mass_sampled": 0.4, "cube_vertical_drift": drift}
    for side in ("left", "right"):
        summary.update({f"{side}_fx_mean": fx, f"{side}_fy_mean": fy, f"{side}_fz_mean": fz,
                        f"{side}_fz_std": fz_std})
    return {"summary": summary, "params": {"squeeze_force": 10.0, "gravity": 9.81, "dt": 0.001}}


@pytest.mark.parametrize("change, passes", [
    ({}, True),
    ({"fx": 10.0 * 1.019}, True), ({"fx": 10.0 * 1.021}, False),
    ({"fz": HALF_WEIGHT * 0.981}, True), ({"fz": HALF_WEIGHT * 0.979}, False),
    ({"fy": 0.019 * HALF_WEIGHT}, True), ({"fy": 0.021 * HALF_WEIGHT}, False),
    ({"fz_std": 0.049 * HALF_WEIGHT}, True), ({"fz_std": 0.051 * HALF_WEIGHT}, False),
    ({"drift": -4.9e-3}, True), ({"drift": -5.1e-3}, False),
    ({"fz": math.nan}, False),
])
def test_squeezed_cube_criteria(change, passes):
    _, verdict = report.check_squeezed_cube(squeezed(**change))
    assert verdict is passes


def test_incline_block_criteria():
    stop = {"analytic_stop_time": 0.5152}
    assert report.check_incline_block({"summary": {**stop, "stop_time": 0.5152 * 1.029}, "params": {"mu": 0.125}})[1]
    assert not report.check_incline_block({"summary": {**stop, "stop_time": 0.5152 * 1.031}, "params": {"mu": 0.125}})[1]
    assert not report.check_incline_block({"summary": stop, "params": {"mu": 0.125}})[1]  # never stopped
    assert report.check_incline_block({"summary": {"max_rel_error": 0.01}, "params": {"mu": 0.1}})[1]
    assert not report.check_incline_block({"summary": {"stop_time": 0.8}, "params": {"mu": 0.1}})[1]


def test_pyramid_and_wedge_criteria():
    stands = {"collapsed": 0, "drift": 0.9e-3, "ball_drop": 0.001}
    assert report.check_pyramid({"summary": stands, "params": {"mu": 0.3}})[1]
    assert not report.check_pyramid({"summary": {**stands, "drift": 1.1e-3}, "params": {"mu": 0.3}})[1]
    assert not report.check_pyramid({"summary": stands, "params": {"mu": 0.05}})[1]
    assert report.check_pyramid({"summary": {**stands, "collapsed": 1}, "params": {"mu": 0.05}})[1]
    walls = {"left_wall_force": 50.0, "right_wall_force": 50.0, "mu_star": 0.2, "descent": 0.001}
    assert report.check_wedge({"summary": {**walls, "jammed": 1}, "params": {"mu": 0.25}})[1]
    assert not report.check_wedge({"summary": {**walls, "jammed": 0}, "params": {"mu": 0.25}})[1]
    assert report.check_wedge({"summary": {**walls, "jammed": 0}, "params": {"mu": 0.1}})[1]
    # No wall force measured (mu* NaN) fails whatever the motion.
    assert not report.check_wedge({"summary": {**walls, "jammed": 1, "mu_star": math.nan}, "params": {"mu": 0.25}})[1]


def test_table_from_real_runs(contactlab_bin, tmp_path):
    for formulation in ("hybrid_impulse", "quasi_newton"):
        subprocess.run([contactlab_bin, "run", "squeezed_cube", "-f", formulation, "--set", "grid_spacing=0.025",
                        "--set", "dt=0.002", "--set", "duration=0.006", "--set", "averaging_window=0.004",
                        "--quiet", "--out", str(tmp_path / f"{formulation}.h5")], check=True)
    rows = report.rows_of([tmp_path])
    assert [row["formulation"] for row in rows] == ["quasi_newton", "hybrid_impulse"]
    for row in rows:
        assert row["scenario"] == "squeezed_cube" and row["status"] == "ok"
        assert row["verdict"] == "FAIL"  # 6 ms is far from the steady state
        assert row["ms_per_step"] > 0 and math.isfinite(row["contacts"])
    text = report.format_table(rows, markdown=True)
    assert text.count("\n") == 3 and "squeezed_cube" in text
