"""Box bagging and laundry: the load in the cloth cradle, held until two corners release (issue 21).

    python3 -m analysis.figures.box_bagging RUN_DIR_OR_FILES... --out box_bagging.png

One column per run (formulation). Top: the height of each box's centre (box_bagging) or of the
laundry cloth's centre of mass (laundry) and of the bag's lowest vertex; the pins sag the cloth (to 0.5 s), wrap it (1.5–2.5 s) and two of them release at
release_time (dotted), after which the load should fall to the floor. Bottom: the deepest
cloth particle inside a box against h/2 (dashed), the issue's bound; for the laundry, the
inverted faces of both cloths (cloth through cloth).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "box_bagging"
SCENARIOS = ("box_bagging", "laundry")  # the laundry's bag is the same; its load is a cloth


def _title(run):
    s = run.summary
    held = "held" if s.get("held_until_release") else "not held"
    fell = "fell out" if s.get("fell_out") else "stayed"
    text = f"{run.formulation}: {held}, {fell}"
    return text if run.ok else f"{text} [{run.status}]"


def plot(runs, out):
    """Draw the figure for the box_bagging runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario in SCENARIOS), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {' or '.join(SCENARIOS)} runs found")
    fig, axes = plt.subplots(2, len(runs), figsize=(max(6.5, 4.2 * len(runs)), 6.5), sharex="col", sharey="row",
                             squeeze=False)
    for column, run in enumerate(runs):
        height_ax, depth_ax = axes[0][column], axes[1][column]
        for name, label, style in (("box0_z", "box 0", "-"), ("box1_z", "box 1", "-"),
                                   ("laundry_z", "laundry (centre of mass)", "-"),
                                   ("lowest_cloth", "lowest bag vertex", ":")):
            if name not in run.series_names():
                continue
            time, value = run.series(name)
            height_ax.plot(time, value, linestyle=style, linewidth=1.1, label=label)
        if "box0_z" in run.series_names():
            time, value = run.series("max_box_penetration")
            depth_ax.plot(time, [1e3 * v for v in value], linewidth=1.0, label="deepest particle in a box")
            half = 0.5 * float(run.params["grid_spacing"])
            depth_ax.axhline(1e3 * half, color="k", linestyle="--", linewidth=1.0, label="h/2")
            depth_ax.set_ylabel("penetration [mm]" if column == 0 else "")
        else:  # the laundry: no box; cloth through cloth shows as inverted faces
            time, value = run.series("inverted_faces")
            depth_ax.plot(time, value, linewidth=1.0, label="inverted faces (both cloths)")
            depth_ax.set_ylabel("inverted faces" if column == 0 else "")
        for ax in (height_ax, depth_ax):
            ax.axvline(float(run.params["release_time"]), color="0.5", linestyle=":", linewidth=1.0)
            ax.grid(alpha=0.3)
        height_ax.set_title(_title(run), fontsize=9)
        height_ax.legend(fontsize=7, loc="lower left")
        depth_ax.legend(fontsize=7, loc="upper left")
        depth_ax.set_xlabel("time t [s]")
    axes[0][0].set_ylabel("height [m]")
    title = "Two boxes" if runs[0].scenario == "box_bagging" else "A second cloth"
    save_figure(fig, f"{title} in a cloth cradle; two corners release", out)


def main(argv=None):
    figure_main("analysis.figures.box_bagging", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
