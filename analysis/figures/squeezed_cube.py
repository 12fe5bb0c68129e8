"""Squeezed cube: contact force on the left panel vs time ([zong2024convex] Fig. 6b, [yu2025async] Fig. 2).

    python3 -m analysis.figures.squeezed_cube RUN_DIR_OR_FILES... --out squeezed_cube.png

One column per run (formulation and time step), one row per force component in the panel's
load frame (x from the cube toward the panel, z down): numeric (solid) against the analytic
steady state (squeeze force, 0, m g / 2) (dashed). The legend gives the mean and standard
deviation over the run's averaging window.
"""


import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ._command_line import figure_main, save_figure  # noqa: E402

SCENARIO = "squeezed_cube"
OBSERVABLE = "left_panel_force"
COMPONENTS = ("x", "y", "z")


def plot(runs, out):
    """Draw the figure for the squeezed_cube runs among ``runs`` into ``out``."""
    runs = [run for run in runs if run.scenario == SCENARIO]
    if not runs:
        raise ValueError(f"no {SCENARIO} runs found")
    runs.sort(key=lambda run: (run.formulation, run.params.get("dt", 0.0), run.run_id))
    # Parameters that tell the runs apart (besides formulation and dt) go into the titles.
    keys = sorted({key for run in runs for key in run.params})
    varying = [key for key in keys if key != "dt"
               and len({repr(run.params.get(key)) for run in runs}) > 1]
    fig, axes = plt.subplots(3, len(runs), figsize=(max(6.0, 4.2 * len(runs)), 7.5),
                             sharex="col", squeeze=False)
    for column, run in enumerate(runs):
        time, value = run.series(OBSERVABLE)
        ref_time, ref_value = run.analytic(OBSERVABLE)
        for row, component in enumerate(COMPONENTS):
            ax = axes[row][column]
            mean = run.summary.get(f"left_f{component}_mean")
            spread = run.summary.get(f"left_f{component}_std")
            label = "numeric"
            if mean is not None and spread is not None:
                label += f" (last {run.summary.get('averaging_window', 0.5):g} s: {mean:.3f} ± {spread:.3f} N)"
            ax.plot(time, value[:, row], color="C0", linewidth=0.8, label=label)
            ax.plot(ref_time, ref_value[:, row], color="k", linestyle="--", linewidth=1.0,
                    label="analytic steady state")
            ax.set_ylabel(f"f_{component} [N]")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
        status = "" if run.ok else f" [{run.status}]"
        title = f"{run.formulation}, dt = {run.params.get('dt', float('nan')):g} s{status}"
        details = ", ".join(f"{key.split('.')[-1]} = {run.params.get(key, 'n/a')}" for key in varying)
        axes[0][column].set_title(title + ("\n" + details if details else ""), fontsize=9)
        axes[2][column].set_xlabel("time t [s]")
    save_figure(fig, "Squeezed cube: force the cube exerts on the left panel", out)


def main(argv=None):
    figure_main("analysis.figures.squeezed_cube", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
