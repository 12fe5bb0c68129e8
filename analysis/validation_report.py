"""Tables of the `sap` validation runs (scripts/validate-sap): ball_on_slope errors against
the corrected analytic solution, squeezed-cube steady forces against (10, 0, m g/2) N, and
whether close_lift_shake held its grasp. Usage: python3 -m analysis.validation_report DIR
"""

import sys
from pathlib import Path

import numpy as np

from analysis.runs import NotARunError, exit_on_bad_input, load_runs
from analysis.tables import format_table

GRAVITY = 9.81


def _solver_means(run):
    log = run.solver_log()
    steps = max(len(log["outer_iterations"]), 1)
    return (float(np.mean(log["outer_iterations"])), float(np.mean(log["contacts"])),
            float(np.max(log["contacts"])), float(np.sum(log["wall_s"])) / steps)


def ball_rows(runs):
    rows = []
    for run in runs:
        if run.scenario != "ball_on_slope":
            continue
        newton, contacts, max_contacts, wall = _solver_means(run)
        s = run.summary
        rows.append((run.path.stem, run.params.get("mu"), s.get("regime"), s.get("max_rel_error"),
                     s.get("max_rel_error_velocity"), s.get("final_spin_ratio"), s.get("expected_spin_ratio"),
                     contacts, max_contacts, newton, 1e3 * wall, run.status))
    return rows


def squeeze_rows(runs):
    rows = []
    for run in runs:
        if run.scenario != "squeezed_cube":
            continue
        s = run.summary
        weight = s.get("cube_mass_sampled", 0.4) * GRAVITY
        newton, contacts, _, wall = _solver_means(run)
        std_y = s.get("left_fy_std")
        rows.append((run.path.stem, run.params.get("dt"), s.get("left_fx_mean"), s.get("left_fy_mean"),
                     s.get("left_fz_mean"), 0.5 * weight, None if std_y is None else std_y / weight,
                     contacts, newton, 1e3 * wall, run.status))
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    directory = Path(argv[0] if argv else "results/validate/sap")
    try:  # every run file is read before anything is printed
        runs = load_runs(directory)
        balls, squeezes = ball_rows(runs), squeeze_rows(runs)
    except (NotARunError, FileNotFoundError, KeyError) as error:
        exit_on_bad_input("validation_report", error)
    print(format_table(("run", "mu", "regime", "max rel err u", "max rel err v", "spin wr/v", "expected",
                        "contacts avg", "max", "Newton/step", "ms/step", "status"),
                       balls, ("", "g", "", ".3e", ".3e", ".3f", ".3f", ".2f", ".0f", ".2f", ".1f", "")))
    print()
    print(format_table(("run", "dt [s]", "left f_x mean [N]", "f_y mean", "f_z mean", "m g/2", "std f_y / m g",
                        "contacts avg", "Newton/step", "ms/step", "status"),
                       squeezes, ("", "g", ".4f", ".4f", ".4f", ".4f", ".3e", ".1f", ".2f", ".0f", "")))
    for run in runs:
        if run.scenario == "close_lift_shake":
            s = run.summary
            print(f"\n{run.path.stem}: status {run.status}, held {s.get('held')}, max slip {s.get('max_slip')}, "
                  f"steps {s.get('steps')}; {run.message}")


if __name__ == "__main__":
    main()
