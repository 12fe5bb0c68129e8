"""dough_rolling through the real executable (a short run and `describe`), and its timing
figure on synthetic quasi_newton / sap runs.

The executable tests need CONTACTLAB_BIN=/path/to/contactlab; the figure tests do not.
"""

import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from analysis import Run, load_runs
from analysis.figures import dough_rolling_timing

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENE = REPO_ROOT / "data" / "scenes" / "dough_rolling.toml"
SERIES = {"pin_axis_position", "pin_track_speed", "pin_spin", "slip_ratio", "pin_contact_force",
          "contacts", "outer_iterations", "dough_top_height", "dough_mean_thickness"}
SUMMARY = {"particles", "dough_mass", "slip_ratio_mean", "slip_samples", "slip_ratio_mean_pass1",
           "slip_ratio_mean_pass2", "slip_ratio_mean_pass3", "contacts_mean", "contacts_max",
           "mean_outer_iterations", "final_dough_top_height", "final_dough_mean_thickness"}


def test_short_hybrid_impulse_run_records_every_series(contactlab_bin, tmp_path):
    out = tmp_path / "dough.h5"
    command = [contactlab_bin, "run", "dough_rolling", "-f", "hybrid_impulse", "--config", str(SCENE),
               "--set", "duration=0.05", "--quiet", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    run = Run.open(out)
    assert run.ok and run.scenario == "dough_rolling"
    assert SERIES <= set(run.series_names())
    assert {"pin_spin", "slip_ratio"} <= set(run.analytic_names())
    time, position = run.series("pin_axis_position")
    assert position.shape == (6, 2) and time[-1] == pytest.approx(0.05)
    # The axis starts r + 5 mm above the 6 cm dough and has barely begun to descend.
    assert position[0, 1] == pytest.approx(0.06 + 0.035 + 0.005)
    assert np.all(np.diff(position[:, 1]) <= 0.0) and position[-1, 1] > 0.099
    assert run.series("pin_contact_force")[1].shape == (6, 3)
    # Not rolling yet: the slip ratio is undefined (|v| below the threshold) everywhere.
    assert np.all(np.isnan(run.series("slip_ratio")[1]))
    _, spin_reference = run.analytic("pin_spin")
    np.testing.assert_allclose(spin_reference, 0.0, atol=1e-12)
    assert SUMMARY <= set(run.summary)
    assert run.summary["particles"] == 5880
    assert run.summary["dough_mass"] == pytest.approx(1000.0 * 0.35 * 0.28 * 0.06)
    assert math.isnan(run.summary["slip_ratio_mean"]) and run.summary["slip_samples"] == 0
    assert run.summary["final_dough_top_height"] == pytest.approx(0.055, abs=2e-3)
    # Wall time per step lives in the solver log, one row per step.
    assert len(run.solver_log()["wall_s"]) == 5


def test_unknown_table_model_is_one_line_naming_the_key(contactlab_bin, tmp_path):
    out = tmp_path / "dough.h5"
    result = subprocess.run([contactlab_bin, "run", "dough_rolling", "-f", "sap", "--config", str(SCENE),
                             "--set", "table_model=wall", "--out", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "'table_model'" in result.stderr
    assert not list(tmp_path.iterdir())


def test_describe_lists_the_scenario_keys(contactlab_bin):
    result = subprocess.run([contactlab_bin, "describe", "dough_rolling"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for key in ("dough_length", "yield_stress", "pin_radius", "return_yaw_deg", "extra_depth", "table_model",
                "slip_speed_threshold", "grid_spacing", "particles_per_cell", "dt", "duration"):
        assert f"  {key} " in result.stdout, key


# Synthetic runs for the timing figure: the schema of conftest.write_run, with the solver
# log's wall times and (optionally) a gradient-norm history set per run.

def _timing_run(make_run, directory, formulation, tolerance, ms_per_step, history=None,
                in_params=True, table_model=None, options=None):
    """A dough_rolling run file tmp_path/directory/<formulation>_<ε_r>[_<table model>][_options].h5
    whose steps take ``ms_per_step`` on average; ``options`` adds parameters (and the suffix)."""
    key = f"{formulation}.relative_tolerance"
    params = {key: tolerance, **(options or {})}
    suffix = "_options" if options else ""
    if table_model is not None:
        params["table_model"] = table_model
        suffix = f"_{table_model}" + suffix
    path = make_run(f"{directory}/{formulation}_{tolerance:.0e}{suffix}.h5", scenario="dough_rolling",
                    formulation=formulation, steps=20, extra_params=params)
    with h5py.File(path, "r+") as f:
        log = f["solver_log"]
        wall = np.full(log["wall_s"].shape, 1.0e-3 * ms_per_step)
        wall[0], wall[1] = 2.0 * wall[0], 0.0  # uneven steps, same mean
        del log["wall_s"]
        log.create_dataset("wall_s", data=wall)
        if not in_params:
            del f["params"].attrs[key]
        if history is not None:
            group = f["timeseries"].create_group("qn_gradient_history")
            group.create_dataset("time", data=np.arange(len(history), dtype=float))
            group.create_dataset("value", data=np.asarray(history, dtype=float))
            group.attrs["unit"] = "kg^0.5 m/s"
            group.attrs["description"] = "gradient norm per iteration"
    return path


@pytest.fixture
def timing_runs(tmp_path, make_run):
    (tmp_path / "sweep").mkdir()
    for index, tolerance in enumerate((1e-1, 1e-3, 1e-5)):
        _timing_run(make_run, "sweep", "quasi_newton", tolerance, 20.0 * (index + 1))
        # The sap run at 1e-3 keeps ε_r only in the resolved TOML of /config.
        _timing_run(make_run, "sweep", "sap", tolerance, 1000.0 * (index + 1), in_params=tolerance != 1e-3)
    _timing_run(make_run, "sweep", "hybrid_impulse", 1e-2, 1.0)  # ignored: not a timed formulation
    return tmp_path / "sweep"


def test_timing_rows_and_table(timing_runs):
    runs = load_runs(timing_runs)
    sap_run = next(run for run in runs if run.formulation == "sap" and run.path.name.startswith("sap_1e-03"))
    assert "sap.relative_tolerance" not in sap_run.params
    assert dough_rolling_timing.relative_tolerance(sap_run) == pytest.approx(1e-3)
    rows = dough_rolling_timing.timing_rows(runs)
    assert [row.relative_tolerance for row in rows] == pytest.approx([1e-5, 1e-3, 1e-1])
    for row, factor in zip(rows, (3, 2, 1)):
        assert row.quasi_newton_ms == pytest.approx(20.0 * factor)
        assert row.sap_ms == pytest.approx(1000.0 * factor)
        assert row.speedup == pytest.approx(50.0)
    table = dough_rolling_timing.format_timing_table(rows)
    assert table.splitlines()[0].split()[:2] == ["eps_r", "QN"]
    assert len(table.splitlines()) == 2 + 3


def test_quasi_newton_with_options_is_its_own_series(timing_runs, make_run):
    # A warm-started run at 1e-3 must not be averaged into [yu2025async]'s quasi_newton (40 ms).
    _timing_run(make_run, "sweep", "quasi_newton", 1e-3, 8.0,
                options={"quasi_newton.warm_start": "previous_impulses", "quasi_newton.kinematic_poses": "substep"})
    _timing_run(make_run, "sweep", "quasi_newton", 1e-5, 12.0, options={"quasi_newton.kinematic_poses": "substep"})
    runs = load_runs(timing_runs)
    assert sorted(dough_rolling_timing.series(run) for run in runs if run.formulation == "quasi_newton") == (
        ["quasi_newton"] * 3 + ["quasi_newton + options"] * 2)
    rows = {row.relative_tolerance: row for row in dough_rolling_timing.timing_rows(runs)}
    assert rows[1e-3].quasi_newton_ms == pytest.approx(40.0)
    assert rows[1e-3].options_ms == pytest.approx(8.0)
    assert rows[1e-3].options_speedup == pytest.approx(2000.0 / 8.0)
    assert rows[1e-5].options_speedup == pytest.approx(3000.0 / 12.0)
    assert math.isnan(rows[1e-1].options_ms) and math.isnan(rows[1e-1].options_speedup)
    assert "SAP/QN+opt" in dough_rolling_timing.format_timing_table(list(rows.values()))


def test_figure_cli_without_histories(timing_runs, tmp_path):
    out = tmp_path / "timing.png"
    result = subprocess.run([sys.executable, "-m", "analysis.figures.dough_rolling_timing", str(timing_runs),
                             "--out", str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "speedup" in result.stdout and "1e-05" in result.stdout
    assert out.stat().st_size > 10_000


def test_figure_with_a_history_and_missing_partner(tmp_path, make_run):
    (tmp_path / "runs").mkdir()
    history = 10.0 ** -np.arange(8.0)
    # Two recorded steps; the longer history is the one drawn.
    _timing_run(make_run, "runs", "quasi_newton", 1e-2, 15.0,
                history=np.stack([np.r_[history[:3], [np.nan] * 5], history]))
    _timing_run(make_run, "runs", "sap", 1e-2, 900.0)
    _timing_run(make_run, "runs", "quasi_newton", 1e-4, 30.0)  # no sap partner: speedup NaN
    runs = load_runs(tmp_path / "runs")
    qn = next(run for run in runs if run.formulation == "quasi_newton" and "1e-02" in run.path.name)
    drawn = dough_rolling_timing.convergence_history(qn)
    np.testing.assert_allclose(drawn["gradient_norm"], history)
    assert drawn["threshold"] is None and drawn["time"] is None
    assert dough_rolling_timing.convergence_history(
        next(run for run in runs if run.formulation == "sap")) is None
    out = tmp_path / "timing.png"
    with open(tmp_path / "table.txt", "w") as table:
        rows = dough_rolling_timing.plot(runs, out, file=table)
    assert [row.relative_tolerance for row in rows] == pytest.approx([1e-4, 1e-2])
    assert math.isnan(rows[0].sap_ms) and math.isnan(rows[0].speedup)
    assert rows[1].speedup == pytest.approx(60.0)
    assert out.stat().st_size > 10_000


def test_history_from_the_solver_log_iteration_records(tmp_path, make_run):
    (tmp_path / "runs").mkdir()
    path = _timing_run(make_run, "runs", "quasi_newton", 5e-2, 20.0)
    # /solver_log/iterations: one row per iteration; step 0.02 s has solves 0 (3 iterations)
    # and 1 (5 iterations), step 0.03 s one solve of 2.
    time = np.array([0.02] * 8 + [0.03] * 2)
    solve = np.array([0, 0, 0, 1, 1, 1, 1, 1, 0, 0])
    iteration = np.array([0, 1, 2, 0, 1, 2, 3, 4, 0, 1])
    norms = 10.0 ** -iteration.astype(float) * np.where(solve == 1, 2.0, 1.0)
    with h5py.File(path, "r+") as f:
        group = f.create_group("solver_log/iterations")
        for name, data in (("time", time), ("kind", np.ones(10, dtype=np.int8)), ("solve", solve),
                           ("iteration", iteration), ("residual", norms), ("threshold", np.full(10, 1e-3)),
                           ("cost", -norms)):
            group.create_dataset(name, data=data)
    run = Run.open(path)
    history = dough_rolling_timing.convergence_history(run)
    assert history["time"] == pytest.approx(0.02)
    np.testing.assert_allclose(history["gradient_norm"], 2.0 * 10.0 ** -np.arange(5.0))
    np.testing.assert_allclose(history["threshold"], 1e-3)
    # The wall time is still read with a group beside the per-step datasets.
    assert dough_rolling_timing.milliseconds_per_step(run) == pytest.approx(20.0)
    out = tmp_path / "timing.png"
    with open(tmp_path / "table.txt", "w") as table:
        dough_rolling_timing.plot([run], out, file=table)
    assert out.stat().st_size > 10_000


def test_figure_without_timed_runs_fails_in_one_line(tmp_path, make_run):
    _timing_run(make_run, ".", "hybrid_impulse", 1e-2, 1.0)
    result = subprocess.run([sys.executable, "-m", "analysis.figures.dough_rolling_timing", str(tmp_path),
                             "--out", str(tmp_path / "x.png")], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "quasi_newton" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_rows_per_table_model_with_iterations_and_outcomes(tmp_path, make_run):
    (tmp_path / "runs").mkdir()
    # Runs without table_model count as contact_body (files written before the key).
    _timing_run(make_run, "runs", "quasi_newton", 1e-2, 500.0)
    _timing_run(make_run, "runs", "sap", 1e-2, 5000.0)
    _timing_run(make_run, "runs", "quasi_newton", 1e-2, 100.0, table_model="separating")
    _timing_run(make_run, "runs", "sap", 1e-2, 300.0, table_model="separating")
    runs = load_runs(tmp_path / "runs")
    for run in runs:
        with h5py.File(run.path, "r+") as f:
            log = f["solver_log"]
            iterations = np.full(log["outer_iterations"].shape, 7 if run.formulation == "sap" else 40)
            del log["outer_iterations"]
            log.create_dataset("outer_iterations", data=iterations)
            f["summary"].attrs["final_dough_mean_thickness"] = 0.045
            f["summary"].attrs["slip_ratio_mean_pass2"] = 0.25
    runs = load_runs(tmp_path / "runs")
    rows = dough_rolling_timing.timing_rows(runs)
    assert [(row.table_model, row.relative_tolerance) for row in rows] == [("contact_body", 1e-2),
                                                                            ("separating", 1e-2)]
    assert rows[0].speedup == pytest.approx(10.0) and rows[1].speedup == pytest.approx(3.0)
    assert rows[1].quasi_newton_iterations == pytest.approx(40.0)
    assert rows[1].sap_iterations == pytest.approx(7.0)
    outcomes = dough_rolling_timing.outcome_rows(runs)
    assert [(row.table_model, row.formulation) for row in outcomes] == [
        ("contact_body", "quasi_newton"), ("contact_body", "sap"), ("separating", "quasi_newton"),
        ("separating", "sap")]
    assert outcomes[0].thickness_mm == pytest.approx(45.0) and outcomes[0].slip_pass2 == pytest.approx(0.25)
    assert math.isnan(outcomes[0].slip_pass1)
    text = dough_rolling_timing.format_outcome_table(outcomes)
    assert "separating" in text and "45.00" in text
