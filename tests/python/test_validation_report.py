"""The sap validation report reads real runs: a short frictionless ball_on_slope under `sap`
(whose velocity must follow v = g sinθ t to round-off, since symplectic Euler is exact for
constant acceleration) and a bad configuration that must not leave a file behind.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import math
import subprocess

from analysis import Run
from analysis.validation_report import ball_rows, main


def test_sap_ball_without_friction_and_its_report_row(contactlab_bin, tmp_path, capsys):
    out = tmp_path / "ball_on_slope_mu0.0.h5"
    command = [contactlab_bin, "run", "ball_on_slope", "--formulation", "sap",
               "--set", "duration=0.3", "--set", "grid_spacing=0.25", "--set", "particles_per_cell=8",
               "--set", "sampling_jitter=0.5", "--set", "mu=0", "--out", str(out), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"

    run = Run.open(out)
    assert run.formulation == "sap" and run.ok
    # Frictionless: the along-slope velocity is exact; the displacement carries the
    # integrator's Δt/t offset, exactly 0.01/0.2 = 5% at the start of the error window.
    assert run.summary["max_rel_error_velocity"] < 1e-9
    assert math.isclose(run.summary["max_rel_error"], 0.05, rel_tol=1e-6)

    (row,) = ball_rows([run])
    assert row[0] == "ball_on_slope_mu0.0" and row[-1] == "ok"
    main([str(tmp_path)])
    assert "ball_on_slope_mu0.0" in capsys.readouterr().out


def test_sap_rejects_unknown_contact_model(contactlab_bin, tmp_path):
    out = tmp_path / "bad.h5"
    command = [contactlab_bin, "run", "ball_on_slope", "--formulation", "sap",
               "--set", "contact.model=penalty", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "contact.model" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
