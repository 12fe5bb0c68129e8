#include "formulations/linear_algebra/dense_cholesky.h"

#include <stdexcept>

// BLAS and LAPACK's Fortran entry points (the reference interface every implementation provides).
extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
             const int* ldb, int* info);
void dtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
            const double* alpha, const double* a, const int* lda, double* b, const int* ldb);
void dlauum_(const char* uplo, const int* n, double* a, const int* lda, int* info);
}

namespace contactlab::linear_algebra {

bool DenseCholesky::Factor(const Eigen::MatrixXd& matrix) {
  if (matrix.rows() != matrix.cols()) throw std::invalid_argument("DenseCholesky::Factor: matrix is not square");
  factored_ = false;
  if (!matrix.allFinite()) return false;
  factor_ = matrix;
  const int size = static_cast<int>(factor_.rows());
  if (size == 0) {
    factored_ = true;
    return true;
  }
  const char lower = 'L';
  int info = 0;
  dpotrf_(&lower, &size, factor_.data(), &size, &info);
  if (info < 0) throw std::logic_error("DenseCholesky::Factor: dpotrf rejected argument " + std::to_string(-info));
  factored_ = info == 0;  // info > 0: the leading minor of that order is not positive definite
  return factored_;
}

void DenseCholesky::Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const {
  if (!factored_ || rhs.size() != factor_.rows()) {
    throw std::invalid_argument("DenseCholesky::Solve: no factorization of matching size");
  }
  solution = rhs;
  const int size = static_cast<int>(factor_.rows());
  if (size == 0) return;
  const char lower = 'L';
  const int columns = 1;
  int info = 0;
  dpotrs_(&lower, &size, &columns, factor_.data(), &size, solution.data(), &size, &info);
  if (info != 0) throw std::logic_error("DenseCholesky::Solve: dpotrs rejected argument " + std::to_string(-info));
}

Eigen::MatrixXd DenseCholesky::SolveLower(const Eigen::MatrixXd& rhs) const {
  if (!factored_ || rhs.rows() != factor_.rows()) {
    throw std::invalid_argument("DenseCholesky::SolveLower: no factorization of matching size");
  }
  Eigen::MatrixXd solution = rhs;
  const int size = static_cast<int>(factor_.rows());
  const int columns = static_cast<int>(rhs.cols());
  if (size == 0 || columns == 0) return solution;
  const char left = 'L', lower = 'L', no_transpose = 'N', non_unit = 'N';
  const double one = 1.0;
  dtrsm_(&left, &lower, &no_transpose, &non_unit, &size, &columns, &one, factor_.data(), &size, solution.data(), &size);
  return solution;
}

Eigen::MatrixXd LowerTimesTranspose(const Eigen::MatrixXd& lower) {
  if (lower.rows() != lower.cols()) throw std::invalid_argument("LowerTimesTranspose: matrix is not square");
  const int size = static_cast<int>(lower.rows());
  if (size == 0) return Eigen::MatrixXd(0, 0);
  // With R the reversal (R = Rᵀ = R⁻¹), U = R L R is upper triangular and L Lᵀ = R (U Uᵀ) R;
  // dlauum forms U Uᵀ in U's upper triangle.
  Eigen::MatrixXd upper = lower.reverse();
  const char upper_part = 'U';
  int info = 0;
  dlauum_(&upper_part, &size, upper.data(), &size, &info);
  if (info != 0) throw std::logic_error("LowerTimesTranspose: dlauum rejected argument " + std::to_string(-info));
  // U Uᵀ's upper triangle, reversed, is L Lᵀ's lower triangle; mirror it.
  Eigen::MatrixXd product = upper.reverse();
  for (int column = 1; column < size; ++column) {
    for (int row = 0; row < column; ++row) product(row, column) = product(column, row);
  }
  return product;
}

}  // namespace contactlab::linear_algebra
