#pragma once
// Dense symmetric positive definite linear algebra through LAPACK (dpotrf, dpotrs, dlauum).
// The BLAS the build links (OpenBLAS, installed by scripts/install-deps) picks its kernels for
// the CPU it runs on at load time, while Eigen's own kernels are compiled for the build's
// baseline instruction set (SSE2 here): on the dense problems SAP's Schur path builds (1,500 to
// 3,000 unknowns) dpotrf factors 2–3× faster than Eigen::LLT, and the product L Lᵀ of the
// Schur complement below runs 5–8× faster than Eigen's rank update (one core of the project's
// 2-core VM; the measurements are in README, "sap's Schur complement from one factorization").
#include <Eigen/Core>

namespace contactlab::linear_algebra {

class DenseCholesky {
 public:
  // Factors A = L Lᵀ, reading A's lower triangle only. Returns false when A is not positive
  // definite (or not finite); Solve is then unusable.
  bool Factor(const Eigen::MatrixXd& matrix);
  // x = A⁻¹ b with the last successful factorization.
  void Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const;
  // Y = L⁻¹ B, so that Bᵀ A⁻¹ B = Yᵀ Y: half a solve, for many right-hand sides at once.
  Eigen::MatrixXd SolveLower(const Eigen::MatrixXd& rhs) const;
  int size() const { return static_cast<int>(factor_.rows()); }

 private:
  Eigen::MatrixXd factor_;  // L in the lower triangle; the upper one holds A's leftovers
  bool factored_ = false;
};

// L Lᵀ for a lower-triangular L (its upper triangle is not read), symmetric in both
// triangles. Costs n³/3 multiply–adds (LAPACK's dlauum on the reversed matrix, which is
// upper triangular), a third of a general rank update.
Eigen::MatrixXd LowerTimesTranspose(const Eigen::MatrixXd& lower);

}  // namespace contactlab::linear_algebra
