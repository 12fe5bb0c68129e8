"""Dam break: the surge front against Martin & Moyce's n^2 = 2 data.

    python3 -m analysis.figures.dam_break RUN_DIR_OR_FILES... --out dam_break.png

Left: the front Z = x/a against T = t sqrt(2g/a), one curve per run (formulation, and the
run's bulk modulus and grid spacing when the runs differ in them), the experiment's points
(Martin & Moyce 1952, as tabulated by Koshizuka & Oka 1996) as black circles, and the
shallow-water (Ritter) front speed dZ/dT = 2 as a dotted line through the first point. Right:
the relative error of each run's front at the data's T (the simulated curve interpolated).
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "dam_break"


def _label(run, varying):
    parts = [run.formulation]
    for key in varying:
        parts.append(f"{key} {run.params[key]:g}")
    text = ", ".join(parts)
    error = run.summary.get("front_mean_relative_error", math.nan)
    return text + f": mean error {100 * error:.1f}%" + ("" if run.ok else f" [{run.status}]")


def plot(runs, out):
    """Draw the figure for the dam_break runs among ``runs`` into ``out``."""
    runs = sorted((run for run in runs if run.scenario == SCENARIO), key=lambda run: run.formulation)
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    varying = [key for key in ("bulk_modulus", "grid_spacing", "table_model")
               if len({str(run.params.get(key)) for run in runs}) > 1]
    fig, (front_ax, error_ax) = plt.subplots(1, 2, figsize=(12.0, 5.0))
    data_shown = False
    styles = ["-", "--", "-.", ":"]
    for index, run in enumerate(runs):
        width = run.params["column_width"]
        scale = math.sqrt(width / (2.0 * run.params["gravity"]))
        time, front = run.series("front_position")
        color = f"C{index % 10}"
        front_ax.plot(time / scale, front / width, color=color, linestyle=styles[index % len(styles)],
                      linewidth=1.3, label=_label(run, varying))
        if "front_position" not in run.analytic_names():
            continue
        data_time, data_front = run.analytic("front_position")
        data_t, data_z = data_time / scale, np.ravel(data_front) / width
        if not data_shown:
            front_ax.plot(data_t, data_z, "ko", markersize=5, label="Martin & Moyce 1952, n² = 2")
            ritter = np.array([data_t[0], data_t[-1]])
            front_ax.plot(ritter, data_z[0] + 2.0 * (ritter - data_t[0]), "k:", linewidth=0.9,
                          label="dZ/dT = 2 (shallow water)")
            data_shown = True
        inside = data_t <= time[-1] / scale
        simulated = np.interp(data_t[inside], time / scale, np.ravel(front) / width)
        error_ax.plot(data_t[inside], 100.0 * (simulated / data_z[inside] - 1.0), marker="o", color=color,
                      linestyle=styles[index % len(styles)], markersize=3, label=run.formulation)
    front_ax.set_xlabel("T = t √(2g/a)")
    front_ax.set_ylabel("Z = x / a")
    front_ax.set_title("surge front", fontsize=9)
    front_ax.legend(fontsize=7, loc="upper left")
    error_ax.axhline(0.0, color="k", linewidth=0.8)
    error_ax.set_xlabel("T = t √(2g/a)")
    error_ax.set_ylabel("Z simulated / Z measured − 1 [%]")
    error_ax.set_title("front error at the data's T", fontsize=9)
    error_ax.legend(fontsize=7)
    for ax in (front_ax, error_ax):
        ax.grid(alpha=0.3)
    save_figure(fig, "Dam break (liquid column, a × 2a) against Martin & Moyce", out)


def main(argv=None):
    figure_main("analysis.figures.dam_break", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
