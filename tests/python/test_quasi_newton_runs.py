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
    # Every converged solve ends below its threshold, and no solve's cost ever rises.
    converged_times = set(log["time"][log["converged"]])
    checked = 0
    for step_time in np.unique(iterations["time"]):
        rows = iterations["time"] == step_time
        gradient = iterations["residual"][rows]
        cost = iterations["cost"][rows]
        assert np.all(np.diff(cost) <= 1e-12 * np.abs(cost).max())
        if step_time in converged_times:
            assert gradient[-1] < iterations["threshold"][rows][-1]
            checked += 1
    assert checked > 0
    assert iterations["iteration"].max() + 1 >= log["outer_iterations"].max()


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


def _roll(contactlab_bin, out, bound):
    scene = REPO_ROOT / "data" / "scenes" / "ball_on_slope_demo.toml"
    command = [contactlab_bin, "run", "ball_on_slope", "-f", "quasi_newton", "--config", str(scene),
               "--set", "mu=0.3", "--set", "duration=0.5", "--set", f"quasi_newton.friction_bound={bound}",
               "--quiet", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    run = Run.open(out)
    assert run.ok
    return run.summary


def test_the_ball_rolls_because_friction_is_bounded_by_the_carried_impulse(contactlab_bin, tmp_path):
    # mu 0.3 on 45 degrees rolls (omega r / v = 1). The ball's few contact particles take its
    # weight through the velocity term of the lagged normal impulse, so the bound read from
    # their penetration is a small fraction of it and the ball slides without turning; bounded
    # by the impulse the contacts carry, friction spins it up as under sap (0.69 at 1 s).
    carried = _roll(contactlab_bin, tmp_path / "carried.h5", "carried")
    penetration = _roll(contactlab_bin, tmp_path / "penetration.h5", "penetration")
    assert carried["final_spin_ratio"] > 0.5, carried["final_spin_ratio"]
    assert penetration["final_spin_ratio"] < 0.2, penetration["final_spin_ratio"]
    assert carried["quasi_newton.friction_bound_passes.used"] >= 2


def test_bad_quasi_newton_key_is_a_one_line_error(contactlab_bin, tmp_path):
    out = tmp_path / "bad.h5"
    result = subprocess.run([contactlab_bin, "run", "squeezed_cube", "-f", "quasi_newton", "--config", str(SCENE),
                             "--set", "quasi_newton.stiffness_rule=soft", "--quiet", "--out", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "quasi_newton.stiffness_rule" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
