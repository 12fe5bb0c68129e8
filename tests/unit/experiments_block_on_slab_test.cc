// block_on_slab (spec-penalty-hybrid §4.7 item 4): the uniaxial-strain estimate, the default
// scene (a 2 kg block on a 4,000-particle slab, each resting on what is below it), the input
// checks, a short run under every formulation that records every observable, and a longer run
// under penalty and sap in which the block comes to rest where the estimate puts it.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/scenario.h"
#include "experiments/scenarios/block_on_slab.h"
#include "mpm/sampling.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

World Build(const ParameterSet& parameters, std::unique_ptr<Scenario>* scenario_out = nullptr) {
  return BuildScene("block_on_slab", parameters, scenario_out);
}

// Runs `formulation` on the scene with `overrides` for duration / dt steps and returns the
// summary attributes named in `names`, checking that every series was written.
std::map<std::string, double> RunAndSummarize(const std::string& formulation, const std::vector<std::string>& overrides,
                                              const std::vector<std::string>& names) {
  const ParameterSet parameters = SceneParameters("block_on_slab", formulation, overrides);
  std::unique_ptr<Scenario> scenario;
  World world = Build(parameters, &scenario);
  const double dt = parameters.GetDouble("dt");
  const int steps = static_cast<int>(std::llround(parameters.GetDouble("duration") / dt));
  const auto output = std::filesystem::temp_directory_path() / ("contactlab_block_on_slab_" + formulation + ".h5");
  RecordShortRun(*scenario, world, formulation, parameters, steps, dt, output);
  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  for (const char* name : {"block_height", "block_bottom_height", "slab_compression", "block_drift", "block_tilt",
                           "contacts", "max_penetration"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/timeseries/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  for (const char* name : {"block_bottom_height", "slab_compression"}) {
    EXPECT_GT(H5Lexists(file, (std::string("/analytic/") + name).c_str(), H5P_DEFAULT), 0) << name;
  }
  std::map<std::string, double> summary;
  for (const std::string& name : names) summary[name] = ReadSummaryDouble(file, name);
  H5Fclose(file);
  std::filesystem::remove(output);
  return summary;
}

TEST(BlockOnSlabAnalytic, ConstrainedModulusAndCompression) {
  EXPECT_DOUBLE_EQ(ConstrainedModulus(5e4, 0.0), 5e4);
  EXPECT_NEAR(ConstrainedModulus(1.0, 0.3), 0.7 / (1.3 * 0.4), 1e-15);
  EXPECT_NEAR(ConstrainedModulus(1.0, 0.25), 1.2, 1e-15);
  // Defaults: p = 2 kg g / 0.01 m² = 1962 Pa, slab self-weight ρ g H / 2 = 245.25 Pa, span
  // 0.045 m, M = 67,308 Pa: 1.476 mm, of which the block's pressure makes 1.312 mm.
  const double modulus = ConstrainedModulus(5e4, 0.3);
  EXPECT_NEAR(SlabCompression(1962.0, 1000.0, 9.81, 0.05, 0.045, modulus), 1.4757e-3, 1e-7);
  EXPECT_NEAR(SlabCompression(1962.0, 0.0, 9.81, 0.05, 0.045, modulus), 1.3117e-3, 1e-7);
}

TEST(BlockOnSlab, DefaultBlockRestsOnTheSlabAndTheSlabOnTheGround) {
  const World world = Build(SceneParameters("block_on_slab", "sap"));
  // 0.1 × 0.1 × 0.05 m at particle spacing 0.005 m: 20 × 20 × 10 particles, exactly 0.5 kg.
  EXPECT_EQ(world.particles.size(), 4000u);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 0.5, 1e-12);
  ASSERT_EQ(world.bodies.size(), 2u);
  EXPECT_EQ(world.bodies[0].motion, rigid::BodyMotion::kStatic);
  const rigid::RigidBody& block = world.bodies[1];
  EXPECT_TRUE(block.is_free());
  EXPECT_NEAR(block.mass, 2.0, 1e-12);
  // Lowest layer on the ground, the block's bottom face on the top layer (400 particles each).
  int bottom = 0, top = 0;
  for (const Vector3& x : world.particles.position) {
    EXPECT_GT(x.z(), -1e-15);
    EXPECT_LT(x.z(), 0.045 + 1e-12);
    if (std::abs(x.z()) < 1e-12) ++bottom;
    if (std::abs(x.z() - 0.045) < 1e-12) ++top;
  }
  EXPECT_EQ(bottom, 400);
  EXPECT_EQ(top, 400);
  EXPECT_NEAR(block.pose.position.z() - 0.05, 0.045, 1e-12);
}

TEST(BlockOnSlab, BadCombinationsNameTheirKeys) {
  auto message = [](const std::vector<std::string>& overrides) {
    return InputErrorMessage([&] { Build(SceneParameters("block_on_slab", "sap", overrides)); });
  };
  EXPECT_NE(message({"settle_time=2"}).find("'settle_time'"), std::string::npos);
  // h = 0.2 m: particle spacing 0.1 m, a single layer through the 5 cm slab.
  EXPECT_NE(message({"grid_spacing=0.2"}).find("'slab_thickness'"), std::string::npos);
}

class BlockOnSlabEveryFormulation : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockOnSlabEveryFormulation, ShortRunRecordsEverySeriesAndTheSlabCarriesTheBlock) {
  // 32 particles (h 0.05 m), ten steps of 10 ms.
  const std::map<std::string, double> summary =
      RunAndSummarize(GetParam(), {"grid_spacing=0.05", "duration=0.1", "settle_time=0.01"},
                      {"compression", "analytic_compression", "uniaxial_stress_compression", "final_bottom_height",
                       "sinking_rate", "height_error", "equilibrium_height", "max_tilt"});
  for (const auto& [name, value] : summary) EXPECT_TRUE(std::isfinite(value)) << name;
  // The slab is squeezed, not stretched, and the block is still above the ground.
  EXPECT_GT(summary.at("compression"), 0.0);
  EXPECT_GT(summary.at("final_bottom_height"), 0.0);
}

std::string FormulationName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

INSTANTIATE_TEST_SUITE_P(BlockOnSlab, BlockOnSlabEveryFormulation,
                         ::testing::Values("penalty", "sap", "quasi_newton", "hybrid_impulse"), FormulationName);

TEST(BlockOnSlab, ExplicitProjectionCarriesTheBlockOnASlabOfTwoCells) {
  // The baseline needs nodes inside the slab: at h 0.05 m the 5 cm slab is one cell thick,
  // every node under the block lies on the ground or on the block's face, both projected,
  // and the block reaches the ground within 0.6 s (measured: bottom at -3e-7 m; a 10 cm slab
  // at the same h carries it, bottom at 34 mm). At h 0.02 m the default slab carries it.
  const std::map<std::string, double> summary =
      RunAndSummarize("explicit_projection", {"grid_spacing=0.02", "duration=0.3", "settle_time=0.1"},
                      {"compression", "analytic_compression", "final_bottom_height"});
  for (const auto& [name, value] : summary) EXPECT_TRUE(std::isfinite(value)) << name;
  EXPECT_GT(summary.at("compression"), 0.0);
  // Above the ground by more than half the slab (the slab top is at 45 mm).
  EXPECT_GT(summary.at("final_bottom_height"), 0.025) << "compression " << summary.at("compression") << " m";
}

// With ν = 0 the slab has no sideways strain to bulge with, so the uniaxial-strain estimate is
// the exact static compression of the continuum. The load enters the discrete slab at its
// outer particle layers, whose place in the material is resolved to a lattice spacing s, so
// the measured compression may differ from the estimate by s / H_s relative (H_s the span
// between those layers); at h = 0.02 m and H = 0.1 m that is 11% (penalty and sap give
// about −5%, the same to 0.1%: an MPM discretization effect, not a contact one).
// Measured today outside this test (h = 0.02 m, 0.6 s): hybrid_impulse with the thesis'
// sample mass keeps sinking at centimetres per second (the creep spec §3.6 predicts), and
// quasi_newton at dt = 10 ms bounces on the slab with growing amplitude and tilts (stable at
// dt = 2 ms, whose compression matches penalty's), so neither is held to these bounds yet.
class BlockOnSlabAtRest : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockOnSlabAtRest, BlockComesToRestAtTheUniaxialStrainCompression) {
  const std::map<std::string, double> summary = RunAndSummarize(
      GetParam(), {"grid_spacing=0.02", "poisson_ratio=0", "slab_thickness=0.1", "duration=0.6", "settle_time=0.3"},
      {"compression", "analytic_compression", "compression_error", "sinking_rate", "height_error", "layer_span",
       "max_tilt"});
  const double analytic = summary.at("analytic_compression");
  const double spacing = 0.01;  // h / ∛8
  const double tolerance = spacing / summary.at("layer_span");
  EXPECT_NEAR(summary.at("layer_span"), 0.09, 1e-12);
  EXPECT_LT(std::abs(summary.at("compression_error")), tolerance)
      << "compression " << summary.at("compression") << " m, estimate " << analytic << " m";
  // At rest: over the 0.3 s fit window the block moves by less than a tenth of the
  // compression (hybrid_impulse's creep moves it by several compressions).
  EXPECT_LT(std::abs(summary.at("sinking_rate")) * 0.3, 0.1 * analytic) << summary.at("sinking_rate") << " m/s";
  // Its bottom rests within half the compression of the estimated height: contact depth and
  // gaps are a fraction of it.
  EXPECT_LT(std::abs(summary.at("height_error")), 0.5 * analytic);
  EXPECT_LT(summary.at("max_tilt"), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(BlockOnSlab, BlockOnSlabAtRest, ::testing::Values("penalty", "sap"), FormulationName);

}  // namespace
}  // namespace contactlab::experiments
