"""Sand pile: the final surface against the friction angle; settlement against cohesion.

    python3 -m analysis.figures.sand_pile RUN_DIR_OR_FILES... --out sand_pile.png

Left: the sand's surface height per radial bin at the end of each cohesionless run (one
curve per formulation and friction angle), the column at release (grey) and, dashed, the
cone of the friction angle that holds the same volume (the steepest static pile); a short
dotted segment of slope tan φ through the middle of each fitted flank shows the angle the
flank should have. Middle: the fitted flank angle against time, with φ. Right (when cohesive
runs are given): the settlement over the elastic settlement ρ g H₀²/(2E) against c/c*, the
cohesion over the critical cohesion of unconfined compression; the column should stay
elastic (ratio about 1) right of the line c/c* = 1 and flow left of it.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "sand_pile"


def _radii(run):
    columns = run.series_info("surface_height")["columns"]
    return np.array([float(name.split("=", 1)[1]) for name in columns])


def _flank_middle(radii, surface, top):
    """Radius and height in the middle of the fitted flank (25-75% of the peak), or None."""
    peak = int(np.argmax(surface))
    points = [(r, z) for r, z in zip(radii[peak:], surface[peak:]) if 0.25 * top <= z <= 0.75 * top]
    if len(points) < 3:
        return None
    r, z = np.array(points).T
    return float(np.mean(r)), float(np.mean(z))


def plot(runs, out):
    """Draw the figure for the sand_pile runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    dry = [run for run in runs if run.params.get("cohesion", 0.0) == 0.0]
    cohesive = [run for run in runs if run.params.get("cohesion", 0.0) > 0.0]
    panels = 3 if cohesive else 2
    fig, axes = plt.subplots(1, panels, figsize=(6.0 * panels, 5.0), squeeze=False)
    profile_ax, angle_ax = axes[0][0], axes[0][1]
    labels = sorted({(run.formulation, run.params["friction_angle"]) for run in dry})
    dry.sort(key=lambda run: (run.formulation, run.params["friction_angle"]))
    for run in dry:
        key = (run.formulation, run.params["friction_angle"])
        color = f"C{labels.index(key) % 10}"
        radii = _radii(run)
        _, surface = run.series("surface_height")
        final = surface[-1]
        top = float(np.max(final))
        phi = run.params["friction_angle"]
        label = (f"{run.formulation}, φ = {phi:g}°: flank {run.summary.get('slope_angle', math.nan):.1f}°"
                 + ("" if run.ok else f" [{run.status}]"))
        profile_ax.step(radii, final, where="mid", color=color, linewidth=1.2, label=label)
        _, cone = run.analytic("surface_height")
        profile_ax.plot(radii, cone[-1], color=color, linestyle="--", linewidth=0.9)
        middle = _flank_middle(radii, final, top)
        if middle is not None:
            half = 0.25 * top / math.tan(math.radians(phi))
            r = np.array([middle[0] - half, middle[0] + half])
            profile_ax.plot(r, middle[1] - (r - middle[0]) * math.tan(math.radians(phi)), color=color,
                            linestyle=":", linewidth=2.0)
        time, angle = run.series("slope_angle")
        angle_ax.plot(time, angle, color=color, linewidth=1.0, label=f"{run.formulation}, φ = {phi:g}°")
        angle_ax.axhline(phi, color=color, linestyle="--", linewidth=0.9)
    if dry:
        reach = max(float(np.max(_radii(run)[run.series("surface_height")[1][-1] > 0.0], initial=0.0))
                    for run in dry)
        profile_ax.set_xlim(0.0, 1.3 * max(reach, dry[0].params["column_radius"]))
        radius, height = dry[0].params["column_radius"], dry[0].params["column_height"]
        profile_ax.plot([0, radius, radius], [height, height, 0], color="0.6", linewidth=1.0,
                        label="column at release")
    profile_ax.set_xlabel("radius r [m]")
    profile_ax.set_ylabel("surface height [m]")
    profile_ax.set_title("final surface (dashed: cone of φ, same volume; dotted: slope tan φ)", fontsize=9)
    profile_ax.legend(fontsize=7, loc="upper right")
    angle_ax.set_xlabel("time t [s]")
    angle_ax.set_ylabel("fitted flank angle [deg] (dashed: φ)")
    angle_ax.legend(fontsize=7, loc="lower right")
    if cohesive:
        cohesion_ax = axes[0][2]
        formulations = sorted({run.formulation for run in cohesive})
        for index, formulation in enumerate(formulations):
            points = sorted((run.summary["cohesion_ratio"], run.summary["settlement"]
                             / run.summary["analytic_elastic_settlement"])
                            for run in cohesive if run.formulation == formulation)
            ratio, settlement = np.array(points).T
            cohesion_ax.semilogy(ratio, settlement, "o-", color=f"C{index}", label=formulation)
        cohesion_ax.axvline(1.0, color="k", linestyle="--", linewidth=0.9, label="c = c*")
        cohesion_ax.axhline(1.0, color="0.5", linestyle=":", linewidth=0.9, label="elastic settlement")
        cohesion_ax.set_xlabel("cohesion c / c* [-]")
        cohesion_ax.set_ylabel("settlement / (ρ g H₀² / 2E) [-]")
        cohesion_ax.set_title("cohesive column (slip floor)", fontsize=9)
        cohesion_ax.legend(fontsize=7)
    for ax in axes[0]:
        ax.grid(alpha=0.3)
    save_figure(fig, "Drucker-Prager sand column released on a floor", out)


def main(argv=None):
    figure_main("analysis.figures.sand_pile", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
