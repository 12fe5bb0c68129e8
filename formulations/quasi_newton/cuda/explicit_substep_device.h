#pragma once
// Internal interface between the host half of CudaExplicitSubstep (cuda_explicit_substep.cc,
// g++: packing of mpm::Particles) and its device half (explicit_substep.cu, nvcc). Plain C++.
#include <memory>
#include <vector>

#include "formulations/quasi_newton/cuda/device_math.h"

namespace contactlab::quasi_newton::gpu {

// Pinned host arrays of the particles, structure of arrays (matrices row-major, see
// explicit_substep_steps.h), in the caller's particle order.
struct HostParticleBuffers {
  int count = 0;
  double* position = nullptr;                      // [3][n]
  double* velocity = nullptr;                      // [3][n]
  double* affine_velocity = nullptr;               // [9][n]
  double* deformation_gradient = nullptr;          // [9][n]
  double* reference_rotation = nullptr;            // [9][n]
  double* plastic_deformation_gradient = nullptr;  // [9][n]
  double* mass = nullptr;                          // [n]
  double* initial_volume = nullptr;                // [n]
  int* material = nullptr;                         // [n]
};

// The dense node box: nodes origin + (0 … size − 1) per axis, spacing h.
struct GridBox {
  int origin[3] = {0, 0, 0};
  int size[3] = {0, 0, 0};
  double spacing = 1.0;
};

class DeviceExplicitSubstep {
 public:
  DeviceExplicitSubstep();
  ~DeviceExplicitSubstep();
  DeviceExplicitSubstep(const DeviceExplicitSubstep&) = delete;
  DeviceExplicitSubstep& operator=(const DeviceExplicitSubstep&) = delete;

  // Pinned buffers for `count` particles (grown, never shrunk).
  HostParticleBuffers& Stage(int count);
  // The buffers of the last Stage().
  const HostParticleBuffers& staged() const;
  // Uploads the staged particles and the material tables, allocates the grid box and sorts
  // the particles by base-node cell (low `sort_key_bits` bits of the box index, 0 = all).
  void Upload(const GridBox& box, const std::vector<double>& shear_modulus,
              const std::vector<double>& first_lame_parameter, const std::vector<double>& yield_stress,
              int sort_key_bits);
  // One substep (asynchronous): ParticleToGrid, then GridToParticle.
  void Substep(double dt, const Vec3& gravity, bool warp_aggregation);
  // Clears the grid, P2G with the stress impulse, grid velocity with gravity (asynchronous).
  void ParticleToGrid(double dt, const Vec3& gravity, bool warp_aggregation);
  // G2P with the F update and advection, then the constitutive update (asynchronous).
  void GridToParticle(double dt);
  // Particles back into the staged buffers in the caller's order (x, v, C, F^E, R0, F^P);
  // false when a particle's stencil left the grid box at some point since the upload.
  bool Download();
  // x and v alone into the staged buffers; false as Download.
  bool DownloadMotion();
  // Waits for the queued kernels.
  void Synchronize();
  // Replaces the grid velocity of the whole box ([3][N], box order); synchronous.
  void UploadGridVelocity(const std::vector<double>& velocity);
  // Node mass, momentum [3][N] and velocity [3][N] of the box.
  void DownloadGrid(std::vector<double>& mass, std::vector<double>& momentum, std::vector<double>& velocity);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace contactlab::quasi_newton::gpu
