#pragma once
// A scenario builds a World from resolved parameters, declares and records its
// observables (with analytic references where they exist) and writes its summary. Every
// scenario runs under every formulation: it touches only the World and StepReports.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/run_recorder.h"
#include "formulations/formulation.h"
#include "formulations/parameters.h"
#include "formulations/state_archive.h"

namespace contactlab::experiments {

class Scenario {
 public:
  virtual ~Scenario() = default;
  // Builds the initial world. Parameters are already validated one by one; combinations
  // that cannot work throw InputError naming the keys.
  virtual void Build(const ParameterSet& parameters, World& world) = 0;
  // Declares /timeseries and /analytic series on the recorder.
  virtual void DeclareObservables(RunRecorder& recorder) = 0;
  // Records one sample; called once before the first step (report with no wrenches) and
  // after every step.
  virtual void Observe(const World& world, const StepReport& report, RunRecorder& recorder) = 0;
  // Writes /summary attributes once the run has ended (also after divergence).
  virtual void Summarize(RunRecorder& recorder) = 0;
  // The values the scenario derived for its "auto" keys (recorded like a formulation's).
  virtual std::vector<UsedParameter> UsedParameters() const { return {}; }
  // Saves or loads, for a checkpoint (formulations/state_archive.h), everything Observe
  // carries from one call to the next and Summarize reads: running sums and extremes, the
  // samples of a late window, flags and times of events. What Build sets is rebuilt on
  // resume and is not listed; a scenario that carries nothing between calls visits nothing.
  virtual void VisitState(StateArchive& archive) = 0;
};

struct ScenarioInfo {
  std::string name;
  std::string description;
  // Every scenario declares "dt" [s] and "duration" [s] among its parameters.
  std::vector<ParameterSpec> parameters;
  std::unique_ptr<Scenario> (*factory)();
  // --set overrides of a short run at the scenario's defaults, a few steps into contact at a
  // resolution every formulation runs in seconds: what the conformance test runs under every
  // registered formulation.
  std::vector<std::string> short_run;
};

const std::vector<ScenarioInfo>& RegisteredScenarios();
// Throws InputError naming the scenario if it is unknown.
const ScenarioInfo& FindScenario(std::string_view name);

// Parameter specs shared by scenarios (keys without prefix).
ParameterSpec TimeStepSpec(double default_dt);
ParameterSpec DurationSpec(double default_duration);
ParameterSpec GravitySpec();
ParameterSpec GridSpacingSpec(double default_spacing);
ParameterSpec ParticlesPerCellSpec(double default_count);
ParameterSpec SamplingJitterSpec();
ParameterSpec SamplingSeedSpec();

}  // namespace contactlab::experiments
