#include "mpm/transfers.h"

#include <array>

#include "mpm/constitutive/linear_corotated.h"
#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

// Particles of a block are visited in index order, which in memory is runs of a few
// neighbours, not one contiguous stretch. Asking early for the cache lines of the particle
// kPrefetchDistance places ahead hides part of the miss latency (about 3 % of a substep
// on the benchmark block). A hint only: it changes no value.
constexpr int kPrefetchDistance = 8;

void PrefetchMatrix(const Matrix3& matrix) {
  // 72 bytes: two cache lines at most.
  __builtin_prefetch(matrix.data());
  __builtin_prefetch(matrix.data() + 8);
}

}  // namespace

void ParticleToGrid(const Particles& particles, const std::vector<Material>& materials, double stress_dt,
                    SparseGrid& grid) {
  grid.Rebuild(particles.position);
  const double spacing = grid.spacing();
  const double inverse_inertia = ApicInverseInertiaScale(spacing);
  const std::vector<int>& sorted_particles = grid.sorted_particles();

  // Linear corotated materials get their stress from a direct, inlinable call instead of
  // the virtual one: the same function, so the same values.
  std::vector<const LinearCorotatedModel*> linear_corotated(materials.size());
  for (std::size_t m = 0; m < materials.size(); ++m) {
    linear_corotated[m] = dynamic_cast<const LinearCorotatedModel*>(materials[m].constitutive_model.get());
  }

  grid.ScatterParticleBlocks([&](int block, SparseGrid::HaloBox& halo) {
    // The block's particles scatter into a dense box of its 6×6×6 halo nodes, one (m, m v)
    // 4-vector per node, which the grid then adds up: the 27 nodes of a stencil are plain
    // offsets, and the grid sees one access per halo node instead of one per particle and
    // node. Each node sums the block's contributions first, then the blocks.
    const NodeCoordinate halo_origin = grid.HaloOrigin(block);
    const int end = grid.particle_block_begin(block + 1);
    for (int s = grid.particle_block_begin(block); s < end; ++s) {
      const int p = sorted_particles[s];
      if (s + kPrefetchDistance < end) {
        const int ahead = sorted_particles[s + kPrefetchDistance];
        PrefetchMatrix(particles.affine_velocity[ahead]);
        if (stress_dt > 0.0) {
          PrefetchMatrix(particles.deformation_gradient[ahead]);
          PrefetchMatrix(particles.reference_rotation[ahead]);
        }
      }
      const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
      const NodeCoordinate first = stencil.base_node - halo_origin;  // in [0, 3]³
      Eigen::Vector4d* const stencil_corner =
          &halo[first.x() + SparseGrid::kHaloWidth * (first.y() + SparseGrid::kHaloWidth * first.z())];

      // Affine momentum matrix: APIC term plus, for explicit steps, the MLS stress impulse.
      const double particle_mass = particles.mass[p];
      Matrix3 affine = particle_mass * particles.affine_velocity[p];
      if (stress_dt > 0.0) {
        const int material = particles.material[p];
        const Matrix3& elastic_deformation = particles.deformation_gradient[p];
        const Matrix3& reference_rotation = particles.reference_rotation[p];
        const Matrix3 stress =
            linear_corotated[material] != nullptr
                ? linear_corotated[material]->FirstPiolaStress(elastic_deformation, reference_rotation)
                : materials[material].constitutive_model->FirstPiolaStress(elastic_deformation, reference_rotation);
        affine -=
            (stress_dt * inverse_inertia * particles.initial_volume[p]) * stress * elastic_deformation.transpose();
      }
      const Vector3 particle_momentum = particle_mass * particles.velocity[p];

      // Node (a, b, c) receives w·(m v + A (x_i − x_p)) with x_i − x_p = d₀ + h (a, b, c):
      // the affine term grows by h·A e_k per node along axis k, so it is built incrementally.
      // The mass rides along as the first entry, with steps of 0, so a node's 4-vector is
      // w·(m, m v + A (x_i − x_p)).
      const Matrix3 affine_step = spacing * affine;
      Eigen::Vector4d corner, step_a, step_b, step_c;
      corner << particle_mass, particle_momentum + affine * stencil.base_offset;
      step_a << 0.0, affine_step.col(0);
      step_b << 0.0, affine_step.col(1);
      step_c << 0.0, affine_step.col(2);
      const Eigen::Vector4d double_step_a = 2.0 * step_a;
      for (int c = 0; c < 3; ++c) {
        const Eigen::Vector4d momentum_c = c == 0 ? corner : Eigen::Vector4d(corner + c * step_c);
        for (int b = 0; b < 3; ++b) {
          const Eigen::Vector4d momentum_bc = b == 0 ? momentum_c : Eigen::Vector4d(momentum_c + b * step_b);
          const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
          Eigen::Vector4d* const row = stencil_corner + SparseGrid::kHaloWidth * (b + SparseGrid::kHaloWidth * c);
          row[0] += (stencil.weight[0][0] * weight_bc) * momentum_bc;
          row[1] += (stencil.weight[0][1] * weight_bc) * (momentum_bc + step_a);
          row[2] += (stencil.weight[0][2] * weight_bc) * (momentum_bc + double_step_a);
        }
      }
    }
  });
}

void ComputeGridVelocity(const Vector3& gravity, double dt, SparseGrid& grid) {
  const int node_count = grid.num_nodes();
#pragma omp parallel for schedule(static)
  for (int node = 0; node < node_count; ++node) {
    grid.velocity[node] =
        grid.mass[node] > 0.0 ? Vector3(grid.momentum[node] / grid.mass[node] + dt * gravity) : Vector3::Zero();
  }
}

void GridToParticle(const SparseGrid& grid, double dt, Particles& particles) {
  const double spacing = grid.spacing();
  const double inverse_inertia = ApicInverseInertiaScale(spacing);
  const std::vector<int>& sorted_particles = grid.sorted_particles();

  grid.ForEachParticleBlock([&](int block) {
    // The block's particles gather from a dense copy of the velocities of its 6×6×6 halo
    // box: the 27 nodes of a stencil are then plain offsets (same values, same sums).
    std::array<int, SparseGrid::kHaloNodes> nodes;
    grid.HaloNodes(block, nodes);
    std::array<Vector3, SparseGrid::kHaloNodes> halo_velocity;
    for (int k = 0; k < SparseGrid::kHaloNodes; ++k) halo_velocity[k] = grid.velocity[nodes[k]];
    const NodeCoordinate halo_origin = grid.HaloOrigin(block);

    const int end = grid.particle_block_begin(block + 1);
    for (int s = grid.particle_block_begin(block); s < end; ++s) {
      const int p = sorted_particles[s];
      if (s + kPrefetchDistance < end) {
        const int ahead = sorted_particles[s + kPrefetchDistance];
        PrefetchMatrix(particles.deformation_gradient[ahead]);
        PrefetchMatrix(particles.affine_velocity[ahead]);
      }
      const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
      const NodeCoordinate first = stencil.base_node - halo_origin;  // in [0, 3]³
      const Vector3* const stencil_corner =
          &halo_velocity[first.x() + SparseGrid::kHaloWidth * (first.y() + SparseGrid::kHaloWidth * first.z())];

      // Gather v_p = Σ w v_i and B_p = Σ w v_i (x_i − x_p)ᵀ. With x_i − x_p = d₀ + h (a, b, c),
      // B_p = v_p d₀ᵀ + h [Σ w a v_i, Σ w b v_i, Σ w c v_i], accumulated row by row along x.
      Vector3 velocity = Vector3::Zero();
      Vector3 moment_a = Vector3::Zero(), moment_b = Vector3::Zero(), moment_c = Vector3::Zero();
      for (int c = 0; c < 3; ++c) {
        for (int b = 0; b < 3; ++b) {
          const Vector3* row = stencil_corner + SparseGrid::kHaloWidth * (b + SparseGrid::kHaloWidth * c);
          const Vector3 weighted_1 = stencil.weight[0][1] * row[1];
          const Vector3 weighted_2 = stencil.weight[0][2] * row[2];
          const Vector3 row_sum = stencil.weight[0][0] * row[0] + weighted_1 + weighted_2;
          const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
          velocity += weight_bc * row_sum;
          moment_a += weight_bc * (weighted_1 + 2.0 * weighted_2);
          moment_b += (b * weight_bc) * row_sum;
          moment_c += (c * weight_bc) * row_sum;
        }
      }
      Matrix3 affine_moment = velocity * stencil.base_offset.transpose();
      affine_moment.col(0) += spacing * moment_a;
      affine_moment.col(1) += spacing * moment_b;
      affine_moment.col(2) += spacing * moment_c;
      const Matrix3 affine_velocity = inverse_inertia * affine_moment;

      // Deformation update with the MLS velocity gradient, then advection.
      particles.velocity[p] = velocity;
      particles.affine_velocity[p] = affine_velocity;
      particles.deformation_gradient[p] =
          (Matrix3::Identity() + dt * affine_velocity) * particles.deformation_gradient[p];
      particles.position[p] += dt * velocity;
    }
  });
}

void UpdateConstitutiveState(const std::vector<Material>& materials, Particles& particles) {
  const int count = static_cast<int>(particles.size());
#pragma omp parallel for schedule(static)
  for (int p = 0; p < count; ++p) {
    const Material& material = materials[particles.material[p]];
    if (material.model != ConstitutiveModelKind::kLinearCorotated) continue;
    Matrix3& elastic_deformation = particles.deformation_gradient[p];
    if (material.is_plastic()) {
      // Lagged von Mises projection (seed 000 Alg. 1) and F = F^E F^P kept consistent.
      const VonMisesReturnResult result = VonMisesReturnMap(elastic_deformation, particles.reference_rotation[p],
                                                            material.yield_stress, material.lame.shear_modulus);
      if (result.yielded) {
        particles.plastic_deformation_gradient[p] = result.elastic_deformation_gradient.inverse() *
                                                    elastic_deformation * particles.plastic_deformation_gradient[p];
        elastic_deformation = result.elastic_deformation_gradient;
      }
      particles.reference_rotation[p] = result.next_reference_rotation;
    } else {
      particles.reference_rotation[p] = ComputePolarRotation(elastic_deformation);
    }
  }
}

}  // namespace contactlab::mpm
