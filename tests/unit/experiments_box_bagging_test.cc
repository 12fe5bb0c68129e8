// box_bagging (issue 21): the default scene is seed 002's box bagging as spec-sap-qn E7 reduces
// it: 2,582 cloth particles, two 0.512 kg boxes above the cloth, four corner pins of 2 × 2
// vertices whose schedule draws the corners to a 0.36 m square, wraps them 8 cm further in and
// releases the +x pair at 3 s; and bad timelines name their keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "mpm/cloth_particles.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

TEST(BoxBagging, DefaultSceneIsSeed002sClothWithTwoBoxesAndFourCornerPins) {
  World world = BuildScene("box_bagging", SceneParameters("box_bagging", "quasi_newton"));
  EXPECT_EQ(world.particles.size(), 2582u);
  EXPECT_EQ(world.particles.cloth_faces.size(), 1682u);
  ASSERT_EQ(world.bodies.size(), 3u);  // the floor and two boxes
  for (int b = 1; b <= 2; ++b) EXPECT_NEAR(world.bodies[b].mass, 0.512, 1e-12);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1500.0 * 0.42 * 0.42 * 0.001, 1e-12);
  ASSERT_EQ(world.particles.cloth_pins.size(), 4u);

  // Follow the pins' schedule: where the corner vertex of each pin is at 0.5 s (after the sag),
  // at 2.5 s (after the wrap), and which pins hold after 3 s.
  const double dt = 0.005;
  for (int step = 0; step < 800; ++step) {
    const double t = step * dt;
    mpm::ApplyClothPins(t, world.particles);
    mpm::FinishClothParticles(dt, world.particles);  // moves the pinned vertices only: nothing else moved
    const double after = t + dt;
    if (std::abs(after - 0.5) < 1e-9 || std::abs(after - 2.5) < 1e-9) {
      const double expected = after < 1.0 ? 0.18 : 0.18 - 0.08 / std::sqrt(2.0);
      for (const mpm::ClothPin& pin : world.particles.cloth_pins) {
        double reach = 0.0;
        for (const int p : pin.particles) {
          reach =
              std::max({reach, std::abs(world.particles.position[p].x()), std::abs(world.particles.position[p].y())});
        }
        EXPECT_NEAR(reach, expected, 1e-9) << "t " << after;
      }
    }
  }
  int held = 0;
  for (const mpm::ClothPin& pin : world.particles.cloth_pins) {
    for (const int p : pin.particles) held += world.particles.cloth_role[p] == mpm::ClothRole::kPinnedVertex;
  }
  EXPECT_EQ(held, 8);  // the two −x pins; the +x pins let go at 3 s
}

TEST(BoxBagging, TimelineOutOfOrderNamesItsKeys) {
  const std::string message =
      InputErrorMessage([] { BuildScene("box_bagging", SceneParameters("box_bagging", "sap", {"release_time=2.0"})); });
  EXPECT_NE(message.find("release_time"), std::string::npos) << message;
}

}  // namespace
}  // namespace contactlab::experiments
