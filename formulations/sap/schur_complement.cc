#include "formulations/sap/schur_complement.h"

#include <stdexcept>

namespace contactlab::sap {

bool SchurComplement::Compute(const SparseMatrix& matrix, const std::vector<int>& participating_nodes,
                              linear_algebra::SparseCholesky& cholesky) {
  cholesky_ = &cholesky;
  const int size = static_cast<int>(matrix.rows());

  // Split the unknowns: position of each unknown inside P or inside N.
  std::vector<int> participating_position(size, -1);
  std::vector<int> other_position(size, -1);
  participating_dofs_.clear();
  other_dofs_.clear();
  for (int node : participating_nodes) {
    for (int axis = 0; axis < 3; ++axis) {
      participating_position[3 * node + axis] = static_cast<int>(participating_dofs_.size());
      participating_dofs_.push_back(3 * node + axis);
    }
  }
  for (int dof = 0; dof < size; ++dof) {
    if (participating_position[dof] >= 0) continue;
    other_position[dof] = static_cast<int>(other_dofs_.size());
    other_dofs_.push_back(dof);
  }
  const int participating = static_cast<int>(participating_dofs_.size());
  const int others = static_cast<int>(other_dofs_.size());

  // Gather A_NN (lower triangle), A_NP and A_PP from the column-compressed matrix.
  std::vector<Eigen::Triplet<double>> other_block;
  std::vector<Eigen::Triplet<double>> coupling_block;
  other_block.reserve(static_cast<std::size_t>(matrix.nonZeros()) / 2);
  Eigen::MatrixXd participating_block = Eigen::MatrixXd::Zero(participating, participating);
  for (int column = 0; column < size; ++column) {
    for (SparseMatrix::InnerIterator entry(matrix, column); entry; ++entry) {
      const int row = static_cast<int>(entry.row());
      if (other_position[column] >= 0) {
        if (other_position[row] >= other_position[column]) {
          other_block.emplace_back(other_position[row], other_position[column], entry.value());
        } else if (participating_position[row] >= 0) {
          // A_PN entry (row in P, column in N) = A_NP entry transposed.
          coupling_block.emplace_back(other_position[column], participating_position[row], entry.value());
        }
      } else if (participating_position[row] >= 0) {
        participating_block(participating_position[row], participating_position[column]) = entry.value();
      }
    }
  }
  SparseMatrix other_matrix(others, others);
  other_matrix.setFromTriplets(other_block.begin(), other_block.end());
  coupling_ = SparseMatrix(others, participating);
  coupling_.setFromTriplets(coupling_block.begin(), coupling_block.end());

  // S = A_PP − (L⁻¹ P A_NP)ᵀ (L⁻¹ P A_NP): one factorization and a half solve per column.
  schur_ = participating_block;
  if (others > 0 && participating > 0) {
    if (!cholesky.Factor(other_matrix)) return false;
    const Eigen::MatrixXd half = cholesky.SolveLowerPermuted(Eigen::MatrixXd(coupling_));
    schur_.noalias() -= half.transpose() * half;
  }
  schur_ = 0.5 * (schur_ + schur_.transpose()).eval();
  schur_factorization_.compute(schur_);
  return true;
}

Eigen::VectorXd SchurComplement::Solve(const Eigen::VectorXd& rhs) const {
  Eigen::VectorXd other_rhs(other_dofs_.size());
  for (std::size_t k = 0; k < other_dofs_.size(); ++k) other_rhs[k] = rhs[other_dofs_[k]];
  const Eigen::VectorXd participating_rhs = Restrict(rhs);
  // Participating block from the Schur complement, then back-substitution for the rest.
  Eigen::VectorXd participating_solution = participating_rhs;
  Eigen::VectorXd other_solution = Eigen::VectorXd::Zero(other_dofs_.size());
  if (!other_dofs_.empty()) {
    other_solution = cholesky_->Solve(other_rhs);
    participating_solution.noalias() -= coupling_.transpose() * other_solution;
  }
  if (participating_solution.size() > 0) participating_solution = schur_factorization_.solve(participating_solution);
  if (!other_dofs_.empty()) {
    other_solution = cholesky_->Solve(Eigen::VectorXd(other_rhs - coupling_ * participating_solution));
  }
  Eigen::VectorXd solution(rhs.size());
  for (std::size_t k = 0; k < other_dofs_.size(); ++k) solution[other_dofs_[k]] = other_solution[k];
  for (std::size_t k = 0; k < participating_dofs_.size(); ++k)
    solution[participating_dofs_[k]] = participating_solution[k];
  return solution;
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
  for (std::size_t k = 0; k < participating_dofs_.size(); ++k) {
    velocity[participating_dofs_[k]] = participating_velocity[k];
  }
  if (!other_dofs_.empty() && change.size() > 0) {
    const Eigen::VectorXd other_change = -cholesky_->Solve(Eigen::VectorXd(coupling_ * change));
    for (std::size_t k = 0; k < other_dofs_.size(); ++k) velocity[other_dofs_[k]] += other_change[k];
  }
  return velocity;
}

}  // namespace contactlab::sap
