#pragma once
// The full-space linear algebra of the SAP problem (spec-sap-qn §1.3.6, "full-space path"):
// the unknowns are [v_rigid; every active grid velocity], A = diag(A_rigid, A_MPM) with
// A_MPM sparse, and each Newton iteration factors the sparse H = A + Σ_c J_cᵀ G_c J_c with
// CHOLMOD. The pattern of H (A's pattern plus every pair of unknowns one contact couples)
// does not change during a solve, so it is built once per problem, with a map from each
// contribution to its slot, and the symbolic analysis is reused across iterations (and
// across steps while the pattern repeats). Used when the Schur complement would be too
// large to handle densely, and to cross-check the Schur path.
#include <vector>

#include "formulations/linear_algebra/sparse_cholesky.h"
#include "formulations/solvers/sap_solver.h"

namespace contactlab::sap {

using linear_algebra::SparseMatrix;
using mpm::Matrix3;
using mpm::Vector3;
// The SAP solver itself is shared by every formulation that solves a convex contact
// problem (solvers/sap_solver.h); sap's Newton runs it on the systems below.
using solvers::DenseSapLinearSystem;
using solvers::JacobianBlock;
using solvers::SapConstraint;
using solvers::SapLinearSystem;
using solvers::SapProblem;
using solvers::SapSolverOptions;
using solvers::SapSolverResults;
using solvers::SolveSap;

class SparseSapLinearSystem final : public SapLinearSystem {
 public:
  // `rigid_matrix` (dense, leading unknowns) and `mpm_matrix` (full symmetric, both
  // triangles) must outlive the system; `cholesky` keeps its analysis between uses.
  SparseSapLinearSystem(const Eigen::MatrixXd& rigid_matrix, const SparseMatrix& mpm_matrix,
                        linear_algebra::SparseCholesky& cholesky);

  int size() const override { return size_; }
  void Multiply(const Eigen::VectorXd& x, Eigen::VectorXd& result) const override;
  const Eigen::VectorXd& Diagonal() const override { return diagonal_; }
  bool Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) override;
  void Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const override;

 private:
  // Builds the lower-triangular pattern of H and the slot maps for `problem`.
  void BuildPattern(const SapProblem& problem);

  const Eigen::MatrixXd& rigid_matrix_;
  const SparseMatrix& mpm_matrix_;
  linear_algebra::SparseCholesky& cholesky_;
  int rigid_size_ = 0;
  int size_ = 0;
  Eigen::VectorXd diagonal_;
  const SapProblem* pattern_problem_ = nullptr;  // problem the pattern was built for
  SparseMatrix hessian_;                         // lower triangle of H
  std::vector<int> base_slots_;                  // slot of each lower entry of diag(A_rigid, A_MPM)
  std::vector<double> base_values_;              // their values, in the same order
  // Per constraint: its unknowns (expanded from the Jacobian blocks), its dense 3 × k
  // Jacobian and the slot of each lower pair (a ≥ b in unknown order), row-major over a.
  std::vector<std::vector<int>> constraint_columns_;
  std::vector<Eigen::MatrixXd> constraint_jacobians_;
  std::vector<std::vector<int>> constraint_slots_;
};

}  // namespace contactlab::sap
