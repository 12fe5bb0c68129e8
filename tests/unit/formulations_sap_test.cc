// The `sap` formulation end to end: free fall, resting contact and its force, the sign of
// the exchanged impulses, momentum exchange with a free rigid body, the Schur-complement
// path against the full sparse path, and thread-count independence.
#include <omp.h>

#include <cstdio>
#include <utility>

#include <gtest/gtest.h>

#include "formulations/sap/sap_formulation.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;
using test_worlds::AddCube;
using test_worlds::CubeHitsBox;
using test_worlds::LowestParticle;
using test_worlds::TotalMomentum;

sap::SapOptions TightOptions() {
  sap::SapOptions options;
  options.solver.relative_tolerance = 1e-10;
  return options;
}

World BlockOnGround(double mu) {
  World world;
  world.grid_spacing = 0.05;
  AddCube(world, Vector3(0, 0, 0), 0.2, 500.0, 1e5, Vector3::Zero());
  world.bodies.push_back(
      rigid::MakeStaticBody("ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, mu}}, rigid::Pose{}));
  return world;
}

// CubeHitsBox under gravity above a static ground: the elastic cube strikes the free box
// and both come to rest on the ground.
World CubeStrikesBoxOnGround() {
  World world = CubeHitsBox();
  world.gravity = Vector3(0.0, 0.0, -9.81);
  world.bodies.push_back(rigid::MakeStaticBody("ground",
                                               {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.3}},
                                               rigid::Pose{Vector3(0.0, 0.0, -0.055), rigid::Quaternion::Identity()}));
  return world;
}

// The largest particle velocity difference between two runs of the same world, and the
// largest particle speed of the first [m/s].
std::pair<double, double> LargestParticleVelocityDifference(const World& first, const World& second) {
  double largest = 0.0;
  double speed = 0.0;
  for (std::size_t p = 0; p < first.particles.size(); ++p) {
    largest = std::max(largest, (first.particles.velocity[p] - second.particles.velocity[p]).norm());
    speed = std::max(speed, first.particles.velocity[p].norm());
  }
  return {largest, speed};
}

TEST(Sap, FreeFallWithoutContactGainsExactlyGravityTimesDt) {
  // No contact and no stress: the implicit step is exact, v⁺ = vⁿ + Δt g for every particle.
  World world;
  world.grid_spacing = 0.05;
  AddCube(world, Vector3(0, 0, 1), 0.2, 500.0, 1e5, Vector3(0.3, 0.0, 0.0));
  sap::SapFormulation formulation(TightOptions());
  const Vector3 momentum = mpm::LinearMomentum(world.particles);
  const double mass = mpm::TotalMass(world.particles);
  const StepReport report = formulation.Step(world, 0.01);
  EXPECT_EQ(report.contacts, 0);
  const Vector3 expected = momentum + 0.01 * mass * world.gravity;
  EXPECT_LT((mpm::LinearMomentum(world.particles) - expected).norm(), 1e-12 * expected.norm());
  for (const Vector3& velocity : world.particles.velocity) {
    EXPECT_NEAR(velocity.z(), -0.0981, 1e-9);
    EXPECT_NEAR(velocity.x(), 0.3, 1e-9);
  }
}

TEST(Sap, ElasticBlockRestsAndThePlaneCarriesItsWeight) {
  // A 0.2 m block (ρ = 500 kg/m³, E = 1e5 Pa) placed on z = 0: it must neither sink nor
  // bounce, and at rest the contact force on the plane is the block's weight, pushing down.
  World world = BlockOnGround(0.5);
  sap::SapFormulation formulation(sap::SapOptions{});
  const double side = 0.2, density = 500.0, youngs_modulus = 1e5, gravity = 9.81;
  const double weight = mpm::TotalMass(world.particles) * gravity;
  const double start_lowest = LowestParticle(world);
  const double dt = 0.01;
  Vector3 mean_force = Vector3::Zero();
  std::vector<double> center_heights;
  int converged_steps = 0;
  for (int step = 0; step < 100; ++step) {
    const StepReport report = formulation.Step(world, dt);
    if (report.converged) ++converged_steps;
    if (step >= 50) mean_force += report.contact_wrench[0].force / 50.0;
    center_heights.push_back(mpm::CenterOfMass(world.particles).z());
  }
  // The block starts a quarter cell above the plane (particles sit at lattice centres) and
  // settles onto it: particles are points, so the lowest ones end at the plane up to the
  // near-rigid penetration of about one step of free fall, g Δt². After settling the centre
  // moves by less than the static self-weight compression ρ g H²/(3E).
  const double elastic_drop = density * gravity * side * side / (3.0 * youngs_modulus);
  std::printf("mean plane force (%.4f, %.4f, %.4f) N, weight %.4f N, lowest %.3e -> %.3e m\n", mean_force.x(),
              mean_force.y(), mean_force.z(), weight, start_lowest, LowestParticle(world));
  EXPECT_EQ(converged_steps, 100);
  EXPECT_NEAR(mean_force.z(), -weight, 0.01 * weight);
  EXPECT_LT(std::hypot(mean_force.x(), mean_force.y()), 1e-3 * weight);
  EXPECT_GT(LowestParticle(world), -gravity * dt * dt);
  EXPECT_LT(std::abs(center_heights[99] - center_heights[49]), elastic_drop);
}

TEST(Sap, MomentumIsExchangedExactlyWithAFreeBody) {
  // No gravity: the MPM cube hits a free box. The contact impulse leaves the MPM grid as Jᵀγ
  // and enters the box as −Jᵀγ, so total linear momentum changes only by the optimality
  // residual of the solve (ε_r = 1e-10 here). Angular momentum about the origin is exact at
  // the step's start positions; measured after the position update it differs by the
  // moment of the impulse over the step's relative displacement, |ΔL| ≤ Δt |v_rel| |Δp|
  // per step, with |v_rel| at most twice the initial speed v₀ = 1 m/s.
  World world = CubeHitsBox();
  sap::SapFormulation formulation(TightOptions());
  const auto [linear0, angular0] = TotalMomentum(world);
  const double scale = linear0.norm();
  const double dt = 0.01, initial_speed = 1.0;
  double angular_bound = 0.0;
  int contact_steps = 0;
  for (int step = 0; step < 15; ++step) {
    const Vector3 box_momentum = world.bodies[0].LinearMomentum();
    const StepReport report = formulation.Step(world, dt);
    if (report.contacts > 0) ++contact_steps;
    angular_bound += dt * 2.0 * initial_speed * (world.bodies[0].LinearMomentum() - box_momentum).norm();
    const auto [linear, angular] = TotalMomentum(world);
    ASSERT_LT((linear - linear0).norm(), 1e-8 * scale) << "step " << step;
    ASSERT_LT((angular - angular0).norm(), angular_bound + 1e-8 * scale) << "step " << step;
  }
  const auto [linear, angular] = TotalMomentum(world);
  std::printf("box momentum %.4f kg m/s after %d contact steps, angular drift %.3e (bound %.3e)\n",
              world.bodies[0].LinearMomentum().x(), contact_steps, (angular - angular0).norm(), angular_bound);
  EXPECT_GT(contact_steps, 2);
  EXPECT_GT(world.bodies[0].LinearMomentum().x(), 0.3 * scale);
}

TEST(Sap, ImpulsesOnParticlesAndBodyAreOpposite) {
  // One step of the block on the ground: the wrench the plane receives is minus the change
  // of the block's momentum beyond gravity, and it pushes the plane down.
  World world = BlockOnGround(0.5);
  sap::SapFormulation formulation(TightOptions());
  for (int step = 0; step < 5; ++step) formulation.Step(world, 0.01);
  const Vector3 before = mpm::LinearMomentum(world.particles);
  const double mass = mpm::TotalMass(world.particles);
  const StepReport report = formulation.Step(world, 0.01);
  ASSERT_GT(report.contacts, 0);
  const Vector3 contact_impulse_on_block = mpm::LinearMomentum(world.particles) - before - 0.01 * mass * world.gravity;
  EXPECT_GT(contact_impulse_on_block.z(), 0.0);
  EXPECT_LT(report.contact_wrench[0].force.z(), 0.0);
  EXPECT_LT((contact_impulse_on_block + 0.01 * report.contact_wrench[0].force).norm(),
            1e-8 * contact_impulse_on_block.norm());
}

TEST(Sap, SchurAndFullPathsGiveTheSameStep) {
  // The Schur complement only eliminates unknowns no contact touches: both paths solve the
  // same convex problem (same contact regularization) and must agree to the solver tolerance.
  std::vector<World> results;
  for (const char* path : {"schur", "full"}) {
    World world = CubeStrikesBoxOnGround();
    sap::SapOptions options = TightOptions();
    options.linear_solver = ParseChoice("sap.linear_solver", path, sap::LinearSolverNames());
    options.delassus_estimate = sap::DelassusEstimate::kBlockDiagonal;  // available on both paths
    sap::SapFormulation formulation(options);
    for (int step = 0; step < 8; ++step) {
      formulation.Step(world, 0.01);
      EXPECT_EQ(formulation.last_step().used_schur,
                std::string(path) == "schur" && formulation.last_step().problem_unknowns > 0);
    }
    results.push_back(std::move(world));
  }
  const auto [largest, speed] = LargestParticleVelocityDifference(results[0], results[1]);
  std::printf("largest particle velocity difference %.3e m/s (speed %.3f m/s)\n", largest, speed);
  EXPECT_LT(largest, 1e-7 * speed);
  EXPECT_LT((results[0].bodies[0].linear_velocity - results[1].bodies[0].linear_velocity).norm(), 1e-7 * speed);
  EXPECT_LT((results[0].bodies[0].angular_velocity - results[1].bodies[0].angular_velocity).norm(),
            1e-6 * speed / 0.05);
}

TEST(Sap, WarmStartAtTheCurrentVelocityReachesTheSameStep) {
  // sap.warm_start only moves where Newton starts: v* or vⁿ lead to the same minimizer of the
  // same convex problem, so the steps agree to the solver tolerance, on both paths, while a
  // free box is struck by an elastic cube and both come to rest on the ground.
  for (const char* path : {"schur", "full"}) {
    std::vector<World> results;
    std::vector<int> iterations;
    for (const sap::WarmStart start : {sap::WarmStart::kFreeMotion, sap::WarmStart::kCurrentVelocity}) {
      World world = CubeStrikesBoxOnGround();
      sap::SapOptions options = TightOptions();
      options.linear_solver = ParseChoice("sap.linear_solver", path, sap::LinearSolverNames());
      options.delassus_estimate = sap::DelassusEstimate::kBlockDiagonal;
      options.warm_start = start;
      sap::SapFormulation formulation(options);
      int total = 0;
      for (int step = 0; step < 8; ++step) total += formulation.Step(world, 0.01).outer_iterations;
      iterations.push_back(total);
      results.push_back(std::move(world));
    }
    const auto [largest, speed] = LargestParticleVelocityDifference(results[0], results[1]);
    std::printf(
        "%s path: Newton iterations over 8 steps %d from v*, %d from v^n; largest particle velocity "
        "difference %.3e m/s (speed %.3f m/s)\n",
        path, iterations[0], iterations[1], largest, speed);
    EXPECT_LT(largest, 1e-7 * speed) << path;
    EXPECT_LT((results[0].bodies[0].linear_velocity - results[1].bodies[0].linear_velocity).norm(), 1e-7 * speed)
        << path;
  }
}

TEST(Sap, ThreadCountChangesTheResultOnlyByRoundOff) {
  // Assembly and transfers are bitwise thread-independent; Eigen's dense products (Schur
  // complement, reduced Newton matrix) pick blocking sizes by thread count, so 1 and 2
  // threads agree to round-off rather than bit for bit.
  std::vector<World> results;
  for (const int threads : {1, 2}) {
    omp_set_num_threads(threads);
    World world = BlockOnGround(0.3);
    world.bodies.push_back(rigid::MakeFreeBody(
        "box", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(0.05, 0.05, 0.05)), rigid::Pose{}, 0.4}}, 300.0,
        rigid::Pose{Vector3(0.1, 0.1, 0.245), rigid::Quaternion::Identity()}));
    sap::SapFormulation formulation(sap::SapOptions{});
    for (int step = 0; step < 6; ++step) formulation.Step(world, 0.01);
    results.push_back(std::move(world));
  }
  omp_set_num_threads(2);
  double position_difference = 0.0, velocity_difference = 0.0, speed = 0.0;
  for (std::size_t p = 0; p < results[0].particles.size(); ++p) {
    position_difference =
        std::max(position_difference, (results[0].particles.position[p] - results[1].particles.position[p]).norm());
    velocity_difference =
        std::max(velocity_difference, (results[0].particles.velocity[p] - results[1].particles.velocity[p]).norm());
    speed = std::max(speed, results[0].particles.velocity[p].norm());
  }
  std::printf("1 vs 2 threads: position %.3e m, velocity %.3e m/s (speed %.3e m/s)\n", position_difference,
              velocity_difference, speed);
  EXPECT_LT(position_difference, 1e-12);
  EXPECT_LT(velocity_difference, 1e-10 * speed);
  EXPECT_LT((results[0].bodies[1].pose.position - results[1].bodies[1].pose.position).norm(), 1e-12);
}

}  // namespace
}  // namespace contactlab
