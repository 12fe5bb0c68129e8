// Sweep files: the product of axes and zipped axes, keys of other formulations, stable and
// distinct run_ids, manifest lines that round-trip exactly, errors that name the key, the
// CSV table and the Slurm script.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "experiments/collect.h"
#include "experiments/file_safety.h"
#include "experiments/run_driver.h"
#include "experiments/slurm_script.h"
#include "experiments/sweep.h"
#include "experiments/sweep_records.h"

namespace contactlab::experiments {
namespace {

const std::string kScene = std::string(CONTACTLAB_SOURCE_DIR) + "/data/scenes/ball_on_slope.toml";

// Writes a sweep file into a fresh temporary folder and returns its path.
std::filesystem::path WriteSweep(const std::string& name, const std::string& text) {
  const auto directory = std::filesystem::temp_directory_path() / "contactlab_sweep_test";
  std::filesystem::create_directories(directory);
  const auto path = directory / (name + ".toml");
  std::ofstream(path) << text;
  return path;
}

std::string Header(const std::string& extra = "") {
  return "[sweep]\nscenario = \"ball_on_slope\"\nconfig = \"" + kScene + "\"\n" + extra;
}

ParameterValue SweptValue(const ManifestEntry& entry, const std::string& key) {
  for (const auto& [swept_key, value] : entry.swept) {
    if (swept_key == key) return value;
  }
  ADD_FAILURE() << "key " << key << " not swept in run " << entry.index;
  return ParameterValue(false);
}

bool HasSwept(const ManifestEntry& entry, const std::string& key) {
  for (const auto& [swept_key, value] : entry.swept) {
    if (swept_key == key) return true;
  }
  return false;
}

TEST(Sweep, ProductOfAxesInFileOrderFirstSlowest) {
  const auto file = WriteSweep("product", Header("formulation = \"sap\"\n") +
                                              "[base]\nduration = 0.1\n"
                                              "[axes]\nmu = [0.0, 0.3, 0.6]\n"
                                              "[[zip]]\ndt = [0.02, 0.01]\ngrid_spacing = [0.25, 0.2]\n");
  const SweepDefinition sweep = LoadSweep(file);
  EXPECT_EQ(sweep.name, "product");  // the file stem when [sweep] has no name
  const auto entries = ExpandSweep(sweep);
  ASSERT_EQ(entries.size(), 6u);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].index, static_cast<int>(i));
    EXPECT_EQ(entries[i].formulation, "sap");
    // mu varies slowest (it comes first), the zipped pair fastest and together.
    EXPECT_EQ(std::get<double>(SweptValue(entries[i], "mu")), (std::vector<double>{0.0, 0.3, 0.6})[i / 2]);
    const double dt = std::get<double>(SweptValue(entries[i], "dt"));
    const double h = std::get<double>(SweptValue(entries[i], "grid_spacing"));
    EXPECT_EQ(dt, i % 2 == 0 ? 0.02 : 0.01);
    EXPECT_EQ(h, i % 2 == 0 ? 0.25 : 0.2);
  }
  // Every line carries the whole configuration: base, scene file and defaults included.
  bool found_duration = false, found_radius = false;
  for (const auto& [key, value] : entries[0].parameters) {
    if (key == "duration") found_duration = std::get<double>(value) == 0.1;
    if (key == "radius") found_radius = std::get<double>(value) == 0.5;
  }
  EXPECT_TRUE(found_duration);
  EXPECT_TRUE(found_radius);
}

TEST(Sweep, RunIdsAreStableDistinctAndMatchAPlainRun) {
  const auto file = WriteSweep("ids", Header() + "[axes]\nformulation = [\"sap\", \"penalty\"]\nmu = [0.0, 0.3]\n");
  const auto first = ExpandSweep(LoadSweep(file));
  const auto second = ExpandSweep(LoadSweep(file));
  ASSERT_EQ(first.size(), 4u);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].run_id, second[i].run_id);
    EXPECT_EQ(first[i].run_id.size(), 12u);
    ids.insert(first[i].run_id);
  }
  EXPECT_EQ(ids.size(), 4u);
  // The run_id is the one `contactlab run` records for the same configuration.
  RunRequest request;
  request.scenario = "ball_on_slope";
  request.formulation = "penalty";
  request.config_file = kScene;
  request.overrides = {"mu=0.3"};
  EXPECT_EQ(ResolveRun(request).run_id, first[3].run_id);
  EXPECT_EQ(ResolveManifestEntry(first[3]).run_id, first[3].run_id);
}

TEST(Sweep, KeysOfAnotherFormulationDoNotApplyAndDuplicatesAreDropped) {
  // substeps is not zipped with the formulation: sap would get two identical runs.
  const auto file = WriteSweep("foreign", Header() +
                                              "[base.quasi_newton]\nrelative_tolerance = 1e-3\n"
                                              "[axes]\nformulation = [\"sap\", \"quasi_newton\"]\n"
                                              "\"quasi_newton.substeps\" = [10, 20]\n");
  std::vector<std::string> warnings;
  const auto entries = ExpandSweep(LoadSweep(file), &warnings);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].formulation, "sap");
  EXPECT_FALSE(HasSwept(entries[0], "quasi_newton.substeps"));
  for (const auto& [key, value] : entries[0].parameters) EXPECT_NE(key.rfind("quasi_newton.", 0), 0u) << key;
  EXPECT_EQ(entries[1].formulation, "quasi_newton");
  EXPECT_EQ(std::get<std::int64_t>(SweptValue(entries[1], "quasi_newton.substeps")), 10);
  EXPECT_EQ(std::get<std::int64_t>(SweptValue(entries[2], "quasi_newton.substeps")), 20);
  bool tolerance_applied = false;
  for (const auto& [key, value] : entries[2].parameters) {
    if (key == "quasi_newton.relative_tolerance") tolerance_applied = std::get<double>(value) == 1e-3;
  }
  EXPECT_TRUE(tolerance_applied);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 combinations repeat"), std::string::npos) << warnings[0];
}

TEST(Sweep, InvalidValuesAreWarnedAboutButStillListed) {
  const auto file = WriteSweep("invalid", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.3, -1.0]\n");
  std::vector<std::string> warnings;
  const auto entries = ExpandSweep(LoadSweep(file), &warnings);
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("run 1"), std::string::npos);
  EXPECT_NE(warnings[0].find("'mu'"), std::string::npos);
  EXPECT_NO_THROW(ResolveManifestEntry(entries[0]));
  EXPECT_THROW(ResolveManifestEntry(entries[1]), InputError);
}

// "1e-6, 2e-6, …": `count` distinct values for an axis.
std::string NumberList(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += (i > 1 ? ", " : "") + std::to_string(i) + "e-6";
  return text;
}

// "0, 0, …, 0": `count` values.
std::string Zeros(int count) {
  std::string text = "0";
  for (int i = 1; i < count; ++i) text += ", 0";
  return text;
}

// `count` axes k0, k1, … of `size` values each (their product: size^count combinations).
std::string Axes(int count, int size) {
  std::string text;
  for (int k = 0; k < count; ++k) {
    text += 'k';
    text += std::to_string(k);
    text += " = [" + NumberList(size) + "]\n";
  }
  return text;
}

// "a.a.a…": a dotted key of `levels` components.
std::string DottedKey(int levels) {
  std::string key = "a";
  for (int i = 1; i < levels; ++i) key += ".a";
  return key;
}

struct BadSweepCase {
  std::string text;
  std::string expected_fragment;
};

// Names the case by what its error must mention (instead of a byte dump in test listings).
void PrintTo(const BadSweepCase& error_case, std::ostream* out) {
  *out << error_case.expected_fragment;
}

class BadSweep : public testing::TestWithParam<BadSweepCase> {};

TEST_P(BadSweep, OneLineErrorNamesTheKey) {
  // ctest runs the cases in parallel processes: one file per case.
  const std::string name = testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto file = WriteSweep("bad_" + name.substr(name.rfind('/') + 1), GetParam().text);
  try {
    ExpandSweep(LoadSweep(file));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadSweep,
    testing::Values(
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nfriction = [0.1]\n", "'friction'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = []\n", "'mu'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = 0.3\n", "'mu'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = [\"high\"]\n", "'mu'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[[zip]]\nmu = [0.1, 0.2]\ndt = [0.01]\n", "'dt'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.1]\n[[zip]]\nmu = [0.2]\n", "'mu'"},
        BadSweepCase{Header() + "[axes]\nmu = [0.1]\n", "formulation"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nformulation = [\"sap\"]\n", "formulation"},
        BadSweepCase{Header() + "[axes]\nformulation = [\"magic\"]\n", "magic"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axis]\nmu = [0.1]\n", "'axis'"},
        BadSweepCase{Header("formulation = \"sap\"\ncolour = \"red\"\n"), "'colour'"},
        BadSweepCase{"[sweep]\nformulation = \"sap\"\n", "'scenario'"},
        BadSweepCase{"[sweep]\nscenario = \"ball_on_slope\"\nformulation = \"sap\"\nconfig = \"nowhere.toml\"\n",
                     "nowhere.toml"},
        // The scenario as an axis: not also fixed, its [base.<scenario>] only for a scenario it
        // runs, "{scenario}" only when it is swept.
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nscenario = [\"ball_on_slope\"]\n", "'scenario'"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[base.squeezed_cube]\nduration = 0.1\n",
                     "[base.squeezed_cube]"},
        BadSweepCase{"[sweep]\nscenario = \"ball_on_slope\"\nformulation = \"sap\"\nconfig = \"{scenario}.toml\"\n",
                     "{scenario}"},
        BadSweepCase{"[sweep]\nformulation = \"sap\"\n[axes]\nscenario = [\"nowhere_scene\"]\n", "nowhere_scene"},
        BadSweepCase{Header("formulation = \"sap\"\ndescription = [1, 2]\n"), "'description'"},
        // Sizes counted with overflow checks before any run is resolved: 2^64 combinations
        // must not wrap to none, 10^6 must not be enumerated.
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = [" + NumberList(1000) + "]\ndt = [" +
                         NumberList(1000) + "]\n",
                     "1000 x 1000 combinations"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\n" + Axes(8, 256), "more than the 100000 runs"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.1]\nunknown_key_here = [1]\n" +
                         "[[zip]]\ndt = [" + Zeros(100001) + "]\n",
                     "more than the 100000 runs"},
        // Nesting past the limit, as a dotted key and as a table header.
        BadSweepCase{Header("formulation = \"sap\"\n") + "[base]\n" + DottedKey(5000) + " = 1\n", "nests keys"},
        BadSweepCase{Header("formulation = \"sap\"\n") + "[" + DottedKey(40) + "]\n", "40 deep"}),
    [](const testing::TestParamInfo<BadSweepCase>& info) { return "case" + std::to_string(info.index); });

TEST(Sweep, ScenarioAxisTakesEachScenesFileAndItsOwnBase) {
  // A matrix: two scenes under two formulations, each scene from its own file, with keys only
  // its runs take ([base.<scenario>]) after the plain [base].
  const std::string scenes = std::string(CONTACTLAB_SOURCE_DIR) + "/data/scenes/";
  const auto file = WriteSweep("matrix", "[sweep]\nconfig = \"" + scenes +
                                             "{scenario}.toml\"\n"
                                             "[base]\nduration = 0.05\n"
                                             "[base.squeezed_cube]\ngrid_spacing = 0.02\naveraging_window = 0.02\n"
                                             "[base.ball_on_slope]\nduration = 0.03\n"
                                             "[axes]\nscenario = [\"ball_on_slope\", \"squeezed_cube\"]\n"
                                             "formulation = [\"sap\", \"hybrid_impulse\"]\n");
  const auto entries = ExpandSweep(LoadSweep(file));
  ASSERT_EQ(entries.size(), 4u);
  const auto parameter = [](const ManifestEntry& entry, const std::string& key) {
    for (const auto& [name, value] : entry.parameters) {
      if (name == key) return value;
    }
    ADD_FAILURE() << key << " missing";
    return ParameterValue(false);
  };
  EXPECT_EQ(entries[0].scenario, "ball_on_slope");
  EXPECT_EQ(entries[1].formulation, "hybrid_impulse");
  EXPECT_EQ(entries[3].scenario, "squeezed_cube");
  // The scene's own file: the ball's radius 0.5 m, the cube's squeeze force 10 N.
  EXPECT_EQ(std::get<double>(parameter(entries[0], "radius")), 0.5);
  EXPECT_EQ(std::get<double>(parameter(entries[2], "squeeze_force")), 10.0);
  // [base] for both, [base.<scenario>] after it for its own runs only.
  EXPECT_EQ(std::get<double>(parameter(entries[0], "duration")), 0.03);
  EXPECT_EQ(std::get<double>(parameter(entries[2], "duration")), 0.05);
  EXPECT_EQ(std::get<double>(parameter(entries[2], "grid_spacing")), 0.02);
  EXPECT_EQ(std::get<double>(parameter(entries[0], "grid_spacing")), 0.2);
  // The scenario is a column of its own, not a swept key.
  EXPECT_FALSE(HasSwept(entries[0], "scenario"));
  std::set<std::string> ids;
  for (const ManifestEntry& entry : entries) ids.insert(entry.run_id);
  EXPECT_EQ(ids.size(), 4u);
}

TEST(Manifest, LinesRoundTripExactly) {
  ManifestEntry entry;
  entry.index = 7;
  entry.run_id = "0123456789ab";
  entry.sweep = "s";
  entry.scenario = "ball_on_slope";
  entry.formulation = "sap";
  entry.swept = {{"mu", 0.1 + 0.2}, {"quasi_newton.substeps", std::int64_t{20}}};
  entry.parameters = {
      {"a", true}, {"b", std::int64_t{-3}}, {"c", 1e-300}, {"d", std::string("x \"y\"")}, {"e", 100000000.0}};
  const ManifestEntry back = FromJsonLine(ToJsonLine(entry), "test");
  EXPECT_EQ(ToJsonLine(entry).find('\n'), std::string::npos);
  EXPECT_EQ(back.index, 7);
  EXPECT_EQ(back.run_id, entry.run_id);
  ASSERT_EQ(back.swept.size(), 2u);
  EXPECT_EQ(back.swept[0].first, "mu");  // axis order is kept
  EXPECT_EQ(std::get<double>(back.swept[0].second), 0.1 + 0.2);
  EXPECT_EQ(std::get<std::int64_t>(back.swept[1].second), 20);
  std::map<std::string, ParameterValue> parameters(back.parameters.begin(), back.parameters.end());
  EXPECT_EQ(std::get<bool>(parameters["a"]), true);
  EXPECT_EQ(std::get<std::int64_t>(parameters["b"]), -3);
  EXPECT_EQ(std::get<double>(parameters["c"]), 1e-300);
  EXPECT_EQ(std::get<std::string>(parameters["d"]), "x \"y\"");
  EXPECT_EQ(std::get<double>(parameters["e"]), 1e8);  // a real stays real
  EXPECT_THROW(FromJsonLine("{\"index\": 1}", "test"), InputError);
  EXPECT_THROW(FromJsonLine("not json", "test"), InputError);
}

TEST(Manifest, ReadsTheRequestedLine) {
  const auto file = WriteSweep("lines", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0, 0.1, 0.2]\n");
  const auto entries = ExpandSweep(LoadSweep(file));
  const auto manifest = file.parent_path() / "lines.jsonl";
  WriteManifest(manifest, entries);
  EXPECT_EQ(ReadManifest(manifest).size(), 3u);
  EXPECT_EQ(ReadManifestEntry(manifest, 2).run_id, entries[2].run_id);
  try {
    ReadManifestEntry(manifest, 3);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--index 3"), std::string::npos) << error.what();
  }
  EXPECT_THROW(ReadManifestEntry(manifest, -1), InputError);
}

TEST(Collect, CsvQuotesFieldsAndPrefixesCollidingSummaryNames) {
  CollectedTable table;
  table.swept_keys = {"mu"};
  CollectedRun run;
  run.run_id = "aaaaaaaaaaaa";
  run.index = 0;
  run.sweep = "s";
  run.scenario = "ball_on_slope";
  run.formulation = "sap";
  run.swept["mu"] = 0.3;
  run.record.status = "failed";
  run.record.message = "key 'mu', \"quoted\"\nsecond line";
  run.record.summary = {{"mu", 1.5}, {"error_vs_analytic", 0.25}, {"steps", std::int64_t{3}}, {"wall_s", 0.5}};
  table.runs.push_back(run);
  CollectedRun missing;
  missing.run_id = "bbbbbbbbbbbb";
  missing.index = 1;
  missing.record.status = "missing";
  table.runs.push_back(missing);
  std::ostringstream csv;
  WriteCsv(table, csv);
  EXPECT_EQ(csv.str(),
            "run_id,index,sweep,scenario,formulation,mu,status,message,steps,wall_s,error_vs_analytic,summary.mu\n"
            "aaaaaaaaaaaa,0,s,ball_on_slope,sap,0.3,failed,\"key 'mu', \"\"quoted\"\"\nsecond line\",3,0.5,0.25,1.5\n"
            "bbbbbbbbbbbb,1,,,,,missing,,,,,\n");
}

TEST(Slurm, ArrayCoversTheManifestAndRejectsUnquotableValues) {
  const auto file = WriteSweep("slurm", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0, 0.1, 0.2]\n");
  const SweepDefinition sweep = LoadSweep(file);
  SlurmOptions options;
  options.out_dir = "/shared/runs";
  options.executable = "/opt/contactlab/bin/contactlab";
  options.max_concurrent = 2;
  const std::string script = SlurmArrayScript(sweep, 3, options);
  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_NE(script.find("#SBATCH --array=0-2%2\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--index \"$SLURM_ARRAY_TASK_ID\""), std::string::npos);
  EXPECT_NE(script.find("'/shared/runs/manifest.jsonl'"), std::string::npos);
  // Every #SBATCH line comes before the first command, or Slurm ignores it.
  EXPECT_LT(script.rfind("#SBATCH"), script.find("set -euo pipefail"));
  // A task signalled before its time limit checkpoints and requeues itself.
  EXPECT_NE(script.find("#SBATCH --signal=B:USR1@300\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --requeue\n"), std::string::npos);
  EXPECT_NE(script.find("--checkpoint-on-signal --checkpoint-every '30min'"), std::string::npos);
  EXPECT_NE(script.find("scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\""), std::string::npos);
  options.signal_seconds = 0;
  EXPECT_THROW(SlurmArrayScript(sweep, 3, options), InputError);
  options.signal_seconds = 300;
  options.checkpoint_every = "soon";
  EXPECT_THROW(SlurmArrayScript(sweep, 3, options), InputError);
  options.checkpoint_every = "30min";
  options.time_limit = "1 hour";
  EXPECT_THROW(SlurmArrayScript(sweep, 3, options), InputError);
  options.time_limit = "01:00:00";
  EXPECT_THROW(SlurmArrayScript(sweep, 0, options), InputError);
}

TEST(Slurm, PathsAreQuotedSoTheScriptRunsWhatItSays) {
  // A sweep folder and an executable whose names hold quotes, spaces and a command
  // substitution: the script must pass them through verbatim and execute nothing else.
  const auto base = std::filesystem::temp_directory_path() / "contactlab_slurm_quoting";
  std::filesystem::remove_all(base);
  const auto odd = base / "it's $(touch pwned) `touch pwned2` \"x\"";
  std::filesystem::create_directories(odd);
  const auto file = odd / "quoted.toml";
  std::ofstream(file) << Header("formulation = \"sap\"\n") << "[axes]\nmu = [0.0, 0.1]\n";
  const SweepDefinition sweep = LoadSweep(file);
  const auto executable = odd / "fake contactlab";
  const auto arguments = base / "arguments.txt";
  std::ofstream(executable) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" << arguments.string() << "'\n";
  std::filesystem::permissions(executable, std::filesystem::perms::owner_all);
  SlurmOptions options;
  options.out_dir = base / "runs";
  options.executable = executable;
  const auto script = base / "sweep.slurm";
  std::ofstream(script) << SlurmArrayScript(sweep, 2, options);
  const std::string command = "cd '" + base.string() + "' && SLURM_ARRAY_TASK_ID=1 bash sweep.slurm";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(arguments);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "run\n--manifest\n" + (base / "runs" / "manifest.jsonl").string() + "\n--index\n1\n--out-dir\n" +
                      (base / "runs").string() + "\n--quiet\n--checkpoint-on-signal\n--checkpoint-every\n30min\n");
  for (const char* planted : {"pwned", "pwned2"}) {
    EXPECT_FALSE(std::filesystem::exists(base / planted));
    EXPECT_FALSE(std::filesystem::exists(odd / planted));
  }
  // A newline cannot be carried into the script's comments: refused, naming the path.
  const auto newline = base / "a\ntouch pwned";
  std::filesystem::create_directories(newline);
  std::filesystem::copy_file(file, newline / "quoted.toml");
  try {
    SlurmArrayScript(LoadSweep(newline / "quoted.toml"), 2, options);
    FAIL() << "a newline in the sweep path was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("control character"), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
  }
}

TEST(Manifest, RunIdsThatAreNotTwelveHexDigitsAreRefused) {
  // A run_id names files inside the output folder: a path, an absolute name or anything but
  // the 12 hex digits RunId writes is refused when the line is read.
  const auto file = WriteSweep("run_ids", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0]\n");
  ManifestEntry entry = ExpandSweep(LoadSweep(file)).front();
  for (const std::string run_id : {"../../x", "/tmp/x", "ABCDEF012345", "0123456789a", "0123456789abc", ""}) {
    entry.run_id = run_id;
    EXPECT_THROW(FromJsonLine(ToJsonLine(entry), "m:1"), InputError) << run_id;
  }
  const auto out_dir = std::filesystem::temp_directory_path() / "contactlab_run_id_test" / "a" / "b";
  std::filesystem::remove_all(out_dir.parent_path().parent_path());
  const auto manifest = out_dir.parent_path() / "manifest.jsonl";
  std::filesystem::create_directories(out_dir);
  entry.run_id = "../../escaped";
  std::ofstream(manifest) << ToJsonLine(entry) << "\n";
  EXPECT_THROW(RunManifestEntry(manifest, 0, out_dir, true), InputError);
  EXPECT_FALSE(std::filesystem::exists(out_dir.parent_path().parent_path() / "escaped.failed.json"));
  EXPECT_TRUE(std::filesystem::is_empty(out_dir));
}

TEST(Manifest, IndicesAreWholeNumbersWithinTheSweepLimit) {
  // An index that is not a whole number in [0, kMaxSweepRuns) is refused, never read as
  // another one (0.9 as 0, 2^32 as 0).
  const auto file = WriteSweep("indices", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0]\n");
  const std::string line = ToJsonLine(ExpandSweep(LoadSweep(file)).front());
  const std::string field = "\"index\":0,";
  ASSERT_NE(line.find(field), std::string::npos) << line;
  for (const std::string index : {"4294967296", "18446744073709551615", "0.9", "1e3", "-1", "\"0\"", "100000"}) {
    std::string changed = line;
    changed.replace(changed.find(field), field.size(), "\"index\":" + index + ",");
    try {
      FromJsonLine(changed, "m:1");
      ADD_FAILURE() << "index " << index << " was accepted";
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("field 'index' = "), std::string::npos) << message;
      EXPECT_NE(message.find("is not a whole number from 0 to 99999"), std::string::npos) << message;
    }
  }
  std::string largest = line;
  largest.replace(largest.find(field), field.size(), "\"index\":99999,");
  EXPECT_EQ(FromJsonLine(largest, "m:1").index, 99999);
}

TEST(Slurm, ControlCharactersNeverReachADirective) {
  const auto file = WriteSweep("slurm_controls", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0]\n");
  const SweepDefinition sweep = LoadSweep(file);
  for (const char control : {'\r', '\v', '\f', '\x1b', '\x7f'}) {
    for (int option = 0; option < 3; ++option) {
      SlurmOptions options;
      options.out_dir = "/shared/runs";
      options.executable = "/opt/contactlab/bin/contactlab";
      std::string& value = option == 0 ? options.partition : option == 1 ? options.time_limit : options.memory;
      value = std::string("debug") + control + "#SBATCH --uid=0";
      EXPECT_THROW(SlurmArrayScript(sweep, 1, options), InputError)
          << "option " << option << " byte " << static_cast<int>(control);
    }
  }
}

TEST(SweepOutputs, NoOutputReplacesAnInput) {
  const auto folder = std::filesystem::temp_directory_path() / "contactlab_not_an_input";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder / "runs");
  const auto file = WriteSweep("inputs", Header("formulation = \"sap\"\n") + "[axes]\nmu = [0.0]\n");
  const auto inputs = SweepInputs(LoadSweep(file));
  ASSERT_EQ(inputs.size(), 2u);  // the sweep file and its scene file
  EXPECT_THROW(RequireNotAnInput(file, "Slurm script (--script)", inputs), InputError);
  EXPECT_THROW(RequireNotAnInput(kScene, "Slurm script (--script)", inputs), InputError);
  // The same file by another spelling, and through a hard link.
  EXPECT_THROW(RequireNotAnInput(file.parent_path() / "." / file.filename(), "table", inputs), InputError);
  std::filesystem::create_hard_link(file, folder / "linked.toml");
  EXPECT_THROW(RequireNotAnInput(folder / "linked.toml", "table", inputs), InputError);
  EXPECT_NO_THROW(RequireNotAnInput(folder / "sweep.slurm", "Slurm script (--script)", inputs));
  // collect -o: neither the folder's manifest nor one of its run files.
  std::ofstream(folder / "runs" / "manifest.jsonl") << "\n";
  std::ofstream(folder / "runs" / "0123456789ab.h5") << "x";
  const auto collected = CollectInputs(folder / "runs");
  EXPECT_THROW(RequireNotAnInput(folder / "runs" / "manifest.jsonl", "table (-o)", collected), InputError);
  EXPECT_THROW(RequireNotAnInput(folder / "runs" / "0123456789ab.h5", "table (-o)", collected), InputError);
  EXPECT_NO_THROW(RequireNotAnInput(folder / "runs" / "results.csv", "table (-o)", collected));
  std::filesystem::remove_all(folder);
}

TEST(SweepOutputs, SubfolderIsNeverALink) {
  // A planted link named like the log folder is refused, to a folder or to nothing; files
  // are created through the held folder, so a swap after the check does not redirect them.
  const auto folder = std::filesystem::temp_directory_path() / "contactlab_subfolder_test";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder / "out");
  std::filesystem::create_directories(folder / "elsewhere");
  std::filesystem::create_directory_symlink(folder / "elsewhere", folder / "out" / "logs");
  EXPECT_THROW(Subfolder(folder / "out", "logs", "log folder"), InputError);
  std::filesystem::remove(folder / "out" / "logs");
  std::filesystem::create_symlink(folder / "nowhere", folder / "out" / "logs");
  EXPECT_THROW(Subfolder(folder / "out", "logs", "log folder"), InputError);
  EXPECT_FALSE(std::filesystem::exists(folder / "nowhere"));
  std::filesystem::remove(folder / "out" / "logs");
  std::ofstream(folder / "out" / "logs") << "a file";
  EXPECT_THROW(Subfolder(folder / "out", "logs", "log folder"), InputError);
  std::filesystem::remove(folder / "out" / "logs");

  const Subfolder logs(folder / "out", "logs", "log folder");
  std::filesystem::rename(folder / "out" / "logs", folder / "out" / "moved");
  std::filesystem::create_directory_symlink(folder / "elsewhere", folder / "out" / "logs");
  const int descriptor = logs.CreateFreshFile("0_0123456789ab.log");
  ASSERT_GE(descriptor, 0);
  ::close(descriptor);
  EXPECT_TRUE(std::filesystem::exists(folder / "out" / "moved" / "0_0123456789ab.log"));
  EXPECT_TRUE(std::filesystem::is_empty(folder / "elsewhere"));
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace contactlab::experiments
