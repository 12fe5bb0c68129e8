"""The C++ ball_on_slope analytic solution equals analysis.analytic at the recorded times.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import subprocess

import numpy as np
import pytest

from analysis import Run
from analysis.analytic import ball_on_slope_displacement, ball_on_slope_regime


@pytest.mark.parametrize("mu", [0.0, 0.6])
def test_analytic_com_displacement_matches_python(contactlab_bin, tmp_path, mu):
    out = tmp_path / "run.h5"
    command = [contactlab_bin, "run", "ball_on_slope", "--formulation", "hybrid_impulse",
               "--set", "duration=0.05", "--set", "grid_spacing=0.25", "--set", f"mu={mu}",
               "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"

    run = Run.open(out)
    assert (run.scenario, run.formulation) == ("ball_on_slope", "hybrid_impulse")
    params = run.params
    assert (params["mu"], params["duration"], params["grid_spacing"]) == (mu, 0.05, 0.25)

    time, _ = run.series("com_displacement")
    ref_time, ref_value = run.analytic("com_displacement")
    np.testing.assert_array_equal(ref_time, time)
    expected = ball_on_slope_displacement(ref_time, mu, params["slope_angle_deg"],
                                          params["gravity"])
    assert ref_value.shape == expected.shape
    np.testing.assert_allclose(ref_value, expected, rtol=1e-12, atol=0.0)
    assert run.summary["regime"] == ball_on_slope_regime(mu, params["slope_angle_deg"])
