"""Particle snapshots through the real executable: /snapshots and /bodies in the run file,
the XDMF sidecar (every DataItem names an existing dataset of exactly its Dimensions), bad
input, and rendering with analysis.render (PNG frames, GIF, errors, box and cylinder bodies).
"""

import math
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import h5py
import matplotlib.image
import numpy as np
import pytest
from PIL import Image

from analysis import render
from conftest import write_run

REPO_ROOT = Path(__file__).resolve().parents[2]
BALL = ["run", "ball_on_slope", "-f", "sap", "-c", str(REPO_ROOT / "data/scenes/ball_on_slope.toml"),
        "--set", "duration=0.05", "--quiet"]  # dt = 0.01 s: 5 steps, about 0.5 s
FIELDS = "velocity,deformation_gradient,plastic_strain"


def run_contactlab(binary, arguments, timeout=120):
    return subprocess.run([binary, *map(str, arguments)], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT)


@pytest.fixture(scope="module")
def ball_run(contactlab_bin, tmp_path_factory):
    """ball_on_slope with snapshots every 2 of 5 steps and every optional field."""
    out = tmp_path_factory.mktemp("snapshots") / "ball.h5"
    result = run_contactlab(contactlab_bin, BALL + ["--set", "output.snapshot_every=2", "--set",
                                                    f"output.snapshot_fields={FIELDS}", "--out", out])
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def plain_run(contactlab_bin, tmp_path_factory):
    """The same run without snapshots."""
    out = tmp_path_factory.mktemp("plain") / "plain.h5"
    result = run_contactlab(contactlab_bin, BALL + ["--out", out])
    assert result.returncode == 0, result.stderr
    return out


def test_snapshots_at_step_zero_every_k_and_the_last_step(ball_run):
    with h5py.File(ball_run, "r") as f:
        group = f["snapshots"]
        keys = sorted(group, key=int)
        assert keys == ["0", "1", "2", "3"] and group.attrs["count"] == 4
        steps = [int(group[k].attrs["step"]) for k in keys]
        times = [float(group[k].attrs["time"]) for k in keys]
        assert steps == [0, 2, 4, 5]  # 5 is no multiple of 2: the last step is added
        assert times == pytest.approx([0.0, 0.02, 0.04, 0.05], abs=1e-12)
        n = f["summary"].attrs["particles"]
        bodies = f["bodies"].attrs["count"]
        for key in keys:
            snapshot = group[key]
            assert snapshot["position"].shape == (n, 3)
            assert snapshot["velocity"].shape == (n, 3)
            assert snapshot["deformation_gradient"].shape == (n, 9)
            assert snapshot["plastic_strain"].shape == (n,)
            assert snapshot["body_position"].shape == (bodies, 3)
            assert snapshot["body_orientation"].shape == (bodies, 4)
            assert all(snapshot[name].dtype == np.float64 for name in snapshot)
        # The ball falls: positions change; F starts at I and the stiff elastic ball barely
        # changes volume; it has no plasticity.
        first, last = group["0/position"][()], group["3/position"][()]
        assert np.all(last[:, 2] < first[:, 2])
        assert np.all(group["0/deformation_gradient"][()] == np.eye(3).ravel())
        volume_ratio = np.linalg.det(group["3/deformation_gradient"][()].reshape(-1, 3, 3))
        assert np.all(np.abs(volume_ratio - 1.0) < 0.05)
        assert np.all(group["3/plastic_strain"][()] == 0.0)
        assert np.allclose(np.linalg.norm(group["3/body_orientation"][()], axis=1), 1.0)
        # Released at rest, the ball moves down the slope: velocities grow from zero.
        assert np.all(group["0/velocity"][()] == 0.0)
        assert np.all(np.linalg.norm(group["3/velocity"][()], axis=1) > 0.0)


def test_bodies_describe_every_geometry(ball_run):
    with h5py.File(ball_run, "r") as f:
        slope = f["bodies/0"]
        assert slope.attrs["name"] == "slope" and slope.attrs["motion"] == "static"
        geometry = slope["0"]
        assert geometry.attrs["shape"] == "box"
        assert geometry.attrs["half_extents"].shape == (3,)
        assert geometry.attrs["orientation"].shape == (4,)
        assert geometry.attrs["position"].shape == (3,)


def _dimensions(item):
    return tuple(int(d) for d in item.get("Dimensions").split())


def test_xdmf_sidecar_matches_the_h5_file(ball_run):
    xdmf = ball_run.with_suffix(".xdmf")
    assert xdmf.is_file() and not xdmf.with_name(xdmf.name + ".partial").exists()
    root = ElementTree.parse(xdmf).getroot()  # valid XML
    assert root.tag == "Xdmf"
    temporal = root.find("Domain/Grid")
    assert (temporal.get("GridType"), temporal.get("CollectionType")) == ("Collection", "Temporal")
    steps = temporal.findall("Grid")
    with h5py.File(ball_run, "r") as f:
        assert len(steps) == f["snapshots"].attrs["count"]
        times = [float(step.find("Time").get("Value")) for step in steps]
        assert all(b > a for a, b in zip(times, times[1:]))
        assert times == [float(f["snapshots"][str(k)].attrs["time"]) for k in range(len(steps))]
        items = root.iter("DataItem")
        checked = 0
        for item in items:
            file_name, path = item.text.strip().split(":", 1)
            assert file_name == ball_run.name  # relative to the xdmf file
            assert path in f, path
            assert f[path].shape == _dimensions(item), path
            number_type = "Int" if path.startswith("/xdmf/") else "Float"
            assert (item.get("Format"), item.get("NumberType"), item.get("Precision")) == (
                "HDF", number_type, "8")
            assert f[path].dtype == (np.int64 if number_type == "Int" else np.float64)
            checked += 1
        # Per step: particles (connectivity, position, 3 fields), bodies (connectivity,
        # position, orientation).
        assert checked == len(steps) * (5 + 3)
        n = f["summary"].attrs["particles"]
        assert np.array_equal(f[f"xdmf/polyvertex_{n}"][()], np.arange(n))
    for grid in root.iter("Grid"):
        topology = grid.find("Topology")
        if topology is None:
            continue
        assert topology.get("TopologyType") == "Polyvertex"
        points = _dimensions(grid.find("Geometry/DataItem"))
        assert grid.find("Geometry").get("GeometryType") == "XYZ" and points[1] == 3
        assert int(topology.get("NumberOfElements")) == points[0]
        assert _dimensions(topology.find("DataItem")) == (points[0],)
        for attribute in grid.findall("Attribute"):
            assert _dimensions(attribute.find("DataItem"))[0] == points[0]


def test_no_snapshots_means_no_group_and_no_sidecar(plain_run):
    assert not plain_run.with_suffix(".xdmf").exists()
    with h5py.File(plain_run, "r") as f:
        assert "snapshots" not in f
        assert f["params"].attrs["output.snapshot_every"] == 0
        assert "bodies" in f


def test_unknown_snapshot_field_is_bad_input(contactlab_bin, tmp_path):
    out = tmp_path / "bad.h5"
    result = run_contactlab(contactlab_bin, BALL + ["--set", "output.snapshot_every=1", "--set",
                                                    "output.snapshot_fields=velocity,bogus", "--out", out])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "output.snapshot_fields" in lines[0] and "'bogus'" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_negative_snapshot_interval_is_bad_input(contactlab_bin, tmp_path):
    result = run_contactlab(contactlab_bin, BALL + ["--set", "output.snapshot_every=-1", "--out",
                                                    tmp_path / "bad.h5"])
    assert result.returncode == 2 and "output.snapshot_every" in result.stderr
    assert list(tmp_path.iterdir()) == []


# Rendering.
def test_render_writes_frames_and_a_gif(ball_run, tmp_path):
    gif = tmp_path / "ball.gif"
    frames = render.render(ball_run, tmp_path / "frames", gif=gif, every=2, dpi=50)
    assert [p.name for p in frames] == ["frame_0000.png", "frame_0001.png"]  # snapshots 0 and 2
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["frame_0000.png", "frame_0001.png"]
    width, height = (round(s * 50) for s in render.FIGSIZE)
    for frame in frames:
        assert frame.stat().st_size > 0
        assert matplotlib.image.imread(frame).shape[:2] == (height, width)
    with Image.open(gif) as image:
        assert image.n_frames == 2 and image.size == (width, height)


def test_render_default_directory_and_script_entry_point(ball_run, tmp_path):
    run = tmp_path / "copy.h5"
    run.write_bytes(ball_run.read_bytes())
    result = subprocess.run([sys.executable, str(REPO_ROOT / "analysis/render.py"), str(run),
                             "--color", "plastic_strain", "--view", "xy", "--every", "3"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    frames = sorted((tmp_path / "copy_frames").iterdir())
    assert [p.name for p in frames] == ["frame_0000.png", "frame_0001.png"]  # ceil(4 / 3)


def test_render_errors_are_one_line(plain_run, tmp_path):
    not_a_run = tmp_path / "text.h5"
    not_a_run.write_text("hello")
    for path, expected in ((plain_run, "output.snapshot_every"), (not_a_run, "not a contactlab run")):
        result = subprocess.run([sys.executable, "-m", "analysis.render", str(path), "--out-dir",
                                 str(tmp_path / "frames")], capture_output=True, text=True,
                                timeout=120, cwd=REPO_ROOT)
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.stderr
    assert not (tmp_path / "frames").exists() or not any((tmp_path / "frames").iterdir())


def test_render_rejects_a_colour_field_that_was_not_written(contactlab_bin, tmp_path):
    out = tmp_path / "positions_only.h5"
    result = run_contactlab(contactlab_bin, BALL + ["--set", "output.snapshot_every=5", "--out", out])
    assert result.returncode == 0, result.stderr
    with pytest.raises(render.RenderError, match="output.snapshot_fields=velocity"):
        render.render(out, tmp_path / "frames", color="speed")
    assert len(render.render(out, tmp_path / "frames")) == 2  # auto colour: none


def test_box_and_cylinder_scene_renders(contactlab_bin, tmp_path):
    """dough_rolling: a box table and a cylindrical pin (articulated), 2 steps."""
    out = tmp_path / "dough.h5"
    result = run_contactlab(contactlab_bin, [
        "run", "dough_rolling", "-f", "hybrid_impulse", "--set", "duration=0.02", "--set",
        "output.snapshot_every=1", "--set", "output.snapshot_fields=plastic_strain", "--quiet", "--out", out])
    assert result.returncode == 0, result.stderr
    with h5py.File(out, "r") as f:
        shapes = {f["bodies"][b][g].attrs["shape"] for b in f["bodies"] for g in f["bodies"][b]}
        assert {"box", "cylinder"} <= shapes
        assert f["snapshots"].attrs["count"] == 3
    frames = render.render(out, tmp_path / "frames", view="yz", color="plastic_strain", dpi=40)
    assert len(frames) == 3 and all(p.stat().st_size > 0 for p in frames)


# Rendering damaged or crafted run files (no executable needed).
def write_snapshot_run(path):
    """A synthetic run (conftest.write_run) with the layout of experiments/snapshots.h: a
    ground half-space and a box, and three snapshots of 40 particles with velocities."""
    write_run(path)
    rng = np.random.default_rng(0)
    with h5py.File(path, "r+") as f:
        bodies = f.create_group("bodies")
        bodies.attrs["count"] = 2
        for i, (name, motion, geometry) in enumerate((
                ("ground", "static", {"shape": "half_space"}),
                ("box", "free", {"shape": "box", "half_extents": np.array([0.1, 0.1, 0.1])}))):
            body = bodies.create_group(str(i))
            body.attrs["name"], body.attrs["motion"] = name, motion
            shape = body.create_group("0")
            for key, value in {**geometry, "position": np.zeros(3), "orientation": IDENTITY}.items():
                shape.attrs[key] = value
        snapshots = f.create_group("snapshots")
        snapshots.attrs["count"] = 3
        for k in range(3):
            snapshot = snapshots.create_group(str(k))
            snapshot.attrs["time"], snapshot.attrs["step"] = 0.01 * k, k
            snapshot.create_dataset("position", data=rng.random((40, 3)))
            snapshot.create_dataset("velocity", data=rng.random((40, 3)))
            snapshot.create_dataset("body_position", data=[[0.0, 0.0, 0.0], [0.5, 0.5, 0.5 - 0.1 * k]])
            snapshot.create_dataset("body_orientation", data=[IDENTITY, IDENTITY])
    return path


def _replace(f, name, **dataset):
    del f[name]
    f.create_dataset(name, **dataset)


# (what is wrong, how to make it so, the dataset or attribute the error names)
CRAFTED_SNAPSHOTS = {
    # A chunked dataset declares 2^40 rows in a few bytes of header and holds nothing.
    "2^40 rows": (lambda f: _replace(f, "snapshots/2/position", shape=(2 ** 40, 3), maxshape=(None, 3),
                                     chunks=(1024, 3), dtype="f8"), "/snapshots/2/position"),
    "wrong rank": (lambda f: _replace(f, "snapshots/1/position", data=np.zeros((40, 3, 1))),
                   "/snapshots/1/position"),
    "text for numbers": (lambda f: _replace(f, "snapshots/1/velocity", data=np.full((40, 3), b"fast")),
                         "/snapshots/1/velocity: type |S4"),
    "velocity rows differ from positions": (lambda f: _replace(f, "snapshots/2/velocity", data=np.zeros((39, 3))),
                                            "/snapshots/2/velocity"),
    "negative snapshot count": (lambda f: f["snapshots"].attrs.modify("count", -1), "/snapshots"),
    "one body pose too many": (lambda f: _replace(f, "snapshots/0/body_position", data=np.zeros((3, 3))),
                               "/snapshots/0/body_position"),
    "a box without half extents": (lambda f: f["bodies/1/0"].attrs.__delitem__("half_extents"), "/bodies/1/0"),
}


def _render_cli(run, out_dir, gif):
    return subprocess.run([sys.executable, "-m", "analysis.render", str(run), "--out-dir", str(out_dir),
                           "--gif", str(gif), "--dpi", "30"],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)


def test_render_of_the_synthetic_snapshot_run(tmp_path):
    """The file the crafted cases start from renders, and leaves only its frames and GIF."""
    run = write_snapshot_run(tmp_path / "run.h5")
    result = _render_cli(run, tmp_path / "out" / "frames", tmp_path / "run.gif")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "frames").iterdir()) == [f"frame_000{k}.png" for k in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run.gif", "run.h5"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["frames"]


@pytest.mark.parametrize("case", CRAFTED_SNAPSHOTS)
def test_render_refuses_a_crafted_run_in_one_line(tmp_path, case):
    craft, where = CRAFTED_SNAPSHOTS[case]
    run = write_snapshot_run(tmp_path / "run.h5")
    with h5py.File(run, "r+") as f:
        craft(f)
    result = _render_cli(run, tmp_path / "out" / "frames", tmp_path / "run.gif")
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"render: {run}: {where}"), lines[0]
    # Nothing written: no frame folder, no GIF, no hidden partial files beside either.
    assert [p.name for p in tmp_path.iterdir()] == ["run.h5"]


# Geometry of the outlines (no executable needed).
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])  # quaternion (w, x, y, z)

def _quaternion(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def test_box_outline_is_the_hull_of_its_rotated_corners():
    box = {"shape": "box", "half_extents": np.array([1.0, 2.0, 0.5]), "position": np.zeros(3),
           "orientation": _quaternion([0, 1, 0], math.pi / 2)}
    kind, hull = render.shape_outline(box, np.array([10.0, 0.0, 0.0]), np.array([1.0, 0, 0, 0]), "xz")
    assert kind == "polygon" and len(hull) == 4
    # Rotated 90° about y: x half-extent 0.5, z half-extent 1.
    assert np.allclose(hull.min(0), [9.5, -1.0]) and np.allclose(hull.max(0), [10.5, 1.0])


def test_cylinder_sphere_and_half_space_outlines():
    cylinder = {"shape": "cylinder", "radius": np.float64(0.5), "half_height": np.float64(2.0),
                "position": np.array([0.0, 0.0, 1.0]), "orientation": np.array([1.0, 0, 0, 0])}
    kind, hull = render.shape_outline(cylinder, np.zeros(3), _quaternion([1, 0, 0], math.pi / 2), "yz")
    # The body turns the geometry's axis (and its offset) from z to -y.
    assert kind == "polygon"
    assert np.allclose(hull.min(0), [-3.0, -0.5], atol=1e-3)
    assert np.allclose(hull.max(0), [1.0, 0.5], atol=1e-3)
    sphere = {"shape": "sphere", "radius": np.float64(0.3), "position": np.zeros(3),
              "orientation": np.array([1.0, 0, 0, 0])}
    kind, centre, radius = render.shape_outline(sphere, np.array([1.0, 2.0, 3.0]), IDENTITY, "xy")
    assert kind == "circle" and np.allclose(centre, [1, 2]) and radius == 0.3
    ground = {"shape": "half_space", "position": np.zeros(3),
              "orientation": _quaternion([0, 1, 0], math.pi / 4)}
    kind, normal, point = render.shape_outline(ground, np.zeros(3), np.array([1.0, 0, 0, 0]), "xz")
    assert kind == "half_space"
    region = render.half_space_region(normal, point, "xz", 0.0, ((-1.0, 1.0), (-1.0, 1.0)))
    # Normal (1, 0, 1)/√2: the region below the line x + z = 0, half of the square.
    assert np.all(region @ normal[[0, 2]] <= 1e-12) and len(region) == 3
    assert render.half_space_region(np.array([0.0, 0.0, 1.0]), np.zeros(3), "xy", 0.0,
                                    ((-1.0, 1.0), (-1.0, 1.0))) is None
    torus = {"shape": "torus", "position": np.zeros(3), "orientation": IDENTITY}
    assert render.shape_outline(torus, np.array([1.0, 2.0, 3.0]), IDENTITY, "xz")[0] == "marker"


PARAVIEW_CHECK = """
import sys
from paraview import servermanager
from paraview.simple import XDMFReader, Xdmf3ReaderS
for name, reader in (("xdmf2", XDMFReader(FileNames=[sys.argv[1]])),
                     ("xdmf3", Xdmf3ReaderS(FileName=sys.argv[1]))):
    reader.UpdatePipelineInformation()
    for time in reader.TimestepValues:
        reader.UpdatePipeline(time)
        blocks = servermanager.Fetch(reader).NewIterator()
        blocks.InitTraversal()
        while not blocks.IsDoneWithTraversal():
            grid = blocks.GetCurrentDataObject()
            arrays = sorted(grid.GetPointData().GetArrayName(i)
                            for i in range(grid.GetPointData().GetNumberOfArrays()))
            print("grid", name, time, grid.GetNumberOfPoints(), grid.GetNumberOfCells(),
                  ",".join(arrays))
            blocks.GoToNextItem()
"""


def test_paraview_reads_the_sidecar(ball_run, tmp_path):
    """ParaView's own XDMF readers (only where pvbatch is installed, e.g. Debian's paraview
    and python3-paraview): every time step, vertex cells for every point, every field."""
    import shutil
    pvbatch = shutil.which("pvbatch")
    if pvbatch is None:
        pytest.skip("pvbatch (ParaView) is not installed")
    script = tmp_path / "check.py"
    script.write_text(PARAVIEW_CHECK)
    result = subprocess.run([pvbatch, str(script), str(ball_run.with_suffix(".xdmf"))],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("grid ")]
    with h5py.File(ball_run, "r") as f:
        n, count = int(f["summary"].attrs["particles"]), int(f["snapshots"].attrs["count"])
    assert len(rows) == 2 * count * 2  # two readers, every snapshot, particles and bodies
    particles = [row for row in rows if row[2] == str(n)]
    assert len(particles) == 2 * count
    assert all(row[3] == str(n) and row[4] == "deformation_gradient,plastic_strain,velocity"
               for row in particles)
    bodies = [row for row in rows if row[2] != str(n)]
    assert all(row[2] == row[3] == "1" and row[4] == "orientation_wxyz" for row in bodies)
