// column_collapse (issue 19): the default column (Drucker–Prager sand, a quasi-2D channel with
// a sticky floor and slip walls), the input checks, the cone-angle conversion, and the
// run-out under quasi_newton against the planar fit of Lube et al. 2005.
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
  return BuildScene("column_collapse", parameters, scenario_out);
}

TEST(ColumnCollapse, DefaultColumnStandsAgainstTheBackWall) {
  const World world = Build(SceneParameters("column_collapse", "quasi_newton"));
  ASSERT_EQ(world.materials.size(), 1u);
  EXPECT_EQ(world.materials[0].model, "drucker_prager");
  // The cone narrowed to act as Mohr–Coulomb of 30° in the plane-strain slab (the default).
  EXPECT_NEAR(world.materials[0].friction_angle_degrees, 22.23, 0.01);
  // Floor (sticky), back, end and side walls (slip).
  ASSERT_EQ(world.bodies.size(), 5u);
  EXPECT_EQ(world.bodies[0].grid_boundary, rigid::GridBoundary::kSticky);
  for (std::size_t b = 1; b < world.bodies.size(); ++b) {
    EXPECT_EQ(world.bodies[b].grid_boundary, rigid::GridBoundary::kSlip) << world.bodies[b].name;
  }
  // d_i = h_i = 0.05 m, a slab of two 5 mm cells, particle spacing 2.5 mm: 20 × 4 × 20.
  EXPECT_EQ(world.particles.size(), 1600u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1600.0 * 0.05 * 0.01 * 0.05, 1e-9);
  for (const Vector3& x : world.particles.position) {
    EXPECT_GT(x.x(), 0.0);
    EXPECT_LT(x.x(), 0.05);
    EXPECT_GT(x.y(), 0.0);
    EXPECT_LT(x.y(), 0.01);
    EXPECT_GT(x.z(), 0.0);
    EXPECT_LT(x.z(), 0.05);
  }
}

TEST(ColumnCollapse, PlaneStrainMatchNarrowsTheCone) {
  // sin φ_c = 3 sin φ / (2√3 + sin φ): 22.23° for φ = 30°.
  const World world = Build(SceneParameters("column_collapse", "quasi_newton", {"friction_angle_match=plane_strain"}));
  const double expected = std::asin(1.5 / (2.0 * std::sqrt(3.0) + 0.5)) * 180.0 / std::acos(-1.0);
  EXPECT_NEAR(world.materials[0].friction_angle_degrees, expected, 1e-9);
  EXPECT_NEAR(expected, 22.23, 0.01);
  // Matched in triaxial compression, friction_angle is the cone's own angle.
  const World triaxial =
      Build(SceneParameters("column_collapse", "quasi_newton", {"friction_angle_match=triaxial_compression"}));
  EXPECT_EQ(triaxial.materials[0].friction_angle_degrees, 30.0);
}

TEST(ColumnCollapse, BadInputsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("column_collapse", "sap", overrides)); });
  };
  EXPECT_NE(message({"grid_spacing=0.1"}).find("'column_width'"), std::string::npos);
  EXPECT_NE(message({"gravity=0"}).find("'gravity'"), std::string::npos);
  EXPECT_EQ(message({}), "");
}

struct CollapseResult {
  double runout;
  double analytic_runout;
  double branch;
  double final_speed;
};

CollapseResult RunCollapse(const std::vector<std::string>& overrides, const std::string& tag) {
  const ParameterSet parameters = SceneParameters("column_collapse", "quasi_newton", overrides);
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  const double dt = parameters.GetDouble("dt");
  const int steps = static_cast<int>(std::llround(parameters.GetDouble("duration") / dt));
  const auto output = std::filesystem::temp_directory_path() / ("contactlab_column_collapse_" + tag + ".h5");
  RecordShortRun(*scenario, world, "quasi_newton", parameters, steps, dt, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  CollapseResult result{ReadSummaryDouble(file, "runout"), ReadSummaryDouble(file, "analytic_runout"),
                        ReadSummaryDouble(file, "analytic_branch"), ReadSummaryDouble(file, "final_max_speed")};
  H5Fclose(file);
  std::filesystem::remove(output);
  return result;
}

// a = 1 (1,600 particles, 1 s), about 25 s per run on one core. The front slows below the rest
// speed at 0.36 s but creeps on by a spacing or two (plane strain: 1.00 at 0.6 s, 1.05 at
// 1 s), so the run takes the scene's full duration. With the
// cone narrowed to act as Mohr–Coulomb of 30° in this plane-strain slab, the run-out lies
// within issue 19's 15% of the fit's 1.2 a; the front is resolved to one particle spacing,
// s/d_i = 0.05 in run-out. With the cone of 30° matched in triaxial compression (the
// the choice of sand_pile) the slab's sand acts as 43.9° and stops shorter, by more than two
// spacings. Measured: plane strain (the default) 1.05 (−12.5%), triaxial compression 0.70.
TEST(ColumnCollapse, RunoutFollowsLubeWithThePlaneStrainAngle) {
  const CollapseResult plane = RunCollapse({}, "plane");
  EXPECT_EQ(plane.branch, 1.0);
  EXPECT_DOUBLE_EQ(plane.analytic_runout, 1.2);
  EXPECT_NEAR(plane.runout, 1.2, 0.15 * 1.2);
  EXPECT_LT(plane.final_speed, 0.05) << "the sand has not come to rest";
  const CollapseResult triaxial = RunCollapse({"friction_angle_match=triaxial_compression"}, "triaxial");
  EXPECT_LT(triaxial.runout, plane.runout - 2.0 * 0.05);
}

}  // namespace
}  // namespace contactlab::experiments
