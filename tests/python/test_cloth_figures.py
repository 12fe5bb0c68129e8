"""Short hanging_cloth and box_bagging runs of the real executable (coarse, a few steps) feed the
paper's cloth figures (analysis.figures.hanging_cloth, analysis.figures.box_bagging), which must
write a PNG; the summaries carry what the figures, the matrix's criteria and the paper's tables
read.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

from conftest import draw_figure, run_scenario


def test_hanging_cloth_figure_and_criterion(contactlab_bin, tmp_path):
    from analysis.matrix import judge
    from analysis.defaults_report import read_run

    runs = [run_scenario(contactlab_bin, "hanging_cloth", tmp_path / f"strip_{formulation}.h5", "strip_length=0.2",
                         "mesh_spacing=0.02", "grid_spacing=0.04", "duration=0.1", "settle_time=0.05",
                         formulation=formulation, scene_file=True)
            for formulation in ("sap", "hybrid_impulse")]
    for run in runs:
        assert {"mean_elongation", "analytic_elongation", "elongation_error", "error_vs_analytic", "late_ringing",
                "mean_pin_force", "free_weight", "pin_force_error", "largest_out_of_plane"} <= set(run.summary)
        assert {"elongation", "pin_force"} <= set(run.series_names())
        assert {"elongation", "pin_force"} <= set(run.analytic_names())
        verdict, text, _ = judge(read_run(run.path))
        assert verdict in ("correct", "wrong") and "elongation error" in text
    draw_figure("analysis.figures.hanging_cloth", [run.path for run in runs], tmp_path / "strip.png")


def test_box_bagging_figure_and_criterion(contactlab_bin, tmp_path):
    from analysis.matrix import judge
    from analysis.defaults_report import read_run

    run = run_scenario(contactlab_bin, "box_bagging", tmp_path / "bagging.h5", "vertices_per_side=10",
                       "grid_spacing=0.04", "duration=0.05", formulation="quasi_newton", scene_file=True)
    assert {"held_until_release", "fell_out", "max_box_penetration_over_half_h", "max_inverted_faces",
            "mean_contacts", "particles"} <= set(run.summary)
    assert {"box0_z", "box1_z", "lowest_cloth", "max_box_penetration", "inverted_faces"} <= set(run.series_names())
    # A run that ends before the release cannot have let the boxes fall: the criterion says wrong.
    verdict, text, _ = judge(read_run(run.path))
    assert verdict == "wrong" and "stayed" in text
    draw_figure("analysis.figures.box_bagging", [run.path], tmp_path / "bagging.png")


def test_laundry_and_cloth_folding_figures_and_criteria(contactlab_bin, tmp_path):
    from analysis.matrix import judge
    from analysis.defaults_report import read_run

    laundry = run_scenario(contactlab_bin, "laundry", tmp_path / "laundry.h5", "vertices_per_side=10",
                           "laundry_vertices_per_side=6", "grid_spacing=0.04", "laundry_height=0.32",
                           "drop_time=0.005", "duration=0.03", formulation="quasi_newton", scene_file=True)
    assert {"held_until_release", "fell_out", "laundry_final_z", "max_inverted_faces"} <= set(laundry.summary)
    assert {"laundry_z", "laundry_held", "inverted_faces", "lowest_cloth"} <= set(laundry.series_names())
    verdict, text, _ = judge(read_run(laundry.path))
    assert verdict == "wrong" and "stayed" in text  # the run ends before the release
    draw_figure("analysis.figures.laundry", [laundry.path], tmp_path / "laundry.png")

    folding = run_scenario(contactlab_bin, "cloth_folding", tmp_path / "folding.h5", "vertices_along_length=10",
                           "vertices_along_width=8", "grid_spacing=0.04", "dt=0.005", "duration=0.1",
                           formulation="quasi_newton", scene_file=True)
    assert {"layers_after_first_fold", "layers_after_second_fold", "final_layers", "final_area_ratio",
            "max_inverted_faces"} <= set(folding.summary)
    assert {"mean_layers", "area_ratio", "inverted_faces"} <= set(folding.series_names())
    verdict, text, _ = judge(read_run(folding.path))
    assert verdict in ("correct", "wrong") and "inverted" in text
    draw_figure("analysis.figures.cloth_folding", [folding.path], tmp_path / "folding.png")


def test_draped_sphere_figure_and_criterion(contactlab_bin, tmp_path):
    from analysis.matrix import judge
    from analysis.defaults_report import read_run

    run = run_scenario(contactlab_bin, "draped_sphere", tmp_path / "draped.h5", "mesh_spacing=0.01",
                       "grid_spacing=0.02", "duration=0.05", formulation="hybrid_impulse", scene_file=True)
    s = run.summary
    assert {"threshold_mu", "holding_mu", "sliding_mu", "held", "holding_slip_over_half_h", "sliding_slip",
            "analytic_sliding_slip", "analytic_sliding_slip_low", "analytic_sliding_slip_high", "slid_as_predicted",
            "sliding_slip_error", "error_vs_analytic"} <= set(s)
    assert abs(s["holding_mu"] / s["threshold_mu"] - 1.3) < 1e-12
    assert abs(s["sliding_mu"] / s["threshold_mu"] - 0.7) < 1e-12
    # The closed form: the holding strip at rest, the sliding one started, a larger radius slower.
    _, analytic = run.analytic("slip")
    assert all(v[0] == 0.0 for v in analytic) and analytic[-1][1] > 0.0
    assert 0.0 < s["analytic_sliding_slip_low"] < s["analytic_sliding_slip"] < s["analytic_sliding_slip_high"]
    verdict, text, _ = judge(read_run(run.path))
    assert verdict in ("correct", "wrong") and "holding slip" in text
    draw_figure("analysis.figures.draped_sphere", [run.path], tmp_path / "draped.png")
