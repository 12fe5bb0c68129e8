"""Ball-on-slope sweep: error against the closed form vs time step, per formulation.

    python3 -m analysis.figures.sweep_ball_on_slope RESULTS.csv --out sweep_ball_on_slope.png

RESULTS.csv is the table of ``contactlab collect`` (or ``contactlab sweep run``) for
data/sweeps/ball_on_slope.toml, or the directory holding it. Log-log, one line per
formulation, one column of panels per μ (titled with the regime, roll or slip). Top row: the
summary's max_rel_error_velocity (speed along the slope, t ≥ 0.2 s); then, when the table
has them: error_vs_analytic (displacement) and the spin error |ωR/v − expected| at the end of
the run. At 45° and μ = 0.3 a sliding ball accelerates at 0.70 g sinθ and a rolling one at
0.71 g sinθ, so the speed alone cannot tell rolling from sliding; the spin row can. The dashed grey line has slope one (first
order in Δt). Runs that did not finish ok (diverged, failed, missing) or have no value are
drawn as markers at the top edge of their panel, in their formulation's colour, shaped by
their status (see the legend, which counts them).
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..sweeps import summary_column  # noqa: E402
from ._sweep_plot import (X_LABEL, convergence_panel, extra_dimensions,  # noqa: E402
                          finish_figure, first_order_reference, fmt, line_groups,
                          merge_counts, ordered, sweep_main)

SCENARIO = "ball_on_slope"
PANEL_KEY = "mu"
METRICS = (("max_rel_error_velocity", "max. rel. error of the speed\n(t ≥ 0.2 s)"),
           ("error_vs_analytic", "max. rel. error of the displacement\n(t ≥ 0.2 s)"),
           ("spin_error", "spin error |ωR/v − expected|\n(end of run)"))
SPIN_COLUMNS = ("final_spin_ratio", "expected_spin_ratio")
REQUIRED = (METRICS[0][0],)


def _regime(table):
    if "regime" not in table or table["regime"].dtype == np.float64:
        return ""
    regimes = [r for r in ordered(table["regime"]) if r]
    return "/".join(regimes)


def _has(table, name):
    return name in table or f"summary.{name}" in table


def _metric(table, name):
    """The values of one metric row: a summary column, or the derived spin error."""
    if name == "spin_error":
        final, expected = (summary_column(table, column) for column in SPIN_COLUMNS)
        return np.abs(final - expected)
    return summary_column(table, name)


def plot(table, out):
    """Draw the figure for the ball_on_slope rows of ``table`` (a ResultsTable) into ``out``."""
    metrics = [(name, label) for name, label in METRICS
               if name == REQUIRED[0] or _has(table, name)
               or (name == "spin_error" and all(_has(table, column) for column in SPIN_COLUMNS))]
    panel_values = ordered(table[PANEL_KEY]) if PANEL_KEY in table else [None]
    panel_keys = [PANEL_KEY] if PANEL_KEY in table else []
    groups = line_groups(table, extra_dimensions(table, panel_keys))

    fig, axes = plt.subplots(len(metrics), len(panel_values), sharex=True, sharey="row",
                             figsize=(max(4.6, 4.2 * len(panel_values)), 3.4 * len(metrics) + 0.6),
                             squeeze=False)
    seen = {}
    for row, (name, label) in enumerate(metrics):
        values = _metric(table, name)
        drawn, counts = [], {}
        for column, value in enumerate(panel_values):
            ax = axes[row][column]
            if value is None:
                rows = np.ones(len(table), dtype=bool)
            elif isinstance(value, float) and math.isnan(value):
                rows = np.isnan(table[PANEL_KEY])
            else:
                rows = table.mask({PANEL_KEY: value})
            subset = table[rows]
            panel_groups = [(g_label, color, style, mask[rows])
                            for g_label, color, style, mask in groups if mask[rows].any()]
            drawn.extend(convergence_panel(ax, subset, values[rows], panel_groups, counts))
            first_order_reference(ax, subset, values[rows])
            if row == 0:
                regime = _regime(subset)
                title = "all runs" if value is None else f"μ = {fmt(value)}"
                ax.set_title(title + (f" ({regime})" if regime else ""), fontsize=10)
            if row == len(metrics) - 1:
                ax.set_xlabel(X_LABEL)
        axes[row][0].set_ylabel(label)
        merge_counts(seen, counts)
        if drawn:  # head room above the data for the markers at the top edge
            axes[row][0].set_ylim(min(drawn) / 3.0, max(drawn) * 10.0)
        else:
            axes[row][0].set_ylim(1e-3, 1.0)

    finish_figure(fig, axes, seen, "Ball on slope: error against the closed form vs time step", out)


def main(argv=None):
    sweep_main("analysis.figures.sweep_ball_on_slope", __doc__.splitlines()[0], SCENARIO,
               REQUIRED, plot, argv)


if __name__ == "__main__":
    main()
