"""Sphere into sand: the penetration of a dropped sphere against Uehara's law, and its speed.

    python3 -m analysis.figures.sphere_into_sand RUN_DIR_OR_FILES... --out sphere_into_sand.png

Left: the penetration (the sand's surface at t = 0 minus the sphere's lowest point) against
time, one curve per run (formulation, drop height h, grid spacing), with the final depth of
Uehara et al. (2003) for each drop height (black) and the surface level (grey). The shaded
band just below the surface is half a particle spacing (the largest among the runs): particle
contact holds the sphere against the particles' centres that far below the sand's face.
Middle: the sphere's speed on a log scale, with the speed below which the scene counts it at
rest (dotted). Right: the vertical contact force of the sand on the sphere over the sphere's
weight.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "sphere_into_sand"


def _key(run):
    return run.formulation, run.params.get("drop_height", math.nan), run.params.get("grid_spacing", math.nan)


def plot(runs, out):
    """Draw the figure for the sphere_into_sand runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=_key)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (depth_ax, speed_ax, force_ax) = plt.subplots(1, 3, figsize=(16.0, 4.8))
    uehara_lines = set()  # (drop height, Uehara's depth) [m]
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        formulation, drop, spacing = _key(run)
        name = f"{formulation}, h = {drop:g} m, grid {1000 * spacing:g} mm"
        label = (f"{name}: {1000 * run.summary.get('penetration', math.nan):.1f} mm"
                 + ("" if run.ok else f" [{run.status}]"))
        time, depth = run.series("penetration")
        depth_ax.plot(time, 1000 * depth, color=color, linewidth=1.2, label=label)
        _, uehara = run.analytic("penetration")
        uehara_lines.add((drop, float(uehara[-1])))
        time, velocity = run.series("sphere_velocity")
        speed = np.linalg.norm(velocity, axis=1)
        speed_ax.semilogy(time, np.maximum(speed, 1e-6), color=color, linewidth=1.0, label=name)
        time, force = run.series("sphere_contact_force")
        force_ax.plot(time, force[:, 2] / _sphere_weight(run), color=color, linewidth=1.0, label=name)
    for index, (drop, depth) in enumerate(sorted(uehara_lines)):
        depth_ax.axhline(1000 * depth, color="k", linestyle=("--", "-.", ":")[index % 3], linewidth=0.9,
                         label=f"Uehara et al., h = {drop:g} m: {1000 * depth:.1f} mm")
    offset = 1000 * max(run.summary.get("particle_contact_offset", 0.0) for run in runs)
    depth_ax.axhline(0.0, color="0.6", linewidth=0.8)
    depth_ax.axhspan(0.0, offset, color="0.85", alpha=0.6,
                     label=f"particle contact offset s/2 (up to {offset:.1f} mm)")
    depth_ax.invert_yaxis()
    depth_ax.set_xlabel("time t [s]")
    depth_ax.set_ylabel("penetration [mm] (down; 0: sand surface)")
    depth_ax.legend(fontsize=7, loc="best")
    speed_ax.axhline(runs[0].summary.get("rest_speed", math.nan), color="k", linestyle=":", linewidth=0.9,
                     label="rest_speed")
    speed_ax.set_xlabel("time t [s]")
    speed_ax.set_ylabel("sphere speed [m/s]")
    speed_ax.legend(fontsize=7, loc="best")
    force_ax.axhline(1.0, color="k", linestyle=":", linewidth=0.9, label="weight")
    force_ax.set_xlabel("time t [s]")
    force_ax.set_ylabel("vertical contact force / weight [-]")
    force_ax.legend(fontsize=7, loc="best")
    for ax in (depth_ax, speed_ax, force_ax):
        ax.grid(alpha=0.3)
    save_figure(fig, "Steel sphere dropped into Drucker-Prager sand", out)


def _sphere_weight(run):
    """m g of the sphere [N], from the run's parameters (a uniform sphere)."""
    radius = 0.5 * run.params["sphere_diameter"]
    mass = run.params["sphere_density"] * 4.0 / 3.0 * math.pi * radius ** 3
    return mass * run.params["gravity"]


def main(argv=None):
    figure_main("analysis.figures.sphere_into_sand", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
