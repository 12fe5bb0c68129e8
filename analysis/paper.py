"""What the paper (paper/contactlab.tex) reads besides the figures: one LaTeX table per sweep,
written from the sweep's collected results, and the provenance of the build. Nothing in the
PDF is typed by hand: every number in a table comes from a run file through ``contactlab
collect``.

    python3 -m analysis.paper table SWEEP RESULTS.csv --out TABLE.tex
    python3 -m analysis.paper provenance --contactlab BIN --out PROVENANCE.tex [--quick]

``table`` writes a ``tabular`` (booktabs rules) with one row per run: the formulation, the
swept values, the status, the sweep's figures of merit (PAPER_TABLES) and the wall time per
step. A run that is not ok shows its status in every figure-of-merit cell, never a number.
``provenance`` writes LaTeX macros: the commit, the build date, the machine's processor and
core count, and whether the runs are the quick ones (paper/quick.toml).
"""

import argparse
import datetime
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

from .sweeps import MissingColumnError, load_results, swept_keys, summary_column

# Figures of merit of each paper sweep: (column, header, format). A format is a str.format
# spec applied to the value, or a callable.
PAPER_TABLES = {
    "squeezed_cube": [
        ("left_fx_mean", r"$\bar f_x$ [N]", ".3f"),
        ("left_fx_std", r"std $f_x$ [N]", ".3f"),
        ("left_fz_mean", r"$\bar f_z$ [N]", ".3f"),
        ("left_fz_std", r"std $f_z$ [N]", ".3f"),
        ("cube_vertical_drift", "drift [mm]", lambda v: f"{1e3 * v:.1f}"),
    ],
    "defaults_close_lift_shake": [
        ("held", "held", lambda v: "yes" if str(v).strip().lower() in ("1", "1.0", "true") else "no"),
        ("closing_slip", "slip while closing [mm]", lambda v: f"{1e3 * v:.1f}"),
        ("max_slip", "largest slip [mm]", lambda v: f"{1e3 * v:.1f}"),
    ],
    "ball_on_slope": [
        ("regime", "regime", "s"),
        ("max_rel_error", "max rel. error", ".3f"),
        ("max_rel_error_velocity", "velocity error", ".3f"),
        ("final_spin_ratio", r"$\omega r / v$", ".3f"),
        ("expected_spin_ratio", "expected", ".3f"),
    ],
    "dam_break": [
        ("front_mean_relative_error", "mean front error", lambda v: f"{100 * v:.1f}\\%"),
        ("front_max_relative_error", "largest", lambda v: f"{100 * v:.1f}\\%"),
        ("front_late_bias", r"late bias ($T \ge 1.5$)", lambda v: f"{100 * v:+.1f}\\%"),
        ("front_speed", "$dZ/dT$", ".3f"),
        ("data_front_speed", "data $dZ/dT$", ".3f"),
    ],
    "column_collapse": [
        ("runout", "run-out", ".2f"),
        ("analytic_runout", "Lube et al.", ".2f"),
        ("error_vs_analytic", "error", lambda v: f"{100 * v:.0f}\\%"),
        ("final_height_ratio", r"$h_\infty / d_i$", ".2f"),
    ],
}

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}"}


def latex_text(text):
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIALS.get(character, character) for character in str(text))


def _format(value, spec):
    if isinstance(value, float) and math.isnan(value):
        return "--"
    if callable(spec):
        return spec(value)
    if spec == "s":
        return latex_text(value)
    return format(value, spec)


def _swept_cell(value):
    if isinstance(value, float):
        return "--" if math.isnan(value) else f"{value:g}"
    return latex_text(value)


def sweep_table(table, sweep):
    """The LaTeX tabular of one sweep's results (a ResultsTable)."""
    if sweep not in PAPER_TABLES:
        raise ValueError(f"no paper table is defined for sweep {sweep!r} (analysis/paper.py PAPER_TABLES)")
    merits = []
    for column, header, spec in PAPER_TABLES[sweep]:
        summary_column(table, column)  # raises MissingColumnError, naming the column
        merits.append((f"summary.{column}" if f"summary.{column}" in table else column, header, spec))
    swept = swept_keys(table)
    header = ["formulation", *[latex_text(key) for key in swept], "status",
              *[header for _, header, _ in merits], "ms/step"]
    lines = [r"\begin{tabular}{" + "l" * (2 + len(swept)) + "r" * (len(merits) + 1) + "}", r"\toprule",
             " & ".join(header) + r" \\", r"\midrule"]
    for row in table.rows():
        status = row["status"]
        cells = [latex_text(row["formulation"]), *[_swept_cell(row[key]) for key in swept], latex_text(status)]
        for column, _, spec in merits:
            cells.append(_format(row[column], spec) if status == "ok" else latex_text(status))
        steps, wall = row.get("steps", math.nan), row.get("wall_s", math.nan)
        per_step = 1e3 * wall / steps if status == "ok" and steps and steps > 0 else math.nan
        cells.append(_format(per_step, ".1f"))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _git_commit(root):
    try:
        commit = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return commit or "unknown"


def _processor():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance(quick, root):
    """LaTeX macros describing this build of the paper."""
    macros = {
        "PaperCommit": latex_text(_git_commit(root)),
        "PaperDate": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "PaperMachine": latex_text(f"{_processor()}, {os.cpu_count()} cores"),
        "PaperRuns": ("the quick runs of paper/quick.toml (reduced resolution and duration)" if quick
                      else "the sweeps as data/sweeps defines them"),
    }
    return "".join(f"\\newcommand{{\\{name}}}{{{value}}}\n" for name, value in macros.items())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.paper", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    table_parser = commands.add_parser("table", help="one sweep's LaTeX table")
    table_parser.add_argument("sweep")
    table_parser.add_argument("results", help="the sweep's results.csv (contactlab collect)")
    table_parser.add_argument("--out", required=True)
    provenance_parser = commands.add_parser("provenance", help="the build's provenance macros")
    provenance_parser.add_argument("--quick", action="store_true")
    provenance_parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "table":
            text = sweep_table(load_results(args.results), args.sweep)
        else:
            text = provenance(args.quick, Path(__file__).resolve().parent.parent)
    except (FileNotFoundError, MissingColumnError, ValueError) as error:
        sys.exit(f"analysis.paper: {' '.join(str(error).split())}")
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
