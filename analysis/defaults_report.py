"""The scene × formulation table of runs at every formulation's defaults, with each row's
acceptance criterion checked (the sweeps ``data/sweeps/defaults_*.toml``).

    python3 -m analysis.defaults_report results/defaults [--markdown]

reads every run file under the given folders (``<sweep>/<run_id>.h5``, as written by
``contactlab sweep run``, or loose run files) and prints one row per run: scene, formulation,
the swept value, status, the scene's figures of merit against their criteria (PASS/FAIL),
milliseconds per step, mean outer iterations and mean contacts per step.

Criteria (the analytic reference of each scene):
  squeezed_cube   each panel's mean force within 2% of (squeeze_force, 0, m g/2) (y against
                  m g/2), std f_z <= 5% of m g/2, cube drift <= 5 mm
  incline_block   mu 0.1 keeps sliding (no stop), mu 0.125 stops within 3% of the analytic time
  pyramid         mu 0.3 stands (not collapsed, ball drift <= 1 mm), mu 0.05 collapses
  wedge           mu 0.25 jams, mu 0.1 slides; wall forces and mu* listed
  ball_on_slope   not diverged; velocity error and spin ratio wr/v listed
  close_lift_shake  held
"""

import argparse
import math
import sys
from pathlib import Path

import h5py
import numpy as np

from .runs import NotARunError, read_attributes, read_columns

GRAVITY = 9.81


def _attrs(path, group):
    out = {}
    for key, value in read_attributes(path, group, decode=False).items():
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


# The solver-log statistics of read_run, NaN for a run without a log.
SOLVER_LOG_KEYS = ("logged_steps", "ms_per_step", "iterations", "largest_iterations", "linear_iterations",
                   "contacts", "largest_contacts", "substeps", "unconverged_steps")


def read_run(path):
    """The scalar contents of one run file, with solver-log statistics: per-step means of the
    wall time [ms], outer and linear iterations, contacts and substeps, the largest outer
    iterations and contacts of a step, the steps logged and those that ended unconverged."""
    with h5py.File(path, "r") as run:
        record = {"file": str(path)}
        record.update(_attrs(path, run))
        record["params"] = _attrs(path, run["params"]) if "params" in run else {}
        record["summary"] = _attrs(path, run["summary"]) if "summary" in run else {}
        record.update(dict.fromkeys(SOLVER_LOG_KEYS, math.nan))
        group = run.get("solver_log")
        # Every column checked (one row per step, numbers) before any is read.
        log = read_columns(path, group) if isinstance(group, h5py.Group) else {}
        if "wall_s" in log and len(log["wall_s"]) > 0:
            outer, contacts = log["outer_iterations"], log["contacts"]
            record["logged_steps"] = len(outer)
            record["ms_per_step"] = 1e3 * float(np.mean(log["wall_s"]))
            record["iterations"] = float(np.mean(outer))
            record["largest_iterations"] = float(np.max(outer))
            if "linear_iterations" in log:
                record["linear_iterations"] = float(np.mean(log["linear_iterations"]))
            record["contacts"] = float(np.mean(contacts))
            record["largest_contacts"] = float(np.max(contacts))
            record["substeps"] = float(np.mean(log["substeps"]))
            record["unconverged_steps"] = int(np.sum(log["converged"] == 0)) if "converged" in log else 0
    return record


def _near(value, target, tolerance):
    return value is not None and math.isfinite(value) and abs(value - target) <= tolerance


def _verdict(passed):
    return "PASS" if passed else "FAIL"


def check_squeezed_cube(record):
    s, p = record["summary"], record["params"]
    force = p.get("squeeze_force", 10.0)
    half_weight = 0.5 * s.get("cube_mass_sampled", p.get("cube_mass", 0.4)) * p.get("gravity", GRAVITY)
    parts, passed = [], True
    for side in ("left", "right"):
        fx, fy, fz = (s.get(f"{side}_f{a}_mean", math.nan) for a in "xyz")
        fz_std = s.get(f"{side}_fz_std", math.nan)
        ok = (_near(fx, force, 0.02 * force) and _near(fz, half_weight, 0.02 * half_weight)
              and _near(fy, 0.0, 0.02 * half_weight) and fz_std <= 0.05 * half_weight)
        passed &= ok
        parts.append(f"{side[0].upper()} ({fx:.2f}, {fy:+.3f}, {fz:.3f}) sd_z {100 * fz_std / half_weight:.1f}%")
    drift = s.get("cube_vertical_drift", math.nan)
    passed &= abs(drift) <= 5e-3
    parts.append(f"drift {1e3 * drift:.2f} mm")
    return "; ".join(parts), passed


def check_incline_block(record):
    s, p = record["summary"], record["params"]
    mu = p.get("mu")
    stop, analytic = s.get("stop_time"), s.get("analytic_stop_time")
    if analytic is None:
        # Slides on: the block must not stop.
        moving = stop is None
        return (f"slides: {'yes' if moving else f'stopped at {stop:.3f} s'}; "
                f"speed error {100 * s.get('max_rel_error', math.nan):.1f}%"), moving
    if stop is None:
        return f"no stop (analytic {analytic:.4f} s)", False
    error = (stop - analytic) / analytic
    return f"stop {stop:.4f} s vs {analytic:.4f} s ({100 * error:+.2f}%)", abs(error) <= 0.03 and mu is not None


def check_pyramid(record):
    s, p = record["summary"], record["params"]
    collapsed = bool(s.get("collapsed", False))
    drift = s.get("drift", math.nan)
    text = f"{'collapsed' if collapsed else 'stands'}, drift {1e3 * drift:.2f} mm, drop {1e3 * s.get('ball_drop', math.nan):.1f} mm"
    if p.get("mu", 0.3) >= 0.2:
        return text, (not collapsed) and abs(drift) <= 1e-3
    return text, collapsed


def check_wedge(record):
    s, p = record["summary"], record["params"]
    jammed = bool(s.get("jammed", False))
    text = (f"{'jams' if jammed else 'slides'} (descent {1e3 * s.get('descent', math.nan):.1f} mm), walls "
            f"{s.get('left_wall_force', math.nan):.1f}/{s.get('right_wall_force', math.nan):.1f} N, "
            f"mu* {s.get('mu_star', math.nan):.3f}")
    mu_star = s.get("mu_star", math.nan)
    forces_ok = math.isfinite(mu_star) and s.get("left_wall_force", 0.0) > 0.0
    return text, (jammed == (p.get("mu", 0.25) >= 0.2)) and forces_ok


def check_ball_on_slope(record):
    s = record["summary"]
    text = (f"{s.get('regime', '?')}: v error {100 * s.get('max_rel_error_velocity', math.nan):.1f}%, "
            f"u error {100 * s.get('max_rel_error', math.nan):.1f}%, wr/v {s.get('final_spin_ratio', math.nan):.3f} "
            f"(expected {s.get('expected_spin_ratio', math.nan):.3f})")
    return text, True


def check_close_lift_shake(record):
    s = record["summary"]
    held = bool(s.get("held", False))
    return f"{'held' if held else 'dropped'}, max slip {1e3 * s.get('max_slip', math.nan):.1f} mm", held


CHECKS = {
    "squeezed_cube": (check_squeezed_cube, "dt"),
    "incline_block": (check_incline_block, "mu"),
    "pyramid": (check_pyramid, "mu"),
    "wedge": (check_wedge, "mu"),
    "ball_on_slope": (check_ball_on_slope, "mu"),
    "close_lift_shake": (check_close_lift_shake, "dt"),
}
FORMULATION_ORDER = ("sap", "quasi_newton", "penalty", "hybrid_impulse", "explicit_projection")


def rows_of(folders):
    rows = []
    for folder in folders:
        folder = Path(folder)
        files = [folder] if folder.suffix == ".h5" else sorted(folder.rglob("*.h5"))
        for path in files:
            try:
                record = read_run(path)
            except (OSError, KeyError, NotARunError):  # unreadable, or not what the schema says
                continue
            scenario = record.get("scenario", "?")
            check, swept = CHECKS.get(scenario, (None, "mu"))
            value = record["params"].get(swept)
            status = record.get("status", "?")
            if status != "ok":
                text, passed = record.get("message", "")[:90], False
            elif check is None:
                text, passed = "", True
            else:
                text, passed = check(record)
            rows.append({"scenario": scenario, "formulation": record.get("formulation", "?"),
                         "swept": f"{swept} {value}", "status": status, "result": text,
                         "verdict": _verdict(passed), "ms_per_step": record["ms_per_step"],
                         "iterations": record["iterations"], "contacts": record["contacts"],
                         "substeps": record["substeps"], "value": value})
    order = {name: k for k, name in enumerate(FORMULATION_ORDER)}
    rows.sort(key=lambda r: (r["scenario"], r["value"] if isinstance(r["value"], (int, float)) else 0,
                             order.get(r["formulation"], 99)))
    return rows


def format_table(rows, markdown=False):
    header = ["scene", "formulation", "swept", "status", "result", "verdict", "ms/step", "iter/step",
              "contacts", "substeps"]
    lines = []
    cells = [[r["scenario"], r["formulation"], r["swept"], r["status"], r["result"], r["verdict"],
              f"{r['ms_per_step']:.0f}", f"{r['iterations']:.1f}", f"{r['contacts']:.0f}", f"{r['substeps']:.1f}"]
             for r in rows]
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines.extend("| " + " | ".join(row) + " |" for row in cells)
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[k]) for row in cells)) if cells else len(h) for k, h in enumerate(header)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="sweep output folders or run files")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    rows = rows_of(args.folders)
    if not rows:
        print("no run files found", file=sys.stderr)
        return 1
    print(format_table(rows, args.markdown))
    failed = sum(r["verdict"] == "FAIL" for r in rows)
    print(f"\n{len(rows) - failed} of {len(rows)} rows pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
