#include "experiments/run_driver.h"

#include <omp.h>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <stdexcept>

#include "experiments/checkpoint.h"
#include "experiments/config.h"
#include "experiments/file_safety.h"
#include "experiments/progress.h"
#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "experiments/snapshots.h"
#include "formulations/state_archive.h"
#include "mpm/transfers.h"
#include "registry/registered_formulations.h"

#include "contactlab_git_commit.h"  // generated at build time: CONTACTLAB_GIT_COMMIT
#ifndef CONTACTLAB_COMPILER
#define CONTACTLAB_COMPILER "unknown"
#endif

namespace contactlab::experiments {
namespace {

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buffer;
}

// What a run writes besides its observables; declared for every scenario and formulation.
std::vector<ParameterSpec> OutputParameterSpecs() {
  return {
      {"output.snapshot_every", std::int64_t{0}, "steps",
       "Write particle and body snapshots (/snapshots, with an XDMF sidecar) at step 0, every this many "
       "steps and at the last step; 0 writes none, since snapshots are large.",
       NonNegative()},
      {"output.log_iterations", false, "",
       "Record every iteration of each formulation's iterative solves (residual, its threshold, cost, "
       "step, line-search and linear iterations) in /solver_log/iterations: the implicit MPM free motion "
       "and SAP's Newton (sap, and the convex rigid step of quasi_newton and hybrid_impulse), "
       "quasi_newton's contact solve per substep, penalty's Newton. Every solve's summary is in "
       "/solver_log/solves either way.",
       nullptr},
      {"output.snapshot_fields", std::string(""), "",
       "Comma-separated optional per-particle snapshot fields: velocity, deformation_gradient, "
       "plastic_strain (positions are always written).",
       SnapshotFieldsCheck()},
  };
}

}  // namespace

ParameterSet DeclareParameters(const std::string& scenario, const std::string& formulation) {
  ParameterSet parameters;
  parameters.Declare(FindScenario(scenario).parameters);
  parameters.Declare(FindFormulation(formulation).parameters);
  parameters.Declare(OutputParameterSpecs());
  return parameters;
}

void ValidateRun(const ParameterSet& parameters) {
  parameters.Validate();
  // The run advances by whole steps of dt: a duration between two steps would silently
  // end early or late, so it is an input error, as is a step count past what a run can take.
  const double dt = parameters.GetDouble("dt");
  const double duration = parameters.GetDouble("duration");
  const auto text = [](double value) { return ToString(ParameterValue{value}); };
  if (dt > duration) {
    throw InputError("key 'dt' = " + text(dt) + " s is longer than key 'duration' = " + text(duration) +
                     " s (a run takes at least one step)");
  }
  const double steps = duration / dt;
  if (!(steps <= kMaxSteps)) {
    throw InputError("keys 'duration' = " + text(duration) + " s and 'dt' = " + text(dt) + " s give " + text(steps) +
                     " steps, more than a run can take (" + text(kMaxSteps) + ")");
  }
  if (std::abs(steps - std::round(steps)) > 1e-6) {
    const double below = std::floor(steps) * dt, above = std::ceil(steps) * dt;
    throw InputError("key 'duration' = " + text(duration) + " s is not a whole number of steps of 'dt' = " + text(dt) +
                     " s (" + text(steps) + " steps); use " + text(below) + " or " + text(above));
  }
}

ResolvedRun FinishResolution(const std::string& scenario, const std::string& formulation, ParameterSet parameters) {
  ValidateRun(parameters);
  ResolvedRun run{scenario, formulation, std::move(parameters), "", ""};
  run.toml = ToToml(run.parameters, scenario, formulation);
  run.run_id = RunId(run.toml);
  return run;
}

ResolvedRun ResolveRun(const RunRequest& request) {
  ParameterSet parameters = DeclareParameters(request.scenario, request.formulation);
  if (request.config_file) ApplyTomlFile(*request.config_file, parameters);
  ApplyOverrides(request.overrides, parameters);
  return FinishResolution(request.scenario, request.formulation, std::move(parameters));
}

RunOutcome ExecuteRun(const RunRequest& request) {
  // Resolve and validate everything before touching the output path.
  const ResolvedRun run = ResolveRun(request);
  if (request.output_path.empty()) throw InputError("--out: an output file is required");
  return ExecuteResolvedRun(run, request.output_path, request.quiet, request.checkpoint);
}

namespace {

// The keys of `parameters` set away from their defaults ("radius = 1e+308, duration = 2"),
// which is what a scene that cannot be built from them is most likely to be about.
std::string NonDefaultKeys(const ParameterSet& parameters) {
  std::string keys;
  for (const auto& [key, value] : parameters.values()) {
    if (value == parameters.Spec(key).default_value) continue;
    keys += (keys.empty() ? "" : ", ") + key + " = " + ToString(value);
  }
  return keys.empty() ? "the defaults" : keys;
}

// Builds the scenario's world. A size that overflows the geometry or the memory is the
// input's fault: an InputError naming the keys that were changed, not an internal error.
void BuildWorld(Scenario& scenario, const ResolvedRun& run, World& world) {
  const auto fail = [&run](const std::string& why) {
    throw InputError("scenario '" + run.scenario + "' cannot be built from " + NonDefaultKeys(run.parameters) + ": " +
                     why);
  };
  try {
    scenario.Build(run.parameters, world);
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail("not enough memory for the particles and grid these sizes ask for");
  } catch (const std::length_error& error) {
    fail(error.what());
  } catch (const std::invalid_argument& error) {
    fail(error.what());
  } catch (const std::domain_error& error) {
    fail(error.what());
  } catch (const std::out_of_range& error) {
    fail(error.what());
  }
}

std::atomic<int> interrupt_signal{0};

}  // namespace

void RequestInterrupt(int signal_number) {
  interrupt_signal.store(signal_number);
}

namespace {

// The build a checkpoint must come from for a bitwise resume: the commit, the compiler and
// the MPM transfer kernels this CPU takes.
std::vector<std::pair<std::string, std::string>> CheckpointIdentity(const ResolvedRun& run) {
  return {{"schema", kCheckpointSchema},
          {"run_id", run.run_id},
          {"scenario", run.scenario},
          {"formulation", run.formulation},
          {"git_commit", CONTACTLAB_GIT_COMMIT},
          {"compiler", CONTACTLAB_COMPILER},
          {"transfer_kernels", mpm::TransferKernelBuild()}};
}

// What the loop carries besides the world, the scenario, the formulation and the recorder.
struct LoopState {
  std::int64_t steps_done = 0;
  std::int64_t last_snapshot_step = -1;
  double earlier_wall_seconds = 0.0;  // of the segments before a resume
};

// Saves or loads the run's whole state, in one order for both directions.
void VisitRunState(StateArchive& archive, World& world, Scenario& scenario, Formulation& formulation,
                   RunRecorder& recorder, LoopState& loop) {
  {
    const StateArchive::Scope scope(archive, "run");
    archive("steps_done", loop.steps_done);
    archive("last_snapshot_step", loop.last_snapshot_step);
    archive("wall_seconds", loop.earlier_wall_seconds);
  }
  VisitState(archive, world);
  {
    const StateArchive::Scope scope(archive, "scenario");
    scenario.VisitState(archive);
  }
  {
    const StateArchive::Scope scope(archive, "formulation");
    formulation.VisitState(archive, world);
  }
  recorder.VisitState(archive);
}

// When the loop writes a checkpoint: every N steps, every so many wall seconds since the last
// one, and after the --stop-at step; never after the last step, which the run file follows.
class CheckpointSchedule {
 public:
  CheckpointSchedule(const CheckpointOptions& options, int total_steps)
      : interval_(options.every.empty() ? CheckpointInterval{} : ParseCheckpointInterval(options.every)),
        stop_at_(options.stop_at),
        total_steps_(total_steps),
        last_written_(std::chrono::steady_clock::now()) {}
  bool StopsAfter(int step) const { return step == stop_at_ && step < total_steps_; }
  bool DueAfter(int step) const {
    if (step >= total_steps_) return false;
    const double since_last = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_written_).count();
    return (interval_.steps > 0 && step % interval_.steps == 0) ||
           (interval_.seconds > 0.0 && since_last >= interval_.seconds) || StopsAfter(step);
  }
  void Written() { last_written_ = std::chrono::steady_clock::now(); }

 private:
  CheckpointInterval interval_;
  int stop_at_;
  int total_steps_;
  std::chrono::steady_clock::time_point last_written_;
};

// What the run file says of the run before its first step: the root attributes, the
// configuration, the scenario's series and the bodies.
void DescribeRun(const ResolvedRun& run, const World& world, Scenario& scenario, RunRecorder& recorder) {
  recorder.SetRootAttribute("schema", "contactlab-run/1");
  recorder.SetRootAttribute("run_id", run.run_id);
  recorder.SetRootAttribute("scenario", run.scenario);
  recorder.SetRootAttribute("formulation", run.formulation);
  recorder.SetRootAttribute("git_commit", CONTACTLAB_GIT_COMMIT);
  recorder.SetRootAttribute("compiler", CONTACTLAB_COMPILER);
  // The thread budget the timings were taken under: OpenMP's default team size and the
  // process-wide bound (OMP_THREAD_LIMIT; without it CHOLMOD's supernodal factorization
  // runs four threads whatever OMP_NUM_THREADS says, sweep_executor.cc).
  recorder.SetRootAttribute("omp_max_threads", std::to_string(omp_get_max_threads()));
  recorder.SetRootAttribute("omp_thread_limit", std::to_string(omp_get_thread_limit()));
  // The build of the MPM transfer kernels this CPU takes (mpm/transfers.h): two machines that
  // take different builds give results that differ by round-off.
  recorder.SetRootAttribute("transfer_kernels", mpm::TransferKernelBuild());
  recorder.SetRootAttribute("started_utc", UtcNow());
  recorder.SetConfiguration(run.toml, run.parameters);
  scenario.DeclareObservables(recorder);
  recorder.SetBodies(DescribeBodies(world));
}

// Prints the values the scenario and the formulation derived for their "auto" keys.
void PrintUsedParameters(const std::vector<UsedParameter>& used) {
  for (const UsedParameter& parameter : used) {
    std::cout << "used " << parameter.key << " = ";
    if (!parameter.choice.empty()) {
      std::cout << parameter.choice;
    } else {
      std::cout << parameter.value;
      if (parameter.smallest != parameter.value) std::cout << " (smallest " << parameter.smallest << ")";
    }
    std::cout << ": " << parameter.rule << "\n";
  }
}

// Writes the checkpoint and, unless quiet, says so on standard error with its size and the
// seconds it took (what a checkpoint interval costs).
void SaveCheckpoint(const ResolvedRun& run, const std::filesystem::path& output_path, World& world, Scenario& scenario,
                    Formulation& formulation, RunRecorder& recorder, LoopState loop, double segment_wall_seconds,
                    bool quiet) {
  const auto start = std::chrono::steady_clock::now();
  loop.earlier_wall_seconds += segment_wall_seconds;
  StateArchive archive = StateArchive::ForSaving();
  {
    const StateArchive::Scope scope(archive, "header");
    for (auto [name, value] : CheckpointIdentity(run)) archive(name, value);
    std::string configuration = run.toml;
    archive("configuration", configuration);
  }
  VisitRunState(archive, world, scenario, formulation, recorder, loop);
  const std::size_t bytes = WriteCheckpoint(output_path, archive.records());
  if (!quiet) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char line[160];
    std::snprintf(line, sizeof(line), "contactlab: checkpoint after step %lld: %.1f MB in %.2f s\n",
                  static_cast<long long>(loop.steps_done), bytes / 1.0e6, seconds);
    std::cerr << line << std::flush;
  }
}

// Loads a checkpoint into the freshly built run; InputError naming the file for one that
// belongs to another run or build, or that does not load whole.
LoopState ResumeFromCheckpoint(const ResolvedRun& run, const std::filesystem::path& path, int total_steps, World& world,
                               Scenario& scenario, Formulation& formulation, RunRecorder& recorder) {
  StateArchive archive = StateArchive::ForLoading(ReadCheckpoint(path));
  LoopState loop;
  try {
    {
      const StateArchive::Scope scope(archive, "header");
      for (auto [name, expected] : CheckpointIdentity(run)) {
        std::string stored;
        archive(name, stored);
        if (stored != expected) {
          throw InputError(path.string() + ": refusing to resume: it was written with " + name + " '" + stored +
                           "', this run has '" + expected +
                           "' (remove the checkpoint, or run with the configuration and build that wrote it)");
        }
      }
      std::string configuration;
      archive("configuration", configuration);
      if (configuration != run.toml) {
        throw InputError(path.string() + ": refusing to resume: its configuration differs from this run's");
      }
    }
    VisitRunState(archive, world, scenario, formulation, recorder, loop);
    archive.CheckEverythingRead();
    if (loop.steps_done < 0 || loop.steps_done > total_steps || loop.last_snapshot_step < -1 ||
        loop.last_snapshot_step > loop.steps_done || !std::isfinite(world.time)) {
      throw StateArchiveError("its step count, snapshot step or time does not fit a run of " +
                              std::to_string(total_steps) + " steps");
    }
    if (const std::string bad_state = FindNonFiniteState(world); !bad_state.empty()) {
      throw StateArchiveError("its world is not finite: " + bad_state);
    }
  } catch (const StateArchiveError& error) {
    throw InputError(path.string() + ": not a usable checkpoint: " + error.what());
  }
  return loop;
}

}  // namespace

RunOutcome ExecuteResolvedRun(const ResolvedRun& run, const std::string& output_path, bool quiet,
                              const CheckpointOptions& checkpoint) {
  // 1. Reserve the output (its folder writable, nothing but an earlier run file in the way),
  // then build the world and the formulation (Build may still reject combinations of keys):
  // every input error is found before the simulation, and before the configuration echo.
  const ParameterSet& parameters = run.parameters;
  const double dt = parameters.GetDouble("dt");
  const int total_steps = std::max(1, static_cast<int>(std::llround(parameters.GetDouble("duration") / dt)));
  CheckpointSchedule schedule(checkpoint, total_steps);
  std::optional<std::filesystem::path> resume_path;
  if (!checkpoint.resume.empty()) {
    RequireReadableFile(checkpoint.resume, "checkpoint (--resume)");
    resume_path = checkpoint.resume;
  } else {
    resume_path = FindCheckpoint(output_path);
  }
  RunRecorder recorder{std::filesystem::path(output_path)};

  World world;
  std::unique_ptr<Scenario> scenario = FindScenario(run.scenario).factory();
  BuildWorld(*scenario, run, world);
  FormulationConfig formulation_config{run.formulation, parameters};
  std::unique_ptr<Formulation> formulation = MakeFormulation(formulation_config);
  formulation->set_log_iterations(parameters.GetBool("output.log_iterations"));
  if (!quiet) std::cout << run.toml << std::flush;
  // OMP_NUM_THREADS alone does not bind CHOLMOD's num_threads(4) (sweep_executor.cc sets the
  // limit for the runs it starts; a run started by hand has only what its caller set).
  if (!quiet && std::getenv("OMP_NUM_THREADS") != nullptr && omp_get_thread_limit() > omp_get_max_threads()) {
    std::cerr << "contactlab: OMP_NUM_THREADS=" << std::getenv("OMP_NUM_THREADS")
              << " without OMP_THREAD_LIMIT: CHOLMOD's factorizations still run 4 threads; set OMP_THREAD_LIMIT="
              << omp_get_max_threads() << " as well for timings at that thread count\n";
  }
  const std::int64_t snapshot_every = parameters.GetInt("output.snapshot_every");
  const SnapshotFields snapshot_fields = ParseSnapshotFields(parameters.GetString("output.snapshot_fields"));

  // 2. Record.
  DescribeRun(run, world, *scenario, recorder);
  // Snapshots: step 0, every `snapshot_every` steps, and the last completed step (also when
  // the run diverged on a non-finite state, which is then written as is). A step the
  // formulation abandoned mid-way (SimulationDiverged) leaves no consistent state to write.
  LoopState loop;
  const auto take_snapshot = [&](std::int64_t step) {
    recorder.AppendSnapshot(CaptureSnapshot(step, world.time, world, snapshot_fields));
    loop.last_snapshot_step = step;
  };
  if (resume_path) {
    // The state after the checkpoint's step replaces what Build made; the run file keeps
    // its first start time and lists every resume.
    loop = ResumeFromCheckpoint(run, *resume_path, total_steps, world, *scenario, *formulation, recorder);
    const std::string resumed = "step " + std::to_string(loop.steps_done) + " at " + UtcNow();
    const std::string earlier = recorder.root_attribute("resumed");
    recorder.SetRootAttribute("resumed", earlier.empty() ? resumed : earlier + "; " + resumed);
    if (!quiet) std::cerr << "contactlab: resuming from " << resume_path->string() << " after " << resumed << "\n";
  } else {
    if (snapshot_every > 0) take_snapshot(0);
    StepReport initial_report;
    initial_report.contact_wrench.resize(world.bodies.size());
    scenario->Observe(world, initial_report, recorder);
  }

  ProgressReporter progress(run.scenario + "/" + run.formulation, total_steps * dt, quiet);
  RunOutcome outcome;
  outcome.steps = static_cast<int>(loop.steps_done);
  const auto run_start = std::chrono::steady_clock::now();
  const auto segment_seconds = [&run_start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  };
  const auto save_checkpoint = [&] {
    SaveCheckpoint(run, output_path, world, *scenario, *formulation, recorder, loop, segment_seconds(), quiet);
    schedule.Written();
  };
  bool abandoned_step = false;  // the world holds a half-done step
  for (int step = static_cast<int>(loop.steps_done) + 1; step <= total_steps; ++step) {
    if (const int signal_number = interrupt_signal.load()) {
      if (!checkpoint.on_signal) throw Interrupted(signal_number);
      save_checkpoint();
      throw Interrupted(signal_number, CheckpointPath(output_path).string());
    }
    const auto step_start = std::chrono::steady_clock::now();
    StepReport report;
    try {
      report = formulation->Step(world, dt);
    } catch (const SimulationDiverged& diverged) {
      outcome.status = RunStatus::kDiverged;
      outcome.message = diverged.what();
      abandoned_step = true;
      break;
    } catch (const std::bad_alloc&) {
      throw InputError("scenario '" + run.scenario + "' with " + NonDefaultKeys(parameters) +
                       " ran out of memory in step " + std::to_string(step) +
                       ": these sizes need more memory than this machine has");
    }
    const double step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    outcome.steps = step;
    loop.steps_done = step;
    recorder.AppendSolverLog(world.time, report, step_seconds);
    const std::string bad_state = FindNonFiniteState(world);
    if (!bad_state.empty()) {
      outcome.status = RunStatus::kDiverged;
      outcome.message = "at t = " + std::to_string(world.time) + " s: " + bad_state;
      break;
    }
    scenario->Observe(world, report, recorder);
    if (snapshot_every > 0 && step % snapshot_every == 0) take_snapshot(step);
    progress.Update(world.time, step, total_steps);
    if (schedule.DueAfter(step)) save_checkpoint();
    if (schedule.StopsAfter(step)) {
      outcome.status = RunStatus::kStopped;
      outcome.message =
          "stopped after step " + std::to_string(step) + "; checkpoint " + CheckpointPath(output_path).string();
      outcome.wall_seconds = loop.earlier_wall_seconds + segment_seconds();
      progress.Finish(outcome.message);
      return outcome;  // the recorder removes its partial file
    }
  }
  if (snapshot_every > 0 && outcome.steps != loop.last_snapshot_step && !abandoned_step) {
    take_snapshot(outcome.steps);
  }
  outcome.wall_seconds = loop.earlier_wall_seconds + segment_seconds();

  // 3. Summary and the final file.
  std::vector<UsedParameter> used = scenario->UsedParameters();
  for (UsedParameter& parameter : formulation->UsedParameters()) used.push_back(std::move(parameter));
  recorder.SetUsedParameters(used);
  if (!quiet) PrintUsedParameters(used);
  scenario->Summarize(recorder);
  const std::string status = outcome.status == RunStatus::kOk ? "ok" : "diverged";
  recorder.Finish(status, outcome.message, outcome.steps, outcome.wall_seconds);
  // The run file is whole: its checkpoints have served.
  RemoveCheckpoints(output_path);
  progress.Finish(status == "ok" ? "done" : "diverged: " + outcome.message);
  return outcome;
}

void DescribeParameters(const std::string& scenario_name, const std::string& formulation_name) {
  const ScenarioInfo& scenario = FindScenario(scenario_name);
  const FormulationInfo& formulation = FindFormulation(formulation_name);
  const ParameterSet parameters = DeclareParameters(scenario_name, formulation_name);
  std::printf("%s: %s\n%s: %s\n\n", scenario.name.c_str(), scenario.description.c_str(), formulation.name.c_str(),
              formulation.description.c_str());
  for (const auto& [key, spec] : parameters.specs()) {
    std::printf("  %-34s %-20s %-8s %s\n", key.c_str(), ToString(spec.default_value).c_str(),
                spec.unit.empty() ? "" : ("[" + spec.unit + "]").c_str(), spec.description.c_str());
  }
}

}  // namespace contactlab::experiments
