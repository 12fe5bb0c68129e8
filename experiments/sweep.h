#pragma once
// Sweeps: a base run plus axes of values whose cartesian product is a set of runs, each
// resolved to a complete configuration with a stable run_id, written one per line to a
// manifest (JSON Lines) that any executor can run by index: the local process pool, a
// Slurm job array, or Snakemake.
//
// A sweep file (data/sweeps/*.toml):
//
//   [sweep]
//   name = "ball_on_slope"                 # output folder and job name (default: file stem)
//   scenario = "ball_on_slope"
//   formulation = "sap"                    # unless formulation is an axis
//   config = "../scenes/ball_on_slope.toml"   # scene TOML, relative to the sweep file
//
//   [base]                                 # --set overrides applied to every run
//   duration = 0.5
//
//   [axes]                                 # one list per key; the runs are the product
//   formulation = ["sap", "penalty"]
//   mu = [0.0, 0.3]
//
//   [[zip]]                                # a zipped axis: equal-length lists varying together
//   dt = [0.02, 0.01]
//   "quasi_newton.substeps" = [40, 20]
//
// Axes multiply in the order they appear in the file, the first varying slowest. A key that
// belongs to another formulation than a run's (quasi_newton.substeps for a sap run) does not
// apply to that run; runs whose resolved configurations coincide are kept once.
//
// The scenario may be an axis too, for a matrix of scenes (data/sweeps/matrix.toml): then
// [sweep] has no scenario, its config names each scene's file through "{scenario}"
// ("../scenes/{scenario}.toml"), and a [base.<scenario>] table holds keys that only that
// scene's runs take (its resolution and duration), after the plain [base] keys:
//
//   [base.ball_on_slope]
//   duration = 0.3
//
//   [axes]
//   scenario = ["ball_on_slope", "squeezed_cube"]
//   formulation = ["sap", "penalty"]
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formulations/parameters.h"

namespace contactlab::experiments {

// One axis of the product: a single key, or several zipped keys with equal-length lists.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<ParameterValue>> values;  // values[k][i]: key k at position i
  std::size_t size() const { return values.empty() ? 0 : values.front().size(); }
};

struct SweepDefinition {
  std::filesystem::path file;  // the sweep TOML, for messages
  std::string name;
  std::string scenario;     // when "scenario" is not an axis
  std::string formulation;  // when "formulation" is not an axis
  // The scene file, resolved against the sweep file's folder; with the scenario swept it may
  // hold "{scenario}", replaced by each run's scenario (ConfigFile).
  std::optional<std::filesystem::path> config_file;
  std::vector<std::pair<std::string, ParameterValue>> base;
  // [base.<scenario>]: keys that only the runs of that scenario take, after `base`.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, ParameterValue>>>> scenario_base;
  std::vector<SweepAxis> axes;  // in file order; "formulation" may be a key
  // "key=value" assignments from the command line (`sweep expand --set`, `sweep run --set`),
  // applied to every run after [base] and before the axes, typed by the parameter they set;
  // like a swept key, one of another formulation does not apply to a run, and
  // "<scenario>.key=value" applies to that scenario's runs only. The paper's quick build
  // shortens its sweeps this way (paper/quick.toml).
  std::vector<std::string> overrides;
};

// One resolved run of a sweep: a line of the manifest.
struct ManifestEntry {
  int index = 0;
  std::string run_id;
  std::string sweep;
  std::string scenario;
  std::string formulation;
  // The swept keys that apply to this run, in axis order ("formulation" excluded).
  std::vector<std::pair<std::string, ParameterValue>> swept;
  // Every declared parameter with its resolved value: a line runs without the scene file.
  std::vector<std::pair<std::string, ParameterValue>> parameters;
};

// The most runs a sweep may have. The product of its axes is computed with overflow checks
// and refused above this before any run is resolved (each resolved run holds its whole
// configuration); manifest indices are read within it. Split a larger study into sweeps.
inline constexpr std::int64_t kMaxSweepRuns = 100000;

// Reads and checks a sweep file. Errors are InputErrors naming the file and the key.
SweepDefinition LoadSweep(const std::filesystem::path& file);

// The scene file of `scenario`'s runs ("{scenario}" replaced), if the sweep names one.
std::optional<std::filesystem::path> ConfigFile(const SweepDefinition& sweep, const std::string& scenario);

// The files a sweep reads (the sweep file and the scene files of its scenarios), each with
// what it is, for RequireNotAnInput: no output of the sweep may replace one.
std::vector<std::pair<std::filesystem::path, std::string>> SweepInputs(const SweepDefinition& sweep);

// The runs of a sweep in product order, duplicates removed, indices 0..n-1. Unknown keys and
// type mismatches throw InputError; values that fail a parameter's check do not (the run
// records the failure) but are reported in `warnings` when given.
std::vector<ManifestEntry> ExpandSweep(const SweepDefinition& sweep, std::vector<std::string>* warnings = nullptr);

// JSON Lines serialization of the manifest.
std::string ToJsonLine(const ManifestEntry& entry);
ManifestEntry FromJsonLine(const std::string& line, const std::string& origin);
void WriteManifest(const std::filesystem::path& file, const std::vector<ManifestEntry>& entries);
std::vector<ManifestEntry> ReadManifest(const std::filesystem::path& file);
// Line `index` of a manifest; InputError when the file has fewer lines.
ManifestEntry ReadManifestEntry(const std::filesystem::path& file, int index);

// "mu=0.3 dt=0.01": the swept values of a run, for progress lines and tables.
std::string DescribeSwept(const ManifestEntry& entry);

}  // namespace contactlab::experiments
