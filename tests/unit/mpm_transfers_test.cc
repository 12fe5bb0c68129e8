// Quadratic B-spline identities, conservation of mass and momentum by the APIC transfers,
// and thread-count independence of the explicit MLS-MPM substep.
#include <omp.h>

#include <limits>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "mpm/bspline.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sampling.h"
#include "mpm/sparse_grid.h"
#include "mpm/transfers.h"

namespace contactlab::mpm {
namespace {

constexpr double kRoundOff = 1e-14;

Vector3 RandomVector(std::mt19937_64& generator, double scale) {
  std::uniform_real_distribution<double> uniform(-scale, scale);
  return Vector3(uniform(generator), uniform(generator), uniform(generator));
}

// A cloud of particles with random positions, velocities and affine matrices.
Particles RandomParticles(int count, double spacing, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> mass(0.5, 2.0);
  Particles particles;
  for (int p = 0; p < count; ++p) {
    particles.Add(RandomVector(generator, 10.0 * spacing) + Vector3(0.3, -0.7, 1.1), RandomVector(generator, 1.0),
                  mass(generator), spacing * spacing * spacing / 8.0, 0);
    particles.affine_velocity.back() = Matrix3::Random();
  }
  return particles;
}

Vector3 GridLinearMomentum(const SparseGrid& grid) {
  Vector3 total = Vector3::Zero();
  for (int i = 0; i < grid.num_nodes(); ++i) total += grid.mass[i] * grid.velocity[i];
  return total;
}

Vector3 GridAngularMomentum(const SparseGrid& grid) {
  Vector3 total = Vector3::Zero();
  for (int i = 0; i < grid.num_nodes(); ++i) total += grid.NodePosition(i).cross(grid.mass[i] * grid.velocity[i]);
  return total;
}

TEST(Sampling, SizesPastTheMachineAreRefusedBeforeAllocating) {
  // 2^40 particles need hundreds of TiB: refused by the memory check whatever the machine.
  Particles particles;
  EXPECT_THROW(particles.Reserve(std::size_t{1} << 40), std::length_error);
  EXPECT_EQ(particles.position.capacity(), 0u);
  // A 1 m cube at 0.5 mm particle spacing (8e9 lattice points), and a region that is not finite.
  SamplingOptions options;
  options.grid_spacing = 1e-3;
  const auto inside = [](const Vector3&) { return -1.0; };
  EXPECT_THROW(SampleSolid(inside, Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(1.0)), options),
               std::length_error);
  const double infinity = std::numeric_limits<double>::infinity();
  EXPECT_THROW(SampleSolid(inside, Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(infinity)), options),
               std::invalid_argument);
  // A region well inside the bound samples as before: 10^3 points of a 5 mm lattice.
  options.grid_spacing = 1e-2;
  EXPECT_EQ(SampleSolid(inside, Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(0.05 - 1e-9)), options).size(),
            1000u);
}

TEST(QuadraticBSpline, PartitionOfUnityMomentsAndGradients) {
  const double spacing = 0.37;
  std::mt19937_64 generator(3);
  for (int trial = 0; trial < 200; ++trial) {
    const Vector3 position = RandomVector(generator, 5.0);
    const QuadraticStencil stencil = ComputeQuadraticStencil(position, spacing);
    double weight_sum = 0.0;
    Vector3 first_moment = Vector3::Zero(), gradient_sum = Vector3::Zero();
    Matrix3 second_moment = Matrix3::Zero(), gradient_moment = Matrix3::Zero();
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const double w = stencil.Weight(a, b, c);
          const Vector3 offset = stencil.NodeOffset(a, b, c, spacing);
          EXPECT_GE(w, 0.0);
          weight_sum += w;
          first_moment += w * offset;
          second_moment += w * offset * offset.transpose();
          gradient_sum += stencil.WeightGradient(a, b, c);
          // Σ_i (x_i − x_p) ∇w_ipᵀ = −I·(−1): d/dx_p of Σ w_ip x_i = x_p is I.
          gradient_moment += (offset + position) * stencil.WeightGradient(a, b, c).transpose();
        }
      }
    }
    EXPECT_NEAR(weight_sum, 1.0, kRoundOff);
    EXPECT_LT(first_moment.norm(), 1e-14 * 20);
    EXPECT_LT((second_moment - 0.25 * spacing * spacing * Matrix3::Identity()).norm(), 1e-14 * 10);
    EXPECT_LT(gradient_sum.norm(), 1e-13);
    EXPECT_LT((gradient_moment - Matrix3::Identity()).norm(), 1e-12);
  }
}

TEST(QuadraticBSpline, GradientMatchesCentralDifferences) {
  const double spacing = 0.5;
  const Vector3 position(0.31, -1.27, 2.06);
  const QuadraticStencil stencil = ComputeQuadraticStencil(position, spacing);
  const double step = 1e-6;
  for (int c = 0; c < 3; ++c) {
    for (int b = 0; b < 3; ++b) {
      for (int a = 0; a < 3; ++a) {
        const NodeCoordinate node = stencil.base_node + NodeCoordinate(a, b, c);
        Vector3 numeric;
        for (int axis = 0; axis < 3; ++axis) {
          // Weight of the same node seen from displaced particle positions.
          const auto weight_at = [&](const Vector3& x) {
            const QuadraticStencil shifted = ComputeQuadraticStencil(x, spacing);
            const NodeCoordinate local = node - shifted.base_node;
            return shifted.Weight(local.x(), local.y(), local.z());
          };
          numeric[axis] =
              (weight_at(position + step * Vector3::Unit(axis)) - weight_at(position - step * Vector3::Unit(axis))) /
              (2.0 * step);
        }
        EXPECT_LT((numeric - stencil.WeightGradient(a, b, c)).norm(), 1e-8);
      }
    }
  }
}

TEST(SparseGrid, NodeIndexRoundTripIncludingNegativeCoordinates) {
  SparseGrid grid(0.1);
  grid.Rebuild({Vector3(-0.93, 0.05, -2.4), Vector3(0.41, 1.7, 0.0)});
  for (int node = 0; node < grid.num_nodes(); ++node) {
    EXPECT_EQ(grid.FindNode(grid.NodeCoordinateOf(node)), node);
  }
  EXPECT_EQ(grid.FindNode(NodeCoordinate(1000, 1000, 1000)), -1);
}

TEST(Transfers, ParticleToGridConservesMassAndMomentum) {
  const double spacing = 0.1;
  const Particles particles = RandomParticles(500, spacing, 11);
  std::vector<Material> materials = {MakeMaterial("m", ConstitutiveModelKind::kFixedCorotated, 1000, 1e5, 0.3)};
  SparseGrid grid(spacing);
  ParticleToGrid(particles, materials, 0.0, grid);
  ComputeGridVelocity(Vector3::Zero(), 0.0, grid);

  double grid_mass = 0.0;
  for (int i = 0; i < grid.num_nodes(); ++i) grid_mass += grid.mass[i];
  const double scale = TotalMass(particles);
  EXPECT_NEAR(grid_mass, scale, kRoundOff * 100 * scale);
  EXPECT_LT((GridLinearMomentum(grid) - LinearMomentum(particles)).norm(), 1e-12 * scale);
  // APIC: the affine field's spin is carried to the grid (m_p h²/4 axial(C − Cᵀ)).
  EXPECT_LT((GridAngularMomentum(grid) - AngularMomentum(particles, spacing)).norm(), 1e-12 * scale);
}

TEST(Transfers, GridToParticleConservesMomentum) {
  const double spacing = 0.1;
  Particles particles = RandomParticles(500, spacing, 12);
  std::vector<Material> materials = {MakeMaterial("m", ConstitutiveModelKind::kFixedCorotated, 1000, 1e5, 0.3)};
  SparseGrid grid(spacing);
  ParticleToGrid(particles, materials, 0.0, grid);
  // Replace the grid velocities by an arbitrary field; G2P must carry its momentum exactly.
  std::mt19937_64 generator(5);
  for (int i = 0; i < grid.num_nodes(); ++i) grid.velocity[i] = RandomVector(generator, 1.0);
  const Vector3 linear = GridLinearMomentum(grid), angular = GridAngularMomentum(grid);
  GridToParticle(grid, 0.0, particles);  // dt = 0: positions stay where the weights were taken
  const double scale = TotalMass(particles);
  EXPECT_LT((LinearMomentum(particles) - linear).norm(), 1e-12 * scale);
  EXPECT_LT((AngularMomentum(particles, spacing) - angular).norm(), 1e-12 * scale);
}

TEST(Transfers, StressImpulsesConserveMomentum) {
  // Internal forces of a rotationally invariant material sum to zero force and torque.
  const double spacing = 0.1;
  Particles particles = RandomParticles(300, spacing, 13);
  for (auto& f : particles.deformation_gradient) f = Matrix3::Identity() + 0.2 * Matrix3::Random();
  std::vector<Material> materials = {MakeMaterial("m", ConstitutiveModelKind::kFixedCorotated, 1000, 1e5, 0.3)};
  SparseGrid without_stress(spacing), with_stress(spacing);
  ParticleToGrid(particles, materials, 0.0, without_stress);
  ParticleToGrid(particles, materials, 1e-3, with_stress);
  ComputeGridVelocity(Vector3::Zero(), 0.0, without_stress);
  ComputeGridVelocity(Vector3::Zero(), 0.0, with_stress);
  // The stress impulses are large compared with round-off of the momentum itself.
  double impulse_scale = 0.0;
  for (int i = 0; i < with_stress.num_nodes(); ++i) {
    impulse_scale += (with_stress.momentum[i] - without_stress.momentum[i]).norm();
  }
  ASSERT_GT(impulse_scale, 1e-3);
  EXPECT_LT((GridLinearMomentum(with_stress) - GridLinearMomentum(without_stress)).norm(), 1e-13 * impulse_scale * 100);
  EXPECT_LT((GridAngularMomentum(with_stress) - GridAngularMomentum(without_stress)).norm(),
            1e-13 * impulse_scale * 100);
}

TEST(ExplicitStep, FreeFallIsExact) {
  // A uniformly translating block has no stress; every particle gains g·dt per step.
  const double spacing = 0.05;
  SamplingOptions sampling;
  sampling.grid_spacing = spacing;
  Particles particles;
  const auto positions = SampleSolid([](const Vector3&) { return -1.0; },
                                     Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(0.2)), sampling);
  AddSampledParticles(positions, sampling, 500.0, Vector3(0.3, 0.0, 0.0), 0, particles);
  std::vector<Material> materials = {MakeMaterial("m", ConstitutiveModelKind::kLinearCorotated, 500, 1e5, 0.3)};
  const Vector3 gravity(0.0, 0.0, -9.81);
  const double dt = 1e-3;
  SparseGrid grid(spacing);
  for (int step = 1; step <= 20; ++step) {
    ParticleToGrid(particles, materials, dt, grid);
    ComputeGridVelocity(gravity, dt, grid);
    GridToParticle(grid, dt, particles);
    UpdateConstitutiveState(materials, particles);
    for (std::size_t p = 0; p < particles.size(); ++p) {
      ASSERT_LT((particles.velocity[p] - (Vector3(0.3, 0.0, 0.0) + step * dt * gravity)).norm(), 1e-12);
      ASSERT_LT((particles.deformation_gradient[p] - Matrix3::Identity()).norm(), 1e-12);
    }
  }
}

// Several substeps of a deforming, plastic block; returns the final particle state.
Particles RunSubsteps(int threads) {
  omp_set_num_threads(threads);
  const double spacing = 0.05;
  SamplingOptions sampling;
  sampling.grid_spacing = spacing;
  sampling.jitter = 0.3;
  sampling.seed = 7;
  Particles particles;
  const auto positions = SampleSolid([](const Vector3& x) { return (x - Vector3::Constant(0.2)).norm() - 0.2; },
                                     Eigen::AlignedBox3d(Vector3::Zero(), Vector3::Constant(0.4)), sampling);
  AddSampledParticles(positions, sampling, 1000.0, Vector3::Zero(), 0, particles);
  std::mt19937_64 generator(9);
  for (auto& v : particles.velocity) v = RandomVector(generator, 0.5);
  std::vector<Material> materials = {
      MakeMaterial("dough", ConstitutiveModelKind::kLinearCorotated, 1000, 2e4, 0.4, 1e3)};
  SparseGrid grid(spacing);
  const double dt = 0.2 * spacing / materials[0].DilatationalWaveSpeed();
  for (int step = 0; step < 30; ++step) {
    ParticleToGrid(particles, materials, dt, grid);
    ComputeGridVelocity(Vector3(0, 0, -9.81), dt, grid);
    GridToParticle(grid, dt, particles);
    UpdateConstitutiveState(materials, particles);
  }
  return particles;
}

TEST(ExplicitStep, ThreadCountDoesNotChangeTheResult) {
  const Particles one = RunSubsteps(1);
  const Particles two = RunSubsteps(2);
  ASSERT_EQ(one.size(), two.size());
  // Coloured scatter and per-particle gathers: bitwise identical, not just close.
  for (std::size_t p = 0; p < one.size(); ++p) {
    ASSERT_EQ(one.position[p], two.position[p]) << "particle " << p;
    ASSERT_EQ(one.velocity[p], two.velocity[p]) << "particle " << p;
    ASSERT_EQ(one.deformation_gradient[p], two.deformation_gradient[p]) << "particle " << p;
    ASSERT_EQ(one.plastic_deformation_gradient[p], two.plastic_deformation_gradient[p]) << "particle " << p;
  }
}

}  // namespace
}  // namespace contactlab::mpm
