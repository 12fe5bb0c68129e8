// Wall time of `quasi_newton` steps of dough_rolling ([yu2025async] Table I, issue 17) with the
// table as a contact body and as a separating grid wall, from the scene file at its defaults
// (Δt = 10 ms, ε_r = 5e-2), on the CPU (OpenMP) and on the GPU (quasi_newton.backend = cuda:
// MPM substeps and the contact solve on the device). Each case times 20 steps after 70
// untimed ones of the same formulation, while the pin presses into the dough.
// Counters per step: ms, substeps, quasi-Newton iterations (summed over the substeps) and
// particle contacts (averaged over the substeps). Run with OMP_NUM_THREADS=2 for [yu2025async]'s
// comparison on two cores. Without a GPU or a CUDA build the cuda cases report an error.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "formulations/quasi_newton/quasi_newton_formulation.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

#ifndef CONTACTLAB_SOURCE_DIR
#error "CONTACTLAB_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

namespace {

using namespace contactlab;

constexpr int kLeadInSteps = 70;
constexpr int kTimedSteps = 20;

// Arguments: table (0 contact_body, 1 separating), backend (0 cpu, 1 cuda).
void BM_QuasiNewtonDough(benchmark::State& state) {
  const bool cuda = state.range(1) != 0;
#ifdef CONTACTLAB_WITH_CUDA
  std::string reason;
  if (cuda && !quasi_newton::CudaDeviceAvailable(&reason)) {
    state.SkipWithError(("no CUDA device: " + reason).c_str());
    return;
  }
#else
  if (cuda) {
    state.SkipWithError("built without CUDA");
    return;
  }
#endif
  experiments::RunRequest request;
  request.scenario = "dough_rolling";
  request.formulation = "quasi_newton";
  // The source tree it was built from, unless CONTACTLAB_SOURCE_DIR names another copy (a
  // prebuilt bundle run on a GPU machine, scripts/cuda-bundle).
  const char* source_dir = std::getenv("CONTACTLAB_SOURCE_DIR");
  request.config_file =
      std::string(source_dir != nullptr ? source_dir : CONTACTLAB_SOURCE_DIR) + "/data/scenes/dough_rolling.toml";
  const std::string table = state.range(0) == 0 ? "contact_body" : "separating";
  request.overrides = {"table_model=" + table, std::string("quasi_newton.backend=") + (cuda ? "cuda" : "cpu")};
  const experiments::ResolvedRun run = experiments::ResolveRun(request);
  const double dt = run.parameters.GetDouble("dt");

  double seconds = 0, substeps = 0, iterations = 0, contacts = 0, steps = 0;
  for (auto _ : state) {
    state.PauseTiming();
    World world;
    experiments::FindScenario(run.scenario).factory()->Build(run.parameters, world);
    quasi_newton::QuasiNewtonFormulation formulation(
        quasi_newton::QuasiNewtonFormulationOptions::FromParameters(run.parameters));
    for (int step = 0; step < kLeadInSteps; ++step) formulation.Step(world, dt);
    state.ResumeTiming();
    for (int step = 0; step < kTimedSteps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      const StepReport report = formulation.Step(world, dt);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      substeps += report.substeps;
      for (const int count : formulation.last_step().iterations_per_substep) iterations += count;
      contacts += report.contacts;
      steps += 1;
    }
  }
  state.SetLabel("dough_rolling " + table + (cuda ? " cuda" : " cpu"));
  state.counters["ms_per_step"] = benchmark::Counter(1e3 * seconds / steps);
  state.counters["substeps_per_step"] = benchmark::Counter(substeps / steps);
  state.counters["iterations_per_step"] = benchmark::Counter(iterations / steps);
  state.counters["contacts_per_step"] = benchmark::Counter(contacts / steps);
  state.counters["threads"] = omp_get_max_threads();
}

BENCHMARK(BM_QuasiNewtonDough)->ArgsProduct({{0, 1}, {0, 1}})->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
