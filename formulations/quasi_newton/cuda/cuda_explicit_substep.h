#pragma once
// A device-resident explicit MLS-MPM substep ([yu2025async] §V-A; spec-sap-qn §1.2.4 steps
// 3.2–3.3 and 3.7, GPU strategies of §6): the particle–grid transfers of mpm/transfers.h
// (ParticleToGrid with the stress impulse, ComputeGridVelocity, GridToParticle) on the GPU,
// for particles whose material is linear corotated elasticity about the lagged rotation R0
// ([zong2024convex] eq. 19–21).
//
// Per step: Upload() copies the particles to the device, lays a dense box of grid nodes
// around them (plus a margin for the motion of the step) and sorts them by cell with a radix
// sort; all substeps of the step reuse that order ([yu2025async] "partial sorting"). Per substep:
// P2G one thread per particle with warp-level sums before the atomic grid writes, the grid
// velocity update with gravity, G2P one thread per particle with the F update, advection and
// the constitutive update of mpm::UpdateConstitutiveState (R0, von Mises plasticity;
// device_constitutive.h). Download() returns x, v, C, F^E, R0 and F^P in the caller's
// particle order. As an ExplicitSubstepBackend (explicit_substep_backend.h) it is the MPM half
// of quasi_newton.backend = cuda: the host reads x, v and the grid between P2G and G2P.
//
// What it does not do (stays on the host, as in the authors' code, spec §1.2.4 [RC]):
//   * contact registration and the contact problem's assembly between P2G and G2P (the
//     quasi-Newton solve itself runs on CudaQuasiNewtonSolver);
//   * grid boundary conditions, other constitutive models (fixed corotated), cloth;
//   * re-sorting or growing the grid box during a step: a particle whose stencil leaves the
//     box is skipped and reported by Download() (upload with a larger margin).
// Atomic sums make the result depend on scheduling at round-off level. Double precision.
// Plain C++ header: include it under #ifdef CONTACTLAB_WITH_CUDA.
#include <memory>
#include <vector>

#include "formulations/quasi_newton/cuda/explicit_substep_backend.h"
#include "mpm/material.h"
#include "mpm/particles.h"

namespace contactlab::quasi_newton {

struct CudaExplicitSubstepSettings {
  // Nodes added around the particles' stencils on every side of the dense grid box [cells];
  // must cover how far particles travel during the step.
  int margin_cells = 4;
  // Low bits of the cell key the radix sort orders by (0: all bits). Fewer bits sort faster
  // and leave a partial order ([yu2025async] sorts on 10-bit keys; spec Y12).
  int sort_key_bits = 0;
  // Warp-segmented sums before the atomic grid writes; false: one atomic per particle and node.
  bool warp_aggregation = true;
};

class CudaExplicitSubstep final : public ExplicitSubstepBackend {
 public:
  explicit CudaExplicitSubstep(double grid_spacing, CudaExplicitSubstepSettings settings = {});
  ~CudaExplicitSubstep();
  CudaExplicitSubstep(const CudaExplicitSubstep&) = delete;
  CudaExplicitSubstep& operator=(const CudaExplicitSubstep&) = delete;

  // Once per step, with the settings' margin. Throws std::invalid_argument for a material
  // that is not linear corotated or a bad index, std::runtime_error when CUDA fails.
  void Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials);
  void Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials, int margin_cells) override;
  // One substep of δt [s] with gravity g [m/s²]: ParticleToGrid then GridToParticle; asynchronous.
  void Substep(double dt, const mpm::Vector3& gravity);
  void ParticleToGrid(double dt, const mpm::Vector3& gravity) override;
  void GridToParticle(double dt) override;
  void DownloadMotion(mpm::Particles& particles) override;
  void DownloadGrid(const std::vector<mpm::Vector3>& positions, mpm::SparseGrid& grid) override;
  void UploadGridVelocity(const mpm::SparseGrid& grid) override;
  // Writes x, v, C, F^E, R0, F^P of the uploaded particles into `particles` (same size as
  // uploaded). Throws std::runtime_error when a particle left the grid box.
  void Download(mpm::Particles& particles) override;
  CudaGridSnapshot DownloadGrid();
  // Waits for the queued substeps (benchmarks).
  void Synchronize();

  double grid_spacing() const { return grid_spacing_; }

 private:
  struct Device;
  double grid_spacing_;
  CudaExplicitSubstepSettings settings_;
  std::unique_ptr<Device> device_;
};

}  // namespace contactlab::quasi_newton
