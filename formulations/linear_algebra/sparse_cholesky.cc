#include "formulations/linear_algebra/sparse_cholesky.h"

#include <cholmod.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace contactlab::linear_algebra {

// CHOLMOD's workspace, the current factor, and the pattern it was analysed for.
struct SparseCholesky::Cholmod {
  cholmod_common common;
  cholmod_factor* factor = nullptr;
  std::vector<int> analysed_outer;  // column pointers of the analysed pattern
  std::vector<int> analysed_inner;  // row indices of the analysed pattern

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

}  // namespace

SparseCholesky::SparseCholesky() : cholmod_(std::make_unique<Cholmod>()) {}
SparseCholesky::~SparseCholesky() = default;

bool SparseCholesky::Factor(const SparseMatrix& matrix) {
  if (matrix.rows() != matrix.cols()) {
    throw std::invalid_argument("SparseCholesky::Factor: matrix is not square");
  }
  if (!matrix.isCompressed()) {
    throw std::invalid_argument("SparseCholesky::Factor: matrix must be compressed");
  }
  Cholmod& cholmod = *cholmod_;
  cholmod_sparse view = ViewLowerTriangle(matrix);

  // Symbolic analysis only when the pattern differs from the one analysed last.
  const int columns = static_cast<int>(matrix.cols());
  const int nonzeros = static_cast<int>(matrix.nonZeros());
  const bool same_pattern =
      cholmod.factor != nullptr && size_ == columns && static_cast<int>(cholmod.analysed_inner.size()) == nonzeros &&
      std::equal(cholmod.analysed_outer.begin(), cholmod.analysed_outer.end(), matrix.outerIndexPtr()) &&
      std::equal(cholmod.analysed_inner.begin(), cholmod.analysed_inner.end(), matrix.innerIndexPtr());
  if (!same_pattern) {
    if (cholmod.factor != nullptr) cholmod_free_factor(&cholmod.factor, &cholmod.common);
    cholmod.factor = Analyze(view, CHOLMOD_AMD, cholmod.common);
    // AMD's ordering is cheap to compute and good for small problems; on larger ones METIS
    // nested dissection often needs fewer flops (a quarter fewer on the MPM grid's 125-node
    // stencil), which repays its costlier analysis over the factorizations that reuse it.
    if (cholmod.common.fl >= kNestedDissectionMinimumFlops) {
      const double minimum_degree_flops = cholmod.common.fl;
      const double minimum_degree_nonzeros = cholmod.common.lnz;
      cholmod_factor* nested_dissection = Analyze(view, CHOLMOD_METIS, cholmod.common);
      if (cholmod.common.fl < minimum_degree_flops) {
        cholmod_free_factor(&cholmod.factor, &cholmod.common);
        cholmod.factor = nested_dissection;
      } else {
        cholmod_free_factor(&nested_dissection, &cholmod.common);
        cholmod.common.fl = minimum_degree_flops;
        cholmod.common.lnz = minimum_degree_nonzeros;
      }
    }
    cholmod.analysed_outer.assign(matrix.outerIndexPtr(), matrix.outerIndexPtr() + columns + 1);
    cholmod.analysed_inner.assign(matrix.innerIndexPtr(), matrix.innerIndexPtr() + nonzeros);
    size_ = columns;
    ++symbolic_analyses_;
    factor_nonzeros_ = cholmod.common.lnz;
    factorization_flops_ = cholmod.common.fl;
    ordering_ = cholmod.factor->ordering;
  }

  // Numeric factorization on the analysed structure.
  cholmod_factorize(&view, cholmod.factor, &cholmod.common);
  ++numeric_factorizations_;
  if (cholmod.common.status == CHOLMOD_NOT_POSDEF) return false;
  if (cholmod.common.status < CHOLMOD_OK) {
    throw std::runtime_error("SparseCholesky: CHOLMOD factorization failed (status " +
                             std::to_string(cholmod.common.status) + ")");
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

Eigen::MatrixXd SparseCholesky::SolveLowerPermuted(const Eigen::MatrixXd& rhs) const {
  if (cholmod_->factor == nullptr || rhs.rows() != size_) {
    throw std::invalid_argument("SparseCholesky::SolveLowerPermuted: no factorization of matching size");
  }
  cholmod_dense view = ViewDense(rhs);
  cholmod_dense* permuted = cholmod_solve(CHOLMOD_P, cholmod_->factor, &view, &cholmod_->common);
  if (permuted == nullptr) throw std::runtime_error("SparseCholesky: CHOLMOD permutation failed");
  cholmod_dense* lower = cholmod_solve(CHOLMOD_L, cholmod_->factor, permuted, &cholmod_->common);
  cholmod_free_dense(&permuted, &cholmod_->common);
  return CopyAndFree(lower, &cholmod_->common);
}

}  // namespace contactlab::linear_algebra
