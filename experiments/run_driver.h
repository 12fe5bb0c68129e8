#pragma once
// One run end to end: resolve and validate the configuration, build the scenario's world,
// step the formulation, record observables and solver statistics, and write the HDF5 file.
#include <optional>
#include <string>
#include <vector>

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

// Throws InputError for bad input before anything is written.
RunOutcome ExecuteRun(const RunRequest& request);

// Prints every parameter the scenario and formulation accept (key, default, unit, meaning).
void DescribeParameters(const std::string& scenario, const std::string& formulation);

}  // namespace contactlab::experiments
