#include "formulations/sap/schur_complement.h"

#include "formulations/linear_algebra/dense_cholesky.h"

namespace contactlab::sap {

bool SchurComplement::Compute(const SparseMatrix& matrix, const std::vector<int>& participating_nodes,
                              linear_algebra::SparseCholesky& cholesky) {
  cholesky_ = &cholesky;
  participating_dofs_.clear();
  participating_dofs_.reserve(3 * participating_nodes.size());
  for (int node : participating_nodes) {
    for (int axis = 0; axis < 3; ++axis) participating_dofs_.push_back(3 * node + axis);
  }
  Eigen::MatrixXd trailing_factor;
  if (!cholesky.FactorWithTrailingBlock(matrix, participating_dofs_, trailing_factor)) return false;
  schur_ = linear_algebra::LowerTimesTranspose(trailing_factor);  // S = L_PP L_PPᵀ
  return true;
}

Eigen::VectorXd SchurComplement::Solve(const Eigen::VectorXd& rhs) const {
  return cholesky_->Solve(rhs);
}

Eigen::VectorXd SchurComplement::Restrict(const Eigen::VectorXd& full) const {
  Eigen::VectorXd restricted(participating_dofs_.size());
  for (std::size_t k = 0; k < participating_dofs_.size(); ++k) restricted[k] = full[participating_dofs_[k]];
  return restricted;
}

Eigen::VectorXd SchurComplement::Recover(const Eigen::VectorXd& free_motion_velocity,
                                         const Eigen::VectorXd& participating_velocity) const {
  Eigen::VectorXd velocity = free_motion_velocity;
  const Eigen::VectorXd change = participating_velocity - Restrict(free_motion_velocity);
  const bool has_others = participating_dofs_.size() < static_cast<std::size_t>(velocity.size());
  if (has_others && change.size() > 0) {
    const Eigen::VectorXd participating_load = schur_ * change;  // S δ_P
    Eigen::VectorXd load = Eigen::VectorXd::Zero(velocity.size());
    for (std::size_t k = 0; k < participating_dofs_.size(); ++k) load[participating_dofs_[k]] = participating_load[k];
    velocity += cholesky_->Solve(load);
  }
  // δ_P is known exactly; the solve returns it only to round-off.
  for (std::size_t k = 0; k < participating_dofs_.size(); ++k) {
    velocity[participating_dofs_[k]] = participating_velocity[k];
  }
  return velocity;
}

}  // namespace contactlab::sap
