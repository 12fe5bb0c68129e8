"""Shared fixtures: the repo root on sys.path, a writer of synthetic run files, and the
contactlab executable."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from analysis.analytic import (ball_on_slope_displacement, ball_on_slope_regime,  # noqa: E402
                               ball_on_slope_spin, ball_on_slope_spin_ratio,
                               ball_on_slope_velocity)

BALL_ON_SLOPE_PARAMS = {  # key: (value, unit)
    "radius": (0.1, "m"), "density": (1000.0, "kg/m^3"), "youngs_modulus": (1.0e6, "Pa"),
    "poisson_ratio": (0.3, "1"), "slope_angle_deg": (45.0, "deg"), "mu": (0.2, "1"),
    "gravity": (9.81, "m/s^2"), "grid_spacing": (0.25, "m"), "particles_per_cell": (8, None),
    "dt": (1.0e-3, "s"), "duration": (1.0, "s"),
}


def write_run(path, *, scenario="ball_on_slope", formulation="hybrid_impulse", mu=0.2,
              status="ok", message="", fixed_length_strings=False, steps=100,
              wall_s=1.5, extra_params=None):
    """Write a run file that follows schema contactlab-run/1 exactly; return its path.

    The ball_on_slope series of the real scenario: com_displacement, com_velocity and spin
    (along the slope / about the rolling axis) with their analytic solutions, and the (N, 3)
    slope_contact_force. Every numeric series is the analytic one times (1 + 1e-3), so
    max_rel_error = 1e-3 and the spin ratio ωr/v is the analytic one.
    ``fixed_length_strings`` stores the root attributes as fixed-length byte strings, as an
    HDF5 C-API writer may do.
    """
    params = {key: value for key, (value, _) in BALL_ON_SLOPE_PARAMS.items()}
    params["mu"] = mu
    params.update(extra_params or {})
    duration, angle, gravity = params["duration"], params["slope_angle_deg"], params["gravity"]
    time = np.linspace(0.0, duration, steps + 1)
    exact = ball_on_slope_displacement(time, mu, angle, gravity)
    numeric = exact * (1.0 + 1.0e-3)
    velocity = ball_on_slope_velocity(time, mu, angle, gravity)
    spin = ball_on_slope_spin(time, mu, angle, params["radius"], gravity)
    spin_ratio = float(ball_on_slope_spin_ratio(mu, angle))
    regime = ball_on_slope_regime(mu, angle)
    config = (f'scenario = "{scenario}"\nformulation = "{formulation}"\n'
              + "".join(f"{key} = {value!r}\n" for key, value in params.items()))

    def text(value):
        return np.bytes_(value.encode()) if fixed_length_strings else value

    with h5py.File(path, "w") as f:
        for key, value in {"schema": "contactlab-run/1", "run_id": Path(path).stem,
                           "scenario": scenario, "formulation": formulation,
                           "git_commit": "bdb3afd", "compiler": "GNU 12.2.0",
                           "started_utc": "2024-11-22T02:26:00Z", "status": status,
                           "message": message}.items():
            f.attrs[key] = text(value)
        f.create_dataset("config", data=config, dtype=h5py.string_dtype("utf-8"))
        p = f.create_group("params")
        for key, value in params.items():
            p.attrs[key] = np.int8(value) if isinstance(value, bool) else value
            unit = BALL_ON_SLOPE_PARAMS.get(key, (None, None))[1]
            if unit is not None:
                p.attrs[f"{key}.unit"] = unit

        def series(group, name, values, unit, description, columns=None):
            g = f.require_group(group).create_group(name)
            g.create_dataset("time", data=time)
            g.create_dataset("value", data=values)
            g.attrs["unit"] = unit
            g.attrs["description"] = description
            if columns:
                g.attrs["columns"] = columns

        series("timeseries", "com_displacement", numeric, "m",
               "centre-of-mass displacement along the slope")
        series("analytic", "com_displacement", exact, "m",
               "[zong2024convex] eq. 27 (sin θ corrected)")
        series("timeseries", "com_velocity", velocity * (1.0 + 1.0e-3), "m/s",
               "centre-of-mass velocity along the slope")
        series("analytic", "com_velocity", velocity, "m/s", "rigid ball on a rigid slope")
        series("timeseries", "spin", spin * (1.0 + 1.0e-3), "rad/s",
               "ball angular velocity about the rolling axis n x d")
        series("analytic", "spin", spin, "rad/s", "slip: 5 mu g cos(theta) t / (2 r); roll: v / r")
        series("timeseries", "slope_contact_force", np.stack([time, -time, 0 * time], axis=1),
               "N", "contact force the ball exerts on the slope (world)", columns="x,y,z")

        log = f.create_group("solver_log")
        n = len(time)
        log.create_dataset("time", data=time)
        for key in ("contacts", "outer_iterations", "linear_iterations", "substeps"):
            log.create_dataset(key, data=np.arange(n, dtype=np.int64))
        log.create_dataset("residual", data=np.full(n, 1.0e-9))
        log.create_dataset("converged", data=np.ones(n, dtype=np.int8))
        for key in ("wall_s", "timing_free_motion", "timing_detection", "timing_assembly",
                    "timing_solve", "timing_g2p", "timing_rigid"):
            log.create_dataset(key, data=np.full(n, 1.0e-4))

        s = f.create_group("summary")
        s.attrs["steps"] = steps
        s.attrs["wall_s"] = wall_s
        s.attrs["status"] = status
        s.attrs["message"] = message
        if scenario == "ball_on_slope":
            s.attrs["max_rel_error"] = 1.0e-3
            s.attrs["regime"] = regime
            s.attrs["final_spin_ratio"] = spin_ratio
            s.attrs["expected_spin_ratio"] = spin_ratio
    return Path(path)


@pytest.fixture
def make_run(tmp_path):
    """Factory: make_run(name, **kwargs) writes tmp_path/name via write_run."""
    return lambda name, **kwargs: write_run(tmp_path / name, **kwargs)


@pytest.fixture(scope="module")
def contactlab_bin():
    """The contactlab executable named by CONTACTLAB_BIN; tests that need it skip without it."""
    name = os.environ.get("CONTACTLAB_BIN")
    if not name:
        pytest.skip("CONTACTLAB_BIN is not set; set it to the contactlab executable to run "
                    "the tests that need the C++ binary")
    executable = shutil.which(name)
    if executable is None:
        pytest.fail(f"CONTACTLAB_BIN={name!r} is not an executable")
    return executable


def run_scenario(contactlab_bin, scenario, out, *settings, formulation="hybrid_impulse", scene_file=False):
    """One short run of the real executable (``--set`` each of ``settings``), opened as a Run;
    with ``scene_file`` the run starts from data/scenes/<scenario>.toml, else from the
    scenario's built-in defaults."""
    from analysis import Run

    command = [contactlab_bin, "run", scenario, "--formulation", formulation, "--quiet", "--out", str(out)]
    if scene_file:
        command += ["--config", str(REPO_ROOT / "data" / "scenes" / f"{scenario}.toml")]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return Run.open(out)


def draw_figure(module, inputs, out):
    """python3 -m MODULE INPUTS... --out OUT must succeed and write a PNG of some substance."""
    result = subprocess.run([sys.executable, "-m", module, *map(str, inputs), "--out", str(out)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert Path(out).stat().st_size > 10_000
