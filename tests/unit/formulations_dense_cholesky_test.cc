// LAPACK-backed dense Cholesky: solves and half solves agree with Eigen's factorization, an indefinite or
// non-finite matrix is reported rather than factored, only the lower triangle is read, and
// L Lᵀ through dlauum matches the plain product.
#include "formulations/linear_algebra/dense_cholesky.h"

#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>
#include <Eigen/Cholesky>

namespace contactlab::linear_algebra {
namespace {

Eigen::MatrixXd RandomSpd(int size, double shift) {
  const Eigen::MatrixXd random = Eigen::MatrixXd::Random(size, size);
  Eigen::MatrixXd matrix = random * random.transpose();
  matrix.diagonal().array() += shift;
  return matrix;
}

TEST(DenseCholeskyTest, SolveMatchesEigen) {
  for (int size : {1, 7, 130}) {
    const Eigen::MatrixXd matrix = RandomSpd(size, 0.5);
    const Eigen::VectorXd rhs = Eigen::VectorXd::LinSpaced(size, -1.0, 3.0);
    DenseCholesky cholesky;
    ASSERT_TRUE(cholesky.Factor(matrix));
    Eigen::VectorXd solution;
    cholesky.Solve(rhs, solution);
    const Eigen::VectorXd expected = matrix.llt().solve(rhs);
    EXPECT_LT((solution - expected).norm(), 1e-10 * expected.norm()) << "size " << size;
  }
}

TEST(DenseCholeskyTest, HalfSolveGivesTheQuadraticForm) {
  const Eigen::MatrixXd matrix = RandomSpd(30, 0.3);
  const Eigen::MatrixXd block = Eigen::MatrixXd::Random(30, 5);
  DenseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(matrix));
  const Eigen::MatrixXd half = cholesky.SolveLower(block);
  const Eigen::MatrixXd expected = block.transpose() * matrix.llt().solve(block);
  EXPECT_LT((half.transpose() * half - expected).norm(), 1e-10 * expected.norm());
}

TEST(DenseCholeskyTest, ReadsTheLowerTriangleOnly) {
  Eigen::MatrixXd matrix = RandomSpd(20, 1.0);
  const Eigen::VectorXd rhs = Eigen::VectorXd::Ones(20);
  const Eigen::VectorXd expected = matrix.llt().solve(rhs);
  matrix.triangularView<Eigen::StrictlyUpper>().setConstant(1e6);
  DenseCholesky cholesky;
  ASSERT_TRUE(cholesky.Factor(matrix));
  Eigen::VectorXd solution;
  cholesky.Solve(rhs, solution);
  EXPECT_LT((solution - expected).norm(), 1e-10 * expected.norm());
}

TEST(DenseCholeskyTest, IndefiniteOrNonFiniteIsReported) {
  Eigen::MatrixXd matrix = RandomSpd(10, 0.5);
  matrix(6, 6) = -100.0;
  DenseCholesky cholesky;
  EXPECT_FALSE(cholesky.Factor(matrix));
  Eigen::VectorXd solution;
  EXPECT_THROW(cholesky.Solve(Eigen::VectorXd::Ones(10), solution), std::invalid_argument);
  matrix = RandomSpd(10, 0.5);
  matrix(2, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(cholesky.Factor(matrix));
}

TEST(DenseCholeskyTest, LowerTimesTransposeMatchesTheProduct) {
  for (int size : {0, 1, 5, 97}) {
    Eigen::MatrixXd lower = Eigen::MatrixXd::Random(size, size);
    const Eigen::MatrixXd triangle = lower.triangularView<Eigen::Lower>();
    lower.triangularView<Eigen::StrictlyUpper>().setConstant(7.0);  // not read
    const Eigen::MatrixXd product = LowerTimesTranspose(lower);
    const Eigen::MatrixXd expected = triangle * triangle.transpose();
    ASSERT_EQ(product.rows(), size);
    EXPECT_LE((product - expected).norm(), 1e-13 * (1.0 + expected.norm())) << "size " << size;
  }
}

}  // namespace
}  // namespace contactlab::linear_algebra
