// Wall time of one substep's quasi-Newton contact solve ([yu2025async] Algorithm 1; spec-sap-qn
// §1.2.3, GPU strategies §6) on the CPU (SolveQuasiNewton, OpenMP) and on the GPU
// (CudaQuasiNewtonSolver, including packing, upload and download), for a block of particles
// pressed into a tilted plane (substep_problem_examples.h) with side² = 100, 1,024 and 10,000
// contacts.
//
// Arguments: side, model (0 lagged, 1 sap_cone), regime, and for the GPU warp aggregation
// (1 on, 0 off). Regimes:
//   0  the models' default (stiff) constants, a fixed 50 iterations: time per iteration
//      compares the backends on identical work;
//   1  soft contacts (k = 1e3 N/m, v_s = 0.1 m/s, μ = 0.4) solved to ε_r = 1e-6.
// Counters: contacts, nodes, iterations and line-search evaluations per solve, ms per
// iteration; on the GPU also the host packing, device and unpacking times per solve and the
// host–device synchronizations. Run with OMP_NUM_THREADS set to compare thread counts.
// Without a GPU (or without a CUDA build) the GPU cases report an error and are skipped.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>

#include "formulations/quasi_newton/cuda/substep_problem_examples.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace {

using namespace contactlab;
using namespace contactlab::quasi_newton;

struct BenchmarkCase {
  examples::OwnedSubstepProblem owned;
  QuasiNewtonOptions options;
};

BenchmarkCase MakeCase(const benchmark::State& state) {
  examples::PressedBlockParameters parameters;
  parameters.particles_per_side = static_cast<int>(state.range(0));
  parameters.particle_layers = 3;
  parameters.contact.model =
      state.range(1) == 0 ? contact::ContactModelKind::kLagged : contact::ContactModelKind::kSapCone;
  BenchmarkCase result;
  if (state.range(2) == 0) {
    result.options.relative_tolerance = 1e-14;  // never met: exactly max_iterations
    result.options.max_iterations = 50;
  } else {
    parameters.contact.stiffness = 1e3;
    parameters.contact.stiction_tolerance = 0.1;
    result.options.relative_tolerance = 1e-6;
    result.options.max_iterations = 5000;
  }
  result.owned = examples::PressedBlockProblem(parameters);
  return result;
}

void SetCounters(benchmark::State& state, const BenchmarkCase& benchmark_case, double seconds, double iterations,
                 double evaluations, double solves) {
  state.counters["contacts"] = static_cast<double>(benchmark_case.owned.problem.contacts.size());
  state.counters["nodes"] = static_cast<double>(benchmark_case.owned.problem.node_mass.size());
  state.counters["iterations"] = iterations / solves;
  state.counters["line_search_evaluations"] = evaluations / solves;
  state.counters["ms_per_iteration"] = iterations > 0 ? 1e3 * seconds / iterations : 0.0;
}

void BM_QuasiNewtonCpu(benchmark::State& state) {
  const BenchmarkCase benchmark_case = MakeCase(state);
  double iterations = 0, evaluations = 0, solves = 0, seconds = 0;
  for (auto _ : state) {
    const double start = omp_get_wtime();
    const QuasiNewtonResults results = SolveQuasiNewton(benchmark_case.owned.problem, benchmark_case.options);
    seconds += omp_get_wtime() - start;
    benchmark::DoNotOptimize(results.velocity.data());
    iterations += results.summary.iterations;
    evaluations += results.summary.line_search_evaluations;
    solves += 1;
  }
  SetCounters(state, benchmark_case, seconds, iterations, evaluations, solves);
  state.counters["threads"] = omp_get_max_threads();
}

void BM_QuasiNewtonCuda(benchmark::State& state) {
#ifdef CONTACTLAB_WITH_CUDA
  std::string reason;
  if (!CudaDeviceAvailable(&reason)) {
    state.SkipWithError(("no CUDA device: " + reason).c_str());
    return;
  }
  const BenchmarkCase benchmark_case = MakeCase(state);
  CudaQuasiNewtonSettings settings;
  settings.warp_aggregation = state.range(3) != 0;
  CudaQuasiNewtonSolver solver(settings);
  solver.Solve(benchmark_case.owned.problem, benchmark_case.options);  // allocate buffers, load kernels
  double iterations = 0, evaluations = 0, solves = 0, seconds = 0, pack = 0, device = 0, unpack = 0, syncs = 0;
  for (auto _ : state) {
    const double start = omp_get_wtime();
    const QuasiNewtonResults results = solver.Solve(benchmark_case.owned.problem, benchmark_case.options);
    seconds += omp_get_wtime() - start;
    benchmark::DoNotOptimize(results.velocity.data());
    iterations += results.summary.iterations;
    evaluations += results.summary.line_search_evaluations;
    solves += 1;
    const CudaQuasiNewtonTimings& timings = solver.last_timings();
    pack += timings.pack_seconds;
    device += timings.device_seconds;
    unpack += timings.unpack_seconds;
    syncs += timings.synchronizations;
  }
  SetCounters(state, benchmark_case, seconds, iterations, evaluations, solves);
  state.counters["pack_ms"] = 1e3 * pack / solves;
  state.counters["device_ms"] = 1e3 * device / solves;
  state.counters["unpack_ms"] = 1e3 * unpack / solves;
  state.counters["synchronizations"] = syncs / solves;
  state.SetLabel(reason);
#else
  state.SkipWithError("built without CUDA (CONTACTLAB_WITH_CUDA undefined)");
#endif
}

void CpuArguments(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"side", "model", "regime"});
  for (const int regime : {0, 1}) {
    for (const int model : {0, 1}) {
      for (const int side : {10, 32, 100}) benchmark->Args({side, model, regime});
    }
  }
}

void CudaArguments(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"side", "model", "regime", "aggregate"});
  for (const int regime : {0, 1}) {
    for (const int model : {0, 1}) {
      for (const int side : {10, 32, 100}) benchmark->Args({side, model, regime, 1});
    }
  }
  for (const int side : {10, 32, 100}) benchmark->Args({side, 0, 0, 0});  // atomics without warp sums
}

BENCHMARK(BM_QuasiNewtonCpu)->Apply(CpuArguments)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_QuasiNewtonCuda)->Apply(CudaArguments)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
