#include "experiments/run_driver.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "experiments/config.h"
#include "experiments/progress.h"
#include "experiments/run_recorder.h"
#include "experiments/scenario.h"

#ifndef CONTACTLAB_GIT_COMMIT
#define CONTACTLAB_GIT_COMMIT "unknown"
#endif
#ifndef CONTACTLAB_COMPILER
#define CONTACTLAB_COMPILER "unknown"
#endif

namespace contactlab::experiments {
namespace {

ParameterSet DeclareAll(const ScenarioInfo& scenario, const FormulationInfo& formulation) {
  ParameterSet parameters;
  parameters.Declare(scenario.parameters);
  parameters.Declare(formulation.parameters);
  return parameters;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buffer;
}

// Empty when the state is finite, else a description of the first bad value.
std::string FindNonFiniteState(const World& world) {
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    if (!world.particles.position[p].allFinite() || !world.particles.velocity[p].allFinite() ||
        !world.particles.deformation_gradient[p].allFinite()) {
      return "particle " + std::to_string(p) + " has a non-finite position, velocity or deformation gradient";
    }
  }
  for (const rigid::RigidBody& body : world.bodies) {
    if (!body.pose.position.allFinite() || !body.linear_velocity.allFinite() ||
        !body.angular_velocity.allFinite() || !body.pose.orientation.coeffs().allFinite()) {
      return "rigid body '" + body.name + "' has a non-finite pose or velocity";
    }
  }
  return "";
}

}  // namespace

RunOutcome ExecuteRun(const RunRequest& request) {
  // 1. Resolve and validate everything before touching the output path.
  const ScenarioInfo& scenario_info = FindScenario(request.scenario);
  const FormulationInfo& formulation_info = FindFormulation(request.formulation);
  ParameterSet parameters = DeclareAll(scenario_info, formulation_info);
  if (request.config_file) ApplyTomlFile(*request.config_file, parameters);
  ApplyOverrides(request.overrides, parameters);
  parameters.Validate();
  if (request.output_path.empty()) throw InputError("--out: an output file is required");

  const std::string resolved = ToToml(parameters, request.scenario, request.formulation);
  const std::string run_id = RunId(resolved);
  if (!request.quiet) std::cout << resolved << std::flush;

  World world;
  std::unique_ptr<Scenario> scenario = scenario_info.factory();
  scenario->Build(parameters, world);
  FormulationConfig formulation_config{request.formulation, parameters};
  std::unique_ptr<Formulation> formulation = MakeFormulation(formulation_config);
  const double dt = parameters.GetDouble("dt");
  const double duration = parameters.GetDouble("duration");
  const int total_steps = std::max(1, static_cast<int>(std::llround(duration / dt)));

  // 2. Record.
  const std::filesystem::path output(request.output_path);
  if (output.has_parent_path()) std::filesystem::create_directories(output.parent_path());
  RunRecorder recorder(output);
  recorder.SetRootAttribute("schema", "contactlab-run/1");
  recorder.SetRootAttribute("run_id", run_id);
  recorder.SetRootAttribute("scenario", request.scenario);
  recorder.SetRootAttribute("formulation", request.formulation);
  recorder.SetRootAttribute("git_commit", CONTACTLAB_GIT_COMMIT);
  recorder.SetRootAttribute("compiler", CONTACTLAB_COMPILER);
  recorder.SetRootAttribute("started_utc", UtcNow());
  recorder.SetConfiguration(resolved, parameters);
  scenario->DeclareObservables(recorder);

  StepReport initial_report;
  initial_report.contact_wrench.resize(world.bodies.size());
  scenario->Observe(world, initial_report, recorder);

  ProgressReporter progress(request.scenario + "/" + request.formulation, total_steps * dt, request.quiet);
  RunOutcome outcome;
  const auto run_start = std::chrono::steady_clock::now();
  for (int step = 1; step <= total_steps; ++step) {
    const auto step_start = std::chrono::steady_clock::now();
    StepReport report;
    try {
      report = formulation->Step(world, dt);
    } catch (const SimulationDiverged& diverged) {
      outcome.status = RunStatus::kDiverged;
      outcome.message = diverged.what();
      break;
    }
    const double step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    // Keep the time exactly on the step grid regardless of substep round-off.
    world.time = step * dt;
    outcome.steps = step;
    recorder.AppendSolverLog(world.time, report, step_seconds);
    const std::string bad_state = FindNonFiniteState(world);
    if (!bad_state.empty()) {
      outcome.status = RunStatus::kDiverged;
      outcome.message = "at t = " + std::to_string(world.time) + " s: " + bad_state;
      break;
    }
    scenario->Observe(world, report, recorder);
    progress.Update(world.time, step, total_steps);
  }
  outcome.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();

  // 3. Summary and the final file.
  scenario->Summarize(recorder);
  const std::string status = outcome.status == RunStatus::kOk ? "ok" : "diverged";
  recorder.Finish(status, outcome.message, outcome.steps, outcome.wall_seconds);
  progress.Finish(status == "ok" ? "done" : "diverged: " + outcome.message);
  return outcome;
}

void DescribeParameters(const std::string& scenario_name, const std::string& formulation_name) {
  const ScenarioInfo& scenario = FindScenario(scenario_name);
  const FormulationInfo& formulation = FindFormulation(formulation_name);
  const ParameterSet parameters = DeclareAll(scenario, formulation);
  std::printf("%s: %s\n%s: %s\n\n", scenario.name.c_str(), scenario.description.c_str(), formulation.name.c_str(),
              formulation.description.c_str());
  for (const auto& [key, spec] : parameters.specs()) {
    std::printf("  %-34s %-20s %-8s %s\n", key.c_str(), ToString(spec.default_value).c_str(),
                spec.unit.empty() ? "" : ("[" + spec.unit + "]").c_str(), spec.description.c_str());
  }
}

}  // namespace contactlab::experiments
