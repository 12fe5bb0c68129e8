// explicit_projection (the baseline): momentum exchange with a free rigid body, a kinematic
// body pushing material, and the thread count.
#include <algorithm>
#include <cstdio>
#include <limits>

#include <gtest/gtest.h>

#include "formulations/explicit_projection/explicit_projection.h"
#include "mpm/sampling.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;

using test_worlds::AddCube;
using test_worlds::CubeHitsBox;
using test_worlds::TotalMomentum;

TEST(ExplicitProjection, ExchangeWithAFreeBoxConservesMomentumToRoundOff) {
  // No gravity: a 1 kg MPM cube at 1 m/s, off the box's centre line, hits a free 1 kg box.
  // Every impulse a node receives from the projection is given back to the box with its
  // moment, so linear and angular momentum stay put to round-off.
  World world = CubeHitsBox();
  explicit_projection::ExplicitProjectionFormulation formulation({});
  const auto [linear0, angular0] = TotalMomentum(world);
  const double scale = linear0.norm();
  for (int step = 0; step < 15; ++step) {
    formulation.Step(world, 0.01);
    const auto [linear, angular] = TotalMomentum(world);
    ASSERT_LT((linear - linear0).norm(), 1e-12 * scale) << "step " << step;
    ASSERT_LT((angular - angular0).norm(), 1e-12 * scale) << "step " << step;
  }
  std::printf("box momentum %.4f kg m/s of %.4f, spin %.3f rad/s\n", world.bodies[0].LinearMomentum().x(), scale,
              world.bodies[0].angular_velocity.norm());
  // The collision happened: the box took a substantial share of the momentum, and the
  // off-centre hit turned it.
  EXPECT_GT(world.bodies[0].LinearMomentum().x(), 0.3 * scale);
  EXPECT_GT(world.bodies[0].angular_velocity.norm(), 0.0);
}

TEST(ExplicitProjection, KinematicPlatePushesTheMaterialAhead) {
  // A kinematic plate 0.1 m thick (two cells, so nodes lie inside it) moves at 0.5 m/s into
  // a 0.2 m block at rest, without gravity: the nodes inside it take its velocity, and the
  // block is pushed ahead of its front face.
  World world;
  world.gravity = Vector3::Zero();
  world.grid_spacing = 0.05;
  AddCube(world, Vector3(0.0, -0.1, -0.1), 0.2, 500.0, 1e5, Vector3::Zero());
  const double speed = 0.5, half_thickness = 0.05;
  world.bodies.push_back(rigid::MakeKinematicBody(
      "plate", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(half_thickness, 0.15, 0.15)), rigid::Pose{}, 0.5}},
      [speed, half_thickness](double t) {
        rigid::KinematicState state;
        state.pose.position = Vector3(-half_thickness + speed * t, 0.0, 0.0);
        state.linear_velocity = Vector3(speed, 0.0, 0.0);
        return state;
      }));
  explicit_projection::ExplicitProjectionFormulation formulation({});
  for (int step = 0; step < 30; ++step) formulation.Step(world, 0.01);
  // After 0.3 s the plate's front face is at x = 0.15, inside the block's starting span.
  const double front = world.bodies[0].pose.position.x() + half_thickness;
  double behind = -std::numeric_limits<double>::infinity();
  for (const Vector3& x : world.particles.position) behind = std::max(behind, front - x.x());
  const double velocity = mpm::LinearMomentum(world.particles).x() / mpm::TotalMass(world.particles);
  std::printf("block velocity %.3f m/s (plate %.1f), deepest particle behind the front face %.4f m\n", velocity, speed,
              behind);
  // Nodes hold the plate's velocity only where they lie inside it, so a particle can sit up
  // to half a cell inside the face (a grid wall's drift, grid_boundary.h), not deeper.
  EXPECT_LT(behind, 0.5 * world.grid_spacing) << "particles were left behind the plate";
  EXPECT_GT(velocity, 0.5 * speed);
}

TEST(ExplicitProjection, ThreadCountDoesNotChangeTheResult) {
  // Fixed-chunk reductions over nodes: 1 and 2 threads agree bit for bit.
  test_worlds::ExpectThreadCountDoesNotChangeTheResult([] {
    return std::make_unique<explicit_projection::ExplicitProjectionFormulation>(
        explicit_projection::ExplicitProjectionOptions{});
  });
}

}  // namespace
}  // namespace contactlab
