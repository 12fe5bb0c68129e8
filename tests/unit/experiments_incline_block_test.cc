// incline_block (spec-penalty-hybrid §4.4, §4.7 item 1): the point-mass reference at θ = 6°,
// the default scene (1,331 particles resting on the incline with v₀ imposed), the input
// checks, a short sap run that records every observable and summary attribute, and the
// per-contact forces of sap and quasi_newton summing to the opposite of the incline's wrench.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <numbers>

#include <gtest/gtest.h>

#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "experiments/scenarios/incline_block.h"
#include "mpm/sampling.h"
#include "registry/registered_formulations.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kTheta = 6.0 * std::numbers::pi / 180.0;

ParameterSet Parameters(const std::string& formulation, const std::vector<std::string>& overrides = {}) {
  return SceneParameters("incline_block", formulation, overrides);
}

World Build(const ParameterSet& parameters, std::unique_ptr<Scenario>* scenario_out = nullptr) {
  World world;
  std::unique_ptr<Scenario> scenario = FindScenario("incline_block").factory();
  scenario->Build(parameters, world);
  if (scenario_out != nullptr) *scenario_out = std::move(scenario);
  return world;
}

TEST(InclineBlockAnalytic, SpecValuesAtSixDegrees) {
  // Spec §4.4: μ = 0.125 stops at t_s = 0.5152 s after s_s = 0.02576 m; μ = 0.1 slides on.
  EXPECT_NEAR(InclineBlockAcceleration(0.1, kTheta, 9.81), 0.04980, 5e-5);
  EXPECT_NEAR(InclineBlockAcceleration(0.125, kTheta, 9.81), -0.19411, 5e-5);
  ASSERT_TRUE(InclineBlockStopTime(0.1, 0.125, kTheta, 9.81).has_value());
  EXPECT_NEAR(*InclineBlockStopTime(0.1, 0.125, kTheta, 9.81), 0.5152, 1e-4);
  EXPECT_NEAR(InclineBlockDisplacement(2.0, 0.1, 0.125, kTheta, 9.81), 0.02576, 1e-5);
  EXPECT_FALSE(InclineBlockStopTime(0.1, 0.1, kTheta, 9.81).has_value());
  // Sliding: v = v₀ + a t, s = v₀ t + a t²/2; static after t_s.
  EXPECT_NEAR(InclineBlockSpeed(1.0, 0.1, 0.1, kTheta, 9.81), 0.1 + 0.04980, 5e-5);
  EXPECT_NEAR(InclineBlockDisplacement(1.0, 0.1, 0.1, kTheta, 9.81), 0.1 + 0.5 * 0.04980, 5e-5);
  EXPECT_NEAR(InclineBlockSpeed(0.25, 0.1, 0.125, kTheta, 9.81), 0.1 - 0.25 * 0.19411, 5e-5);
  EXPECT_EQ(InclineBlockSpeed(0.6, 0.1, 0.125, kTheta, 9.81), 0.0);
  EXPECT_EQ(InclineBlockDisplacement(0.6, 0.1, 0.125, kTheta, 9.81),
            InclineBlockDisplacement(5.0, 0.1, 0.125, kTheta, 9.81));
}

TEST(InclineBlock, DefaultBlockRestsOnTheInclineMovingDownslope) {
  const World world = Build(Parameters("sap"));
  // 0.1 m at particle spacing 0.009 m: 11 per edge (spec §4.2 plane_m: 1.3k), exactly 1 kg.
  EXPECT_EQ(world.particles.size(), 1331u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 1.0, 1e-12);
  ASSERT_EQ(world.bodies.size(), 1u);
  const rigid::RigidBody& incline = world.bodies[0];
  EXPECT_EQ(incline.motion, rigid::BodyMotion::kStatic);
  const Vector3 normal = incline.pose.orientation * Vector3::UnitZ();
  const Vector3 downslope = incline.pose.orientation * Vector3::UnitX();
  EXPECT_NEAR(normal.x(), std::sin(kTheta), 1e-15);
  EXPECT_NEAR(downslope.z(), -std::sin(kTheta), 1e-15);
  // The lowest layer (121 particles) lies on the surface, none below it.
  int on_surface = 0;
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    const double height = world.particles.position[p].dot(normal);
    EXPECT_GT(height, -1e-12);
    if (std::abs(height) < 1e-12) ++on_surface;
    EXPECT_LT((world.particles.velocity[p] - 0.1 * downslope).norm(), 1e-15);
  }
  EXPECT_EQ(on_surface, 121);
}

TEST(InclineBlock, BadCombinationsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(Parameters("sap", overrides)); });
  };
  EXPECT_NE(message({"settle_time=2"}).find("'settle_time'"), std::string::npos);
  EXPECT_NE(message({"stop_speed=0.2"}).find("'initial_speed'"), std::string::npos);
  EXPECT_NE(message({"grid_spacing=0.2"}).find("'grid_spacing'"), std::string::npos);
  // The rigid block builds (it needs rigid-rigid contact to stay on the incline).
  const World rigid_world = Build(Parameters("sap", {"body=rigid"}));
  EXPECT_EQ(rigid_world.particles.size(), 0u);
  ASSERT_EQ(rigid_world.bodies.size(), 2u);
  EXPECT_NEAR(rigid_world.bodies[1].mass, 1.0, 1e-12);
}

// Presence of an HDF5 link (each parent must exist, so check them in order).
bool Exists(hid_t file, const std::string& path) {
  return H5Lexists(file, path.c_str(), H5P_DEFAULT) > 0;
}

TEST(InclineBlock, ShortSapRunRecordsObservablesAndSummary) {
  // A coarse block (64 particles) for ten steps of 5 ms; settle_time inside the run so the
  // error window is not empty.
  const ParameterSet parameters = Parameters("sap", {"grid_spacing=0.05", "duration=0.05", "settle_time=0.02"});
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  EXPECT_EQ(world.particles.size(), 64u);
  const auto output = std::filesystem::temp_directory_path() / "contactlab_incline_block_test.h5";
  RecordShortRun(*scenario, world, "sap", parameters, 10, 0.005, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_TRUE(Exists(file, "/timeseries"));
  ASSERT_TRUE(Exists(file, "/analytic"));
  for (const char* name : {"com_speed", "com_displacement", "normal_force", "tangential_force", "force_ratio",
                           "cone_margin", "contacts", "max_penetration", "normal_offset"}) {
    EXPECT_TRUE(Exists(file, std::string("/timeseries/") + name)) << name;
  }
  for (const char* name : {"com_speed", "com_displacement", "normal_force", "tangential_force", "force_ratio"}) {
    EXPECT_TRUE(Exists(file, std::string("/analytic/") + name)) << name;
  }
  for (const char* name : {"max_rel_error", "max_cone_margin", "regime", "final_displacement", "sliding_force_ratio",
                           "stop_speed", "settle_time"}) {
    EXPECT_GT(H5Aexists_by_name(file, "summary", name, H5P_DEFAULT), 0) << name;
  }
  // μ = 0.1 keeps sliding: no stop, measured or analytic.
  EXPECT_EQ(H5Aexists_by_name(file, "summary", "stop_time", H5P_DEFAULT), 0);
  EXPECT_EQ(H5Aexists_by_name(file, "summary", "analytic_stop_time", H5P_DEFAULT), 0);
  const double error = ReadSummaryDouble(file, "max_rel_error");
  EXPECT_TRUE(std::isfinite(error));
  EXPECT_LT(error, 0.2);
  // sap resolves contact per particle: the cone margin is known and, with SAP's exact cone
  // projection, not positive beyond round-off.
  const double margin = ReadSummaryDouble(file, "max_cone_margin");
  EXPECT_TRUE(std::isfinite(margin));
  EXPECT_LT(margin, 1e-9);
  H5Fclose(file);
  std::filesystem::remove(output);
}

// Σ per-contact records against the incline = −(wrench the incline received), to round-off.
void ExpectRecordsBalanceTheWrench(const std::string& formulation_name, const std::vector<std::string>& overrides) {
  const ParameterSet parameters = Parameters(formulation_name, overrides);
  World world = Build(parameters);
  auto formulation = MakeFormulation({formulation_name, parameters});
  int checked = 0;
  for (int step = 0; step < 4; ++step) {
    const StepReport report = formulation->Step(world, 0.005);
    Vector3 total = Vector3::Zero();
    for (const ContactForce& record : report.contact_forces) {
      ASSERT_EQ(record.body, 0);
      EXPECT_NEAR(record.normal.dot(world.bodies[0].pose.orientation * Vector3::UnitZ()), 1.0, 1e-12);
      total += record.force;
    }
    const Vector3 wrench = report.contact_wrench[0].force;
    if (report.contacts > 0) {
      EXPECT_FALSE(report.contact_forces.empty()) << formulation_name << " step " << step;
      EXPECT_GT(wrench.norm(), 0.0);
      ++checked;
    }
    EXPECT_LT((total + wrench).norm(), 1e-12 * std::max(1.0, wrench.norm())) << formulation_name << " step " << step;
  }
  EXPECT_GT(checked, 0) << formulation_name;
}

TEST(InclineBlock, SapContactForceRecordsSumToMinusTheInclineWrench) {
  ExpectRecordsBalanceTheWrench("sap", {"grid_spacing=0.05"});
}

TEST(InclineBlock, QuasiNewtonContactForceRecordsSumToMinusTheInclineWrench) {
  ExpectRecordsBalanceTheWrench("quasi_newton", {"grid_spacing=0.05", "quasi_newton.substeps=10"});
}

TEST(InclineBlock, HybridImpulseLeavesRecordsEmptyAndTheTotalsComeFromTheWrench) {
  const ParameterSet parameters = Parameters("hybrid_impulse", {"grid_spacing=0.05"});
  World world = Build(parameters);
  auto formulation = MakeFormulation({"hybrid_impulse", parameters});
  const Vector3 normal = world.bodies[0].pose.orientation * Vector3::UnitZ();
  double pushed = 0.0;
  for (int step = 0; step < 4; ++step) {
    const StepReport report = formulation->Step(world, 0.005);
    EXPECT_TRUE(report.contact_forces.empty());
    pushed += report.contact_wrench[0].force.dot(normal);
  }
  // The grid boundary holds the block up, so the incline is pushed into itself.
  EXPECT_LT(pushed, 0.0);
}

}  // namespace
}  // namespace contactlab::experiments
