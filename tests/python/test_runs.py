"""Reading run files, the demo table and the ball_on_slope figure, on synthetic runs."""

import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from analysis import (NotARunError, Run, demo_table, format_demo_table, load_runs, open_run,
                      print_demo_table)
from analysis.analytic import ball_on_slope_displacement

REPO_ROOT = Path(__file__).resolve().parents[2]

SOLVER_LOG_KEYS = {"time", "contacts", "outer_iterations", "linear_iterations", "substeps",
                   "residual", "converged", "wall_s", "timing_free_motion",
                   "timing_detection", "timing_assembly", "timing_solve", "timing_g2p",
                   "timing_rigid"}


@pytest.mark.parametrize("fixed_length_strings", [False, True])
def test_every_accessor(make_run, fixed_length_strings):
    path = make_run("a.h5", mu=0.2, extra_params={"hybrid_impulse.cfl": 0.4,
                                                  "hybrid_impulse.apic": True,
                                                  "contact.model": "coulomb"},
                    fixed_length_strings=fixed_length_strings)
    run = Run.open(path)
    assert run.path == path
    assert (run.schema, run.run_id, run.scenario, run.formulation) == \
        ("contactlab-run/1", "a", "ball_on_slope", "hybrid_impulse")
    assert (run.git_commit, run.compiler, run.started_utc) == \
        ("bdb3afd", "GNU 12.2.0", "2024-11-22T02:26:00Z")
    assert (run.status, run.message, run.ok) == ("ok", "", True)
    assert all(isinstance(value, str) for value in run.attributes.values())

    assert run.params["mu"] == 0.2 and isinstance(run.params["mu"], float)
    assert run.params["particles_per_cell"] == 8 and isinstance(run.params["particles_per_cell"], int)
    assert run.params["hybrid_impulse.cfl"] == 0.4
    assert run.params["hybrid_impulse.apic"] is True
    assert run.params["contact.model"] == "coulomb"
    assert not any(key.endswith(".unit") for key in run.params)
    assert run.param_unit("dt") == "s"
    assert run.param_unit("mu") == "1"
    assert run.param_unit("particles_per_cell") is None
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        run.param_unit("nope")

    assert run.config_text.startswith('scenario = "ball_on_slope"\n')
    assert "mu = 0.2\n" in run.config_text
    assert run.summary == {"steps": 100, "wall_s": 1.5, "status": "ok", "message": "",
                           "max_rel_error": 1.0e-3, "regime": "slip",
                           "final_spin_ratio": pytest.approx(0.625),
                           "expected_spin_ratio": pytest.approx(0.625)}

    assert run.series_names() == ["com_displacement", "com_velocity", "slope_contact_force",
                                  "spin"]
    assert run.analytic_names() == ["com_displacement", "com_velocity", "spin"]
    time, value = run.series("com_displacement")
    ref_time, ref_value = run.analytic("com_displacement")
    assert time.shape == value.shape == ref_value.shape == (101,)
    np.testing.assert_array_equal(time, ref_time)
    np.testing.assert_allclose(ref_value, ball_on_slope_displacement(time, 0.2, 45.0), rtol=1e-15)
    np.testing.assert_allclose(value, ref_value * 1.001, rtol=1e-15)
    assert run.series("slope_contact_force")[1].shape == (101, 3)
    assert run.series_info("slope_contact_force") == {
        "unit": "N", "columns": ["x", "y", "z"],
        "description": "contact force the ball exerts on the slope (world)"}
    assert run.series_info("com_displacement")["columns"] == []
    assert run.series_info("com_displacement", group="analytic")["unit"] == "m"
    with pytest.raises(KeyError, match="no /timeseries/energy"):
        run.series("energy")
    with pytest.raises(KeyError, match="no /analytic/slope_contact_force"):
        run.analytic("slope_contact_force")

    log = run.solver_log()
    assert set(log) == SOLVER_LOG_KEYS
    assert all(array.shape == (101,) for array in log.values())
    assert log["converged"].dtype == bool and log["converged"].all()
    assert "ball_on_slope/hybrid_impulse, mu=0.2" in repr(run)


def test_open_run_and_diverged_status(make_run):
    run = open_run(make_run("d.h5", status="diverged", message="NaN at step 42"))
    assert (run.status, run.message, run.ok) == ("diverged", "NaN at step 42", False)


def test_not_a_run_gives_a_clear_error(tmp_path):
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f.create_dataset("x", data=[1.0, 2.0])
    with pytest.raises(NotARunError, match=rf"{plain}: not a contactlab run \(no 'schema'"):
        Run.open(plain)

    text = tmp_path / "notes.h5"
    text.write_text("not HDF5 at all\n")
    with pytest.raises(NotARunError, match=rf"{text}: not a contactlab run \(not an HDF5 file"):
        Run.open(text)

    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["schema"] = "contactlab-run/2"
    with pytest.raises(NotARunError, match=rf"{other}: schema 'contactlab-run/2'"):
        Run.open(other)

    with pytest.raises(FileNotFoundError, match="missing.h5"):
        Run.open(tmp_path / "missing.h5")


def test_load_runs_sorts_and_ignores_partial_files(tmp_path, make_run):
    make_run("r1.h5", formulation="sap", mu=0.6)
    make_run("r2.h5", formulation="hybrid_impulse", mu=0.6)
    make_run("r3.h5", formulation="hybrid_impulse", mu=0.0)
    (tmp_path / "sub").mkdir()
    make_run("sub/r4.h5", scenario="drop_cube", formulation="sap", mu=0.5)
    (tmp_path / "r5.h5.partial").write_bytes(b"half written")
    runs = load_runs(tmp_path)
    assert [(r.scenario, r.formulation, r.params["mu"]) for r in runs] == [
        ("ball_on_slope", "hybrid_impulse", 0.0), ("ball_on_slope", "hybrid_impulse", 0.6),
        ("ball_on_slope", "sap", 0.6), ("drop_cube", "sap", 0.5)]
    assert [r.run_id for r in load_runs([tmp_path / "r1.h5", str(tmp_path / "r3.h5")])] == \
        ["r3", "r1"]


def test_demo_table_rows(make_run, capsys):
    runs = load_runs([make_run("b.h5", formulation="sap", mu=0.6, wall_s=12.25),
                      make_run("a.h5", mu=0.0, status="diverged", message="blew up"),
                      make_run("c.h5", scenario="drop_cube", mu=0.5)])
    rows = demo_table(runs)
    assert [tuple(row) for row in rows] == [
        ("hybrid_impulse", 0.0, "diverged", "slip", 1.0e-3, 0.0, 0.0, 1.5, "blew up"),
        ("sap", 0.6, "ok", "roll", 1.0e-3, 1.0, 1.0, 12.25, ""),
        ("hybrid_impulse", 0.5, "ok", None, None, None, None, 1.5, "")]
    assert rows[0].max_rel_error == 1.0e-3
    lines = format_demo_table(rows).splitlines()
    assert lines[0].split() == ["formulation", "mu", "status", "regime", "max", "rel.", "error",
                                "spin", "wr/v", "expected", "wall", "time", "[s]", "message"]
    assert lines[2].split() == ["hybrid_impulse", "0", "diverged", "slip", "1.000e-03", "0.000",
                                "0.000", "1.50", "blew", "up"]
    assert lines[3].split() == ["sap", "0.6", "ok", "roll", "1.000e-03", "1.000", "1.000",
                                "12.25"]
    assert lines[4].split() == ["hybrid_impulse", "0.5", "ok", "-", "-", "-", "-", "1.50"]
    # Aligned: on every line the right-aligned wall time column ends where the message
    # column (the last, left-aligned) begins, less the two-space gap.
    start = lines[0].index("message")
    assert all(len(line[:start].rstrip()) == start - 2 for line in lines)
    print_demo_table(runs)
    assert "diverged  slip" in capsys.readouterr().out


def test_demo_table_of_a_blow_up_stays_readable(make_run):
    """A diverged run's summary may hold 1e43: exponent form, not 44 digits, and a multi-line
    message on one line."""
    path = make_run("d.h5", mu=0.3, status="diverged", message="step 43:\n|v| > 1e30")
    with h5py.File(path, "r+") as f:
        f["summary"].attrs["final_spin_ratio"] = -4.7e43
        f["summary"].attrs["max_rel_error"] = math.inf
    (row,) = demo_table(load_runs(path))
    assert row.message == "step 43: |v| > 1e30"
    line = format_demo_table([row]).splitlines()[2]
    assert line.split() == ["hybrid_impulse", "0.3", "diverged", "roll", "inf", "-4.700e+43",
                            "1.000", "1.50", "step", "43:", "|v|", ">", "1e30"]


def _module(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def test_demo_report_cli(tmp_path, make_run):
    make_run("x.h5", mu=0.3)
    result = _module("analysis.demo_report", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split() == ["hybrid_impulse", "0.3", "ok", "roll",
                                                     "1.000e-03", "1.000", "1.000", "1.50"]


def test_figure_from_two_runs(tmp_path, make_run):
    make_run("slip.h5", mu=0.2)
    make_run("roll.h5", mu=0.6)
    make_run("other.h5", scenario="drop_cube")
    out = tmp_path / "fig.png"
    result = _module("analysis.figures.ball_on_slope", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def _blow_up(path, at):
    """From time ``at`` on, the run's displacement, velocity and spin read -4.7e43 (NaN at
    the last sample), as a diverged run's file does."""
    with h5py.File(path, "r+") as f:
        for name in ("com_displacement", "com_velocity", "spin"):
            group = f["timeseries"][name]
            time, value = group["time"][()], group["value"][()]
            value[time >= at] = -4.7e43
            value[-1] = np.nan
            group["value"][...] = value
    return path


@pytest.fixture
def demo_runs(tmp_path, make_run):
    """Two formulations × μ ∈ {0, 0.2, 0.3, 0.6}: penalty μ = 0.6 recorded as diverged
    (huge values from t = 0.43 s), sap μ = 0.3 blowing up at t = 0.71 s with status ok."""
    for formulation in ("sap", "penalty"):
        for mu in (0.0, 0.2, 0.3, 0.6):
            diverged = (formulation, mu) == ("penalty", 0.6)
            path = make_run(f"{formulation}_mu{mu}.h5", formulation=formulation, mu=mu,
                            status="diverged" if diverged else "ok",
                            message="step 43: |v| > 1e30 m/s" if diverged else "")
            if diverged:
                _blow_up(path, 0.43)
            elif (formulation, mu) == ("sap", 0.3):
                _blow_up(path, 0.71)
    return tmp_path


def test_figure_limits_come_from_the_analytic_range_not_a_blow_up(demo_runs):
    import matplotlib.pyplot as plt

    from analysis.figures import ball_on_slope

    fig = ball_on_slope.draw(load_runs(demo_runs))
    try:
        assert len(fig.axes) == 4  # a row per formulation: displacement, spin ratio
        largest = float(ball_on_slope_displacement(1.0, 0.0, 45.0))  # μ = 0 at t = 1 s
        for ax in fig.axes[0::2]:  # displacement: analytic range [0, 3.47 m] plus margins
            low, high = ax.get_ylim()
            assert -0.5 * largest <= low <= 0.0 and largest <= high <= 2.0 * largest, (low, high)
            for line in ax.get_lines():  # nothing drawn off-scale
                assert np.all(np.abs(line.get_ydata()) <= 1.01 * largest)
        for ax in fig.axes[1::2]:  # spin ratio: analytic values in [0, 1]
            low, high = ax.get_ylim()
            assert -1.0 <= low <= 0.0 and 1.0 <= high <= 2.0, (low, high)
        titles = [ax.get_title() for ax in fig.axes]
        assert titles == [f"{formulation}: {panel} (1 diverged)"
                          for formulation in ("penalty", "sap")
                          for panel in ("displacement", "spin ratio ωr/v")]
        labels = [text.get_text() for ax in fig.axes for text in ax.get_legend().get_texts()]
        assert "μ = 0.6 (roll) diverged at t = 0.43 s" in labels
        assert "μ = 0.3 (roll) diverged at t = 0.71 s" in labels
        assert "μ = 0.2 (slip) max rel. error 1.0e-03" in labels
        assert "μ = 0.2: expected 0.625, final 0.625" in labels
        # The diverged runs are drawn up to their divergence time.
        penalty_u = fig.axes[0].get_lines()
        drawn = [line for line in penalty_u if line.get_label().startswith("μ = 0.6")][0]
        assert 0.4 < drawn.get_xdata().max() < 0.43
    finally:
        plt.close(fig)


def test_figure_of_a_run_diverged_in_range_and_one_diverged_at_once(tmp_path, make_run):
    import matplotlib.pyplot as plt

    from analysis.figures import ball_on_slope

    make_run("ok.h5", mu=0.2)
    make_run("stopped.h5", mu=0.3, status="diverged", message="Newton failed")  # data in range
    _blow_up(make_run("at_once.h5", mu=0.6, status="diverged", message="NaN"), 0.0)
    fig = ball_on_slope.draw(load_runs(tmp_path))
    try:
        labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
        assert "μ = 0.3 (roll) diverged at t = 1 s" in labels  # its last recorded time
        assert "μ = 0.6 (roll) diverged at t = 0 s (not plotted)" in labels
        assert fig.axes[0].get_ylim()[1] < 2.0 * float(ball_on_slope_displacement(1.0, 0.2, 45.0))
    finally:
        plt.close(fig)


def test_figure_cli_with_a_diverged_run(demo_runs):
    out = demo_runs / "fig.png"
    result = _module("analysis.figures.ball_on_slope", str(demo_runs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_figure_without_ball_on_slope_runs_fails_in_one_line(tmp_path, make_run):
    make_run("other.h5", scenario="drop_cube")
    result = _module("analysis.figures.ball_on_slope", str(tmp_path), "--out",
                     str(tmp_path / "fig.png"))
    assert result.returncode != 0
    assert result.stderr.strip() == f"ball_on_slope: no ball_on_slope runs found in {tmp_path}"
    assert not (tmp_path / "fig.png").exists()


# Run files whose headers declare more than they hold, or something else than the schema says:
# checked before anything is read, reported in one line naming the file and the dataset.
def _replace(f, name, **dataset):
    del f[name]
    f.create_dataset(name, **dataset)


# (what is wrong, how to make it so, the dataset the error names)
CRAFTED_SERIES = {
    # A chunked dataset declares 2^40 rows in a few bytes of header and holds nothing.
    "2^40 rows": (lambda f: _replace(f, "timeseries/com_displacement/value", shape=(2 ** 40,), maxshape=(None,),
                                     chunks=(4096,), dtype="f8"), "/timeseries/com_displacement/value"),
    "values and times of different lengths": (
        lambda f: _replace(f, "timeseries/com_displacement/value", data=np.zeros(50)),
        "/timeseries/com_displacement/value: shape 50, expected 101 or 101 x N"),
    "times of rank 2": (lambda f: _replace(f, "timeseries/com_displacement/time", data=np.zeros((101, 2))),
                        "/timeseries/com_displacement/time: shape 101 x 2"),
    "text for numbers": (lambda f: _replace(f, "timeseries/com_displacement/value",
                                            data=np.array(["x"] * 101, dtype=h5py.string_dtype())),
                         "/timeseries/com_displacement/value: type object"),
}


@pytest.mark.parametrize("case", CRAFTED_SERIES)
def test_figure_refuses_a_crafted_time_series_in_one_line(tmp_path, make_run, case):
    craft, where = CRAFTED_SERIES[case]
    (tmp_path / "runs").mkdir()
    path = make_run("runs/a.h5", mu=0.2)
    with h5py.File(path, "r+") as f:
        craft(f)
    out = tmp_path / "fig.png"
    result = _module("analysis.figures.ball_on_slope", str(tmp_path / "runs"), "--out", str(out))
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"ball_on_slope: {path}: {where}"), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_solver_log_headers_are_checked_before_reading(make_run):
    from analysis.runs import RunDataError

    path = make_run("a.h5")
    with h5py.File(path, "r+") as f:
        _replace(f, "solver_log/wall_s", shape=(2 ** 40,), maxshape=(None,), chunks=(4096,), dtype="f8")
    with pytest.raises(RunDataError, match=r"/solver_log/wall_s: declares 1099511627776 float64 \(8 TiB\)"):
        Run.open(path).solver_log()
    with h5py.File(path, "r+") as f:
        _replace(f, "solver_log/wall_s", data=np.zeros(7))
    with pytest.raises(RunDataError, match="/solver_log: columns of different lengths"):
        Run.open(path).solver_log()
    # The command lines that read the log: one line, exit status 2.
    result = _module("analysis.validation_report", str(path))
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.startswith(f"validation_report: {path}: /solver_log: columns of different lengths")
    assert len(result.stderr.splitlines()) == 1
