"""Floating box: the draft against Archimedes, and the liquid that enters the box.

    python3 -m analysis.figures.floating_box RUN_DIR_OR_FILES... --out floating_box.png

Left: the draft (liquid level away from the box minus the box's bottom) against time, one
curve per formulation, with the analytic draft d = (ρ_box/ρ_liquid) b (dashed) and the draft
d + s/2 of a box under particle contact, which holds the particles' centres and lets the
liquid's face overlap the box by half a particle spacing (dotted). Right: the number of
liquid particles inside the box's volume.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "floating_box"


def plot(runs, out):
    """Draw the figure for the floating_box runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (draft_ax, leak_ax) = plt.subplots(1, 2, figsize=(12.0, 4.8))
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        summary = run.summary
        label = (f"{run.formulation}: {1000 * summary.get('draft', math.nan):.1f} mm"
                 + ("" if run.ok else f" [{run.status}]"))
        time, draft = run.series("draft")
        draft_ax.plot(time, 1000 * draft, color=color, linewidth=1.2, label=label)
        time, leaked = run.series("particles_in_box")
        leak_ax.plot(time, leaked, color=color, linewidth=1.2, label=run.formulation)
    summary = runs[0].summary
    draft_ax.axhline(1000 * summary["analytic_draft"], color="k", linestyle="--", linewidth=1.0,
                     label=f"analytic d = {1000 * summary['analytic_draft']:.1f} mm")
    draft_ax.axhline(1000 * summary["analytic_draft_particle_contact"], color="k", linestyle=":", linewidth=1.0,
                     label=f"d + s/2 = {1000 * summary['analytic_draft_particle_contact']:.1f} mm")
    draft_ax.axvline(summary["settle_time"], color="0.6", linewidth=0.8)
    draft_ax.set_xlabel("time t [s]")
    draft_ax.set_ylabel("draft [mm] (grey: start of the average)")
    draft_ax.legend(fontsize=7, loc="best")
    leak_ax.set_xlabel("time t [s]")
    leak_ax.set_ylabel("liquid particles inside the box [-]")
    leak_ax.legend(fontsize=7, loc="best")
    for ax in (draft_ax, leak_ax):
        ax.grid(alpha=0.3)
    save_figure(fig, "Rigid box floating in the equation-of-state liquid", out)


def main(argv=None):
    figure_main("analysis.figures.floating_box", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
