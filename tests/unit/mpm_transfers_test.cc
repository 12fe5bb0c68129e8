// Quadratic B-spline identities, conservation of mass and momentum by the APIC transfers,
// and thread-count independence of the explicit MLS-MPM substep.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

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

// Particles of each particle block, in sorted order, as (block coordinate, particle) pairs.
std::vector<std::pair<NodeCoordinate, int>> BlockOrder(const SparseGrid& grid) {
  std::vector<std::pair<NodeCoordinate, int>> order;
  for (int block = 0; block < grid.num_particle_blocks(); ++block) {
    const NodeCoordinate origin = grid.HaloOrigin(block) / SparseGrid::kBlockWidth;
    for (int s = grid.particle_block_begin(block); s < grid.particle_block_begin(block + 1); ++s) {
      order.emplace_back(origin, grid.sorted_particles()[s]);
    }
  }
  return order;
}

TEST(SparseGrid, ParticlesAreSortedByBlockThenIndexByBothSorts) {
  // Rebuild counts particles into the bounding box of their blocks when that box is small,
  // and sorts block keys otherwise (particles far apart): both must give the order
  // (block z, y, x, then particle index), each particle in the block of its base node.
  const double spacing = 0.1;
  std::vector<Vector3> positions;
  for (const Vector3& x : RandomParticles(2000, spacing, 21).position) positions.push_back(x);
  std::vector<Vector3> with_outlier = positions;
  with_outlier.push_back(Vector3(1e4, -3e3, 2e4) * spacing);  // a box of ~10¹¹ blocks
  const int default_threads = omp_get_max_threads();
  for (const auto* cloud : {&positions, &with_outlier}) {
    for (const int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      SparseGrid grid(spacing);
      grid.Rebuild(*cloud);
      const auto order = BlockOrder(grid);
      ASSERT_EQ(order.size(), cloud->size());
      for (std::size_t k = 0; k < order.size(); ++k) {
        const auto& [block, p] = order[k];
        const NodeCoordinate base = ComputeQuadraticStencil((*cloud)[p], spacing).base_node;
        for (int axis = 0; axis < 3; ++axis) {
          EXPECT_GE(base[axis], SparseGrid::kBlockWidth * block[axis]);
          EXPECT_LT(base[axis], SparseGrid::kBlockWidth * (block[axis] + 1));
        }
        if (k == 0) continue;
        const auto& [previous_block, previous_p] = order[k - 1];
        const auto key = [](const NodeCoordinate& b) { return std::array<int, 3>{b.z(), b.y(), b.x()}; };
        if (previous_block == block) {
          EXPECT_LT(previous_p, p);
        } else {
          EXPECT_LT(key(previous_block), key(block));
        }
      }
    }
  }
  omp_set_num_threads(default_threads);
  // The cloud's particles keep the same order with the outlier present (other sort).
  SparseGrid dense(spacing), sparse(spacing);
  dense.Rebuild(positions);
  sparse.Rebuild(with_outlier);
  auto sparse_order = BlockOrder(sparse);
  sparse_order.erase(std::remove_if(sparse_order.begin(), sparse_order.end(),
                                    [&](const auto& entry) { return entry.second == int(positions.size()); }),
                     sparse_order.end());
  EXPECT_EQ(BlockOrder(dense), sparse_order);
}

TEST(SparseGrid, SortsEveryParticleWhenItsTeamIsSmallerThanRequested) {
  // OMP_THREAD_LIMIT below OMP_NUM_THREADS (or set alone) gives parallel regions fewer
  // threads than omp_get_max_threads() says. A nested region with one active level has the
  // same effect: asked for three threads, it runs with one. The counting sort must still
  // place every particle (it once split them into ranges for threads that never started).
  const double spacing = 0.1;
  std::vector<Vector3> positions;
  for (const Vector3& x : RandomParticles(2000, spacing, 23).position) positions.push_back(x);
  SparseGrid reference(spacing);
  reference.Rebuild(positions);
  const int default_threads = omp_get_max_threads();
  const int default_levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  SparseGrid nested(spacing);
  int requested = 0, team = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      omp_set_num_threads(3);
      requested = omp_get_max_threads();
#pragma omp parallel
      team = omp_get_num_threads();
      nested.Rebuild(positions);
    }
  }
  omp_set_max_active_levels(default_levels);
  omp_set_num_threads(default_threads);
  EXPECT_EQ(requested, 3);
  EXPECT_EQ(team, 1);
  EXPECT_EQ(BlockOrder(nested), BlockOrder(reference));
}

// A constitutive model that forwards to another one: the same stress through the virtual
// interface, for a dynamic type that ParticleToGrid does not special-case.
class ForwardingModel final : public ConstitutiveModel {
 public:
  explicit ForwardingModel(std::shared_ptr<const ConstitutiveModel> model) : model_(std::move(model)) {}
  std::string_view name() const override { return "forwarding"; }
  double EnergyDensity(const Matrix3& f, const Matrix3& r0) const override { return model_->EnergyDensity(f, r0); }
  Matrix3 FirstPiolaStress(const Matrix3& f, const Matrix3& r0) const override {
    return model_->FirstPiolaStress(f, r0);
  }
  Matrix9 FirstPiolaStressDerivative(const Matrix3& f, const Matrix3& r0) const override {
    return model_->FirstPiolaStressDerivative(f, r0);
  }
  double WaveSpeed(double density) const override { return model_->WaveSpeed(density); }
  bool is_plastic() const override { return model_->is_plastic(); }
  void UpdateState(Matrix3& elastic, Matrix3& rotation, Matrix3& plastic) const override {
    model_->UpdateState(elastic, rotation, plastic);
  }

 private:
  std::shared_ptr<const ConstitutiveModel> model_;
};

// Random particles with random deformation gradients and reference rotations.
Particles DeformedRandomParticles(int count, double spacing, std::uint64_t seed) {
  Particles particles = RandomParticles(count, spacing, seed);
  std::mt19937_64 generator(seed + 1);
  for (std::size_t p = 0; p < particles.size(); ++p) {
    particles.deformation_gradient[p] = Matrix3::Identity() + 0.3 * Matrix3::Random();
    particles.reference_rotation[p] =
        Eigen::AngleAxisd(RandomVector(generator, 1.0).norm(), RandomVector(generator, 1.0).normalized())
            .toRotationMatrix();
  }
  return particles;
}

TEST(Transfers, LinearCorotatedStressPathMatchesTheVirtualOne) {
  // ParticleToGrid calls LinearCorotatedModel's stress directly (inlinable); any other
  // model goes through the virtual interface. Both must scatter the same momenta.
  const double spacing = 0.1;
  const Particles particles = DeformedRandomParticles(1000, spacing, 31);
  std::vector<Material> direct = {MakeMaterial("m", "linear_corotated", 1000, 1e5, 0.3)};
  std::vector<Material> forwarded = direct;
  forwarded[0].constitutive_model = std::make_shared<ForwardingModel>(direct[0].constitutive_model);
  SparseGrid direct_grid(spacing), forwarded_grid(spacing);
  ParticleToGrid(particles, direct, 1e-3, direct_grid);
  ParticleToGrid(particles, forwarded, 1e-3, forwarded_grid);
  ASSERT_EQ(direct_grid.num_nodes(), forwarded_grid.num_nodes());
  double scale = 0.0;
  for (int i = 0; i < direct_grid.num_nodes(); ++i) scale = std::max(scale, direct_grid.momentum[i].norm());
  ASSERT_GT(scale, 0.0);
  for (int i = 0; i < direct_grid.num_nodes(); ++i) {
    EXPECT_EQ(direct_grid.mass[i], forwarded_grid.mass[i]);
    EXPECT_LE((direct_grid.momentum[i] - forwarded_grid.momentum[i]).norm(), kRoundOff * scale) << "node " << i;
  }
}

TEST(Transfers, ConstitutiveUpdateTakesTheModelsOwnStateUpdate) {
  // UpdateConstitutiveState calls LinearCorotatedModel's UpdateState directly and any other
  // model's through the virtual interface: the same R0, F^E and F^P, with plasticity (the
  // von Mises return mapping yields most of these strongly deformed particles) and without.
  for (const double yield_stress : {0.0, 2e3}) {
    Particles direct_particles = DeformedRandomParticles(500, 0.1, 37);
    Particles forwarded_particles = direct_particles;
    std::vector<Material> direct = {MakeMaterial("m", "linear_corotated", 1000, 1e5, 0.3, yield_stress)};
    std::vector<Material> forwarded = direct;
    forwarded[0].constitutive_model = std::make_shared<ForwardingModel>(direct[0].constitutive_model);
    UpdateConstitutiveState(direct, direct_particles);
    UpdateConstitutiveState(forwarded, forwarded_particles);
    int yielded = 0;
    for (std::size_t p = 0; p < direct_particles.size(); ++p) {
      EXPECT_LE((direct_particles.reference_rotation[p] - forwarded_particles.reference_rotation[p]).norm(), 1e-12);
      EXPECT_LE((direct_particles.deformation_gradient[p] - forwarded_particles.deformation_gradient[p]).norm(), 1e-12);
      EXPECT_LE((direct_particles.plastic_deformation_gradient[p] - forwarded_particles.plastic_deformation_gradient[p])
                    .norm(),
                1e-12);
      EXPECT_LE((direct_particles.reference_rotation[p].transpose() * direct_particles.reference_rotation[p] -
                 Matrix3::Identity())
                    .norm(),
                1e-12);
      yielded += (direct_particles.plastic_deformation_gradient[p] - Matrix3::Identity()).norm() > 1e-6 ? 1 : 0;
    }
    if (yield_stress > 0.0) {
      EXPECT_GT(yielded, 250);
    } else {
      EXPECT_EQ(yielded, 0);
    }
  }
}

TEST(Transfers, ParticleToGridAndBackMatchNodeByNodeSums) {
  // The transfers against the formulas evaluated node by node through FindNode: P2G
  //   m_i = Σ_p w m_p,  (m v)_i = Σ_p w [m_p v_p + (m_p C_p − Δt D⁻¹ V_p P_p F_pᵀ)(x_i − x_p)],
  // and G2P v_p = Σ_i w v_i, C_p = D⁻¹ Σ_i w v_i (x_i − x_p)ᵀ, F ← (I + Δt C_p) F.
  const double spacing = 0.1, dt = 1e-3;
  const double inverse_inertia = ApicInverseInertiaScale(spacing);
  Particles particles = DeformedRandomParticles(1000, spacing, 41);
  std::vector<Material> materials = {MakeMaterial("m", "linear_corotated", 1000, 1e5, 0.3),
                                     MakeMaterial("f", "fixed_corotated", 800, 3e5, 0.2)};
  for (std::size_t p = 0; p < particles.size(); p += 3) particles.material[p] = 1;
  SparseGrid grid(spacing);
  ParticleToGrid(particles, materials, dt, grid);

  std::vector<double> mass(grid.num_nodes(), 0.0);
  std::vector<Vector3> momentum(grid.num_nodes(), Vector3::Zero());
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
    const Matrix3& f = particles.deformation_gradient[p];
    const Matrix3 stress =
        materials[particles.material[p]].constitutive_model->FirstPiolaStress(f, particles.reference_rotation[p]);
    const Matrix3 affine = particles.mass[p] * particles.affine_velocity[p] -
                           dt * inverse_inertia * particles.initial_volume[p] * stress * f.transpose();
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int node = grid.FindNode(stencil.base_node + NodeCoordinate(a, b, c));
          ASSERT_GE(node, 0);
          const double w = stencil.Weight(a, b, c);
          mass[node] += w * particles.mass[p];
          momentum[node] +=
              w * (particles.mass[p] * particles.velocity[p] + affine * stencil.NodeOffset(a, b, c, spacing));
        }
      }
    }
  }
  double mass_scale = 0.0, momentum_scale = 0.0;
  for (int i = 0; i < grid.num_nodes(); ++i) {
    mass_scale = std::max(mass_scale, mass[i]);
    momentum_scale = std::max(momentum_scale, momentum[i].norm());
  }
  for (int i = 0; i < grid.num_nodes(); ++i) {
    EXPECT_NEAR(grid.mass[i], mass[i], 10 * kRoundOff * mass_scale) << "node " << i;
    EXPECT_LE((grid.momentum[i] - momentum[i]).norm(), 10 * kRoundOff * momentum_scale) << "node " << i;
  }

  std::mt19937_64 generator(43);
  for (int i = 0; i < grid.num_nodes(); ++i) grid.velocity[i] = RandomVector(generator, 1.0);
  const Particles before = particles;
  GridToParticle(grid, dt, particles);
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const QuadraticStencil stencil = ComputeQuadraticStencil(before.position[p], spacing);
    Vector3 velocity = Vector3::Zero();
    Matrix3 affine = Matrix3::Zero();
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const Vector3& v = grid.velocity[grid.FindNode(stencil.base_node + NodeCoordinate(a, b, c))];
          velocity += stencil.Weight(a, b, c) * v;
          affine += stencil.Weight(a, b, c) * v * stencil.NodeOffset(a, b, c, spacing).transpose();
        }
      }
    }
    affine *= inverse_inertia;
    EXPECT_LE((particles.velocity[p] - velocity).norm(), 10 * kRoundOff) << "particle " << p;
    EXPECT_LE((particles.affine_velocity[p] - affine).norm(), 10 * kRoundOff * inverse_inertia * spacing)
        << "particle " << p;
    const Matrix3 deformation = (Matrix3::Identity() + dt * affine) * before.deformation_gradient[p];
    EXPECT_LE((particles.deformation_gradient[p] - deformation).norm(), 10 * kRoundOff) << "particle " << p;
    EXPECT_LE((particles.position[p] - (before.position[p] + dt * velocity)).norm(), 10 * kRoundOff)
        << "particle " << p;
  }
}

TEST(Transfers, ParticleToGridConservesMassAndMomentum) {
  const double spacing = 0.1;
  const Particles particles = RandomParticles(500, spacing, 11);
  std::vector<Material> materials = {MakeMaterial("m", "fixed_corotated", 1000, 1e5, 0.3)};
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
  std::vector<Material> materials = {MakeMaterial("m", "fixed_corotated", 1000, 1e5, 0.3)};
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
  std::vector<Material> materials = {MakeMaterial("m", "fixed_corotated", 1000, 1e5, 0.3)};
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
  std::vector<Material> materials = {MakeMaterial("m", "linear_corotated", 500, 1e5, 0.3)};
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
  std::vector<Material> materials = {MakeMaterial("dough", "linear_corotated", 1000, 2e4, 0.4, 1e3)};
  SparseGrid grid(spacing);
  const double dt = 0.2 * spacing / materials[0].WaveSpeed();
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
  // Two threads, and three (uneven particle ranges in Rebuild's counting sort).
  for (const int threads : {2, 3}) {
    const Particles many = RunSubsteps(threads);
    ASSERT_EQ(one.size(), many.size());
    // Coloured scatter and per-particle gathers: bitwise identical, not just close.
    for (std::size_t p = 0; p < one.size(); ++p) {
      ASSERT_EQ(one.position[p], many.position[p]) << "particle " << p << ", " << threads << " threads";
      ASSERT_EQ(one.velocity[p], many.velocity[p]) << "particle " << p << ", " << threads << " threads";
      ASSERT_EQ(one.deformation_gradient[p], many.deformation_gradient[p])
          << "particle " << p << ", " << threads << " threads";
      ASSERT_EQ(one.plastic_deformation_gradient[p], many.plastic_deformation_gradient[p])
          << "particle " << p << ", " << threads << " threads";
    }
  }
}

TEST(ExplicitStep, InstructionSetBuildsAgreeToRoundOff) {
  // The AVX2/FMA build of the transfer kernels fuses multiply–adds where the baseline build
  // rounds twice; over 30 substeps of the plastic block the two stay within round-off
  // amplified by the steps (the state is O(1): positions 0.4 m, F ≈ I, v ≈ 0.5 m/s).
  const Particles automatic = RunSubsteps(2);
  const std::string automatic_build = TransferKernelBuild();
  ForceBaselineTransferKernels(true);
  EXPECT_STREQ(TransferKernelBuild(), "baseline");
  const Particles baseline = RunSubsteps(2);
  ForceBaselineTransferKernels(false);
  EXPECT_EQ(TransferKernelBuild(), automatic_build);
  if (automatic_build == "baseline") GTEST_SKIP() << "this CPU has no AVX2/FMA: only the baseline build runs";
  ASSERT_EQ(automatic.size(), baseline.size());
  double position_difference = 0.0, velocity_difference = 0.0, deformation_difference = 0.0;
  for (std::size_t p = 0; p < automatic.size(); ++p) {
    position_difference = std::max(position_difference, (automatic.position[p] - baseline.position[p]).norm());
    velocity_difference = std::max(velocity_difference, (automatic.velocity[p] - baseline.velocity[p]).norm());
    deformation_difference =
        std::max(deformation_difference, (automatic.deformation_gradient[p] - baseline.deformation_gradient[p]).norm());
  }
  EXPECT_LT(position_difference, 1e-12);
  EXPECT_LT(velocity_difference, 1e-10);
  EXPECT_LT(deformation_difference, 1e-10);
  // Different builds, so not bitwise equal: the comparison above is not vacuous.
  EXPECT_GT(position_difference + velocity_difference + deformation_difference, 0.0);
  std::printf("largest difference between builds: position %.2e m, velocity %.2e m/s, F %.2e\n", position_difference,
              velocity_difference, deformation_difference);
}

}  // namespace
}  // namespace contactlab::mpm
