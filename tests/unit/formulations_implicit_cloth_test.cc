// The cloth among the MPM particles (mpm/cloth_particles.h) in the shared transfers and in the
// implicit step (dynamics/implicit_cloth.h): the implicit energy is the one the particles hold
// after the shared grid-to-particle transfer moved them (pins included), its gradient and
// exact Hessian are its derivatives, the projected Hessian is SPD, and the explicit transfer's
// cloth forces conserve linear and angular momentum.
// Eigen eigensolvers first, with the shared warning workaround.
#include "formulations/linear_algebra/eigenvalues.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/linear_algebra/sparse_cholesky.h"
#include "mpm/cloth_mesh.h"
#include "mpm/cloth_particles.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"
#include "mpm/transfers.h"

namespace contactlab::dynamics {
namespace {

struct ClothScene {
  mpm::Particles particles;
  std::vector<mpm::Material> materials;
  mpm::SparseGrid grid{0.05};
  Vector3 gravity = Vector3(0.0, 0.0, -9.81);
  double dt = 1e-2;
  ImplicitMpm problem;

  // A 0.3 m × 0.2 m cloth of 7 × 5 vertices in a tilted plane, its vertices displaced at
  // random (stretch and shear of up to 15%), its layer compressed (r₃₃ ≈ 0.9) and sheared, its
  // particles moving at random; with `pin`, vertex 0 held by a pin moving at 0.2 m/s.
  explicit ClothScene(bool pin, std::uint64_t seed = 3) {
    materials = {mpm::MakeClothMaterial("cloth", 1000.0, 2e5, 0.3, 1e5, 5e4, 0.5)};
    const mpm::ClothMesh mesh =
        mpm::RectangleCloth(0.3, 0.2, 7, 5, Vector3(0.013, 0.021, 0.034), Vector3(1.0, 0.2, 0.1).normalized(),
                            Vector3(-0.2, 1.0, 0.5).normalized());
    mpm::AddCloth(mesh, 1e-3, 0, materials, Vector3::Zero(), particles);
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (std::size_t p = 0; p < particles.size(); ++p) {
      if (particles.cloth_role[p] != mpm::ClothRole::kVertex) continue;
      particles.position[p] += 0.005 * Vector3(uniform(generator), uniform(generator), uniform(generator));
      particles.velocity[p] = 0.1 * Vector3(uniform(generator), uniform(generator), uniform(generator));
    }
    for (const int face : particles.cloth_faces.face_particle) {
      Matrix3& deformation = particles.deformation_gradient[face];
      deformation.col(2) = 0.9 * deformation.col(2) + 0.05 * deformation.col(0) - 0.03 * deformation.col(1);
    }
    if (pin) {
      mpm::ClothPin held;
      held.particles = {0};
      held.segment_end = {1.0};
      held.segment_velocity = {Vector3(0.2, -0.1, 0.05)};
      particles.cloth_pins.push_back(held);
      mpm::ApplyClothPins(0.0, particles);
    }
    mpm::FinishClothParticles(0.0, particles);  // faces from the displaced vertices
  }

  void Prepare() {
    mpm::ParticleToGrid(particles, materials, /*stress_dt=*/0.0, grid);
    problem.Setup(grid, particles, materials, gravity, dt);
  }

  Eigen::VectorXd RandomVelocity(std::uint64_t seed, double scale) const {
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<double> uniform(-scale, scale);
    return problem.initial_velocity() +
           Eigen::VectorXd::NullaryExpr(problem.num_dofs(), [&] { return uniform(generator); });
  }
};

double MaxAbs(const Eigen::MatrixXd& matrix) {
  return matrix.cwiseAbs().maxCoeff();
}

// E(v) minus inertia and gravity is Σ V Ψ(F) of the faces the shared G2P leaves when the grid
// moves at v (before the return mapping), with the pinned vertex moved by its pin.
TEST(ImplicitCloth, EnergyIsTheClothsAfterGridToParticle) {
  for (const bool pin : {false, true}) {
    SCOPED_TRACE(pin ? "pinned" : "free");
    ClothScene scene(pin);
    scene.Prepare();
    const ImplicitMpm& problem = scene.problem;
    ASSERT_FALSE(problem.is_quadratic());
    const Eigen::VectorXd velocity = scene.RandomVelocity(5, 0.3);
    for (int node = 0; node < scene.grid.num_nodes(); ++node) scene.grid.velocity[node].setZero();
    for (int k = 0; k < problem.num_active_nodes(); ++k) {
      scene.grid.velocity[problem.active_nodes()[k]] = velocity.segment<3>(3 * k);
    }
    mpm::Particles moved = scene.particles;
    mpm::GridToParticle(scene.grid, scene.dt, moved);
    if (pin) {
      EXPECT_LT((moved.position[0] - scene.particles.position[0] - scene.dt * Vector3(0.2, -0.1, 0.05)).norm(), 1e-15);
    }
    double expected = 0.0;
    const mpm::ClothFaces& faces = moved.cloth_faces;
    for (std::size_t face = 0; face < faces.size(); ++face) {
      expected += faces.volume[face] * scene.materials[0].constitutive_model->EnergyDensity(
                                           moved.deformation_gradient[faces.face_particle[face]], Matrix3::Identity());
    }
    ASSERT_GT(expected, 0.0);
    for (int k = 0; k < problem.num_active_nodes(); ++k) {
      const Vector3 node_velocity = velocity.segment<3>(3 * k);
      expected += problem.node_masses()[k] *
                  (0.5 * (node_velocity - problem.initial_velocity().segment<3>(3 * k)).squaredNorm() -
                   scene.dt * node_velocity.dot(scene.gravity));
    }
    EXPECT_NEAR(problem.Energy(velocity), expected, 1e-12 * std::abs(expected));
  }
}

// The gradient against central differences of E, the exact Hessian against central
// differences of the gradient, with the pin in place. Steps 1e-6 m/s on velocities of 0.3 m/s:
// truncation ~1e-12 and round-off ~1e-10 of the entries, against 1e-6 of the largest.
TEST(ImplicitCloth, GradientAndExactHessianAreTheEnergysDerivatives) {
  ClothScene scene(/*pin=*/true);
  scene.Prepare();
  const ImplicitMpm& problem = scene.problem;
  const Eigen::VectorXd velocity = scene.RandomVelocity(7, 0.3);
  const Eigen::VectorXd gradient = problem.Gradient(velocity);
  constexpr double kStep = 1e-6;
  Eigen::VectorXd expected_gradient(problem.num_dofs());
  Eigen::MatrixXd expected_hessian(problem.num_dofs(), problem.num_dofs());
  for (int k = 0; k < problem.num_dofs(); ++k) {
    Eigen::VectorXd plus = velocity, minus = velocity;
    plus[k] += kStep;
    minus[k] -= kStep;
    expected_gradient[k] = (problem.Energy(plus) - problem.Energy(minus)) / (2 * kStep);
    expected_hessian.col(k) = (problem.Gradient(plus) - problem.Gradient(minus)) / (2 * kStep);
  }
  EXPECT_LT((gradient - expected_gradient).cwiseAbs().maxCoeff(), 1e-6 * expected_gradient.cwiseAbs().maxCoeff());
  const linear_algebra::SparseMatrix sparse = problem.Hessian(velocity, StressTangent::kExact);
  // Compressed, with sorted row indices in every column (what CHOLMOD is handed).
  ASSERT_TRUE(sparse.isCompressed());
  for (int column = 0; column < sparse.cols(); ++column) {
    for (int k = sparse.outerIndexPtr()[column] + 1; k < sparse.outerIndexPtr()[column + 1]; ++k) {
      ASSERT_LT(sparse.innerIndexPtr()[k - 1], sparse.innerIndexPtr()[k]) << "column " << column;
    }
  }
  const Eigen::MatrixXd exact = Eigen::MatrixXd(sparse);
  EXPECT_LT(MaxAbs(exact - expected_hessian), 1e-6 * MaxAbs(expected_hessian));
  // The stiffness is not just the masses: the cloth's part is of the same order here.
  const Eigen::MatrixXd masses =
      Eigen::VectorXd(problem.node_masses().replicate(1, 3).transpose().reshaped()).asDiagonal();
  EXPECT_GT(MaxAbs(exact - masses), 0.1 * MaxAbs(masses));
}

TEST(ImplicitCloth, ProjectedHessianIsPositiveDefinite) {
  ClothScene scene(/*pin=*/false);
  scene.dt = 0.05;
  scene.Prepare();
  const Eigen::VectorXd velocity = scene.RandomVelocity(9, 1.0);
  const Eigen::MatrixXd hessian = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_LT(MaxAbs(hessian - hessian.transpose()), 1e-12 * MaxAbs(hessian));
  const double smallest =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(hessian, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
  EXPECT_GE(smallest, scene.problem.node_masses().minCoeff() * (1.0 - 1e-9));
  // What the implicit formulations do with it: CHOLMOD factors it.
  linear_algebra::SparseCholesky cholesky;
  EXPECT_TRUE(cholesky.Factor(scene.problem.Hessian(velocity)));
}

// The free motion's Newton with FreeMotionTangent::kAuto (exact tangent where the whole Hessian
// is positive definite) and with kProjected reaches the same minimizer under the same stopping
// rule; on a cloth compressed in its plane, where projection clamps the buckling modes, the
// exact directions need fewer iterations (quadratic against linear convergence).
TEST(ImplicitClothFreeMotion, ExactTangentReachesTheSameMinimizerInFewerIterations) {
  ClothScene scene(/*pin=*/true);
  // Compress the sheet by 20% in its plane about its centre, moving every particle (faces too,
  // then rebuilt from the vertices), so that its triangles sit well inside their buckling range.
  Vector3 centre = Vector3::Zero();
  int vertices = 0;
  for (std::size_t p = 0; p < scene.particles.size(); ++p) {
    if (scene.particles.cloth_role[p] != mpm::ClothRole::kVertex) continue;
    centre += scene.particles.position[p];
    ++vertices;
  }
  centre /= vertices;
  for (std::size_t p = 0; p < scene.particles.size(); ++p) {
    if (scene.particles.cloth_role[p] == mpm::ClothRole::kVertex) {
      scene.particles.position[p] = centre + 0.8 * (scene.particles.position[p] - centre);
    }
  }
  mpm::FinishClothParticles(0.0, scene.particles);
  scene.Prepare();

  struct Result {
    Eigen::VectorXd velocity;
    solvers::SolverSummary summary;
    FreeMotionDirections directions;
  };
  const auto solve = [&](FreeMotionTangent tangent) {
    ImplicitMpmOptions options;
    options.tangent = tangent;
    options.relative_tolerance = 1e-10;
    linear_algebra::SparseCholesky cholesky;
    linear_algebra::SparseMatrix hessian;
    Result result;
    result.summary = scene.problem.SolveFreeMotion(options, cholesky, result.velocity, hessian, &result.directions);
    // The A handed to the contact problem is the projected Hessian at v* under either tangent.
    EXPECT_EQ(MaxAbs(Eigen::MatrixXd(hessian) - Eigen::MatrixXd(scene.problem.Hessian(result.velocity))), 0.0);
    return result;
  };
  const Result projected = solve(FreeMotionTangent::kProjected);
  const Result automatic = solve(FreeMotionTangent::kAuto);
  ASSERT_TRUE(projected.summary.converged()) << projected.summary.message;
  ASSERT_TRUE(automatic.summary.converged()) << automatic.summary.message;
  EXPECT_EQ(projected.directions.exact, 0);
  EXPECT_EQ(projected.directions.projected, projected.summary.iterations);
  EXPECT_EQ(automatic.directions.exact + automatic.directions.projected, automatic.summary.iterations);
  EXPECT_GE(automatic.directions.exact, 1);
  // The projected tangent really is clamped here: its Hessian at the start differs from the exact one.
  const Eigen::VectorXd start = scene.problem.start_velocity();
  EXPECT_GT(MaxAbs(Eigen::MatrixXd(scene.problem.Hessian(start, StressTangent::kExact)) -
                   Eigen::MatrixXd(scene.problem.Hessian(start, StressTangent::kProjected))),
            1e-3 * scene.problem.node_masses().maxCoeff());
  // Measured: 22 projected iterations, 5 under auto (4 of them exact).
  EXPECT_LT(2 * automatic.summary.iterations, projected.summary.iterations);
  // One minimizer: both velocities within the tolerance's reach of each other (M-weighted,
  // against the velocities' own size).
  const Eigen::VectorXd masses = scene.problem.node_masses().replicate(1, 3).transpose().reshaped();
  const double difference = std::sqrt((automatic.velocity - projected.velocity).cwiseAbs2().dot(masses));
  const double size = std::sqrt(projected.velocity.cwiseAbs2().dot(masses));
  EXPECT_LT(difference, 1e-7 * size);
}

// The explicit transfer's cloth forces (vertex impulses and the faces' MLS stress) are internal:
// the grid's linear and angular momentum (about the origin, APIC's affine part included) equal
// the particles'. Without gravity and pins.
TEST(ClothTransfers, ExplicitForcesConserveLinearAndAngularMomentum) {
  ClothScene scene(/*pin=*/false);
  const double spacing = scene.grid.spacing();
  mpm::ParticleToGrid(scene.particles, scene.materials, /*stress_dt=*/1e-3, scene.grid);
  Vector3 linear = Vector3::Zero(), angular = Vector3::Zero();
  for (int node = 0; node < scene.grid.num_nodes(); ++node) {
    linear += scene.grid.momentum[node];
    angular += scene.grid.NodePosition(node).cross(scene.grid.momentum[node]);
  }
  // The forces are of order V k ~ 1e-5 m³ · 1e5 Pa = 1 N, impulses of 1e-3 N s.
  mpm::ParticleToGrid(scene.particles, scene.materials, /*stress_dt=*/0.0, scene.grid);
  Vector3 linear_without = Vector3::Zero();
  for (int node = 0; node < scene.grid.num_nodes(); ++node) linear_without += scene.grid.momentum[node];
  EXPECT_LT((linear - mpm::LinearMomentum(scene.particles)).norm(), 1e-15);
  EXPECT_LT((angular - mpm::AngularMomentum(scene.particles, spacing)).norm(), 1e-15);
  EXPECT_LT((linear_without - linear).norm(), 1e-15);
  // The stress does act: node momenta change by more than the round-off.
  mpm::SparseGrid stressed(spacing);
  mpm::ParticleToGrid(scene.particles, scene.materials, /*stress_dt=*/1e-3, stressed);
  double change = 0.0;
  for (int node = 0; node < stressed.num_nodes(); ++node) {
    change = std::max(change, (stressed.momentum[node] - scene.grid.momentum[node]).norm());
  }
  EXPECT_GT(change, 1e-6);
}

}  // namespace
}  // namespace contactlab::dynamics
