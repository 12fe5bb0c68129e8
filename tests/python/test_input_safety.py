"""Input safety and faults, through the command line as a careful user meets them: malformed
run files, generated scripts, output folders with planted links, outputs that would clobber
something, errors that must come before the simulation, durations, sizes, special files as
inputs, concurrent sweeps and signals; then by mechanism: a blown-up state inside an explicit
substep, folders under the output folder that are links, a manifest replaced under a running
sweep, nesting past the TOML parser's stack, integers past their type, a file-size limit,
sweeps of unbounded size, outputs that would replace an input, and a killed collect's reader.
Every bad input ends with one line naming the key or file and exit code 2 (3 for a recorded
divergence); nothing is written where it does not belong."""

import fcntl
import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

BIN = os.environ.get("CONTACTLAB_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="CONTACTLAB_BIN not set")

# A run that takes a fraction of a second: two steps of ball_on_slope under sap.
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


def write_sweep(folder, *, mu=(0.0, 0.3), extra="", duration=0.02, header=""):
    """A sweep of ball_on_slope under sap over `mu`; `header` adds [sweep] keys, `extra` [base] keys."""
    sweep = Path(folder) / "tiny.toml"
    values = ", ".join(str(m) for m in mu)
    sweep.write_text('[sweep]\nname = "tiny"\nscenario = "ball_on_slope"\nformulation = "sap"\n'
                     f"{header}[base]\nduration = {duration}\ndt = 0.01\n{extra}[axes]\nmu = [{values}]\n")
    return sweep


def files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if not p.is_dir())


# ---- run files that are not what they claim ------------------------------------------------

def test_collect_and_resume_survive_malformed_run_files(tmp_path):
    out = tmp_path / "runs"
    sweep = write_sweep(tmp_path)
    first = contactlab("sweep", "run", sweep, "-j", "1", "--out-dir", out)
    assert first.returncode == 0, first.stderr
    runs = sorted(out.glob("*.h5"))
    assert len(runs) == 2
    # Array-valued attributes where scalars belong: 1,000 doubles, 5,000 int64, a root
    # scenario that is an array of strings, a 2-element attribute.
    with h5py.File(runs[0], "r+") as f:
        del f["summary"].attrs["wall_s"]
        f["summary"].attrs["wall_s"] = np.ones(1000)
        f["summary"].attrs["steps"] = np.arange(5000, dtype=np.int64)
        f["params"].attrs["mu"] = np.array([0.1, 0.2])
    with h5py.File(runs[1], "r+") as f:
        del f.attrs["scenario"]
        f.attrs["scenario"] = np.array([b"ball_on_slope", b"x", b"y"])
    table = contactlab("collect", out)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()[1:]
    assert len(rows) == 2 and all(",failed," in row for row in rows), table.stdout
    assert "is an array (1000), not a scalar" in table.stdout or "is an array (5000)" in table.stdout
    assert "attribute 'scenario' is an array (3), not a scalar" in table.stdout
    # The sweep's resume check reads the same files: it reruns them instead of crashing.
    again = contactlab("sweep", "run", sweep, "-j", "1", "--out-dir", out)
    assert again.returncode == 0, again.stderr
    assert contactlab("collect", out).stdout.count(",ok,") == 2


def test_collect_reports_special_entries_as_rows(tmp_path):
    (tmp_path / "a.h5").symlink_to(tmp_path / "b.h5")
    (tmp_path / "b.h5").symlink_to(tmp_path / "a.h5")
    (tmp_path / "dir.h5").mkdir()
    (tmp_path / "text.h5").write_text("mu = 0.3\n")
    os.mkfifo(tmp_path / "fifo.h5")
    result = contactlab("collect", tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = {line.split(",")[0]: line for line in result.stdout.splitlines()[1:]}
    assert set(rows) == {"a", "b", "dir", "text", "fifo"}
    assert all(",failed," in row for row in rows.values()), result.stdout
    assert "not an HDF5 file" in rows["text"]
    assert "not a regular file" in rows["fifo"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_run_file_is_reported_as_such(tmp_path):
    locked = tmp_path / "locked.h5"
    locked.write_bytes(b"\x89HDF\r\n\x1a\n")
    locked.chmod(0)
    row = contactlab("collect", tmp_path).stdout.splitlines()[1]
    assert "Permission denied" in row


# ---- generated scripts ---------------------------------------------------------------------

def test_slurm_script_quotes_paths_and_refuses_newlines(tmp_path):
    odd = tmp_path / "it's $(touch pwned)"
    odd.mkdir()
    sweep = write_sweep(odd)
    out = tmp_path / "runs"  # the #SBATCH --output line cannot quote: a plain folder
    result = contactlab("sweep", "slurm", sweep, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    script = out / "sweep.slurm"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # Running it (with a stand-in executable) executes nothing but that executable.
    fake = tmp_path / "fake"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{tmp_path}/args'\n")
    fake.chmod(0o755)
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", CONTACTLAB=str(fake))
    assert subprocess.run(["bash", str(script)], cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / "args").read_text().splitlines()[:4] == ["run", "--manifest", str(out / "manifest.jsonl"),
                                                                  "--index"]
    assert not list(tmp_path.rglob("pwned"))
    # A newline in the sweep's path cannot be carried into the script's comments.
    newline = tmp_path / "a\ntouch pwned"
    newline.mkdir()
    sweep = write_sweep(newline)
    assert_input_error(contactlab("sweep", "slurm", sweep, "--out-dir", tmp_path / "runs2"), "control character")
    assert not (tmp_path / "runs2" / "sweep.slurm").exists()


# ---- writes outside the output folder ------------------------------------------------------

def test_manifest_run_id_cannot_leave_the_output_folder(tmp_path):
    out = tmp_path / "a" / "b"
    out.mkdir(parents=True)
    expanded = contactlab("sweep", "expand", write_sweep(tmp_path))
    line = expanded.stdout.splitlines()[0]
    for run_id in ["../../x", str(tmp_path / "abs")]:
        manifest = tmp_path / "manifest.jsonl"
        import json
        entry = json.loads(line)
        entry["run_id"] = run_id
        manifest.write_text(json.dumps(entry) + "\n")
        assert_input_error(contactlab("run", "--manifest", manifest, "--index", 0, "--out-dir", out),
                           "not 12 lowercase hex digits")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["manifest.jsonl", "tiny.toml"]


def test_planted_links_in_the_output_folder_are_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "runs"
    sweep = write_sweep(tmp_path, mu=(0.0,))
    expanded = contactlab("sweep", "expand", sweep).stdout.splitlines()[0]
    import json
    run_id = json.loads(expanded)["run_id"]
    (out / "logs").mkdir(parents=True)
    (out / "logs" / f"0_{run_id}.log").symlink_to(victim)
    (out / "results.csv").symlink_to(victim)
    (out / "manifest.jsonl.partial").symlink_to(victim)
    (out / f"{run_id}.h5.partial").symlink_to(victim)
    result = contactlab("sweep", "run", sweep, "-j", "1", "--out-dir", out)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "keep me\n"
    assert not (out / "results.csv").is_symlink() and (out / f"{run_id}.h5").is_file()


# ---- clobbering by run --out ---------------------------------------------------------------

def test_out_never_replaces_what_is_not_a_run_file(tmp_path):
    scene = tmp_path / "scene.toml"
    scene.write_text("mu = 0.3\n")
    assert_input_error(contactlab("run", *QUICK, "-c", scene, "-o", scene, "-q"), str(scene), "not an HDF5 file")
    assert scene.read_text() == "mu = 0.3\n"
    assert_input_error(contactlab("run", *QUICK, "-o", "/dev/null", "-q"), "/dev/null", "a device")
    assert Path("/dev/null").is_char_device()
    # A sidecar the run did not write stays; an earlier run file is replaced.
    xdmf = tmp_path / "run.xdmf"
    xdmf.write_text("<Xdmf>someone else's</Xdmf>\n")
    for _ in range(2):
        assert contactlab("run", *QUICK, "-o", tmp_path / "run.h5", "-q").returncode == 0
    assert xdmf.read_text() == "<Xdmf>someone else's</Xdmf>\n"


# ---- errors found before the simulation ----------------------------------------------------

@pytest.mark.parametrize("target, fragment", [
    ("{tmp}", "must name a file, not a folder"),          # trailing slash below
    ("{tmp}/dir", "it is a folder"),
    ("{tmp}/" + "x" * 300 + ".h5", "name is too long"),
    ("{tmp}/file/run.h5", "it is a file"),
])
def test_unusable_output_fails_before_the_simulation(tmp_path, target, fragment):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    out = target.format(tmp=tmp_path) + ("/" if target == "{tmp}" else "")
    # A long run: were the output checked only at the end, this would take minutes. The
    # configuration echo on stdout comes after every check, so an empty stdout shows that
    # nothing was built or run.
    result = contactlab("run", "ball_on_slope", "-f", "sap", "--set", "duration=100", "-o", out, timeout=60)
    assert_input_error(result, fragment)
    assert result.stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_fails_before_the_simulation(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    result = contactlab("run", "ball_on_slope", "-f", "sap", "--set", "duration=100", "-o", folder / "r.h5", timeout=60)
    assert_input_error(result, "Permission denied")


def test_full_disk_is_one_line_without_a_crash_or_leftovers(tmp_path):
    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20 * 1024, 20 * 1024))

    out = tmp_path / "r.h5"
    result = subprocess.run([BIN, "run", *QUICK, "--set", "output.snapshot_every=1", "-o", str(out), "-q"],
                            capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size)
    assert_input_error(result, "r.h5.partial", "File too large")
    assert sorted(os.listdir(tmp_path)) == []
    # The same for the tables collect (and sweeps) write: an error, and no partial file.
    runs = tmp_path / "runs"
    assert contactlab("run", *QUICK, "-o", runs / "r.h5", "-q").returncode == 0
    table = tmp_path / "t.csv"
    collect = subprocess.run([BIN, "collect", str(runs), "-o", str(table)], capture_output=True, text=True,
                             timeout=60, preexec_fn=lambda: (signal.signal(signal.SIGXFSZ, signal.SIG_IGN),
                                                             resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))))
    assert_input_error(collect, "t.csv.partial", "File too large")
    assert sorted(os.listdir(tmp_path)) == ["runs"]
    assert_input_error(contactlab("collect", runs, "-o", str(tmp_path) + "/"), "must name a file")
    assert_input_error(contactlab("collect", runs, "-o", runs), "it is a folder")
    assert sorted(os.listdir(tmp_path)) == ["runs"]


# ---- durations and sizes -------------------------------------------------------------------

@pytest.mark.parametrize("settings, fragments", [
    (["duration=0.025", "dt=0.01"], ["'duration' = 0.025 s is not a whole number of steps", "use 0.02 or 0.03"]),
    (["duration=0.024", "dt=0.01"], ["not a whole number of steps"]),
    (["duration=0.005", "dt=0.01"], ["'dt' = 0.01 s is longer than key 'duration'"]),
    (["duration=1", "dt=1e-15"], ["more than a run can take"]),
    (["duration=1e308"], ["more than a run can take"]),
    (["radius=1e308"], ["radius = 1e+308", "cannot be built"]),
    (["grid_spacing=1e-5"], ["grid_spacing = 1e-05"]),
])
def test_durations_and_sizes_are_input_errors_naming_the_keys(tmp_path, settings, fragments):
    args = [arg for setting in settings for arg in ("--set", setting)]
    out = tmp_path / "r.h5"
    assert_input_error(contactlab("run", "ball_on_slope", "-f", "sap", *args, "-o", out, "-q"), *fragments)
    assert not out.exists() and not Path(str(out) + ".partial").exists()


def test_durations_of_a_sweep_are_checked_when_expanded(tmp_path):
    sweep = write_sweep(tmp_path, extra="")
    sweep.write_text(sweep.read_text().replace("duration = 0.02", "duration = 0.025"))
    result = contactlab("sweep", "expand", sweep)
    assert "will fail: key 'duration' = 0.025 s is not a whole number of steps" in result.stderr


# ---- special files as inputs ---------------------------------------------------------------

@pytest.mark.parametrize("config, fragment", [
    ("/dev/zero", "it is a device"), ("/dev/urandom", "it is a device"), ("{tmp}", "it is a folder"),
    ("{tmp}/fifo", "it is a FIFO"), ("{tmp}/missing.toml", "No such file or directory"),
])
def test_special_files_are_not_configurations(tmp_path, config, fragment):
    os.mkfifo(tmp_path / "fifo")
    path = config.format(tmp=tmp_path)
    assert_input_error(contactlab("run", *QUICK, "-c", path, "-o", tmp_path / "r.h5", timeout=20), path, fragment)
    assert_input_error(contactlab("sweep", "expand", path, timeout=20), path, fragment)
    assert_input_error(contactlab("run", "--manifest", path, "--index", 0, "--out-dir", tmp_path / "o", timeout=20),
                       path, fragment)


# ---- concurrency and signals ---------------------------------------------------------------

def test_a_sweep_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    with open(out / ".contactlab.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("12345\n")
        lock.flush()
        line = assert_input_error(contactlab("sweep", "run", write_sweep(tmp_path), "--out-dir", out),
                                  "another contactlab process (pid 12345)")
        assert str(out) in line
    assert not (out / "manifest.jsonl").exists()


def _children(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_sigterm_stops_the_sweep_and_its_running_children(tmp_path):
    out = tmp_path / "runs"
    sweep = write_sweep(tmp_path, mu=(0.0,))
    sweep.write_text(sweep.read_text().replace("duration = 0.02", "duration = 100.0"))
    process = subprocess.Popen([BIN, "sweep", "run", str(sweep), "-j", "1", "--out-dir", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    children = []
    while not children and time.monotonic() < deadline:
        time.sleep(0.2)
        children = _children(process.pid)
    assert children, "the sweep started no run"
    while not list(out.glob("*.h5.partial")) and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by signal 15" in stderr
    for child in children:
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    # The run it stopped wrote a checkpoint first (a sweep's runs have --checkpoint-on-signal),
    # and neither a run file nor a partial one.
    left = sorted(path.name for path in out.glob("*.h5*"))
    assert len(left) == 1 and left[0].endswith(".h5.checkpoint"), sorted(os.listdir(out))


def test_sigint_stops_a_run_without_leaving_a_partial_file(tmp_path):
    out = tmp_path / "r.h5"
    process = subprocess.Popen([BIN, "run", "ball_on_slope", "-f", "sap", "--set", "duration=100", "-o", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not Path(str(out) + ".partial").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGINT, stderr
    assert not out.exists() and not Path(str(out) + ".partial").exists()


# ---- messages ------------------------------------------------------------------------------

def test_build_time_rejections_print_only_the_error(tmp_path):
    result = contactlab("run", "incline_block", "-f", "sap", "--set", "settle_time=5", "--set", "duration=1",
                        "-o", tmp_path / "r.h5")
    assert_input_error(result, "key 'settle_time' must be shorter than 'duration'")
    assert result.stdout == ""


def test_values_with_newlines_give_one_line(tmp_path):
    assert_input_error(contactlab("run", *QUICK, "--set", "mu=0.3\nrm -rf /", "-o", tmp_path / "r.h5"),
                       "'0.3\\nrm -rf /'")


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
    sweep = write_sweep(tmp_path, mu=(0.0,))
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
    sweep = write_sweep(tmp_path, mu=(0.0,), duration=0.04)
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
    sweep = write_sweep(tmp_path, mu=(0.0,))
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
    sweep = write_sweep(tmp_path, mu=(0.0, 0.1))
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
    sweep = write_sweep(tmp_path, mu=(0.0,))
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
    sweep = write_sweep(tmp_path, mu=(0.0,))
    result = contactlab("sweep", "slurm", sweep, "--out-dir", tmp_path / "runs", option, f"x{byte}#SBATCH --uid=0")
    assert_input_error(result, option)
    assert not (tmp_path / "runs" / "sweep.slurm").exists()


def test_a_description_must_be_text(tmp_path):
    sweep = write_sweep(tmp_path, mu=(0.0,), header="description = { a = 1 }\n")
    assert_input_error(contactlab("sweep", "expand", sweep), "'description'")


def test_an_environment_value_cannot_split_the_sweep_header(tmp_path):
    sweep = write_sweep(tmp_path, mu=(0.0,))
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
    for i in range(1, 600):  # enough files that collect is still reading when a reader is found
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
