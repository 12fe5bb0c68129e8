#include "mpm/transfers.h"

#include <array>

#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {

void ParticleToGrid(const Particles& particles, const std::vector<Material>& materials,
                    double stress_dt, SparseGrid& grid) {
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
      const Matrix3 stress = material.constitutive_model->FirstPiolaStress(
          elastic_deformation, particles.reference_rotation[p]);
      affine -= (stress_dt * inverse_inertia * particles.initial_volume[p]) * stress *
                elastic_deformation.transpose();
    }
    const Vector3 particle_momentum = particle_mass * particles.velocity[p];

    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const double weight = stencil.Weight(a, b, c);
          const int node = nodes[a + 3 * b + 9 * c];
          grid.mass[node] += weight * particle_mass;
          grid.momentum[node] += weight * (particle_momentum + affine * stencil.NodeOffset(a, b, c, spacing));
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

    // Gather velocity and the APIC affine matrix B_p = Σ w v_i (x_i − x_p)ᵀ.
    Vector3 velocity = Vector3::Zero();
    Matrix3 affine_moment = Matrix3::Zero();
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const double weight = stencil.Weight(a, b, c);
          const Vector3& node_velocity = grid.velocity[nodes[a + 3 * b + 9 * c]];
          velocity += weight * node_velocity;
          affine_moment += (weight * node_velocity) * stencil.NodeOffset(a, b, c, spacing).transpose();
        }
      }
    }
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
      const VonMisesReturnResult result =
          VonMisesReturnMap(elastic_deformation, particles.reference_rotation[p],
                            material.yield_stress, material.lame.shear_modulus);
      if (result.yielded) {
        particles.plastic_deformation_gradient[p] = result.elastic_deformation_gradient.inverse() *
                                                    elastic_deformation *
                                                    particles.plastic_deformation_gradient[p];
        elastic_deformation = result.elastic_deformation_gradient;
      }
      particles.reference_rotation[p] = result.next_reference_rotation;
    } else {
      particles.reference_rotation[p] = ComputePolarDecomposition(elastic_deformation).rotation;
    }
  }
}

}  // namespace contactlab::mpm
