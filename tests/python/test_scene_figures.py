"""Short squeezed_cube, close_lift_shake, sand_pile and floating_box runs of the real executable feed their figure
scripts, which must write a non-empty PNG.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(contactlab_bin, scenario, out, *settings):
    command = [contactlab_bin, "run", scenario, "--formulation", "hybrid_impulse", "--quiet",
               "--out", str(out)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


def _figure(module, inputs, out):
    result = subprocess.run([sys.executable, "-m", module, *map(str, inputs), "--out", str(out)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10_000


def test_squeezed_cube_figure(contactlab_bin, tmp_path):
    run = _run(contactlab_bin, "squeezed_cube", tmp_path / "squeezed.h5", "grid_spacing=0.02",
               "duration=0.05", "dt=0.01", "averaging_window=0.02")
    time, force = run.series("left_panel_force")
    assert force.shape == (len(time), 3)
    _, steady = run.analytic("left_panel_force")
    assert steady[-1][0] == pytest.approx(10.0)
    assert steady[-1][2] == pytest.approx(0.5 * run.summary["cube_mass_sampled"] * 9.81)
    _figure("analysis.figures.squeezed_cube", [tmp_path / "squeezed.h5"], tmp_path / "squeezed.png")


def test_close_lift_shake_figure(contactlab_bin, tmp_path):
    run = _run(contactlab_bin, "close_lift_shake", tmp_path / "shake.h5", "grid_spacing=0.02",
               "close_time=0.01", "lift_time=0.01", "shake_duration=0.01", "duration=0.03")
    assert "held" in run.summary
    _figure("analysis.figures.close_lift_shake", [tmp_path / "shake.h5"], tmp_path / "shake.png")


def test_sand_pile_figure(contactlab_bin, tmp_path):
    dry = _run(contactlab_bin, "sand_pile", tmp_path / "dry.h5", "grid_spacing=0.025", "duration=0.05")
    radii = dry.series_info("surface_height")["columns"]
    _, surface = dry.series("surface_height")
    assert surface.shape[1] == len(radii)
    _, cone = dry.analytic("surface_height")
    assert cone.shape == surface.shape
    assert dry.summary["friction_angle"] == 30.0
    cohesive = _run(contactlab_bin, "sand_pile", tmp_path / "cohesive.h5", "grid_spacing=0.025", "duration=0.05",
                    "cohesion=300", "table_model=slip")
    assert cohesive.summary["cohesion_ratio"] == pytest.approx(300.0 / cohesive.summary["analytic_critical_cohesion"])
    _figure("analysis.figures.sand_pile", [tmp_path / "dry.h5", tmp_path / "cohesive.h5"], tmp_path / "sand.png")


def test_floating_box_figure(contactlab_bin, tmp_path):
    run = _run(contactlab_bin, "floating_box", tmp_path / "float.h5", "grid_spacing=0.02", "settle_time=0.01",
               "duration=0.03")
    assert run.summary["analytic_draft"] == pytest.approx(0.025)
    assert run.summary["analytic_draft_particle_contact"] == pytest.approx(0.025 + 0.5 * 0.01)
    _, leaked = run.series("particles_in_box")
    assert leaked[0] == 0
    _figure("analysis.figures.floating_box", [tmp_path / "float.h5"], tmp_path / "float.png")
