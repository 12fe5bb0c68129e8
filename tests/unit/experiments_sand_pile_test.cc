// sand_pile (issue 19): the default column (Drucker–Prager sand, a sticky floor), the input
// checks, and the physics at the scene's analytic marks under quasi_newton: the slumped
// flank lies at the friction angle, and a cohesive column stands above the critical
// cohesion c* = ρ g H₀ (1 − sin φ)/(2 cos φ) and collapses below it.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/scenario.h"
#include "mpm/constitutive/drucker_prager.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

World Build(const ParameterSet& parameters, std::unique_ptr<Scenario>* scenario_out = nullptr) {
  return BuildScene("sand_pile", parameters, scenario_out);
}

TEST(SandPile, DefaultColumnStandsOnTheFloor) {
  const World world = Build(SceneParameters("sand_pile", "quasi_newton"));
  ASSERT_EQ(world.materials.size(), 1u);
  EXPECT_EQ(world.materials[0].model, "drucker_prager");
  EXPECT_EQ(world.materials[0].friction_angle_degrees, 30.0);
  ASSERT_EQ(world.bodies.size(), 1u);
  EXPECT_EQ(world.bodies[0].grid_boundary, rigid::GridBoundary::kSticky);
  // R₀ 0.1 m, H₀ 0.05 m at particle spacing 5 mm: 10 layers of the lattice points of a 40 × 40
  // square inside the circle. The sampled volume is within a few percent of π R₀² H₀.
  ASSERT_GT(world.particles.size(), 0u);
  EXPECT_EQ(world.particles.size() % 10, 0u);
  const double volume = mpm::TotalMass(world.particles) / 1600.0;
  EXPECT_NEAR(volume, std::acos(-1.0) * 0.01 * 0.05, 0.03 * std::acos(-1.0) * 0.01 * 0.05);
  for (const Vector3& x : world.particles.position) {
    EXPECT_LE(x.head<2>().norm(), 0.1 + 1e-12);
    EXPECT_GE(x.z(), 0.0025 - 1e-12);
  }
}

TEST(SandPile, BadInputsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("sand_pile", "sap", overrides)); });
  };
  EXPECT_NE(message({"grid_spacing=0.2"}).find("'column_height'"), std::string::npos);
  EXPECT_EQ(message({}), "");
}

struct PileResult {
  double slope_angle;
  double friction_angle;
  double critical_cohesion;
  double settlement;
  double elastic_settlement;
  double final_speed;
  double runout;
};

PileResult RunPile(const std::vector<std::string>& overrides, const std::string& tag,
                   const std::string& formulation = "quasi_newton") {
  const ParameterSet parameters = SceneParameters("sand_pile", formulation, overrides);
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  const double dt = parameters.GetDouble("dt");
  const int steps = static_cast<int>(std::llround(parameters.GetDouble("duration") / dt));
  const auto output = std::filesystem::temp_directory_path() / ("contactlab_sand_pile_" + tag + ".h5");
  RecordShortRun(*scenario, world, formulation, parameters, steps, dt, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  PileResult result{ReadSummaryDouble(file, "slope_angle"),
                    ReadSummaryDouble(file, "friction_angle"),
                    ReadSummaryDouble(file, "analytic_critical_cohesion"),
                    ReadSummaryDouble(file, "settlement"),
                    ReadSummaryDouble(file, "analytic_elastic_settlement"),
                    ReadSummaryDouble(file, "final_max_speed"),
                    ReadSummaryDouble(file, "runout")};
  H5Fclose(file);
  std::filesystem::remove(output);
  return result;
}

// The default slump (R₀ 0.1 m, H₀ 0.05 m), 0.6 s, at φ 20° and 30°: the flank comes to rest
// within 3° of φ. The fitted flank spans about 12 surface bins of one particle spacing
// (5 mm) whose heights are known to ±s/2, so a line through them is good to about 2°.
// Each case runs 12,500 particles for 0.6 s (about 55 s on one core).
// Measured at 0.6 s: 20.8° and 28.2° (28.7° at 1 s; 40° gives 33°: its slump is too short
// for a straight flank at this resolution).
class SandPileSlump : public ::testing::TestWithParam<int> {};

TEST_P(SandPileSlump, FlankLiesAtTheFrictionAngle) {
  const double angle = GetParam();
  const PileResult result =
      RunPile({"friction_angle=" + std::to_string(GetParam()), "duration=0.6"}, std::to_string(GetParam()));
  EXPECT_EQ(result.friction_angle, angle);
  EXPECT_NEAR(result.slope_angle, angle, 3.0);
  EXPECT_LT(result.final_speed, 0.02) << "the pile has not come to rest";
}

INSTANTIATE_TEST_SUITE_P(SandPile, SandPileSlump, ::testing::Values(20, 30));

// A column of aspect ratio 2 (R₀ 0.05 m, H₀ 0.1 m) on a slip floor, 0.5 s: c* = ρ g H₀ (1 −
// sin φ)/(2 cos φ) = 453 Pa at φ 30°. At 1.5 c* it stays elastic and settles by ρ g H₀²/(2E)
// = 0.22 mm (2× allowed: gravity switched on at once rings the column); at 0.5 c* its base
// flows out and it settles over ten times that. Measured: 0.5 c* 26 mm, 0.8 c* 1.1 mm,
// 1.5 c* and 3 c* within the ringing.
class SandPileCohesion : public ::testing::TestWithParam<double> {};

TEST_P(SandPileCohesion, ColumnStandsAboveTheCriticalCohesion) {
  const double density = 1600.0, gravity = 9.81, height = 0.1, angle = std::acos(-1.0) / 6.0;
  const double critical = density * gravity * height * (1.0 - std::sin(angle)) / (2.0 * std::cos(angle));
  const double ratio = GetParam();
  const PileResult result = RunPile({"column_radius=0.05", "column_height=0.1", "table_model=slip", "duration=0.5",
                                     "cohesion=" + std::to_string(ratio * critical)},
                                    "cohesion" + std::to_string(static_cast<int>(10 * ratio)));
  EXPECT_NEAR(result.critical_cohesion, critical, 1e-9 * critical);
  EXPECT_NEAR(result.elastic_settlement, density * gravity * height * height / (2.0 * 3.537e5), 1e-12);
  if (ratio > 1.0) {
    EXPECT_LT(result.settlement, 2.0 * result.elastic_settlement) << "c/c* = " << ratio;
  } else {
    EXPECT_GT(result.settlement, 10.0 * result.elastic_settlement) << "c/c* = " << ratio;
  }
}

INSTANTIATE_TEST_SUITE_P(SandPile, SandPileCohesion, ::testing::Values(0.5, 1.5));

// The implicit formulations and the sand (spec-penalty-hybrid A13). With the return mapping
// after the step, sap's 10 ms step is elastic and finds the standing column's equilibrium;
// the projection then removes only that step's small excess, and the column stands (run-out
// −0.3% at grid spacing 0.02 m over 0.5 s). With the step energy of Drucker–Prager
// (sap.plasticity = in_step, the default) no stress of the step leaves the cone, and the edge
// slumps as under the explicit formulations: run-out 36%, flank 28.0° against φ 30°
// (26.6° and 41% at the default grid). About 12 s on one core.
TEST(SandPile, SapSlumpsTheSandOnlyWithPlasticityInsideTheStep) {
  const std::vector<std::string> coarse = {"grid_spacing=0.02", "duration=0.5"};
  std::vector<std::string> lagged = coarse;
  lagged.push_back("sap.plasticity=after_step");
  const PileResult in_step = RunPile(coarse, "sap_in_step", "sap");
  const PileResult after_step = RunPile(lagged, "sap_after_step", "sap");
  EXPECT_GT(in_step.runout, 0.2);
  EXPECT_LT(std::abs(after_step.runout), 0.05);
  EXPECT_NEAR(in_step.slope_angle, 30.0, 4.0);
  EXPECT_LT(in_step.final_speed, 0.02) << "the pile has not come to rest";
}

}  // namespace
}  // namespace contactlab::experiments
