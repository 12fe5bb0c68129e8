// cloth_folding (issue 21): the default cloth is spec-sap-qn E9's rectangle (70 × 60 vertices,
// 8,142 triangles) flat on the table, and its grippers (pins) follow the timeline: the corner
// pads fold across x, the −y bar folds across y, then the bar and the pads carry the edges
// back; a vertex in two pins (a pad's corner on the bar's edge) follows the one that holds.
#include <gtest/gtest.h>

#include <cmath>

#include "mpm/cloth_particles.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

TEST(ClothFolding, DefaultClothAndTheGrippersTimeline) {
  World world = BuildScene("cloth_folding", SceneParameters("cloth_folding", "quasi_newton"));
  EXPECT_EQ(world.particles.cloth_faces.size(), 8142u);
  EXPECT_EQ(world.particles.size(), 4200u + 8142u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1000.0 * 0.6 * 0.4 * 0.001, 1e-12);
  ASSERT_EQ(world.particles.cloth_pins.size(), 4u);
  const mpm::ClothPin& pads = world.particles.cloth_pins[0];
  const mpm::ClothPin& bar = world.particles.cloth_pins[1];
  EXPECT_EQ(pads.particles.size(), 8u);
  EXPECT_EQ(bar.particles.size(), 70u);
  // Pause 0.3 s, then lift 0.25 s, carry 1.5 s, lower 0.25 s: the pads hold over [0.3, 2.3).
  EXPECT_NEAR(pads.grasp_time, 0.3, 1e-12);
  EXPECT_NEAR(pads.release_time, 2.3, 1e-12);
  EXPECT_NEAR(bar.grasp_time, 2.6, 1e-12);
  EXPECT_NEAR(bar.release_time, 4.1, 1e-12);
  EXPECT_NEAR(world.particles.cloth_pins[3].release_time, 8.2, 1e-12);

  // Follow the pads' corner (vertex 0, also on the bar's edge) with the pins alone.
  const int corner = pads.particles[0];
  const mpm::Vector3 start = world.particles.position[corner];
  const double dt = 0.002;
  for (int step = 0; step < 2600 / 2; ++step) {
    mpm::ApplyClothPins(step * dt, world.particles);
    mpm::FinishClothParticles(dt, world.particles);
  }
  // At 2.6 s the first fold put it L further along x, 1 cm above where it started.
  const mpm::Vector3 moved = world.particles.position[corner] - start;
  EXPECT_NEAR(moved.x(), 0.6, 1e-9);
  EXPECT_NEAR(moved.y(), 0.0, 1e-9);
  EXPECT_NEAR(moved.z(), 0.01, 1e-9);
  // During the second fold the bar holds it, the pads (released) do not.
  mpm::ApplyClothPins(3.0, world.particles);
  EXPECT_TRUE(bar.holding);
  EXPECT_FALSE(pads.holding);
  EXPECT_EQ(world.particles.cloth_role[corner], mpm::ClothRole::kPinnedVertex);
  EXPECT_NEAR(world.particles.velocity[corner].y(), 0.4, 1e-12);  // W over the 1 s carry
  mpm::ApplyClothPins(4.2, world.particles);
  EXPECT_EQ(world.particles.cloth_role[corner], mpm::ClothRole::kVertex);
}

}  // namespace
}  // namespace contactlab::experiments
