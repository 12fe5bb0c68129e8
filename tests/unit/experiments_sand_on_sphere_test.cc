// sand_on_sphere ([ding_schroeder_penalty] Fig. 16, issue 19): the default scene, the input checks, and the
// physics the scene can be held to under quasi_newton: the sliding sand's friction turns the
// sphere toward the column (against what the frictionless sphere does), and the sphere rolls on
// the floor without slipping.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/scenario.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

World Build(const ParameterSet& parameters, std::unique_ptr<Scenario>* scenario_out = nullptr) {
  return BuildScene("sand_on_sphere", parameters, scenario_out);
}

TEST(SandOnSphere, DefaultColumnHangsOverTheSphere) {
  const World world = Build(SceneParameters("sand_on_sphere", "quasi_newton"));
  ASSERT_EQ(world.materials.size(), 1u);
  EXPECT_EQ(world.materials[0].model, "drucker_prager");
  ASSERT_EQ(world.bodies.size(), 2u);
  EXPECT_EQ(world.bodies[0].grid_boundary, rigid::GridBoundary::kSticky);
  const rigid::RigidBody& sphere = world.bodies[1];
  ASSERT_TRUE(sphere.is_free());
  // R 0.05 m resting on the floor's top face z = 0; 1000 kg/m³.
  EXPECT_NEAR(sphere.pose.position.z(), 0.05, 1e-12);
  EXPECT_NEAR(sphere.mass, 1000.0 * 4.0 / 3.0 * std::acos(-1.0) * std::pow(0.05, 3), 1e-9);
  // A 0.05 × 0.05 × 0.2 m column of 1600 kg/m³ at particle spacing 5 mm (10 × 10 × 40), its
  // axis 0.02 m along +x, its lowest layer 0.01 m above the sphere's top.
  EXPECT_EQ(world.particles.size(), 4000u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1600.0 * 0.05 * 0.05 * 0.2, 1e-9);
  double lowest = 1.0, smallest_x = 1.0, largest_x = -1.0;
  for (const Vector3& x : world.particles.position) {
    lowest = std::min(lowest, x.z());
    smallest_x = std::min(smallest_x, x.x());
    largest_x = std::max(largest_x, x.x());
  }
  EXPECT_NEAR(lowest, 0.11, 1e-12);
  EXPECT_NEAR(0.5 * (smallest_x + largest_x), 0.02, 1e-12);
}

TEST(SandOnSphere, BadInputsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("sand_on_sphere", "sap", overrides)); });
  };
  EXPECT_NE(message({"column_offset=0.04"}).find("'column_offset'"), std::string::npos);
  EXPECT_NE(message({"grid_spacing=0.2"}).find("'column_width'"), std::string::npos);
  EXPECT_EQ(message({}), "");
}

struct SphereResult {
  double displacement;
  double turn;
  double rolling_ratio;
  double pull_friction;
};

SphereResult RunSphere(const std::vector<std::string>& overrides, const std::string& tag) {
  const ParameterSet parameters = SceneParameters("sand_on_sphere", "quasi_newton", overrides);
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  const double dt = parameters.GetDouble("dt");
  const int steps = static_cast<int>(std::llround(parameters.GetDouble("duration") / dt));
  const auto output = std::filesystem::temp_directory_path() / ("contactlab_sand_on_sphere_" + tag + ".h5");
  RecordShortRun(*scenario, world, "quasi_newton", parameters, steps, dt, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  SphereResult result{ReadSummaryDouble(file, "displacement"), ReadSummaryDouble(file, "turn"),
                      ReadSummaryDouble(file, "rolling_ratio"), ReadSummaryDouble(file, "analytic_pull_friction")};
  H5Fclose(file);
  std::filesystem::remove(output);
  return result;
}

// The whole 0.6 s at grid spacing 0.02 m (500 particles, about 2 s each on one core), with the
// sand–sphere friction of [ding_schroeder_penalty] (0.9) and without. The frictionless sphere is pushed away
// from the column by more than its radius: the sand it deflects leaves toward +x and the pile
// at its foot leans on it (measured −147 mm; −102 mm at 0.01 m). Friction drags the near side
// down and turns the sphere toward the sand: the two runs end more than a radius apart
// (measured 157 mm; 85 mm at 0.01 m). In both the floor holds the sphere in rolling: R θ_y = x
// within 2% (measured 0.999).
TEST(SandOnSphere, FrictionOfTheSlidingSandTurnsTheSphereTowardIt) {
  const SphereResult frictionless = RunSphere({"grid_spacing=0.02", "sphere_mu=0"}, "mu0");
  const SphereResult rough = RunSphere({"grid_spacing=0.02"}, "mu09");
  const double radius = 0.05;
  // The landing patch reaches asin(0.045/0.05) from the top: tan of half that angle.
  EXPECT_NEAR(rough.pull_friction, std::tan(0.5 * std::asin(0.9)), 1e-12);
  EXPECT_LT(frictionless.displacement, -radius);
  EXPECT_LT(frictionless.turn, 0.0);
  EXPECT_GT(rough.displacement - frictionless.displacement, radius);
  EXPECT_GT(rough.turn - frictionless.turn, 1.0);
  EXPECT_NEAR(frictionless.rolling_ratio, 1.0, 0.02);
}

}  // namespace
}  // namespace contactlab::experiments
