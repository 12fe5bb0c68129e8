"""Cloth strips over two spheres on either side of the friction threshold (issue 21).

    python3 -m analysis.figures.draped_sphere RUN_DIR_OR_FILES... --out draped_sphere.png

Top: the slip of the strip over the sphere with μ = 0.7 μ* (sliding_friction_ratio), one line
per run, against the heavy capstan's slip from rest (dashed) and the band of its slips at radii
R ± h/2 (shaded), where a formulation's contact surface may sit. Bottom: the slip of the strip
over the sphere with μ = 1.3 μ*, which friction must hold, against ± h/2 (dotted).
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "draped_sphere"


def _label(run):
    s = run.summary
    error = s.get("sliding_slip_error")
    text = run.formulation
    if "grid_spacing" in run.params:
        text += f", h {1e3 * run.params['grid_spacing']:g} mm"
    if error is not None and not math.isnan(error):
        text += f": slide {100 * error:+.0f}%, hold {s.get('holding_slip_over_half_h', float('nan')):.2f} h/2"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the draped_sphere runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO),
                  key=lambda run: (run.formulation, run.params.get("grid_spacing", 0.0)))
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (sliding_ax, holding_ax) = plt.subplots(2, 1, figsize=(7.5, 7.0), sharex=True)
    for k, run in enumerate(runs):
        color = f"C{k % 10}"
        time, value = run.series("slip")
        sliding_ax.plot(time, [1e3 * v[1] for v in value], color=color, linewidth=1.0, label=_label(run))
        holding_ax.plot(time, [1e3 * v[0] for v in value], color=color, linewidth=1.0, label=run.formulation)
    # The closed form from the longest run (all runs share it; the band depends on its h).
    reference = max(runs, key=lambda run: run.params.get("duration", 0.0))
    time, value = reference.analytic("slip")
    sliding_ax.plot(time, [1e3 * v[1] for v in value], color="k", linestyle="--", linewidth=1.0,
                    label=f"capstan, μ = {reference.summary.get('sliding_mu', float('nan')):.3f}")
    if "sliding_slip_band" in reference.analytic_names():
        time, band = reference.analytic("sliding_slip_band")
        spacing = 1e3 * reference.params.get("grid_spacing", float("nan"))
        sliding_ax.fill_between(time, [1e3 * v[0] for v in band], [1e3 * v[1] for v in band], color="0.85",
                                zorder=0, label=f"capstan at R ± h/2 (h {spacing:g} mm)")
    half_h = 0.5e3 * reference.params.get("grid_spacing", float("nan"))
    for bound in (half_h, -half_h):
        holding_ax.axhline(bound, color="k", linestyle=":", linewidth=1.0)
    holding_ax.text(time[-1], half_h, f"h/2 (h {2 * half_h:g} mm) ", ha="right", va="bottom", fontsize=7)
    for ax in (sliding_ax, holding_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    sliding_ax.set_ylabel("sliding strip's slip [mm]")
    holding_ax.set_ylabel(f"holding strip's slip [mm], μ = {reference.summary.get('holding_mu', float('nan')):.3f}")
    holding_ax.set_xlabel("time t [s]")
    save_figure(fig, f"Cloth over a sphere, threshold μ* = {reference.summary.get('threshold_mu', float('nan')):.3f}",
                out)


def main(argv=None):
    figure_main("analysis.figures.draped_sphere", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
