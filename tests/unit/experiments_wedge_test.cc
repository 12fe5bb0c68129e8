// wedge (spec-penalty-hybrid §4.2 wdg_rm, §4.4 wedge force balance, §4.7 item 7): μ* = M g / N,
// the placement of rigid and MPM blocks and of the walls (overlap/2 inside each outer
// particle layer or face), the input check, and a short sap run of two MPM blocks whose
// walls feel the squeeze and whose file has every observable and summary attribute.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>

#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "experiments/scenarios/wedge.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

ParameterSet Parameters(const std::vector<std::string>& overrides = {}) {
  return SceneParameters("wedge", "sap", overrides);
}

double Extreme(const World& world, bool largest) {
  double value = largest ? -1.0 : 1.0;
  for (const Vector3& x : world.particles.position) value = largest ? std::max(value, x.x()) : std::min(value, x.x());
  return value;
}

TEST(WedgeAnalytic, FrictionThresholdIsWeightOverWallForce) {
  EXPECT_NEAR(WedgeFrictionThreshold(2.0, 9.81, 130.0), 0.150923, 1e-6);
  EXPECT_TRUE(std::isnan(WedgeFrictionThreshold(2.0, 9.81, 0.0)));
}

TEST(Wedge, DefaultRigidAndMpmPairMeetsAtTheOriginAndOverlapsTheWalls) {
  World world;
  FindScenario("wedge").factory()->Build(Parameters(), world);
  // Rigid left block [−0.1, 0], MPM right block with its inner layer on the rigid face.
  ASSERT_EQ(world.bodies.size(), 3u);
  EXPECT_TRUE(world.bodies[0].is_free());
  EXPECT_NEAR(world.bodies[0].pose.position.x(), -0.05, 1e-15);
  EXPECT_EQ(world.particles.size(), 1331u);
  EXPECT_NEAR(Extreme(world, false), 0.0, 1e-15);
  const double s = 0.1 / 11.0;
  EXPECT_NEAR(Extreme(world, true), 0.1 - s, 1e-15);
  // Walls 1 mm inside the rigid face and the outer particle layer, normals into the gap.
  const rigid::RigidBody& left_wall = world.bodies[1];
  const rigid::RigidBody& right_wall = world.bodies[2];
  EXPECT_EQ(left_wall.motion, rigid::BodyMotion::kStatic);
  EXPECT_NEAR(left_wall.pose.position.x(), -0.1 + 0.001, 1e-15);
  EXPECT_NEAR(right_wall.pose.position.x(), 0.1 - s - 0.001, 1e-15);
  EXPECT_NEAR((left_wall.pose.orientation * Vector3::UnitZ() - Vector3::UnitX()).norm(), 0.0, 1e-15);
  EXPECT_NEAR((right_wall.pose.orientation * Vector3::UnitZ() + Vector3::UnitX()).norm(), 0.0, 1e-15);
}

TEST(Wedge, TwoMpmBlocksContinueOneLatticeAndBigOverlapsAreRejected) {
  World world;
  FindScenario("wedge").factory()->Build(Parameters({"left_body=mpm"}), world);
  EXPECT_EQ(world.particles.size(), 2662u);
  // The lattice is compressed along x by the default overlap of 2 mm over the 0.2 m pair:
  // λ = 1 − 0.002 / 0.2 = 0.99, in positions and in the elastic deformation gradient.
  const double s = 0.1 / 11.0, stretch = 0.99;
  EXPECT_NEAR(Extreme(world, false), stretch * (-0.1 + 0.5 * s), 1e-15);
  EXPECT_NEAR(Extreme(world, true), stretch * (0.1 - 0.5 * s), 1e-15);
  double closest = 1.0;  // the layers nearest the interface sit at ±λ s/2
  for (const Vector3& x : world.particles.position) closest = std::min(closest, std::abs(x.x()));
  EXPECT_NEAR(closest, stretch * 0.5 * s, 1e-15);
  for (const auto& deformation : world.particles.deformation_gradient) {
    EXPECT_NEAR(deformation(0, 0), stretch, 1e-15);
    EXPECT_EQ(deformation(1, 1), 1.0);
  }
  // The walls touch the outermost layers: no particle starts inside a wall.
  for (const rigid::RigidBody& body : world.bodies) {
    for (const Vector3& x : world.particles.position) {
      EXPECT_GE(body.geometries[0].shape.SignedDistance(body.pose.InverseTransformPoint(x)), -1e-15) << body.name;
    }
  }
  World other;
  try {
    FindScenario("wedge").factory()->Build(Parameters({"overlap=0.05"}), other);
    ADD_FAILURE() << "overlap = 0.05 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("'overlap'"), std::string::npos);
  }
}

TEST(Wedge, ShortSapRunOfTwoMpmBlocksFeelsTheSqueeze) {
  const ParameterSet parameters = Parameters({"left_body=mpm", "grid_spacing=0.05", "overlap=0.004", "duration=0.05"});
  World world;
  std::unique_ptr<Scenario> scenario = FindScenario("wedge").factory();
  scenario->Build(parameters, world);
  EXPECT_EQ(world.particles.size(), 128u);
  const auto output = std::filesystem::temp_directory_path() / "contactlab_wedge_test.h5";
  RecordShortRun(*scenario, world, "sap", parameters, 5, 0.01, output, [](int step, const StepReport& report) {
    // The overlap pushes both walls outward (the left one toward −x).
    EXPECT_LT(report.contact_wrench[0].force.x(), 0.0) << "step " << step;
    EXPECT_GT(report.contact_wrench[1].force.x(), 0.0) << "step " << step;
  });
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GT(H5Lexists(file, "/timeseries", H5P_DEFAULT), 0);
  for (const char* name : {"block_height", "wall_normal_force", "wall_friction_force", "contacts"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/timeseries/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  for (const char* name : {"jammed", "descent", "late_descent", "mu_star", "left_wall_force", "configuration"}) {
    EXPECT_GT(H5Aexists_by_name(file, "summary", name, H5P_DEFAULT), 0) << name;
  }
  double mu_star = std::numeric_limits<double>::quiet_NaN();
  const hid_t attribute = H5Aopen_by_name(file, "summary", "mu_star", H5P_DEFAULT, H5P_DEFAULT);
  H5Aread(attribute, H5T_NATIVE_DOUBLE, &mu_star);
  H5Aclose(attribute);
  EXPECT_TRUE(std::isfinite(mu_star));
  EXPECT_GT(mu_star, 0.0);
  H5Fclose(file);
  std::filesystem::remove(output);
}

}  // namespace
}  // namespace contactlab::experiments
