"""Input safety by mechanism, through the command line: a blown-up state inside an explicit
substep, folders under the output folder that are links, a manifest replaced under a running
sweep, nesting past the TOML parser's stack, integers past their type, a file-size limit,
sweeps of unbounded size, and outputs that would replace an input. Each case is one line on
stderr naming the key or file, exit code 2 (3 for a recorded divergence), and nothing on disk
that looks like a result."""

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import h5py
import pytest

BIN = os.environ.get("CONTACTLAB_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="CONTACTLAB_BIN not set")

QUICK = ["ball_on_slope", "-f", "sap", "--set", "duration=0.02", "--set", "dt=0.01"]


def contactlab(*args, timeout=120, **kwargs):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kwargs)


def assert_input_error(result, *fragments):
    """Exit code 2 and exactly one line on stderr that names every fragment."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def write_sweep(folder, *, mu=(0.0,), duration=0.02, extra=""):
    sweep = Path(folder) / "tiny.toml"
    values = ", ".join(str(m) for m in mu)
    sweep.write_text('[sweep]\nname = "tiny"\nscenario = "ball_on_slope"\nformulation = "sap"\n'
                     f"{extra}[base]\nduration = {duration}\ndt = 0.01\n[axes]\nmu = [{values}]\n")
    return sweep


def files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if not p.is_dir())


# ---- a blown-up state inside an explicit substep -------------------------------------------

@pytest.mark.parametrize("scenario, formulation, setting", [
    ("block_on_slab", "explicit_projection", "block_density=1e308"),
    ("close_lift_shake", "hybrid_impulse", "rigid_density=1e307"),
    ("close_lift_shake", "explicit_projection", "elastic_density=1e308"),
])
def test_explicit_formulations_record_a_blown_up_state(tmp_path, scenario, formulation, setting):
    # Finite, in-range densities whose exchange overflows within a substep: the run ends
    # "diverged" (exit 3) with a complete file, never a crash with a partial one.
    out = tmp_path / "r.h5"
    result = contactlab("run", scenario, "-f", formulation, "--set", setting, "-o", out, "-q", timeout=300)
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "non-finite" in result.stderr, result.stderr
    assert os.listdir(tmp_path) == ["r.h5"]
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "diverged"


# ---- folders under the output folder -------------------------------------------------------

@pytest.mark.parametrize("plant", ["link_to_folder", "dangling_link", "file"])
@pytest.mark.parametrize("command", ["run", "slurm"])
def test_a_planted_logs_entry_is_refused(tmp_path, plant, command):
    victim = tmp_path / "victim"
    victim.mkdir()
    sweep = write_sweep(tmp_path)
    run_id = json.loads(contactlab("sweep", "expand", sweep).stdout.splitlines()[0])["run_id"]
    (victim / f"0_{run_id}.log").write_text("keep me\n")
    out = tmp_path / "runs"
    out.mkdir()
    if plant == "link_to_folder":
        (out / "logs").symlink_to(victim)
    elif plant == "dangling_link":
        (out / "logs").symlink_to(tmp_path / "nowhere")
    else:
        (out / "logs").write_text("a file\n")
    args = ["-j", "1"] if command == "run" else []
    line = assert_input_error(contactlab("sweep", command, sweep, *args, "--out-dir", out), str(out / "logs"))
    assert ("symbolic link" in line) == (plant != "file"), line
    assert (victim / f"0_{run_id}.log").read_text() == "keep me\n"
    assert files_under(victim) == [f"0_{run_id}.log"]
    assert not (tmp_path / "nowhere").exists()
    assert not any(name.endswith(".h5") for name in files_under(out))


# ---- a manifest replaced under a running sweep ---------------------------------------------

@pytest.mark.parametrize("index", [7, 100000000])
def test_a_manifest_replaced_during_the_sweep(tmp_path, index):
    sweep = write_sweep(tmp_path, duration=0.04)
    out = tmp_path / "runs"
    process = subprocess.Popen([BIN, "sweep", "run", str(sweep), "-j", "1", "--out-dir", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Once the run has read its line and started writing, the sweep is held while its
        # manifest is replaced: the run goes on, the sweep's final table reads the new file.
        deadline = time.monotonic() + 60
        while not list(out.glob("*.h5.partial")):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.01)
        process.send_signal(signal.SIGSTOP)
        line = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])
        line.update(index=index, run_id="0123456789ab")
        replacement = out / "replacement"
        replacement.write_text(json.dumps(line) + "\n")
        replacement.rename(out / "manifest.jsonl")
        process.send_signal(signal.SIGCONT)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    if index < 100000:
        # The table lists the line, and says it is not this sweep's run.
        assert process.returncode == 0, stderr
        assert "(not a run of this sweep)" in stdout, stdout
    else:
        assert process.returncode == 2, stderr
        assert "'index' = 100000000" in stderr.splitlines()[-1], stderr


# ---- TOML nesting ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "a" + ".b" * 30000 + " = 1\n",
    "[" + ".".join(['"t"'] * 30000) + "]\nx = 1\n",
    "x = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n",
    "x = " + "[" * 5000 + "]" * 5000 + "\n",
])
def test_deep_nesting_is_refused_before_the_parser(tmp_path, text):
    scene = tmp_path / "scene.toml"
    scene.write_text(text)
    assert_input_error(contactlab("run", *QUICK, "-c", scene, "-o", tmp_path / "r.h5", "-q"), str(scene), "deep")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\nscenario = "ball_on_slope"\nformulation = "sap"\n' + text)
    assert_input_error(contactlab("sweep", "expand", sweep), str(sweep), "deep")
    assert files_under(tmp_path) == ["scene.toml", "sweep.toml"]


def test_an_oversized_toml_file_is_refused(tmp_path):
    scene = tmp_path / "scene.toml"
    scene.write_text("# padding\n" * 200000)
    assert_input_error(contactlab("run", *QUICK, "-c", scene, "-o", tmp_path / "r.h5", "-q"), str(scene), "larger than")


# ---- integers --------------------------------------------------------------------------------

@pytest.mark.parametrize("index", ["4294967296", "2.5", "-4294967296", "1e2"])
def test_manifest_indices_never_wrap(tmp_path, index):
    sweep = write_sweep(tmp_path)
    line = contactlab("sweep", "expand", sweep).stdout.splitlines()[0]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(line.replace('"index":0', '"index":' + index, 1) + "\n")
    out = tmp_path / "runs"
    assert_input_error(contactlab("run", "--manifest", manifest, "--index", 0, "--out-dir", out), "'index' = ")
    result = contactlab("run", "--manifest", manifest, "--index", index, "--out-dir", out)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert not out.exists() or files_under(out) == []


# ---- a file-size limit ---------------------------------------------------------------------

def limit_file_size(size):
    # SIGXFSZ keeps its default action here: the program itself must not die of it.
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def test_a_file_size_limit_takes_the_one_line_path(tmp_path):
    out = tmp_path / "r.h5"
    result = subprocess.run([BIN, "run", *QUICK, "--set", "output.snapshot_every=1", "-o", str(out), "-q"],
                            capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size(30 * 1024))
    assert_input_error(result, "r.h5.partial", "File too large")
    assert files_under(tmp_path) == []
    # collect -o, and a sweep whose runs write past the limit: each run records its failure.
    runs = tmp_path / "runs"
    assert contactlab("run", *QUICK, "-o", runs / "r.h5", "-q").returncode == 0
    collect = subprocess.run([BIN, "collect", str(runs), "-o", str(tmp_path / "t.csv")], capture_output=True,
                             text=True, timeout=60, preexec_fn=limit_file_size(200))
    assert_input_error(collect, "t.csv.partial", "File too large")
    sweep = write_sweep(tmp_path, mu=(0.0, 0.1), extra="")
    swept = tmp_path / "swept"
    result = subprocess.run([BIN, "sweep", "run", str(sweep), "-j", "2", "--out-dir", str(swept), "--set",
                             "output.snapshot_every=1"], capture_output=True, text=True, timeout=300,
                            preexec_fn=limit_file_size(30 * 1024))
    assert result.returncode == 0, result.stderr  # the sweep completes; its table lists the failures
    assert result.stdout.count("failed") >= 2, result.stdout
    records = [name for name in files_under(swept) if name.endswith(".failed.json")]
    assert len(records) == 2, files_under(swept)
    for record in records:
        assert json.loads((swept / record).read_text())["exit_code"] == 2
    assert not any(name.endswith(".partial") or name.endswith(".h5") for name in files_under(swept))


# ---- sweeps of unbounded size ----------------------------------------------------------------

@pytest.mark.parametrize("axes", [
    "".join(f"k{k} = [{', '.join(str(v) for v in range(1, 11))}]\n" for k in range(6)),  # 10^6
    "".join(f"k{k} = [{', '.join(str(v) for v in range(1, 257))}]\n" for k in range(8)),  # 2^64
])
def test_a_sweep_too_large_is_refused_before_it_is_expanded(tmp_path, axes):
    sweep = tmp_path / "huge.toml"
    sweep.write_text('[sweep]\nscenario = "ball_on_slope"\nformulation = "sap"\n[axes]\n' + axes)
    started = time.monotonic()
    for command in (["expand"], ["run", "--out-dir", tmp_path / "runs"], ["slurm", "--out-dir", tmp_path / "runs"]):
        assert_input_error(contactlab("sweep", command[0], sweep, *command[1:]), str(sweep),
                           "more than the 100000 runs")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "runs" / "manifest.jsonl").exists()


# ---- outputs that would replace an input, and the rest ---------------------------------------

def test_outputs_never_replace_the_sweep_or_the_manifest(tmp_path):
    sweep = write_sweep(tmp_path)
    text = sweep.read_text()
    out = tmp_path / "runs"
    assert_input_error(contactlab("sweep", "slurm", sweep, "--out-dir", out, "--script", sweep), "--script",
                       "sweep file")
    assert contactlab("sweep", "slurm", sweep, "--out-dir", out).returncode == 0
    manifest = (out / "manifest.jsonl").read_text()
    assert_input_error(contactlab("sweep", "slurm", sweep, "--out-dir", out, "--script", out / "manifest.jsonl"),
                       "manifest")
    assert_input_error(contactlab("collect", out, "-o", out / "manifest.jsonl"), "manifest")
    assert sweep.read_text() == text and (out / "manifest.jsonl").read_text() == manifest
    # A sweep file kept in its output folder under the manifest's name.
    own = tmp_path / "own"
    own.mkdir()
    (own / "manifest.jsonl").write_text(text)
    for command in ("run", "slurm"):
        assert_input_error(contactlab("sweep", command, own / "manifest.jsonl", "--out-dir", own), "manifest",
                           "sweep file")
    assert (own / "manifest.jsonl").read_text() == text


@pytest.mark.parametrize("option", ["--partition", "--time", "--mem"])
@pytest.mark.parametrize("byte", ["\r", "\v", "\f", "\x1b"])
def test_control_bytes_never_reach_a_directive(tmp_path, option, byte):
    sweep = write_sweep(tmp_path)
    result = contactlab("sweep", "slurm", sweep, "--out-dir", tmp_path / "runs", option, f"x{byte}#SBATCH --uid=0")
    assert_input_error(result, option)
    assert not (tmp_path / "runs" / "sweep.slurm").exists()


def test_a_description_must_be_text(tmp_path):
    sweep = write_sweep(tmp_path, extra="description = { a = 1 }\n")
    assert_input_error(contactlab("sweep", "expand", sweep), "'description'")


def test_an_environment_value_cannot_split_the_sweep_header(tmp_path):
    sweep = write_sweep(tmp_path)
    environment = dict(os.environ, OMP_NUM_THREADS="1\ninjected line", OMP_THREAD_LIMIT="1")
    result = contactlab("sweep", "run", sweep, "-j", "1", "--out-dir", tmp_path / "runs", env=environment)
    assert not any(line.startswith("injected line") for line in result.stderr.splitlines()), result.stderr
    assert "OMP_NUM_THREADS=1\\ninjected line" in result.stderr


def test_a_killed_collect_takes_its_reader_child_along(tmp_path):
    # collect reads each run file in a child process. Stop a child mid-read and kill collect:
    # the child must die with it (a file that hangs HDF5 would otherwise keep it spinning).
    runs = tmp_path / "runs"
    assert contactlab("run", *QUICK, "-o", runs / "r0.h5", "-q").returncode == 0
    data = (runs / "r0.h5").read_bytes()
    for i in range(1, 300):
        (runs / f"r{i}.h5").write_bytes(data)
    parent = subprocess.Popen([BIN, "collect", str(runs)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child, deadline = None, time.monotonic() + 30
    while child is None:  # a reader that is alive and stopped by us
        assert time.monotonic() < deadline and parent.poll() is None
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if int(process_state(pid)[1]) != parent.pid:
                    continue
                os.kill(int(pid), signal.SIGSTOP)
                time.sleep(0.01)
                if process_state(pid)[0] == "T":
                    child = int(pid)
                    break
                os.kill(int(pid), signal.SIGCONT)
            except (OSError, IndexError):
                continue
    parent.kill()
    parent.wait()
    deadline, state = time.monotonic() + 5, "T"
    while state not in ("gone", "Z", "X") and time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            state = process_state(child)[0]
        except OSError:
            state = "gone"
    if state not in ("gone", "Z", "X"):
        os.kill(child, signal.SIGKILL)
    assert state in ("gone", "Z", "X"), f"the reader outlived collect (state {state})"


def process_state(pid):
    """(state, parent pid) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], fields[1]
