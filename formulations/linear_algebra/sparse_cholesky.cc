#include "formulations/linear_algebra/sparse_cholesky.h"

#include <cholmod.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace contactlab::linear_algebra {

// CHOLMOD's workspace, the current factor, and the pattern it was analysed for.
struct SparseCholesky::Cholmod {
  cholmod_common common;
  cholmod_factor* factor = nullptr;
  std::vector<int> analysed_outer;      // column pointers of the analysed pattern
  std::vector<int> analysed_inner;      // row indices of the analysed pattern
  bool analysed_with_trailing = false;  // analysed by FactorWithTrailingBlock, with
  std::vector<int> analysed_last;       // these unknowns last

  Cholmod() {
    cholmod_start(&common);
    common.supernodal = CHOLMOD_SUPERNODAL;  // BLAS-3 dense kernels on supernodes
    common.print = 0;
    common.error_handler = nullptr;  // errors are reported through common.status
  }
  ~Cholmod() {
    if (factor != nullptr) cholmod_free_factor(&factor, &common);
    cholmod_finish(&common);
  }
};

namespace {

// AMD's factorization flop count from which METIS is tried as well: about 5–10 ms of
// factorization on one core, where METIS's analysis (a few times AMD's) starts to pay off.
constexpr double kNestedDissectionMinimumFlops = 2.0e8;

// A read-only CHOLMOD view of a compressed column-major matrix, lower triangle used.
cholmod_sparse ViewLowerTriangle(const SparseMatrix& matrix) {
  cholmod_sparse view{};
  view.nrow = static_cast<size_t>(matrix.rows());
  view.ncol = static_cast<size_t>(matrix.cols());
  view.nzmax = static_cast<size_t>(matrix.nonZeros());
  view.p = const_cast<int*>(matrix.outerIndexPtr());
  view.i = const_cast<int*>(matrix.innerIndexPtr());
  view.x = const_cast<double*>(matrix.valuePtr());
  view.stype = -1;  // symmetric, entries above the diagonal ignored
  view.itype = CHOLMOD_INT;
  view.xtype = CHOLMOD_REAL;
  view.dtype = CHOLMOD_DOUBLE;
  view.sorted = 1;
  view.packed = 1;
  return view;
}

cholmod_dense ViewDense(const Eigen::MatrixXd& matrix) {
  cholmod_dense view{};
  view.nrow = static_cast<size_t>(matrix.rows());
  view.ncol = static_cast<size_t>(matrix.cols());
  view.nzmax = view.nrow * view.ncol;
  view.d = view.nrow;
  view.x = const_cast<double*>(matrix.data());
  view.xtype = CHOLMOD_REAL;
  view.dtype = CHOLMOD_DOUBLE;
  return view;
}

Eigen::MatrixXd CopyAndFree(cholmod_dense* result, cholmod_common* common) {
  if (result == nullptr) throw std::runtime_error("SparseCholesky: CHOLMOD solve failed");
  Eigen::MatrixXd copy =
      Eigen::Map<const Eigen::MatrixXd>(static_cast<const double*>(result->x), static_cast<Eigen::Index>(result->nrow),
                                        static_cast<Eigen::Index>(result->ncol));
  cholmod_free_dense(&result, common);
  return copy;
}

// Symbolic analysis (ordering, elimination tree, supernodes) with one ordering method.
cholmod_factor* Analyze(cholmod_sparse& view, int ordering, cholmod_common& common) {
  common.nmethods = 1;
  common.method[0].ordering = ordering;
  cholmod_factor* factor = cholmod_analyze(&view, &common);
  if (factor == nullptr) throw std::runtime_error("SparseCholesky: CHOLMOD symbolic analysis failed");
  return factor;
}

// The fill-reducing ordering: AMD's is cheap to compute and good for small problems; on
// larger ones METIS nested dissection often needs fewer flops (a quarter fewer on the MPM
// grid's 125-node stencil), which repays its costlier analysis over the factorizations that
// reuse it. The symbolic factor of the ordering with fewer flops is returned.
cholmod_factor* AnalyzeFillReducing(cholmod_sparse& view, cholmod_common& common) {
  cholmod_factor* factor = Analyze(view, CHOLMOD_AMD, common);
  if (common.fl >= kNestedDissectionMinimumFlops) {
    const double minimum_degree_flops = common.fl;
    const double minimum_degree_nonzeros = common.lnz;
    cholmod_factor* nested_dissection = Analyze(view, CHOLMOD_METIS, common);
    if (common.fl < minimum_degree_flops) {
      cholmod_free_factor(&factor, &common);
      factor = nested_dissection;
    } else {
      cholmod_free_factor(&nested_dissection, &common);
      common.fl = minimum_degree_flops;
      common.lnz = minimum_degree_nonzeros;
    }
  }
  return factor;
}

void CheckSquareCompressed(const SparseMatrix& matrix, const char* caller) {
  if (matrix.rows() != matrix.cols()) throw std::invalid_argument(std::string(caller) + ": matrix is not square");
  if (!matrix.isCompressed()) throw std::invalid_argument(std::string(caller) + ": matrix must be compressed");
}

}  // namespace

SparseCholesky::SparseCholesky() : cholmod_(std::make_unique<Cholmod>()) {}
SparseCholesky::~SparseCholesky() = default;

bool SparseCholesky::SameAnalysedPattern(const SparseMatrix& matrix) const {
  const Cholmod& cholmod = *cholmod_;
  const int columns = static_cast<int>(matrix.cols());
  const int nonzeros = static_cast<int>(matrix.nonZeros());
  return cholmod.factor != nullptr && size_ == columns && static_cast<int>(cholmod.analysed_inner.size()) == nonzeros &&
         std::equal(cholmod.analysed_outer.begin(), cholmod.analysed_outer.end(), matrix.outerIndexPtr()) &&
         std::equal(cholmod.analysed_inner.begin(), cholmod.analysed_inner.end(), matrix.innerIndexPtr());
}

void SparseCholesky::KeepAnalysis(const SparseMatrix& matrix, int ordering) {
  Cholmod& cholmod = *cholmod_;
  const int columns = static_cast<int>(matrix.cols());
  cholmod.analysed_outer.assign(matrix.outerIndexPtr(), matrix.outerIndexPtr() + columns + 1);
  cholmod.analysed_inner.assign(matrix.innerIndexPtr(), matrix.innerIndexPtr() + matrix.nonZeros());
  size_ = columns;
  ++symbolic_analyses_;
  factor_nonzeros_ = cholmod.common.lnz;
  factorization_flops_ = cholmod.common.fl;
  ordering_ = ordering;
}

bool SparseCholesky::FactorAnalysed(cholmod_sparse& view) {
  Cholmod& cholmod = *cholmod_;
  cholmod_factorize(&view, cholmod.factor, &cholmod.common);
  ++numeric_factorizations_;
  if (cholmod.common.status == CHOLMOD_NOT_POSDEF) return false;
  if (cholmod.common.status < CHOLMOD_OK) {
    throw std::runtime_error("SparseCholesky: CHOLMOD factorization failed (status " +
                             std::to_string(cholmod.common.status) + ")");
  }
  return true;
}

bool SparseCholesky::Factor(const SparseMatrix& matrix) {
  CheckSquareCompressed(matrix, "SparseCholesky::Factor");
  Cholmod& cholmod = *cholmod_;
  cholmod_sparse view = ViewLowerTriangle(matrix);
  // Symbolic analysis only when the pattern differs from the one analysed last.
  if (cholmod.analysed_with_trailing || !SameAnalysedPattern(matrix)) {
    if (cholmod.factor != nullptr) cholmod_free_factor(&cholmod.factor, &cholmod.common);
    cholmod.factor = AnalyzeFillReducing(view, cholmod.common);
    cholmod.analysed_with_trailing = false;
    cholmod.analysed_last.clear();
    KeepAnalysis(matrix, cholmod.factor->ordering);
  }
  return FactorAnalysed(view);
}

bool SparseCholesky::FactorWithTrailingBlock(const SparseMatrix& matrix, const std::vector<int>& last,
                                             Eigen::MatrixXd& trailing) {
  CheckSquareCompressed(matrix, "SparseCholesky::FactorWithTrailingBlock");
  const int size = static_cast<int>(matrix.rows());
  const int trailing_size = static_cast<int>(last.size());
  std::vector<int> last_position(size, -1);
  for (int k = 0; k < trailing_size; ++k) {
    if (last[k] < 0 || last[k] >= size || last_position[last[k]] >= 0) {
      throw std::invalid_argument(
          "SparseCholesky::FactorWithTrailingBlock: the trailing unknowns must be distinct "
          "indices of the matrix");
    }
    last_position[last[k]] = k;
  }
  Cholmod& cholmod = *cholmod_;
  cholmod_sparse view = ViewLowerTriangle(matrix);

  if (!cholmod.analysed_with_trailing || cholmod.analysed_last != last || !SameAnalysedPattern(matrix)) {
    // The other unknowns N, in their own fill-reducing order (of A_NN alone: eliminating N
    // first, their fill depends on A_NN's pattern only), then `last` as given.
    std::vector<int> others;
    std::vector<int> other_position(size, -1);
    for (int unknown = 0; unknown < size; ++unknown) {
      if (last_position[unknown] >= 0) continue;
      other_position[unknown] = static_cast<int>(others.size());
      others.push_back(unknown);
    }
    std::vector<int> permutation;
    permutation.reserve(size);
    int ordering = CHOLMOD_GIVEN;
    if (!others.empty()) {
      // A_NN's lower triangle; renumbering N in increasing order keeps it lower.
      std::vector<Eigen::Triplet<double>> entries;
      for (int column : others) {
        for (SparseMatrix::InnerIterator entry(matrix, column); entry; ++entry) {
          const int row = static_cast<int>(entry.row());
          if (row >= column && other_position[row] >= 0) {
            entries.emplace_back(other_position[row], other_position[column], entry.value());
          }
        }
      }
      SparseMatrix other_block(static_cast<int>(others.size()), static_cast<int>(others.size()));
      other_block.setFromTriplets(entries.begin(), entries.end());
      cholmod_sparse other_view = ViewLowerTriangle(other_block);
      cholmod_factor* other_factor = AnalyzeFillReducing(other_view, cholmod.common);
      ordering = other_factor->ordering;
      const int* other_order = static_cast<const int*>(other_factor->Perm);
      for (std::size_t k = 0; k < others.size(); ++k) permutation.push_back(others[other_order[k]]);
      cholmod_free_factor(&other_factor, &cholmod.common);
    }
    permutation.insert(permutation.end(), last.begin(), last.end());

    // The whole matrix under exactly that order: no postordering, which could move
    // unknowns of `last` before others.
    if (cholmod.factor != nullptr) cholmod_free_factor(&cholmod.factor, &cholmod.common);
    cholmod.common.nmethods = 1;
    cholmod.common.method[0].ordering = CHOLMOD_GIVEN;
    cholmod.common.postorder = 0;
    cholmod.factor = cholmod_analyze_p(&view, permutation.data(), nullptr, 0, &cholmod.common);
    cholmod.common.postorder = 1;
    if (cholmod.factor == nullptr) throw std::runtime_error("SparseCholesky: CHOLMOD symbolic analysis failed");
    const int* used = static_cast<const int*>(cholmod.factor->Perm);
    if (!cholmod.factor->is_super || !std::equal(permutation.begin(), permutation.end(), used)) {
      throw std::logic_error("SparseCholesky::FactorWithTrailingBlock: CHOLMOD did not keep the given order");
    }
    cholmod.analysed_with_trailing = true;
    cholmod.analysed_last = last;
    KeepAnalysis(matrix, ordering);
  }
  if (!FactorAnalysed(view)) return false;

  // L's trailing block, from the supernodes that hold its columns: supernode s holds the
  // columns super[s] … super[s+1]−1 as one dense column-major block whose rows are
  // s[pi[s]] …, leading dimension pi[s+1] − pi[s], starting at x[px[s]].
  const cholmod_factor& factor = *cholmod.factor;
  const int first = size - trailing_size;
  const int* supernode_columns = static_cast<const int*>(factor.super);
  const int* row_starts = static_cast<const int*>(factor.pi);
  const int* value_starts = static_cast<const int*>(factor.px);
  const int* rows = static_cast<const int*>(factor.s);
  const double* values = static_cast<const double*>(factor.x);
  trailing = Eigen::MatrixXd::Zero(trailing_size, trailing_size);
  for (std::size_t supernode = 0; supernode < factor.nsuper; ++supernode) {
    const int first_column = supernode_columns[supernode];
    const int end_column = supernode_columns[supernode + 1];
    if (end_column <= first) continue;
    const int row_start = row_starts[supernode];
    const int row_count = row_starts[supernode + 1] - row_start;
    const double* block = values + value_starts[supernode];
    for (int column = std::max(first_column, first); column < end_column; ++column) {
      const int local = column - first_column;  // rows before `local` lie above the diagonal
      for (int i = local; i < row_count; ++i) {
        trailing(rows[row_start + i] - first, column - first) = block[i + static_cast<std::size_t>(local) * row_count];
      }
    }
  }
  return true;
}

Eigen::VectorXd SparseCholesky::Solve(const Eigen::VectorXd& rhs) const {
  return Solve(Eigen::MatrixXd(rhs)).col(0);
}

Eigen::MatrixXd SparseCholesky::Solve(const Eigen::MatrixXd& rhs) const {
  if (cholmod_->factor == nullptr || rhs.rows() != size_) {
    throw std::invalid_argument("SparseCholesky::Solve: no factorization of matching size");
  }
  cholmod_dense view = ViewDense(rhs);
  return CopyAndFree(cholmod_solve(CHOLMOD_A, cholmod_->factor, &view, &cholmod_->common), &cholmod_->common);
}

}  // namespace contactlab::linear_algebra
