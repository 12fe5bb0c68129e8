#include "formulations/sap/sparse_sap_linear_system.h"

#include <algorithm>
#include <numeric>
#include <utility>

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
  // Each constraint's unknowns (expanded from its Jacobian blocks, which have disjoint column
  // ranges) and its dense 3 × k Jacobian.
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
  }
  // Where each unknown appears: (constraint, local index) pairs per unknown, in CSR form,
  // ordered by constraint.
  std::vector<int> incidence_begin(size_ + 1, 0);
  for (const std::vector<int>& columns : constraint_columns_) {
    for (const int column : columns) ++incidence_begin[column + 1];
  }
  for (int column = 0; column < size_; ++column) incidence_begin[column + 1] += incidence_begin[column];
  std::vector<std::pair<int, int>> incidence(incidence_begin[size_]);
  {
    std::vector<int> fill(incidence_begin.begin(), incidence_begin.end() - 1);
    for (int c = 0; c < constraint_count; ++c) {
      const std::vector<int>& columns = constraint_columns_[c];
      for (int b = 0; b < static_cast<int>(columns.size()); ++b) incidence[fill[columns[b]]++] = {c, b};
    }
  }

  // The lower triangle of H column by column: the rows of A and of every pair of unknowns a
  // constraint couples, each once (`seen` holds the column that last added a row), sorted.
  // The slots of A's entries and of the constraints' lower pairs are read off the finished
  // column through `position`, in the order Factor() adds them.
  base_slots_.clear();
  base_values_.clear();
  constraint_slots_.assign(constraint_count, {});
  for (int c = 0; c < constraint_count; ++c) {
    const std::size_t width = constraint_columns_[c].size();
    constraint_slots_[c].assign(width * width, -1);
  }
  std::vector<int> outer(size_ + 1, 0);
  std::vector<int> rows_of_hessian;
  std::vector<int> seen(size_, -1);
  std::vector<int> position(size_, -1);
  std::vector<int> rows;
  for (int column = 0; column < size_; ++column) {
    rows.clear();
    const auto add = [&](int row) {
      if (seen[row] != column) {
        seen[row] = column;
        rows.push_back(row);
      }
    };
    const bool rigid = column < rigid_size_;
    if (rigid) {
      for (int row = column; row < rigid_size_; ++row) add(row);
    } else {
      for (SparseMatrix::InnerIterator entry(mpm_matrix_, column - rigid_size_); entry; ++entry) {
        if (entry.row() >= column - rigid_size_) add(rigid_size_ + static_cast<int>(entry.row()));
      }
    }
    for (int k = incidence_begin[column]; k < incidence_begin[column + 1]; ++k) {
      for (const int row : constraint_columns_[incidence[k].first]) {
        if (row >= column) add(row);
      }
    }
    std::sort(rows.begin(), rows.end());
    outer[column + 1] = outer[column] + static_cast<int>(rows.size());
    for (std::size_t k = 0; k < rows.size(); ++k) position[rows[k]] = outer[column] + static_cast<int>(k);
    rows_of_hessian.insert(rows_of_hessian.end(), rows.begin(), rows.end());

    // Slots of the constant part A in this column.
    if (rigid) {
      for (int row = column; row < rigid_size_; ++row) {
        base_slots_.push_back(position[row]);
        base_values_.push_back(rigid_matrix_(row, column));
      }
    } else {
      for (SparseMatrix::InnerIterator entry(mpm_matrix_, column - rigid_size_); entry; ++entry) {
        if (entry.row() < column - rigid_size_) continue;
        base_slots_.push_back(position[rigid_size_ + static_cast<int>(entry.row())]);
        base_values_.push_back(entry.value());
      }
    }
    // Slots of the constraints' lower pairs (a, b) with b's unknown this column.
    for (int k = incidence_begin[column]; k < incidence_begin[column + 1]; ++k) {
      const auto [c, b] = incidence[k];
      const std::vector<int>& columns = constraint_columns_[c];
      const int width = static_cast<int>(columns.size());
      std::vector<int>& slots = constraint_slots_[c];
      for (int a = 0; a < width; ++a) {
        if (columns[a] >= column) slots[a * width + b] = position[columns[a]];
      }
    }
  }
  hessian_ = SparseMatrix(size_, size_);
  hessian_.resizeNonZeros(outer[size_]);
  std::copy(outer.begin(), outer.end(), hessian_.outerIndexPtr());
  std::copy(rows_of_hessian.begin(), rows_of_hessian.end(), hessian_.innerIndexPtr());
  pattern_problem_ = &problem;
}

bool SparseSapLinearSystem::Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) {
  if (pattern_problem_ != &problem) BuildPattern(problem);
  double* values = hessian_.valuePtr();
  std::fill(values, values + hessian_.nonZeros(), 0.0);
  for (std::size_t k = 0; k < base_slots_.size(); ++k) values[base_slots_[k]] += base_values_[k];
  // H += J_cᵀ G_c J_c, lower pairs only: each entry is the three-term sum
  // Σ_r J(r, a) (G J)(r, b), summed in r's order, computed only where H keeps it.
  Eigen::MatrixXd weighted;
  for (std::size_t c = 0; c < constraint_columns_.size(); ++c) {
    const Eigen::MatrixXd& jacobian = constraint_jacobians_[c];
    weighted.noalias() = contact_hessians[c] * jacobian;
    const int width = static_cast<int>(jacobian.cols());
    const int* slots = constraint_slots_[c].data();
    const double* j = jacobian.data();  // column-major, 3 rows
    const double* w = weighted.data();
    for (int a = 0; a < width; ++a) {
      const double j0 = j[3 * a], j1 = j[3 * a + 1], j2 = j[3 * a + 2];
      for (int b = 0; b < width; ++b) {
        const int target = slots[a * width + b];
        if (target < 0) continue;
        double entry = j0 * w[3 * b];
        entry += j1 * w[3 * b + 1];
        entry += j2 * w[3 * b + 2];
        values[target] += entry;
      }
    }
  }
  return cholesky_.Factor(hessian_);
}

void SparseSapLinearSystem::Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const {
  solution = cholesky_.Solve(rhs);
}

}  // namespace contactlab::sap
