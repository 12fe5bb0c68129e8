#pragma once
// One run end to end: resolve and validate the configuration, build the scenario's world,
// step the formulation, record observables and solver statistics, and write the HDF5 file.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "formulations/parameters.h"

namespace contactlab::experiments {

// When a run writes checkpoints (experiments/checkpoint.h) and where it resumes from.
struct CheckpointOptions {
  std::string every;  // --checkpoint-every: "" (never), steps ("200") or wall time ("30min")
  // --checkpoint-on-signal: a stop signal (SIGUSR1, a batch system's warning before its time
  // limit; SIGTERM, SIGINT, SIGHUP) writes a checkpoint at the next step boundary before the
  // run stops.
  bool on_signal = false;
  // --resume: the checkpoint to resume from; empty resumes from the run file's own
  // checkpoint when there is one.
  std::string resume;
  // --stop-at: after this step, write a checkpoint and stop without a run file (0: run to
  // the end), to split a run into pieces that each fit a time limit.
  int stop_at = 0;
};

struct RunRequest {
  std::string scenario;
  std::string formulation;
  std::optional<std::string> config_file;  // scene TOML
  std::vector<std::string> overrides;      // "key=value"
  std::string output_path;                 // RUN.h5
  bool quiet = false;                      // no configuration echo or progress
  CheckpointOptions checkpoint;
};

// kStopped: the run wrote a checkpoint at CheckpointOptions::stop_at and no run file.
enum class RunStatus { kOk, kDiverged, kStopped };

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
// The most steps a run may take (duration / dt).
inline constexpr double kMaxSteps = 1e9;
// Validates every key, and that `duration` is a whole number (within round-off) of steps of
// `dt`, at least one and at most kMaxSteps. Throws InputError naming the keys.
void ValidateRun(const ParameterSet& parameters);
// Validates resolved parameters and derives the TOML text and run_id.
ResolvedRun FinishResolution(const std::string& scenario, const std::string& formulation, ParameterSet parameters);
// Defaults, then the scene TOML, then the overrides; validated.
ResolvedRun ResolveRun(const RunRequest& request);

// A run (or a sweep) stopped by a signal (SIGINT, SIGTERM, SIGHUP, SIGUSR1): a run stops
// between two steps and removes its partial file (after writing a checkpoint when asked to,
// which `checkpoint` then names), a sweep stops its running children and waits for them; the
// process exits with 128 + the signal number.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal_number, std::string checkpoint = "")
      : std::runtime_error("interrupted by signal " + std::to_string(signal_number)),
        signal_number(signal_number),
        checkpoint(std::move(checkpoint)) {}
  int signal_number;
  std::string checkpoint;
};
// Called from a signal handler: the running run stops before its next step.
void RequestInterrupt(int signal_number);

// Runs a resolved configuration and writes `output_path`. The output location is checked
// (RunRecorder) before the world is built. With a checkpoint to resume from (given, or found
// beside `output_path`), the run continues from it and its file equals, dataset for dataset
// (wall times aside), the file of a run that was never stopped; a checkpoint of another
// configuration, scenario, formulation or build is an InputError naming it.
RunOutcome ExecuteResolvedRun(const ResolvedRun& run, const std::string& output_path, bool quiet,
                              const CheckpointOptions& checkpoint = {});
// Throws InputError for bad input before anything is written.
RunOutcome ExecuteRun(const RunRequest& request);

// Prints every parameter the scenario and formulation accept (key, default, unit, meaning).
void DescribeParameters(const std::string& scenario, const std::string& formulation);

}  // namespace contactlab::experiments
