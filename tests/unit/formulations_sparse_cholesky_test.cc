// CHOLMOD wrapper: solves agree with a dense factorization, the symbolic analysis is reused
// exactly when the pattern repeats, the trailing block gives the Schur complement, an
// indefinite matrix is reported rather than factored, and the fill-reducing ordering is
// AMD's unless METIS needs fewer flops on a large problem.
#include "formulations/linear_algebra/sparse_cholesky.h"

#include <cholmod.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Cholesky>

namespace contactlab::linear_algebra {
namespace {

// A random sparse SPD matrix: a 1-D chain with second neighbours plus a diagonal shift.
SparseMatrix RandomSpd(int size, unsigned seed, double shift) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(size, size);
  for (int i = 0; i < size; ++i) {
    for (int j = i; j < std::min(size, i + 3); ++j) {
      const double value = uniform(generator);
      dense(i, j) += value;
      dense(j, i) += (i == j) ? 0.0 : value;
    }
  }
  dense = dense * dense.transpose();
  dense.diagonal().array() += shift;
  return dense.sparseView();
}

TEST(SparseCholeskyTest, SolveMatchesDense) {
  const SparseMatrix matrix = RandomSpd(40, 1, 0.5);
  SparseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(matrix));
  const Eigen::MatrixXd rhs = Eigen::MatrixXd::Random(40, 3);
  const Eigen::MatrixXd expected = Eigen::MatrixXd(matrix).llt().solve(rhs);
  EXPECT_LT((cholesky.Solve(rhs) - expected).norm(), 1e-10 * expected.norm());
  const Eigen::VectorXd column = cholesky.Solve(Eigen::VectorXd(rhs.col(1)));
  EXPECT_LT((column - expected.col(1)).norm(), 1e-10 * expected.norm());
}

TEST(SparseCholeskyTest, LowerTriangleAloneIsEnough) {
  const SparseMatrix full = RandomSpd(25, 2, 0.5);
  const SparseMatrix lower = full.triangularView<Eigen::Lower>();
  SparseCholesky from_full;
  SparseCholesky from_lower;
  ASSERT_TRUE(from_full.Factor(full));
  ASSERT_TRUE(from_lower.Factor(lower));
  const Eigen::VectorXd rhs = Eigen::VectorXd::LinSpaced(25, -1.0, 2.0);
  EXPECT_LT((from_full.Solve(rhs) - from_lower.Solve(rhs)).norm(), 1e-12 * rhs.norm());
}

TEST(SparseCholeskyTest, SymbolicAnalysisReusedOnlyForSamePattern) {
  SparseCholesky cholesky;
  SparseMatrix matrix = RandomSpd(30, 3, 0.5);
  ASSERT_TRUE(cholesky.Factor(matrix));
  matrix.coeffs() *= 2.0;  // same pattern, new values
  ASSERT_TRUE(cholesky.Factor(matrix));
  EXPECT_EQ(cholesky.symbolic_analyses(), 1);
  EXPECT_EQ(cholesky.numeric_factorizations(), 2);
  const Eigen::VectorXd rhs = Eigen::VectorXd::Ones(30);
  const Eigen::VectorXd expected = Eigen::MatrixXd(matrix).llt().solve(rhs);
  EXPECT_LT((cholesky.Solve(rhs) - expected).norm(), 1e-10 * expected.norm());
  // A different pattern forces a new analysis.
  ASSERT_TRUE(cholesky.Factor(RandomSpd(31, 4, 0.5)));
  EXPECT_EQ(cholesky.symbolic_analyses(), 2);
}

// A_PP − A_PN A_NN⁻¹ A_NP by dense linear algebra, the reference for the trailing block.
Eigen::MatrixXd DenseSchurComplement(const SparseMatrix& matrix, const std::vector<int>& last) {
  const Eigen::MatrixXd dense(matrix);
  std::vector<int> others;
  for (int unknown = 0; unknown < dense.rows(); ++unknown) {
    if (std::find(last.begin(), last.end(), unknown) == last.end()) others.push_back(unknown);
  }
  const auto block = [&](const std::vector<int>& rows, const std::vector<int>& columns) {
    Eigen::MatrixXd result(rows.size(), columns.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < columns.size(); ++j) result(i, j) = dense(rows[i], columns[j]);
    }
    return result;
  };
  const Eigen::MatrixXd coupling = block(others, last);
  return block(last, last) - coupling.transpose() * block(others, others).llt().solve(coupling);
}

TEST(SparseCholeskyTest, TrailingBlockGivesTheSchurComplement) {
  const SparseMatrix matrix = RandomSpd(40, 5, 0.3);
  // Unsorted, spread over the matrix, so that neither their order nor their place is free.
  const std::vector<int> last = {31, 4, 17, 39, 0, 22, 9};
  SparseCholesky cholesky;
  Eigen::MatrixXd trailing;
  ASSERT_TRUE(cholesky.FactorWithTrailingBlock(matrix, last, trailing));
  ASSERT_EQ(trailing.rows(), 7);
  EXPECT_TRUE(trailing.isLowerTriangular(0.0));
  const Eigen::MatrixXd expected = DenseSchurComplement(matrix, last);
  EXPECT_LT((trailing * trailing.transpose() - expected).norm(), 1e-12 * expected.norm());
  // The factorization is A's: Solve still solves with the whole matrix.
  const Eigen::VectorXd rhs = Eigen::VectorXd::LinSpaced(40, -1.0, 2.0);
  EXPECT_LT((matrix * cholesky.Solve(rhs) - rhs).norm(), 1e-10 * rhs.norm());
}

TEST(SparseCholeskyTest, TrailingBlockEdgeCasesAndAnalysisReuse) {
  const SparseMatrix matrix = RandomSpd(12, 8, 0.4);
  SparseCholesky cholesky;
  Eigen::MatrixXd trailing;
  // Nothing last: an ordinary factorization.
  ASSERT_TRUE(cholesky.FactorWithTrailingBlock(matrix, {}, trailing));
  EXPECT_EQ(trailing.size(), 0);
  // Everything last: L Lᵀ is the whole matrix, in the given order.
  std::vector<int> all(12);
  for (int k = 0; k < 12; ++k) all[k] = 11 - k;
  ASSERT_TRUE(cholesky.FactorWithTrailingBlock(matrix, all, trailing));
  EXPECT_LT((trailing * trailing.transpose() - DenseSchurComplement(matrix, all)).norm(), 1e-12 * trailing.norm());
  EXPECT_EQ(cholesky.symbolic_analyses(), 2);
  // The same pattern and trailing set reuse the analysis; Factor after it analyses anew.
  ASSERT_TRUE(cholesky.FactorWithTrailingBlock(SparseMatrix(2.0 * matrix), all, trailing));
  EXPECT_EQ(cholesky.symbolic_analyses(), 2);
  ASSERT_TRUE(cholesky.Factor(matrix));
  EXPECT_EQ(cholesky.symbolic_analyses(), 3);
  // Repeated or out-of-range unknowns are a caller's error.
  EXPECT_THROW((void)cholesky.FactorWithTrailingBlock(matrix, {3, 3}, trailing), std::invalid_argument);
  EXPECT_THROW((void)cholesky.FactorWithTrailingBlock(matrix, {12}, trailing), std::invalid_argument);
  // Not positive definite: reported, as by Factor.
  SparseMatrix indefinite = matrix;
  indefinite.coeffRef(5, 5) = -50.0;
  EXPECT_FALSE(cholesky.FactorWithTrailingBlock(indefinite, {1, 2}, trailing));
}

TEST(SparseCholeskyTest, IndefiniteMatrixIsReported) {
  SparseMatrix matrix = RandomSpd(20, 6, 0.5);
  matrix.coeffRef(7, 7) = -50.0;
  SparseCholesky cholesky;
  EXPECT_FALSE(cholesky.Factor(matrix));
}

// An SPD matrix with the MPM grid's coupling: every node of an n × n × n grid coupled to the
// nodes within two cells in each direction (the 125-node stencil of quadratic B-splines),
// one unknown per node, made diagonally dominant.
SparseMatrix GridStencilSpd(int nodes_per_side) {
  const int size = nodes_per_side * nodes_per_side * nodes_per_side;
  const auto index = [&](int i, int j, int k) { return (i * nodes_per_side + j) * nodes_per_side + k; };
  std::vector<Eigen::Triplet<double>> triplets;
  for (int i = 0; i < nodes_per_side; ++i) {
    for (int j = 0; j < nodes_per_side; ++j) {
      for (int k = 0; k < nodes_per_side; ++k) {
        int neighbours = 0;
        for (int a = std::max(0, i - 2); a <= std::min(nodes_per_side - 1, i + 2); ++a) {
          for (int b = std::max(0, j - 2); b <= std::min(nodes_per_side - 1, j + 2); ++b) {
            for (int c = std::max(0, k - 2); c <= std::min(nodes_per_side - 1, k + 2); ++c) {
              if (index(a, b, c) == index(i, j, k)) continue;
              triplets.emplace_back(index(i, j, k), index(a, b, c), -1.0);
              ++neighbours;
            }
          }
        }
        triplets.emplace_back(index(i, j, k), index(i, j, k), neighbours + 1.0);
      }
    }
  }
  SparseMatrix matrix(size, size);
  matrix.setFromTriplets(triplets.begin(), triplets.end());
  return matrix;
}

// CHOLMOD's flop count for one factorization of `matrix` ordered by AMD alone.
double MinimumDegreeFlops(const SparseMatrix& matrix) {
  const SparseMatrix lower = matrix.triangularView<Eigen::Lower>();
  cholmod_common common;
  cholmod_start(&common);
  common.nmethods = 1;
  common.method[0].ordering = CHOLMOD_AMD;
  cholmod_sparse view{};
  view.nrow = view.ncol = static_cast<size_t>(lower.rows());
  view.nzmax = static_cast<size_t>(lower.nonZeros());
  view.p = const_cast<int*>(lower.outerIndexPtr());
  view.i = const_cast<int*>(lower.innerIndexPtr());
  view.x = const_cast<double*>(lower.valuePtr());
  view.stype = -1;
  view.itype = CHOLMOD_INT;
  view.xtype = CHOLMOD_REAL;
  view.dtype = CHOLMOD_DOUBLE;
  view.sorted = 1;
  view.packed = 1;
  cholmod_factor* factor = cholmod_analyze(&view, &common);
  const double flops = common.fl;
  cholmod_free_factor(&factor, &common);
  cholmod_finish(&common);
  return flops;
}

TEST(SparseCholeskyTest, SmallProblemKeepsMinimumDegreeOrdering) {
  SparseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(RandomSpd(40, 7, 0.5)));
  EXPECT_EQ(cholesky.ordering(), CHOLMOD_AMD);
}

TEST(SparseCholeskyTest, LargeGridStencilGetsNestedDissectionWithFewerFlops) {
  const SparseMatrix matrix = GridStencilSpd(16);
  const double minimum_degree_flops = MinimumDegreeFlops(matrix);
  ASSERT_GT(minimum_degree_flops, 1.0e9);  // large enough for METIS to be tried
  SparseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(matrix));
  EXPECT_EQ(cholesky.ordering(), CHOLMOD_METIS);
  EXPECT_LT(cholesky.factorization_flops(), 0.9 * minimum_degree_flops);
  const Eigen::VectorXd rhs = Eigen::VectorXd::LinSpaced(matrix.rows(), -1.0, 1.0);
  const Eigen::VectorXd solution = cholesky.Solve(rhs);
  EXPECT_LT((matrix * solution - rhs).norm(), 1e-10 * rhs.norm());
}

TEST(SparseCholeskyTest, TrailingBlockOnTheGridStencil) {
  // Large enough for METIS to order the other block; the trailing unknowns a patch of nodes.
  const SparseMatrix matrix = GridStencilSpd(12);
  std::vector<int> last;
  for (int node = 700; node < 760; node += 3) last.push_back(node);
  SparseCholesky cholesky;
  Eigen::MatrixXd trailing;
  ASSERT_TRUE(cholesky.FactorWithTrailingBlock(matrix, last, trailing));
  const Eigen::MatrixXd expected = DenseSchurComplement(matrix, last);
  EXPECT_LT((trailing * trailing.transpose() - expected).norm(), 1e-11 * expected.norm());
}

}  // namespace
}  // namespace contactlab::linear_algebra
