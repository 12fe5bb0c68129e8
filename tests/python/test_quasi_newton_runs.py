"""quasi_newton through the real executable: a short squeezed-cube run whose per-iteration
solver log is written and read back, and one-line input errors for its keys.

Needs CONTACTLAB_BIN=/path/to/contactlab.
"""

import os
import subprocess
from pathlib import Path

import numpy as np

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENE = REPO_ROOT / "data" / "scenes" / "squeezed_cube.toml"


def test_short_squeeze_logs_converging_iterations(contactlab_bin, tmp_path):
    out = tmp_path / "squeeze_qn.h5"
    command = [contactlab_bin, "run", "squeezed_cube", "-f", "quasi_newton", "--config", str(SCENE),
               "--set", "dt=1e-4", "--set", "duration=0.02", "--set", "averaging_window=0.01",
               "--set", "output.log_iterations=true", "--set", "quasi_newton.max_iterations=300", "--quiet", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    run = Run.open(out)
    assert run.ok and run.formulation == "quasi_newton"
    log = run.solver_log()
    assert np.all(log["substeps"] == 1)
    assert log["contacts"].max() > 0, "the panels reach the cube within 20 ms"
    iterations = run.iteration_log()
    assert set(iterations) == {"time", "kind", "solve", "iteration", "residual", "threshold", "cost", "step",
                               "line_search_evaluations", "linear_iterations"}
    # Every converged solve ends below its threshold, and no solve's cost ever rises. A substep
    # may hold several solves (friction_bound = carried solves again with rebased bounds): each
    # one's records start at iteration 0.
    converged_times = set(log["time"][log["converged"]])
    starts = np.flatnonzero(iterations["iteration"] == 0)
    checked = 0
    for begin, end in zip(starts, list(starts[1:]) + [len(iterations["iteration"])]):
        gradient = iterations["residual"][begin:end]
        cost = iterations["cost"][begin:end]
        assert np.all(np.diff(cost) <= 1e-12 * np.abs(cost).max())
        if iterations["time"][begin] in converged_times:
            assert gradient[-1] < iterations["threshold"][begin:end][-1]
            checked += 1
    assert checked > 0
    # The records of a step add up to its iterations.
    for step_time, outer in zip(log["time"], log["outer_iterations"]):
        records = np.count_nonzero((iterations["time"] == step_time) & (iterations["iteration"] > 0))
        assert records == outer


def _squeeze(contactlab_bin, out, rule):
    command = [contactlab_bin, "run", "squeezed_cube", "-f", "quasi_newton", "--config", str(SCENE),
               "--set", "grid_spacing=0.02", "--set", "dt=4e-3", "--set", "duration=0.4",
               "--set", "averaging_window=0.2", "--set", f"quasi_newton.stiffness_rule={rule}", "--quiet",
               "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    run = Run.open(out)
    assert run.ok
    time, force = run.series("left_panel_force")
    window = time >= time[-1] - 0.2
    return run, force[window]


def test_auto_stiffness_squeezes_without_chatter_at_a_large_step(contactlab_bin, tmp_path):
    # The 0.1 kg panels' rigid step sees the contact springs explicitly. Under "load" alone
    # the springs on a panel sum beyond the explicit limit at dt = 4 ms and the squeeze force
    # flips from step to step (measured: mean |f_x(n+1) - f_x(n)| 12.9 N of 10 N); "auto"
    # caps dt^2 sum k w at 1 per panel ("rigid_step") and the panel holds 10 N steadily.
    run, force = _squeeze(contactlab_bin, tmp_path / "auto.h5", "auto")
    squeeze = run.params["squeeze_force"]
    half_weight = run.params["cube_mass"] * 9.81 / 2
    assert "rigid_step (" in run.summary["quasi_newton.stiffness_rule.used"]
    assert np.mean(np.abs(np.diff(force[:, 0]))) < 0.01 * squeeze
    assert abs(force[:, 0].mean() - squeeze) < 0.01 * squeeze
    assert abs(force[:, 2].mean() - half_weight) < 0.02 * half_weight
    assert force[:, 2].std() < 0.05 * half_weight
    _, loaded = _squeeze(contactlab_bin, tmp_path / "load.h5", "load")
    assert np.mean(np.abs(np.diff(loaded[:, 0]))) > 0.1 * squeeze, "the case chatters without the cap"


def _roll(contactlab_bin, out):
    scene = REPO_ROOT / "data" / "scenes" / "ball_on_slope_demo.toml"
    command = [contactlab_bin, "run", "ball_on_slope", "-f", "quasi_newton", "--config", str(scene),
               "--set", "mu=0.3", "--set", "duration=0.5", "--quiet", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    run = Run.open(out)
    assert run.ok
    return run.summary


def test_the_demo_ball_rolls_at_the_defaults(contactlab_bin, tmp_path):
    # mu 0.3 on 45 degrees rolls (omega r / v = 1; sap 0.69 at 1 s). Under the former contact
    # defaults (stiffness_rule = load, the friction bound read from the penetration, no warm
    # start) the ball slid without turning at the paper's eps_r 5e-2 (spin 0.00 at 1 s); the
    # defaults give 0.85 at 0.5 s (0.72 with stopping_scale = all_nodes).
    summary = _roll(contactlab_bin, tmp_path / "ball.h5")
    assert summary["final_spin_ratio"] > 0.5, summary["final_spin_ratio"]
    assert summary["quasi_newton.friction_bound_passes.used"] >= 2
    assert summary["quasi_newton.friction_bound_outcome.used"].startswith("settled ("), summary


def test_bad_quasi_newton_key_is_a_one_line_error(contactlab_bin, tmp_path):
    out = tmp_path / "bad.h5"
    result = subprocess.run([contactlab_bin, "run", "squeezed_cube", "-f", "quasi_newton", "--config", str(SCENE),
                             "--set", "quasi_newton.stiffness_rule=soft", "--quiet", "--out", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "quasi_newton.stiffness_rule" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
