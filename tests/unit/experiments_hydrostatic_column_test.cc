// hydrostatic_column (issue 19): the default scene (2,880 particles of the equation-of-state
// liquid in a sticky-walled container), the input checks, and the explicit formulations'
// pressure against the weight of the liquid above, within 5% of ρ g H.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <map>
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
  return BuildScene("hydrostatic_column", parameters, scenario_out);
}

TEST(HydrostaticColumn, DefaultColumnFillsTheContainer) {
  const World world = Build(SceneParameters("hydrostatic_column", "quasi_newton"));
  // 0.12 × 0.12 × 0.2 m at particle spacing 0.01 m: 12 × 12 × 20 particles, 2.88 kg.
  EXPECT_EQ(world.particles.size(), 2880u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 2.88, 1e-12);
  ASSERT_EQ(world.materials.size(), 1u);
  EXPECT_EQ(world.materials[0].model, "eos_liquid");
  ASSERT_EQ(world.bodies.size(), 5u);
  for (const rigid::RigidBody& body : world.bodies) {
    EXPECT_EQ(body.motion, rigid::BodyMotion::kStatic) << body.name;
    EXPECT_EQ(body.grid_boundary, rigid::GridBoundary::kSticky) << body.name;
  }
  // Half a particle spacing from the floor and the walls.
  for (const Vector3& x : world.particles.position) {
    EXPECT_GE(x.z(), 0.005 - 1e-12);
    EXPECT_LE(std::max(std::abs(x.x()), std::abs(x.y())), 0.055 + 1e-12);
  }
}

TEST(HydrostaticColumn, BadCombinationsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("hydrostatic_column", "sap", overrides)); });
  };
  EXPECT_NE(message({"settle_time=2"}).find("'settle_time'"), std::string::npos);
  // Grid walls need the container's faces on node planes: W/2 = 0.05 m is 2.5 h.
  EXPECT_NE(message({"column_width=0.1"}).find("'column_width'"), std::string::npos);
  EXPECT_EQ(message({"column_width=0.1", "table_model=contact_body"}), "");
  EXPECT_NE(message({"grid_spacing=0.2", "table_model=contact_body"}).find("'column_height'"), std::string::npos);
}

// The explicit formulations at the scene's defaults (1 s, 2,880 particles): the column rings
// and settles; per grid cell of height the mean p(J) matches the weight above to 5% of ρ g H.
// Measured: 3.9% in the cell at the floor (the sticky wall's boundary layer), under 1.5% in
// the others; sap gives 3.8%, penalty (scene runs, not this test: a minute each) likewise.
class HydrostaticColumnAtRest : public ::testing::TestWithParam<std::string> {};

TEST_P(HydrostaticColumnAtRest, PressureCarriesTheWeightAbove) {
  const ParameterSet parameters = SceneParameters("hydrostatic_column", GetParam());
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  const double dt = parameters.GetDouble("dt");
  const int steps = static_cast<int>(std::llround(parameters.GetDouble("duration") / dt));
  const auto output = std::filesystem::temp_directory_path() / ("contactlab_hydrostatic_" + GetParam() + ".h5");
  RecordShortRun(*scenario, world, GetParam(), parameters, steps, dt, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  for (const char* name : {"bottom_pressure", "mid_pressure"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/analytic/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  const double error = ReadSummaryDouble(file, "pressure_error");
  const double volume_ratio = ReadSummaryDouble(file, "final_mean_volume_ratio");
  const double speed = ReadSummaryDouble(file, "mean_late_max_speed");
  const double hydrostatic = ReadSummaryDouble(file, "hydrostatic_bottom_pressure");
  H5Fclose(file);
  std::filesystem::remove(output);
  EXPECT_NEAR(hydrostatic, 1000.0 * 9.81 * 0.2, 1e-9);
  EXPECT_LT(error, 0.05);
  // At rest: the mean pressure ρ g H / 2 = 981 Pa means J^-7 = 1.049, J = 0.9932.
  EXPECT_NEAR(volume_ratio, std::pow(1.0 + 981.0 / 2e4, -1.0 / 7.0), 5e-4);
  EXPECT_LT(speed, 0.01);
}

std::string FormulationName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

INSTANTIATE_TEST_SUITE_P(HydrostaticColumn, HydrostaticColumnAtRest,
                         ::testing::Values("quasi_newton", "hybrid_impulse"), FormulationName);

}  // namespace
}  // namespace contactlab::experiments
