"""Liquid transfer: the share of the liquid in the mug, in the bin and spilled, and leakage.

    python3 -m analysis.figures.liquid_transfer RUN_DIR_OR_FILES... --out liquid_transfer.png

Left: the fraction of the liquid's particles in the bin (solid) and still in the mug (dashed)
against time, one colour per run, with the mug's tilt (grey, right axis) to show the phases
(lift, carry, tilt, hold). Middle: the deepest penetration of a liquid particle into any wall
of the mug or the bin, over the grid spacing h, with the issue's h/2 limit dotted. Right: the
mean volume ratio J of the liquid over its value at the start.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "liquid_transfer"


def _label(run):
    in_bin = run.summary.get("final_fraction_in_bin", math.nan)
    text = f"{run.formulation}: {100 * in_bin:.1f}% in the bin"
    return text + ("" if run.ok else f" [{run.status}]")


def plot(runs, out):
    """Draw the figure for the liquid_transfer runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (fraction_ax, leak_ax, volume_ax) = plt.subplots(1, 3, figsize=(15.0, 4.8))
    tilt_ax = fraction_ax.twinx()
    tilt_shown = False
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        time, in_bin = run.series("fraction_in_bin")
        _, in_mug = run.series("fraction_in_mug")
        fraction_ax.plot(time, 100.0 * np.ravel(in_bin), color=color, linewidth=1.4, label=_label(run))
        fraction_ax.plot(time, 100.0 * np.ravel(in_mug), color=color, linewidth=1.0, linestyle="--")
        if not tilt_shown:
            tilt_time, tilt = run.series("mug_tilt")
            tilt_ax.plot(tilt_time, np.ravel(tilt), color="0.6", linewidth=0.9)
            tilt_shown = True
        h = run.params["grid_spacing"]
        _, deepest = run.series("deepest_wall_penetration")
        leak_ax.plot(time, np.ravel(deepest) / h, color=color, linewidth=1.1, label=run.formulation)
        _, volume = run.series("mean_volume_ratio")
        volume = np.ravel(volume)
        volume_ax.plot(time, volume / volume[0], color=color, linewidth=1.1, label=run.formulation)
    fraction_ax.set_xlabel("t [s]")
    fraction_ax.set_ylabel("share of the liquid [%]: in the bin (solid), in the mug (dashed)")
    fraction_ax.set_ylim(-2.0, 102.0)
    fraction_ax.legend(fontsize=7, loc="center left")
    tilt_ax.set_ylabel("mug tilt [deg] (grey)")
    leak_ax.axhline(0.5, color="k", linestyle=":", linewidth=0.9, label="h/2")
    leak_ax.set_xlabel("t [s]")
    leak_ax.set_ylabel("deepest particle inside a wall / h")
    leak_ax.legend(fontsize=7)
    volume_ax.axhline(1.0, color="k", linewidth=0.8)
    volume_ax.set_xlabel("t [s]")
    volume_ax.set_ylabel("mean J / mean J at the start")
    volume_ax.legend(fontsize=7)
    for ax in (fraction_ax, leak_ax, volume_ax):
        ax.grid(alpha=0.3)
    fraction_ax.set_title("where the liquid is", fontsize=9)
    leak_ax.set_title("leakage into walls", fontsize=9)
    volume_ax.set_title("volume drift", fontsize=9)
    save_figure(fig, "Liquid transfer: a kinematic mug poured into a bin", out)


def main(argv=None):
    figure_main("analysis.figures.liquid_transfer", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
