"""Checkpoint and resume through the command line, on real processes: a run killed with
SIGKILL between two checkpoints and started again with the same command, a run stopped by
SIGUSR1 under --checkpoint-on-signal, a sweep that resumes a stopped run instead of starting
it over, and damaged or foreign checkpoints refused with one line.

Resumed run files are compared with an uninterrupted run's dataset by dataset, bit for bit,
but for the wall-clock fields.
"""

import os
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from test_sweeps import SCENE, contactlab

# ball_on_slope at its scene file, shortened to 60 steps that take a few seconds.
RUN = ["ball_on_slope", "-f", "sap", "-c", SCENE, "--set", "duration=0.6", "--quiet"]
WALL_CLOCK = ("wall_s", "timing_", "seconds_")


def datasets(path):
    found = {}
    with h5py.File(path, "r") as f:
        def visit(name, item):
            if isinstance(item, h5py.Dataset):
                found[name] = item[()]
        f.visititems(visit)
        summary = {key: value for key, value in f["summary"].attrs.items() if key != "wall_s"}
    return found, summary


def assert_same_datasets(expected_path, actual_path):
    expected, expected_summary = datasets(expected_path)
    actual, actual_summary = datasets(actual_path)
    assert sorted(actual) == sorted(expected)
    compared = 0
    for name, value in expected.items():
        if name.split("/")[-1].startswith(WALL_CLOCK):
            continue
        other = actual[name]
        if isinstance(value, np.ndarray) and value.dtype != object:
            assert value.shape == other.shape and value.tobytes() == other.tobytes(), name
        else:
            assert np.array(value).tolist() == np.array(other).tolist(), name
        compared += 1
    assert compared > 20
    assert sorted(actual_summary) == sorted(expected_summary)
    for key, value in expected_summary.items():
        assert np.array(value).tobytes() == np.array(actual_summary[key]).tobytes(), key


@pytest.fixture(scope="module")
def straight_run(contactlab_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run.h5"
    contactlab(contactlab_bin, "run", *RUN, "-o", out, env=one_thread())
    return out


def one_thread():
    return dict(os.environ, OMP_NUM_THREADS="1", OMP_THREAD_LIMIT="1")


def wait_for(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_sigkill_between_checkpoints_then_the_same_command_resumes_bit_for_bit(contactlab_bin, straight_run,
                                                                                tmp_path):
    out = tmp_path / "run.h5"
    command = [contactlab_bin, "run", *map(str, RUN), "-o", str(out), "--checkpoint-every", "5"]
    process = subprocess.Popen(command, env=one_thread(), stderr=subprocess.PIPE)
    checkpoint = tmp_path / "run.h5.checkpoint"
    previous = tmp_path / "run.h5.checkpoint.previous"
    wait_for(lambda: previous.exists() or process.poll() is not None)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before the kill: make it longer"
    assert not out.exists()
    assert checkpoint.exists()

    resumed = subprocess.run(command, env=one_thread(), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_datasets(straight_run, out)
    with h5py.File(out, "r") as f:
        assert f.attrs["resumed"].startswith("step ")
    assert not checkpoint.exists() and not previous.exists(), "a finished run left its checkpoints"


def test_sigusr1_with_checkpoint_on_signal_writes_a_checkpoint_and_exits(contactlab_bin, straight_run, tmp_path):
    out = tmp_path / "run.h5"
    # Signalled once the run is under way (its first checkpoint, after step 5 of 60, exists),
    # however fast the machine.
    command = [contactlab_bin, "run", *map(str, RUN), "-o", str(out), "--checkpoint-on-signal", "--checkpoint-every",
               "5"]
    process = subprocess.Popen(command, env=one_thread(), stderr=subprocess.PIPE, text=True)
    partial = tmp_path / "run.h5.partial"
    wait_for(lambda: (tmp_path / "run.h5.checkpoint").exists() or process.poll() is not None)
    process.send_signal(signal.SIGUSR1)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGUSR1, stderr
    assert "checkpoint written" in stderr and stderr.count("\n") == 1, stderr
    assert (tmp_path / "run.h5.checkpoint").exists() and not out.exists() and not partial.exists()
    contactlab(contactlab_bin, "run", *RUN, "-o", out, env=one_thread())
    assert_same_datasets(straight_run, out)


def test_stop_at_splits_a_run_into_pieces(contactlab_bin, straight_run, tmp_path):
    out = tmp_path / "run.h5"
    for stop in (10, 35):
        contactlab(contactlab_bin, "run", *RUN, "-o", out, "--stop-at", stop, env=one_thread())
        assert not out.exists()
    contactlab(contactlab_bin, "run", *RUN, "-o", out, env=one_thread())
    assert_same_datasets(straight_run, out)
    with h5py.File(out, "r") as f:
        assert f.attrs["resumed"].count("step ") == 2


def test_damaged_and_foreign_checkpoints_are_one_line_input_errors(contactlab_bin, tmp_path):
    out = tmp_path / "run.h5"
    contactlab(contactlab_bin, "run", *RUN, "-o", out, "--stop-at", 3, env=one_thread())
    checkpoint = tmp_path / "run.h5.checkpoint"
    whole = checkpoint.read_bytes()

    # Another configuration under the same --out: refused, nothing written, checkpoint kept.
    other = contactlab(contactlab_bin, "run", *RUN, "--set", "mu=0.5", "-o", out, check=False)
    assert other.returncode == 2 and "refusing to resume" in other.stderr and other.stderr.count("\n") == 1
    assert not out.exists() and checkpoint.read_bytes() == whole

    for damaged in (whole[: len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b"", b"\0" * 64):
        checkpoint.write_bytes(damaged)
        result = contactlab(contactlab_bin, "run", *RUN, "-o", out, check=False)
        assert result.returncode == 2, result.stderr
        assert str(checkpoint) in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert not out.exists()

    # --resume names the file; a missing one is the same kind of error.
    missing = contactlab(contactlab_bin, "run", *RUN, "-o", tmp_path / "other.h5", "--resume",
                         tmp_path / "none.checkpoint", check=False)
    assert missing.returncode == 2 and "none.checkpoint" in missing.stderr
    bad_interval = contactlab(contactlab_bin, "run", *RUN, "-o", tmp_path / "x.h5", "--checkpoint-every", "5d",
                              check=False)
    assert bad_interval.returncode == 2 and "--checkpoint-every" in bad_interval.stderr


def test_a_sweep_resumes_a_stopped_run_instead_of_starting_it_over(contactlab_bin, tmp_path):
    sweep = tmp_path / "one.toml"
    sweep.write_text(f'[sweep]\nname = "one"\nscenario = "ball_on_slope"\nconfig = "{SCENE}"\n\n'
                     '[base]\nduration = 0.6\n\n[[zip]]\nformulation = ["sap"]\n')
    out = tmp_path / "runs"
    contactlab(contactlab_bin, "sweep", "expand", sweep)
    contactlab(contactlab_bin, "sweep", "slurm", sweep, "--out-dir", out)  # writes the manifest
    contactlab(contactlab_bin, "run", "--manifest", out / "manifest.jsonl", "--index", 0, "--out-dir", out,
               "--quiet", "--stop-at", 20, env=one_thread())
    assert len(list(out.glob("*.h5.checkpoint"))) == 1 and not list(out.glob("*.h5"))
    contactlab(contactlab_bin, "sweep", "run", sweep, "--out-dir", out, "-j", "1", "--threads-per-run", "1")
    (run_file,) = out.glob("*.h5")
    with h5py.File(run_file, "r") as f:
        assert f.attrs["resumed"].startswith("step 20 ")
        assert f["summary"].attrs["steps"] == 60
    assert not list(out.glob("*.checkpoint*"))
