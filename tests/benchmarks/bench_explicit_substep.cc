// Throughput of one explicit MLS-MPM substep (P2G with stress, grid update, G2P with the
// deformation update, constitutive update) for a linear-corotated block of ≥ 10⁵ particles
// at 8 particles per cell. Reported as particle-substeps per second (items_per_second).
// Run with OMP_NUM_THREADS=1 and =2 to compare thread scaling (`make bench`). The second
// case times the baseline x86-64 build of the kernels on the same CPU. The third times the
// same substep on the GPU (CudaExplicitSubstep: particles kept on the device, upload and
// sort once, outside the timing), for the same block and for one of 64³ cells (2.1 M
// particles); without a GPU or a CUDA build it reports an error and is skipped.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "mpm/material.h"
#include "mpm/sampling.h"
#include "mpm/sparse_grid.h"
#include "mpm/transfers.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_explicit_substep.h"
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace {

using contactlab::mpm::Vector3;

constexpr double kSpacing = 0.01;

std::vector<contactlab::mpm::Material> BlockMaterials() {
  return {contactlab::mpm::MakeMaterial("block", "linear_corotated", 1000.0, 1e5, 0.3)};
}

// A block of cells_per_side³ cells at 8 particles per cell, moving at 0.1 m/s.
contactlab::mpm::Particles Block(int cells_per_side) {
  const double spacing = kSpacing;
  contactlab::mpm::SamplingOptions sampling;
  sampling.grid_spacing = spacing;
  sampling.particles_per_cell = 8.0;
  const double side = cells_per_side * spacing;
  const auto positions = contactlab::mpm::SampleSolid(
      [](const Vector3&) { return -1.0; }, Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(side)), sampling);
  contactlab::mpm::Particles particles;
  contactlab::mpm::AddSampledParticles(positions, sampling, 1000.0, Vector3(0.1, 0.0, 0.0), 0, particles);
  return particles;
}

// `baseline` forces the baseline x86-64 build of the transfer kernels; otherwise the run
// takes the build the CPU supports (TransferKernelBuild()).
void RunExplicitSubstep(benchmark::State& state, bool baseline) {
  contactlab::mpm::ForceBaselineTransferKernels(baseline);
  const std::vector<contactlab::mpm::Material> materials = BlockMaterials();
  contactlab::mpm::Particles particles = Block(static_cast<int>(state.range(0)));
  const double spacing = kSpacing;
  contactlab::mpm::SparseGrid grid(spacing);
  const double dt = 0.2 * spacing / materials[0].WaveSpeed();
  const Vector3 gravity(0.0, 0.0, -9.81);
  for (auto _ : state) {
    contactlab::mpm::ParticleToGrid(particles, materials, dt, grid);
    contactlab::mpm::ComputeGridVelocity(gravity, dt, grid);
    contactlab::mpm::GridToParticle(grid, dt, particles);
    contactlab::mpm::UpdateConstitutiveState(materials, particles);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(particles.size()));
  state.counters["particles"] = static_cast<double>(particles.size());
  state.counters["threads"] = omp_get_max_threads();
  state.SetLabel(contactlab::mpm::TransferKernelBuild());
  contactlab::mpm::ForceBaselineTransferKernels(false);
}

void BM_ExplicitSubstep(benchmark::State& state) {
  RunExplicitSubstep(state, false);
}
void BM_ExplicitSubstepBaselineBuild(benchmark::State& state) {
  RunExplicitSubstep(state, true);
}

void BM_ExplicitSubstepCuda(benchmark::State& state) {
#ifdef CONTACTLAB_WITH_CUDA
  std::string reason;
  if (!contactlab::quasi_newton::CudaDeviceAvailable(&reason)) {
    state.SkipWithError(("no CUDA device: " + reason).c_str());
    return;
  }
  const std::vector<contactlab::mpm::Material> materials = BlockMaterials();
  const contactlab::mpm::Particles particles = Block(static_cast<int>(state.range(0)));
  const double dt = 0.2 * kSpacing / materials[0].WaveSpeed();
  const Vector3 gravity(0.0, 0.0, -9.81);
  contactlab::quasi_newton::CudaExplicitSubstep substep(kSpacing);
  contactlab::mpm::Particles moved = particles;
  substep.Upload(moved, materials);
  substep.Substep(dt, gravity);  // first launch outside the timing
  substep.Synchronize();
  // The block falls freely, ever faster, and leaves its grid box (4 cells of margin) after a
  // few hundred substeps: every 200 it starts again from its initial state, uploaded (sorted,
  // new box) untimed, as a step boundary would. Carrying the fallen block on instead (as the
  // first version did) let it reach metres per second in a long timing loop and leave the
  // box within 200 substeps.
  int since_upload = 0;
  for (auto _ : state) {
    if (++since_upload == 200) {
      state.PauseTiming();
      moved = particles;
      substep.Upload(moved, materials);
      since_upload = 0;
      state.ResumeTiming();
    }
    substep.Substep(dt, gravity);
    substep.Synchronize();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(particles.size()));
  state.counters["particles"] = static_cast<double>(particles.size());
  state.SetLabel(reason);
#else
  state.SkipWithError("built without CUDA");
#endif
}

// 24³ cells × 8 = 110,592 particles.
BENCHMARK(BM_ExplicitSubstep)->Arg(24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExplicitSubstepCuda)->Arg(24)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExplicitSubstepBaselineBuild)->Arg(24)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
