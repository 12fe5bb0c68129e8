"""Every formulation reports its solves in one shape (/solver_log/solves, and with
output.log_iterations /solver_log/iterations), and the per-step columns of /solver_log are the
aggregates of that table: iterations summed over the contact and rigid-step solves, the
largest residual / threshold among them, converged when every solve of the step converged.

Two short runs per formulation cover every kind of solve: a rigid block on the incline (rigid
contact only: SAP's problem, the rigid step of quasi_newton and hybrid_impulse, penalty's
Newton) and a rigid block on an MPM slab (the implicit MPM free motion of sap, quasi_newton's
substep solves)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]
FORMULATIONS = ("sap", "quasi_newton", "hybrid_impulse", "penalty")
KINDS_CODE = {"free_motion": 0, "contact": 1, "rigid_step": 2}  # SolveKind, as /solver_log/iterations/kind
KINDS = set(KINDS_CODE)
TERMINATIONS = {"converged", "nothing_to_solve", "cost_stagnation", "stationary", "max_iterations",
                "line_search_failed", "numerical_failure"}
CONVERGED = {"converged", "nothing_to_solve", "cost_stagnation"}
# The solves each formulation must show across the two runs: (kind, solver).
EXPECTED = {
    "sap": {("free_motion", "implicit_mpm_newton"), ("contact", "sap")},
    "quasi_newton": {("contact", "quasi_newton"), ("rigid_step", "sap")},
    "hybrid_impulse": {("rigid_step", "sap")},
    "penalty": {("contact", "stabilized_newton")},
}
RUNS = {
    "incline": ("incline_block", "body=rigid", "duration=0.1"),
    "slab": ("block_on_slab", "duration=0.03", "settle_time=0.01"),
}


def _run(contactlab_bin, out, scene, formulation, *settings):
    command = [contactlab_bin, "run", scene, "--formulation", formulation, "--config",
               str(REPO_ROOT / "data" / "scenes" / f"{scene}.toml"), "--quiet", "--out", str(out),
               "--set", "output.log_iterations=true"]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


def _check_one_run(run):
    solves, steps, iterations = run.solves(), run.solver_log(), run.iteration_log()
    if not iterations:  # no solve kept a history (e.g. no solve at all)
        iterations = {key: np.zeros(0) for key in ("time", "kind", "solve", "iteration", "residual", "threshold",
                                                    "step", "line_search_evaluations", "linear_iterations")}
    assert set(solves["kind"]) <= KINDS
    assert set(solves["termination"]) <= TERMINATIONS
    assert all(message for message in solves["message"]), "every solve says why it stopped"
    np.testing.assert_array_equal(solves["converged"], [t in CONVERGED for t in solves["termination"]])
    # What each solve's final residual can leave unbalanced: a finite momentum, 0 without a solve.
    bound = solves["momentum_residual_bound"]
    assert np.all(np.isfinite(bound)) and np.all(bound >= 0.0)
    assert np.all(bound[solves["termination"] == "nothing_to_solve"] == 0.0)
    for step, time in enumerate(steps["time"]):
        rows = solves["time"] == time
        coupled = rows & (solves["kind"] != "free_motion")
        assert steps["outer_iterations"][step] == solves["iterations"][coupled].sum()
        assert steps["linear_iterations"][step] == solves["linear_iterations"][coupled].sum()
        assert steps["residual"][step] == pytest.approx(max(solves["residual"][coupled], default=0.0), abs=0.0)
        assert steps["converged"][step] == bool(np.all(solves["converged"][rows]))
    # The kept histories: one row per iterate of every solve, the last one final (residual
    # against the threshold the solve stopped on) unless the solve failed in its line search.
    history_rows = 0
    for s in range(len(solves["time"])):
        mine = ((iterations["time"] == solves["time"][s]) & (iterations["kind"] == KINDS_CODE[solves["kind"][s]]) &
                (iterations["solve"] == solves["index"][s]))
        count = int(mine.sum())
        history_rows += count
        if solves["termination"][s] == "nothing_to_solve":
            assert count == 0
            continue
        assert count == solves["iterations"][s] + 1
        last = np.flatnonzero(mine)[-1]
        assert iterations["step"][last] == 0.0
        if solves["termination"][s] == "converged":
            assert iterations["residual"][last] <= iterations["threshold"][last]
        assert iterations["line_search_evaluations"][mine].sum() == solves["line_search_evaluations"][s]
        assert iterations["linear_iterations"][mine].sum() == solves["linear_iterations"][s]
    assert history_rows == len(iterations["time"])


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_every_solve_in_one_shape_and_the_step_columns_are_its_aggregates(contactlab_bin, tmp_path, formulation):
    seen = set()
    for name, (scene, *settings) in RUNS.items():
        run = _run(contactlab_bin, tmp_path / f"{name}.h5", scene, formulation, *settings)
        assert run.summary["status"] == "ok"
        _check_one_run(run)
        solves = run.solves()
        seen |= set(zip(solves["kind"], solves["solver"]))
    assert EXPECTED[formulation] <= seen, f"{formulation} showed {sorted(seen)}"


def test_auto_choices_record_what_they_chose(contactlab_bin, tmp_path):
    # sap at its defaults (linear_solver and delassus_estimate auto) on the slab: both record
    # the member used per step beside the given "auto", with the rule.
    run = _run(contactlab_bin, tmp_path / "sap.h5", "block_on_slab", "sap", "duration=0.03", "settle_time=0.01")
    assert run.params["sap.linear_solver"] == "auto"
    assert run.summary["sap.linear_solver.used"] in ("schur (3 steps)", "full (3 steps)")
    used = run.summary["sap.delassus_estimate.used"]
    assert used == ("exact (3 steps)" if "schur" in run.summary["sap.linear_solver.used"] else
                    "bounded_block_diagonal (3 steps)")
    assert run.params["sap.linear_solver.rule"].startswith("auto:")
    # Chord steps: 0.5 on the full path, 0 on the Schur path.
    assert run.params["sap.factorization_reuse_ratio"] == "auto"
    reuse = run.summary["sap.factorization_reuse_ratio.used"]
    assert reuse == pytest.approx(0.0 if "schur" in run.summary["sap.linear_solver.used"] else 0.5)
    assert run.params["sap.factorization_reuse_ratio.rule"].startswith("auto:")
    # quasi_newton's auto stiffness rule, counted per contact registration: effective_mass against
    # the static ground and, against the free 1.07 kg ball standing on the three cubes, the softer
    # of effective_mass and the rigid_step cap, which is the cap for some of them.
    run = _run(contactlab_bin, tmp_path / "qn.h5", "pyramid", "quasi_newton", "duration=0.05",
               "settle_time=0.01")
    used = run.summary["quasi_newton.stiffness_rule.used"]
    assert "effective_mass (" in used and "rigid_step (" in used, used
