"""The paper's build (paper/Snakefile rule paper, analysis/paper.py): its tables from collected
results, and the whole pipeline on tiny runs, so that it cannot rot."""

import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from analysis.paper import PAPER_TABLES, latex_text, sweep_table
from analysis.sweeps import load_results

HEADER = ("run_id,index,sweep,scenario,formulation,dt,status,message,steps,wall_s,"
          "cube_vertical_drift,left_fx_mean,left_fx_std,left_fz_mean,left_fz_std\n")


def test_sweep_table_has_a_row_per_run_and_no_number_for_a_failed_one(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text(HEADER
                    + "a1,0,squeezed_cube,squeezed_cube,sap,0.004,ok,,100,2.5,-0.0001,9.9991,0.0004,"
                      "1.962,0.0002\n"
                    + "b2,1,squeezed_cube,squeezed_cube,explicit_projection,0.004,diverged,boom,40,1.0,,,,,\n")
    text = sweep_table(load_results(path), "squeezed_cube")
    lines = text.splitlines()
    assert lines[0].startswith(r"\begin{tabular}{lll") and lines[-1] == r"\end{tabular}"
    rows = [line for line in lines if line.endswith(r"\\")][1:]  # the header row first
    assert len(rows) == 2
    assert rows[0] == r"sap & 0.004 & ok & 9.999 & 0.000 & 1.962 & 0.000 & -0.1 & 25.0 \\"
    # A run that is not ok shows its status in every figure-of-merit cell, never a number.
    assert rows[1] == (r"explicit\_projection & 0.004 & diverged & diverged & diverged & diverged & diverged"
                       r" & diverged & -- \\")


def test_a_boolean_summary_reads_as_yes_or_no(tmp_path):
    """collect writes a boolean attribute as true/false: "false" is no, not a non-empty text."""
    from analysis.paper import PAPER_TABLES

    held = PAPER_TABLES["defaults_close_lift_shake"][0][2]
    assert [held(value) for value in ("true", "false", 1.0, 0.0)] == ["yes", "no", "yes", "no"]


def test_sweep_table_names_a_missing_column(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("run_id,index,sweep,scenario,formulation,dt,status,message,steps,wall_s\n"
                    "a1,0,squeezed_cube,squeezed_cube,sap,0.004,ok,,100,2.5\n")
    with pytest.raises(KeyError, match="left_fx_mean"):
        sweep_table(load_results(path), "squeezed_cube")
    with pytest.raises(ValueError, match="no paper table"):
        sweep_table(load_results(path), "no_such_sweep")


def test_latex_text_escapes_the_special_characters():
    assert latex_text("quasi_newton 5% & $x#{}") == r"quasi\_newton 5\% \& \$x\#\{\}"
    # pdflatex stops on a Unicode character it has no definition for (the convergence
    # tables' "spin ωr/v" did): Greek letters become math, anything unknown is an error here.
    assert latex_text("spin ωr/v, Δt") == r"spin $\omega$r/v, $\Delta$t"
    with pytest.raises(ValueError, match="no LaTeX"):
        latex_text("a ☃")


def _paper_sections():
    """PAPER_SECTIONS of paper/Snakefile: {section: (table kind, [sweeps])}, read from its text
    (a Snakefile is not importable)."""
    import ast
    import re

    text = (REPO_ROOT / "paper" / "Snakefile").read_text()
    block = re.search(r"^PAPER_SECTIONS = (\{.*?^\})$", text, re.S | re.M).group(1)
    sections = ast.literal_eval(block)
    return {name: (spec["table"], spec.get("sweeps", [name]), spec.get("figure")) for name, spec in sections.items()}


def test_every_paper_section_has_its_text_sweeps_table_and_figure_script():
    sections = _paper_sections()
    assert {"matrix", "published_timings", "liquid_transfer", "incline_block", "rolling_sphere",
            "defaults_pyramid", "defaults_wedge", "iterations", "dough_rolling_tolerance", "stack",
            "convergence_incline_block"} <= set(sections)
    for name, (table, sweeps, figure) in sections.items():
        assert (REPO_ROOT / "paper" / "sections" / f"{name}.tex").is_file(), name
        for sweep in sweeps:
            assert (REPO_ROOT / "data" / "sweeps" / f"{sweep}.toml").is_file(), (name, sweep)
        if table == "sweep":
            assert name in PAPER_TABLES, name
        if figure is not None:
            module = figure[0].rsplit(".", 1)[-1]
            assert (REPO_ROOT / "analysis" / "figures" / f"{module}.py").is_file(), (name, module)
    for name in PAPER_TABLES:
        assert sections.get(name, ("",))[0] == "sweep", f"PAPER_TABLES[{name!r}] is no section's table"


def test_quick_sweep_files_keep_their_sweeps_name_and_scene():
    """paper/quick/<sweep>.toml replaces data/sweeps/<sweep>.toml in the quick build: same
    name and scenario, fewer or coarser axis values."""
    import tomllib

    quick = sorted((REPO_ROOT / "paper" / "quick").glob("*.toml"))
    assert quick
    for path in quick:
        with open(path, "rb") as handle:
            short = tomllib.load(handle)["sweep"]
        with open(REPO_ROOT / "data" / "sweeps" / path.name, "rb") as handle:
            full = tomllib.load(handle)["sweep"]
        assert short["name"] == full["name"] == path.stem
        assert short["scenario"] == full["scenario"]
        assert (path.parent / short["config"]).resolve() == (REPO_ROOT / "data" / "sweeps" / full["config"]).resolve()


def test_sweep_table_of_one_scenario_and_an_optional_column(tmp_path):
    """A section may report one scenario of a sweep (the matrix's liquid_transfer); a column
    the scene writes only when it measures it (a stop time) is "--" when no run wrote it."""
    path = tmp_path / "results.csv"
    path.write_text("run_id,index,sweep,scenario,formulation,mu,status,message,steps,wall_s,regime,"
                    "analytic_stop_time,final_displacement,analytic_final_displacement,max_rel_error,"
                    "sliding_force_ratio,static_force_ratio,max_cone_margin\n"
                    "a,0,s,incline_block,sap,0.125,ok,,10,1.0,stop,0.515,0.03,0.0258,0.2,0.125,0.105,0.0\n"
                    "b,1,s,other_scene,sap,0.125,ok,,10,1.0,stop,0.515,0.03,0.0258,0.2,0.125,0.105,0.0\n")
    text = sweep_table(load_results(path), "incline_block", scenario="incline_block")
    rows = [line for line in text.splitlines() if line.endswith(r"\\")][1:]
    assert rows == [r"sap & 0.125 & ok & stop & -- & 0.515 & 30.0 & 25.8 & 0.200 & 0.125 & 0.105 & 0.0e+00 & 100.0 \\"]
    with pytest.raises(ValueError, match="no runs of scenario"):
        sweep_table(load_results(path), "incline_block", scenario="liquid_transfer")


def test_iterations_and_published_tables_from_run_files(tmp_path):
    """The solver statistics come from /solver_log: conftest's runs log outer and linear
    iterations 0..steps, and 0.1 ms per step."""
    from analysis.paper import iterations_table, published_table
    from conftest import write_run

    write_run(tmp_path / "aaaaaaaaaaaa.h5", formulation="sap", steps=100)
    write_run(tmp_path / "bbbbbbbbbbbb.h5", formulation="penalty", steps=100)
    text = iterations_table([tmp_path])
    assert r"all & \citet{ding_schroeder_penalty} & & & 3.1 & $<1000$ & $\le 20$ (cap) & 0 \\" in text
    assert r"ball\_on\_slope & sap & 1 & 101 & 50.00 & 100 & 1.0 & 0 \\" in text
    assert text.index("& sap &") < text.index("& penalty &")  # the formulations' order
    text = published_table(tmp_path / "results.csv")
    assert r"\citet{zong2024convex}: Ball on Slope & 0.2 & 6,777 & 10 & 1,160.0 & -- & 2.6 (6) \\" in text
    assert r"ball\_on\_slope & sap & " in text and " & 0.1 & 50.0 & 50.0 (100) \\" in text
    with pytest.raises(ValueError, match="no run with a solver log"):
        iterations_table([tmp_path / "empty"])


TINY = """
[squeezed_cube]
duration = 0.02
averaging_window = 0.01

[dam_break]
grid_spacing = 0.025
duration = 0.03

[convergence_ball_on_slope]
duration = 0.02
"""


def test_paper_builds_from_tiny_runs(contactlab_bin, tmp_path):
    """The real Snakefile, three of its sections (one a convergence study, whose labels carry
    Greek letters), every sweep cut to a few steps: the figures, tables and provenance, and
    the PDF where pdflatex is installed (scripts/install-deps --paper)."""
    snakemake = shutil.which("snakemake")
    assert snakemake, "snakemake is missing: run scripts/install-deps"
    quick = tmp_path / "tiny.toml"
    quick.write_text(TINY)
    work = tmp_path / "work"
    paper = work / "results" / "paper-quick" / "paper"
    latex = shutil.which("pdflatex") and shutil.which("bibtex")
    targets = ["paper"] if latex else [  # relative to --directory
        f"results/paper-quick/paper/{name}" for name in ("figures/squeezed_cube.png", "figures/dam_break.png",
                                       "tables/squeezed_cube.tex", "tables/dam_break.tex",
                                       "tables/convergence_ball_on_slope.tex", "provenance.tex", "body.tex")]
    result = subprocess.run(
        [snakemake, "-s", str(REPO_ROOT / "paper" / "Snakefile"), "--directory", str(work), "-j", "2",
         *targets, "--config", "quick=1", f"quick_overrides={quick}",
         "paper_sections=squeezed_cube,dam_break,convergence_ball_on_slope",
         f"contactlab={contactlab_bin}", f"python={sys.executable}"],
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    # The runs took the tiny overrides.
    manifest = (work / "results" / "paper-quick" / "sweeps" / "squeezed_cube" / "manifest.jsonl").read_text()
    assert '"duration":0.02' in manifest and manifest.count("\n") == 15
    table = (paper / "tables" / "squeezed_cube.tex").read_text()
    assert table.count(r"\\") == 16  # the header and one row per run
    assert "explicit\\_projection" in table
    assert (paper / "body.tex").read_text() == ("\\input{sections/squeezed_cube}\n\\input{sections/dam_break}\n"
                                                "\\input{sections/convergence_ball_on_slope}\n")
    assert "reduced resolution" in (paper / "provenance.tex").read_text()
    # The quick build took paper/quick/convergence_ball_on_slope.toml's grid spacings.
    convergence = (paper / "tables" / "convergence_ball_on_slope.tex").read_text()
    assert "grid\\_spacing 0.14" in convergence and r"spin $\omega$r/v" in convergence
    for figure in ("squeezed_cube", "dam_break"):
        assert (paper / "figures" / f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if not latex:
        pytest.skip("pdflatex or bibtex missing (scripts/install-deps --paper): the PDF itself was not built")
    assert (paper / "contactlab.pdf").read_bytes()[:5] == b"%PDF-"
    log = (paper / "contactlab.log").read_text(errors="replace")
    assert "undefined" not in log.lower(), "unresolved citations or references"


# Stand-ins for the programs the Snakefile's shell commands call: each appends its words to
# a record (one JSON list a line) and writes what the next rule needs. contactlab's runs exit
# with status 5, outside 0-3, so that sweep_run prints its message naming the log.
STAND_IN = """#!{python}
import json, sys
from pathlib import Path
name, words = Path(sys.argv[0]).name, sys.argv[1:]
with open({record!r}, "a") as handle:
    handle.write(json.dumps([name, *words]) + "\\n")
if name == "contactlab" and words[:2] == ["sweep", "expand"]:
    print(json.dumps({{"index": 0}}))
elif name == "contactlab" and words[0] == "run":
    sys.exit(5)
elif name == "contactlab" and words[0] == "collect":
    print("run_id,index,status")
elif name == "pdflatex":
    Path("contactlab.pdf").write_text("%PDF-")
for flag in ("--out", "--latex"):
    if name == "python" and flag in words:
        Path(words[words.index(flag) + 1]).write_text("stand-in\\n")
"""


def test_snakefile_quotes_every_substituted_word(tmp_path):
    """Every shell command of paper/Snakefile, run with a results_dir that holds command
    substitutions, a quote and blanks: nothing but the stand-in programs runs, and each gets
    the paths whole, including sweep_run's message about a run that recorded nothing."""
    snakemake = shutil.which("snakemake")
    assert snakemake, "snakemake is missing: run scripts/install-deps"
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    record = tmp_path / "record.jsonl"
    for name in ("contactlab", "python", "pdflatex", "bibtex"):
        program = bin_dir / name
        program.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
        program.chmod(0o755)
    results = "r $(touch pwned-dollar) `touch pwned-tick` it's"
    # Sections of every table kind (matrix, published, iterations, sweep with a scenario,
    # convergence), both kinds of figure input, measured orders, and the PDF.
    sections = ["matrix", "published_timings", "iterations", "ball_on_slope", "stack", "convergence_ball_on_slope"]
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"results_dir": results, "contactlab": str(bin_dir / "contactlab"),
                                  "python": str(bin_dir / "python"), "paper_sections": sections}))
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [snakemake, "-s", str(REPO_ROOT / "paper" / "Snakefile"), "--directory", str(work), "-j", "4",
         "paper", f"{results}/figures/sweep_squeezed_cube.png", "--configfile", str(config)],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not list(tmp_path.rglob("pwned-*")) and not list(REPO_ROOT.glob("pwned-*")), "a substitution ran"
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    sweeps = "matrix incline_block rolling_sphere defaults_pyramid defaults_wedge ball_on_slope " \
             "convergence_ball_on_slope squeezed_cube".split()
    for sweep in sweeps:
        folder = f"{results}/sweeps/{sweep}"
        assert ["contactlab", "run", "--manifest", f"{folder}/manifest.jsonl", "--index", "0", "--out-dir", folder,
                "--quiet"] in calls
        assert ["contactlab", "collect", folder] in calls
        assert json.loads((work / folder / "markers" / "0.done").read_text()) == {"index": 0, "exit_code": 5}
        assert (f"sweep_run: {sweep} index 0: contactlab exited with status 5 (see {folder}/logs/0.log); "
                "it will be listed as missing") in result.stderr
    paper = f"{results}/paper"
    for words in (
            ["-m", "analysis.figures.sweep_squeezed_cube", f"{results}/sweeps/squeezed_cube/results.csv", "--out",
             f"{results}/figures/sweep_squeezed_cube.png"],
            ["-m", "analysis.matrix", f"{results}/sweeps/matrix", "--latex", f"{paper}/tables/matrix.tex"],
            ["-m", "analysis.paper", "published", f"{results}/sweeps/matrix/results.csv", "--out",
             f"{paper}/tables/published_timings.tex"],
            ["-m", "analysis.paper", "iterations", *(f"{results}/sweeps/{sweep}" for sweep in sweeps[1:5]), "--out",
             f"{paper}/tables/iterations.tex"],
            ["-m", "analysis.paper", "table", "stack", f"{results}/sweeps/matrix/results.csv", "--scenario", "stack",
             "--out", f"{paper}/tables/stack.tex"],
            ["-m", "analysis.figures.stack", f"{results}/sweeps/matrix", "--out", f"{paper}/figures/stack.png"],
            ["-m", "analysis.convergence", "ball_on_slope", f"{results}/sweeps/ball_on_slope/results.csv", "--latex",
             f"{paper}/orders/ball_on_slope.tex"],
            ["-m", "analysis.paper", "provenance", "--out", f"{paper}/provenance.tex"]):
        assert ["python", *words] in calls, words
    assert (work / paper / "contactlab.pdf").read_text() == "%PDF-"


def _record(scenario, formulation="sap", status="ok", **summary):
    return {"scenario": scenario, "formulation": formulation, "status": status, "message": "",
            "summary": summary, "params": {}, "ms_per_step": 12.0, "iterations": 3.0, "contacts": 5.0}


def test_matrix_judges_each_scene_by_its_criterion():
    from analysis.matrix import judge, latex

    assert judge(_record("liquid_transfer", final_fraction_in_bin=0.96, max_wall_penetration_over_h=0.3))[0] \
        == "correct"
    assert judge(_record("liquid_transfer", final_fraction_in_bin=0.90, max_wall_penetration_over_h=0.3))[0] \
        == "wrong"
    assert judge(_record("liquid_transfer", final_fraction_in_bin=0.99, max_wall_penetration_over_h=0.6))[0] \
        == "wrong"
    assert judge(_record("column_collapse", error_vs_analytic=0.12))[0] == "correct"
    assert judge(_record("column_collapse", error_vs_analytic=0.29))[0] == "wrong"
    # No criterion, or none measurable, is "ran"; the run's status comes first.
    assert judge(_record("sand_on_sphere", displacement=-0.1, turn=-2.0))[0] == "ran"
    assert judge(_record("sand_pile", slope_angle=float("nan"), friction_angle=30.0))[0] == "ran"
    assert judge(_record("sand_pile", slope_angle=28.7, friction_angle=30.0))[0] == "correct"
    assert judge(_record("column_collapse", status="diverged", error_vs_analytic=0.0))[0] == "diverged"
    verdict, text, error = judge(_record("floating_box", draft=0.0297, analytic_draft_particle_contact=0.0275,
                                         error_vs_analytic=0.19))
    assert verdict == "wrong" and "+8.0%" in text and abs(error - 0.08) < 1e-9  # the criterion's error
    # The compact table: a row per scene, a column per formulation present.
    rows = [{"scenario": "dam_break", "formulation": name, "verdict": "correct", "text": "", "error": 0.017,
             "ms_per_step": 7.0, "iterations": 0.0, "contacts": 0.0} for name in ("sap", "penalty")]
    table = latex(rows)
    assert "scene & sap & penalty \\\\" in table
    assert "dam\\_break & correct, 1.7\\%, 7 ms & correct, 1.7\\%, 7 ms \\\\" in table


def test_matrix_lists_every_manifest_line_and_only_those(tmp_path):
    """A run that could not start is a row with its failure message, one never run is
    "missing", and a file of an earlier expansion not in the manifest is left out."""
    import json

    from analysis.matrix import matrix_rows
    from conftest import write_run

    lines = [{"index": 0, "run_id": "aaaaaaaaaaaa", "scenario": "ball_on_slope", "formulation": "sap"},
             {"index": 1, "run_id": "bbbbbbbbbbbb", "scenario": "sphere_into_sand", "formulation": "sap"},
             {"index": 2, "run_id": "cccccccccccc", "scenario": "dam_break", "formulation": "penalty"}]
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    write_run(tmp_path / "aaaaaaaaaaaa.h5", formulation="sap")
    write_run(tmp_path / "stale0000000.h5", formulation="penalty")  # not in the manifest
    (tmp_path / "bbbbbbbbbbbb.failed.json").write_text(json.dumps(
        {"run_id": "bbbbbbbbbbbb", "status": "failed", "message": "keys 'bed_width', 'grid_spacing': ..."}))
    rows = matrix_rows(tmp_path)
    assert [(r["scenario"], r["formulation"], r["verdict"]) for r in rows] == [
        ("ball_on_slope", "sap", rows[0]["verdict"]), ("dam_break", "penalty", "missing"),
        ("sphere_into_sand", "sap", "failed")]
    assert rows[0]["verdict"] in ("correct", "wrong")
    assert "bed_width" in rows[2]["text"]


def test_measured_order_is_the_log_log_slope_above_the_error_floor():
    from analysis.convergence import ERROR_FLOOR, measured_order

    h = [0.2, 0.1, 0.05]
    assert abs(measured_order(h, [0.04, 0.01, 0.0025]) - 2.0) < 1e-12
    assert abs(measured_order(h, [0.1, 0.1, 0.1])) < 1e-12
    # Errors at the solvers' tolerance or failed runs (NaN) do not count; fewer than two left: none.
    assert math.isnan(measured_order(h, [0.1, 0.1 * ERROR_FLOOR, float("nan")]))
    assert abs(measured_order(h, [0.08, 0.04, float("nan")]) - 1.0) < 1e-12


def test_convergence_table_and_figure_from_a_results_table(tmp_path):
    from analysis.convergence import figure, latex

    path = tmp_path / "results.csv"
    path.write_text("run_id,index,sweep,scenario,formulation,grid_spacing,status,message,steps,wall_s,"
                    "max_rel_error_velocity,final_spin_ratio,expected_spin_ratio\n"
                    + "".join(f"r{i},{i},c,ball_on_slope,sap,{h},ok,,50,1.0,{0.4 * h},{1 - 0.5 * h},1.0\n"
                              for i, h in enumerate((0.2, 0.1, 0.05)))
                    + "r3,3,c,ball_on_slope,penalty,0.2,diverged,boom,10,1.0,,,\n")
    table = load_results(path)
    text = latex(table, "convergence_ball_on_slope")
    assert r"sap & velocity & 0.08 & 0.04 & 0.02 & 1.00 \\" in text
    assert r"penalty & velocity & -- & -- & -- & -- \\" in text
    figure(table, "convergence_ball_on_slope", tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_apic_row_of_the_rolling_ball_study(tmp_path):
    """The closed-form share of the rolling deficit that APIC's affine inertia gives: a ball
    of inertia (2/5 + h^2/(2R^2)) m R^2 rolls at 1.4/(1 + beta) of the closed form's rate."""
    from analysis.convergence import apic_rolling_deficit, latex
    from conftest import write_run

    assert abs(apic_rolling_deficit(0.2, 0.5) - (1.0 - 1.4 / 1.48)) < 1e-12
    assert abs(apic_rolling_deficit(0.1, 0.5) / apic_rolling_deficit(0.05, 0.5) - 3.96) < 0.05  # ~h^2
    write_run(tmp_path / "aaaaaaaaaaaa.h5", formulation="sap", extra_params={"radius": 0.5})
    path = tmp_path / "results.csv"
    path.write_text("run_id,index,sweep,scenario,formulation,grid_spacing,status,message,steps,wall_s,"
                    "max_rel_error_velocity,final_spin_ratio,expected_spin_ratio\n"
                    + "".join(f"{run_id},{i},c,ball_on_slope,sap,{h},ok,,50,1.0,0.1,1.0,1.0\n"
                              for i, (run_id, h) in enumerate((("aaaaaaaaaaaa", 0.2), ("bbbbbbbbbbbb", 0.1)))))
    text = latex(load_results(path), "convergence_ball_on_slope")
    assert r"APIC affine inertia (closed form) & velocity & 0.0541 & 0.0141 & " in text


def test_incline_stop_time_error_is_against_the_threshold_crossing(tmp_path):
    """The error is measured from the point mass's crossing of the 2 mm/s threshold,
    t_s − v_stop/|a| (0.0103 s before t_s at mu 0.125), not from t_s: stops 4% and 2% after
    the crossing read 0.04 and 0.02 (order 1 in h); a block that never stopped (no stop_time)
    reads "no stop" and gives no order. No error sits at zero, where the last bit of two
    formulas for the crossing would decide the printed digits."""
    from analysis.convergence import latex

    t_s, s_s, v_stop = 0.5151764555970904, 0.02575882277985452, 0.002
    crossing = t_s - v_stop * t_s**2 / (2 * s_s)
    header = ("run_id,index,sweep,scenario,formulation,grid_spacing,status,message,steps,wall_s,"
              "analytic_stop_time,analytic_stop_distance,stop_speed,max_rel_error{}\n")
    path = tmp_path / "results.csv"
    path.write_text(header.format(",stop_time")
                    + "".join(f"r{i},{i},c,incline_block,sap,{h},ok,,10,1.0,{t_s},{s_s},{v_stop},0.01,"
                              f"{crossing * (1 + err)}\n" for i, (h, err) in enumerate(((0.036, 0.04), (0.018, 0.02)))))
    text = latex(load_results(path), "convergence_incline_block")
    assert r"sap & stop time & 0.04 & 0.02 & 1.00 \\" in text
    path.write_text(header.format("") + f"r0,0,c,incline_block,quasi_newton,0.036,ok,,10,1.0,{t_s},{s_s},{v_stop},0.2\n")
    assert r"quasi\_newton & stop time & no stop & -- \\" in latex(load_results(path), "convergence_incline_block")
