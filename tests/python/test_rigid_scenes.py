"""Rigid–rigid contact under every formulation, against the closed forms (issue 16's targets):
incline_block with a rigid block (θ 6°, v0 0.1 m/s) slides on at μ 0.1 and stops within 3% of
the analytic time at μ 0.125; rolling_sphere with a rigid ball rolls at μ 0.3 with a within 2%
of 5/7 g sinθ and ωR/v ≥ 0.95, and slips at μ 0.01 with a within 2% of g (sinθ − μ cosθ).
Each run is the scene file at its defaults (Δt 5 ms, 1 s), a fraction of a second of CPU."""

import subprocess
from pathlib import Path

import pytest

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]
FORMULATIONS = ("sap", "quasi_newton", "hybrid_impulse", "penalty")


def _run(contactlab_bin, out, scene, formulation, *settings):
    command = [contactlab_bin, "run", scene, "--formulation", formulation, "--config",
               str(REPO_ROOT / "data" / "scenes" / f"{scene}.toml"), "--quiet", "--out", str(out)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_rigid_block_slides_at_mu_0_1_and_stops_at_mu_0_125(contactlab_bin, tmp_path, formulation):
    sliding = _run(contactlab_bin, tmp_path / "slide.h5", "incline_block", formulation, "body=rigid", "mu=0.1")
    stopping = _run(contactlab_bin, tmp_path / "stop.h5", "incline_block", formulation, "body=rigid", "mu=0.125")
    assert sliding.summary["status"] == "ok" and stopping.summary["status"] == "ok"
    assert "stop_time" not in sliding.summary or not sliding.summary["stop_time"] == sliding.summary["stop_time"]
    # The scene counts the block as stopped below stop_speed (2 mm/s), which at the
    # deceleration g (μ cosθ − sinθ) = 0.19 m/s² comes 10 ms before the analytic stop: the 3%
    # is taken on the analytic time, within which that offset lies.
    analytic = stopping.summary["analytic_stop_time"]
    assert abs(stopping.summary["stop_time"] - analytic) <= 0.03 * analytic


@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("mu", (0.3, 0.01))
def test_rigid_sphere_rolls_or_slips(contactlab_bin, tmp_path, formulation, mu):
    run = _run(contactlab_bin, tmp_path / "ball.h5", "rolling_sphere", formulation, "body=rigid", f"mu={mu}")
    summary = run.summary
    assert summary["status"] == "ok"
    assert abs(summary["acceleration"] - summary["analytic_acceleration"]) <= 0.02 * summary["analytic_acceleration"]
    if mu == 0.3:
        assert summary["final_spin_ratio"] >= 0.95
    else:
        assert summary["final_slip_speed"] > 0.5 * summary["analytic_final_slip_speed"]
