"""Short squeezed_cube and close_lift_shake runs of the real executable feed their figure
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
