"""Sand on a sphere: where the falling sand moves the sphere, and whether it rolls.

    python3 -m analysis.figures.sand_on_sphere RUN_DIR_OR_FILES... --out sand_on_sphere.png

Left: the sphere's displacement along x (positive toward the sand column) against time, one
solid curve per run, with R times the angle it has turned about +y (dotted): the two coincide
while the sphere rolls on the floor without slipping. Right: the fraction of the sand's mass
that has passed to the far side of the sphere. Runs are labelled by formulation and the
sand-sphere friction coefficient, so a sweep over ``sphere_mu`` shows friction's pull against
the push of the deflected sand.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "sand_on_sphere"


def _label(run):
    mu = run.params.get("sphere_mu")
    text = run.formulation if mu is None else f"{run.formulation}, mu {float(mu):g}"
    return text + ("" if run.ok else f" [{run.status}]")


def plot(runs, out):
    """Draw the figure for the sand_on_sphere runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO),
                  key=lambda run: (run.formulation, float(run.params.get("sphere_mu", 0.0))))
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (move_ax, beyond_ax) = plt.subplots(1, 2, figsize=(12.0, 4.8))
    for index, run in enumerate(runs):
        color = f"C{index % 10}"
        time, displacement = run.series("sphere_displacement")
        move_ax.plot(time, 1000 * displacement[:, 0], color=color, linewidth=1.2,
                     label=f"{_label(run)}: {1000 * run.summary.get('displacement', float('nan')):+.1f} mm")
        time, rolled = run.series("rolled_distance")
        move_ax.plot(time, 1000 * rolled.reshape(len(time), -1)[:, 0], color=color, linewidth=1.0, linestyle=":")
        time, beyond = run.series("sand_beyond_sphere")
        beyond_ax.plot(time, beyond.reshape(len(time), -1)[:, 0], color=color, linewidth=1.2, label=_label(run))
    move_ax.axhline(0.0, color="k", linewidth=0.6)
    move_ax.set_xlabel("time t [s]")
    move_ax.set_ylabel("sphere displacement x [mm] (+: toward the sand; dotted: R x turn)")
    move_ax.legend(fontsize=7, loc="best")
    beyond_ax.set_xlabel("time t [s]")
    beyond_ax.set_ylabel("sand beyond the sphere's centre [mass fraction]")
    beyond_ax.legend(fontsize=7, loc="best")
    for ax in (move_ax, beyond_ax):
        ax.grid(alpha=0.3)
    save_figure(fig, "Sand column falling on one side of a free sphere ([ding_schroeder_penalty] Fig. 16)", out)


def main(argv=None):
    figure_main("analysis.figures.sand_on_sphere", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
