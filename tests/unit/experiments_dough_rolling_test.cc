// dough_rolling (spec-sap-qn E3 reduced): the default scene has the spec's particle count
// and mass, the pin follows the prescribed trajectory through every phase boundary, and a
// few hybrid_impulse steps before the pin reaches the dough stay quiet and record cleanly.
#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>

#include <gtest/gtest.h>

#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "mpm/sampling.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

ParameterSet DefaultParameters(const std::vector<std::string>& overrides = {},
                               const std::string& formulation = "hybrid_impulse") {
  ParameterSet parameters;
  parameters.Declare(FindScenario("dough_rolling").parameters);
  parameters.Declare(FindFormulation(formulation).parameters);
  for (const std::string& setting : overrides) {
    const std::size_t equals = setting.find('=');
    parameters.SetFromText(setting.substr(0, equals), setting.substr(equals + 1), "test");
  }
  parameters.Validate();
  return parameters;
}

struct BuiltScene {
  World world;
  std::unique_ptr<Scenario> scenario;
  int pin = -1;  // index of the pin in world.bodies
};

BuiltScene Build(const ParameterSet& parameters) {
  BuiltScene scene;
  scene.scenario = FindScenario("dough_rolling").factory();
  scene.scenario->Build(parameters, scene.world);
  for (int b = 0; b < static_cast<int>(scene.world.bodies.size()); ++b) {
    if (scene.world.bodies[b].name == "pin") scene.pin = b;
  }
  return scene;
}

double HighestParticle(const World& world) {
  double top = -std::numeric_limits<double>::infinity();
  for (const Vector3& x : world.particles.position) top = std::max(top, x.z());
  return top;
}

TEST(DoughRolling, DefaultSceneHasTheSpecParticleCountAndMass) {
  const BuiltScene scene = Build(DefaultParameters());
  // 0.35 × 0.28 × 0.06 m at particle spacing 0.01 m: 35 × 28 × 6 (spec E3: ≈5.9k).
  EXPECT_EQ(scene.world.particles.size(), 5880u);
  const double volume = 0.35 * 0.28 * 0.06;
  EXPECT_NEAR(mpm::TotalMass(scene.world.particles), 1000.0 * volume, 0.02 * 1000.0 * volume);
  // Centred over the origin, resting on the table top z = 0.
  const Vector3 center = mpm::CenterOfMass(scene.world.particles);
  EXPECT_NEAR(center.x(), 0.0, 1e-9);
  EXPECT_NEAR(center.y(), 0.0, 1e-9);
  EXPECT_NEAR(center.z(), 0.03, 1e-9);
  ASSERT_GE(scene.pin, 0);
  const rigid::RigidBody& pin = scene.world.bodies[scene.pin];
  EXPECT_EQ(pin.motion, rigid::BodyMotion::kArticulated);
  EXPECT_NEAR(pin.mass, 700.0 * std::numbers::pi * 0.035 * 0.035 * 0.45, 1e-9);
  // Only the table and the pin carry geometry: the prescribed carriers cannot touch the dough.
  EXPECT_EQ(scene.world.bodies.size(), 2u);
  EXPECT_EQ(scene.world.multibody.num_links(), 4);
  EXPECT_EQ(scene.world.multibody.num_velocities(), 1);  // the spin
}

TEST(DoughRolling, PinFollowsThePrescribedTrajectoryAtEveryPhaseBoundary) {
  BuiltScene scene = Build(DefaultParameters());
  rigid::MultibodyTree& tree = scene.world.multibody;
  const int link = scene.world.bodies[scene.pin].tree_link;
  const double r = 0.035, top = 0.06, clearance = 0.005;
  const double yaw = 10.0 * std::numbers::pi / 180.0;
  // Spec E3: (time [s], x offset [m], lowest point below the dough top [m], yaw [rad]).
  struct Boundary {
    double time, x, depth, yaw;
  };
  const Boundary boundaries[] = {
      {0.0, 0.0, -clearance, 0.0}, {1.0, 0.0, 0.02, 0.0}, {3.0, -0.15, 0.02, 0.0}, {3.5, -0.15, -0.03, 0.0},
      {5.0, 0.0, -0.03, yaw},      {5.5, 0.0, 0.02, yaw}, {7.5, 0.12, 0.02, yaw},  {9.5, 0.0, 0.03, yaw},
  };
  for (const Boundary& boundary : boundaries) {
    tree.set_time(boundary.time);
    tree.UpdateKinematics();
    const rigid::Pose pose = tree.link_pose(link);
    EXPECT_NEAR(pose.position.x(), boundary.x, 1e-12) << "t = " << boundary.time;
    EXPECT_NEAR(pose.position.y(), 0.0, 1e-12) << "t = " << boundary.time;
    EXPECT_NEAR(pose.position.z() - r, top - boundary.depth, 1e-12) << "t = " << boundary.time;
    const Vector3 axis = pose.orientation * Vector3::UnitY();
    EXPECT_NEAR(std::atan2(-axis.x(), axis.y()), boundary.yaw, 1e-12) << "t = " << boundary.time;
    EXPECT_NEAR(axis.z(), 0.0, 1e-12);
    // Every phase starts and ends at rest (the keyframe quintic).
    EXPECT_NEAR(tree.link_spatial_velocity(link).norm(), 0.0, 1e-12) << "t = " << boundary.time;
  }
  // Mid-pass the axis moves along −x at the quintic's peak speed 15/8 · 0.15 m / 2 s.
  tree.set_time(2.0);
  tree.UpdateKinematics();
  EXPECT_NEAR(tree.link_spatial_velocity(link).tail<3>().x(), -15.0 / 8.0 * 0.15 / 2.0, 1e-12);
  EXPECT_NEAR(tree.link_pose(link).position.x(), -0.075, 1e-12);
}

TEST(DoughRolling, BadTrajectoryOrDepthsAreInputErrors) {
  EXPECT_THROW(Build(DefaultParameters({"deepen_time=3"})), InputError);
  EXPECT_THROW(Build(DefaultParameters({"press_depth=0.06"})), InputError);
  EXPECT_THROW(Build(DefaultParameters({"table_width=0.2"})), InputError);
}

TEST(DoughRolling, FirstHybridImpulseStepsStayQuietBeforeThePinArrives) {
  const ParameterSet parameters = DefaultParameters();
  BuiltScene scene = Build(parameters);
  World& world = scene.world;
  const rigid::RigidBody& pin = world.bodies[scene.pin];
  const double r = 0.035;
  EXPECT_GT(pin.pose.position.z() - r - HighestParticle(world), 0.0049);

  const auto output = std::filesystem::temp_directory_path() / "contactlab_dough_rolling_test.h5";
  std::filesystem::remove(output);
  RunRecorder recorder(output);
  scene.scenario->DeclareObservables(recorder);
  StepReport initial;
  initial.contact_wrench.resize(world.bodies.size());
  scene.scenario->Observe(world, initial, recorder);

  auto formulation = MakeFormulation({"hybrid_impulse", parameters});
  const double dt = parameters.GetDouble("dt");
  const int steps = 5;
  for (int step = 1; step <= steps; ++step) {
    const StepReport report = formulation->Step(world, dt);
    scene.scenario->Observe(world, report, recorder);
    ASSERT_EQ(report.contact_wrench.size(), world.bodies.size());
    // No particle inside the pin (nor the table). hybrid_impulse's node collisions reach
    // about a cell beyond both surfaces, so the pin may already feel the settling dough;
    // its contact force is not asserted.
    EXPECT_EQ(report.contacts, 0) << "step " << step;
  }
  // The pin has descended along the quintic of the first press, as prescribed.
  const double u = steps * dt / 1.0;
  const double descent = 0.025 * u * u * u * (10.0 - 15.0 * u + 6.0 * u * u);
  EXPECT_NEAR(pin.pose.position.z(), 0.06 + r + 0.005 - descent, 1e-9);
  EXPECT_NEAR(pin.pose.position.x(), 0.0, 1e-12);
  EXPECT_LT(HighestParticle(world), pin.pose.position.z() - r);
  // The table holds the dough (free fall would reach 0.5 m/s), nothing blows up, and the
  // pin spins far slower than it will when rolling (v / r ≈ 4 rad/s).
  double fastest = 0.0;
  for (const Vector3& v : world.particles.velocity) fastest = std::max(fastest, v.norm());
  EXPECT_LT(fastest, 0.1);
  EXPECT_LT(std::abs(world.multibody.velocities()[0]), 0.1);
  EXPECT_TRUE(pin.pose.position.allFinite());
  scene.scenario->Summarize(recorder);
  recorder.Finish("ok", "", steps, 0.0);
  EXPECT_TRUE(std::filesystem::exists(output));
  std::filesystem::remove(output);
}

std::vector<std::string> FormulationNames() {
  std::vector<std::string> names;
  for (const FormulationInfo& info : RegisteredFormulations()) names.push_back(info.name);
  return names;
}

class TableAsGridWall : public ::testing::TestWithParam<std::string> {};

TEST_P(TableAsGridWall, HoldsTheDoughWithoutContactPoints) {
  // table_model = separating: the first three steps, before the pin arrives, register no
  // contact at all; the wall holds the nodes under the dough, the dough's lowest particles
  // stay above the table top (they start s/2 = 5 mm above it) and nothing moves fast.
  const ParameterSet parameters = DefaultParameters({"table_model=separating"}, GetParam());
  BuiltScene scene = Build(parameters);
  World& world = scene.world;
  ASSERT_EQ(world.bodies[0].name, "table");
  EXPECT_EQ(world.bodies[0].grid_boundary, rigid::GridBoundary::kSeparating);
  auto formulation = MakeFormulation({GetParam(), parameters});
  for (int step = 1; step <= 3; ++step) {
    const StepReport report = formulation->Step(world, parameters.GetDouble("dt"));
    EXPECT_EQ(report.contacts, 0) << "step " << step;
    EXPECT_GT(report.grid_boundary_nodes, 0) << "step " << step;
    EXPECT_LT(report.contact_wrench[0].force.z(), 0.0) << "the table carries the dough, step " << step;
  }
  double lowest = std::numeric_limits<double>::infinity(), fastest = 0.0;
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    lowest = std::min(lowest, world.particles.position[p].z());
    fastest = std::max(fastest, world.particles.velocity[p].norm());
  }
  EXPECT_GT(lowest, 0.0);
  EXPECT_LT(fastest, 0.1);
}

INSTANTIATE_TEST_SUITE_P(DoughRolling, TableAsGridWall, ::testing::ValuesIn(FormulationNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace contactlab::experiments
