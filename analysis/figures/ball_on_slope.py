"""Ball on slope: numeric vs analytic centre-of-mass displacement (seed 000, Fig. 3).

    python3 -m analysis.figures.ball_on_slope results/demo --out ball_on_slope.png

One panel per formulation; in each, the numeric u(t) (markers) and the analytic solution
(dashed, same colour) for every μ. Runs of other scenarios are skipped.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ..analytic import ball_on_slope_displacement  # noqa: E402
from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "ball_on_slope"
OBSERVABLE = "com_displacement"
MARKERS_PER_CURVE = 25


def _reference(run):
    """Analytic u(t) from the run file, or from the formula when the run has none."""
    if OBSERVABLE in run.analytic_names():
        return run.analytic(OBSERVABLE)
    time, _ = run.series(OBSERVABLE)
    p = run.params
    return time, ball_on_slope_displacement(time, p["mu"], p["slope_angle_deg"],
                                            p.get("gravity", 9.81))


def _label(run):
    error = run.summary.get("max_rel_error")
    parts = [f"μ = {run.params['mu']:g}"]
    if run.summary.get("regime"):
        parts.append(f"({run.summary['regime']})")
    error_text = "-" if error is None or math.isnan(error) else f"{error:.1e}"
    parts.append(f"max rel. error {error_text}")
    if not run.ok:
        parts.append(f"[{run.status}]")
    return " ".join(parts)


def plot(runs, out):
    """Draw the figure for the ball_on_slope runs among ``runs`` into ``out`` (PNG, PDF...)."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    mus = sorted({run.params["mu"] for run in runs})
    angles = {run.params.get("slope_angle_deg") for run in runs}

    fig, axes = plt.subplots(1, len(formulations), figsize=(max(7.0, 5.0 * len(formulations)), 4.6),
                             sharey=True, squeeze=False)
    for ax, formulation in zip(axes[0], formulations):
        unit = "m"
        for run in (r for r in runs if r.formulation == formulation):
            index = mus.index(run.params["mu"])
            time, value = run.series(OBSERVABLE)
            unit = run.series_info(OBSERVABLE).get("unit", unit)
            every = max(1, len(time) // MARKERS_PER_CURVE)  # staggered so equal curves show
            ax.plot(time, value, linestyle="none", marker="o", markersize=4,
                    markerfacecolor="none", color=f"C{index % 10}",
                    markevery=(index * every // len(mus), every), label=_label(run))
            ref_time, ref_value = _reference(run)
            ax.plot(ref_time, ref_value, linestyle="--", color=f"C{index % 10}", linewidth=1.2)
        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", linestyle="--"))
        labels.append("analytic (dashed)")
        ax.legend(handles, labels, fontsize=8, loc="upper left")
        ax.set_title(formulation)
        ax.set_xlabel("time t [s]")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"centre-of-mass displacement along slope u [{unit}]")
    title = "Ball on slope: numeric (markers) vs analytic (dashed)"
    if len(angles) == 1 and None not in angles:
        title += f", θ = {angles.pop():g}°"
    save_figure(fig, title, out)


def main(argv=None):
    figure_main("analysis.figures.ball_on_slope", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
