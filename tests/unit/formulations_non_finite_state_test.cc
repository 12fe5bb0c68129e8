// A state that blows up ends the step as SimulationDiverged under every registered
// formulation, never as a crash or a read outside the grid: a non-finite particle or body
// before a step, a particle far beyond the grid's coordinate range, and material so heavy
// that its first substep overflows. The explicit formulations check the state before each
// substep; SparseGrid::Rebuild refuses what no grid can hold. Run under the sanitizer build,
// an access outside a halo box fails here as an AddressSanitizer report or a failed
// CONTACTLAB_DEBUG_CHECK.
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "mpm/sparse_grid.h"
#include "registry/registered_formulations.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;

// The formulations whose MPM step is a loop of explicit substeps.
bool HasExplicitSubsteps(const std::string& name) {
  return name == "explicit_projection" || name == "hybrid_impulse";
}

std::unique_ptr<Formulation> MakeAtDefaults(const FormulationInfo& info) {
  ParameterSet parameters;
  parameters.Declare(info.parameters);
  return MakeFormulation({info.name, parameters});
}

// Steps `world` as the run driver does until the formulation reports divergence or a step
// leaves a non-finite state (at most `steps` steps), and returns the message; fails when
// every step ends with a finite state.
std::string StepUntilDiverged(const FormulationInfo& info, World& world, int steps, double dt) {
  const std::unique_ptr<Formulation> formulation = MakeAtDefaults(info);
  for (int step = 0; step < steps; ++step) {
    try {
      formulation->Step(world, dt);
    } catch (const SimulationDiverged& diverged) {
      return diverged.what();
    }
    if (std::string bad_state = FindNonFiniteState(world); !bad_state.empty()) return bad_state;
  }
  ADD_FAILURE() << info.name << ": " << steps << " steps without a divergence";
  return "";
}

class NonFiniteState : public testing::TestWithParam<std::string> {
 protected:
  const FormulationInfo& info() const { return FindFormulation(GetParam()); }
};

TEST_P(NonFiniteState, NonFiniteParticlePositionDiverges) {
  World world = test_worlds::CubeHitsBox();
  world.particles.position[7].y() = std::numeric_limits<double>::quiet_NaN();
  const std::string message = StepUntilDiverged(info(), world, 1, 0.01);
  if (HasExplicitSubsteps(GetParam())) {
    EXPECT_NE(message.find("substep 1: particle 7"), std::string::npos) << message;
  }
}

TEST_P(NonFiniteState, InfiniteBodyVelocityDiverges) {
  World world = test_worlds::CubeHitsBox();
  world.bodies[0].angular_velocity.z() = -std::numeric_limits<double>::infinity();
  const std::string message = StepUntilDiverged(info(), world, 1, 0.01);
  if (HasExplicitSubsteps(GetParam())) {
    EXPECT_NE(message.find("rigid body 'box'"), std::string::npos) << message;
  }
}

TEST_P(NonFiniteState, ParticleBeyondTheGridRangeDiverges) {
  // Finite, but 4·10¹⁰ cells out: its block key would alias a block near the origin.
  World world = test_worlds::CubeHitsBox();
  world.particles.position[3].x() = 1e9;
  const std::string message = StepUntilDiverged(info(), world, 1, 0.01);
  EXPECT_NE(message.find("particle 3"), std::string::npos) << message;
}

TEST(ExplicitSubsteps, OverflowingExchangeDiverges) {
  // Finite, in-range densities whose exchange overflows within a step: material of 1e308
  // kg/m³ against a 1 kg box (explicit_projection hands the box a node's impulse), and a box
  // of 1e308 kg/m³ struck by the cube. Whatever they leave must not reach the next
  // substep's transfers.
  for (const bool heavy_box : {false, true}) {
    for (const std::string name : {"explicit_projection", "hybrid_impulse"}) {
      // hybrid_impulse's exchange weighs the node against the body's samples, which keeps a
      // heavy cube's impulses finite: only its heavy box overflows.
      if (name == "hybrid_impulse" && !heavy_box) continue;
      World world = test_worlds::CubeHitsBox();
      if (heavy_box) {
        world.bodies[0] = rigid::MakeFreeBody("box", world.bodies[0].geometries, 1e308, rigid::Pose{});
      } else {
        for (mpm::Material& material : world.materials) material.density = 1e308;
        for (std::size_t p = 0; p < world.particles.size(); ++p) {
          world.particles.mass[p] = 1e308 * world.particles.initial_volume[p];
        }
      }
      StepUntilDiverged(FindFormulation(name), world, 4, 0.01);
    }
  }
}

std::vector<std::string> FormulationNames() {
  std::vector<std::string> names;
  for (const FormulationInfo& info : RegisteredFormulations()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryFormulation, NonFiniteState, testing::ValuesIn(FormulationNames()),
                         [](const testing::TestParamInfo<std::string>& param) { return param.param; });

TEST(SparseGridRange, RebuildRefusesWhatNoGridCanHold) {
  mpm::SparseGrid grid(0.01);
  const Vector3 inside(0.3, -0.2, 0.1);
  for (const Vector3& outside :
       {Vector3(std::nan(""), 0.0, 0.0), Vector3(0.0, -std::numeric_limits<double>::infinity(), 0.0),
        Vector3(0.0, 0.0, 0.01 * 4.5e6), Vector3(-0.01 * 1e12, 0.0, 0.0)}) {
    EXPECT_THROW(grid.Rebuild({inside, outside}), mpm::ParticleOutsideGrid) << outside.transpose();
  }
  // At the edge of the range the grid still works, and both particles have blocks of their own.
  grid.Rebuild({inside, Vector3(0.01 * 3.9e6, 0.0, 0.0)});
  EXPECT_EQ(grid.num_particle_blocks(), 2);
}

}  // namespace
}  // namespace contactlab
