// stack ([ding_schroeder_penalty] Fig. 3 right, spec-penalty-hybrid §4.4): which layer strings need rigid–rigid
// contact, the default stack (five 1 kg blocks, three rigid and two MPM, each resting on the one
// below), the checks of `layers` and `stagger`, and a coarse penalty run in which the stack
// stands: no block moves sideways by stand_fraction · block_size, the ground carries the whole
// weight, and the top block settles by the MPM blocks' elastic compression plus the depth that
// the auto stiffness gives every contact below it.
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>

#include <gtest/gtest.h>

#include "experiments/scenario.h"
#include "experiments/scenarios/stack.h"
#include "mpm/sampling.h"
#include "rigid/shape.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

ParameterSet Parameters(const std::vector<std::string>& overrides = {}) {
  return SceneParameters("stack", "penalty", overrides);
}

World Build(const ParameterSet& parameters, std::unique_ptr<Scenario>* scenario_out = nullptr) {
  World world;
  std::unique_ptr<Scenario> scenario = FindScenario("stack").factory();
  scenario->Build(parameters, world);
  if (scenario_out != nullptr) *scenario_out = std::move(scenario);
  return world;
}

double LowestZ(const World& world, int begin, int end) {
  double lowest = std::numeric_limits<double>::infinity();
  for (int p = begin; p < end; ++p) lowest = std::min(lowest, world.particles.position[p].z());
  return lowest;
}

double HighestZ(const World& world, int begin, int end) {
  double highest = -std::numeric_limits<double>::infinity();
  for (int p = begin; p < end; ++p) highest = std::max(highest, world.particles.position[p].z());
  return highest;
}

double MeanX(const World& world, int begin, int end) {
  double sum = 0.0;
  for (int p = begin; p < end; ++p) sum += world.particles.position[p].x();
  return sum / (end - begin);
}

TEST(Stack, DefaultStackHasFiveOneKilogramBlocksEachOnTheOneBelow) {
  const World world = Build(Parameters());
  // Ground and the rigid blocks 0, 2, 4; MPM blocks 1 and 3 of 10³ particles (h 0.02 m, 8 per cell).
  ASSERT_EQ(world.bodies.size(), 4u);
  EXPECT_EQ(world.bodies[0].motion, rigid::BodyMotion::kStatic);
  ASSERT_EQ(world.particles.size(), 2000u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 2.0, 1e-12);
  for (int b = 1; b <= 3; ++b) {
    EXPECT_TRUE(world.bodies[b].is_free());
    EXPECT_NEAR(world.bodies[b].mass, 1.0, 1e-12) << world.bodies[b].name;
  }
  EXPECT_EQ(world.bodies[1].name, "block0");
  EXPECT_EQ(world.bodies[3].name, "block4");
  // Heights from the ground up (lattice spacing 0.01 m): rigid face on the ground, MPM lowest
  // layer on the rigid face below, rigid face on the MPM top layer; neighbours ±5 mm along x.
  const double a = 0.1, s = 0.01;
  EXPECT_NEAR(world.bodies[1].pose.position.z(), 0.5 * a, 1e-12);
  EXPECT_NEAR(world.bodies[1].pose.position.x(), -0.005, 1e-15);
  EXPECT_NEAR(LowestZ(world, 0, 1000), a, 1e-12);
  EXPECT_NEAR(HighestZ(world, 0, 1000), 2.0 * a - s, 1e-12);
  EXPECT_NEAR(MeanX(world, 0, 1000), 0.005, 1e-12);
  EXPECT_NEAR(world.bodies[2].pose.position.z(), 2.0 * a - s + 0.5 * a, 1e-12);
  EXPECT_NEAR(LowestZ(world, 1000, 2000), 3.0 * a - s, 1e-12);
  EXPECT_NEAR(world.bodies[3].pose.position.z(), 4.0 * a - 2.0 * s + 0.5 * a, 1e-12);
  EXPECT_NEAR(world.bodies[3].pose.position.x(), -0.005, 1e-15);
}

TEST(Stack, LayersAndStaggerAreChecked) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(Parameters(overrides)); });
  };
  EXPECT_NE(message({"layers=rmx"}).find("layers"), std::string::npos);
  EXPECT_NE(message({"layers=rmrmrmrmrmr"}).find("layers"), std::string::npos);
  EXPECT_NE(message({"stagger=0.05"}).find("'stagger'"), std::string::npos);
  EXPECT_NE(message({"settle_time=3"}).find("'settle_time'"), std::string::npos);

  // Two MPM blocks: the upper lattice continues one spacing above the lower; no rigid body
  // but the ground.
  const World mpm_only = Build(Parameters({"layers=mm", "stagger=0"}));
  ASSERT_EQ(mpm_only.particles.size(), 2000u);
  EXPECT_EQ(mpm_only.bodies.size(), 1u);
  EXPECT_NEAR(LowestZ(mpm_only, 0, 1000), 0.0, 1e-15);
  EXPECT_NEAR(LowestZ(mpm_only, 1000, 2000) - HighestZ(mpm_only, 0, 1000), 0.01, 1e-12);
}

TEST(Stack, CoarsePenaltyRunStandsOnTheGround) {
  // 64 particles per MPM block (h 0.05 m), 0.5 s: the stack settles within 0.2 s.
  const ParameterSet parameters = Parameters({"grid_spacing=0.05", "duration=0.5", "settle_time=0.2"});
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  ASSERT_EQ(world.particles.size(), 128u);
  const auto output = std::filesystem::temp_directory_path() / "contactlab_stack_test.h5";
  RecordShortRun(*scenario, world, "penalty", parameters, 50, 0.01, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  for (const char* name : {"top_drift", "top_settling", "block_height", "block_drift", "ground_normal_force"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/timeseries/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  signed char stood = 0;
  const hid_t attribute = H5Aopen_by_name(file, "summary", "stood", H5P_DEFAULT, H5P_DEFAULT);
  H5Aread(attribute, H5T_NATIVE_SCHAR, &stood);
  H5Aclose(attribute);
  const double max_block_drift = ReadSummaryDouble(file, "max_block_drift");
  const double max_drift = ReadSummaryDouble(file, "max_drift");
  const double ground_load = ReadSummaryDouble(file, "ground_load_ratio");
  const double settling = ReadSummaryDouble(file, "final_top_settling");
  H5Fclose(file);
  std::filesystem::remove(output);

  EXPECT_EQ(stood, 1) << "max_block_drift " << max_block_drift;
  EXPECT_LE(max_drift, max_block_drift);
  // The ground carries the five blocks' weight once they rest.
  EXPECT_NEAR(ground_load, 1.0, 0.02);
  // The top block settles by the MPM blocks' elastic compression, (W_above / A + ρ g a / 2)(a − s) / E
  // each (uniaxial stress), plus the depth of the five contacts below its centre. Under the auto
  // stiffness a pair has k = max(m ω², M_w ℓ), ω = 2π/Δt, M_w = λ + 2μ of the blocks' material
  // and ℓ the pair's size (an MPM particle's V^(1/3) = s, a surface sample's spacing h/2), so a
  // contact carrying W sinks W g / (n k) on its n pairs: a rigid block's face holds a sixth of its
  // samples, an MPM block's bottom or top layer (a/s)² particles. Neighbours overlap on
  // a − 2 · stagger of their width, so the contacts between blocks carry their load on that share
  // of their pairs. The prediction leaves out the tilt of the staggered blocks: a quarter of it
  // is allowed.
  const double a = 0.1, s = 0.025, h = 0.05, g = 9.81, block_mass = 1.0;
  const double youngs = parameters.GetDouble("youngs_modulus"), poisson = parameters.GetDouble("poisson_ratio");
  const double elastic = (3.5 + 1.5) * g / (a * a) * (a - s) / youngs;  // blocks 1 (3 kg above) and 3 (1 kg)
  const double omega = 2.0 * std::numbers::pi / parameters.GetDouble("dt");
  const double modulus = youngs * (1.0 - poisson) / ((1.0 + poisson) * (1.0 - 2.0 * poisson));
  const double samples =
      static_cast<double>(rigid::Shape::Box(Vector3::Constant(0.5 * a)).SampleSurface(0.5 * h).size());
  const double sample_stiffness = std::max(block_mass / samples * omega * omega, modulus * 0.5 * h);
  const double particle_stiffness = std::max(block_mass * std::pow(s / a, 3) * omega * omega, modulus * s);
  const double rigid_face = samples / 6.0 * sample_stiffness, mpm_layer = (a / s) * (a / s) * particle_stiffness;
  const double overlap = a / (a - 2.0 * parameters.GetDouble("stagger"));
  const double ground = 5.0 * block_mass * g / rigid_face;
  const double between = (4.0 + 3.0 + 2.0 + 1.0) * block_mass * g / mpm_layer * overlap;
  const double predicted = elastic + ground + between;
  EXPECT_NEAR(settling, -predicted, 0.25 * predicted)
      << "elastic " << elastic << " m, ground " << ground << " m, between blocks " << between << " m";
}

}  // namespace
}  // namespace contactlab::experiments
