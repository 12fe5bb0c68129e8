"""Reading contactlab run files (schema "contactlab-run/1", one HDF5 file per run).

A :class:`Run` reads the root attributes, ``/params``, ``/config`` and ``/summary`` when it
is opened and reads time series on demand; it holds no open HDF5 handle, so thousands of
runs can be loaded at once.

Decoding: string attributes (fixed- or variable-length) become ``str``; numpy scalars become
Python ``int``/``float``; int8 values (the schema's storage for bools) become ``bool``.

Checking: an HDF5 header can declare any shape in a few bytes (a chunked dataset of 2^40 rows
with nothing written is a valid file), and numpy allocates what it declares before reading.
So every dataset and attribute is checked against what the schema says it is (its rank, the
fixed lengths of its columns, its type) and against MAX_DATASET_BYTES or MAX_ATTRIBUTE_BYTES
before it is read (:func:`read_dataset`); one that fails raises :class:`RunDataError` naming
the file and the object.
"""

import sys
from math import prod
from pathlib import Path

import h5py
import numpy as np

__all__ = ["SCHEMA", "NotARunError", "RunDataError", "Run", "open_run", "load_runs", "read_dataset",
           "read_attributes", "read_columns",
           "exit_on_bad_input", "MAX_DATASET_BYTES", "MAX_ATTRIBUTE_BYTES"]

SCHEMA = "contactlab-run/1"
ROOT_ATTRIBUTES = ("schema", "run_id", "scenario", "formulation", "git_commit", "compiler",
                   "started_utc", "status", "message")
UNIT_SUFFIX = ".unit"

# The most one dataset of a run file may declare [bytes]: 4 GiB. The largest arrays contactlab
# writes are a snapshot's per-particle fields, 72 bytes a particle for deformation_gradient
# (0.7 GB at 10^7 particles); a declared size beyond 4 GiB is a damaged or crafted header.
MAX_DATASET_BYTES = 4 << 30
# The most one attribute may declare [bytes]: 64 MiB, the longest text contactlab's own reader
# of run files (contactlab collect) accepts; attributes hold scalars, names and short vectors.
MAX_ATTRIBUTE_BYTES = 64 << 20
# numpy dtype kinds: numbers (bool, signed, unsigned, float) and text (variable-length
# strings read as objects, fixed-length byte strings).
NUMBERS = "biuf"
TEXT = "OS"


class NotARunError(ValueError):
    """The file is not a contactlab run file (or not one this reader understands)."""


class RunDataError(NotARunError):
    """A dataset or attribute of a run file is not what the schema says (its shape, type or
    declared size); the message names the file and the object."""


def _shape_text(shape):
    return " x ".join(map(str, shape)) if shape else "scalar"


def _byte_text(count):
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def _check_declared(path, where, shape, dtype, shapes, kinds, limit, noun="dataset"):
    """Raise RunDataError unless ``shape`` matches one of ``shapes`` (None: any length),
    ``dtype`` has one of the numpy ``kinds`` and the declared size is within ``limit``."""
    if shape is None:  # an HDF5 null dataspace
        raise RunDataError(f"{path}: {where}: holds no data (null dataspace)")
    if not any(len(shape) == len(expected) and all(e is None or e == n for e, n in zip(expected, shape))
               for expected in shapes):
        wanted = " or ".join(_shape_text(["N" if e is None else e for e in expected]) for expected in shapes)
        raise RunDataError(f"{path}: {where}: shape {_shape_text(shape)}, expected {wanted}")
    if dtype.kind not in kinds:
        wanted = {NUMBERS: "numbers", TEXT: "text"}.get(kinds, "numbers or text")
        raise RunDataError(f"{path}: {where}: type {dtype}, expected {wanted}")
    declared = prod(shape) * dtype.itemsize
    if declared > limit:
        raise RunDataError(f"{path}: {where}: declares {_shape_text(shape)} {dtype} ({_byte_text(declared)}), "
                           f"more than the {_byte_text(limit)} a run file's {noun} may hold")


def read_dataset(path, group, name, shapes=((None,),), kinds=NUMBERS):
    """The data of dataset ``group[name]`` of run file ``path``, read only after its header
    matched: one of ``shapes`` (tuples of lengths, None for any), one of numpy's dtype
    ``kinds``, and at most MAX_DATASET_BYTES. Raises RunDataError naming the file and the
    dataset otherwise, or when the data cannot be read."""
    where = f"{group.name.rstrip('/')}/{name}"
    node = group.get(name)
    if node is None:
        raise RunDataError(f"{path}: {where}: missing")
    if not isinstance(node, h5py.Dataset):
        raise RunDataError(f"{path}: {where}: not a dataset")
    _check_declared(path, where, node.shape, node.dtype, shapes, kinds, MAX_DATASET_BYTES)
    try:
        return node[()]
    except (OSError, ValueError, TypeError) as error:
        raise RunDataError(f"{path}: {where}: unreadable ({' '.join(str(error).split())})") from None


def read_attributes(path, node, decode=True):
    """Every attribute of ``node`` (a group or dataset of run file ``path``), each checked
    against MAX_ATTRIBUTE_BYTES before it is read; decoded (see above) unless ``decode`` is
    false, then as h5py reads it."""
    values = {}
    for key in node.attrs:
        where = f"{node.name.rstrip('/')}/@{key}"
        try:
            attribute = node.attrs.get_id(key)
            shape, dtype = attribute.shape, attribute.dtype
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise RunDataError(f"{path}: {where}: unreadable ({' '.join(str(error).split())})") from None
        if shape is not None:  # a null dataspace (h5py.Empty) holds nothing to allocate
            _check_declared(path, where, shape, dtype, (shape,), NUMBERS + TEXT, MAX_ATTRIBUTE_BYTES,
                            "attribute")
        try:
            values[key] = _decode(node.attrs[key]) if decode else node.attrs[key]
        except (OSError, ValueError, TypeError, UnicodeDecodeError) as error:
            raise RunDataError(f"{path}: {where}: unreadable ({' '.join(str(error).split())})") from None
    return values


def read_columns(path, group, text=()):
    """The datasets of ``group`` of run file ``path`` (groups beside them are skipped):
    {name: (N,) array} with one N for all, numbers except the ``text`` columns; every header
    is checked before any column is read."""
    datasets = {key: node for key, node in group.items() if isinstance(node, h5py.Dataset)}
    rows = {}
    for key, node in datasets.items():
        _check_declared(path, node.name, node.shape, node.dtype, ((None,),), TEXT if key in text else NUMBERS,
                        MAX_DATASET_BYTES)
        rows.setdefault(node.shape[0], key)
    if len(rows) > 1:
        (n, first), (m, second) = sorted(rows.items())[:2]
        raise RunDataError(f"{path}: {group.name}: columns of different lengths ({first} has {n} rows, "
                           f"{second} has {m})")
    return {key: read_dataset(path, group, key, ((None,),), TEXT if key in text else NUMBERS) for key in datasets}


def exit_on_bad_input(program, error):
    """Report a bad input file the way contactlab does: one line on stderr (``program:`` and
    the message, newlines folded), exit status 2."""
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    print(f"{program}: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def _decode(value):
    """HDF5 attribute or scalar dataset value -> str, bool, int, float or numpy array."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8", errors="replace")  # a damaged text shows, not raises
    if isinstance(value, np.ndarray) and value.shape in ((), (1,)):
        return _decode(value.reshape(())[()])
    if isinstance(value, np.int8):
        return bool(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


class Run:
    """One contactlab run file. Open with :meth:`Run.open` or :func:`open_run`."""

    def __init__(self, path, root, params, units, config_text, summary):
        self.path = Path(path)
        self._root = root
        self.params = params
        self._units = units
        self.config_text = config_text
        self.summary = summary

    @classmethod
    def open(cls, path):
        """Read a run file; raises :class:`NotARunError` (naming the file) for anything else."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        try:
            handle = h5py.File(path, "r")
        except OSError as error:
            raise NotARunError(f"{path}: not a contactlab run (not an HDF5 file: {error})") from None
        with handle as f:
            root = read_attributes(path, f)
            schema = root.get("schema")
            if schema is None:
                raise NotARunError(f"{path}: not a contactlab run (no 'schema' attribute)")
            if schema != SCHEMA:
                raise NotARunError(f"{path}: schema {schema!r} is not {SCHEMA!r}")
            missing = [key for key in ROOT_ATTRIBUTES if key not in root]
            if missing:
                raise NotARunError(f"{path}: malformed contactlab run, root attribute(s) "
                                   f"missing: {', '.join(missing)}")
            raw = read_attributes(path, f["params"]) if "params" in f else {}
            units = {key[:-len(UNIT_SUFFIX)]: value for key, value in raw.items()
                     if key.endswith(UNIT_SUFFIX) and key[:-len(UNIT_SUFFIX)] in raw}
            params = {key: value for key, value in raw.items()
                      if not (key.endswith(UNIT_SUFFIX) and key[:-len(UNIT_SUFFIX)] in raw)}
            config_text = _decode(read_dataset(path, f, "config", ((),), TEXT)) if "config" in f else ""
            summary = read_attributes(path, f["summary"]) if "summary" in f else {}
        return cls(path, root, params, units, config_text, summary)

    # Root attributes.
    schema = property(lambda self: self._root["schema"])
    run_id = property(lambda self: self._root["run_id"])
    scenario = property(lambda self: self._root["scenario"])
    formulation = property(lambda self: self._root["formulation"])
    git_commit = property(lambda self: self._root["git_commit"])
    compiler = property(lambda self: self._root["compiler"])
    started_utc = property(lambda self: self._root["started_utc"])
    status = property(lambda self: self._root["status"])
    message = property(lambda self: self._root["message"])

    @property
    def ok(self):
        """True when the run's status is "ok" (not "diverged" or "failed")."""
        return self.status == "ok"

    @property
    def attributes(self):
        """All root attributes as a dict."""
        return dict(self._root)

    def param_unit(self, key):
        """Unit string of parameter ``key`` ("s", "m", "1"), None when it has none.

        Raises KeyError when the run has no parameter ``key``.
        """
        if key not in self.params:
            raise KeyError(f"{self.path}: no parameter {key!r}")
        return self._units.get(key)

    # Time series, read on demand.
    def _group_names(self, group):
        with h5py.File(self.path, "r") as f:
            return sorted(f[group]) if isinstance(f.get(group), h5py.Group) else []

    def _read(self, group, name):
        """(time, value, attributes) of /group/name: time (N,) and value (N,) or (N, k)
        numbers, checked before they are read."""
        with h5py.File(self.path, "r") as f:
            parent = f.get(group)
            if not isinstance(parent, h5py.Group) or name not in parent:
                available = ", ".join(sorted(parent)) if isinstance(parent, h5py.Group) else "none"
                raise KeyError(f"{self.path}: no /{group}/{name} (available: {available})")
            node = parent[name]
            if not isinstance(node, h5py.Group):
                raise RunDataError(f"{self.path}: {node.name}: not a group of time and value")
            time = read_dataset(self.path, node, "time")
            # One row per time: the row count is checked before the values are read.
            value = read_dataset(self.path, node, "value", ((len(time),), (len(time), None)))
            return time, value, read_attributes(self.path, node)

    def series_names(self):
        """Names of the recorded observables under /timeseries, sorted."""
        return self._group_names("timeseries")

    def analytic_names(self):
        """Names of the reference solutions under /analytic, sorted."""
        return self._group_names("analytic")

    def series(self, name):
        """(time [s], value) arrays of /timeseries/``name``; KeyError when absent."""
        time, value, _ = self._read("timeseries", name)
        return time, value

    def analytic(self, name):
        """(time [s], value) arrays of /analytic/``name``.

        Raises KeyError when the run has no reference solution of that name (not every
        observable has one); check :meth:`analytic_names` first where absence is expected.
        """
        time, value, _ = self._read("analytic", name)
        return time, value

    def series_info(self, name, group="timeseries"):
        """Attributes of a series: ``unit``, ``description`` and ``columns`` (list, [] when k=1)."""
        _, _, attrs = self._read(group, name)
        columns = attrs.get("columns", "")
        attrs["columns"] = [c.strip() for c in columns.split(",")] if columns else []
        return attrs

    def solver_log(self):
        """Per-step solver statistics: dict of (N,) arrays ({} when the run has none).

        ``converged`` (int8 on disk) is returned as a bool array.
        """
        with h5py.File(self.path, "r") as f:
            group = f.get("solver_log")
            if not isinstance(group, h5py.Group):
                return {}
            # The per-iteration and per-solve groups beside the columns: iteration_log(), solves().
            log = read_columns(self.path, group)
            return {key: values.astype(bool) if values.dtype == np.int8 else values for key, values in log.items()}

    def solves(self):
        """Every solve of every step (/solver_log/solves, the shared solver-summary shape):
        dict of (S,) arrays with time, kind and termination as names (str), index, solver,
        message, converged (bool), iterations, line_search_evaluations, linear_iterations,
        residual (final residual / threshold), momentum_residual_bound (kg m/s, what the final
        residual can leave unbalanced), cost and seconds_total / _linear_solve / _line_search
        ({} for files without the table)."""
        with h5py.File(self.path, "r") as f:
            group = f.get("solver_log/solves")
            if not isinstance(group, h5py.Group):
                return {}
            table = read_columns(self.path, group, text=("solver", "message"))
            for key, values in table.items():
                if values.dtype.kind in TEXT:
                    table[key] = np.array([_decode(v) for v in values], dtype=object)
            attributes = read_attributes(self.path, group)
            for column, names in (("kind", "kind_names"), ("termination", "termination_names")):
                if column in table and names in attributes:
                    members = str(attributes[names]).split(",")
                    codes = table[column]
                    if len(codes) and not (np.all(codes >= 0) and np.all(codes < len(members))):
                        raise RunDataError(f"{self.path}: {group.name}/{column}: a code outside "
                                           f"0..{len(members) - 1} ({names})")
                    table[column] = np.array([members[int(k)] for k in codes], dtype=object)
            if "converged" in table:
                table["converged"] = table["converged"].astype(bool)
            return table

    def iteration_log(self):
        """Per-iteration solver records (/solver_log/iterations): dict of (K,) arrays with
        time, kind, solve, iteration, residual, threshold, cost, step,
        line_search_evaluations and linear_iterations ({} when not logged)."""
        with h5py.File(self.path, "r") as f:
            group = f.get("solver_log/iterations")
            if not isinstance(group, h5py.Group):
                return {}
            return read_columns(self.path, group)

    def __repr__(self):
        mu = f", mu={self.params['mu']}" if "mu" in self.params else ""
        return (f"Run({self.scenario}/{self.formulation}{mu}, status={self.status}, "
                f"path='{self.path}')")


def open_run(path):
    """Same as :meth:`Run.open`."""
    return Run.open(path)


def _sort_key(run):
    mu = run.params.get("mu")
    mu_key = (0, float(mu)) if isinstance(mu, (int, float)) else (1, 0.0)
    return (run.scenario, run.formulation, mu_key, run.run_id, str(run.path))


def load_runs(directory_or_paths):
    """Runs from a directory (every ``*.h5`` below it), one file, or a list of either.

    Returned sorted by (scenario, formulation, mu, run_id). Files still being written end
    in ``.h5.partial`` and are not picked up. A ``.h5`` file that is not a run raises
    :class:`NotARunError`.
    """
    if isinstance(directory_or_paths, (str, Path)):
        directory_or_paths = [directory_or_paths]
    files = []
    for entry in map(Path, directory_or_paths):
        if entry.is_dir():
            files.extend(sorted(entry.rglob("*.h5")))
        elif entry.exists():
            files.append(entry)
        else:
            raise FileNotFoundError(f"{entry}: no such file or directory")
    return sorted((Run.open(path) for path in files), key=_sort_key)
