"""Reading run files, the demo table and the ball_on_slope figure, on synthetic runs."""

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
                           "max_rel_error": 1.0e-3, "regime": "slip", "final_spin_ratio": 0.5,
                           "expected_spin_ratio": 1.0}

    assert run.series_names() == ["com_displacement", "com_velocity"]
    assert run.analytic_names() == ["com_displacement"]
    time, value = run.series("com_displacement")
    ref_time, ref_value = run.analytic("com_displacement")
    assert time.shape == value.shape == ref_value.shape == (101,)
    np.testing.assert_array_equal(time, ref_time)
    np.testing.assert_allclose(ref_value, ball_on_slope_displacement(time, 0.2, 45.0), rtol=1e-15)
    np.testing.assert_allclose(value, ref_value * 1.001, rtol=1e-15)
    assert run.series("com_velocity")[1].shape == (101, 3)
    assert run.series_info("com_velocity") == {"unit": "m/s", "columns": ["x", "y", "z"],
                                                "description": "centre-of-mass velocity"}
    assert run.series_info("com_displacement")["columns"] == []
    assert run.series_info("com_displacement", group="analytic")["unit"] == "m"
    with pytest.raises(KeyError, match="no /timeseries/energy"):
        run.series("energy")
    with pytest.raises(KeyError, match="no /analytic/com_velocity"):
        run.analytic("com_velocity")

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
        ("hybrid_impulse", 0.0, "slip", 1.0e-3, 0.5, 1.0, 1.5),
        ("sap", 0.6, "roll", 1.0e-3, 0.5, 1.0, 12.25),
        ("hybrid_impulse", 0.5, None, None, None, None, 1.5)]
    assert rows[0].max_rel_error == 1.0e-3
    lines = format_demo_table(rows).splitlines()
    assert lines[0].split() == ["formulation", "mu", "regime", "max", "rel.", "error", "spin",
                                "wr/v", "expected", "wall", "time", "[s]"]
    assert lines[2].split() == ["hybrid_impulse", "0", "slip", "1.000e-03", "0.500", "1.000",
                                "1.50"]
    assert lines[4].split() == ["hybrid_impulse", "0.5", "-", "-", "-", "-", "1.50"]
    assert len({len(line) for line in lines[:4]}) == 1  # aligned
    print_demo_table(runs)
    assert "note: a.h5: diverged: blew up" in capsys.readouterr().out


def _module(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def test_demo_report_cli(tmp_path, make_run):
    make_run("x.h5", mu=0.3)
    result = _module("analysis.demo_report", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split() == ["hybrid_impulse", "0.3", "roll",
                                                     "1.000e-03", "0.500", "1.000", "1.50"]


def test_figure_from_two_runs(tmp_path, make_run):
    make_run("slip.h5", mu=0.2)
    make_run("roll.h5", mu=0.6)
    make_run("other.h5", scenario="drop_cube")
    out = tmp_path / "fig.png"
    result = _module("analysis.figures.ball_on_slope", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_figure_without_ball_on_slope_runs_fails_in_one_line(tmp_path, make_run):
    make_run("other.h5", scenario="drop_cube")
    result = _module("analysis.figures.ball_on_slope", str(tmp_path), "--out",
                     str(tmp_path / "fig.png"))
    assert result.returncode != 0
    assert result.stderr.strip() == f"ball_on_slope: no ball_on_slope runs found in {tmp_path}"
    assert not (tmp_path / "fig.png").exists()
