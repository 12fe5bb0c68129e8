// floating_box (issue 19): the default scene (a 0.1 × 0.1 × 0.05 m box of half the liquid's
// density at its analytic draft, the equation-of-state liquid around it in a sticky-walled
// container) and the input checks. The physics is measured by the scene runs: see README.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/scenario.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

World Build(const ParameterSet& parameters) {
  return BuildScene("floating_box", parameters, nullptr);
}

TEST(FloatingBox, DefaultBoxFloatsAtItsAnalyticDraft) {
  const World world = Build(SceneParameters("floating_box", "quasi_newton"));
  ASSERT_EQ(world.bodies.size(), 6u);  // floor, four walls, the box
  for (int b = 0; b < 5; ++b) EXPECT_EQ(world.bodies[b].grid_boundary, rigid::GridBoundary::kSticky);
  const rigid::RigidBody& box = world.bodies[5];
  EXPECT_TRUE(box.is_free());
  EXPECT_NEAR(box.mass, 500.0 * 0.1 * 0.1 * 0.05, 1e-12);
  // Draft 0.5 × 0.05 m below the level 0.08 m: the box's centre at 0.08 − 0.025 + 0.025.
  EXPECT_NEAR(box.pose.position.z(), 0.08, 1e-12);
  // The liquid fills the container to 0.08 m less the box's 0.1 × 0.1 × 0.025 m below the
  // level: (0.16² × 0.08 − 0.1² × 0.025) m³ at 1,000 kg/m³ = 1.798 kg.
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1000.0 * (0.16 * 0.16 * 0.08 - 0.1 * 0.1 * 0.025), 1e-9);
  for (const Vector3& x : world.particles.position) {
    const Vector3 local = x - box.pose.position;
    EXPECT_FALSE(std::abs(local.x()) < 0.05 && std::abs(local.y()) < 0.05 && std::abs(local.z()) < 0.025)
        << x.transpose();
  }
}

TEST(FloatingBox, BadCombinationsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("floating_box", "sap", overrides)); });
  };
  EXPECT_EQ(message({}), "");
  EXPECT_NE(message({"box_density=1000"}).find("'box_density'"), std::string::npos);
  EXPECT_NE(message({"box_width=0.15"}).find("'box_width'"), std::string::npos);
  EXPECT_NE(message({"liquid_depth=0.03"}).find("'liquid_depth'"), std::string::npos);
  EXPECT_NE(message({"container_width=0.165"}).find("'container_width'"), std::string::npos);
  EXPECT_EQ(message({"container_width=0.165", "table_model=contact_body"}), "");
}

}  // namespace
}  // namespace contactlab::experiments
