"""Hanging cloth strip: elongation and pin force against the closed form (issue 21).

    python3 -m analysis.figures.hanging_cloth RUN_DIR_OR_FILES... --out hanging_cloth.png

Top: the drop of the strip's bottom row over time, one line per formulation, and the static
elongation ρ g L² / (2 E₂) (dashed). The strip starts unstretched and rings about its static
state; implicit steps damp the ringing, explicit ones keep it, so the run's figure of merit is
the mean over [settle_time, duration] (shaded), given in the legend. Bottom: the force the pin
exerts on the free cloth against the weight of the cloth below the pinned row (dashed).
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "hanging_cloth"


def _label(run):
    error = run.summary.get("elongation_error")
    text = run.formulation if error is None or math.isnan(error) else f"{run.formulation}: mean {100 * error:+.1f}%"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the hanging_cloth runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (elongation_ax, force_ax) = plt.subplots(2, 1, figsize=(7.5, 6.5), sharex=True)
    for k, run in enumerate(runs):
        color = f"C{k % 10}"
        time, value = run.series("elongation")
        elongation_ax.plot(time, [1e3 * v for v in value], color=color, linewidth=1.0, label=_label(run))
        if "pin_force" in run.series_names():
            time, value = run.series("pin_force")
            force_ax.plot(time, value, color=color, linewidth=1.0, label=run.formulation)
    reference = runs[0]
    time, value = reference.analytic("elongation")
    elongation_ax.plot(time, [1e3 * v for v in value], color="k", linestyle="--", linewidth=1.0,
                       label="ρ g L² / (2 E₂)")
    if "pin_force" in reference.analytic_names():
        time, value = reference.analytic("pin_force")
        force_ax.plot(time, value, color="k", linestyle="--", linewidth=1.0, label="weight below the pins")
    settle = reference.summary.get("settle_time")
    for ax in (elongation_ax, force_ax):
        if settle is not None and len(time):
            ax.axvspan(settle, time[-1], color="0.9", zorder=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    elongation_ax.set_ylabel("elongation [mm]")
    force_ax.set_ylabel("pin force on the cloth, z [N]")
    force_ax.set_xlabel("time t [s]")
    save_figure(fig, "Cloth strip hanging from a pin under its own weight", out)


def main(argv=None):
    figure_main("analysis.figures.hanging_cloth", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
