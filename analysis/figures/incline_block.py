"""Incline block: speed vs the point-mass solution, F_t/F_n and cone margin ([ding_schroeder_penalty] Figs. 3, 13).

    python3 -m analysis.figures.incline_block RUN_DIR_OR_FILES... --out incline_block.png

One column per formulation. Top: the in-plane speed of the centre of mass (solid) against
the analytic point mass (dashed, same colour), one curve per (μ, body: MPM or rigid block),
with the measured and analytic stop times in the legend. Middle: total tangential over total normal contact force,
with horizontal lines at each μ (the cone, where a sliding block sits) and at tan θ (where a
static block sits, inside the cone). Bottom: the largest per-contact cone margin
‖f_t‖ − μ f_n, which must stay ≤ 0 (formulations without per-contact forces show none).
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "incline_block"


def _number(value):
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3g}"


def variant(run):
    """(μ, body) of a run: one curve each; the body is "mpm" for runs written before the key."""
    return float(run.params["mu"]), str(run.params.get("body", "mpm"))


def _label(run):
    summary = run.summary
    parts = [f"μ = {run.params['mu']:g}, {variant(run)[1]}"]
    if "analytic_stop_time" in summary or "stop_time" in summary:
        parts.append(f"stop {_number(summary.get('stop_time'))} s "
                     f"(analytic {_number(summary.get('analytic_stop_time'))} s)")
    parts.append(f"max err {_number(summary.get('max_rel_error'))}")
    if not run.ok:
        parts.append(f"[{run.status}]")
    return ", ".join(parts)


def plot(runs, out):
    """Draw the figure for the incline_block runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    variants = sorted({variant(run) for run in runs})
    fig, axes = plt.subplots(3, len(formulations), figsize=(max(7.0, 5.5 * len(formulations)), 10.0),
                             sharex="col", sharey="row", squeeze=False)  # one scale per row
    for column, formulation in enumerate(formulations):
        speed_ax, ratio_ax, margin_ax = (axes[row][column] for row in range(3))
        angles = set()
        any_margin = False
        for run in (r for r in runs if r.formulation == formulation):
            color = f"C{variants.index(variant(run)) % 10}"
            name = "μ = {:g}, {}".format(*variant(run))
            angles.add(run.params.get("slope_angle_deg"))
            time, speed = run.series("com_speed")
            speed_ax.plot(time, speed, color=color, linewidth=1.2, label=_label(run))
            if "com_speed" in run.analytic_names():
                ref_time, ref_speed = run.analytic("com_speed")
                speed_ax.plot(ref_time, ref_speed, color=color, linestyle="--", linewidth=1.0)
            time, ratio = run.series("force_ratio")
            ratio_ax.plot(time, ratio, color=color, linewidth=0.8, label=name)
            ratio_ax.axhline(run.params["mu"], color=color, linestyle="--", linewidth=1.0)
            time, margin = run.series("cone_margin")
            if np.isfinite(margin).any():
                any_margin = True
                margin_ax.plot(time, margin, color=color, linewidth=0.8, label=name)
        for angle in angles - {None}:
            ratio_ax.axhline(math.tan(math.radians(angle)), color="k", linestyle=":", linewidth=1.0,
                             label=f"tan θ ({angle:g}°)")
        speed_ax.set_title(formulation)
        speed_ax.set_ylabel("centre-of-mass speed [m/s]")
        speed_ax.legend(fontsize=7, loc="best", title="solid: numeric, dashed: analytic",
                        title_fontsize=7)
        ratio_ax.set_ylabel("F_t / F_n [-] (dashed: μ)")
        finite = [r for r in runs if r.formulation == formulation]
        top = max(0.3, 2.0 * max(r.params["mu"] for r in finite))
        ratio_ax.set_ylim(0.0, top)
        ratio_ax.legend(fontsize=7, loc="upper right")
        margin_ax.axhline(0.0, color="k", linewidth=0.8)
        margin_ax.set_ylabel("max ‖f_t‖ − μ f_n per contact [N]")
        margin_ax.set_xlabel("time t [s]")
        if any_margin:
            margin_ax.legend(fontsize=7, loc="best")
        else:
            margin_ax.text(0.5, 0.5, "no per-contact forces\n(grid-based contact)", ha="center",
                           va="center", transform=margin_ax.transAxes, fontsize=9, color="0.4")
        for ax in (speed_ax, ratio_ax, margin_ax):
            ax.grid(alpha=0.3)
    save_figure(fig, "Block on an incline launched at v0: numeric vs point-mass solution", out)


def main(argv=None):
    figure_main("analysis.figures.incline_block", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
