"""What the sweep figures share: the command line (one results CSV in, one image out) and
convergence panels (a figure of merit against the time step, log-log, one line per
formulation) on which runs that are not ok are drawn at the panel's top edge, never dropped.
"""

import argparse
import math
import sys

import numpy as np
from matplotlib.lines import Line2D

from ..sweeps import MissingColumnError, load_results, swept_keys

X_COLUMN = "dt"
X_LABEL = "time step Δt [s]"
FORMULATION_ORDER = ("sap", "quasi_newton", "penalty", "hybrid_impulse", "explicit_projection")

# Runs without a plottable value, drawn at the top edge of the panel: status -> marker style.
NOT_OK_STYLE = {
    "diverged": dict(marker="x", markersize=8, markeredgewidth=2.0),
    "failed": dict(marker="X", markersize=8, markeredgewidth=0.5, markeredgecolor="k"),
    "missing": dict(marker="s", markersize=7, markerfacecolor="none", markeredgewidth=1.5),
    "ok, no positive value": dict(marker="D", markersize=6, markerfacecolor="none",
                         markeredgewidth=1.5),
}
OTHER_STATUS_STYLE = dict(marker="*", markersize=9)
TOP_EDGE = 0.96  # axes fraction at which the runs without a value are drawn


def sweep_main(module, description, scenario, required, plot, argv=None):
    """Parse ``RESULTS --out FIG``, load the table, keep the rows of ``scenario``, check that
    the ``required`` columns exist and call ``plot(table, out)``; any problem exits with a
    one-line message and status 1."""
    name = module.rsplit(".", 1)[-1]
    parser = argparse.ArgumentParser(prog=f"python3 -m {module}", description=description)
    parser.add_argument("results", metavar="RESULTS.csv",
                        help="the sweep's results (contactlab collect), or its directory")
    parser.add_argument("--out", required=True, metavar="FIG.png", help="output figure")
    args = parser.parse_args(argv)
    try:
        table = load_results(args.results)
        # A summary attribute may carry the prefix "summary." (name collision, see sweeps).
        required = [f"summary.{c}" if f"summary.{c}" in table else c for c in required]
        table.require("formulation", "status", X_COLUMN, *required,
                      needed_for=f"the {name} figure")
        for column in (X_COLUMN, *required):
            if table[column].dtype != np.float64:
                raise ValueError(f"{table.source}: column {column!r} is not numeric")
        if "scenario" in table:
            table = table.where(scenario=scenario)
        if not len(table):
            sys.exit(f"{name}: no {scenario} runs in {table.source}")
        plot(table, args.out)
    except (FileNotFoundError, MissingColumnError, ValueError) as error:
        sys.exit(f"{name}: {' '.join(str(error).split())}")


def ordered(values):
    """Distinct values, known formulations first, then numbers ascending (NaN last) or text."""
    values = list(dict.fromkeys(values))
    if all(isinstance(v, float) for v in values):
        return sorted(values, key=lambda v: (math.isnan(v), v))
    known = [v for v in FORMULATION_ORDER if v in values]
    return known + sorted((v for v in values if v not in known), key=str)


def fmt(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def extra_dimensions(table, panel_keys):
    """Swept keys other than Δt and ``panel_keys`` that vary among runs sharing formulation,
    panel and Δt, i.e. that must tell lines apart (a key zipped with Δt does not)."""
    extra = []
    keys = [k for k in swept_keys(table) if k != X_COLUMN and k not in panel_keys]
    group_keys = ["formulation", X_COLUMN, *panel_keys]
    groups = {}
    for i, row in enumerate(zip(*(table[k] for k in group_keys))):
        groups.setdefault(tuple(fmt(v) for v in row), []).append(i)
    for key in keys:
        column = table[key]
        if any(len({fmt(column[i]) for i in rows}) > 1 for rows in groups.values()):
            extra.append(key)
    return extra


def line_groups(table, extra):
    """[(label, color index, linestyle, row mask)] for each formulation x extra values."""
    formulations = ordered(table["formulation"])
    styles = ["-", "--", ":", "-."]
    result = []
    for f_index, formulation in enumerate(formulations):
        rows = table["formulation"] == formulation
        combos = ordered([tuple(fmt(table[k][i]) for k in extra) for i in np.flatnonzero(rows)]) \
            if extra else [()]
        for c_index, combo in enumerate(combos):
            mask = rows.copy()
            for key, value in zip(extra, combo):
                mask &= np.array([fmt(v) == value for v in table[key]])
            label = formulation + "".join(f", {k.split('.')[-1]} = {v}"
                                          for k, v in zip(extra, combo))
            result.append((label, f_index, styles[c_index % len(styles)], mask))
    return result


def convergence_panel(ax, table, y, groups, seen_statuses):
    """One figure of merit ``y`` (array, one per row of ``table``) against Δt.

    Ok runs with a finite positive value make the lines; every other row is a marker at the
    top edge, in its formulation's colour, shaped by its status (recorded in
    ``seen_statuses``: (status, placed) -> [count], where placed is False for a row without
    Δt, which is counted but cannot be drawn). Returns the finite positive values drawn.
    """
    x = np.asarray(table[X_COLUMN], dtype=float)
    status = table["status"]
    y = np.asarray(y, dtype=float)
    drawn = []
    for g_index, (label, color_index, linestyle, mask) in enumerate(groups):
        color = f"C{color_index % 10}"
        good = mask & (status == "ok") & np.isfinite(y) & (y > 0) & np.isfinite(x)
        order = np.argsort(x[good])
        ax.plot(x[good][order], y[good][order], color=color, linestyle=linestyle, marker="o",
                markersize=5, label=label)
        drawn.extend(y[good])
        bad = mask & ~good
        # Stagger coincident markers of different lines sideways (a few % in Δt).
        shift = 1.0 + 0.05 * (g_index - (len(groups) - 1) / 2)
        for i in np.flatnonzero(bad):
            kind = status[i] if status[i] != "ok" else "ok, no positive value"
            placed = bool(np.isfinite(x[i]))
            count = seen_statuses.setdefault((kind, placed), [0])
            count[0] += 1
            if not placed:
                continue  # no Δt: counted in the legend, cannot be placed
            style = NOT_OK_STYLE.get(kind, OTHER_STATUS_STYLE)
            ax.plot([x[i] * shift], [TOP_EDGE], transform=ax.get_xaxis_transform(),
                    linestyle="none", color=color, clip_on=False, **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="major")
    ax.grid(alpha=0.1, which="minor")
    return np.asarray(drawn)


def first_order_reference(ax, table, y):
    """A dashed ∝ Δt line through the geometric mean of the ok values at the largest Δt."""
    x = np.asarray(table[X_COLUMN], dtype=float)
    y = np.asarray(y, dtype=float)
    good = (table["status"] == "ok") & np.isfinite(x) & (x > 0) & np.isfinite(y) & (y > 0)
    if len(set(x[good])) < 2:
        return
    x_max, x_min = x[good].max(), x[good].min()
    anchor = math.exp(np.mean(np.log(y[good][x[good] == x_max])))
    xs = np.array([x_min, x_max])
    ax.plot(xs, anchor * xs / x_max * 0.5, color="0.4", linestyle="--", linewidth=1.0,
            label="first order (∝ Δt)")


def merge_counts(total, counts):
    """Fold the status counts of one figure of merit into ``total`` (max per status: every
    figure of merit sees the same runs)."""
    for key, (count,) in counts.items():
        total[key] = [max(count, total.get(key, [0])[0])]
    return total


def legend_handles(axes, seen_statuses):
    """Handles/labels of the lines of every panel (deduplicated) plus one per status seen."""
    handles, labels = [], []
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    known = list(NOT_OK_STYLE)
    order = sorted(seen_statuses, key=lambda key: (known.index(key[0]) if key[0] in known
                                                   else len(known), key[0], not key[1]))
    for kind, placed in order:
        (count,) = seen_statuses[(kind, placed)]
        style = NOT_OK_STYLE.get(kind, OTHER_STATUS_STYLE)
        handles.append(Line2D([], [], linestyle="none", color="0.2", **style))
        where = "at top edge" if placed else "no Δt, not drawn"
        labels.append(f"{kind} ({count} run{'s' if count != 1 else ''}, {where})")
    return handles, labels


def finish_figure(fig, axes, seen_statuses, title, out):
    """The title, one legend for every panel (lines and the not-ok statuses) to the right of
    the panels, and the PNG at ``out``; closes the figure."""
    import matplotlib.pyplot as plt  # after the figure module chose the Agg backend

    handles, labels = legend_handles(axes, seen_statuses)
    fig.suptitle(title, fontsize=11)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8,
               frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=150, bbox_inches="tight")
    plt.close(fig)
