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

#include "formulations/quasi_newton/cuda/explicit_substep_backend.h"
#include "formulations/quasi_newton/cuda/explicit_substep_device.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"
#include "mpm/bspline.h"
#include "mpm/sparse_grid.h"

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

// μ_L, λ and the von Mises yield stress (0: elastic) per material; throws for a model the
// device does not implement.
inline void MaterialTables(const std::vector<mpm::Material>& materials, std::vector<double>& shear_modulus,
                           std::vector<double>& first_lame_parameter, std::vector<double>& yield_stress) {
  shear_modulus.clear();
  first_lame_parameter.clear();
  yield_stress.clear();
  for (const mpm::Material& material : materials) {
    if (material.model != "linear_corotated") {
      throw std::invalid_argument("device explicit substep: material '" + material.name +
                                  "' is not linear_corotated (the only model the device substep has)");
    }
    shear_modulus.push_back(material.lame.shear_modulus);
    first_lame_parameter.push_back(material.lame.first_lame_parameter);
    yield_stress.push_back(material.is_plastic() ? material.yield_stress : 0.0);
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
    store_matrix(staged.plastic_deformation_gradient, p, particles.plastic_deformation_gradient[p]);
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

// x and v back into `particles`.
inline void UnpackMotion(const HostParticleBuffers& staged, mpm::Particles& particles) {
  const int n = staged.count;
  for (int p = 0; p < n; ++p) {
    particles.position[p] = mpm::Vector3(staged.position[p], staged.position[n + p], staged.position[2 * n + p]);
    particles.velocity[p] = mpm::Vector3(staged.velocity[p], staged.velocity[n + p], staged.velocity[2 * n + p]);
  }
}

// x, v, C, F^E, R0, F^P back into `particles`.
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
    particles.reference_rotation[p] = load_matrix(staged.reference_rotation, p);
    particles.plastic_deformation_gradient[p] = load_matrix(staged.plastic_deformation_gradient, p);
  }
}

// The integer coordinates of node `index` of a dense box (explicit_substep_steps.h order).
inline mpm::NodeCoordinate BoxNodeCoordinate(const GridBox& box, int index) {
  const int i = index % box.size[0];
  const int j = (index / box.size[0]) % box.size[1];
  const int k = index / (box.size[0] * box.size[1]);
  return mpm::NodeCoordinate(box.origin[0] + i, box.origin[1] + j, box.origin[2] + k);
}

// Nodes with mass of a dense box (mass [N], momentum and velocity [3][N]).
inline CudaGridSnapshot MakeGridSnapshot(const GridBox& box, const std::vector<double>& mass,
                                         const std::vector<double>& momentum, const std::vector<double>& velocity) {
  CudaGridSnapshot snapshot;
  const int count = box.size[0] * box.size[1] * box.size[2];
  for (int index = 0; index < count; ++index) {
    if (!(mass[index] > 0.0)) continue;
    snapshot.node.push_back(BoxNodeCoordinate(box, index));
    snapshot.mass.push_back(mass[index]);
    snapshot.momentum.emplace_back(momentum[index], momentum[count + index], momentum[2 * count + index]);
    snapshot.velocity.emplace_back(velocity[index], velocity[count + index], velocity[2 * count + index]);
  }
  return snapshot;
}

// The dense box grid of a device substep and the host's sparse grid (mpm/sparse_grid.h) that
// the contact problem is built on: ToSparse rebuilds the sparse grid around the particles and
// copies the nodes with mass into it, FromSparse writes its velocities back into the box.
class DenseGridExchange {
 public:
  // mass [N], momentum and velocity [3][N] of `box` into `grid`, rebuilt around `positions`
  // (the positions the box's grid was scattered from, so every node with mass exists there).
  void ToSparse(const GridBox& box, const std::vector<double>& mass, const std::vector<double>& momentum,
                const std::vector<double>& velocity, const std::vector<mpm::Vector3>& positions,
                mpm::SparseGrid& grid) {
    grid.Rebuild(positions);
    box_ = box;
    box_nodes_.clear();
    sparse_nodes_.clear();
    const int count = box.size[0] * box.size[1] * box.size[2];
    for (int index = 0; index < count; ++index) {
      if (!(mass[index] > 0.0)) continue;
      const int node = grid.FindNode(BoxNodeCoordinate(box, index));
      if (node < 0) throw std::logic_error("DenseGridExchange: a node with mass is outside the particles' stencils");
      grid.mass[node] = mass[index];
      grid.momentum[node] = mpm::Vector3(momentum[index], momentum[count + index], momentum[2 * count + index]);
      grid.velocity[node] = mpm::Vector3(velocity[index], velocity[count + index], velocity[2 * count + index]);
      box_nodes_.push_back(index);
      sparse_nodes_.push_back(node);
    }
  }

  // The sparse grid's velocities of the nodes ToSparse copied into `velocity` ([3][N] of the box).
  void FromSparse(const mpm::SparseGrid& grid, std::vector<double>& velocity) const {
    const std::size_t count = static_cast<std::size_t>(box_.size[0]) * box_.size[1] * box_.size[2];
    if (velocity.size() != 3 * count) throw std::logic_error("DenseGridExchange::FromSparse: wrong box size");
    for (std::size_t k = 0; k < box_nodes_.size(); ++k) {
      const mpm::Vector3& v = grid.velocity[sparse_nodes_[k]];
      for (int axis = 0; axis < 3; ++axis) velocity[axis * count + box_nodes_[k]] = v[axis];
    }
  }

 private:
  GridBox box_;
  std::vector<int> box_nodes_;     // box index of each node with mass
  std::vector<int> sparse_nodes_;  // its index in the sparse grid
};

}  // namespace contactlab::quasi_newton::gpu
