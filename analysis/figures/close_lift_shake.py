"""Close-lift-shake: the rigid cube's slip from its grasp pose and the carrier motion
([zong2024convex] Fig. 7, [yu2025async] Fig. 3).

    python3 -m analysis.figures.close_lift_shake RUN_DIR_OR_FILES... --out close_lift_shake.png

Top: carrier lift (z) and shake (y). Bottom: the rigid cube's distance from its grasp pose
relative to the carrier, one curve per run, with the 1 cm "held" threshold.
"""


import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "close_lift_shake"
HELD_THRESHOLD = 0.01  # [m]


def plot(runs, out):
    """Draw the figure for the close_lift_shake runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    fig, (carrier_ax, slip_ax) = plt.subplots(2, 1, figsize=(7.0, 6.0), sharex=True)
    time, carrier = runs[0].series("carrier_position")
    carrier_ax.plot(time, carrier[:, 1], label="lift z")
    carrier_ax.plot(time, carrier[:, 0], label="shake y")
    carrier_ax.set_ylabel("carrier position [m]")
    carrier_ax.grid(alpha=0.3)
    carrier_ax.legend(fontsize=8)
    for index, run in enumerate(runs):
        time, slip = run.series("rigid_cube_slip")
        held = run.summary.get("held")
        label = f"{run.formulation}, dt = {run.params.get('dt', float('nan')):g} s"
        label += ": held" if held else ": dropped"
        if not run.ok:
            label += f" [{run.status}]"
        slip_ax.plot(time, 100.0 * slip, color=f"C{index % 10}", label=label)
    slip_ax.axhline(100.0 * HELD_THRESHOLD, color="k", linestyle="--", linewidth=1.0,
                    label="held threshold (1 cm)")
    slip_ax.set_ylabel("rigid cube slip from grasp pose [cm]")
    slip_ax.set_xlabel("time t [s]")
    slip_ax.grid(alpha=0.3)
    slip_ax.legend(fontsize=8)
    save_figure(fig, "Close, lift and shake (rigid/elastic density ratio 150)", out)


def main(argv=None):
    figure_main("analysis.figures.close_lift_shake", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
