#pragma once
// Host side of the device explicit substep's data exchange: mpm::Particles in and out of the
// structure-of-arrays buffers of explicit_substep_device.h, the dense grid box around the
// particles, the material tables, and the grid snapshot. Used by CudaExplicitSubstep and the
// host emulation in tests.
#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "formulations/quasi_newton/cuda/cuda_explicit_substep.h"
#include "formulations/quasi_newton/cuda/explicit_substep_device.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"
#include "mpm/bspline.h"

namespace contactlab::quasi_newton::gpu {

// Nodes touched by every particle's stencil, widened by `margin` cells per side.
inline GridBox ComputeGridBox(const mpm::Particles& particles, double spacing, int margin) {
  int low[3] = {INT_MAX, INT_MAX, INT_MAX};
  int high[3] = {INT_MIN, INT_MIN, INT_MIN};
  for (const mpm::Vector3& position : particles.position) {
    const DeviceStencil stencil = ComputeStencil({position.x(), position.y(), position.z()}, spacing);
    for (int axis = 0; axis < 3; ++axis) {
      low[axis] = std::min(low[axis], stencil.base[axis]);
      high[axis] = std::max(high[axis], stencil.base[axis] + 2);
    }
  }
  GridBox box;
  box.spacing = spacing;
  for (int axis = 0; axis < 3; ++axis) {
    if (particles.size() == 0) low[axis] = high[axis] = 0;
    box.origin[axis] = low[axis] - margin;
    box.size[axis] = high[axis] - low[axis] + 1 + 2 * margin;
  }
  return box;
}

// μ_L and λ per material; throws for a model the device does not implement.
inline void MaterialTables(const std::vector<mpm::Material>& materials, std::vector<double>& shear_modulus,
                           std::vector<double>& first_lame_parameter) {
  shear_modulus.clear();
  first_lame_parameter.clear();
  for (const mpm::Material& material : materials) {
    if (material.model != mpm::ConstitutiveModelKind::kLinearCorotated) {
      throw std::invalid_argument("CudaExplicitSubstep: material '" + material.name +
                                  "' is not linear_corotated (the only model on the device)");
    }
    shear_modulus.push_back(material.lame.shear_modulus);
    first_lame_parameter.push_back(material.lame.first_lame_parameter);
  }
}

inline void PackParticles(const mpm::Particles& particles, int material_count, HostParticleBuffers& staged) {
  const int n = staged.count;
  auto store_matrix = [n](double* array, int p, const mpm::Matrix3& m) {
    for (int k = 0; k < 9; ++k) array[k * n + p] = m(k / 3, k % 3);
  };
  for (int p = 0; p < n; ++p) {
    for (int k = 0; k < 3; ++k) {
      staged.position[k * n + p] = particles.position[p][k];
      staged.velocity[k * n + p] = particles.velocity[p][k];
    }
    store_matrix(staged.affine_velocity, p, particles.affine_velocity[p]);
    store_matrix(staged.deformation_gradient, p, particles.deformation_gradient[p]);
    store_matrix(staged.reference_rotation, p, particles.reference_rotation[p]);
    staged.mass[p] = particles.mass[p];
    staged.initial_volume[p] = particles.initial_volume[p];
    const int material = particles.material[p];
    if (material < 0 || material >= material_count) {
      throw std::invalid_argument("CudaExplicitSubstep: particle " + std::to_string(p) + " has material " +
                                  std::to_string(material) + " of " + std::to_string(material_count));
    }
    staged.material[p] = material;
  }
}

// x, v, C, F^E back into `particles`.
inline void UnpackParticles(const HostParticleBuffers& staged, mpm::Particles& particles) {
  const int n = staged.count;
  auto load_matrix = [n](const double* array, int p) {
    mpm::Matrix3 m;
    for (int k = 0; k < 9; ++k) m(k / 3, k % 3) = array[k * n + p];
    return m;
  };
  for (int p = 0; p < n; ++p) {
    particles.position[p] = mpm::Vector3(staged.position[p], staged.position[n + p], staged.position[2 * n + p]);
    particles.velocity[p] = mpm::Vector3(staged.velocity[p], staged.velocity[n + p], staged.velocity[2 * n + p]);
    particles.affine_velocity[p] = load_matrix(staged.affine_velocity, p);
    particles.deformation_gradient[p] = load_matrix(staged.deformation_gradient, p);
  }
}

// Nodes with mass of a dense box (mass [N], momentum and velocity [3][N]).
inline CudaGridSnapshot MakeGridSnapshot(const GridBox& box, const std::vector<double>& mass,
                                         const std::vector<double>& momentum, const std::vector<double>& velocity) {
  CudaGridSnapshot snapshot;
  const int count = box.size[0] * box.size[1] * box.size[2];
  for (int index = 0; index < count; ++index) {
    if (!(mass[index] > 0.0)) continue;
    const int i = index % box.size[0];
    const int j = (index / box.size[0]) % box.size[1];
    const int k = index / (box.size[0] * box.size[1]);
    snapshot.node.emplace_back(box.origin[0] + i, box.origin[1] + j, box.origin[2] + k);
    snapshot.mass.push_back(mass[index]);
    snapshot.momentum.emplace_back(momentum[index], momentum[count + index], momentum[2 * count + index]);
    snapshot.velocity.emplace_back(velocity[index], velocity[count + index], velocity[2 * count + index]);
  }
  return snapshot;
}

}  // namespace contactlab::quasi_newton::gpu
