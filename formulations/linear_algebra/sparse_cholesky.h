#pragma once
// Sparse Cholesky factorization of symmetric positive definite matrices with CHOLMOD's
// supernodal method (SuiteSparse 5). The symbolic analysis (fill-reducing ordering and
// supernode structure) is the expensive, value-independent part; it is kept and reused for
// every later matrix with the same sparsity pattern — across Newton iterations, and across
// time steps while the active grid and the contact set do not change.
#include <memory>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

struct cholmod_sparse_struct;

namespace contactlab::linear_algebra {

using SparseMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

class SparseCholesky {
 public:
  SparseCholesky();
  ~SparseCholesky();
  SparseCholesky(const SparseCholesky&) = delete;
  SparseCholesky& operator=(const SparseCholesky&) = delete;

  // Factors A = P Lᵀ... (A = Pᵀ L Lᵀ P with the fill-reducing permutation P). Only the lower
  // triangle of `matrix` is read (entries above the diagonal are ignored), so both a full
  // symmetric matrix and its lower triangle are accepted; the pattern must be compressed
  // with sorted row indices. Returns false when the matrix is not positive definite.
  bool Factor(const SparseMatrix& matrix);
  // Factors A like Factor, but orders the unknowns `last` (distinct indices, in the order
  // given) after all the others N, which keep a fill-reducing order of A_NN, and writes the
  // factor's trailing block L_PP (|last| × |last|, lower triangular) to `trailing`. Since
  // A = L Lᵀ with L = [L_NN 0; L_PN L_PP],
  //   L_PP L_PPᵀ = A_PP − A_PN A_NN⁻¹ A_NP,
  // the Schur complement of A_NN, costs the sparse factorization alone: the elimination
  // touches only the fill the factor has. Solve() then solves with A. The symbolic analysis
  // is reused while both the pattern and `last` repeat. Returns false when A is not positive
  // definite.
  bool FactorWithTrailingBlock(const SparseMatrix& matrix, const std::vector<int>& last, Eigen::MatrixXd& trailing);

  int size() const { return size_; }
  // x = A⁻¹ b for one or several right-hand sides.
  Eigen::VectorXd Solve(const Eigen::VectorXd& rhs) const;
  Eigen::MatrixXd Solve(const Eigen::MatrixXd& rhs) const;

  // Statistics since construction.
  int symbolic_analyses() const { return symbolic_analyses_; }
  int numeric_factorizations() const { return numeric_factorizations_; }
  // Of the last symbolic analysis: nonzeros of L and floating-point operations of one
  // numeric factorization (CHOLMOD's estimates), and the ordering it chose (CHOLMOD_AMD, or
  // CHOLMOD_METIS where nested dissection needs fewer flops on a large problem; for
  // FactorWithTrailingBlock, the one A_NN's order came from).
  double factor_nonzeros() const { return factor_nonzeros_; }
  double factorization_flops() const { return factorization_flops_; }
  int ordering() const { return ordering_; }

 private:
  struct Cholmod;
  bool SameAnalysedPattern(const SparseMatrix& matrix) const;
  void KeepAnalysis(const SparseMatrix& matrix, int ordering);
  bool FactorAnalysed(cholmod_sparse_struct& view);

  std::unique_ptr<Cholmod> cholmod_;
  int size_ = 0;
  int symbolic_analyses_ = 0;
  int numeric_factorizations_ = 0;
  double factor_nonzeros_ = 0.0;
  double factorization_flops_ = 0.0;
  int ordering_ = -1;
};

}  // namespace contactlab::linear_algebra
