#pragma once
// Reduction of the MPM block of the SAP problem onto the grid nodes that support contact
// particles (spec-sap-qn §1.3.6, Algorithm S; Han, Masterjohn, Castro 2023). Contact
// Jacobians have no columns on the other ("non-participating") nodes N, so their velocities
// can be minimized out in closed form:
//   S = A_PP − A_PN A_NN⁻¹ A_NP,          (dense, symmetric positive definite)
//   v_N = v*_N − A_NN⁻¹ A_NP (v_P − v*_P),
// and SAP runs on the small dense problem over [v_rigid; v_P] with the same v*_P.
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "formulations/linear_algebra/sparse_cholesky.h"

namespace contactlab::sap {

using linear_algebra::SparseMatrix;

class SchurComplement {
 public:
  // `participating_nodes`: sorted, unique node indices (3 unknowns each) of `matrix`.
  // Factors A_NN with `cholesky` (its symbolic analysis is reused while A_NN's pattern
  // repeats). Returns false, leaving S unusable, when A_NN is not positive definite (or not
  // finite): the state the step started from has gone bad, which the caller reports.
  [[nodiscard]] bool Compute(const SparseMatrix& matrix, const std::vector<int>& participating_nodes,
                             linear_algebra::SparseCholesky& cholesky);

  // S, of size 3 |P|, rows ordered as participating_nodes.
  const Eigen::MatrixXd& matrix() const { return schur_; }
  // Full velocity vector (size of `matrix`) from v* and the solved participating velocities.
  Eigen::VectorXd Recover(const Eigen::VectorXd& free_motion_velocity,
                          const Eigen::VectorXd& participating_velocity) const;
  // The participating entries of a full vector.
  Eigen::VectorXd Restrict(const Eigen::VectorXd& full) const;
  // x = A⁻¹ rhs by block elimination with the same factorization:
  //   x_P = S⁻¹ (r_P − A_PN A_NN⁻¹ r_N),   x_N = A_NN⁻¹ (r_N − A_NP x_P).
  // Lets a step whose free motion is one linear solve (quadratic energy) use a single
  // sparse factorization for both the free motion and the contact problem.
  Eigen::VectorXd Solve(const Eigen::VectorXd& rhs) const;

 private:
  linear_algebra::SparseCholesky* cholesky_ = nullptr;
  std::vector<int> participating_dofs_;  // unknowns of P, in order
  std::vector<int> other_dofs_;          // unknowns of N, in order
  SparseMatrix coupling_;                // A_NP (sparse)
  Eigen::MatrixXd schur_;
  Eigen::LLT<Eigen::MatrixXd> schur_factorization_;
};

}  // namespace contactlab::sap
