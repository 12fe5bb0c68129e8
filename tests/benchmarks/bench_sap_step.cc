// Wall time of one `sap` step on ball_on_slope at the size of [zong2024convex] Table I (h = 0.2 m,
// ~6,800 particles, Δt = 0.01 s, ε_r = 1e-6), split into the disjoint phases of the step:
// free motion (P2G, Hessian assembly, the free-motion solve), detection, assembly (contact
// Jacobians, Schur complement, Delassus estimates), SAP solve, G2P, rigid update; and,
// across those phases, the time in factorizations and solves (sparse and dense) and in the
// line search.
// [zong2024convex] reports 1.16 s/step on one thread; run with OMP_NUM_THREADS=1 to compare.
// Each iteration is one step of a 1 s run that restarts when it ends, so the average covers
// the whole run (free rolling contact with ~3–6 contact particles).
#include <benchmark/benchmark.h>
#include <omp.h>

#include "experiments/scenario.h"
#include "formulations/sap/sap_formulation.h"

namespace {

using namespace contactlab;

World BuildBall(double mu, ParameterSet& parameters) {
  const experiments::ScenarioInfo& info = experiments::FindScenario("ball_on_slope");
  parameters = ParameterSet();
  parameters.Declare(info.parameters);
  parameters.Declare(sap::SapOptions::Specs());
  parameters.Set("mu", mu, "benchmark");
  parameters.Set("grid_spacing", 0.2, "benchmark");
  parameters.Set("particles_per_cell", 103.55, "benchmark");
  parameters.Set("sampling_jitter", 0.5, "benchmark");  // as data/scenes/ball_on_slope.toml
  parameters.Validate();
  World world;
  info.factory()->Build(parameters, world);
  return world;
}

void BM_SapBallOnSlope(benchmark::State& state) {
  const double mu = state.range(0) / 10.0;
  ParameterSet parameters;
  World world = BuildBall(mu, parameters);
  sap::SapFormulation formulation(sap::SapOptions::FromParameters(parameters));
  const double dt = 0.01;
  double free_motion = 0, detection = 0, assembly = 0, factorization = 0, line_search = 0, solve = 0, g2p = 0,
         rigid = 0, newton = 0, contacts = 0, unknowns = 0, steps = 0;
  for (auto _ : state) {
    const StepReport report = formulation.Step(world, dt);
    const sap::SapStepStatistics& statistics = formulation.last_step();
    free_motion += report.timings.free_motion;
    detection += report.timings.detection;
    assembly += report.timings.assembly;
    factorization += statistics.factorization_seconds;
    line_search += statistics.line_search_seconds;
    solve += report.timings.solve;
    g2p += report.timings.g2p;
    rigid += report.timings.rigid;
    newton += report.outer_iterations;
    contacts += report.contacts;
    unknowns += 3 * statistics.active_nodes + statistics.rigid_unknowns;
    steps += 1;
    if (world.time >= 1.0 - 0.5 * dt) {
      state.PauseTiming();
      world = BuildBall(mu, parameters);
      state.ResumeTiming();
    }
  }
  const auto per_step_ms = [&](double seconds) { return benchmark::Counter(1e3 * seconds / steps); };
  state.counters["free_motion_ms"] = per_step_ms(free_motion);
  state.counters["detection_ms"] = per_step_ms(detection);
  state.counters["assembly_ms"] = per_step_ms(assembly);
  state.counters["factorization_ms"] = per_step_ms(factorization);
  state.counters["line_search_ms"] = per_step_ms(line_search);
  state.counters["solve_ms"] = per_step_ms(solve);
  state.counters["g2p_ms"] = per_step_ms(g2p);
  state.counters["rigid_ms"] = per_step_ms(rigid);
  state.counters["newton_per_step"] = benchmark::Counter(newton / steps);
  state.counters["contacts_per_step"] = benchmark::Counter(contacts / steps);
  state.counters["unknowns"] = benchmark::Counter(unknowns / steps);
  state.counters["particles"] = static_cast<double>(world.particles.size());
  state.counters["threads"] = omp_get_max_threads();
  state.SetItemsProcessed(state.iterations());
}

// μ = 0.3 (rolling) and μ = 0.2 (slipping); 100 steps = one simulated second each.
BENCHMARK(BM_SapBallOnSlope)->Arg(3)->Arg(2)->Iterations(100)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
