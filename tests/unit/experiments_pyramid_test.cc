// pyramid (spec-penalty-hybrid §4.2 prmd_rm, §4.7 item 6): the statics estimate behind the
// defaults, the default stack (three 1 kg blocks on the ground, the ball resting on their
// inner top edges), the geometry checks, and a short hybrid_impulse run that records every
// observable and summary attribute.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <numbers>

#include <gtest/gtest.h>

#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "experiments/scenarios/pyramid.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

ParameterSet Parameters(const std::vector<std::string>& overrides = {}) {
  return SceneParameters("pyramid", "hybrid_impulse", overrides);
}

TEST(PyramidAnalytic, GroundFrictionDemandAndBallDrop) {
  const double ball_mass = 500.0 * 4.0 / 3.0 * std::numbers::pi * std::pow(0.08, 3);
  // tan α = 0.05 / √(0.08² − 0.05²) = 0.8006: demand (m_b/3) tan α / (1 + m_b/3) = 0.211.
  EXPECT_NEAR(PyramidRequiredGroundFriction(ball_mass, 1.0, 0.08, 0.05), 0.2108, 1e-4);
  EXPECT_EQ(PyramidBallDrop(0.08, 0.05, 0.0), 0.0);
  // A quarter block of drop (the collapse threshold) needs about 2.1 cm of spreading, and past
  // R − r_e = 3 cm the ball falls between the blocks.
  EXPECT_NEAR(PyramidBallDrop(0.08, 0.05, 0.0207), 0.025, 2e-4);
  EXPECT_NEAR(PyramidBallDrop(0.08, 0.05, 0.05), std::sqrt(0.08 * 0.08 - 0.05 * 0.05), 1e-15);
}

TEST(Pyramid, DefaultStackRestsOnTheGroundAndTheBallOnTheEdges) {
  World world;
  FindScenario("pyramid").factory()->Build(Parameters(), world);
  EXPECT_EQ(world.particles.size(), 3000u);  // 3 × 10³ at particle spacing 0.01 m
  EXPECT_NEAR(mpm::TotalMass(world.particles), 3.0, 1e-12);
  ASSERT_EQ(world.bodies.size(), 2u);
  const rigid::RigidBody& ball = world.bodies[1];
  EXPECT_TRUE(ball.is_free());
  EXPECT_NEAR(ball.pose.position.x(), 0.0, 1e-15);
  EXPECT_NEAR(ball.pose.position.y(), 0.0, 1e-15);
  // Nothing inside the ball, one edge particle per block on its surface; the lowest layer
  // on the ground, none below.
  int touching = 0;
  double lowest = 1.0;
  for (const Vector3& x : world.particles.position) {
    const double gap = (x - ball.pose.position).norm() - 0.08;
    EXPECT_GT(gap, -1e-12);
    if (gap < 1e-12) ++touching;
    lowest = std::min(lowest, x.z());
  }
  EXPECT_GE(touching, 3);
  EXPECT_NEAR(lowest, 0.0, 1e-15);
  // The top layer at 0.09 m (ten layers from the ground up); the inner layer half a spacing
  // behind the face at 5 cm, and the edge particles nearest the axis half a spacing to either
  // side of the block's mid-plane: the ball's centre sits √(R² − 0.055² − 0.005²) above them.
  EXPECT_NEAR(ball.pose.position.z(), 0.09 + std::sqrt(0.08 * 0.08 - 0.055 * 0.055 - 0.005 * 0.005), 1e-12);
}

TEST(Pyramid, ImpossibleGeometriesNameTheirKeys) {
  World world;
  auto build = [&world](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { FindScenario("pyramid").factory()->Build(Parameters(overrides), world); });
  };
  EXPECT_NE(build({"edge_radius=0.09"}).find("'ball_radius'"), std::string::npos);
  EXPECT_NE(build({"edge_radius=0.02"}).find("'block_size'"), std::string::npos);
  EXPECT_NE(build({"settle_time=3"}).find("'settle_time'"), std::string::npos);
}

TEST(Pyramid, ShortHybridImpulseRunRecordsObservablesAndSummary) {
  const ParameterSet parameters = Parameters({"grid_spacing=0.05", "duration=0.05", "settle_time=0.02"});
  World world;
  std::unique_ptr<Scenario> scenario = FindScenario("pyramid").factory();
  scenario->Build(parameters, world);
  EXPECT_EQ(world.particles.size(), 192u);
  const auto output = std::filesystem::temp_directory_path() / "contactlab_pyramid_test.h5";
  RecordShortRun(*scenario, world, "hybrid_impulse", parameters, 5, 0.01, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GT(H5Lexists(file, "/timeseries", H5P_DEFAULT), 0);
  for (const char* name : {"ball_height", "ball_drift", "ball_lateral_offset", "block_spreading", "block_radial_offset",
                           "ball_contact_force", "ground_normal_force"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/timeseries/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  for (const char* name : {"drift", "height_change", "collapsed", "ball_drop", "final_block_spreading"}) {
    EXPECT_GT(H5Aexists_by_name(file, "summary", name, H5P_DEFAULT), 0) << name;
  }
  // Five steps cannot collapse the stack: the ball has dropped by less than a quarter block.
  signed char collapsed = 1;
  const hid_t attribute = H5Aopen_by_name(file, "summary", "collapsed", H5P_DEFAULT, H5P_DEFAULT);
  H5Aread(attribute, H5T_NATIVE_SCHAR, &collapsed);
  H5Aclose(attribute);
  EXPECT_EQ(collapsed, 0);
  H5Fclose(file);
  std::filesystem::remove(output);
}

}  // namespace
}  // namespace contactlab::experiments
