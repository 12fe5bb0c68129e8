"""Stack: the top block's settling and drift over time ([ding_schroeder_penalty] Fig. 3 right).

    python3 -m analysis.figures.stack RUN_DIR_OR_FILES... --out stack.png

Rigid and MPM blocks stacked on a static ground must stand without drift. One curve per
formulation. Left: the vertical displacement of the top block's centre from its start (the
stack's elastic settling; a fall shows as a drop of a block size or more). Right: the top
block's horizontal distance from its start, with the scene's standing limit (stand_fraction
times the block size) dotted. The legend gives the summary's verdict.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "stack"


def _label(run):
    summary = run.summary
    verdict = "stands" if str(summary.get("stood")).strip().lower() in ("1", "true") else "falls"
    text = f"{run.formulation} ({summary.get('layers', '?')}): {verdict}"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the stack runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (settling_ax, drift_ax) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    limits = set()
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        for ax, name in ((settling_ax, "top_settling"), (drift_ax, "top_drift")):
            if name in run.series_names():
                time, value = run.series(name)
                ax.plot(time, 1e3 * value, color=color, linewidth=1.2, label=_label(run))
        size, fraction = run.params.get("block_size"), run.summary.get("stand_fraction")
        if size is not None and fraction is not None:
            limits.add(1e3 * float(size) * float(fraction))
    for limit in limits:
        drift_ax.axhline(limit, color="k", linestyle=":", linewidth=1.0, label=f"standing limit {limit:g} mm")
    settling_ax.set_ylabel("top block: vertical displacement [mm]")
    drift_ax.set_ylabel("top block: horizontal drift [mm]")
    drift_ax.set_yscale("log")
    drift_ax.set_ylim(bottom=1e-3)  # [mm]; the drift is zero at the start
    for ax in (settling_ax, drift_ax):
        ax.set_xlabel("time t [s]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, "Stack of rigid and MPM blocks on the ground", out)


def main(argv=None):
    figure_main("analysis.figures.stack", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
