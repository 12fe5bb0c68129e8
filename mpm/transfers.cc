#include "mpm/transfers.h"

#include <array>

#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {

void ParticleToGrid(const Particles& particles, const std::vector<Material>& materials, double stress_dt,
                    SparseGrid& grid) {
  grid.Rebuild(particles.position);
  const double spacing = grid.spacing();
  const double inverse_inertia = ApicInverseInertiaScale(spacing);

  grid.ForEachParticleColored([&](int p, int particle_block) {
    const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
    std::array<int, 27> nodes;
    grid.StencilNodes(particle_block, stencil.base_node, nodes);

    // Affine momentum matrix: APIC term plus, for explicit steps, the MLS stress impulse.
    const double particle_mass = particles.mass[p];
    Matrix3 affine = particle_mass * particles.affine_velocity[p];
    if (stress_dt > 0.0) {
      const Material& material = materials[particles.material[p]];
      const Matrix3& elastic_deformation = particles.deformation_gradient[p];
      const Matrix3 stress =
          material.constitutive_model->FirstPiolaStress(elastic_deformation, particles.reference_rotation[p]);
      affine -= (stress_dt * inverse_inertia * particles.initial_volume[p]) * stress * elastic_deformation.transpose();
    }
    const Vector3 particle_momentum = particle_mass * particles.velocity[p];

    // Node (a, b, c) receives w·(m v + A (x_i − x_p)) with x_i − x_p = d₀ + h (a, b, c):
    // the affine term grows by h·A e_k per node along axis k, so it is built incrementally.
    const Vector3 corner_momentum = particle_momentum + affine * stencil.base_offset;
    const Matrix3 affine_step = spacing * affine;
    for (int c = 0; c < 3; ++c) {
      const Vector3 momentum_c = corner_momentum + c * affine_step.col(2);
      for (int b = 0; b < 3; ++b) {
        const Vector3 momentum_bc = momentum_c + b * affine_step.col(1);
        const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
        for (int a = 0; a < 3; ++a) {
          const double weight = stencil.weight[0][a] * weight_bc;
          const int node = nodes[a + 3 * b + 9 * c];
          grid.mass[node] += weight * particle_mass;
          grid.momentum[node] += weight * (momentum_bc + a * affine_step.col(0));
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

  grid.ForEachParticle([&](int p, int particle_block) {
    const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
    std::array<int, 27> nodes;
    grid.StencilNodes(particle_block, stencil.base_node, nodes);

    // Gather v_p = Σ w v_i and B_p = Σ w v_i (x_i − x_p)ᵀ. With x_i − x_p = d₀ + h (a, b, c),
    // B_p = v_p d₀ᵀ + h [Σ w a v_i, Σ w b v_i, Σ w c v_i], accumulated row by row along x.
    Vector3 velocity = Vector3::Zero();
    Vector3 moment_a = Vector3::Zero(), moment_b = Vector3::Zero(), moment_c = Vector3::Zero();
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        const int* row = &nodes[3 * b + 9 * c];
        const Vector3 weighted_1 = stencil.weight[0][1] * grid.velocity[row[1]];
        const Vector3 weighted_2 = stencil.weight[0][2] * grid.velocity[row[2]];
        const Vector3 row_sum = stencil.weight[0][0] * grid.velocity[row[0]] + weighted_1 + weighted_2;
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
      particles.reference_rotation[p] = ComputePolarDecomposition(elastic_deformation).rotation;
    }
  }
}

}  // namespace contactlab::mpm
