"""Dough tearing: the pieces, the pull and the plastic strain against time ([zong2024convex] Fig. 4).

    python3 -m analysis.figures.dough_tearing RUN_DIR_OR_FILES... --out dough_tearing.png

One curve per run (formulation and finger drive). Left: the pieces (connected components
holding at least piece_min_fraction of the dough's mass); the legend gives the separation
time. Middle: the force the dough exerts on the right gripper along x (its pull on the
gripper, negative while the grippers pull apart). Right: the largest equivalent plastic
strain. Grey lines mark the ends of the phases close, lift, pull, lower and open, read from
the run's parameters.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "dough_tearing"
PHASES = ("close_time", "lift_time", "pull_time", "lower_time", "open_time")


def _label(run):
    summary = run.summary
    drive = summary.get("finger_drive", "kinematic")
    separation = summary.get("separation_time", math.nan)
    torn = f"torn at {separation:.2f} s" if not math.isnan(separation) else "not torn"
    waist = float(run.params.get("waist_width", 0.0))
    shape = f", waist {100.0 * waist:g} cm" if waist > 0.0 else ""
    return f"{run.formulation} ({drive}{shape}): {torn}" + ("" if run.ok else f" [{run.status}]")


def plot(runs, out):
    """Draw the figure for the dough_tearing runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO),
                  key=lambda run: (run.formulation, run.summary.get("finger_drive", ""),
                                   float(run.params.get("waist_width", 0.0))))
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (pieces_ax, force_ax, strain_ax) = plt.subplots(1, 3, figsize=(15.0, 4.6))
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        style = "--" if run.summary.get("finger_drive") == "pd" else "-"
        time, pieces = run.series("pieces")
        pieces_ax.step(time, pieces, where="post", color=color, linestyle=style, linewidth=1.2, label=_label(run))
        time, force = run.series("finger_force")
        force_ax.plot(time, force[:, 3], color=color, linestyle=style, linewidth=1.0, label=run.formulation)
        time, strain = run.series("plastic_strain")
        strain_ax.plot(time, strain[:, 1], color=color, linestyle=style, linewidth=1.0, label=run.formulation)
    phase_end = 0.0
    for key in PHASES:
        phase_end += float(runs[0].params[key])
        for ax in (pieces_ax, force_ax, strain_ax):
            ax.axvline(phase_end, color="0.75", linewidth=0.8)
    pieces_ax.set_ylabel("pieces [-]")
    force_ax.set_ylabel("force of the dough on the right gripper, x [N]")
    strain_ax.set_ylabel("largest equivalent plastic strain [-]")
    pieces_ax.legend(fontsize=7, loc="upper left")
    for ax in (pieces_ax, force_ax, strain_ax):
        ax.set_xlabel("time t [s] (grey: ends of close, lift, pull, lower, open)")
        ax.grid(alpha=0.3)
    save_figure(fig, "Two grippers tear an elastoplastic dough ([zong2024convex] §VII-B)", out)


def main(argv=None):
    figure_main("analysis.figures.dough_tearing", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
