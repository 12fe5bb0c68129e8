"""Short pyramid and wedge runs of the real executable (coarse, a few steps) feed
analysis.figures.pyramid_drift and analysis.figures.wedge, which must write a PNG; the
summaries carry the verdicts the figures print.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import subprocess
import sys
from pathlib import Path

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(contactlab_bin, scenario, out, formulation, *settings):
    command = [contactlab_bin, "run", scenario, "--formulation", formulation, "--quiet",
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


def test_pyramid_drift_figure(contactlab_bin, tmp_path):
    runs = [_run(contactlab_bin, "pyramid", tmp_path / f"pyramid_mu{mu}.h5", "hybrid_impulse",
                 "grid_spacing=0.05", "duration=0.1", "settle_time=0.05", f"mu={mu}")
            for mu in (0.3, 0.05)]
    for run in runs:
        assert {"drift", "height_change", "collapsed", "ball_drop"} <= set(run.summary)
        assert "ball_drift" in run.series_names()
    _figure("analysis.figures.pyramid_drift", [run.path for run in runs], tmp_path / "pyramid.png")


def test_wedge_figure(contactlab_bin, tmp_path):
    runs = [_run(contactlab_bin, "wedge", tmp_path / f"wedge_mu{mu}.h5", "hybrid_impulse",
                 "left_body=mpm", "grid_spacing=0.05", "duration=0.1", f"mu={mu}")
            for mu in (0.25, 0.1)]
    for run in runs:
        assert {"jammed", "descent", "mu_star", "configuration"} <= set(run.summary)
        assert run.summary["configuration"] == "mpm+mpm"
        time, height = run.series("block_height")
        assert height.shape == (len(time), 2)
    _figure("analysis.figures.wedge", [run.path for run in runs], tmp_path / "wedge.png")
