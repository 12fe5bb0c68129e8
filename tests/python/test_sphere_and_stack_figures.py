"""Short rolling_sphere, stack and incline_block runs of the real executable (coarse, a few
steps) feed the paper's figures of seed 001 Figs. 3 and 4 (analysis.figures.rolling_sphere,
analysis.figures.stack, analysis.figures.incline_block with a rigid and an MPM block), which
must write a PNG; the summaries carry what the figures and the paper's tables read.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

from conftest import draw_figure, run_scenario


def test_rolling_sphere_figure_rigid_and_mpm(contactlab_bin, tmp_path):
    runs = [run_scenario(contactlab_bin, "rolling_sphere", tmp_path / f"sphere_{body}_{mu}.h5", f"body={body}",
                         f"mu={mu}", "grid_spacing=0.025", "duration=0.1", scene_file=True)
            for body in ("rigid", "mpm") for mu in (0.3, 0.01)]
    for run in runs:
        assert {"regime", "acceleration", "analytic_acceleration", "error_vs_analytic", "final_spin_ratio",
                "final_slip_speed"} <= set(run.summary)
        assert {"com_speed", "slip_speed"} <= set(run.series_names())
        assert {"com_speed", "slip_speed"} <= set(run.analytic_names())
    draw_figure("analysis.figures.rolling_sphere", [run.path for run in runs], tmp_path / "sphere.png")


def test_stack_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "stack", tmp_path / "stack.h5", "grid_spacing=0.05", "duration=0.1",
                       "settle_time=0.05", scene_file=True)
    assert {"layers", "stood", "max_block_drift", "final_top_settling", "ground_load_ratio",
            "stand_fraction"} <= set(run.summary)
    assert {"top_settling", "top_drift"} <= set(run.series_names())
    draw_figure("analysis.figures.stack", [run.path], tmp_path / "stack.png")


def test_incline_figure_with_a_rigid_and_an_mpm_block(contactlab_bin, tmp_path):
    runs = [run_scenario(contactlab_bin, "incline_block", tmp_path / f"incline_{body}.h5", f"body={body}",
                         f"dt={dt}", "mu=0.125", "grid_spacing=0.036", "duration=0.1", scene_file=True)
            for body, dt in (("mpm", 0.005), ("rigid", 0.001))]
    assert {run.params["body"] for run in runs} == {"mpm", "rigid"}
    draw_figure("analysis.figures.incline_block", [run.path for run in runs], tmp_path / "incline.png")
