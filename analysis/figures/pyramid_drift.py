"""Pyramid: ball height and lateral drift over time ([ding_schroeder_penalty] Fig. 6, prmd_rm).

    python3 -m analysis.figures.pyramid_drift RUN_DIR_OR_FILES... --out pyramid.png

One column per formulation, one curve per μ. Top: height of the rigid ball's centre (a
collapse shows as a drop). Bottom: the ball's horizontal distance from where it was at the
run's settle_time (no drift for a stable stack). The legend gives the summary's verdict.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "pyramid"


def _label(run):
    summary = run.summary
    verdict = "collapsed" if summary.get("collapsed") else "stands"
    drift = summary.get("drift")
    drift_text = "-" if drift is None or math.isnan(drift) else f"{1000.0 * drift:.2g} mm"
    text = f"μ = {run.params['mu']:g}: {verdict}, drift {drift_text}"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the pyramid runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    mus = sorted({run.params["mu"] for run in runs})
    fig, axes = plt.subplots(2, len(formulations), figsize=(max(6.5, 5.0 * len(formulations)), 7.0),
                             sharex="col", sharey="row", squeeze=False)  # one scale per row
    for column, formulation in enumerate(formulations):
        height_ax, drift_ax = axes[0][column], axes[1][column]
        for run in (r for r in runs if r.formulation == formulation):
            color = f"C{mus.index(run.params['mu']) % 10}"
            time, height = run.series("ball_height")
            height_ax.plot(time, height, color=color, linewidth=1.2, label=_label(run))
            time, drift = run.series("ball_drift")
            drift_ax.plot(time, 1000.0 * drift, color=color, linewidth=1.2, label=f"μ = {run.params['mu']:g}")
            settle = run.params.get("settle_time")
            if settle is not None:
                drift_ax.axvline(settle, color="0.6", linestyle=":", linewidth=0.8)
        height_ax.set_title(formulation)
        height_ax.set_ylabel("ball centre height [m]")
        height_ax.legend(fontsize=7, loc="best")
        drift_ax.set_ylabel("lateral drift since settle_time [mm]")
        drift_ax.set_xlabel("time t [s]")
        drift_ax.set_yscale("symlog", linthresh=0.01)
        drift_ax.legend(fontsize=7, loc="best")
        for ax in (height_ax, drift_ax):
            ax.grid(alpha=0.3)
    save_figure(fig, "Pyramid: rigid ball on three MPM blocks", out)


def main(argv=None):
    figure_main("analysis.figures.pyramid_drift", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
