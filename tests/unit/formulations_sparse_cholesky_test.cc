// CHOLMOD wrapper: solves agree with a dense factorization, the symbolic analysis is reused
// exactly when the pattern repeats, the half solve gives the Schur-complement identity, and
// an indefinite matrix is reported rather than factored.
#include "formulations/linear_algebra/sparse_cholesky.h"

#include <random>
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

TEST(SparseCholeskyTest, HalfSolveGivesQuadraticForm) {
  const SparseMatrix matrix = RandomSpd(35, 5, 0.3);
  SparseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(matrix));
  const Eigen::MatrixXd block = Eigen::MatrixXd::Random(35, 4);
  const Eigen::MatrixXd half = cholesky.SolveLowerPermuted(block);
  const Eigen::MatrixXd expected = block.transpose() * Eigen::MatrixXd(matrix).llt().solve(block);
  EXPECT_LT((half.transpose() * half - expected).norm(), 1e-10 * expected.norm());
}

TEST(SparseCholeskyTest, IndefiniteMatrixIsReported) {
  SparseMatrix matrix = RandomSpd(20, 6, 0.5);
  matrix.coeffRef(7, 7) = -50.0;
  SparseCholesky cholesky;
  EXPECT_FALSE(cholesky.Factor(matrix));
}

}  // namespace
}  // namespace contactlab::linear_algebra
