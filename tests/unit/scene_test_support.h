#pragma once
// What the scene tests share: a scenario's parameters resolved the way `contactlab run`
// resolves them (declared defaults, then key=value overrides, validated), a short run of a
// formulation recorded into a run file, step by step, as the run driver records it, and a
// summary attribute read back.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "experiments/config.h"
#include "experiments/run_driver.h"
#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {

inline ParameterSet SceneParameters(const std::string& scenario, const std::string& formulation,
                                    const std::vector<std::string>& overrides = {}) {
  ParameterSet parameters = DeclareParameters(scenario, formulation);
  ApplyOverrides(overrides, parameters);
  parameters.Validate();
  return parameters;
}

// Runs `steps` steps of `dt` of `formulation` on a built scenario and world and writes
// `output` (replaced): the initial observation, one observation per step, the summary.
// `after_step(step, report)` runs after each step's observation, for per-step checks.
inline void RecordShortRun(Scenario& scenario, World& world, const std::string& formulation,
                           const ParameterSet& parameters, int steps, double dt, const std::filesystem::path& output,
                           const std::function<void(int, const StepReport&)>& after_step = {}) {
  std::filesystem::remove(output);
  RunRecorder recorder(output);
  scenario.DeclareObservables(recorder);
  StepReport initial;
  initial.contact_wrench.resize(world.bodies.size());
  scenario.Observe(world, initial, recorder);
  auto stepper = MakeFormulation({formulation, parameters});
  for (int step = 1; step <= steps; ++step) {
    const StepReport report = stepper->Step(world, dt);
    scenario.Observe(world, report, recorder);
    if (after_step) after_step(step, report);
  }
  scenario.Summarize(recorder);
  recorder.Finish("ok", "", steps, 0.0);
}

// The world `scenario` builds from resolved parameters; the scenario object is handed out
// through `scenario_out` when the test records a run with it.
inline World BuildScene(const std::string& scenario, const ParameterSet& parameters,
                        std::unique_ptr<Scenario>* scenario_out = nullptr) {
  World world;
  std::unique_ptr<Scenario> built = FindScenario(scenario).factory();
  built->Build(parameters, world);
  if (scenario_out != nullptr) *scenario_out = std::move(built);
  return world;
}

// The /summary attribute `name` of an open run file as a double; NaN when it is absent.
inline double ReadSummaryDouble(hid_t file, const std::string& name) {
  double value = std::nan("");
  const hid_t attribute = H5Aopen_by_name(file, "summary", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  if (attribute < 0) return value;
  H5Aread(attribute, H5T_NATIVE_DOUBLE, &value);
  H5Aclose(attribute);
  return value;
}

// The message of the InputError `build()` throws, or "" when it throws none.
template <typename Build>
std::string InputErrorMessage(Build&& build) {
  try {
    build();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace contactlab::experiments
