"""The sweeps' cluster paths on a real Slurm: a single-node cluster started for the test
(scripts/slurm-local, Debian's slurmctld, slurmd and munge), `contactlab sweep slurm` as an
array job, and paper/Snakefile through Snakemake's generic cluster submission (sbatch).

Where the test cannot run it says why as a skip: without Debian's Slurm packages
(scripts/install-deps --slurm installs them; CI does not) or without root (slurmd starts jobs
as their submitter). Debian 12's Snakemake 7.21 has a --slurm executor too, but it validates
the account with sacctmgr and polls jobs with sacct, which need Slurm's accounting database
(slurmdbd with MariaDB); the one-node cluster here has none, so the Snakefile goes through
`--cluster sbatch`, which polls nothing but its own job markers.
"""

import os
import shutil
import subprocess
import time

import h5py
import pytest

from conftest import REPO_ROOT
from test_checkpoint import assert_same_datasets
from test_sweeps import SCENE, read_csv, snakefile_tree

SLURM_LOCAL = REPO_ROOT / "scripts" / "slurm-local"

# The requeued run: ball_on_slope under sap at its scene file on a finer grid, for as many
# simulated seconds as take about a minute on this machine (requeue_duration).
REQUEUE_SCENE = ["ball_on_slope", "-f", "sap", "-c", str(SCENE), "--set", "grid_spacing=0.1", "--quiet"]


def requeue_duration(contactlab_bin, tmp_path, target_seconds=60.0):
    """Simulated seconds that take about `target_seconds` of one core here: Slurm signals each
    attempt up to 35 s after it starts, so a run of a fixed length could end unsignalled on a
    fast machine. Timed from two short runs, whose difference leaves out the scene's build."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_THREAD_LIMIT="1")
    walls = []
    for duration in (0.05, 0.15):
        start = time.monotonic()
        subprocess.run([contactlab_bin, "run", *REQUEUE_SCENE, "--set", f"duration={duration}", "-o",
                        str(tmp_path / "probe.h5")], check=True, env=env)
        walls.append(time.monotonic() - start)
    per_simulated_second = max((walls[1] - walls[0]) / 0.1, 1e-3)
    return min(max(round(target_seconds / per_simulated_second, 2), 0.2), 10.0)

SWEEP = f"""
[sweep]
name = "cluster"
scenario = "ball_on_slope"
config = "{SCENE}"

[base]
duration = 0.02

[[zip]]
formulation = ["sap", "quasi_newton", "explicit_projection"]
mu = [0.0, 0.3, 0.3]
"""


@pytest.fixture
def slurm_cluster(tmp_path):
    missing = [name for name in ("munged", "slurmctld", "slurmd")
               if shutil.which(name) is None and not os.access(f"/usr/sbin/{name}", os.X_OK)]
    missing += [name for name in ("sbatch", "sinfo") if shutil.which(name) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): scripts/install-deps --slurm")
    if os.geteuid() != 0:
        pytest.skip("a local Slurm cluster needs root (slurmd starts jobs as their submitter)")
    state = tmp_path / "slurm"
    started = subprocess.run([str(SLURM_LOCAL), "start", str(state)], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    environment = dict(os.environ, SLURM_CONF=str(state / "slurm.conf"), USER=os.environ.get("USER", "root"))
    try:
        yield environment
    finally:
        subprocess.run([str(SLURM_LOCAL), "stop", str(state)], capture_output=True, timeout=60)


def test_sweep_runs_as_a_slurm_array_job(contactlab_bin, slurm_cluster, tmp_path):
    sweep = tmp_path / "cluster.toml"
    sweep.write_text(SWEEP)
    out = tmp_path / "out"
    subprocess.run([contactlab_bin, "sweep", "slurm", str(sweep), "--out-dir", str(out), "--cpus-per-task", "1",
                    "--time", "00:10:00", "--mem", "1G"], check=True, capture_output=True, env=slurm_cluster)
    submitted = subprocess.run(["sbatch", "--wait", str(out / "sweep.slurm")], capture_output=True, text=True,
                               env=slurm_cluster, timeout=600)
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith("Submitted batch job")
    rows = read_csv(subprocess.run([contactlab_bin, "collect", str(out)], check=True, capture_output=True,
                                   text=True).stdout)
    assert [(row["formulation"], row["status"]) for row in rows] == [
        ("sap", "ok"), ("quasi_newton", "ok"), ("explicit_projection", "ok")]
    # One log per array task, named by Slurm's job and task ids.
    assert len(list((out / "logs").glob("slurm-*_*.log"))) == 3


def test_snakefile_submits_its_runs_to_slurm(contactlab_bin, slurm_cluster, tmp_path):
    snakemake = shutil.which("snakemake")
    assert snakemake, "snakemake is missing: run scripts/install-deps"
    root = snakefile_tree(tmp_path, "cluster", SWEEP)
    work = tmp_path / "work"
    (work / "slurm-logs").mkdir(parents=True)
    result = subprocess.run(
        [snakemake, "-s", str(root / "paper" / "Snakefile"), "--directory", str(work), "-j", "4",
         "--cluster", "sbatch --parsable --cpus-per-task={threads} --mem={resources.mem_mb} "
                      "--time={resources.runtime} --output=slurm-logs/slurm-%j.log",
         "--config", f"contactlab={contactlab_bin}", "sweeps=cluster"],
        capture_output=True, text=True, env=slurm_cluster, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # The three runs went through sbatch (the manifest and collect run where snakemake runs).
    assert result.stderr.count("with external jobid") == 3, result.stderr[-3000:]
    rows = read_csv((work / "results" / "sweeps" / "cluster" / "results.csv").read_text())
    assert [row["status"] for row in rows] == ["ok", "ok", "ok"]


def test_a_task_past_its_time_limit_checkpoints_requeues_and_resumes_bit_for_bit(contactlab_bin, slurm_cluster,
                                                                                   tmp_path):
    # A run of about a minute under a one-minute limit, signalled 55 s before it: Slurm's
    # time-limit check (every 30 s) signals each attempt 5-35 s in, the run writes a checkpoint
    # and stops, the script requeues the task, and the next attempt resumes (10 s after the
    # requeue on this cluster: scripts/slurm-local sets cred_expire=10).
    duration = requeue_duration(contactlab_bin, tmp_path)
    sweep = tmp_path / "long.toml"
    sweep.write_text(f'[sweep]\nname = "long"\nscenario = "ball_on_slope"\nconfig = "{SCENE}"\n\n'
                     f'[base]\ngrid_spacing = 0.1\nduration = {duration}\n\n[[zip]]\nformulation = ["sap"]\n')
    # The uninterrupted run, on the other core meanwhile.
    straight = tmp_path / "straight.h5"
    reference = subprocess.Popen([contactlab_bin, "run", *REQUEUE_SCENE, "--set", f"duration={duration}", "-o",
                                  str(straight)], env=dict(os.environ, OMP_NUM_THREADS="1", OMP_THREAD_LIMIT="1"))
    out = tmp_path / "out"
    subprocess.run([contactlab_bin, "sweep", "slurm", str(sweep), "--out-dir", str(out), "--cpus-per-task", "1",
                    "--time", "1", "--mem", "2G", "--signal-before", "55"], check=True, capture_output=True,
                   env=slurm_cluster)
    submitted = subprocess.run(["sbatch", "--wait", str(out / "sweep.slurm")], capture_output=True, text=True,
                               env=slurm_cluster, timeout=900)
    assert submitted.returncode == 0, submitted.stderr
    (log,) = (out / "logs").glob("slurm-*_0.log")
    attempts = log.read_text().count("requeueing task 0")
    assert attempts >= 1, log.read_text()[-2000:]
    (run_file,) = out.glob("*.h5")

    assert reference.wait(timeout=600) == 0
    assert_same_datasets(straight, run_file)
    with h5py.File(run_file, "r") as f:
        assert f.attrs["resumed"].count("step ") == attempts
    print(f"duration {duration} s; requeued {attempts} time(s); log:\n{log.read_text()}")
