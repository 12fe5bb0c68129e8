"""Short pyramid and wedge runs of the real executable (coarse, a few steps) feed
analysis.figures.pyramid_drift and analysis.figures.wedge, which must write a PNG; the
summaries carry the verdicts the figures print.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

from conftest import draw_figure, run_scenario


def test_pyramid_driftdraw_figure(contactlab_bin, tmp_path):
    runs = [run_scenario(contactlab_bin, "pyramid", tmp_path / f"pyramid_mu{mu}.h5", "grid_spacing=0.05",
                         "duration=0.1", "settle_time=0.05", f"mu={mu}")
            for mu in (0.3, 0.05)]
    for run in runs:
        assert {"drift", "height_change", "collapsed", "ball_drop"} <= set(run.summary)
        assert "ball_drift" in run.series_names()
    draw_figure("analysis.figures.pyramid_drift", [run.path for run in runs], tmp_path / "pyramid.png")


def test_wedgedraw_figure(contactlab_bin, tmp_path):
    runs = [run_scenario(contactlab_bin, "wedge", tmp_path / f"wedge_mu{mu}.h5", "left_body=mpm",
                         "grid_spacing=0.05", "duration=0.1", f"mu={mu}")
            for mu in (0.25, 0.1)]
    for run in runs:
        assert {"jammed", "descent", "mu_star", "configuration"} <= set(run.summary)
        assert run.summary["configuration"] == "mpm+mpm"
        time, height = run.series("block_height")
        assert height.shape == (len(time), 2)
    draw_figure("analysis.figures.wedge", [run.path for run in runs], tmp_path / "wedge.png")
