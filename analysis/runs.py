"""Reading contactlab run files (schema "contactlab-run/1", one HDF5 file per run).

A :class:`Run` reads the root attributes, ``/params``, ``/config`` and ``/summary`` when it
is opened and reads time series on demand; it holds no open HDF5 handle, so thousands of
runs can be loaded at once.

Decoding: string attributes (fixed- or variable-length) become ``str``; numpy scalars become
Python ``int``/``float``; int8 values (the schema's storage for bools) become ``bool``.
"""

from pathlib import Path

import h5py
import numpy as np

__all__ = ["SCHEMA", "NotARunError", "Run", "open_run", "load_runs"]

SCHEMA = "contactlab-run/1"
ROOT_ATTRIBUTES = ("schema", "run_id", "scenario", "formulation", "git_commit", "compiler",
                   "started_utc", "status", "message")
UNIT_SUFFIX = ".unit"


class NotARunError(ValueError):
    """The file is not a contactlab run file (or not one this reader understands)."""


def _decode(value):
    """HDF5 attribute or scalar dataset value -> str, bool, int, float or numpy array."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape in ((), (1,)):
        return _decode(value.reshape(())[()])
    if isinstance(value, np.int8):
        return bool(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _attributes(node):
    return {key: _decode(node.attrs[key]) for key in node.attrs}


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
            root = _attributes(f)
            schema = root.get("schema")
            if schema is None:
                raise NotARunError(f"{path}: not a contactlab run (no 'schema' attribute)")
            if schema != SCHEMA:
                raise NotARunError(f"{path}: schema {schema!r} is not {SCHEMA!r}")
            missing = [key for key in ROOT_ATTRIBUTES if key not in root]
            if missing:
                raise NotARunError(f"{path}: malformed contactlab run, root attribute(s) "
                                   f"missing: {', '.join(missing)}")
            raw = _attributes(f["params"]) if "params" in f else {}
            units = {key[:-len(UNIT_SUFFIX)]: value for key, value in raw.items()
                     if key.endswith(UNIT_SUFFIX) and key[:-len(UNIT_SUFFIX)] in raw}
            params = {key: value for key, value in raw.items()
                      if not (key.endswith(UNIT_SUFFIX) and key[:-len(UNIT_SUFFIX)] in raw)}
            config_text = _decode(f["config"][()]) if "config" in f else ""
            summary = _attributes(f["summary"]) if "summary" in f else {}
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
            return sorted(f[group]) if group in f else []

    def _read(self, group, name):
        with h5py.File(self.path, "r") as f:
            if name not in f.get(group, {}):
                available = ", ".join(sorted(f[group])) if group in f else "none"
                raise KeyError(f"{self.path}: no /{group}/{name} (available: {available})")
            node = f[group][name]
            return node["time"][()], node["value"][()], _attributes(node)

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
            if "solver_log" not in f:
                return {}
            log = {}
            for key, dataset in f["solver_log"].items():
                if not isinstance(dataset, h5py.Dataset):
                    continue  # e.g. the per-iteration group, see iteration_log()
                values = dataset[()]
                log[key] = values.astype(bool) if values.dtype == np.int8 else values
            return log

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
            table = {}
            for key, dataset in group.items():
                values = dataset[()]
                if values.dtype.kind == "O":
                    values = np.array([_decode(v) for v in values], dtype=object)
                table[key] = values
            for column, names in (("kind", "kind_names"), ("termination", "termination_names")):
                if column in table and names in group.attrs:
                    members = _decode(group.attrs[names]).split(",")
                    table[column] = np.array([members[int(k)] for k in table[column]], dtype=object)
            if "converged" in table:
                table["converged"] = table["converged"].astype(bool)
            return table

    def iteration_log(self):
        """Per-iteration solver records (/solver_log/iterations): dict of (K,) arrays with
        time, kind, solve, iteration, residual, threshold, cost, step,
        line_search_evaluations and linear_iterations ({} when not logged)."""
        with h5py.File(self.path, "r") as f:
            if "solver_log/iterations" not in f:
                return {}
            return {key: dataset[()] for key, dataset in f["solver_log/iterations"].items()}

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
