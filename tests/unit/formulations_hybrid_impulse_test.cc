// hybrid_impulse: resting contact on a static plane, and momentum exchange with a free
// rigid body.
#include <algorithm>
#include <cstdio>
#include <limits>

#include <gtest/gtest.h>

#include "formulations/hybrid_impulse/hybrid_impulse.h"
#include "mpm/sampling.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;

using test_worlds::AddCube;
using test_worlds::CubeHitsBox;
using test_worlds::LowestParticle;
using test_worlds::TotalMomentum;

TEST(HybridImpulse, ElasticBlockRestsOnAStaticPlane) {
  // A 0.2 m block (ρ = 500 kg/m³, E = 1e5 Pa) dropped from rest onto the plane z = 0.
  World world;
  world.grid_spacing = 0.05;
  const double side = 0.2, density = 500.0, youngs_modulus = 1e5, gravity = 9.81;
  AddCube(world, Vector3(0, 0, 0), side, density, youngs_modulus, Vector3::Zero());
  world.bodies.push_back(
      rigid::MakeStaticBody("ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}}, rigid::Pose{}));
  hybrid_impulse::HybridImpulseFormulation formulation({});
  const double start_center = mpm::CenterOfMass(world.particles).z();
  const double start_lowest = LowestParticle(world);

  const double dt = 0.01;
  std::vector<double> center_heights;
  for (int step = 0; step < 100; ++step) {
    formulation.Step(world, dt);
    center_heights.push_back(mpm::CenterOfMass(world.particles).z());
  }
  // Static self-weight compression of a free column lowers the centre of mass by
  // ρ g H² / (3E); a load applied at once can overshoot by a factor two. The bottom face
  // itself should not move at all.
  const double elastic_drop = density * gravity * side * side / (3.0 * youngs_modulus);
  const double bound = 2.0 * elastic_drop;
  const double final_center = center_heights.back();
  std::printf("centre drop %.3e m (bound %.3e m), lowest particle %.3e -> %.3e m\n", start_center - final_center, bound,
              start_lowest, LowestParticle(world));
  EXPECT_LT(start_center - final_center, bound);
  EXPECT_GT(LowestParticle(world), start_lowest - bound);
  // Not sinking: over the last half second the centre moves less than the static drop.
  EXPECT_LT(std::abs(center_heights[99] - center_heights[49]), elastic_drop);
}

void ExpectMomentumExchange(const hybrid_impulse::HybridImpulseOptions& options, bool exact) {
  World world = CubeHitsBox();
  const std::string feedback = ChoiceName(options.rigid_feedback, hybrid_impulse::RigidFeedbackNames()) + "/" +
                               ChoiceName(options.rigid_node_mass, hybrid_impulse::RigidNodeMassNames());
  hybrid_impulse::HybridImpulseFormulation formulation(options);
  const auto [linear0, angular0] = TotalMomentum(world);
  const double scale = linear0.norm();
  for (int step = 0; step < 15; ++step) {
    formulation.Step(world, 0.01);
    const auto [linear, angular] = TotalMomentum(world);
    if (exact) {
      ASSERT_LT((linear - linear0).norm(), 1e-12 * scale) << "step " << step;
      ASSERT_LT((angular - angular0).norm(), 1e-12 * scale) << "step " << step;
    }
  }
  const auto [linear, angular] = TotalMomentum(world);
  std::printf("%s: rigid momentum %.4f kg m/s, total linear drift %.3e, angular drift %.3e\n", feedback.c_str(),
              world.bodies[0].LinearMomentum().x(), (linear - linear0).norm(), (angular - angular0).norm());
  // The collision happened: the box took a substantial share of the momentum.
  EXPECT_GT(world.bodies[0].LinearMomentum().x(), 0.3 * scale);
}

TEST(HybridImpulse, NodeImpulseFeedbackConservesMomentumToRoundOff) {
  ExpectMomentumExchange(hybrid_impulse::HybridImpulseOptions{}, true);
}

TEST(HybridImpulse, EffectiveNodeMassConservesMomentumToRoundOff) {
  hybrid_impulse::HybridImpulseOptions options;
  options.rigid_node_mass = hybrid_impulse::RigidNodeMass::kEffective;
  ExpectMomentumExchange(options, true);
}

TEST(HybridImpulse, PerSampleFeedbackTransfersMomentum) {
  hybrid_impulse::HybridImpulseOptions options;
  options.rigid_feedback = hybrid_impulse::RigidFeedback::kPerSample;
  ExpectMomentumExchange(options, false);
}

TEST(HybridImpulse, ArticulatedPanelConservesMomentumAlongItsJoint) {
  // No gravity: an MPM cube at 1 m/s hits a panel on a prismatic joint along x. The joint
  // takes up y and z; along x the cube and the panel exchange momentum exactly.
  World world;
  world.gravity = Vector3::Zero();
  world.grid_spacing = 0.025;
  AddCube(world, Vector3(-0.16, -0.05, -0.05), 0.1, 1000.0, 1e5, Vector3(1.0, 0.0, 0.0));
  rigid::JointSpec slider;
  slider.type = rigid::JointType::kPrismatic;
  slider.axis = rigid::Vector3::UnitX();
  slider.frame_on_parent.position = rigid::Vector3(0.01, 0.0, 0.0);
  const int panel = AddArticulatedBody(
      world, "panel", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(0.01, 0.1, 0.1)), rigid::Pose{}, 0.4}}, 250.0,
      slider);
  hybrid_impulse::HybridImpulseFormulation formulation({});
  const auto momentum_x = [&]() {
    return mpm::LinearMomentum(world.particles).x() +
           world.bodies[panel].mass * world.bodies[panel].linear_velocity.x();
  };
  const double initial = momentum_x();
  for (int step = 0; step < 15; ++step) {
    formulation.Step(world, 0.01);
    ASSERT_NEAR(momentum_x(), initial, 1e-12 * std::abs(initial)) << "step " << step;
  }
  // The panel was pushed, and only along its joint.
  EXPECT_GT(world.bodies[panel].linear_velocity.x(), 0.1);
  EXPECT_EQ(world.bodies[panel].linear_velocity.y(), 0.0);
  EXPECT_EQ(world.bodies[panel].linear_velocity.z(), 0.0);
}

TEST(HybridImpulse, ThinKinematicPlatePushesTheMaterial) {
  // A kinematic plate 0.02 m thick (less than half a cell) moves at 0.5 m/s into a 0.2 m
  // block at rest, without gravity. No grid node lies inside the plate with the pushing
  // face as its nearest one, so the plate must act through its samples (spec §3.6
  // "Kinematic rigid"); as a node boundary condition inside the geometry it slid through.
  World world;
  world.grid_spacing = 0.05;
  AddCube(world, Vector3(0.0, -0.1, -0.1), 0.2, 500.0, 1e5, Vector3::Zero());
  const double speed = 0.5;
  world.bodies.push_back(rigid::MakeKinematicBody(
      "plate", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(0.01, 0.15, 0.15)), rigid::Pose{}, 0.5}},
      [speed](double t) {
        rigid::KinematicState state;
        state.pose.position = Vector3(-0.05 + speed * t, 0.0, 0.0);
        state.linear_velocity = Vector3(speed, 0.0, 0.0);
        return state;
      }));
  hybrid_impulse::HybridImpulseFormulation formulation({});
  for (int step = 0; step < 30; ++step) formulation.Step(world, 0.01);
  // After 0.3 s the plate's front face is at x = 0.11, inside the block's starting span.
  const double front = world.bodies[0].pose.position.x() + 0.01;
  double behind = -std::numeric_limits<double>::infinity();
  for (const Vector3& x : world.particles.position) behind = std::max(behind, front - x.x());
  const double velocity = mpm::LinearMomentum(world.particles).x() / mpm::TotalMass(world.particles);
  std::printf("block velocity %.3f m/s (plate %.1f), deepest particle behind the front face %.4f m\n", velocity, speed,
              behind);
  // Pushed: no particle lies behind the front face (beyond the grid's interaction distance,
  // about a cell), and the block moves at about the plate's speed (it rings elastically).
  EXPECT_LT(behind, 0.0) << "particles were left behind the plate";
  EXPECT_GT(velocity, 0.5 * speed);
}

TEST(HybridImpulse, ThreadCountDoesNotChangeTheResult) {
  // Fixed-chunk reductions and a serial exchange: 1 and 2 threads agree bit for bit.
  test_worlds::ExpectThreadCountDoesNotChangeTheResult([] {
    return std::make_unique<hybrid_impulse::HybridImpulseFormulation>(hybrid_impulse::HybridImpulseOptions{});
  });
}

}  // namespace
}  // namespace contactlab
