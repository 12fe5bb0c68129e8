"""Short squeezed_cube, close_lift_shake, sand_pile, floating_box, dam_break, column_collapse,
liquid_transfer, sphere_into_sand and sand_on_sphere runs of the real executable feed their figure
scripts, which must write a non-empty PNG.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import math

import pytest

from conftest import draw_figure, run_scenario


def test_squeezed_cubedraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "squeezed_cube", tmp_path / "squeezed.h5", "grid_spacing=0.02",
               "duration=0.05", "dt=0.01", "averaging_window=0.02")
    time, force = run.series("left_panel_force")
    assert force.shape == (len(time), 3)
    _, steady = run.analytic("left_panel_force")
    assert steady[-1][0] == pytest.approx(10.0)
    assert steady[-1][2] == pytest.approx(0.5 * run.summary["cube_mass_sampled"] * 9.81)
    draw_figure("analysis.figures.squeezed_cube", [tmp_path / "squeezed.h5"], tmp_path / "squeezed.png")


def test_close_lift_shakedraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "close_lift_shake", tmp_path / "shake.h5", "grid_spacing=0.02",
               "close_time=0.01", "lift_time=0.01", "shake_duration=0.01", "duration=0.03")
    assert "held" in run.summary
    draw_figure("analysis.figures.close_lift_shake", [tmp_path / "shake.h5"], tmp_path / "shake.png")


def test_sand_piledraw_figure(contactlab_bin, tmp_path):
    dry = run_scenario(contactlab_bin, "sand_pile", tmp_path / "dry.h5", "grid_spacing=0.025", "duration=0.05")
    radii = dry.series_info("surface_height")["columns"]
    _, surface = dry.series("surface_height")
    assert surface.shape[1] == len(radii)
    _, cone = dry.analytic("surface_height")
    assert cone.shape == surface.shape
    assert dry.summary["friction_angle"] == 30.0
    cohesive = run_scenario(contactlab_bin, "sand_pile", tmp_path / "cohesive.h5", "grid_spacing=0.025", "duration=0.05",
                    "cohesion=300", "table_model=slip")
    assert cohesive.summary["cohesion_ratio"] == pytest.approx(300.0 / cohesive.summary["analytic_critical_cohesion"])
    draw_figure("analysis.figures.sand_pile", [tmp_path / "dry.h5", tmp_path / "cohesive.h5"], tmp_path / "sand.png")


def test_floating_boxdraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "floating_box", tmp_path / "float.h5", "grid_spacing=0.02", "settle_time=0.01",
               "duration=0.03")
    assert run.summary["analytic_draft"] == pytest.approx(0.025)
    assert run.summary["analytic_draft_particle_contact"] == pytest.approx(0.025 + 0.5 * 0.01)
    _, leaked = run.series("particles_in_box")
    assert leaked[0] == 0
    draw_figure("analysis.figures.floating_box", [tmp_path / "float.h5"], tmp_path / "float.png")


def test_dam_breakdraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "dam_break", tmp_path / "dam.h5", "grid_spacing=0.025", "dt=0.005", "duration=0.05")
    data_time, data_front = run.analytic("front_position")
    assert len(data_time) == 15
    assert data_front[-1] == pytest.approx(4.11 * 0.1)
    assert data_time[-1] == pytest.approx(3.33 * (0.1 / (2 * 9.81)) ** 0.5)
    _, front = run.series("front_position")
    assert front[0] == pytest.approx(0.1)
    draw_figure("analysis.figures.dam_break", [tmp_path / "dam.h5"], tmp_path / "dam.png")


def test_column_collapsedraw_figure(contactlab_bin, tmp_path):
    for aspect in ("0.5", "2"):
        run = run_scenario(contactlab_bin, "column_collapse", tmp_path / f"collapse_{aspect}.h5", "grid_spacing=0.0125",
                   "duration=0.05", f"aspect_ratio={aspect}")
        columns = run.series_info("surface_height")["columns"]
        _, surface = run.series("surface_height")
        assert surface.shape[1] == len(columns)
        assert run.summary["analytic_runout_linear"] == pytest.approx(1.2 * float(aspect))
    draw_figure("analysis.figures.column_collapse", [tmp_path / "collapse_0.5.h5", tmp_path / "collapse_2.h5"],
            tmp_path / "collapse.png")


def test_liquid_transferdraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "liquid_transfer", tmp_path / "pour.h5", "grid_spacing=0.02", "liquid_depth=0.04",
               "duration=0.05")
    _, in_mug = run.series("fraction_in_mug")
    assert in_mug[0] == pytest.approx(1.0)
    _, tilt = run.series("mug_tilt")
    assert max(abs(value) for value in tilt) < 1e-9  # the tilt starts at 2 s
    assert run.summary["particles"] == 6 * 6 * 4
    draw_figure("analysis.figures.liquid_transfer", [tmp_path / "pour.h5"], tmp_path / "pour.png")


def test_sphere_into_sanddraw_figure(contactlab_bin, tmp_path):
    run = run_scenario(contactlab_bin, "sphere_into_sand", tmp_path / "sphere.h5", "grid_spacing=0.03", "bed_depth=0.06",
               "drop_height=0.5", "duration=0.02")
    assert run.summary["particles"] == 12 * 12 * 4
    time, depth = run.series("penetration")
    assert depth[0] == pytest.approx(-0.03)  # one grid cell above the surface
    _, uehara = run.analytic("penetration")
    assert uehara[-1] == pytest.approx(run.summary["analytic_penetration"])
    _, velocity = run.series("sphere_velocity")
    assert velocity.shape == (len(time), 3)
    assert velocity[0][2] == pytest.approx(-(2 * 9.81 * (0.5 - 0.03)) ** 0.5)
    _, force = run.series("sphere_contact_force")
    assert force.shape == (len(time), 3)
    draw_figure("analysis.figures.sphere_into_sand", [tmp_path / "sphere.h5"], tmp_path / "sphere.png")


def test_sand_on_spheredraw_figure(contactlab_bin, tmp_path):
    runs = []
    for mu in ("0", "0.9"):
        run = run_scenario(contactlab_bin, "sand_on_sphere", tmp_path / f"sand_{mu}.h5", "grid_spacing=0.02",
                   "column_height=0.08", "column_gap=0.001", "duration=0.05", f"sphere_mu={mu}")
        time, displacement = run.series("sphere_displacement")
        assert displacement.shape == (len(time), 3)
        assert displacement[0] == pytest.approx([0.0, 0.0, 0.0])
        _, beyond = run.series("sand_beyond_sphere")
        assert 0.0 <= float(beyond.min()) and float(beyond.max()) <= 1.0
        assert run.summary["analytic_pull_friction"] == pytest.approx(math.tan(0.5 * math.asin(0.045 / 0.05)))
        runs.append(tmp_path / f"sand_{mu}.h5")
    draw_figure("analysis.figures.sand_on_sphere", runs, tmp_path / "sand_on_sphere.png")
