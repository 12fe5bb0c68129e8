"""A short dough_tearing run of the real executable under each finger drive feeds
analysis.figures.dough_tearing, which must write a non-empty PNG.

Needs the contactlab executable: set CONTACTLAB_BIN=/path/to/contactlab.
"""

import subprocess
import sys
from pathlib import Path

from analysis import Run

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(contactlab_bin, out, *settings):
    command = [contactlab_bin, "run", "dough_tearing", "--formulation", "hybrid_impulse", "--quiet",
               "--out", str(out)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


def test_dough_tearing_figure(contactlab_bin, tmp_path):
    for drive in ("kinematic", "pd"):
        run = _run(contactlab_bin, tmp_path / f"{drive}.h5", "close_time=0.05", "duration=0.1",
                   f"finger_drive={drive}")
        assert run.summary["finger_drive"] == drive
        time, pieces = run.series("pieces")
        assert len(pieces) == len(time) and pieces[0] == 1
        _, fractions = run.series("piece_mass_fractions")
        assert fractions.shape == (len(time), 2)
    result = subprocess.run([sys.executable, "-m", "analysis.figures.dough_tearing", str(tmp_path / "kinematic.h5"),
                             str(tmp_path / "pd.h5"), "--out", str(tmp_path / "tearing.png")],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "tearing.png").stat().st_size > 10_000
