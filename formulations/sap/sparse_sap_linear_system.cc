#include "formulations/sap/sparse_sap_linear_system.h"

#include <algorithm>
#include <numeric>

namespace contactlab::sap {

SparseSapLinearSystem::SparseSapLinearSystem(const Eigen::MatrixXd& rigid_matrix, const SparseMatrix& mpm_matrix,
                                             linear_algebra::SparseCholesky& cholesky)
    : rigid_matrix_(rigid_matrix), mpm_matrix_(mpm_matrix), cholesky_(cholesky) {
  rigid_size_ = static_cast<int>(rigid_matrix.rows());
  size_ = rigid_size_ + static_cast<int>(mpm_matrix.rows());
  diagonal_.resize(size_);
  diagonal_.head(rigid_size_) = rigid_matrix.diagonal();
  diagonal_.tail(mpm_matrix.rows()) = mpm_matrix.diagonal();
}

void SparseSapLinearSystem::Multiply(const Eigen::VectorXd& x, Eigen::VectorXd& result) const {
  result.resize(size_);
  result.head(rigid_size_).noalias() = rigid_matrix_ * x.head(rigid_size_);
  result.tail(size_ - rigid_size_).noalias() = mpm_matrix_ * x.tail(size_ - rigid_size_);
}

void SparseSapLinearSystem::BuildPattern(const SapProblem& problem) {
  // Rows (≥ column) present in each column of the lower triangle of H.
  std::vector<std::vector<int>> rows_of_column(size_);
  for (int column = 0; column < rigid_size_; ++column) {
    for (int row = column; row < rigid_size_; ++row) rows_of_column[column].push_back(row);
  }
  for (int column = 0; column < mpm_matrix_.outerSize(); ++column) {
    for (SparseMatrix::InnerIterator entry(mpm_matrix_, column); entry; ++entry) {
      if (entry.row() >= column) {
        rows_of_column[rigid_size_ + column].push_back(rigid_size_ + static_cast<int>(entry.row()));
      }
    }
  }
  // Each constraint couples every pair of its unknowns.
  const int constraint_count = static_cast<int>(problem.constraints.size());
  constraint_columns_.assign(constraint_count, {});
  constraint_jacobians_.assign(constraint_count, Eigen::MatrixXd());
  for (int c = 0; c < constraint_count; ++c) {
    std::vector<int>& columns = constraint_columns_[c];
    int width = 0;
    for (const JacobianBlock& block : problem.constraints[c].jacobian) width += static_cast<int>(block.matrix.cols());
    Eigen::MatrixXd& jacobian = constraint_jacobians_[c];
    jacobian.resize(3, width);
    int offset = 0;
    for (const JacobianBlock& block : problem.constraints[c].jacobian) {
      const int block_width = static_cast<int>(block.matrix.cols());
      jacobian.middleCols(offset, block_width) = block.matrix;
      for (int k = 0; k < block_width; ++k) columns.push_back(block.column + k);
      offset += block_width;
    }
    for (int a = 0; a < width; ++a) {
      for (int b = 0; b < width; ++b) {
        if (columns[a] >= columns[b]) rows_of_column[columns[b]].push_back(columns[a]);
      }
    }
  }
  // Compress.
  std::vector<int> outer(size_ + 1, 0);
  for (int column = 0; column < size_; ++column) {
    std::vector<int>& rows = rows_of_column[column];
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    outer[column + 1] = outer[column] + static_cast<int>(rows.size());
  }
  hessian_ = SparseMatrix(size_, size_);
  hessian_.resizeNonZeros(outer[size_]);
  std::copy(outer.begin(), outer.end(), hessian_.outerIndexPtr());
  for (int column = 0; column < size_; ++column) {
    std::copy(rows_of_column[column].begin(), rows_of_column[column].end(), hessian_.innerIndexPtr() + outer[column]);
  }
  const auto slot = [&](int row, int column) {
    const int* begin = hessian_.innerIndexPtr() + outer[column];
    const int* end = hessian_.innerIndexPtr() + outer[column + 1];
    return static_cast<int>(std::lower_bound(begin, end, row) - hessian_.innerIndexPtr());
  };

  // Slots of the constant part A.
  base_slots_.clear();
  base_values_.clear();
  for (int column = 0; column < rigid_size_; ++column) {
    for (int row = column; row < rigid_size_; ++row) {
      base_slots_.push_back(slot(row, column));
      base_values_.push_back(rigid_matrix_(row, column));
    }
  }
  for (int column = 0; column < mpm_matrix_.outerSize(); ++column) {
    for (SparseMatrix::InnerIterator entry(mpm_matrix_, column); entry; ++entry) {
      if (entry.row() < column) continue;
      base_slots_.push_back(slot(rigid_size_ + static_cast<int>(entry.row()), rigid_size_ + column));
      base_values_.push_back(entry.value());
    }
  }
  // Slots of each constraint's lower pairs.
  constraint_slots_.assign(constraint_count, {});
  for (int c = 0; c < constraint_count; ++c) {
    const std::vector<int>& columns = constraint_columns_[c];
    const int width = static_cast<int>(columns.size());
    std::vector<int>& slots = constraint_slots_[c];
    slots.reserve(static_cast<std::size_t>(width) * width);
    for (int a = 0; a < width; ++a) {
      for (int b = 0; b < width; ++b) {
        slots.push_back(columns[a] >= columns[b] ? slot(columns[a], columns[b]) : -1);
      }
    }
  }
  pattern_problem_ = &problem;
}

bool SparseSapLinearSystem::Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) {
  if (pattern_problem_ != &problem) BuildPattern(problem);
  double* values = hessian_.valuePtr();
  std::fill(values, values + hessian_.nonZeros(), 0.0);
  for (std::size_t k = 0; k < base_slots_.size(); ++k) values[base_slots_[k]] += base_values_[k];
  // H += J_cᵀ G_c J_c, lower pairs only.
  Eigen::MatrixXd weighted;
  Eigen::MatrixXd contribution;
  for (std::size_t c = 0; c < constraint_columns_.size(); ++c) {
    const Eigen::MatrixXd& jacobian = constraint_jacobians_[c];
    weighted.noalias() = contact_hessians[c] * jacobian;
    contribution.noalias() = jacobian.transpose() * weighted;
    const int width = static_cast<int>(jacobian.cols());
    const std::vector<int>& slots = constraint_slots_[c];
    for (int a = 0; a < width; ++a) {
      for (int b = 0; b < width; ++b) {
        const int target = slots[a * width + b];
        if (target >= 0) values[target] += contribution(a, b);
      }
    }
  }
  return cholesky_.Factor(hessian_);
}

void SparseSapLinearSystem::Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const {
  solution = cholesky_.Solve(rhs);
}

}  // namespace contactlab::sap
