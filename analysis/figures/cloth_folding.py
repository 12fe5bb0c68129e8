"""Cloth folding: layers, covered area and inverted faces through two folds and the unfold (issue 21).

    python3 -m analysis.figures.cloth_folding RUN_DIR_OR_FILES... --out cloth_folding.png

Top: the mean number of cloth layers over the cloth, one line per formulation; a clean fold
gives 2, the second 4, the unfold 1 again (dotted guides). Middle: the area the cloth covers
over its rest area. Bottom: the face particles whose layer is inverted (r₃₃ < 0), which would
show cloth passing through cloth.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "cloth_folding"


def plot(runs, out):
    """Draw the figure for the cloth_folding runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (layers_ax, area_ax, inverted_ax) = plt.subplots(3, 1, figsize=(7.5, 8.0), sharex=True)
    for k, run in enumerate(runs):
        color = f"C{k % 10}"
        label = run.formulation if run.ok else f"{run.formulation} [{run.status}]"
        for ax, name in ((layers_ax, "mean_layers"), (area_ax, "area_ratio"), (inverted_ax, "inverted_faces")):
            time, value = run.series(name)
            ax.plot(time, value, color=color, linewidth=1.1, label=label)
    for layers in (1, 2, 4):
        layers_ax.axhline(layers, color="0.6", linestyle=":", linewidth=0.8)
    layers_ax.set_ylabel("mean layers")
    area_ax.set_ylabel("covered / rest area")
    inverted_ax.set_ylabel("inverted faces")
    inverted_ax.set_xlabel("time t [s]")
    for ax in (layers_ax, area_ax, inverted_ax):
        ax.grid(alpha=0.3)
    layers_ax.legend(fontsize=7, loc="upper right")
    save_figure(fig, "A cloth folded twice and unfolded by pins", out)


def main(argv=None):
    figure_main("analysis.figures.cloth_folding", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
