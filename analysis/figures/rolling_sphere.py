"""Rolling sphere: speed and slip against the rigid-body solution ([ding_schroeder_penalty] Fig. 4).

    python3 -m analysis.figures.rolling_sphere RUN_DIR_OR_FILES... --out rolling_sphere.png

One column per formulation, one colour per (μ, body) run. Top: the speed of the sphere's
centre along the incline (solid) against the rigid sphere's solution (dashed): 5/7 g sin θ t
while it rolls (μ ≥ 2/7 tan θ), g (sin θ − μ cos θ) t while it slips, the slipping sphere the
faster. Bottom: the contact point's slip speed v − ωR (zero while rolling, growing at
g (sin θ − 7/2 μ cos θ) while slipping), dashed the same solution. The legend gives the
regime and the error of the fitted acceleration.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "rolling_sphere"


def variant(run):
    """(μ, body) of a run; the body is "rigid" for runs written before the key existed."""
    return float(run.params["mu"]), str(run.params.get("body", "rigid"))


def _label(run):
    mu, body = variant(run)
    summary = run.summary
    error = summary.get("error_vs_analytic")
    error_text = "-" if error is None or math.isnan(error) else f"{100.0 * error:.2g}%"
    text = f"μ = {mu:g}, {body}: {summary.get('regime', '?')}, a err {error_text}"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the rolling_sphere runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    variants = sorted({variant(run) for run in runs}, key=lambda v: (-v[0], v[1]))
    fig, axes = plt.subplots(2, len(formulations), figsize=(max(6.5, 4.6 * len(formulations)), 7.0),
                             sharex="col", sharey="row", squeeze=False)  # one scale per row
    for column, formulation in enumerate(formulations):
        speed_ax, slip_ax = axes[0][column], axes[1][column]
        for run in sorted((r for r in runs if r.formulation == formulation), key=variant):
            color = f"C{variants.index(variant(run)) % 10}"
            for ax, name in ((speed_ax, "com_speed"), (slip_ax, "slip_speed")):
                if name in run.series_names():
                    time, value = run.series(name)
                    ax.plot(time, value, color=color, linewidth=1.2, label=_label(run) if ax is speed_ax else None)
                if name in run.analytic_names():
                    time, value = run.analytic(name)
                    ax.plot(time, value, color=color, linestyle="--", linewidth=1.0)
        speed_ax.set_title(formulation)
        speed_ax.set_ylabel("speed along the incline [m/s]")
        speed_ax.legend(fontsize=7, loc="upper left", title="solid: numeric, dashed: rigid sphere",
                        title_fontsize=7)
        slip_ax.set_ylabel("slip speed v − ωR [m/s]")
        slip_ax.set_xlabel("time t [s]")
        for ax in (speed_ax, slip_ax):
            ax.grid(alpha=0.3)
    save_figure(fig, "Sphere released on a 6° incline: rolls at μ 0.3, slips at μ 0.01", out)


def main(argv=None):
    figure_main("analysis.figures.rolling_sphere", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
