"""Render a run's particle snapshots and rigid bodies as PNG frames (and an animated GIF).

    python3 -m analysis.render RUN.h5 [--out-dir DIR] [--gif FILE.gif] [--view xz|xy|yz]
                               [--every N] [--color auto|speed|plastic_strain|none] [--dpi DPI]
    python3 analysis/render.py RUN.h5 ...

The run must have been written with ``--set output.snapshot_every=K``; ``--color speed``
needs ``--set output.snapshot_fields=velocity`` and ``--color plastic_strain`` needs
``plastic_strain`` there (``auto``, the default, colours by speed when velocities were
written). Frames ``frame_0000.png``, ... (every N-th snapshot) go to ``<stem>_frames/``
next to the run unless ``--out-dir`` is given: the particles projected onto the chosen plane,
equal aspect, axis limits fixed over the whole run (particles and moving bodies), and the
rigid geometries from ``/bodies`` at each snapshot's body poses: box -> outline of its
projected corners, sphere -> circle, cylinder -> outline of its projected rims, half-space
-> its cut through the particles' mean depth (shaded), anything else -> a marker at the
body centre.

Every snapshot dataset and body attribute is checked against its layout (and the size limits
of analysis.runs) before it is read, so a damaged or crafted file ends with one line naming
the file and the dataset and exit status 2. The frames are drawn into a hidden folder beside
the frame directory and moved in only when all of them are written, the GIF under a hidden
name beside its own; a run that fails leaves neither behind.
"""

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the analysis package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import h5py  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.animation import PillowWriter  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Circle, Polygon  # noqa: E402

from analysis.runs import (NotARunError, RunDataError, exit_on_bad_input, open_run,  # noqa: E402
                           read_attributes, read_dataset)

VIEWS = {"xz": (0, 2), "xy": (0, 1), "yz": (1, 2)}  # (horizontal, vertical) world axes
AXIS_NAMES = "xyz"
FIGSIZE = (8.0, 6.0)  # [in]; a frame is FIGSIZE * dpi pixels
COLOR_FIELDS = {"speed": ("velocity", "speed [m/s]"),
                "plastic_strain": ("plastic_strain", "plastic strain ‖ln V^P‖ [-]")}
RIM_SAMPLES = 48
BODY_STYLE = dict(facecolor="0.55", edgecolor="0.15", alpha=0.6, linewidth=1.0)


class RenderError(Exception):
    """A run that cannot be rendered; the message is one line."""


# Reading.
GEOMETRY_VECTORS = {"position": 3, "orientation": 4, "half_extents": 3}  # attribute: length
GEOMETRY_SCALARS = ("radius", "half_height")
# The attributes each shape needs to be drawn (others are drawn as a marker at the body).
SHAPE_ATTRIBUTES = {"box": ("half_extents",), "sphere": ("radius",), "cylinder": ("radius", "half_height"),
                    "half_space": ()}


def _numbered_groups(path, f, name):
    """The member names of group /name, ordered by their integer value; each must be a group
    named by a non-negative integer, and the group's ``count`` attribute (when written) must
    say how many there are."""
    group = f[name]
    if not isinstance(group, h5py.Group):
        raise RunDataError(f"{path}: /{name}: not a group")
    keys = list(group)
    bad = next((key for key in keys
                if not (key.isascii() and key.isdigit()) or not isinstance(group[key], h5py.Group)), None)
    if bad is not None:
        raise RunDataError(f"{path}: /{name}/{bad}: not a group named by its index")
    count = read_attributes(path, group).get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count != len(keys)):
        raise RunDataError(f"{path}: /{name}: count attribute {count!r}, but {len(keys)} groups")
    return sorted(keys, key=int)


def snapshot_keys(f, path="run"):
    """Names of the /snapshots/<k> groups, ordered by k ([] without /snapshots)."""
    return _numbered_groups(path, f, "snapshots") if "snapshots" in f else []


def _geometry(path, node):
    """One geometry's attributes: shape (str), the vectors as float arrays of their length
    and the scalars as floats; RunDataError naming the attribute otherwise."""
    attributes = read_attributes(path, node)
    geometry = {"shape": str(attributes.get("shape", ""))}
    for key, length in GEOMETRY_VECTORS.items():
        if key in attributes:
            value = np.asarray(attributes[key])
            if value.shape != (length,) or value.dtype.kind not in "iuf":
                raise RunDataError(f"{path}: {node.name}/@{key}: expected {length} numbers, got {value!r}")
            geometry[key] = value.astype(float)
    for key in GEOMETRY_SCALARS:
        if key in attributes:
            value = attributes[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise RunDataError(f"{path}: {node.name}/@{key}: expected a number, got {value!r}")
            geometry[key] = float(value)
    missing = [key for key in SHAPE_ATTRIBUTES.get(geometry["shape"], ()) if key not in geometry]
    if missing and "position" in geometry and "orientation" in geometry:
        raise RunDataError(f"{path}: {node.name}: a {geometry['shape']} without {', '.join(missing)}")
    return geometry


def read_bodies(f, path="run"):
    """/bodies as a list of {name, motion, geometries: [dict of the geometry's attributes]}."""
    if "bodies" not in f:
        return []
    bodies = []
    for i in _numbered_groups(path, f, "bodies"):
        group = f["bodies"][i]
        attributes = read_attributes(path, group)
        geometries = [_geometry(path, group[j]) for j in _numbered_groups(path, f, f"bodies/{i}")]
        bodies.append({"name": str(attributes.get("name", i)), "motion": str(attributes.get("motion", "")),
                       "geometries": geometries})
    return bodies


def read_snapshot(path, f, key, color, bodies):
    """One snapshot, every dataset checked before it is read: {time, step, position (N, 3),
    values (per-particle colour values, or None for ``none``), poses [(position, orientation)
    per body]}."""
    snapshot = f["snapshots"][key]
    attributes = read_attributes(path, snapshot)
    for name in ("time", "step"):
        value = attributes.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise RunDataError(f"{path}: {snapshot.name}/@{name}: expected a number, got {value!r}")
    position = read_dataset(path, snapshot, "position", ((None, 3),))
    n = len(position)
    values = None
    if color != "none":
        field = COLOR_FIELDS[color][0]
        values = read_dataset(path, snapshot, field, ((n, 3),) if color == "speed" else ((n,),))
        values = np.linalg.norm(values, axis=1) if color == "speed" else values
    # One row per body of /bodies (any count when the file describes none).
    b = len(bodies) if bodies else None
    body_position = read_dataset(path, snapshot, "body_position", ((b, 3),))
    body_orientation = read_dataset(path, snapshot, "body_orientation", ((len(body_position), 4),))
    return {"time": float(attributes["time"]), "step": int(attributes["step"]), "position": position,
            "values": values, "poses": list(zip(body_position, body_orientation))}


# Geometry.
def rotation(q):
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def convex_hull(points):
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain)."""
    points = sorted(map(tuple, np.round(points, 12)))
    if len(points) <= 2:
        return np.array(points)

    def half(sequence):
        chain = []
        for p in sequence:
            while len(chain) >= 2 and ((chain[-1][0] - chain[-2][0]) * (p[1] - chain[-2][1])
                                       - (chain[-1][1] - chain[-2][1]) * (p[0] - chain[-2][0])) <= 0:
                chain.pop()
            chain.append(p)
        return chain[:-1]
    return np.array(half(points) + half(reversed(points)))


def clip_half_plane(polygon, normal, offset):
    """The part of a convex polygon where normal · p <= offset (Sutherland-Hodgman); vertices
    within round-off of the line count as on it."""
    tolerance = 1e-12 * (1.0 + abs(offset) + np.abs(polygon).max())
    result = []
    for a, b in zip(polygon, np.roll(polygon, -1, axis=0)):
        da, db = normal @ a - offset, normal @ b - offset
        if da <= tolerance:
            result.append(a)
        if (da < -tolerance and db > tolerance) or (da > tolerance and db < -tolerance):
            result.append(a + (b - a) * da / (da - db))
    return np.array(result)


def local_points(geometry):
    """Points in the geometry frame whose projected hull outlines a box or cylinder."""
    if geometry["shape"] == "box":
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return signs * geometry["half_extents"]
    angle = np.linspace(0.0, 2.0 * np.pi, RIM_SAMPLES, endpoint=False)
    rim = np.stack([geometry["radius"] * np.cos(angle), geometry["radius"] * np.sin(angle),
                    np.zeros_like(angle)], axis=1)
    height = np.array([0.0, 0.0, float(geometry["half_height"])])
    return np.concatenate([rim + height, rim - height])


def geometry_world_pose(geometry, body_position, body_orientation):
    """World position and rotation of a geometry frame given its body's pose."""
    body_rotation = rotation(body_orientation)
    return (body_position + body_rotation @ geometry["position"],
            body_rotation @ rotation(geometry["orientation"]))


def shape_outline(geometry, body_position, body_orientation, view):
    """("polygon", points), ("circle", centre, radius), ("half_space", normal, point) (both
    3-D, world) or ("marker", centre) for one geometry at one body pose."""
    axes = list(VIEWS[view])
    if "position" not in geometry or "orientation" not in geometry:
        return ("marker", np.asarray(body_position)[axes])
    origin, frame = geometry_world_pose(geometry, body_position, body_orientation)
    shape = geometry.get("shape")
    if shape == "sphere":
        return ("circle", origin[axes], float(geometry["radius"]))
    if shape in ("box", "cylinder"):
        world = origin + local_points(geometry) @ frame.T
        return ("polygon", convex_hull(world[:, axes]))
    if shape == "half_space":
        return ("half_space", frame[:, 2], origin)
    return ("marker", origin[axes])


def half_space_region(normal, point, view, depth, limits):
    """The view rectangle clipped to the half-space's cut at ``depth``; None when the cut is
    parallel to the view plane."""
    axes = list(VIEWS[view])
    depth_axis = 3 - sum(axes)
    in_plane = normal[axes]
    if np.linalg.norm(in_plane) < 1e-9:
        return None
    offset = normal @ point - normal[depth_axis] * depth
    (x0, x1), (y0, y1) = limits
    rectangle = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
    region = clip_half_plane(rectangle, in_plane, offset)
    return region if len(region) >= 3 else None


# Frames.
def scan(path, f, keys, bodies, view, color):
    """Axis limits over every selected frame, the particles' mean depth and the colour range;
    reads (and so checks) every selected snapshot."""
    axes = list(VIEWS[view])
    low, high = np.full(2, np.inf), np.full(2, -np.inf)
    depth_sum, depth_count, color_max = 0.0, 0, 0.0
    static_low, static_high = np.full(2, np.inf), np.full(2, -np.inf)
    for key in keys:
        snapshot = read_snapshot(path, f, key, color, bodies)
        position = snapshot["position"]
        finite = position[np.all(np.isfinite(position), axis=1)]
        if len(finite):
            low, high = np.minimum(low, finite[:, axes].min(0)), np.maximum(high, finite[:, axes].max(0))
            depth_sum += finite[:, 3 - sum(axes)].sum()
            depth_count += len(finite)
        values = snapshot["values"]
        if values is not None and np.isfinite(values).any():
            color_max = max(color_max, float(values[np.isfinite(values)].max()))
        for body, pose in zip(bodies, snapshot["poses"]):
            for geometry in body["geometries"]:
                extent = outline_extent(shape_outline(geometry, *pose, view))
                if extent is None:
                    continue
                if body["motion"] == "static":
                    static_low = np.minimum(static_low, extent[0])
                    static_high = np.maximum(static_high, extent[1])
                else:
                    low, high = np.minimum(low, extent[0]), np.maximum(high, extent[1])
    if not np.all(np.isfinite([low, high])):
        low, high = static_low, static_high
    if not np.all(np.isfinite([low, high])):
        low, high = np.full(2, -1.0), np.full(2, 1.0)
    pad = 0.1 * max(float(np.max(high - low)), 1e-3)
    limits = tuple((lo - pad, hi + pad) for lo, hi in zip(low, high))
    depth = depth_sum / depth_count if depth_count else 0.0
    return limits, depth, color_max


def outline_extent(outline):
    """(low, high) of a bounded outline in the view plane, None for unbounded or markers."""
    kind = outline[0]
    if kind == "polygon" and len(outline[1]):
        return outline[1].min(0), outline[1].max(0)
    if kind == "circle":
        return outline[1] - outline[2], outline[1] + outline[2]
    return None


def draw_bodies(ax, bodies, poses, view, depth, limits):
    """Draw every body geometry at its pose onto ``ax``."""
    for body, pose in zip(bodies, poses):
        for geometry in body["geometries"]:
            outline = shape_outline(geometry, *pose, view)
            if outline[0] == "polygon":
                ax.add_patch(Polygon(outline[1], closed=True, zorder=1, **BODY_STYLE))
            elif outline[0] == "circle":
                ax.add_patch(Circle(outline[1], outline[2], zorder=1, **BODY_STYLE))
            elif outline[0] == "half_space":
                region = half_space_region(outline[1], outline[2], view, depth, limits)
                if region is not None:
                    ax.add_patch(Polygon(region, closed=True, zorder=0, **BODY_STYLE))
            else:
                ax.plot(*outline[1], marker="x", color="0.15", zorder=3)


def particle_size(ax, fig, spacing, limits):
    """Scatter marker area [pt²] that makes a particle about ``spacing`` metres wide."""
    fig.canvas.draw()
    width_px = ax.get_window_extent().width
    points_per_metre = width_px / (limits[0][1] - limits[0][0]) * 72.0 / fig.dpi
    return float(np.clip((spacing * points_per_metre) ** 2, 0.05, 400.0))


def particle_spacing(run, limits, count):
    """Typical particle spacing [m]: from grid_spacing and particles_per_cell when recorded."""
    h, ppc = run.params.get("grid_spacing"), run.params.get("particles_per_cell")
    if isinstance(h, (int, float)) and isinstance(ppc, (int, float)) and h > 0 and ppc > 0:
        return h / ppc ** (1.0 / 3.0)
    area = (limits[0][1] - limits[0][0]) * (limits[1][1] - limits[1][0])
    return float(np.sqrt(area / max(count, 1))) * 0.5


def render(path, out_dir=None, gif=None, view="xz", every=1, color="auto", dpi=100, fps=10):
    """Write the frames (and the GIF); returns the list of PNG paths."""
    run = open_run(path)
    path = Path(path)
    out_dir = Path(out_dir) if out_dir else path.with_name(f"{path.stem}_frames")
    gif = Path(gif) if gif else None
    if gif is not None and not gif.parent.is_dir():
        raise RenderError(f"--gif {gif}: no folder {gif.parent}")
    with h5py.File(path, "r") as f:
        keys = snapshot_keys(f, path)
        if not keys:
            raise RenderError(f"{path}: no snapshots (run with --set output.snapshot_every=K)")
        keys = keys[::every]
        color = _resolve_color(f, keys, color)
        bodies = read_bodies(f, path)
        # Every selected snapshot is read and checked here, before anything is written.
        limits, depth, color_max = scan(path, f, keys, bodies, view, color)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".partial", dir=out_dir.parent))
        gif_partial = None
        try:
            if gif is not None:
                handle, name = tempfile.mkstemp(prefix=f".{gif.stem}.", suffix=gif.suffix or ".gif", dir=gif.parent)
                os.close(handle)
                gif_partial = Path(name)
            names = _draw_frames(path, f, run, keys, bodies, view, color, limits, depth, color_max, dpi, fps,
                                 staging, gif_partial)
            out_dir.mkdir(parents=True, exist_ok=True)
            for name in names:
                os.replace(staging / name, out_dir / name)
            if gif_partial is not None:
                os.replace(gif_partial, gif)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            if gif_partial is not None and gif_partial.exists():
                gif_partial.unlink()
    return [out_dir / name for name in names]


def _draw_frames(path, f, run, keys, bodies, view, color, limits, depth, color_max, dpi, fps, folder, gif):
    """Draw frame_0000.png, ... of the snapshots ``keys`` into ``folder`` (and the GIF into
    ``gif``); returns the frame names."""
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=dpi)
    try:
        mappable = None
        if color != "none":
            mappable = ScalarMappable(Normalize(0.0, color_max if color_max > 0 else 1.0), "viridis")
            fig.colorbar(mappable, ax=ax, label=COLOR_FIELDS[color][1], shrink=0.8)
        _prepare_axes(ax, view, limits)
        count = f["snapshots"][keys[0]]["position"].shape[0]  # checked by scan
        size = particle_size(ax, fig, particle_spacing(run, limits, count), limits)
        writer = PillowWriter(fps=fps) if gif else None
        if writer:
            writer.setup(fig, gif, dpi=dpi)
        names = []
        for index, key in enumerate(keys):
            snapshot = read_snapshot(path, f, key, color, bodies)
            ax.cla()
            _prepare_axes(ax, view, limits)
            draw_bodies(ax, bodies, snapshot["poses"], view, depth, limits)
            position, values = snapshot["position"], snapshot["values"]
            ax.scatter(position[:, VIEWS[view][0]], position[:, VIEWS[view][1]], s=size, linewidths=0,
                       c=values if values is not None else "C0",
                       cmap=mappable.cmap if mappable else None, norm=mappable.norm if mappable else None,
                       zorder=2)
            ax.set_title(f"{run.scenario} / {run.formulation}    t = {snapshot['time']:.4f} s "
                         f"(step {snapshot['step']})", fontsize=10)
            name = f"frame_{index:04d}.png"
            fig.savefig(folder / name, dpi=dpi)
            names.append(name)
            if writer:
                writer.grab_frame()
        if writer:
            writer.finish()
        return names
    finally:
        plt.close(fig)


def _resolve_color(f, keys, color):
    """``auto`` -> speed when velocities were written, else none; a missing field is an error."""
    first = f["snapshots"][keys[0]]
    if color == "auto":
        return "speed" if "velocity" in first else "none"
    if color != "none" and COLOR_FIELDS[color][0] not in first:
        field = COLOR_FIELDS[color][0]
        raise RenderError(f"--color {color}: the snapshots have no {field} "
                          f"(run with --set output.snapshot_fields={field})")
    return color


def _prepare_axes(ax, view, limits):
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(f"{AXIS_NAMES[VIEWS[view][0]]} [m]")
    ax.set_ylabel(f"{AXIS_NAMES[VIEWS[view][1]]} [m]")
    ax.grid(alpha=0.2)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.render",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("run", metavar="RUN.h5", help="a run file with /snapshots")
    parser.add_argument("--out-dir", metavar="DIR", help="frame directory (default: <stem>_frames/)")
    parser.add_argument("--gif", metavar="FILE.gif", help="also write an animated GIF")
    parser.add_argument("--view", choices=sorted(VIEWS), default="xz", help="projection plane")
    parser.add_argument("--every", type=int, default=1, metavar="N", help="render every N-th snapshot")
    parser.add_argument("--color", choices=("auto", "speed", "plastic_strain", "none"), default="auto")
    parser.add_argument("--dpi", type=int, default=100, help="frame resolution (frames are 8 x 6 in)")
    parser.add_argument("--fps", type=float, default=10.0, help="GIF frames per second")
    args = parser.parse_args(argv)
    if args.every < 1 or args.dpi < 1 or args.fps <= 0:
        parser.error("--every, --dpi and --fps must be positive")
    try:
        frames = render(args.run, args.out_dir, args.gif, args.view, args.every, args.color, args.dpi,
                        args.fps)
    except (NotARunError, RenderError, OSError) as error:
        exit_on_bad_input("render", error)
    print(f"render: {len(frames)} frames in {frames[0].parent}" + (f", {args.gif}" if args.gif else ""))


if __name__ == "__main__":
    main()
