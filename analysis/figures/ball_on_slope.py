"""Ball on slope: numeric vs analytic displacement and spin ratio ([zong2024convex], Fig. 3).

    python3 -m analysis.figures.ball_on_slope results/demo --out ball_on_slope.png

One row per formulation, every μ in each panel (one colour per μ). Left: the centre-of-mass
displacement u(t) along the slope, numeric (markers) against the analytic solution (dashed).
Right: the spin ratio ωr/v, numeric (markers) against its analytic value (dashed: 1 when
rolling, 2.5μcosθ/(sinθ − μcosθ) when slipping). The displacement alone hides a sliding
ball: one that slides against a friction force near (2/7)·tanθ·mg·cosθ covers the rolling
distance without turning, so only its spin ratio (near 0 instead of 1) gives it away.

The y range of each column comes from the analytic curves and the numeric data that stay
within BAND times the analytic range of that column. A run whose status is "diverged", or
whose displacement leaves that band or stops being finite, is drawn only up to that time and
labelled "diverged at t = ..." (the panel title counts such runs), so one blow-up cannot
flatten every other curve. Runs of other scenarios are skipped.
"""

import math
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ..analytic import (ball_on_slope_displacement, ball_on_slope_spin_ratio,  # noqa: E402
                        ball_on_slope_velocity)
from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "ball_on_slope"
MARKERS_PER_CURVE = 25
# Numeric values farther than BAND × (analytic range) outside the analytic range count as
# diverged (displacement) or as off-scale (spin ratio); they never set an axis limit.
BAND = 3.0
# ωr/v is shown where the analytic speed is at least this fraction of its largest value in
# the run: near t = 0 both ω and v vanish and their ratio is noise.
SPIN_RATIO_MIN_SPEED = 0.05
MARGIN = 0.05  # blank space above and below the data, as a fraction of the y range


@dataclass
class _Curves:
    """What one run contributes to the figure, cut at its divergence time."""
    run: object
    mu: float
    displacement: tuple                   # (time, numeric u) before the divergence time
    displacement_reference: tuple         # (time, analytic u)
    expected_spin_ratio: float
    spin_ratio: tuple = None              # (time, numeric ωr/v), None when not recorded
    diverged_at: float = None             # [s], None when the run did not diverge


def _reference_displacement(run):
    """Analytic u(t) from the run file, or from the formula when the run has none."""
    if "com_displacement" in run.analytic_names():
        return run.analytic("com_displacement")
    time, _ = run.series("com_displacement")
    p = run.params
    return time, ball_on_slope_displacement(time, p["mu"], p["slope_angle_deg"],
                                            p.get("gravity", 9.81))


def _expected_spin_ratio(run):
    """ωr/v of the analytic solution: the run's summary value, else the formula."""
    value = run.summary.get("expected_spin_ratio")
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return float(ball_on_slope_spin_ratio(run.params["mu"], run.params["slope_angle_deg"]))


def _band(low, high, minimum_span):
    """(low, high) widened on either side by BAND times the span (at least ``minimum_span``)."""
    span = max(high - low, minimum_span)
    return low - BAND * span, high + BAND * span


def _first_bad_time(time, values, band):
    """Time of the first sample that is not finite or lies outside ``band``; None if none."""
    if len(time) == 0:
        return None
    values = np.asarray(values, dtype=float).reshape(len(time), -1)
    with np.errstate(invalid="ignore"):
        outside = ((values < band[0]) | (values > band[1])).any(axis=1)
    bad = ~np.isfinite(values).all(axis=1) | outside
    return float(time[np.argmax(bad)]) if bad.any() else None


def _spin_ratio(run, until):
    """(time, ωr/v) from /timeseries/spin and /timeseries/com_velocity (along the slope)
    where the analytic speed is not negligible and t < ``until``; None when not recorded."""
    names = run.series_names()
    if "spin" not in names or "com_velocity" not in names or "radius" not in run.params:
        return None
    time, spin = run.series("spin")
    velocity_time, velocity = run.series("com_velocity")
    if spin.ndim != 1 or velocity.ndim != 1 or not np.array_equal(time, velocity_time):
        return None
    p = run.params
    speed = np.abs(ball_on_slope_velocity(time, p["mu"], p["slope_angle_deg"],
                                          p.get("gravity", 9.81)))
    keep = (speed >= SPIN_RATIO_MIN_SPEED * speed.max()) & (velocity != 0.0) & (time < until)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return time[keep], spin[keep] * p["radius"] / velocity[keep]


def _curves(run, reference, band):
    """The run's curves. A displacement that leaves ``band`` or stops being finite is cut
    there; a run recorded as diverged with every value in range diverged at its last time."""
    time, value = run.series("com_displacement")
    curves = _Curves(run=run, mu=run.params["mu"], displacement=(time, value),
                     displacement_reference=reference,
                     expected_spin_ratio=_expected_spin_ratio(run))
    bad = _first_bad_time(time, value, band)
    if bad is not None:
        curves.diverged_at = bad
        curves.displacement = (time[time < bad], value[time < bad])
    elif run.status == "diverged":
        curves.diverged_at = float(time[-1]) if len(time) else 0.0
    curves.spin_ratio = _spin_ratio(run, math.inf if bad is None else bad)
    return curves


def _label(curves):
    run = curves.run
    parts = [f"μ = {curves.mu:g}"]
    if run.summary.get("regime"):
        parts.append(f"({run.summary['regime']})")
    if curves.diverged_at is not None:
        parts.append(f"diverged at t = {curves.diverged_at:.3g} s")
        if len(curves.displacement[0]) == 0:
            parts.append("(not plotted)")
    else:
        error = run.summary.get("max_rel_error")
        error_text = "-" if error is None or math.isnan(error) else f"{error:.1e}"
        parts.append(f"max rel. error {error_text}")
        if not run.ok:
            parts.append(f"[{run.status}]")
    return " ".join(parts)


def _limits(values):
    """(low, high) of the finite ``values`` (a list of arrays, not all empty) plus a margin."""
    values = np.concatenate([np.ravel(v) for v in values])
    values = values[np.isfinite(values)]
    low, high = values.min(), values.max()
    span = high - low if high > low else max(abs(high), 1.0)
    return low - MARGIN * span, high + MARGIN * span


def _in_band(values, band):
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values) & (values >= band[0]) & (values <= band[1])]


def draw(runs):
    """The figure (not saved) for the ball_on_slope runs among ``runs``: one row per
    formulation, displacement left, spin ratio right."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    formulations = sorted({run.formulation for run in runs})
    mus = sorted({run.params["mu"] for run in runs})

    # The analytic ranges of both columns over every run set the bands: displacement from
    # 0 to the largest analytic u, spin ratio at least [0, 1] (no spin to rolling).
    references = {run.path: _reference_displacement(run) for run in runs}
    analytic_u = np.concatenate([np.ravel(value) for _, value in references.values()] + [[0.0]])
    analytic_u = analytic_u[np.isfinite(analytic_u)]
    displacement_band = _band(analytic_u.min(), analytic_u.max(), 1e-9)
    expected = [_expected_spin_ratio(run) for run in runs]
    expected = [value for value in expected if math.isfinite(value)] + [0.0, 1.0]
    spin_band = _band(min(expected), max(expected), 1.0)

    curves = {run.path: _curves(run, references[run.path], displacement_band) for run in runs}

    fig, axes = plt.subplots(len(formulations), 2, figsize=(12.0, 3.8 * len(formulations)),
                             sharex=True, sharey="col", squeeze=False)
    for row, formulation in zip(axes, formulations):
        u_ax, ratio_ax = row
        diverged = 0
        for run in (r for r in runs if r.formulation == formulation):
            c = curves[run.path]
            colour = f"C{mus.index(c.mu) % 10}"
            index = mus.index(c.mu)
            diverged += c.diverged_at is not None

            time, value = c.displacement
            # Marker spacing of the whole run (a cut run keeps it), staggered by μ so that
            # equal curves stay visible.
            every = max(1, len(c.displacement_reference[0]) // MARKERS_PER_CURVE)
            u_ax.plot(time, value, linestyle="none", marker="o", markersize=4,
                      markerfacecolor="none", color=colour,
                      markevery=(index * every // len(mus), every), label=_label(c))
            ref_time, ref_value = c.displacement_reference
            u_ax.plot(ref_time, ref_value, linestyle="--", color=colour, linewidth=1.2)

            label = f"μ = {c.mu:g}: expected {c.expected_spin_ratio:.3g}"
            final = run.summary.get("final_spin_ratio")
            if c.diverged_at is None and isinstance(final, (int, float)) and math.isfinite(final):
                label += f", final {final:.3g}"
            if c.spin_ratio is None:
                label += " (no spin recorded)"
                ratio_ax.plot([], [], color=colour, label=label)
            else:
                ratio_time, ratio = c.spin_ratio
                ratio_ax.plot(ratio_time, ratio, linestyle="none", marker="o", markersize=4,
                              markerfacecolor="none", color=colour,
                              markevery=(index * every // len(mus), every), label=label)
            if math.isfinite(c.expected_spin_ratio):
                ratio_ax.axhline(c.expected_spin_ratio, linestyle="--", color=colour, linewidth=1.2)

        suffix = f" ({diverged} diverged)" if diverged else ""
        u_ax.set_title(f"{formulation}: displacement{suffix}")
        ratio_ax.set_title(f"{formulation}: spin ratio ωr/v{suffix}")
        for ax, where in ((u_ax, "upper left"), (ratio_ax, "best")):
            handles, labels = ax.get_legend_handles_labels()
            handles.append(Line2D([], [], color="0.3", linestyle="--"))
            labels.append("analytic (dashed)")
            ax.legend(handles, labels, fontsize=7, loc=where)
            ax.grid(alpha=0.3)
        u_ax.set_ylabel("u along slope [m]")
        ratio_ax.set_ylabel("ωr/v [1]")
    for ax in axes[-1]:
        ax.set_xlabel("time t [s]")

    # Column limits: analytic values and the numeric values inside the band; never the
    # values of a blow-up.
    all_curves = list(curves.values())
    axes[0][0].set_ylim(*_limits(
        [analytic_u] + [_in_band(c.displacement[1], displacement_band) for c in all_curves]))
    axes[0][1].set_ylim(*_limits(
        [np.array(expected)]
        + [_in_band(c.spin_ratio[1], spin_band) for c in all_curves if c.spin_ratio is not None]))
    return fig


def plot(runs, out):
    """Draw the figure for the ball_on_slope runs among ``runs`` into ``out`` (PNG, PDF...)."""
    fig = draw(runs)
    angles = {run.params.get("slope_angle_deg") for run in runs if run.scenario == SCENARIO}
    title = "Ball on slope: numeric (markers) vs analytic (dashed)"
    if len(angles) == 1 and None not in angles:
        title += f", θ = {angles.pop():g}°"
    save_figure(fig, title, out)


def main(argv=None):
    figure_main("analysis.figures.ball_on_slope", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
