"""Reading the table of a parameter sweep (``contactlab collect DIR > results.csv``).

    from analysis.sweeps import load_results, swept_keys

    table = load_results("results/sweeps/ball_on_slope")      # or .../results.csv
    len(table)                     # number of runs (rows), as for a pandas DataFrame
    table.columns                  # column names in file order
    swept_keys(table)              # ['mu', 'dt', 'quasi_newton.substeps']
    table["dt"]                    # numpy float64 array (NaN where the field is empty)
    table["status"]                # numpy object array of str ('ok', 'diverged', ...)
    sap = table.where(formulation="sap", status="ok")
    rolling = table.where({"quasi_newton.substeps": 20}, mu=[0.3, 0.6])  # list = any of
    coarse = table[table["dt"] > 0.005]                          # boolean mask
    for row in sap.rows(): print(row["run_id"], row["max_rel_error_velocity"])
    frame = table.to_pandas()      # only when pandas is installed

The CSV (RFC 4180, header row) has the columns ``run_id, index, sweep, scenario,
formulation, <swept keys in manifest order>, status, message, steps, wall_s, <every other
/summary attribute, sorted>``; status is one of ok, diverged, failed, missing. A summary
attribute whose name collides with a swept key or a fixed column is prefixed
``summary.``: :func:`summary_column` finds either spelling.

Column types: a column is float64 when every non-empty field parses as a number ("nan",
"inf" included), with NaN for the empty fields; otherwise it is an object array of str, with
"" for the empty fields. The identifying columns (run_id, sweep, scenario, formulation,
status, message) are always str, so a run_id made of digits stays text.
"""

import csv
import math
import re
from pathlib import Path

import numpy as np

__all__ = ["TEXT_COLUMNS", "STATUSES", "MissingColumnError", "ResultsTable", "load_results",
           "swept_keys", "summary_column"]

RESULTS_NAME = "results.csv"
TEXT_COLUMNS = ("run_id", "sweep", "scenario", "formulation", "status", "message")
STATUSES = ("ok", "diverged", "failed", "missing")
SUMMARY_PREFIX = "summary."

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)",
                     re.IGNORECASE)


class MissingColumnError(KeyError):
    """A column the caller needs is not in the table; ``str()`` gives a one-line message."""

    def __str__(self):
        return self.args[0] if self.args else "missing column"


def _is_number(text):
    return _NUMBER.fullmatch(text.strip()) is not None


def _column_array(name, values):
    """Fields of one column -> float64 array (all non-empty numeric) or object array of str."""
    if name not in TEXT_COLUMNS and all(_is_number(v) for v in values if v.strip() != ""):
        return np.array([float(v) if v.strip() != "" else math.nan for v in values],
                        dtype=np.float64)
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


class ResultsTable:
    """Columns of a sweep's results, each a numpy array of one entry per run.

    Behaves like a read-only dict of column name -> array in file order (``table[name]``,
    ``name in table``, ``keys()``, ``items()``, iteration over the names), except that
    ``len(table)`` is the number of rows, as for a pandas DataFrame. ``table[mask]`` with a
    boolean array (or a list of row indices) is the table of the selected rows, and
    ``table[["formulation", "dt"]]`` the table of those columns.
    """

    def __init__(self, columns, source=None):
        self._columns = {str(name): np.asarray(values) for name, values in columns.items()}
        lengths = {len(values) for values in self._columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of unequal length: {sorted(lengths)}")
        self._rows = lengths.pop() if lengths else 0
        self.source = source

    # dict-like access -----------------------------------------------------------------
    @property
    def columns(self):
        """Column names, in file order."""
        return list(self._columns)

    def keys(self):
        return self._columns.keys()

    def values(self):
        return self._columns.values()

    def items(self):
        return self._columns.items()

    def get(self, name, default=None):
        return self._columns.get(name, default)

    def __iter__(self):
        return iter(self._columns)

    def __contains__(self, name):
        return name in self._columns

    def __len__(self):
        return self._rows

    def __getitem__(self, key):
        if isinstance(key, (list, tuple)) and key and all(isinstance(k, str) for k in key):
            return ResultsTable({name: self[name] for name in key}, self.source)
        if isinstance(key, str):
            if key not in self._columns:
                where = f"{self.source}: " if self.source else ""
                raise MissingColumnError(f"{where}no column {key!r} (columns: "
                                         f"{', '.join(self._columns) or 'none'})")
            return self._columns[key]
        return self._select(key)

    def __repr__(self):
        source = f", source='{self.source}'" if self.source else ""
        return f"ResultsTable({self._rows} rows, columns={self.columns}{source})"

    # rows -----------------------------------------------------------------------------
    def _select(self, selection):
        selection = np.asarray(selection)
        if selection.dtype == bool:
            if selection.shape != (self._rows,):
                raise ValueError(f"boolean mask of shape {selection.shape} for a table of "
                                 f"{self._rows} rows")
        elif selection.size and not np.issubdtype(selection.dtype, np.integer):
            raise TypeError("select rows with a column name, a boolean mask or row indices")
        else:
            selection = selection.astype(np.intp)
        return ResultsTable({name: values[selection] for name, values in self._columns.items()},
                            self.source)

    def require(self, *names, needed_for=None):
        """Raise :class:`MissingColumnError` naming the first of ``names`` that is absent."""
        for name in names:
            if name not in self._columns:
                where = f"{self.source}: " if self.source else ""
                purpose = f" (needed for {needed_for})" if needed_for else ""
                raise MissingColumnError(f"{where}no column {name!r}{purpose}")
        return self

    def mask(self, criteria=None, **equals):
        """Boolean mask of the rows matching every criterion (see :meth:`where`)."""
        criteria = dict(criteria or {})
        criteria.update(equals)
        keep = np.ones(self._rows, dtype=bool)
        for name, wanted in criteria.items():
            column = self[name]
            choices = (list(wanted) if isinstance(wanted, (list, tuple, set, frozenset, np.ndarray))
                       else [wanted])
            matches = np.zeros(self._rows, dtype=bool)
            for choice in choices:
                if column.dtype == np.float64:
                    if isinstance(choice, str):
                        choice = float(choice) if _is_number(choice) else None
                    if choice is None:
                        continue
                    choice = float(choice)
                    matches |= np.isnan(column) if math.isnan(choice) else column == choice
                else:
                    matches |= column == str(choice)
            keep &= matches
        return keep

    def where(self, criteria=None, **equals):
        """Rows whose columns equal the given values; a list/tuple/set value means "any of".

        ``criteria`` is a boolean mask or a dict (for names that are not identifiers, such as
        ``"quasi_newton.substeps"``); keyword arguments add more. Numeric columns compare as
        float (``nan`` matches the empty fields), text columns as str.
        """
        if criteria is not None and not isinstance(criteria, dict):
            base = np.asarray(criteria)
            if base.dtype != bool or base.shape != (self._rows,):
                raise ValueError("where(): the positional argument must be a dict or a boolean "
                                 f"mask of {self._rows} entries")
            return self._select(base & self.mask(**equals))
        return self._select(self.mask(criteria, **equals))

    def rows(self):
        """Iterate over the rows as dicts of Python values (float or str)."""
        for i in range(self._rows):
            yield {name: values[i].item() if isinstance(values[i], np.generic) else values[i]
                   for name, values in self._columns.items()}

    def unique(self, name):
        """Distinct values of a column in order of first appearance (NaN counted once)."""
        seen, result = set(), []
        for value in self[name]:
            key = "nan" if isinstance(value, float) and math.isnan(value) else value
            if key not in seen:
                seen.add(key)
                result.append(value.item() if isinstance(value, np.generic) else value)
        return result

    def to_pandas(self):
        """The table as a pandas DataFrame (same column order); needs pandas installed."""
        try:
            import pandas
        except ImportError:
            raise ImportError("ResultsTable.to_pandas() needs pandas, which is not installed "
                              "(Debian: apt-get install python3-pandas; or pip install "
                              "pandas); the table's columns are numpy arrays and work "
                              "without it") from None
        return pandas.DataFrame({name: values for name, values in self._columns.items()},
                                columns=self.columns)


def _results_file(path):
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return path


def load_results(path):
    """Read a sweep's results CSV (or the ``results.csv`` in directory ``path``).

    Raises FileNotFoundError when there is no such file and ValueError (naming the file and
    line) for a file that is not such a table (no header, rows of the wrong length).
    """
    path = _results_file(path)
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, strict=True)
        try:
            header = next(reader, None)
            if not header:
                raise ValueError(f"{path}: empty file, expected a header row")
            duplicates = sorted({name for name in header if header.count(name) > 1})
            if duplicates:
                raise ValueError(f"{path}: duplicate column(s) {', '.join(duplicates)}")
            rows = []
            for row in reader:
                if not row or row == [""] and len(header) > 1:
                    continue  # blank line
                if len(row) != len(header):
                    raise ValueError(f"{path}, line {reader.line_num}: {len(row)} fields, the "
                                     f"header has {len(header)}")
                rows.append(row)
        except csv.Error as error:
            raise ValueError(f"{path}, line {reader.line_num}: {error}") from None
    columns = {name: _column_array(name, [row[i] for row in rows])
               for i, name in enumerate(header)}
    return ResultsTable(columns, source=str(path))


def swept_keys(table):
    """The swept parameter columns: those between ``formulation`` and ``status``."""
    names = list(table.columns if hasattr(table, "columns") else table)
    for fixed in ("formulation", "status"):
        if fixed not in names:
            raise MissingColumnError(f"no column {fixed!r}: not a contactlab results table")
    start, stop = names.index("formulation") + 1, names.index("status")
    return names[start:stop]


def summary_column(table, name):
    """The /summary attribute ``name``: the column ``summary.<name>`` when the name collided
    with a swept key or fixed column, else ``name``. Raises MissingColumnError if neither."""
    if SUMMARY_PREFIX + name in table:
        return table[SUMMARY_PREFIX + name]
    if name in table and name not in swept_keys(table):
        return table[name]
    where = f"{table.source}: " if getattr(table, "source", None) else ""
    raise MissingColumnError(f"{where}no column {name!r} (summary attribute)")
