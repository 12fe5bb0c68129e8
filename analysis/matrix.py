"""The scene x formulation matrix (data/sweeps/matrix.toml): each run judged against its
scene's criterion, with its error against the analytic solution, time per step and solver
iterations.

    python3 -m analysis.matrix RUN_DIR [--markdown | --compact | --latex OUT.tex]

Verdicts: ``correct`` or ``wrong`` against the scene's criterion (CRITERIA below, each with
where it comes from), ``ran`` where the scene has no analytic or experimental criterion
(dough_rolling, sand_on_sphere, sphere_into_sand) or the run leaves it unmeasured (a sand
pile too coarse for a flank), ``diverged``, ``failed`` or ``missing`` from the run's status
(a run that could not start is listed with its failure record's message). The error column is the run's ``error_vs_analytic`` where the scene records one.
Milliseconds per step are wall time over steps; iterations and contacts are means over the
steps of /solver_log.
"""

import argparse
import json
import math
import sys
from pathlib import Path

from .defaults_report import (SOLVER_LOG_KEYS, check_close_lift_shake, check_incline_block, check_pyramid,
                              check_squeezed_cube, check_wedge, read_run)
from .paper import latex_text
from .runs import NotARunError

FORMULATIONS = ("sap", "quasi_newton", "penalty", "hybrid_impulse", "explicit_projection")


def _value(summary, key):
    value = summary.get(key, math.nan)
    return float(value) if isinstance(value, (int, float)) else math.nan


def _ball_on_slope(record):
    # The regime the closed form predicts (expected ωr/v 1: rolling) and the displacement within
    # 10% over t >= 0.2 s.
    s = record["summary"]
    expected = "roll" if abs(_value(s, "expected_spin_ratio") - 1.0) < 1e-9 else "slip"
    error = _value(s, "max_rel_error")
    return f"{s.get('regime', '?')} (expected {expected}), u error {100 * error:.1f}%", (
        s.get("regime") == expected and error <= 0.10)


def _rolling_sphere(record):
    # The regime (rolls at mu 0.3) and the acceleration within 5% of the closed form.
    s = record["summary"]
    expected = "roll" if s.get("rolls_expected") else "slip"
    error = _value(s, "error_vs_analytic")
    return f"{s.get('regime', '?')} (expected {expected}), error {100 * error:.1f}%", (
        s.get("regime") == expected and error <= 0.05)


def _stack(record):
    s = record["summary"]
    return f"{'stands' if s.get('stood') else 'falls'}, drift {1e3 * _value(s, 'max_drift'):.2f} mm", bool(
        s.get("stood"))


def _block_on_slab(record):
    # tests/unit/experiments_block_on_slab_test.cc: the compression within one lattice spacing
    # over the slab's layer span, the block's bottom within half the compression of its height.
    s, p = record["summary"], record["params"]
    spacing = p.get("grid_spacing", math.nan) / p.get("particles_per_cell", 8.0) ** (1.0 / 3.0)
    tolerance = spacing / _value(s, "layer_span")
    error, analytic = _value(s, "compression_error"), _value(s, "analytic_compression")
    height = _value(s, "height_error")
    return f"compression error {100 * error:+.1f}% (within {100 * tolerance:.0f}%), height error " \
           f"{1e3 * height:+.2f} mm", abs(error) < tolerance and abs(height) < 0.5 * analytic


def _threshold(key, limit, what):
    def check(record):
        error = _value(record["summary"], key)
        return f"{what} {100 * error:.1f}% (within {100 * limit:.0f}%)", abs(error) <= limit
    return check


def _sand_pile(record):
    # The flank within 10% of the friction angle.
    s = record["summary"]
    slope, angle = _value(s, "slope_angle"), _value(s, "friction_angle")
    if not math.isfinite(slope):  # too few surface points for a flank (a coarse grid)
        return "no flank fitted", None
    return f"flank {slope:.1f} deg against {angle:.0f}", abs(slope - angle) <= 0.1 * angle


def _floating_box(record):
    # Issue 19: the draft within 5%, of d + s/2 under particle contact (README, floating_box).
    s = record["summary"]
    draft, analytic = _value(s, "draft"), _value(s, "analytic_draft_particle_contact")
    error = draft / analytic - 1.0
    # The error the criterion reads replaces the scene's error_vs_analytic (against d itself).
    return f"draft {1e3 * draft:.1f} mm against {1e3 * analytic:.1f} ({100 * error:+.1f}%)", abs(error) <= 0.05, \
        abs(error)


def _dough_tearing(record):
    # Issue 19: the dough separates into two pieces.
    s = record["summary"]
    pieces = s.get("final_pieces", 0)
    return f"{pieces} piece(s), largest {100 * _value(s, 'final_largest_fraction'):.1f}%", bool(
        s.get("separated")) and pieces >= 2


def _liquid_transfer(record):
    # Issue 19: at least 95% in the bin, no particle deeper than h/2 inside a wall.
    s = record["summary"]
    fraction, depth = _value(s, "final_fraction_in_bin"), _value(s, "max_wall_penetration_over_h")
    return f"{100 * fraction:.1f}% in the bin, deepest {depth:.2f} h", fraction >= 0.95 and depth <= 0.5


def _box_bagging(record):
    # Issue 21: both boxes held until two corners release, then both fall out; no cloth particle
    # deeper than h/2 inside a box.
    s = record["summary"]
    held, fell = bool(s.get("held_until_release")), bool(s.get("fell_out"))
    depth = _value(s, "max_box_penetration_over_half_h")
    inverted = int(s.get("max_inverted_faces", -1))
    text = f"{'held' if held else 'not held'}, {'fell out' if fell else 'stayed'}, deepest {depth:.2f} h/2, " \
           f"{inverted} inverted"
    return text, held and fell and depth <= 1.0


def _draped_sphere(record):
    # Issue 21: friction holds the strip above the threshold (slip below h/2) and lets the other
    # slide as the heavy capstan predicts, within the slips at radii R -+ h/2.
    s = record["summary"]
    held, predicted = bool(s.get("held")), bool(s.get("slid_as_predicted"))
    low, high = 1e3 * _value(s, "analytic_sliding_slip_low"), 1e3 * _value(s, "analytic_sliding_slip_high")
    text = (f"holding slip {_value(s, 'holding_slip_over_half_h'):.2f} h/2, sliding "
            f"{1e3 * _value(s, 'sliding_slip'):.1f} mm (capstan {1e3 * _value(s, 'analytic_sliding_slip'):.1f}, "
            f"{low:.1f} to {high:.1f})")
    return text, held and predicted


def _laundry(record):
    # Issue 21: the laundry held until the release and fallen out after it, no cloth through
    # cloth (no inverted face).
    text, passed = _box_bagging(record)
    return text, passed and int(record["summary"].get("max_inverted_faces", -1)) == 0


def _cloth_folding(record):
    # Issue 21: the folds finish without cloth passing through cloth; the layers and the area
    # after the unfold are reported.
    s = record["summary"]
    inverted = int(s.get("max_inverted_faces", -1))
    text = (f"layers {_value(s, 'layers_after_first_fold'):.2f} / {_value(s, 'layers_after_second_fold'):.2f} / "
            f"{_value(s, 'final_layers'):.2f}, area {_value(s, 'final_area_ratio'):.2f}, {inverted} inverted")
    return text, inverted == 0


def _no_criterion(keys):
    def describe(record):
        s = record["summary"]
        return ", ".join(f"{key} {_value(s, key):.3g}" for key in keys), None
    return describe


# scene: (check, where the criterion comes from)
CRITERIA = {
    "ball_on_slope": (_ball_on_slope, "regime of the closed form, displacement within 10%"),
    "squeezed_cube": (check_squeezed_cube, "analysis/defaults_report.py"),
    "close_lift_shake": (check_close_lift_shake, "held: slip within 1 cm (analysis/defaults_report.py)"),
    "dough_rolling": (_no_criterion(["slip_ratio_mean", "final_dough_mean_thickness"]), "none"),
    "incline_block": (check_incline_block, "analysis/defaults_report.py"),
    "rolling_sphere": (_rolling_sphere, "regime, acceleration within 5%"),
    "pyramid": (check_pyramid, "analysis/defaults_report.py"),
    "wedge": (check_wedge, "analysis/defaults_report.py"),
    "stack": (_stack, "stands"),
    "block_on_slab": (_block_on_slab, "tests/unit/experiments_block_on_slab_test.cc"),
    "hydrostatic_column": (_threshold("error_vs_analytic", 0.05, "pressure error"), "issue 19: within 5%"),
    "sand_pile": (_sand_pile, "flank within 10% of the friction angle"),
    "floating_box": (_floating_box, "issue 19: draft within 5%"),
    "dough_tearing": (_dough_tearing, "issue 19: two pieces"),
    "dam_break": (_threshold("front_mean_relative_error", 0.05, "mean front error"),
                  "mean front error within 5% (our reading of issue 19's scatter)"),
    "column_collapse": (_threshold("error_vs_analytic", 0.15, "run-out error"), "issue 19: within 15%"),
    "liquid_transfer": (_liquid_transfer, "issue 19: 95% in the bin, nothing deeper than h/2"),
    "sand_on_sphere": (_no_criterion(["displacement", "turn"]), "none"),
    "sphere_into_sand": (_no_criterion(["penetration", "analytic_penetration"]), "none"),
    "hanging_cloth": (_threshold("error_vs_analytic", 0.05, "elongation error"), "issue 21: within 5%"),
    "draped_sphere": (_draped_sphere, "issue 21: holds above mu* (slip < h/2), slides as the capstan below it"),
    "box_bagging": (_box_bagging, "issue 21: held until the release, fell out, nothing deeper than h/2"),
    "laundry": (_laundry, "issue 21: held until the release, fell out, no inverted face"),
    "cloth_folding": (_cloth_folding, "issue 21: no cloth through cloth (no inverted face)"),
}


def judge(record):
    """(verdict, text, error) of one run record (defaults_report.read_run)."""
    status = record.get("status", "?")
    error = _value(record["summary"], "error_vs_analytic")
    if status != "ok":
        return status, " ".join(str(record.get("message", "")).split())[:80], error
    check = CRITERIA.get(record.get("scenario"))
    if check is None:
        return "ran", "", error
    text, passed, *criterion_error = check[0](record)
    verdict = "ran" if passed is None else ("correct" if passed else "wrong")
    return verdict, text, criterion_error[0] if criterion_error else error


def records(folder):
    """A record (defaults_report.read_run's shape) per run of the sweep's manifest: its run
    file, or its failure record (``<run_id>.failed.json``), or status "missing". A sweep folder
    keeps the files of earlier expansions too; only the manifest's count. Without a manifest,
    every run file under ``folder``."""
    folder = Path(folder)
    manifest = folder / "manifest.jsonl"
    if not manifest.is_file():
        for path in sorted(folder.rglob("*.h5")):
            try:
                yield read_run(path)
            except (OSError, KeyError, NotARunError):
                continue
        return
    with open(manifest) as handle:
        entries = [json.loads(line) for line in handle if line.strip()]
    for entry in entries:
        run_file, failure = folder / f"{entry['run_id']}.h5", folder / f"{entry['run_id']}.failed.json"
        record = None
        if run_file.is_file():
            try:
                record = read_run(run_file)
            except (OSError, KeyError, NotARunError):
                record = None
        if record is None:
            status, message = "missing", "not run"
            if failure.is_file():
                failed = json.loads(failure.read_text())
                status, message = failed.get("status", "failed"), failed.get("message", "")
            record = {"scenario": entry["scenario"], "formulation": entry["formulation"], "status": status,
                      "message": message, "summary": {}, "params": {},
                      **dict.fromkeys(SOLVER_LOG_KEYS, math.nan)}
        yield record


def matrix_rows(folder):
    rows = []
    for record in records(folder):
        verdict, text, error = judge(record)
        rows.append({"scenario": record.get("scenario", "?"), "formulation": record.get("formulation", "?"),
                     "verdict": verdict, "text": text, "error": error, "ms_per_step": record["ms_per_step"],
                     "iterations": record["iterations"], "contacts": record["contacts"]})
    scene_order = {name: k for k, name in enumerate(CRITERIA)}
    formulation_order = {name: k for k, name in enumerate(FORMULATIONS)}
    rows.sort(key=lambda r: (scene_order.get(r["scenario"], 99), r["scenario"],
                             formulation_order.get(r["formulation"], 99)))
    return rows


def _number(value, spec):
    return "–" if value is None or not math.isfinite(value) else format(value, spec)


def markdown(rows):
    lines = ["| scene | formulation | verdict | measured | error vs analytic | ms/step | iterations/step |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        error = "–" if not math.isfinite(r["error"]) else f"{100 * r['error']:.1f}%"
        lines.append(f"| {r['scenario']} | {r['formulation']} | {r['verdict']} | {r['text']} | {error} | "
                     f"{_number(r['ms_per_step'], '.0f')} | {_number(r['iterations'], '.1f')} |")
    return "\n".join(lines) + "\n"


def _compact(rows, percent):
    """(formulations, [(scene, [cell text per formulation])]): each cell the verdict, the error
    against the analytic solution where the scene records one, and the time per step."""
    scenes = list(dict.fromkeys(r["scenario"] for r in rows))
    formulations = [name for name in FORMULATIONS if any(r["formulation"] == name for r in rows)]
    cells = {(r["scenario"], r["formulation"]): r for r in rows}
    table = []
    for scene in scenes:
        texts = []
        for name in formulations:
            r = cells.get((scene, name))
            if r is None:
                texts.append("")
                continue
            error = "" if not math.isfinite(r["error"]) else f", {100 * r['error']:.1f}{percent}"
            time = "" if not math.isfinite(r["ms_per_step"]) else f", {r['ms_per_step']:.0f} ms"
            texts.append(f"{r['verdict']}{error}{time}")
        table.append((scene, texts))
    return formulations, table


def compact_markdown(rows):
    """The compact table as Markdown: a row per scene, a column per formulation."""
    formulations, table = _compact(rows, "%")
    lines = ["| scene | " + " | ".join(formulations) + " |", "|---" * (len(formulations) + 1) + "|"]
    lines += [f"| {scene} | " + " | ".join(texts) + " |" for scene, texts in table]
    return "\n".join(lines) + "\n"


def latex(rows):
    """The compact table as a LaTeX tabular: a row per scene, a column per formulation."""
    formulations, table = _compact(rows, "\\%")
    lines = [r"\begin{tabular}{l" + "c" * len(formulations) + "}", r"\toprule",
             " & ".join(["scene", *[latex_text(name) for name in formulations]]) + r" \\", r"\midrule"]
    lines += [" & ".join([latex_text(scene), *texts]) + r" \\" for scene, texts in table]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.matrix", description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the matrix sweep's folder of run files")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="print the Markdown table, a row per run (the default)")
    output.add_argument("--compact", action="store_true", help="print the Markdown table, a row per scene")
    output.add_argument("--latex", metavar="OUT.tex", help="write the compact LaTeX table")
    args = parser.parse_args(argv)
    rows = matrix_rows(args.folder)
    if not rows:
        sys.exit(f"analysis.matrix: no run files in {args.folder}")
    if args.latex:
        Path(args.latex).write_text(latex(rows))
    elif args.compact:
        print(compact_markdown(rows), end="")
    else:
        print(markdown(rows), end="")
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print(", ".join(f"{count} {verdict}" for verdict, count in sorted(counts.items())), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
