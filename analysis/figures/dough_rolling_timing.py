"""Dough rolling: wall time per step against the relative tolerance for quasi_newton and sap
([yu2025async] §VI-B timing sweep, its Fig. 4; spec-sap-qn E3 and check V4).

    python3 -m analysis.figures.dough_rolling_timing RUN_DIR_OR_FILES... --out dough_rolling_timing.png

Reads dough_rolling runs of the formulations ``quasi_newton`` and ``sap`` (for instance the
sweep data/sweeps/dough_rolling_tolerance.toml); each run's ε_r is its
``<formulation>.relative_tolerance`` parameter (/params, else the resolved TOML in /config),
its table model the ``table_model`` parameter (contact_body for runs without it). Panels, one
curve per formulation and table model: mean wall time per step (/solver_log/wall_s) against
ε_r, log-log (runs repeated at one ε_r are averaged); the speedup, sap time over quasi_newton
time where both ran at the same ε_r and table model; mean iterations per step
(/solver_log/outer_iterations) against ε_r, which grows like log(1/ε_r) under linear
convergence; and, only when some run logged iterations (/solver_log/iterations), the residual
against iteration of each run's longest solve, with its stopping threshold dotted.
quasi_newton runs with either option beyond [yu2025async] (``quasi_newton.warm_start`` not
``none``, ``quasi_newton.kinematic_poses`` not ``step``; data/sweeps/dough_rolling_tolerance_options.toml)
are a third series, "quasi_newton + options", with their own speedup against sap.
Runs of the other formulations (penalty, whose Newton tolerance is of another kind, and
hybrid_impulse, which has no iterative solve) are levels across ε_r in the timing and
iteration panels, one per formulation and table model, so that the figure shows all four.
Two tables go to stdout: timing, iterations and contacts (summary contacts_mean and
contacts_max) per (table model, ε_r); then the pin's slip ratio per rolling pass and the final
dough thickness of each run (summary slip_ratio_mean_pass1..3, final_dough_mean_thickness).
"""

import math
import sys
import tomllib
from collections import namedtuple

import h5py
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..runs import NotARunError, read_dataset  # noqa: E402
from ..tables import format_table  # noqa: E402
from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "dough_rolling"
QUASI_NEWTON = "quasi_newton"
SAP = "sap"
FORMULATIONS = (QUASI_NEWTON, SAP)
# Per-iteration records: /solver_log/iterations holds one row per iteration of every logged
# solve (time, solve, iteration, gradient_norm, threshold, cost). Also read, as plain
# gradient-norm arrays (1-D: one history; 2-D: one row per recorded solve, NaN-padded):
HISTORY_DATASETS = ("timeseries/qn_gradient_history", "timeseries/gradient_history",
                    "solver_log/qn_gradient_history", "solver_log/gradient_history")

# The series: [yu2025async]'s quasi_newton, the same with the options beyond it, and sap.
QUASI_NEWTON_OPTIONS = "quasi_newton + options"
SERIES = (QUASI_NEWTON, QUASI_NEWTON_OPTIONS, SAP)
TimingRow = namedtuple("TimingRow", "relative_tolerance quasi_newton_ms sap_ms speedup table_model "
                       "quasi_newton_iterations sap_iterations quasi_newton_contacts sap_contacts "
                       "options_ms options_speedup options_iterations",
                       defaults=("contact_body", math.nan, math.nan, "", "", math.nan, math.nan, math.nan))
TIMING_HEADER = ("eps_r", "QN [ms/step]", "SAP [ms/step]", "speedup SAP/QN", "table", "QN it/step",
                 "SAP it/step", "QN contacts avg (max)", "SAP contacts avg (max)", "QN+opt [ms/step]",
                 "SAP/QN+opt", "QN+opt it/step")
DEFAULT_TABLE_MODEL = "contact_body"
PASSES = (1, 2, 3)
OutcomeRow = namedtuple("OutcomeRow", "table_model relative_tolerance formulation slip_pass1 slip_pass2 slip_pass3 "
                        "thickness_mm status")
OUTCOME_HEADER = ("table", "eps_r", "formulation", "slip pass 1", "slip pass 2", "slip pass 3",
                  "final thickness [mm]", "status")


def table_model(run):
    """The run's ``table_model`` parameter (contact_body for runs written before it existed)."""
    return str(run.params.get("table_model", DEFAULT_TABLE_MODEL))


def series(run):
    """The run's series: ``quasi_newton + options`` for a quasi_newton run with a warm start
    or substep poses, else its formulation."""
    if run.formulation == QUASI_NEWTON and (
            str(run.params.get("quasi_newton.warm_start", "none")) != "none"
            or str(run.params.get("quasi_newton.kinematic_poses", "step")) != "step"):
        return QUASI_NEWTON_OPTIONS
    return run.formulation


def _log_column(run, name):
    """/solver_log/<name> as read by analysis.runs.read_dataset (checked, (N,) numbers), None
    when the run has no such dataset."""
    with h5py.File(run.path, "r") as f:
        log = f.get("solver_log")
        if not isinstance(log, h5py.Group) or not isinstance(log.get(name), h5py.Dataset):
            return None
        return read_dataset(run.path, log, name)


def iterations_per_step(run):
    """Mean of /solver_log/outer_iterations (NaN when absent)."""
    values = _log_column(run, "outer_iterations")
    return float(np.mean(values)) if values is not None and len(values) > 0 else math.nan


def _contacts(run):
    mean, largest = run.summary.get("contacts_mean"), run.summary.get("contacts_max")
    if mean is None:
        return ""
    return f"{float(mean):.1f} ({int(largest)})" if largest is not None else f"{float(mean):.1f}"


def relative_tolerance(run):
    """ε_r of a run: /params ``<formulation>.relative_tolerance``, else the ``[formulation]``
    table of the resolved configuration; None when the run has neither."""
    key = f"{run.formulation}.relative_tolerance"
    if key in run.params:
        return float(run.params[key])
    try:
        table = tomllib.loads(run.config_text).get(run.formulation, {})
    except tomllib.TOMLDecodeError:
        return None
    value = table.get("relative_tolerance") if isinstance(table, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def milliseconds_per_step(run):
    """Mean wall time per step [ms]: /solver_log/wall_s, else /summary wall_s / steps."""
    # Read the one dataset alone: /solver_log may also hold a group (iterations).
    wall = _log_column(run, "wall_s")
    if wall is not None and len(wall) > 0:
        return 1.0e3 * float(np.mean(wall))
    steps = run.summary.get("steps") or 0
    wall_s = run.summary.get("wall_s")
    return 1.0e3 * wall_s / steps if steps > 0 and wall_s is not None else math.nan


def timing_rows(runs):
    """One TimingRow per (table model, ε_r) seen among the quasi_newton and sap runs, in that
    order, ascending; a formulation without a run there gets NaN (and the speedup NaN)."""
    samples = {}  # (series, table model, ε_r) -> [run]
    for run in runs:
        tolerance = relative_tolerance(run)
        if run.formulation in FORMULATIONS and tolerance is not None:
            samples.setdefault((series(run), table_model(run), tolerance), []).append(run)
    rows = []
    for model, tolerance in sorted({(model, tolerance) for _, model, tolerance in samples}):
        found = [samples.get((name, model, tolerance), []) for name in SERIES]
        qn, options, sap = (float(np.mean([milliseconds_per_step(run) for run in group])) if group else math.nan
                            for group in found)
        qn_iterations, options_iterations, sap_iterations = (
            float(np.mean([iterations_per_step(run) for run in group])) if group else math.nan for group in found)
        qn_contacts, _, sap_contacts = (_contacts(group[0]) if group else "" for group in found)
        rows.append(TimingRow(tolerance, qn, sap, sap / qn if qn > 0.0 else math.nan, model, qn_iterations,
                              sap_iterations, qn_contacts, sap_contacts, options,
                              sap / options if options > 0.0 else math.nan, options_iterations))
    return rows


def outcome_rows(runs):
    """One OutcomeRow per quasi_newton or sap run with an ε_r: slip ratio per pass and final
    thickness [mm], sorted by table model, ε_r and formulation."""
    rows = []
    for run in runs:
        tolerance = relative_tolerance(run)
        if run.formulation not in FORMULATIONS or tolerance is None:
            continue
        slips = [run.summary.get(f"slip_ratio_mean_pass{index}", math.nan) for index in PASSES]
        thickness = run.summary.get("final_dough_mean_thickness", math.nan)
        rows.append(OutcomeRow(table_model(run), tolerance, series(run), *(float(x) for x in slips),
                               1.0e3 * float(thickness), run.status))
    return sorted(rows, key=lambda row: (row.table_model, row.relative_tolerance, row.formulation))


def format_timing_table(rows):
    """The timing table as aligned plain text."""
    return format_table(TIMING_HEADER, rows, (".0e", ".1f", ".1f", ".3g", "", ".1f", ".1f", "", "", ".1f", ".3g",
                                              ".1f"))


def format_outcome_table(rows):
    """The slip and thickness table as aligned plain text."""
    return format_table(OUTCOME_HEADER, rows, ("", ".0e", "", ".3f", ".3f", ".3f", ".2f", ""))


def convergence_history(run):
    """The run's longest recorded solve as a dict: ``gradient_norm`` (per iteration, 1-D),
    ``threshold`` (the stopping threshold per iteration, or None) and ``time`` (end of the
    step it belongs to [s], or None); None when the run recorded no iterations."""
    iterations = run.iteration_log()
    # The residual column is "residual" (the shared solver-summary shape); files written
    # before it call it "gradient_norm".
    column = next((name for name in ("residual", "gradient_norm") if name in iterations), None)
    if column is not None and len(iterations[column]) > 0:
        norms = np.asarray(iterations[column], dtype=float)
        count = len(norms)
        time, solve, kind = (iterations.get(name, np.zeros(count)) for name in ("time", "solve", "kind"))
        threshold = iterations.get("threshold")
        # Rows of one solve are consecutive: split where (time, kind, solve) changes.
        starts = np.flatnonzero(np.r_[True, (np.diff(time) != 0) | (np.diff(solve) != 0) | (np.diff(kind) != 0)])
        ends = np.r_[starts[1:], count]
        longest = int(np.argmax(ends - starts))
        rows = slice(starts[longest], ends[longest])
        return {"gradient_norm": norms[rows], "time": float(time[starts[longest]]),
                "threshold": None if threshold is None else np.asarray(threshold[rows], dtype=float)}
    with h5py.File(run.path, "r") as f:
        for name in HISTORY_DATASETS:
            node = f.get(name)
            if isinstance(node, h5py.Group):
                if not isinstance(node.get("value"), h5py.Dataset):
                    continue
                parent, dataset = node, "value"
            elif isinstance(node, h5py.Dataset):
                parent, dataset = node.parent, node.name.rsplit("/", 1)[-1]
            else:
                continue
            values = np.atleast_2d(np.asarray(read_dataset(run.path, parent, dataset, ((None,), (None, None))),
                                              dtype=float))
            if values.size == 0:
                continue
            lengths = np.sum(np.isfinite(values), axis=1)
            longest = values[int(np.argmax(lengths))]
            longest = longest[np.isfinite(longest)]
            if longest.size > 0:
                return {"gradient_norm": longest, "threshold": None, "time": None}
    return None


LINESTYLES = ("-", "--", ":", "-.")


def _models(rows):
    return sorted({row.table_model for row in rows})


def _plot_per_model(ax, rows, columns, ylabel, title, log_y=True):
    """One curve per (formulation column, table model) against ε_r on a log axis; the y axis
    logarithmic too unless ``log_y`` is False."""
    for (name, column, marker), color in zip(columns, ("C0", "C1", "C3")):
        for model, style in zip(_models(rows), LINESTYLES):
            points = [(row.relative_tolerance, getattr(row, column)) for row in rows
                      if row.table_model == model and math.isfinite(getattr(row, column))]
            if points:
                x, y = zip(*points)
                draw = ax.loglog if log_y else ax.semilogx
                draw(x, y, marker=marker, color=color, linestyle=style, label=f"{name}, {model}")
    ax.set_xlabel("relative tolerance ε_r")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)


LevelRow = namedtuple("LevelRow", "formulation table_model milliseconds iterations status")
LEVEL_COLORS = ("C4", "C5", "C6", "C7")


def level_rows(runs):
    """One LevelRow per (formulation, table model) of the runs outside FORMULATIONS: the mean
    time and iterations per step of its ok runs (NaN when none is ok)."""
    groups = {}
    for run in runs:
        if run.formulation not in FORMULATIONS:
            groups.setdefault((run.formulation, table_model(run)), []).append(run)
    rows = []
    for (formulation, model), group in sorted(groups.items()):
        ok = [run for run in group if run.ok]
        rows.append(LevelRow(formulation, model,
                             float(np.mean([milliseconds_per_step(run) for run in ok])) if ok else math.nan,
                             float(np.mean([iterations_per_step(run) for run in ok])) if ok else math.nan,
                             "ok" if ok else group[0].status))
    return rows


def _plot_levels(ax, levels, column):
    """The formulations without ε_r as horizontal lines at their value."""
    names = sorted({row.formulation for row in levels})
    models = sorted({row.table_model for row in levels})
    for row in levels:
        value = getattr(row, column)
        if math.isfinite(value):
            ax.axhline(value, color=LEVEL_COLORS[names.index(row.formulation) % len(LEVEL_COLORS)],
                       linestyle=LINESTYLES[models.index(row.table_model) % len(LINESTYLES)], linewidth=1.2,
                       label=f"{row.formulation}, {row.table_model} (no ε_r)")


def _plot_timing(ax, rows, levels=()):
    _plot_levels(ax, levels, "milliseconds")
    _plot_per_model(ax, rows, ((QUASI_NEWTON, "quasi_newton_ms", "o"), (SAP, "sap_ms", "s"),
                               (QUASI_NEWTON_OPTIONS, "options_ms", "^")),
                    "wall time per step [ms]", "runtime")


def _plot_iterations(ax, rows, levels=()):
    _plot_levels(ax, levels, "iterations")
    _plot_per_model(ax, rows, ((QUASI_NEWTON, "quasi_newton_iterations", "o"), (SAP, "sap_iterations", "s"),
                               (QUASI_NEWTON_OPTIONS, "options_iterations", "^")),
                    "iterations per step", "iterations (linear convergence: a straight line)", log_y=False)


def _plot_speedup(ax, rows):
    drawn = False
    for column, name, marker, color in (("speedup", "", "o", "C2"), ("options_speedup", " (QN + options)", "^",
                                                                      "C3")):
        for model, style in zip(_models(rows), LINESTYLES):
            points = [(row.relative_tolerance, getattr(row, column)) for row in rows
                      if row.table_model == model and math.isfinite(getattr(row, column))]
            if points:
                x, y = zip(*points)
                ax.loglog(x, y, marker=marker, color=color, linestyle=style, label=model + name)
                drawn = True
    if drawn:
        ax.axhline(10.0, color="grey", linestyle=":", linewidth=0.8)  # the 10x target
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no ε_r with both formulations", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
    ax.set_xlabel("relative tolerance ε_r")
    ax.set_ylabel("speedup (sap / quasi_newton)")
    ax.grid(alpha=0.3, which="both")
    ax.set_title("speedup (dotted: 10×)", fontsize=10)


def _plot_histories(ax, histories):
    for index, (run, tolerance, history) in enumerate(histories):
        color = f"C{index % 10}"
        label = f"{series(run)}, ε_r = {tolerance:.0e}"
        if history["time"] is not None:
            label += f" (t = {history['time']:g} s)"
        norms = history["gradient_norm"]
        ax.semilogy(np.arange(len(norms)), norms, color=color, marker=".", label=label)
        if history["threshold"] is not None:
            ax.semilogy(np.arange(len(norms)), history["threshold"], color=color, linestyle=":",
                        linewidth=0.8)
    ax.set_xlabel("iteration")
    ax.set_ylabel("gradient norm")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("longest solve per run (dotted: threshold)", fontsize=10)


def plot(runs, out, file=None):
    """Print the timing table of the dough_rolling quasi_newton/sap runs among ``runs`` and
    draw the figure into ``out``."""
    file = sys.stdout if file is None else file
    levels = level_rows([run for run in runs if run.scenario == SCENARIO])
    runs = [run for run in runs if run.scenario == SCENARIO and run.formulation in FORMULATIONS]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs of {' or '.join(FORMULATIONS)} found")
    timed = [run for run in runs if relative_tolerance(run) is not None]
    for run in runs:
        if run not in timed:
            print(f"note: {run.path.name}: no {run.formulation}.relative_tolerance, skipped", file=file)
    if not timed:
        raise ValueError(f"no {SCENARIO} run has a relative_tolerance parameter")
    rows = timing_rows(timed)
    print(format_timing_table(rows), file=file)
    print(file=file)
    print(format_outcome_table(outcome_rows(timed)), file=file)
    if levels:
        print(file=file)
        print(format_table(("formulation", "table", "ms/step", "it/step", "status"), levels,
                           ("", "", ".1f", ".1f", "")), file=file)
    for run in timed:
        if not run.ok:
            print(f"note: {run.path.name}: {run.status}: {run.message}", file=file)

    histories = []
    for run in sorted(timed, key=lambda run: (run.formulation, relative_tolerance(run))):
        history = convergence_history(run)
        if history is not None:
            histories.append((run, relative_tolerance(run), history))
    panels = 4 if histories else 3
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 4.0))
    _plot_timing(axes[0], rows, levels)
    _plot_speedup(axes[1], rows)
    _plot_iterations(axes[2], rows, levels)
    if histories:
        _plot_histories(axes[3], histories)
    save_figure(fig, "Dough rolling: wall time per step against ε_r", out)
    return rows


def main(argv=None):
    def plot_or_exit(runs, out):
        # dough_rolling runs of other formulations only, or none with ε_r: one line, no trace.
        try:
            plot(runs, out)
        except NotARunError:
            raise  # a bad run file: figure_main's one line and exit status 2
        except ValueError as error:
            sys.exit(f"dough_rolling_timing: {error}")

    figure_main("analysis.figures.dough_rolling_timing", __doc__.splitlines()[0], SCENARIO, plot_or_exit,
                argv)


if __name__ == "__main__":
    main()
