"""Sweep results: analysis.sweeps.load_results on hand-written CSVs, the two sweep figures on
synthetic results (with diverged, failed and missing runs), and paper/Snakefile (a dry run,
and a full run against a stand-in contactlab that follows the sweep contract).

Needs no contactlab executable; needs snakemake (scripts/install-deps installs it).
"""

import csv
import io
import math
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.sweeps import MissingColumnError, load_results, summary_column, swept_keys

REPO_ROOT = Path(__file__).resolve().parents[2]
FORMULATIONS = ("sap", "quasi_newton", "penalty", "hybrid_impulse")
FIXED_HEAD = ["run_id", "index", "sweep", "scenario", "formulation"]
FIXED_MIDDLE = ["status", "message", "steps", "wall_s"]


# --- load_results ------------------------------------------------------------------------

SMALL_CSV = (
    "run_id,index,sweep,scenario,formulation,mu,dt,quasi_newton.substeps,status,message,"
    "steps,wall_s,error_vs_analytic,regime,summary.mu\r\n"
    "0123456789ab,0,ball_on_slope,ball_on_slope,sap,0,0.02,,ok,,25,1.5,0.0123,slip,0\r\n"
    "111111111111,1,ball_on_slope,ball_on_slope,quasi_newton,0.29999999999999999,0.01,20,"
    "diverged,\"step 12: residual 1e+30, giving up\",12,0.25,nan,roll,0.3\r\n"
    "222222222222,2,ball_on_slope,ball_on_slope,penalty,0.3,0.005,,failed,"
    "\"bad input: \"\"stiffness\"\" < 0,\nsee log\",,,,,\r\n"
    "333333333333,3,ball_on_slope,ball_on_slope,hybrid_impulse,0.3,0.005,,missing,,,,,,\r\n"
    "444444444444,4,ball_on_slope,ball_on_slope,sap,0.3,1e-3,,ok,,500,-inf,inf,roll,0.3\r\n"
)


def _write(path, text):
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_load_results_types_and_values(tmp_path):
    table = load_results(_write(tmp_path / "results.csv", SMALL_CSV))
    assert len(table) == 5
    assert table.columns[:6] == ["run_id", "index", "sweep", "scenario", "formulation", "mu"]
    assert list(table) == table.columns and "regime" in table and "nope" not in table

    # Identifying columns stay text even when they look like numbers.
    assert table["run_id"].dtype == object
    assert table["run_id"][1] == "111111111111"
    assert list(table["status"]) == ["ok", "diverged", "failed", "missing", "ok"]
    # Quoted fields: commas, doubled quotes and a newline survive.
    assert table["message"][1] == "step 12: residual 1e+30, giving up"
    assert table["message"][2] == 'bad input: "stiffness" < 0,\nsee log'
    assert table["message"][0] == ""

    for name in ("index", "mu", "dt", "quasi_newton.substeps", "steps", "wall_s",
                 "error_vs_analytic", "summary.mu"):
        assert table[name].dtype == np.float64, name
    assert table["index"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert table["mu"][1] == 0.3  # 17 significant digits round-trip
    assert table["dt"][4] == 1e-3
    substeps = table["quasi_newton.substeps"]
    assert np.isnan(substeps[0]) and substeps[1] == 20.0
    error = table["error_vs_analytic"]
    assert error[0] == 0.0123 and np.isnan(error[1]) and np.isnan(error[2])
    assert math.isinf(error[4]) and error[4] > 0
    assert table["wall_s"][4] == -math.inf
    assert np.isnan(table["steps"][2]) and table["steps"][0] == 25.0

    assert table["regime"].dtype == object
    assert list(table["regime"]) == ["slip", "roll", "", "", "roll"]


def test_load_results_directory_where_and_swept_keys(tmp_path):
    _write(tmp_path / "results.csv", SMALL_CSV)
    table = load_results(tmp_path)  # the directory holding results.csv
    assert swept_keys(table) == ["mu", "dt", "quasi_newton.substeps"]

    sap = table.where(formulation="sap")
    assert len(sap) == 2 and set(sap["formulation"]) == {"sap"}
    assert sap["dt"].tolist() == [0.02, 1e-3]
    assert len(table.where(mu=0.3)) == 4
    assert table.where(mu=0.3, status="ok")["run_id"].tolist() == ["444444444444"]
    assert len(table.where(status=["failed", "missing"])) == 2
    assert table.where({"quasi_newton.substeps": 20})["formulation"].tolist() == ["quasi_newton"]
    assert len(table.where({"quasi_newton.substeps": float("nan")})) == 4
    assert len(table.where(formulation="no such")) == 0

    mask = table["dt"] < 0.01
    coarse = table[mask]
    assert len(coarse) == 3 and coarse.columns == table.columns
    assert len(table.where(mask, formulation="sap")) == 1
    assert [row["run_id"] for row in table[[4, 0]].rows()] == ["444444444444", "0123456789ab"]
    assert table[["formulation", "dt"]].columns == ["formulation", "dt"]

    # A summary attribute that collided with the swept key mu is prefixed "summary.".
    assert summary_column(table, "mu").tolist()[:2] == [0.0, 0.3]
    assert summary_column(table, "error_vs_analytic") is table["error_vs_analytic"]
    with pytest.raises(MissingColumnError, match="max_rel_error_velocity"):
        summary_column(table, "max_rel_error_velocity")
    with pytest.raises(KeyError, match="no column 'nope'"):
        table["nope"]


def test_load_results_errors_and_pandas(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_results(tmp_path / "absent.csv")
    with pytest.raises(FileNotFoundError, match="results.csv"):
        load_results(tmp_path)  # a directory without results.csv
    with pytest.raises(ValueError, match="line 3"):
        load_results(_write(tmp_path / "short.csv", "a,b\n1,2\n3\n"))
    with pytest.raises(ValueError, match="empty"):
        load_results(_write(tmp_path / "empty.csv", ""))

    table = load_results(_write(tmp_path / "results.csv", SMALL_CSV))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            table.to_pandas()
    else:
        frame = table.to_pandas()
        assert list(frame.columns) == table.columns and len(frame) == len(table)


# --- synthetic sweep results -------------------------------------------------------------

def _number(value):
    return "" if value is None else repr(float(value)) if isinstance(value, float) else str(value)


def write_results(path, sweep, rows, swept, summary_keys):
    """Write a results CSV following the collect contract (csv module quoting, \\r\\n)."""
    header = FIXED_HEAD + swept + FIXED_MIDDLE + sorted(summary_keys)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for index, row in enumerate(rows):
            values = {"run_id": f"{index:012x}", "index": index, "sweep": sweep,
                      "scenario": sweep, **row}
            writer.writerow([_number(values.get(name)) if not isinstance(values.get(name), str)
                             else values[name] for name in header])
    return path


def _blank_if_not_ok(row, keys):
    if row["status"] in ("failed", "missing"):
        for key in keys:
            row[key] = None
        if row["status"] == "failed":
            row["message"] = "contact solve: not converged, 50 iterations"
    return row


def ball_on_slope_results(path):
    """4 formulations x mu in {0, 0.3} x 3 dt; one diverged, one failed, one missing run."""
    summary = ["error_vs_analytic", "max_rel_error_velocity", "regime", "final_spin_ratio",
               "expected_spin_ratio", "max_normal_offset"]
    rows = []
    for f_index, formulation in enumerate(FORMULATIONS):
        for mu in (0.0, 0.3):
            for dt, substeps in ((0.02, 40), (0.01, 20), (0.005, 10)):
                error = (0.5 + f_index) * dt * (1.0 + mu)
                row = {"formulation": formulation, "mu": mu, "dt": dt,
                       "quasi_newton.substeps": substeps if formulation == "quasi_newton"
                       else None,
                       "status": "ok", "message": "", "steps": round(0.5 / dt), "wall_s": 2.5,
                       "error_vs_analytic": 0.5 * error, "max_rel_error_velocity": error,
                       "regime": "roll" if mu > 0 else "slip", "final_spin_ratio": 0.9,
                       "expected_spin_ratio": 1.0 if mu > 0 else 0.0,
                       "max_normal_offset": 1e-3}
                if (formulation, mu, dt) == ("penalty", 0.3, 0.02):
                    row.update(status="diverged", message="step 7: |v| > 1e6, stopped",
                               error_vs_analytic=math.nan, max_rel_error_velocity=math.inf)
                elif (formulation, mu, dt) == ("hybrid_impulse", 0.0, 0.005):
                    row["status"] = "failed"
                elif (formulation, mu, dt) == ("sap", 0.3, 0.005):
                    row["status"] = "missing"
                rows.append(_blank_if_not_ok(row, summary + ["steps", "wall_s"]))
    return write_results(path, "ball_on_slope", rows, ["mu", "dt", "quasi_newton.substeps"],
                         summary)


def squeezed_cube_results(path):
    """4 formulations x 3 dt; one diverged, one failed run."""
    sides = ("left", "right")
    summary = [f"{side}_f{c}_{stat}" for side in sides for c in "xyz" for stat in ("mean", "std")]
    summary += ["error_vs_analytic", "cube_vertical_drift", "cube_mass_sampled",
                "averaging_window"]
    half_weight = 0.5 * 0.4 * 9.81
    rows = []
    for f_index, formulation in enumerate(FORMULATIONS):
        for dt, substeps in ((0.004, 16), (0.002, 8), (0.001, 4)):
            row = {"formulation": formulation, "dt": dt,
                   "quasi_newton.substeps": substeps if formulation == "quasi_newton" else None,
                   "status": "ok", "message": "", "steps": round(0.4 / dt), "wall_s": 30.0,
                   "error_vs_analytic": 0.02 * (f_index + 1) * dt / 0.001,
                   "cube_vertical_drift": 1e-4, "cube_mass_sampled": 0.4,
                   "averaging_window": 0.2}
            for side in sides:
                row.update({f"{side}_fx_mean": 10.0, f"{side}_fx_std": 0.1,
                            f"{side}_fy_mean": 0.0, f"{side}_fy_std": 0.01,
                            f"{side}_fz_mean": half_weight * (1 + 0.01 * (f_index + 1)),
                            f"{side}_fz_std": half_weight * (f_index + 1) * dt * 10})
            if (formulation, dt) == ("penalty", 0.004):
                row.update(status="diverged", message="penetration > cube side, stopped")
            elif (formulation, dt) == ("quasi_newton", 0.001):
                row["status"] = "failed"
            rows.append(_blank_if_not_ok(row, summary + ["steps", "wall_s"]))
    return write_results(path, "squeezed_cube", rows, ["dt", "quasi_newton.substeps"], summary)


def _figure(module, results, out):
    return subprocess.run([sys.executable, "-m", module, str(results), "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


FIGURES = {"analysis.figures.sweep_ball_on_slope": (ball_on_slope_results,
                                                    "max_rel_error_velocity"),
           "analysis.figures.sweep_squeezed_cube": (squeezed_cube_results, "left_fz_std")}


def test_synthetic_results_round_trip(tmp_path):
    table = load_results(ball_on_slope_results(tmp_path / "results.csv"))
    assert len(table) == 24 and swept_keys(table) == ["mu", "dt", "quasi_newton.substeps"]
    assert sorted(table["status"]) == sorted(["ok"] * 21 + ["diverged", "failed", "missing"])
    assert table["max_rel_error_velocity"].dtype == np.float64
    assert np.isinf(table.where(status="diverged")["max_rel_error_velocity"][0])
    failed = table.where(status="failed")
    assert failed["message"][0] == "contact solve: not converged, 50 iterations"
    assert np.isnan(table.where(formulation="sap")["quasi_newton.substeps"]).all()
    assert table.where(formulation="quasi_newton", mu=0.0)["quasi_newton.substeps"].tolist() \
        == [40.0, 20.0, 10.0]
    cube = load_results(squeezed_cube_results(tmp_path / "cube.csv"))
    assert swept_keys(cube) == ["dt", "quasi_newton.substeps"] and len(cube) == 12


@pytest.mark.parametrize("module", sorted(FIGURES))
def test_sweep_figure_from_synthetic_results(module, tmp_path):
    make, _ = FIGURES[module]
    results = make(tmp_path / "results.csv")
    out = tmp_path / "figure.png"
    result = _figure(module, results, out)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 20_000
    # The directory holding results.csv works as well.
    result = _figure(module, tmp_path, tmp_path / "again.png")
    assert result.returncode == 0, result.stderr


def test_not_ok_runs_are_drawn(tmp_path, monkeypatch):
    """Every run that is not ok appears as a marker at the top edge, in the legend's count."""
    import matplotlib.pyplot as plt

    from analysis.figures import sweep_ball_on_slope

    captured = {}
    monkeypatch.setattr(plt, "close", lambda fig: captured.setdefault("fig", fig))
    table = load_results(ball_on_slope_results(tmp_path / "results.csv"))
    sweep_ball_on_slope.plot(table, tmp_path / "f.png")
    fig = captured["fig"]
    legend = " | ".join(text.get_text() for text in fig.legends[0].get_texts())
    for status in ("diverged (1 run", "failed (1 run", "missing (1 run"):
        assert status in legend, legend
    for formulation in FORMULATIONS:
        assert formulation in legend
    # Top-edge markers: y in axes coordinates, one per non-ok run per metric row (speed,
    # displacement, spin).
    top = [line for ax in fig.axes for line in ax.get_lines()
           if list(line.get_ydata()) == [0.96]]
    assert len(top) == 3 * 3
    titles = {ax.get_title() for ax in fig.axes}
    assert {"μ = 0 (slip)", "μ = 0.3 (roll)"} <= titles


@pytest.mark.parametrize("module", sorted(FIGURES))
def test_sweep_figure_errors(module, tmp_path):
    make, needed = FIGURES[module]
    out = tmp_path / "figure.png"

    result = _figure(module, tmp_path / "absent.csv", out)
    assert result.returncode != 0
    assert "absent.csv" in result.stderr and len(result.stderr.strip().splitlines()) == 1

    results = make(tmp_path / "results.csv")
    rows = list(csv.reader(io.StringIO(results.read_text(encoding="utf-8"))))
    drop = rows[0].index(needed)
    bad = tmp_path / "bad.csv"
    with open(bad, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([row[:drop] + row[drop + 1:] for row in rows])
    result = _figure(module, bad, out)
    assert result.returncode != 0
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert f"'{needed}'" in message and "Traceback" not in message
    assert not out.exists()


# --- paper/Snakefile ---------------------------------------------------------------------

def _snakemake():
    executable = shutil.which("snakemake")
    if executable is None:
        pytest.fail("snakemake is not installed: run scripts/install-deps (Debian package "
                    "snakemake) to drive paper/Snakefile")
    return executable


def test_snakefile_dry_run(tmp_path):
    command = [_snakemake(), "-n", "-s", str(REPO_ROOT / "paper" / "Snakefile"),
               "--directory", str(tmp_path), "--config", "contactlab=/bin/true"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "sweep_manifest" in output
    for sweep in ("ball_on_slope", "squeezed_cube"):
        assert f"results/sweeps/{sweep}/manifest.jsonl" in output, output
        assert f"sweep_{sweep}.png" in output, output


FAKE_CONTACTLAB = '''\
#!{python}
"""Stand-in for contactlab implementing the sweep contract with synthetic results."""
import csv, json, os, sys
from pathlib import Path
sys.path[:0] = [{tests!r}, {root!r}]
import test_sweep_analysis as t

args = sys.argv[1:]
if args[:2] == ["sweep", "expand"]:
    name = Path(args[2]).stem
    for index in range(5):
        print(json.dumps({{"index": index, "run_id": f"{{name[:4]}}{{index:08x}}",
                          "sweep": name, "scenario": name, "formulation": "sap",
                          "swept": {{"dt": 0.01}}, "parameters": {{}}}}))
elif args[0] == "run":
    manifest = Path(args[args.index("--manifest") + 1])
    index = int(args[args.index("--index") + 1])
    out = Path(args[args.index("--out-dir") + 1])
    line = json.loads(manifest.read_text().splitlines()[index])
    if index == 1:  # a recorded failure
        (out / (line["run_id"] + ".failed.json")).write_text("{{}}")
        sys.exit(2)
    if index == 2:  # a crash that records nothing
        os.kill(os.getpid(), 9)
    (out / (line["run_id"] + ".h5")).write_text("")
    sys.exit(3 if index == 3 else 0)
elif args[0] == "collect":
    directory = Path(args[1])
    name = directory.name
    make = t.ball_on_slope_results if name == "ball_on_slope" else t.squeezed_cube_results
    rows = list(csv.reader(make(directory / "synthetic.csv").open(newline="")))
    ids = [json.loads(l)["run_id"] for l in (directory / "manifest.jsonl").open()]
    status = {{i: "ok" if (directory / (r + ".h5")).exists() else
              "failed" if (directory / (r + ".failed.json")).exists() else "missing"
              for i, r in enumerate(ids)}}
    column = rows[0].index("status")
    for i, row in enumerate(rows[1:]):
        row[column] = status.get(i, row[column])
    csv.writer(sys.stdout).writerows(rows)
else:
    sys.exit(f"fake contactlab: unexpected arguments {{args}}")
'''


def test_snakefile_runs_with_a_stand_in_contactlab(tmp_path):
    """The whole workflow, locally: a failed, a diverged and a crashed (nothing recorded) run
    do not stop it; every index gets its marker; both figures are written."""
    fake = tmp_path / "fake-contactlab"
    fake.write_text(FAKE_CONTACTLAB.format(python=sys.executable,
                                           tests=str(Path(__file__).parent),
                                           root=str(REPO_ROOT)))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    command = [_snakemake(), "-s", str(REPO_ROOT / "paper" / "Snakefile"), "-j", "2",
               "--directory", str(work), "--config", f"contactlab={fake}",
               f"python={sys.executable}"]
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path / "mpl"))
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    for sweep in ("ball_on_slope", "squeezed_cube"):
        directory = work / "results" / "sweeps" / sweep
        markers = sorted(p.name for p in (directory / "markers").iterdir())
        assert markers == [f"{i}.done" for i in range(5)]
        codes = [(directory / "markers" / f"{i}.done").read_text() for i in range(5)]
        assert '"exit_code": 2' in codes[1] and '"exit_code": 137' in codes[2]
        assert '"exit_code": 3' in codes[3] and '"exit_code": 0' in codes[0]
        table = load_results(directory)
        assert table["status"][1] == "failed" and table["status"][2] == "missing"
        assert (work / "results" / "figures" / f"sweep_{sweep}.png").stat().st_size > 20_000
