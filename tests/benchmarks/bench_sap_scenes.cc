// Wall time of `sap` steps on the many-contact scenes of [zong2024convex] Table I and issue 18:
// close_lift_shake, squeezed_cube at h = 1 cm, dough_rolling with the table as a contact
// body and as a separating grid wall, and dough_tearing, each from its scene file
// (data/scenes) at Δt = 10 ms and ε_r = 1e-6. Each case times a fixed number of steps of one
// world: from t = 0 for the panels closing on the stack and the squeeze building up, after
// 0.7 s (untimed) for the pin pressing into the dough, after the 0.5 s close (untimed) for
// the grippers lifting the dough. The counters describe those steps; they are not the
// average of a whole run.
// Counters per step: ms, Newton iterations, sparse (CHOLMOD) and dense factorizations,
// particle contacts and the unknowns of the problem solved; `warm_start` is 1 for
// sap.warm_start = lower_cost (the default) and 0 for free_motion ([zong2024convex]'s v*);
// `factorization_reuse` is sap.factorization_reuse_ratio (0: a factorization of H at every
// Newton iteration; 0.5: chord steps after iterations that halve the residual). Run with
// OMP_NUM_THREADS=1 to compare with [zong2024convex] Table I (one thread).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <string>
#include <vector>

#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "formulations/sap/sap_formulation.h"

#ifndef CONTACTLAB_SOURCE_DIR
#error "CONTACTLAB_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

namespace {

using namespace contactlab;

struct SceneCase {
  const char* scenario;
  const char* scene_file;  // under data/scenes
  std::vector<std::string> overrides;
  int lead_in_steps;  // untimed steps first (the same formulation), to reach contact
  int steps;          // timed steps
};

const std::vector<SceneCase>& Cases() {
  static const std::vector<SceneCase> cases = {
      {"close_lift_shake", "close_lift_shake.toml", {}, 0, 8},
      {"squeezed_cube", "squeezed_cube.toml", {"dt=0.01", "averaging_window=0.02", "duration=0.04"}, 0, 3},
      // The pin touches the dough at about 0.3 s and presses 2 cm into it by 1 s.
      {"dough_rolling", "dough_rolling.toml", {"table_model=contact_body"}, 70, 3},
      {"dough_rolling", "dough_rolling.toml", {"table_model=separating"}, 70, 3},
      // The fingers have closed on the dough's ends by 0.5 s; the lift starts there.
      {"dough_tearing", "dough_tearing.toml", {}, 50, 5},
  };
  return cases;
}

void BM_SapScene(benchmark::State& state) {
  const SceneCase& scene = Cases()[state.range(0)];
  experiments::RunRequest request;
  request.scenario = scene.scenario;
  request.formulation = "sap";
  request.config_file = std::string(CONTACTLAB_SOURCE_DIR) + "/data/scenes/" + scene.scene_file;
  request.overrides = scene.overrides;
  request.overrides.push_back(state.range(1) != 0 ? "sap.warm_start=lower_cost" : "sap.warm_start=free_motion");
  const double reuse_ratio = 0.5 * static_cast<double>(state.range(2));
  request.overrides.push_back("sap.factorization_reuse_ratio=" + std::to_string(reuse_ratio));
  const experiments::ResolvedRun run = experiments::ResolveRun(request);
  const double dt = run.parameters.GetDouble("dt");

  double seconds = 0, newton = 0, sparse = 0, dense = 0, contacts = 0, unknowns = 0, steps = 0;
  for (auto _ : state) {
    state.PauseTiming();
    World world;
    experiments::FindScenario(run.scenario).factory()->Build(run.parameters, world);
    sap::SapFormulation formulation(sap::SapOptions::FromParameters(run.parameters));
    for (int step = 0; step < scene.lead_in_steps; ++step) formulation.Step(world, dt);
    state.ResumeTiming();
    for (int step = 0; step < scene.steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      const StepReport report = formulation.Step(world, dt);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const sap::SapStepStatistics& statistics = formulation.last_step();
      newton += report.outer_iterations;
      sparse += statistics.sparse_factorizations;
      dense += statistics.dense_factorizations;
      contacts += report.contacts;
      unknowns += statistics.problem_unknowns;
      steps += 1;
    }
  }
  state.SetLabel(std::string(scene.scenario) + (scene.overrides.empty() ? "" : " " + scene.overrides.front()));
  state.counters["ms_per_step"] = benchmark::Counter(1e3 * seconds / steps);
  state.counters["newton_per_step"] = benchmark::Counter(newton / steps);
  state.counters["sparse_factorizations_per_step"] = benchmark::Counter(sparse / steps);
  state.counters["dense_factorizations_per_step"] = benchmark::Counter(dense / steps);
  state.counters["contacts_per_step"] = benchmark::Counter(contacts / steps);
  state.counters["unknowns"] = benchmark::Counter(unknowns / steps);
  state.counters["warm_start"] = static_cast<double>(state.range(1));
  state.counters["factorization_reuse"] = reuse_ratio;
  state.counters["threads"] = omp_get_max_threads();
}

// Arguments: scene case, sap.warm_start (0 free_motion, 1 lower_cost), chord steps (0 off,
// 1 sap.factorization_reuse_ratio = 0.5); chord steps only from the default warm start.
void SapSceneArguments(benchmark::internal::Benchmark* benchmark) {
  for (int scene = 0; scene < static_cast<int>(Cases().size()); ++scene) {
    benchmark->Args({scene, 0, 0});
    benchmark->Args({scene, 1, 0});
    benchmark->Args({scene, 1, 1});
  }
}
BENCHMARK(BM_SapScene)->Apply(SapSceneArguments)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
