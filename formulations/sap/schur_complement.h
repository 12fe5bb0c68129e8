#pragma once
// Reduction of the MPM block of the SAP problem onto the grid nodes that support contact
// particles (spec-sap-qn §1.3.6, Algorithm S; Han, Masterjohn, Castro 2023). Contact
// Jacobians have no columns on the other ("non-participating") nodes N, so their velocities
// can be minimized out in closed form:
//   S = A_PP − A_PN A_NN⁻¹ A_NP,          (dense, symmetric positive definite)
//   v_N = v*_N − A_NN⁻¹ A_NP (v_P − v*_P),
// and SAP runs on the small dense problem over [v_rigid; v_P] with the same v*_P.
//
// S comes from one sparse factorization of the whole A with the participating unknowns
// ordered last: the factor's trailing block L_PP gives S = L_PP L_PPᵀ
// (SparseCholesky::FactorWithTrailingBlock). Forming A_PN A_NN⁻¹ A_NP from half solves with
// A_NN instead treats L_NN⁻¹ A_NP as dense, 2 |N| (3|P|)² flops: tens of GFlop a step at
// h = 1/64 on box_bagging (|N| over 6,000, 3|P| of 1,500–2,500), where the factorization
// exploits its sparsity.
#include <vector>

#include <Eigen/Core>

#include "formulations/linear_algebra/sparse_cholesky.h"

namespace contactlab::sap {

using linear_algebra::SparseMatrix;

class SchurComplement {
 public:
  // `participating_nodes`: sorted, unique node indices (3 unknowns each) of `matrix`.
  // Factors A with `cholesky` (its symbolic analysis is reused while A's pattern and the
  // participating nodes repeat). Returns false, leaving S unusable, when A is not positive
  // definite (or not finite): the state the step started from has gone bad, which the
  // caller reports.
  [[nodiscard]] bool Compute(const SparseMatrix& matrix, const std::vector<int>& participating_nodes,
                             linear_algebra::SparseCholesky& cholesky);

  // S, of size 3 |P|, rows ordered as participating_nodes.
  const Eigen::MatrixXd& matrix() const { return schur_; }
  // Full velocity vector (size of `matrix`) from v* and the solved participating velocities:
  // v = v* + δ with δ_P = v_P − v*_P and δ_N = −A_NN⁻¹ A_NP δ_P, which is A⁻¹ [0; S δ_P]
  // (the N rows of A δ vanish, the P rows are S δ_P): one solve with the factorization.
  Eigen::VectorXd Recover(const Eigen::VectorXd& free_motion_velocity,
                          const Eigen::VectorXd& participating_velocity) const;
  // The participating entries of a full vector.
  Eigen::VectorXd Restrict(const Eigen::VectorXd& full) const;
  // x = A⁻¹ rhs with the same factorization. Lets a step whose free motion is one linear
  // solve (quadratic energy) use a single sparse factorization for both the free motion and
  // the contact problem.
  Eigen::VectorXd Solve(const Eigen::VectorXd& rhs) const;

 private:
  linear_algebra::SparseCholesky* cholesky_ = nullptr;
  std::vector<int> participating_dofs_;  // unknowns of P, in order
  Eigen::MatrixXd schur_;
};

}  // namespace contactlab::sap
