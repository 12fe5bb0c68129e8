#pragma once
// The device explicit substep run serially on the host: the same packed arrays, dense grid
// box and per-thread steps (explicit_substep_steps.h) as explicit_substep.cu, with plain sums
// in particle order instead of sorting and atomics. Tests compare it with the CPU transfers
// of mpm/transfers.h without a GPU.
#include <vector>

#include "formulations/quasi_newton/cuda/explicit_substep_packing.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"

namespace contactlab::quasi_newton::gpu {

// P2G with the stress impulse, grid velocity, G2P for one substep of δt on `particles`
// (linear corotated materials); returns the grid's nodes with mass.
inline CudaGridSnapshot EmulateExplicitSubstep(mpm::Particles& particles, const std::vector<mpm::Material>& materials,
                                               double spacing, double dt, const mpm::Vector3& gravity,
                                               int margin_cells = 4) {
  std::vector<double> shear_modulus, first_lame_parameter;
  MaterialTables(materials, shear_modulus, first_lame_parameter);
  const int n = static_cast<int>(particles.size());
  std::vector<double> packed(35 * static_cast<std::size_t>(n));
  std::vector<int> material(n);
  HostParticleBuffers staged;
  staged.count = n;
  staged.position = packed.data();
  staged.velocity = packed.data() + 3 * n;
  staged.affine_velocity = packed.data() + 6 * n;
  staged.deformation_gradient = packed.data() + 15 * n;
  staged.reference_rotation = packed.data() + 24 * n;
  staged.mass = packed.data() + 33 * n;
  staged.initial_volume = packed.data() + 34 * n;
  staged.material = material.data();
  PackParticles(particles, static_cast<int>(materials.size()), staged);
  const ParticleView view{n,
                          staged.position,
                          staged.velocity,
                          staged.affine_velocity,
                          staged.deformation_gradient,
                          staged.reference_rotation,
                          staged.mass,
                          staged.initial_volume,
                          staged.material};
  const MaterialView material_view{shear_modulus.data(), first_lame_parameter.data()};

  const GridBox box = ComputeGridBox(particles, spacing, margin_cells);
  DenseGridView grid;
  for (int axis = 0; axis < 3; ++axis) {
    grid.origin[axis] = box.origin[axis];
    grid.size[axis] = box.size[axis];
  }
  grid.spacing = spacing;
  const int nodes = grid.node_count();
  std::vector<double> mass(nodes, 0.0), momentum(3 * static_cast<std::size_t>(nodes), 0.0),
      velocity(3 * static_cast<std::size_t>(nodes), 0.0);
  grid.mass = mass.data();
  grid.momentum = momentum.data();
  grid.velocity = velocity.data();

  for (int p = 0; p < n; ++p) {
    const ParticleScatter scatter = PrepareParticleScatter(view, material_view, p, spacing, dt);
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          double value[4];
          ParticleScatterValues(scatter, a, b, c, value);
          const int node = grid.Index(scatter.stencil.base, a, b, c);
          mass[node] += value[0];
          for (int k = 0; k < 3; ++k) momentum[k * static_cast<std::size_t>(nodes) + node] += value[1 + k];
        }
      }
    }
  }
  const Vec3 g{gravity.x(), gravity.y(), gravity.z()};
  for (int i = 0; i < nodes; ++i) GridVelocityStep(grid, i, g, dt);
  for (int p = 0; p < n; ++p) {
    if (!GridToParticleStep(view, grid, p, dt)) throw std::logic_error("EmulateExplicitSubstep: particle left the box");
  }
  UnpackParticles(staged, particles);
  return MakeGridSnapshot(box, mass, momentum, velocity);
}

}  // namespace contactlab::quasi_newton::gpu
