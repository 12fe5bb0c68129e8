"""What the paper (paper/contactlab.tex) reads besides the figures: one LaTeX table per sweep,
written from the sweep's collected results, and the provenance of the build. Nothing in the
PDF is typed by hand: every number in a table comes from a run file through ``contactlab
collect``.

    python3 -m analysis.paper table SECTION RESULTS.csv [--scenario NAME] --out TABLE.tex
    python3 -m analysis.paper published MATRIX_RESULTS.csv --out TABLE.tex
    python3 -m analysis.paper iterations RUN_DIR... --out TABLE.tex
    python3 -m analysis.paper provenance --out PROVENANCE.tex [--quick]

``table`` writes a ``tabular`` (booktabs rules) with one row per run (of one scenario with
``--scenario``): the formulation, the swept values, the status, the section's figures of merit
(PAPER_TABLES) and the wall time per step. A run that is not ok shows its status in every
figure-of-merit cell, never a number.
``published`` sets the matrix's runs of the scenes in the seeds' Table I ([zong2024convex],
[yu2025async]) beside the published rows (PUBLISHED): grid spacing, particles, time step, time
per step, iterations and contacts per step.
``iterations`` writes the solver statistics of the runs in the folders, per scene and
formulation: outer iterations per step (mean, largest), linear iterations per outer iteration,
steps that ended unconverged, beside [ding_schroeder_penalty]'s reported Newton statistics.
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

def _yes_no(value):
    """collect writes a boolean attribute as true/false (a text); older tables hold 1.0/0.0."""
    return "yes" if str(value).strip().lower() in ("1", "1.0", "true") else "no"


def _millimetres(value):
    return f"{1e3 * value:.1f}"


def _percent(value):
    return f"{100 * value:.1f}\\%"


# Figures of merit of each paper section: (column, header, format[, optional]). A format is a
# str.format spec applied to the value, or a callable. An optional column may be absent from
# every run (a stop time where no block stopped): its cells are then "--".
PAPER_TABLES = {
    "squeezed_cube": [
        ("left_fx_mean", r"$\bar f_x$ [N]", ".3f"),
        ("left_fx_std", r"std $f_x$ [N]", ".3f"),
        ("left_fz_mean", r"$\bar f_z$ [N]", ".3f"),
        ("left_fz_std", r"std $f_z$ [N]", ".3f"),
        ("cube_vertical_drift", "drift [mm]", lambda v: f"{1e3 * v:.1f}"),
    ],
    "defaults_close_lift_shake": [
        ("held", "held", _yes_no),
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
    "hanging_cloth": [
        ("elongation_error", "elongation error", _percent),
        ("late_ringing", r"ringing / $\delta$", ".2f"),
        ("pin_force_error", "pin force error", _percent),
        ("largest_out_of_plane", "out of plane [m]", ".1e"),
    ],
    "draped_sphere": [
        ("threshold_mu", r"$\mu^*$", ".3f"),
        ("holding_slip_over_half_h", r"holding slip / ($h$/2)", ".2f"),
        ("sliding_slip", "sliding slip [m]", ".4f"),
        ("analytic_sliding_slip", "capstan [m]", ".4f"),
        ("sliding_slip_error", "error", _percent),
        ("slid_as_predicted", r"within $R \pm h/2$", _yes_no),
    ],
    "box_bagging": [
        ("held_until_release", "held", _yes_no),
        ("fell_out", "fell out", _yes_no),
        ("max_box_penetration_over_half_h", r"deepest in a box / ($h$/2)", ".2f"),
        ("max_inverted_faces", "inverted faces", ".0f"),
        ("mean_contacts", "contacts", ".1f"),
    ],
    "laundry": [
        ("held_until_release", "held", _yes_no),
        ("fell_out", "fell out", _yes_no),
        ("laundry_final_z", "final height [m]", ".3f"),
        ("max_inverted_faces", "inverted faces", ".0f"),
        ("mean_contacts", "contacts", ".1f"),
    ],
    "cloth_folding": [
        ("layers_after_first_fold", "layers, fold 1", ".2f"),
        ("layers_after_second_fold", "layers, fold 2", ".2f", True),
        ("final_layers", "layers, unfolded", ".2f", True),
        ("final_area_ratio", "area, unfolded", ".2f", True),
        ("max_inverted_faces", "inverted faces", ".0f"),
    ],
    "liquid_transfer": [
        ("final_fraction_in_bin", "in the bin", _percent),
        ("final_fraction_spilled", "spilled", _percent),
        ("final_fraction_in_mug", "in the mug", _percent),
        ("max_wall_penetration_over_h", "deepest in a wall / $h$", ".3f"),
        ("max_volume_ratio_drift", "largest $|J - J_0|$", ".4f"),
    ],
    "dough_rolling_tolerance": [
        ("mean_outer_iterations", "iterations/step", ".1f"),
        ("contacts_mean", "contacts avg", ".1f"),
        ("contacts_max", "max", ".0f"),
        ("final_dough_mean_thickness", "thickness [mm]", _millimetres),
    ],
    "incline_block": [
        ("regime", "regime", "s"),
        ("stop_time", "stop [s]", ".3f", True),
        ("analytic_stop_time", "analytic", ".3f", True),
        ("final_displacement", "travel [mm]", _millimetres),
        ("analytic_final_displacement", "analytic", _millimetres),
        ("max_rel_error", "max rel. error", ".3f"),
        ("sliding_force_ratio", r"$F_t/F_n$ sliding", ".3f"),
        ("static_force_ratio", "static", ".3f"),
        ("max_cone_margin", r"max $\|f_t\| - \mu f_n$ [N]", ".1e"),
    ],
    "rolling_sphere": [
        ("regime", "regime", "s"),
        ("acceleration", "$a$ [m/s$^2$]", ".4f"),
        ("analytic_acceleration", "analytic", ".4f"),
        ("error_vs_analytic", "error", _percent),
        ("final_spin_ratio", r"$\omega R / v$", ".3f"),
        ("final_slip_speed", "slip speed [m/s]", ".2e"),
    ],
    "stack": [
        ("layers", "layers", "s"),
        ("stood", "stands", _yes_no),
        ("max_block_drift", "largest drift [mm]", _millimetres),
        ("final_top_settling", "top settling [mm]", _millimetres),
        ("ground_load_ratio", "ground load / weight", ".3f"),
    ],
    "defaults_pyramid": [
        ("collapsed", "collapsed", _yes_no),
        ("ball_drop", "ball drop [mm]", _millimetres),
        ("drift", "drift [mm]", _millimetres),
    ],
    "defaults_wedge": [
        ("configuration", "blocks", "s"),
        ("jammed", "jammed", _yes_no),
        ("descent", "descent [mm]", _millimetres),
        ("mu_star", r"$\mu^* = Mg/N_{wall}$", ".3f"),
    ],
}

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}"}


# The non-ASCII characters of labels and names (pdflatex reads no other): as math.
_UNICODE = {"ω": r"$\omega$", "Δ": r"$\Delta$", "μ": r"$\mu$", "ε": r"$\varepsilon$", "θ": r"$\theta$",
            "φ": r"$\varphi$", "σ": r"$\sigma$", "−": "$-$", "×": r"$\times$", "²": r"$^2$", "≤": r"$\le$",
            "≥": r"$\ge$", "°": r"$^\circ$", "·": r"$\cdot$"}


def latex_text(text):
    """``text`` with LaTeX's special characters escaped and the Greek letters and symbols of
    _UNICODE written as math; any other non-ASCII character is a ValueError (pdflatex would
    stop on it)."""
    out = []
    for character in str(text):
        if character in _UNICODE:
            out.append(_UNICODE[character])
        elif ord(character) > 127:
            raise ValueError(f"no LaTeX for the character {character!r} in {text!r} (analysis/paper.py _UNICODE)")
        else:
            out.append(_LATEX_SPECIALS.get(character, character))
    return "".join(out)


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


def sweep_table(table, section, scenario=None):
    """The LaTeX tabular of one section's results (a ResultsTable), of the runs of
    ``scenario`` only when it is given."""
    if section not in PAPER_TABLES:
        raise ValueError(f"no paper table is defined for section {section!r} (analysis/paper.py PAPER_TABLES)")
    merits = []
    for column, header, spec, *optional in PAPER_TABLES[section]:
        if optional and optional[0] and column not in table and f"summary.{column}" not in table:
            merits.append((None, header, spec))
            continue
        summary_column(table, column)  # raises MissingColumnError, naming the column
        merits.append((f"summary.{column}" if f"summary.{column}" in table else column, header, spec))
    swept = swept_keys(table)
    header = ["formulation", *[latex_text(key) for key in swept], "status",
              *[header for _, header, _ in merits], "ms/step"]
    lines = [r"\begin{tabular}{" + "l" * (2 + len(swept)) + "r" * (len(merits) + 1) + "}", r"\toprule",
             " & ".join(header) + r" \\", r"\midrule"]
    rows = [row for row in table.rows() if scenario is None or row.get("scenario") == scenario]
    if not rows:
        raise ValueError(f"no runs of scenario {scenario!r} in the results")
    for row in rows:
        status = row["status"]
        cells = [latex_text(row["formulation"]), *[_swept_cell(row[key]) for key in swept], latex_text(status)]
        for column, _, spec in merits:
            if status != "ok":
                cells.append(latex_text(status))
            else:
                cells.append(_format(math.nan if column is None else row[column], spec))
        steps, wall = row.get("steps", math.nan), row.get("wall_s", math.nan)
        per_step = 1e3 * wall / steps if status == "ok" and steps and steps > 0 else math.nan
        cells.append(_format(per_step, ".1f"))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


# The rows of the seeds' Table I ([zong2024convex] Table I, [yu2025async] Table I; spec-sap-qn
# §4.1, §4.2), by this testbed's scene: (source, the seed's name, h [m], particles, Δt [ms],
# time per step [ms], contacts avg, contacts max). [zong2024convex] counts constraints and ran
# on one thread of an Intel Xeon W-11855M; [yu2025async] counts contacts per registration and
# ran on an NVIDIA RTX 4090, with N substeps per step (the section's text says so).
PUBLISHED = {
    "ball_on_slope": [("zong2024convex", "Ball on Slope", 0.2, 6777, 10.0, 1160.0, 2.6, 6)],
    "dough_tearing": [("zong2024convex", "Dough Tearing", 0.02, 1647, 10.0, 860.0, 113.7, 306)],
    "dough_rolling": [("zong2024convex", "Dough Rolling", 0.02, 5863, 10.0, 7650.0, 496.3, 723),
                      ("yu2025async", "Dough Rolling ($N$ 10)", 0.02, 5920, 10.0, 21.7, 17.8, 101)],
    "liquid_transfer": [("zong2024convex", "Water Pouring", 0.01, 791, 10.0, 850.0, 312.6, 606)],
    "close_lift_shake": [("zong2024convex", "Shake", 0.01, 3456, 10.0, 1940.0, 763.7, 1626),
                         ("yu2025async", "Shake ($N$ 10)", 0.01, 3456, 0.1, 231.1, 571.1, 576)],
    "box_bagging": [("yu2025async", "Box Bagging ($N$ 10)", 1.0 / 64.0, 2582, 5.0, 45.3, 19.6, 45)],
    "laundry": [("yu2025async", "Laundry ($N$ 5)", 1.0 / 128.0, 14904, 5.0, 18.9, 163.4, 617)],
    "cloth_folding": [("yu2025async", "T-shirt Folding ($N$ 4)", 1.0 / 128.0, 12160, 2.0, 21.5, 533.8, 1307)],
}


def _cell(value, spec):
    return "--" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, spec)


def published_table(matrix_results):
    """The matrix's runs of the seeds' Table I scenes beside the published rows (LaTeX)."""
    from .matrix import FORMULATIONS, records

    folder = Path(matrix_results).parent
    by_scene = {}
    for record in records(folder):
        if record.get("scenario") in PUBLISHED:
            by_scene.setdefault(record["scenario"], []).append(record)
    if not by_scene:
        raise ValueError(f"no runs of {', '.join(PUBLISHED)} in {folder}")
    lines = [r"\begin{tabular}{llrrrrrl}", r"\toprule",
             r"scene & run & $h$ [m] & particles & $\Delta t$ [ms] & ms/step & iterations/step & contacts avg (max) \\",
             r"\midrule"]
    for scene, published in PUBLISHED.items():
        for source, name, h, particles, dt, ms, mean, largest in published:
            lines.append(f"{latex_text(scene)} & \\citet{{{source}}}: {name} & {h:g} & {particles:,} & {dt:g} & "
                         f"{ms:,.1f} & -- & {mean:.1f} ({largest}) \\\\")
        order = {name: k for k, name in enumerate(FORMULATIONS)}
        for record in sorted(by_scene.get(scene, []), key=lambda r: order.get(r["formulation"], 99)):
            params, status = record.get("params", {}), record["status"]
            particles = record.get("summary", {}).get("particles")
            cells = [latex_text(scene), latex_text(record["formulation"]) + ("" if status == "ok" else f" ({status})"),
                     _cell(params.get("grid_spacing"), "g"),
                     _cell(int(particles) if particles is not None else None, ","),
                     _cell(1e3 * params["dt"] if "dt" in params else None, "g")]
            if status != "ok" or not math.isfinite(record["ms_per_step"]):
                cells += ["--", "--", "--"]
            else:
                cells += [_cell(record["ms_per_step"], ",.1f"), _cell(record["iterations"], ".1f"),
                          f"{record['contacts']:.1f} ({record['largest_contacts']:.0f})"]
            lines.append(" & ".join(cells) + r" \\")
        lines.append(r"\midrule")
    lines[-1] = r"\bottomrule"
    lines.append(r"\end{tabular}")
    return "\n".join(lines) + "\n"


# [ding_schroeder_penalty] §5 (spec-penalty-hybrid §4.5): 3.1 Newton iterations per step on
# average over its examples, its cap of 1000 never reached, GMRES capped at 20 iterations.
PUBLISHED_PENALTY_ITERATIONS = (3.1, 1000, 20)


def iterations_table(folders):
    """Solver statistics per scene and formulation over the run files of ``folders``
    (LaTeX): runs, steps, outer iterations per step (mean, largest), linear iterations per
    outer iteration, unconverged steps."""
    from .matrix import FORMULATIONS, records

    groups = {}
    for folder in folders:
        for record in records(folder):
            if record["status"] == "ok" and record["logged_steps"] > 0:
                groups.setdefault((record["scenario"], record["formulation"]), []).append(record)
    if not groups:
        raise ValueError(f"no run with a solver log in {' '.join(str(f) for f in folders)}")
    mean, cap, gmres = PUBLISHED_PENALTY_ITERATIONS
    lines = [r"\begin{tabular}{llrrrrrr}", r"\toprule",
             r"scene & formulation & runs & steps & outer it./step & largest & linear it./outer it. & unconverged \\",
             r"\midrule",
             f"all & \\citet{{ding_schroeder_penalty}} & & & {mean:g} & $<{cap}$ & $\\le {gmres}$ (cap) & 0 \\\\",
             r"\midrule"]
    order = {name: k for k, name in enumerate(FORMULATIONS)}
    for scene, formulation in sorted(groups, key=lambda key: (key[0], order.get(key[1], 99))):
        runs = groups[(scene, formulation)]
        steps = sum(r["logged_steps"] for r in runs)
        outer_total = sum(r["iterations"] * r["logged_steps"] for r in runs)
        linear_total = sum(r["linear_iterations"] * r["logged_steps"] for r in runs)
        per_outer = linear_total / outer_total if outer_total > 0 else math.nan
        largest = max(r["largest_iterations"] for r in runs)
        unconverged = sum(r["unconverged_steps"] for r in runs)
        lines.append(" & ".join([latex_text(scene), latex_text(formulation), str(len(runs)), f"{steps:,}",
                                 _cell(outer_total / steps, ".2f"), _cell(largest, ".0f"), _cell(per_outer, ".1f"),
                                 str(unconverged)]) + r" \\")
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
    table_parser = commands.add_parser("table", help="one section's LaTeX table of a sweep's runs")
    table_parser.add_argument("section")
    table_parser.add_argument("results", help="the sweep's results.csv (contactlab collect)")
    table_parser.add_argument("--scenario", help="only the runs of this scenario")
    table_parser.add_argument("--out", required=True)
    published_parser = commands.add_parser("published", help="the seeds' Table I beside the matrix's runs")
    published_parser.add_argument("results", help="the matrix sweep's results.csv")
    published_parser.add_argument("--out", required=True)
    iterations_parser = commands.add_parser("iterations", help="solver iterations per scene and formulation")
    iterations_parser.add_argument("folders", nargs="+", help="sweep folders of run files")
    iterations_parser.add_argument("--out", required=True)
    provenance_parser = commands.add_parser("provenance", help="the build's provenance macros")
    provenance_parser.add_argument("--quick", action="store_true")
    provenance_parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "table":
            text = sweep_table(load_results(args.results), args.section, args.scenario)
        elif args.command == "published":
            text = published_table(args.results)
        elif args.command == "iterations":
            text = iterations_table(args.folders)
        else:
            text = provenance(args.quick, Path(__file__).resolve().parent.parent)
    except (FileNotFoundError, MissingColumnError, ValueError, OSError) as error:
        sys.exit(f"analysis.paper: {' '.join(str(error).split())}")
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
