"""Wedge: block heights over time, jammed or sliding ([ding_schroeder_penalty] Fig. 8, wdg_rm).

    python3 -m analysis.figures.wedge RUN_DIR_OR_FILES... --out wedge.png

One panel per formulation; per run (colour by μ) the left block's centre height (solid)
and the right block's (dashed), relative to their start. The legend gives the blocks
(left+right), μ, the summary's jammed verdict and μ* = M g / N_wall measured from the walls.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "wedge"


def _label(run):
    summary = run.summary
    verdict = "jammed" if summary.get("jammed") else "slides"
    mu_star = summary.get("mu_star")
    mu_star_text = "-" if mu_star is None or math.isnan(mu_star) else f"{mu_star:.3g}"
    text = (f"{summary.get('configuration', '?')}, μ = {run.params['mu']:g}: {verdict} "
            f"(μ* = {mu_star_text})")
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the wedge runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    keys = sorted({(run.summary.get("configuration", ""), run.params["mu"]) for run in runs})
    fig, axes = plt.subplots(1, len(formulations), figsize=(max(6.5, 5.5 * len(formulations)), 4.8),
                             sharey=True, squeeze=False)  # one scale for every formulation
    for ax, formulation in zip(axes[0], formulations):
        for run in (r for r in runs if r.formulation == formulation):
            color = f"C{keys.index((run.summary.get('configuration', ''), run.params['mu'])) % 10}"
            time, height = run.series("block_height")
            ax.plot(time, height[:, 0] - height[0, 0], color=color, linewidth=1.2, label=_label(run))
            ax.plot(time, height[:, 1] - height[0, 1], color=color, linewidth=1.2, linestyle="--")
        ax.set_title(formulation)
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("block height change [m] (solid: left, dashed: right)")
        ax.legend(fontsize=7, loc="lower left")
        ax.grid(alpha=0.3)
    save_figure(fig, "Wedge: two blocks squeezed between fixed walls", out)


def main(argv=None):
    figure_main("analysis.figures.wedge", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
