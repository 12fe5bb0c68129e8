#pragma once
// The explicit MPM half of a quasi_newton substep on a device backend
// (quasi_newton.backend = cuda, or its host replay `emulated`): the particles stay on the
// device from Upload to Download, once per step; per substep the host only reads x, v and
// the grid for contact registration and the contact problem, and writes the grid velocities
// back (spec-sap-qn §1.2.4 steps 3.2–3.7):
//
//   Upload(particles)                     once per step
//   for each substep:
//     ParticleToGrid(δt, g)               P2G with the stress impulse, v* = v + δt g
//     DownloadMotion(particles)           x, v for contact registration
//     DownloadGrid(positions, grid)       m_i, v*_i into the host's sparse grid
//     … walls, contact solve on `grid` …
//     UploadGridVelocity(grid)            v^{k+1}_i back
//     GridToParticle(δt)                  G2P, F ← (I + δt C) F, x += δt v, R0, plasticity
//   Download(particles)                   every field, once per step
//
// Implementations: CudaExplicitSubstep (cuda_explicit_substep.h, the GPU) and
// EmulatedExplicitSubstep (emulated_explicit_substep.h, the same per-thread steps serially on
// the host). Plain C++.
#include <vector>

#include <Eigen/Core>

#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"

namespace contactlab::quasi_newton {

// The grid of the last substep: nodes with mass only.
struct CudaGridSnapshot {
  std::vector<Eigen::Vector3i> node;   // integer node coordinates (x_i = h i)
  std::vector<double> mass;            // m_i [kg]
  std::vector<mpm::Vector3> momentum;  // (m v)_i after P2G [kg m/s]
  std::vector<mpm::Vector3> velocity;  // v_i after the grid update [m/s]
};

class ExplicitSubstepBackend {
 public:
  virtual ~ExplicitSubstepBackend() = default;
  // Once per step; the dense grid box covers the particles' stencils widened by
  // `margin_cells` on every side (how far particles may travel during the step). Throws
  // std::invalid_argument for a material without a device model (not linear corotated).
  virtual void Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials,
                      int margin_cells) = 0;
  virtual void ParticleToGrid(double dt, const mpm::Vector3& gravity) = 0;
  // x and v into `particles`; its other fields are stale until Download.
  virtual void DownloadMotion(mpm::Particles& particles) = 0;
  // The grid of the last ParticleToGrid into `grid`, rebuilt around `positions` (those of
  // DownloadMotion).
  virtual void DownloadGrid(const std::vector<mpm::Vector3>& positions, mpm::SparseGrid& grid) = 0;
  // The velocities of `grid`'s nodes with mass back into the device grid.
  virtual void UploadGridVelocity(const mpm::SparseGrid& grid) = 0;
  virtual void GridToParticle(double dt) = 0;
  // Every field into `particles`. Throws std::runtime_error when a particle's stencil left
  // the grid box since Upload.
  virtual void Download(mpm::Particles& particles) = 0;
};

}  // namespace contactlab::quasi_newton
