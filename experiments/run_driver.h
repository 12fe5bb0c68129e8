#pragma once
// One run end to end: resolve and validate the configuration, build the scenario's world,
// step the formulation, record observables and solver statistics, and write the HDF5 file.
#include <optional>
#include <string>
#include <vector>

#include "formulations/parameters.h"

namespace contactlab::experiments {

struct RunRequest {
  std::string scenario;
  std::string formulation;
  std::optional<std::string> config_file;   // scene TOML
  std::vector<std::string> overrides;       // "key=value"
  std::string output_path;                  // RUN.h5
  bool quiet = false;                       // no configuration echo or progress
};

enum class RunStatus { kOk, kDiverged };

struct RunOutcome {
  RunStatus status = RunStatus::kOk;
  std::string message;
  int steps = 0;
  double wall_seconds = 0.0;
};

// A run's validated configuration: every declared key with its resolved value, the TOML
// text written to /config, and the run_id hashed from that text.
struct ResolvedRun {
  std::string scenario;
  std::string formulation;
  ParameterSet parameters;
  std::string toml;
  std::string run_id;
};

// Every parameter a run of `scenario` under `formulation` accepts, at its default. Throws
// InputError naming an unknown scenario or formulation.
ParameterSet DeclareParameters(const std::string& scenario, const std::string& formulation);
// Validates resolved parameters and derives the TOML text and run_id.
ResolvedRun FinishResolution(const std::string& scenario, const std::string& formulation,
                             ParameterSet parameters);
// Defaults, then the scene TOML, then the overrides; validated.
ResolvedRun ResolveRun(const RunRequest& request);

// Runs a resolved configuration and writes `output_path`.
RunOutcome ExecuteResolvedRun(const ResolvedRun& run, const std::string& output_path, bool quiet);
// Throws InputError for bad input before anything is written.
RunOutcome ExecuteRun(const RunRequest& request);

// Prints every parameter the scenario and formulation accept (key, default, unit, meaning).
void DescribeParameters(const std::string& scenario, const std::string& formulation);

}  // namespace contactlab::experiments
