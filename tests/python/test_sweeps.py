"""Sweeps end to end with the real binary: expand -> run -> collect on a 4-run sweep with
one invalid run, resume, the Slurm array script, and collect without a manifest."""

import csv
import io
import json
import os
import subprocess

import h5py
import pytest

from conftest import REPO_ROOT

SCENE = REPO_ROOT / "data" / "scenes" / "ball_on_slope.toml"

# Four short runs (two steps each); the last asks for mu = -1, which the run must record as
# failed while the others complete.
SMALL_SWEEP = f"""
[sweep]
name = "small"
scenario = "ball_on_slope"
config = "{SCENE}"

[base]
duration = 0.02

[[zip]]
formulation = ["sap", "sap", "quasi_newton", "quasi_newton"]
mu = [0.0, 0.3, 0.3, -1.0]
"""


def contactlab(binary, *arguments, check=True, env=None):
    result = subprocess.run([binary, *map(str, arguments)], capture_output=True, text=True,
                            env=env, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"contactlab {' '.join(map(str, arguments))} exited "
                             f"{result.returncode}:\n{result.stderr}")
    return result


def read_csv(text):
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_SWEEP)
    return path


def test_expand_run_collect(contactlab_bin, sweep_file, tmp_path):
    expanded = contactlab(contactlab_bin, "sweep", "expand", sweep_file)
    lines = [json.loads(line) for line in expanded.stdout.splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2, 3]
    assert [line["formulation"] for line in lines] == ["sap", "sap", "quasi_newton", "quasi_newton"]
    assert [line["swept"]["mu"] for line in lines] == [0.0, 0.3, 0.3, -1.0]
    assert len({line["run_id"] for line in lines}) == 4
    assert "run 3" in expanded.stderr and "'mu'" in expanded.stderr  # warned, still listed
    # Expanding again gives the same manifest, byte for byte.
    assert contactlab(contactlab_bin, "sweep", "expand", sweep_file).stdout == expanded.stdout

    out = tmp_path / "out"
    executed = contactlab(contactlab_bin, "sweep", "run", sweep_file, "-j", "2", "--out-dir", out)
    assert "3 ok" in executed.stdout and "1 failed" in executed.stdout
    assert (out / "manifest.jsonl").read_text() == expanded.stdout

    rows = read_csv((out / "results.csv").read_text())
    assert [row["run_id"] for row in rows] == [line["run_id"] for line in lines]
    assert [row["status"] for row in rows] == ["ok", "ok", "ok", "failed"]
    assert "'mu'" in rows[3]["message"]
    assert rows[3]["wall_s"] == ""
    assert [row["mu"] for row in rows] == ["0.0", "0.3", "0.3", "-1.0"]
    for row, line in zip(rows[:3], lines[:3]):
        assert row["steps"] == "2"
        assert float(row["wall_s"]) > 0.0
        assert row["regime"] in ("roll", "slip")
        with h5py.File(out / f"{line['run_id']}.h5", "r") as run:
            assert run.attrs["run_id"] == line["run_id"]
            assert run.attrs["status"] == "ok"
            assert run["params"].attrs["mu"] == line["swept"]["mu"]
    assert not (out / f"{lines[3]['run_id']}.h5").exists()
    failure = json.loads((out / f"{lines[3]['run_id']}.failed.json").read_text())
    assert failure["status"] == "failed" and failure["exit_code"] == 2
    # collect prints the same table the executor wrote.
    assert contactlab(contactlab_bin, "collect", out).stdout == (out / "results.csv").read_text()


def test_runs_record_their_thread_budget_and_sweeps_bound_every_parallel_region(contactlab_bin, sweep_file,
                                                                                 tmp_path):
    # A run records OpenMP's team size and the process-wide thread limit it ran under, and the
    # build of the transfer kernels its CPU took.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    single = tmp_path / "single.h5"
    contactlab(contactlab_bin, "run", "ball_on_slope", "-f", "sap", "-c", SCENE, "--set", "duration=0.01", "--quiet",
               "--out", single, env={**env, "OMP_NUM_THREADS": "2", "OMP_THREAD_LIMIT": "3"})
    with h5py.File(single, "r") as run:
        assert run.attrs["omp_max_threads"] == "2"
        assert run.attrs["omp_thread_limit"] == "3"
        assert run.attrs["transfer_kernels"] in ("avx2_fma", "baseline")
    # A run started by hand with OMP_NUM_THREADS alone is told that CHOLMOD is not bound by it.
    for limit, warned in ((None, True), ("1", False)):
        run_env = {**env, "OMP_NUM_THREADS": "1"} | ({} if limit is None else {"OMP_THREAD_LIMIT": limit})
        started = contactlab(contactlab_bin, "run", "ball_on_slope", "-f", "sap", "-c", SCENE, "--set",
                             "duration=0.01", "--out", tmp_path / f"by_hand_{warned}.h5", env=run_env)
        assert ("set OMP_THREAD_LIMIT=1 as well" in started.stderr) == warned, started.stderr
    # A sweep's runs get OMP_THREAD_LIMIT = their thread count (CHOLMOD's num_threads(4) obeys
    # only the limit), unless the caller set one.
    for limit, expected in ((None, "1"), ("5", "5")):
        out = tmp_path / f"out_{expected}"
        sweep_env = dict(env) if limit is None else {**env, "OMP_THREAD_LIMIT": limit}
        executed = contactlab(contactlab_bin, "sweep", "run", sweep_file, "-j", "2", "--threads-per-run", "1",
                              "--out-dir", out, env=sweep_env)
        assert f"OMP_THREAD_LIMIT={expected}" in executed.stderr
        for line in (out / "manifest.jsonl").read_text().splitlines()[:3]:
            with h5py.File(out / f"{json.loads(line)['run_id']}.h5", "r") as run:
                assert run.attrs["omp_max_threads"] == "1"
                assert run.attrs["omp_thread_limit"] == expected


def test_resume_skips_complete_runs_and_reruns_the_rest(contactlab_bin, sweep_file, tmp_path):
    out = tmp_path / "out"
    contactlab(contactlab_bin, "sweep", "run", sweep_file, "-j", "2", "--out-dir", out)
    lines = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    files = [out / f"{line['run_id']}.h5" for line in lines[:3]]
    stamps = [file.stat().st_mtime_ns for file in files]

    # One run by index: complete, so skipped and untouched.
    single = contactlab(contactlab_bin, "run", "--manifest", out / "manifest.jsonl", "--index", "1",
                        "--out-dir", out)
    assert "skipped" in single.stderr
    assert files[1].stat().st_mtime_ns == stamps[1]

    # A file under run 0's name that holds another configuration is not "complete".
    files[0].unlink()
    files[2].rename(files[0])
    again = contactlab(contactlab_bin, "sweep", "run", sweep_file, "-j", "1", "--out-dir", out)
    assert "1 runs already complete" in again.stderr
    assert files[1].stat().st_mtime_ns == stamps[1]
    with h5py.File(files[0], "r") as run:
        assert run.attrs["run_id"] == lines[0]["run_id"]
    assert files[2].exists()
    rows = read_csv((out / "results.csv").read_text())
    assert [row["status"] for row in rows] == ["ok", "ok", "ok", "failed"]

    # The invalid run exits 2 by itself too, and stays recorded as failed.
    invalid = contactlab(contactlab_bin, "run", "--manifest", out / "manifest.jsonl", "--index", "3",
                         "--out-dir", out, check=False)
    assert invalid.returncode == 2
    assert len(invalid.stderr.strip().splitlines()) == 1 and "'mu'" in invalid.stderr
    # An index past the end is an input error that names the index.
    beyond = contactlab(contactlab_bin, "run", "--manifest", out / "manifest.jsonl", "--index", "4",
                        "--out-dir", out, check=False)
    assert beyond.returncode == 2 and "--index 4" in beyond.stderr
    # A manifest run takes no scenario: a malformed command line is bad input, on one line.
    mixed = contactlab(contactlab_bin, "run", "ball_on_slope", "--manifest", out / "manifest.jsonl",
                       "--index", "0", "--out-dir", out, check=False)
    assert mixed.returncode == 2 and len(mixed.stderr.strip().splitlines()) == 1
    assert "--manifest" in mixed.stderr


def test_slurm_script_selects_the_array_task_line(contactlab_bin, sweep_file, tmp_path):
    out = tmp_path / "cluster"
    written = contactlab(contactlab_bin, "sweep", "slurm", sweep_file, "--out-dir", out,
                         "--max-concurrent", "3")
    script = out / "sweep.slurm"
    assert "sbatch" in written.stdout
    text = script.read_text()
    assert "#SBATCH --array=0-3%3\n" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert (out / "logs").is_dir()  # Slurm does not create the --output folder
    lines = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]

    env = dict(os.environ, SLURM_ARRAY_TASK_ID="2", CONTACTLAB=contactlab_bin)
    task = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert task.returncode == 0, task.stderr
    produced = sorted(path.name for path in out.glob("*.h5"))
    assert produced == [f"{lines[2]['run_id']}.h5"]

    # Without an array index the script refuses to run.
    env.pop("SLURM_ARRAY_TASK_ID")
    refused = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    assert refused.returncode != 0 and "SLURM_ARRAY_TASK_ID" in refused.stderr

    rows = read_csv(contactlab(contactlab_bin, "collect", out).stdout)
    assert [row["status"] for row in rows] == ["missing", "missing", "ok", "missing"]


def test_collect_without_manifest_infers_the_swept_keys(contactlab_bin, tmp_path):
    out = tmp_path / "plain"
    for mu in ("0.1", "0.4"):
        contactlab(contactlab_bin, "run", "ball_on_slope", "-f", "sap", "-c", SCENE, "--set",
                   "duration=0.02", "--set", f"mu={mu}", "-o", out / f"mu{mu}.h5", "-q")
    rows = read_csv(contactlab(contactlab_bin, "collect", out).stdout)
    assert sorted(row["mu"] for row in rows) == ["0.1", "0.4"]
    assert "dt" not in rows[0]  # equal in both runs: not a swept key
    assert all(row["status"] == "ok" and row["index"] == "" for row in rows)


def test_bad_sweep_file_is_one_line_error(contactlab_bin, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SMALL_SWEEP.replace("mu = [", "friction = ["))
    result = contactlab(contactlab_bin, "sweep", "run", path, "--out-dir", tmp_path / "never",
                        check=False)
    assert result.returncode == 2
    assert "'friction'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "never").exists()


def snakefile_tree(tmp_path, name, sweep_text):
    """A copy of paper/Snakefile beside a data/sweeps folder holding one sweep (the Snakefile
    finds the sweeps relative to itself); returns the tree's root."""
    import shutil

    root = tmp_path / "tree"
    (root / "paper").mkdir(parents=True)
    (root / "data" / "sweeps").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "paper" / "Snakefile", root / "paper" / "Snakefile")
    (root / "data" / "sweeps" / f"{name}.toml").write_text(sweep_text)
    return root


def test_snakefile_runs_a_sweep_with_the_real_binary(contactlab_bin, tmp_path):
    """paper/Snakefile end to end: a copy of it beside a one-sweep data/sweeps folder (the
    Snakefile finds the sweeps relative to itself), run with two jobs."""
    import shutil

    snakemake = shutil.which("snakemake")
    assert snakemake, "snakemake is missing: run scripts/install-deps"
    root = snakefile_tree(tmp_path, "small", SMALL_SWEEP)
    work = tmp_path / "work"
    result = subprocess.run(
        [snakemake, "-s", str(root / "paper" / "Snakefile"), "--directory", str(work), "-j", "2",
         "--config", f"contactlab={contactlab_bin}", "sweeps=small"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = work / "results" / "sweeps" / "small"
    rows = read_csv((out / "results.csv").read_text())
    assert [row["status"] for row in rows] == ["ok", "ok", "ok", "failed"]
    marker = json.loads((out / "markers" / "3.done").read_text())
    assert marker == {"index": 3, "exit_code": 2}


def test_executor_records_a_child_that_dies_without_a_record(contactlab_bin, tmp_path):
    """A run killed by a signal writes nothing itself; the executor records it as failed and
    finishes the sweep."""
    import signal
    import time

    path = tmp_path / "long.toml"
    path.write_text(f"""
[sweep]
scenario = "ball_on_slope"
config = "{SCENE}"
formulation = "sap"
[axes]
duration = [100.0]
""")
    out = tmp_path / "out"
    executor = subprocess.Popen([contactlab_bin, "sweep", "run", str(path), "-j", "1",
                                 "--out-dir", str(out)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    children = f"/proc/{executor.pid}/task/{executor.pid}/children"
    deadline = time.monotonic() + 60
    child = ""
    while not child and time.monotonic() < deadline:
        with open(children) as handle:
            child = handle.read().split()
        time.sleep(0.05)
    assert child, "the executor started no run"
    os.kill(int(child[0]), signal.SIGKILL)
    stdout, stderr = executor.communicate(timeout=120)
    assert executor.returncode == 0, stderr
    rows = read_csv((out / "results.csv").read_text())
    assert len(rows) == 1 and rows[0]["status"] == "failed"
    assert "crashed" in rows[0]["message"] and "log:" in rows[0]["message"]
    assert json.loads((out / f"{rows[0]['run_id']}.failed.json").read_text())["exit_code"] == 128 + 9


def test_expand_set_overrides_every_run_after_base(contactlab_bin, tmp_path):
    """`sweep expand --set`: typed by the parameter, after [base], skipped where the key
    belongs to another formulation; an unknown key is bad input naming it."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL_SWEEP)
    result = contactlab(contactlab_bin, "sweep", "expand", path, "--set", "duration=0.03",
                        "--set", "quasi_newton.substeps=3")
    entries = [json.loads(line) for line in result.stdout.splitlines()]
    assert [entry["parameters"]["duration"] for entry in entries] == [0.03] * 4
    assert [entry["parameters"].get("quasi_newton.substeps") for entry in entries] == [None, None, 3, 3]
    bad = contactlab(contactlab_bin, "sweep", "expand", path, "--set", "nonsense=1", check=False)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "'nonsense'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
