"""Column collapse: run-out against aspect ratio, with the planar fit of Lube et al. 2005.

    python3 -m analysis.figures.column_collapse RUN_DIR_OR_FILES... --out column_collapse.png

Left: the final surface of each run in units of the column's width d_i (one curve per
formulation, aspect ratio and cone match), with each column at release in grey. Middle: the
run-out (d - d_i)/d_i against time over sqrt(h_i/g), dashed at the value of the fit's branch
that applies. Right: the final run-out against the aspect ratio a, one marker per formulation
and cone match, over the two branches of the fit, 1.2 a (a <= 1.8) and 1.9 a^(2/3) (a >= 2.8),
each drawn solid where it applies and dotted across the transition.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "column_collapse"


def _positions(run):
    columns = run.series_info("surface_height")["columns"]
    return np.array([float(name.split("=", 1)[1]) for name in columns])


def _group(run):
    return run.formulation, run.params.get("friction_angle_match", "plane_strain")


def plot(runs, out):
    """Draw the figure for the column_collapse runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO),
                  key=lambda run: (_group(run), run.params["aspect_ratio"]))
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    groups = sorted({_group(run) for run in runs})
    fig, (profile_ax, time_ax, runout_ax) = plt.subplots(1, 3, figsize=(18.0, 5.0))
    for index, run in enumerate(runs):
        group = groups.index(_group(run))
        color = f"C{index % 10}"
        width = run.params["column_width"]
        aspect = run.params["aspect_ratio"]
        formulation, match = _group(run)
        label = (f"{formulation}, {match}, a = {aspect:g}: {run.summary.get('runout', math.nan):.2f}"
                 + ("" if run.ok else f" [{run.status}]"))
        _, surface = run.series("surface_height")
        profile_ax.step(_positions(run) / width, surface[-1] / width, where="mid", color=color, linewidth=1.2,
                        label=label)
        profile_ax.plot([0, 1, 1], [aspect, aspect, 0], color="0.6", linewidth=0.8)
        time, runout = run.series("runout")
        scale = math.sqrt(aspect * width / run.params["gravity"])
        time_ax.plot(time / scale, runout, color=color, linewidth=1.1, label=label)
        analytic = run.summary.get("analytic_runout", math.nan)
        if not math.isnan(analytic):
            time_ax.axhline(analytic, color=color, linestyle="--", linewidth=0.8)
    markers = ["o", "s", "^", "v", "D", "P", "X", "*"]
    for group_index, group in enumerate(groups):
        points = sorted((run.params["aspect_ratio"], run.summary.get("runout", math.nan))
                        for run in runs if _group(run) == group)
        aspect, runout = np.array(points).T
        runout_ax.plot(aspect, runout, marker=markers[group_index % len(markers)], linestyle="-",
                       color=f"C{group_index % 10}", label=f"{group[0]}, {group[1]}")
    largest = max(4.0, max(run.params["aspect_ratio"] for run in runs) * 1.1)
    a = np.linspace(0.0, largest, 200)
    runout_ax.plot(a[a <= 1.8], 1.2 * a[a <= 1.8], "k-", linewidth=1.0, label="Lube et al. 2005: 1.2 a")
    runout_ax.plot(a[a > 1.8], 1.2 * a[a > 1.8], "k:", linewidth=0.8)
    runout_ax.plot(a[a >= 2.8], 1.9 * a[a >= 2.8] ** (2.0 / 3.0), "k--", linewidth=1.0,
                   label="Lube et al. 2005: 1.9 a^(2/3)")
    runout_ax.plot(a[a < 2.8], 1.9 * a[a < 2.8] ** (2.0 / 3.0), "k:", linewidth=0.8)
    profile_ax.set_xlabel("x / d_i")
    profile_ax.set_ylabel("surface height / d_i")
    profile_ax.set_title("final surface (grey: column at release)", fontsize=9)
    profile_ax.legend(fontsize=6, loc="upper right")
    time_ax.set_xlabel("t / √(h_i / g)")
    time_ax.set_ylabel("run-out (d − d_i) / d_i (dashed: fit)")
    time_ax.legend(fontsize=6, loc="lower right")
    runout_ax.set_xlabel("aspect ratio a = h_i / d_i")
    runout_ax.set_ylabel("run-out (d∞ − d_i) / d_i")
    runout_ax.legend(fontsize=7, loc="upper left")
    for ax in (profile_ax, time_ax, runout_ax):
        ax.grid(alpha=0.3)
    save_figure(fig, "Granular column collapse (Drucker-Prager sand, planar)", out)


def main(argv=None):
    figure_main("analysis.figures.column_collapse", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
