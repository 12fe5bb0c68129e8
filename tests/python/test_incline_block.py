"""incline_block from the real executable: a short coarse run of the MPM block records the
summary (max_rel_error finite) and feeds analysis.figures.incline_block, which writes a PNG.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENE = REPO_ROOT / "data" / "scenes" / "incline_block.toml"


def _run(contactlab_bin, out, formulation, *settings):
    command = [contactlab_bin, "run", "incline_block", "--formulation", formulation, "--config",
               str(SCENE), "--quiet", "--out", str(out)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


@pytest.fixture(scope="module")
def coarse_runs(contactlab_bin, tmp_path_factory):
    """0.3 s of the 64-particle MPM block under hybrid_impulse at μ = 0.1 and μ = 0.125."""
    directory = tmp_path_factory.mktemp("incline_block")
    return [_run(contactlab_bin, directory / f"mu{mu}.h5", "hybrid_impulse", "body=mpm",
                 "grid_spacing=0.05", "duration=0.3", f"mu={mu}") for mu in (0.1, 0.125)]


def test_summary_attributes_and_finite_error(coarse_runs):
    sliding, stopping = coarse_runs
    for run in coarse_runs:
        assert run.ok
        for key in ("max_rel_error", "error_vs_analytic", "max_cone_margin", "regime",
                    "final_displacement", "analytic_final_displacement", "sliding_force_ratio",
                    "stop_speed", "settle_time", "block_mass", "particles"):
            assert key in run.summary, key
        assert math.isfinite(run.summary["max_rel_error"])
        assert run.summary["particles"] == 64
        # hybrid_impulse resolves contact on the grid: no per-contact cone margin.
        assert math.isnan(run.summary["max_cone_margin"])
    assert sliding.summary["regime"] == "slide" and "analytic_stop_time" not in sliding.summary
    assert stopping.summary["regime"] == "stop"
    assert stopping.summary["analytic_stop_time"] == pytest.approx(0.5152, abs=1e-4)


def test_series_and_analytic_layout(coarse_runs):
    run = coarse_runs[0]
    time, speed = run.series("com_speed")
    ref_time, ref_speed = run.analytic("com_speed")
    assert np.array_equal(time, ref_time)
    assert len(time) == 61  # t = 0 and 60 steps of 5 ms
    assert ref_speed[0] == pytest.approx(0.1)
    assert speed[0] == pytest.approx(0.1)
    for name in ("normal_force", "tangential_force", "force_ratio", "cone_margin", "com_displacement"):
        assert name in run.series_names()
    _, ratio = run.analytic("force_ratio")
    assert ratio[-1] == pytest.approx(0.1)


def test_figure_writes_a_png(coarse_runs, tmp_path):
    out = tmp_path / "incline_block.png"
    result = subprocess.run([sys.executable, "-m", "analysis.figures.incline_block",
                             *(str(run.path) for run in coarse_runs), "--out", str(out)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10_000
