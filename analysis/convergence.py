"""Convergence studies (issue 20 item 3): errors against the closed form as the grid spacing h
or the time step Δt shrinks, per formulation, with the measured order.

    python3 -m analysis.convergence STUDY RESULTS.csv [--figure OUT.png] [--latex OUT.tex]

STUDY names a sweep of STUDIES: its refined key (grid_spacing or dt), the errors it reads from
each run and the columns that split the runs into series besides the formulation. The
measured order of a series is the least-squares slope of log(error) against log(x) over its
runs that ended ok with an error of at least ERROR_FLOOR; a series with fewer than two such
runs has none ("--"): its error sits at the solvers' tolerance or round-off, where a slope
measures noise. An order near 1 means the error halves with x; near 0, that it does not
shrink with x.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from .paper import latex_text
from .runs import Run
from .sweeps import MissingColumnError, load_results, summary_column

GRAVITY = 9.81  # [m/s^2], the scenes' default
# Relative errors below this are the solvers' tolerances and round-off, not discretization.
ERROR_FLOOR = 1e-6


def _column(table, name):
    return np.asarray(summary_column(table, name), dtype=float)


def _spin_error(table):
    ratio, expected = _column(table, "final_spin_ratio"), _column(table, "expected_spin_ratio")
    return np.abs(ratio - expected) / np.maximum(np.abs(expected), 1e-12)


def _optional_column(table, name):
    """A summary column that runs write only when they measure it (NaN where absent)."""
    try:
        return _column(table, name)
    except MissingColumnError:
        return np.full(len(table), math.nan)


def _stop_time_error(table):
    """|t_stop − t*| / t*, where t_stop is when the block's speed fell below the scene's
    stop_speed for good and t* when the point mass's does: t* = t_s − stop_speed / |a|, with
    |a| = 2 s_s / t_s² from the closed form's stop time t_s and distance s_s (a perfect solver
    measures t*, not t_s). Infinite where the block had not stopped by the end of its run (the
    scene writes stop_time only for a block that stopped): the table says "no stop", and no
    order is measured through it."""
    stop = _optional_column(table, "stop_time")
    stop_at, distance = _column(table, "analytic_stop_time"), _column(table, "analytic_stop_distance")
    expected = stop_at - _column(table, "stop_speed") * stop_at**2 / (2.0 * distance)
    return np.where(np.isfinite(stop), np.abs(stop - expected) / expected, np.inf)


def _friction_oscillation(table):
    half_weight = 0.5 * _column(table, "cube_mass_sampled") * GRAVITY
    return 0.5 * (_column(table, "left_fz_std") + _column(table, "right_fz_std")) / half_weight


# study (a sweep's name): (refined key, axis label, [(error label, function of the table)],
# the columns besides the formulation that split the series)
STUDIES = {
    "convergence_ball_on_slope": ("grid_spacing", "grid spacing h [m]", [
        ("velocity", lambda table: _column(table, "max_rel_error_velocity")),
        ("spin ωr/v", _spin_error)], []),
    "ball_on_slope": ("dt", "time step Δt [s]", [
        ("velocity", lambda table: _column(table, "max_rel_error_velocity")),
        ("spin ωr/v", _spin_error)], ["mu"]),
    "convergence_squeezed_cube": ("grid_spacing", "grid spacing h [m]", [
        ("force mean", lambda table: _column(table, "error_vs_analytic")),
        ("friction oscillation", _friction_oscillation)], []),
    "squeezed_cube": ("dt", "time step Δt [s]", [
        ("force mean", lambda table: _column(table, "error_vs_analytic")),
        ("friction oscillation", _friction_oscillation)], []),
    "convergence_incline_block": ("grid_spacing", "grid spacing h [m]", [
        ("stop time", _stop_time_error),
        ("displacement", lambda table: _column(table, "max_rel_error"))], []),
    "convergence_incline_block_dt": ("dt", "time step Δt [s]", [
        ("stop time", _stop_time_error),
        ("displacement", lambda table: _column(table, "max_rel_error"))], []),
}


def _run_parameter(table, name):
    """A parameter of the study's runs (their /params), read from the first run file beside
    the results table that has it; None when there is none."""
    if not getattr(table, "source", None):
        return None
    folder = Path(table.source).parent
    for run_id in table["run_id"]:
        path = folder / f"{run_id}.h5"
        if path.is_file():
            value = Run.open(path).params.get(name)
            if value is not None:
                return float(value)
    return None


def apic_rolling_deficit(grid_spacing, radius):
    """The share of the rolling speed an MPM ball loses to APIC's affine inertia: each particle
    carries the extra inertia m_p h^2/2 about any axis (D_p = h^2/4 I of quadratic B-splines,
    [jiang2015apic]), so the solid ball rolls like one of inertia (2/5 + h^2 / (2 R^2)) m R^2
    and accelerates by (1 + 2/5) / (1 + 2/5 + h^2 / (2 R^2)) of the closed form's rate."""
    beta = 0.4 + np.asarray(grid_spacing, dtype=float) ** 2 / (2.0 * radius**2)
    return 1.0 - 1.4 / (1.0 + beta)


def _apic_row(table):
    radius = _run_parameter(table, "radius")
    if radius is None:
        return None
    return ("APIC affine inertia (closed form)", "velocity",
            lambda grid_spacing: apic_rolling_deficit(grid_spacing, radius))


# Studies with a closed-form row beside the formulations' errors: a function of the table
# giving (name, error label, function of the refined values), or None when the row cannot be
# evaluated (no run file to read a parameter from).
REFERENCE_ROWS = {"convergence_ball_on_slope": _apic_row}


def measured_order(x, error):
    """Least-squares slope of log(error) against log(x) over the finite positive errors, or
    NaN when fewer than two points (or one value of x) remain."""
    x, error = np.asarray(x, dtype=float), np.asarray(error, dtype=float)
    keep = np.isfinite(x) & (x > 0) & np.isfinite(error) & (error >= ERROR_FLOOR)
    if keep.sum() < 2 or np.unique(x[keep]).size < 2:
        return math.nan
    return float(np.polyfit(np.log(x[keep]), np.log(error[keep]), 1)[0])


def series(table, study):
    """[(formulation, split values, error label, x array, error array)] of one study, runs
    that are not ok given NaN errors."""
    key, _, errors, split = STUDIES[study]
    x = np.asarray(table[key], dtype=float)
    ok = np.asarray(table["status"]) == "ok"
    values = [(label, np.where(ok, function(table), math.nan)) for label, function in errors]
    formulations = list(dict.fromkeys(table["formulation"]))
    groups = sorted({tuple(table[name][i] for name in split) for i in range(len(table))}) if split else [()]
    out = []
    for label, error in values:
        for formulation in formulations:
            for group in groups:
                mask = np.asarray(table["formulation"]) == formulation
                for name, value in zip(split, group):
                    mask &= np.asarray(table[name]) == value
                if mask.any():
                    order = np.argsort(x[mask])
                    out.append((formulation, dict(zip(split, group)), label, x[mask][order], error[mask][order]))
    return out


def _series_name(formulation, split):
    return formulation + "".join(f", {key} {value:g}" for key, value in split.items())


def figure(table, study, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key, axis_label, errors, _ = STUDIES[study]
    fig, axes = plt.subplots(1, len(errors), figsize=(5.2 * len(errors), 4.0), squeeze=False)
    lines = series(table, study)
    colours = {}
    for formulation, split, label, x, error in lines:
        ax = axes[0][[name for name, _ in errors].index(label)]
        name = _series_name(formulation, split)
        colour = colours.setdefault(name, f"C{len(colours) % 10}")
        good = np.isfinite(error) & (error > 0)
        if not good.any():
            continue
        order = measured_order(x, error)
        text = "" if math.isnan(order) else f" (order {order:.2f})"
        ax.plot(x[good], error[good], marker="o", color=colour, label=name + text)
    for ax, (label, _) in zip(axes[0], errors):
        ax.set_title(f"{label} error")
        ax.set_xlabel(axis_label)
        ax.set_ylabel("relative error")
        if ax.lines:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.legend(fontsize=7)
        else:  # every run failed or measured nothing (a run shorter than the error window)
            ax.text(0.5, 0.5, "no finite error to show", ha="center", va="center", transform=ax.transAxes)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"Convergence: {study}", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)


def latex(table, study):
    """A tabular of the errors at each refinement and the measured order of every series."""
    key, _, _, _ = STUDIES[study]
    lines = series(table, study)
    xs = sorted({value for *_, x, _ in lines for value in x if math.isfinite(value)}, reverse=True)
    header = ["formulation", "error", *[f"{latex_text(key)} {value:g}" for value in xs], "order"]
    rows = [r"\begin{tabular}{ll" + "r" * (len(xs) + 1) + "}", r"\toprule", " & ".join(header) + r" \\",
            r"\midrule"]
    for formulation, split, label, x, error in lines:
        cells = [latex_text(_series_name(formulation, split)), latex_text(label)]
        for value in xs:
            found = [e for xi, e in zip(x, error) if xi == value]
            if found and found[0] == math.inf:
                cells.append("no stop")
            else:
                cells.append("--" if not found or not math.isfinite(found[0]) else f"{found[0]:.3g}")
        order = measured_order(x, error)
        cells.append("--" if math.isnan(order) else f"{order:.2f}")
        rows.append(" & ".join(cells) + r" \\")
    reference = REFERENCE_ROWS.get(study, lambda _: None)(table)
    if reference is not None and xs:
        name, label, function = reference
        values = function(np.asarray(xs))
        rows.append(r"\midrule")
        rows.append(" & ".join([latex_text(name), latex_text(label), *[f"{value:.3g}" for value in values],
                                f"{measured_order(xs, values):.2f}"]) + r" \\")
    rows += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(rows) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.convergence", description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=sorted(STUDIES))
    parser.add_argument("results", help="the study's results.csv (contactlab collect), or its folder")
    parser.add_argument("--figure", metavar="OUT.png")
    parser.add_argument("--latex", metavar="OUT.tex")
    args = parser.parse_args(argv)
    try:
        table = load_results(args.results)
        if args.figure:
            figure(table, args.study, args.figure)
        if args.latex:
            Path(args.latex).write_text(latex(table, args.study))
        if not args.figure and not args.latex:
            for formulation, split, label, x, error in series(table, args.study):
                print(f"{_series_name(formulation, split):32s} {label:22s} order "
                      f"{measured_order(x, error):6.2f}  errors {' '.join(f'{e:.3g}' for e in error)}")
    except (FileNotFoundError, MissingColumnError, ValueError) as error:
        sys.exit(f"analysis.convergence: {' '.join(str(error).split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
