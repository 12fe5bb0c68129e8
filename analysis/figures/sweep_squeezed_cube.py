"""Squeezed-cube sweep: oscillation and error of the vertical friction force vs time step.

    python3 -m analysis.figures.sweep_squeezed_cube RESULTS.csv --out sweep_squeezed_cube.png

RESULTS.csv is the table of ``contactlab collect`` (or ``contactlab sweep run``) for
data/sweeps/squeezed_cube.toml, or the directory holding it. Log-log, one line per
formulation. The papers' f_y, the friction force that holds the cube up, is f_z here (z
vertical in the panel's load frame); each panel should carry m g / 2, with m the summary's
cube_mass_sampled and g the swept ``gravity`` when the sweep has one, else 9.81 m/s^2.

Left: the oscillation, mean of left_fz_std and right_fz_std over the averaging window,
divided by m g / 2. Middle: the error of the mean, mean over both panels of
|f_z mean − m g / 2| / (m g / 2). Right, when the table has it: the summary's
error_vs_analytic. The dashed grey line has slope one (first order in Δt). Runs that did not
finish ok (diverged, failed, missing) or have no value are drawn as markers at the top edge
of each panel, in their formulation's colour, shaped by their status (see the legend).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..sweeps import summary_column  # noqa: E402
from ._sweep_plot import (X_LABEL, convergence_panel, extra_dimensions,  # noqa: E402
                          finish_figure, first_order_reference, line_groups, merge_counts,
                          sweep_main)

SCENARIO = "squeezed_cube"
GRAVITY = 9.81  # [m/s^2], the scene's default
REQUIRED = ("cube_mass_sampled", "left_fz_mean", "right_fz_mean", "left_fz_std",
            "right_fz_std")


def _gravity(table):
    """Per-row g: a swept (or recorded) gravity column, else the default."""
    for name in ("gravity", "summary.gravity"):
        if name in table and table[name].dtype == np.float64:
            g = np.array(table[name], dtype=float)
            return np.where(np.isnan(g), GRAVITY, g)
    return np.full(len(table), GRAVITY)


def half_weight(table):
    """m g / 2 per row: the vertical force each panel carries at steady state."""
    return 0.5 * summary_column(table, "cube_mass_sampled") * np.abs(_gravity(table))


def oscillation(table):
    """Mean over both panels of the std of f_z, relative to m g / 2."""
    spread = 0.5 * (summary_column(table, "left_fz_std") + summary_column(table, "right_fz_std"))
    return spread / half_weight(table)


def mean_force_error(table):
    """Mean over both panels of |mean f_z − m g / 2| / (m g / 2)."""
    reference = half_weight(table)
    left = np.abs(summary_column(table, "left_fz_mean") - reference)
    right = np.abs(summary_column(table, "right_fz_mean") - reference)
    return 0.5 * (left + right) / reference


def plot(table, out):
    """Draw the figure for the squeezed_cube rows of ``table`` (a ResultsTable) into ``out``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        metrics = [(oscillation(table), "oscillation of the vertical force\n"
                    "mean std(f_z) / (m g / 2)", "force oscillation"),
                   (mean_force_error(table), "error of the mean vertical force\n"
                    "|mean f_z − m g / 2| / (m g / 2)", "mean vertical force")]
    if "error_vs_analytic" in table or "summary.error_vs_analytic" in table:
        metrics.append((summary_column(table, "error_vs_analytic"), "error_vs_analytic",
                        "error vs analytic steady state"))
    groups = line_groups(table, extra_dimensions(table, []))

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.4 * len(metrics), 4.0), squeeze=False)
    seen = {}
    for ax, (values, label, title) in zip(axes[0], metrics):
        counts = {}
        drawn = convergence_panel(ax, table, values, groups, counts)
        merge_counts(seen, counts)
        first_order_reference(ax, table, values)
        if len(drawn):  # head room above the data for the markers at the top edge
            ax.set_ylim(drawn.min() / 3.0, drawn.max() * 10.0)
        else:
            ax.set_ylim(1e-3, 1.0)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(label)
        ax.set_xlabel(X_LABEL)
    finish_figure(fig, axes, seen, "Squeezed cube: vertical friction force vs time step", out)


def main(argv=None):
    sweep_main("analysis.figures.sweep_squeezed_cube", __doc__.splitlines()[0], SCENARIO,
               REQUIRED, plot, argv)


if __name__ == "__main__":
    main()
