// The lower bound of sap's bounded_block_diagonal Delassus estimate (material_pieces.h): the
// pieces of MPM material and their masses, and the bound x A⁻¹ xᵀ ≥ 1/M_piece against the
// exact value from a dense inverse of A_MPM, for a stiff cube (where the block-diagonal
// estimate falls far below the bound) and a soft one.
#include <cmath>
#include <cstdio>
#include <limits>

#include <gtest/gtest.h>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/sap/material_pieces.h"
#include "mpm/bspline.h"
#include "mpm/transfers.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Matrix3;
using mpm::Vector3;
using test_worlds::AddCube;

// Two separate cubes (stiffness E) one step into an implicit solve: A_MPM and the pieces.
struct TwoCubes {
  World world;
  mpm::SparseGrid grid{0.05};
  dynamics::ImplicitMpm implicit_mpm;
  linear_algebra::SparseMatrix matrix;
  std::vector<double> piece_mass;

  explicit TwoCubes(double youngs_modulus) {
    world.grid_spacing = 0.05;
    world.gravity = Vector3(0.0, 0.0, -9.81);
    AddCube(world, Vector3(0.0, 0.0, 0.0), 0.2, 500.0, youngs_modulus, Vector3::Zero());
    AddCube(world, Vector3(0.5, 0.0, 0.0), 0.1, 800.0, youngs_modulus, Vector3::Zero());
    mpm::ParticleToGrid(world.particles, world.materials, /*stress_dt=*/0.0, grid);
    implicit_mpm.Setup(grid, world.particles, world.materials, world.gravity, 0.01);
    matrix = implicit_mpm.Hessian(implicit_mpm.start_velocity());
    piece_mass = sap::MaterialPieceMasses(matrix, implicit_mpm);
  }

  // The contact Jacobian row of particle p along `axis` (weights w_ip on its stencil nodes).
  Eigen::VectorXd ContactRow(int p, int axis) const {
    Eigen::VectorXd row = Eigen::VectorXd::Zero(matrix.cols());
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(world.particles.position[p], grid.spacing());
    for (int cz = 0; cz < 3; ++cz) {
      for (int cy = 0; cy < 3; ++cy) {
        for (int cx = 0; cx < 3; ++cx) {
          const int node = grid.FindNode(stencil.base_node + mpm::NodeCoordinate(cx, cy, cz));
          if (node < 0) continue;
          const int active = implicit_mpm.ActiveIndexOfGridNode(node);
          if (active >= 0) row[3 * active + axis] += stencil.Weight(cx, cy, cz);
        }
      }
    }
    return row;
  }
  int ActiveNodeOf(int p) const {
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(world.particles.position[p], grid.spacing());
    return implicit_mpm.ActiveIndexOfGridNode(grid.FindNode(stencil.base_node + mpm::NodeCoordinate(1, 1, 1)));
  }
};

double CubeMass(const World& world, int material) {
  double mass = 0.0;
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    if (world.particles.material[p] == material) mass += world.particles.mass[p];
  }
  return mass;
}

TEST(SapDelassus, EachCubeIsOnePieceWithItsOwnMass) {
  const TwoCubes cubes(1e5);
  const double first = CubeMass(cubes.world, 0), second = CubeMass(cubes.world, 1);
  for (std::size_t p = 0; p < cubes.world.particles.size(); ++p) {
    const double expected = cubes.world.particles.material[p] == 0 ? first : second;
    ASSERT_NEAR(cubes.piece_mass[cubes.ActiveNodeOf(static_cast<int>(p))], expected, 1e-12 * expected) << p;
  }
  EXPECT_GT(std::abs(first - second), 0.5 * second);  // the two pieces are told apart
}

// For every surface particle of the first cube and each axis: the exact MPM mobility
// x A⁻¹ xᵀ, the block-diagonal estimate Σ_i w_ip² (A_ii⁻¹)_aa and the bound 1/M_piece.
struct MobilityRange {
  double exact_over_bound_min = std::numeric_limits<double>::infinity();
  double exact_over_bound_max = 0.0;
  double block_over_bound_max = 0.0;
};

MobilityRange CompareMobilities(const TwoCubes& cubes) {
  const Eigen::MatrixXd dense = Eigen::MatrixXd(cubes.matrix);
  const Eigen::LLT<Eigen::MatrixXd> factor(dense);
  MobilityRange range;
  for (std::size_t p = 0; p < cubes.world.particles.size(); ++p) {
    const Vector3& x = cubes.world.particles.position[p];
    if (cubes.world.particles.material[p] != 0 || x.x() > 0.02) continue;  // the cube's face at x = 0
    const double bound = 1.0 / cubes.piece_mass[cubes.ActiveNodeOf(static_cast<int>(p))];
    for (int axis = 0; axis < 3; ++axis) {
      const Eigen::VectorXd row = cubes.ContactRow(static_cast<int>(p), axis);
      const double exact = row.dot(factor.solve(row));
      double block = 0.0;
      for (int node = 0; node < dense.cols() / 3; ++node) {
        const double weight = row[3 * node + axis];
        if (weight == 0.0) continue;
        const Matrix3 node_block = dense.block<3, 3>(3 * node, 3 * node);
        block += weight * weight * node_block.inverse()(axis, axis);
      }
      range.exact_over_bound_min = std::min(range.exact_over_bound_min, exact / bound);
      range.exact_over_bound_max = std::max(range.exact_over_bound_max, exact / bound);
      range.block_over_bound_max = std::max(range.block_over_bound_max, block / bound);
    }
  }
  return range;
}

TEST(SapDelassus, ExactMobilityNeverFallsBelowOneOverPieceMass) {
  for (const double youngs_modulus : {1e9, 1e4}) {
    const MobilityRange range = CompareMobilities(TwoCubes(youngs_modulus));
    std::printf("E = %.0e Pa: exact / bound in [%.3f, %.3f], block-diagonal / bound at most %.3g\n", youngs_modulus,
                range.exact_over_bound_min, range.exact_over_bound_max, range.block_over_bound_max);
    EXPECT_GE(range.exact_over_bound_min, 1.0 - 1e-9) << youngs_modulus;
    if (youngs_modulus > 1e8) {
      // Stiff: the cube moves almost rigidly, so the exact value stays within the rigid
      // cube's point mobility (1/M + |r × e|²/I ≤ 4/M on its surface), while the
      // block-diagonal estimate, which ignores that neighbouring nodes move together, is far
      // below the bound: what bounded_block_diagonal corrects.
      EXPECT_LT(range.exact_over_bound_max, 4.5);
      EXPECT_LT(range.block_over_bound_max, 0.1);
    }
  }
}

}  // namespace
}  // namespace contactlab
