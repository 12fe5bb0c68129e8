#include "formulations/penalty/stabilized_newton.h"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <Eigen/LU>
#include <Eigen/SparseLU>
#include <Eigen/UmfPackSupport>
#include <unsupported/Eigen/IterativeSolvers>

#include "formulations/phase_clock.h"
#include "formulations/solvers/exact_line_search.h"
#include "formulations/solvers/wolfe_line_search.h"

namespace contactlab::penalty {
namespace {

// P⁻¹ of one Newton iteration.
class PreconditionerSolve {
 public:
  PreconditionerSolve(Preconditioner kind, const SparseMatrix& jacobian, const PreconditionerInputs& inputs)
      : kind_(kind) {
    if (kind_ == Preconditioner::kCholesky && FactorSymmetricPart(jacobian, inputs)) return;
    if (kind_ == Preconditioner::kCholesky) kind_ = Preconditioner::kSparseLu;
    if (kind_ == Preconditioner::kSparseLu) {
      // Eigen's UmfPackLU keeps a reference to the matrix it factored and its solves read it:
      // `jacobian` must outlive this object (it does: both live for one Newton direction).
      sparse_lu_ = std::make_unique<Eigen::UmfPackLU<SparseMatrix>>();
      // No iterative refinement in the solves: GMRES corrects what the LU leaves, and
      // UMFPACK's default two refinement steps made each solve cost 5–8 times a plain one
      // (0.22 s against 0.03 s on box_bagging's 7,581 unknowns at h 1/64).
      sparse_lu_->umfpackControl()(UMFPACK_IRSTEP) = 0;
      sparse_lu_->compute(jacobian);
      if (sparse_lu_->info() == Eigen::Success) return;
      sparse_lu_.reset();
      kind_ = Preconditioner::kBlockJacobi;
    }
    switch (kind_) {
      case Preconditioner::kBlockJacobi: {
        // LU of each diagonal block: the nodes' contact stiffness Δt² w² K (not symmetric)
        // and the rigid bodies' translation–rotation coupling are inverted exactly.
        const std::vector<int>& blocks = inputs.blocks;
        blocks_ = blocks;
        factors_.resize(blocks.size() - 1);
        for (std::size_t k = 0; k + 1 < blocks.size(); ++k) {
          const int start = blocks[k];
          const int width = blocks[k + 1] - start;
          factors_[k].compute(Eigen::MatrixXd(jacobian.block(start, start, width, width)));
        }
        break;
      }
      case Preconditioner::kIncompleteLu:
        incomplete_lu_ = std::make_unique<Eigen::IncompleteLUT<double>>();
        incomplete_lu_->compute(jacobian);
        break;
      case Preconditioner::kAuto:  // resolved by the caller
      case Preconditioner::kSparseLu:
      case Preconditioner::kCholesky:
      case Preconditioner::kNone:
        break;
    }
  }

  // Not copyable: the LU refers to the factored matrix.
  PreconditionerSolve(const PreconditionerSolve&) = delete;
  PreconditionerSolve& operator=(const PreconditionerSolve&) = delete;

  // The preconditioner applied: the requested one, or block Jacobi where the LU failed.
  Preconditioner kind() const { return kind_; }

  Eigen::VectorXd Apply(const Eigen::VectorXd& vector) const {
    switch (kind_) {
      case Preconditioner::kBlockJacobi: {
        Eigen::VectorXd result(vector.size());
        for (std::size_t k = 0; k < factors_.size(); ++k) {
          const int start = blocks_[k];
          const int width = blocks_[k + 1] - start;
          result.segment(start, width) = factors_[k].solve(vector.segment(start, width));
        }
        return result;
      }
      case Preconditioner::kIncompleteLu:
        return incomplete_lu_->solve(vector);
      case Preconditioner::kSparseLu:
        return sparse_lu_->solve(vector);
      case Preconditioner::kCholesky:
        return cholesky_->Solve(weights_.size() > 0 ? Eigen::VectorXd(weights_.cwiseProduct(vector)) : vector);
      case Preconditioner::kAuto:
      case Preconditioner::kNone:
        break;
    }
    return vector;
  }

 private:
  // S = ½ (W H + (W H)ᵀ) factored into `inputs.cholesky` (or an own factorization). Where the
  // sliding contacts' nonsymmetric terms leave S indefinite, S + σ diag|S| for σ = 0.01, 0.1, 1
  // (GMRES corrects the shift; a factorization costs a fraction of UMFPACK's LU of H). False
  // when none is positive definite.
  bool FactorSymmetricPart(const SparseMatrix& jacobian, const PreconditionerInputs& inputs) {
    weights_ = inputs.symmetrizing_row_weights;
    const SparseMatrix weighted = weights_.size() > 0 ? SparseMatrix(weights_.asDiagonal() * jacobian) : jacobian;
    const SparseMatrix transposed = weighted.transpose();
    SparseMatrix symmetric = 0.5 * (weighted + transposed);
    symmetric.makeCompressed();
    if (inputs.cholesky == nullptr) own_cholesky_ = std::make_unique<linear_algebra::SparseCholesky>();
    cholesky_ = inputs.cholesky != nullptr ? inputs.cholesky : own_cholesky_.get();
    if (cholesky_->Factor(symmetric)) return true;
    const Eigen::VectorXd magnitude = symmetric.diagonal().cwiseAbs();
    double shift = 0.0;
    for (const double next_shift : {0.01, 0.1, 1.0}) {
      for (int k = 0; k < symmetric.cols(); ++k) symmetric.coeffRef(k, k) += (next_shift - shift) * magnitude[k];
      shift = next_shift;
      if (cholesky_->Factor(symmetric)) return true;
    }
    return false;
  }

  Preconditioner kind_;
  Eigen::VectorXd weights_;
  linear_algebra::SparseCholesky* cholesky_ = nullptr;
  std::unique_ptr<linear_algebra::SparseCholesky> own_cholesky_;
  std::vector<int> blocks_;
  std::vector<Eigen::PartialPivLU<Eigen::MatrixXd>> factors_;
  std::unique_ptr<Eigen::IncompleteLUT<double>> incomplete_lu_;
  std::unique_ptr<Eigen::UmfPackLU<SparseMatrix>> sparse_lu_;
};

}  // namespace

// H P⁻¹ as a matrix-free operator, so that Eigen's GMRES (which preconditions on the left)
// runs right-preconditioned with its identity preconditioner: it then minimizes the true
// residual ‖H P⁻¹ y + g‖ = ‖H Δx + g‖, which keeps the descent guarantee of spec §2.10.
class RightPreconditionedJacobian;

}  // namespace contactlab::penalty

namespace Eigen::internal {
template <>
struct traits<contactlab::penalty::RightPreconditionedJacobian> : public traits<Eigen::SparseMatrix<double>> {};
}  // namespace Eigen::internal

namespace contactlab::penalty {

class RightPreconditionedJacobian : public Eigen::EigenBase<RightPreconditionedJacobian> {
 public:
  using Scalar = double;
  using RealScalar = double;
  using StorageIndex = int;
  enum { ColsAtCompileTime = Eigen::Dynamic, MaxColsAtCompileTime = Eigen::Dynamic, IsRowMajor = false };

  RightPreconditionedJacobian(const SparseMatrix& jacobian, const PreconditionerSolve& preconditioner)
      : jacobian_(&jacobian), preconditioner_(&preconditioner) {}
  Eigen::Index rows() const { return jacobian_->rows(); }
  Eigen::Index cols() const { return jacobian_->cols(); }

  template <typename Rhs>
  Eigen::Product<RightPreconditionedJacobian, Rhs, Eigen::AliasFreeProduct> operator*(
      const Eigen::MatrixBase<Rhs>& x) const {
    return Eigen::Product<RightPreconditionedJacobian, Rhs, Eigen::AliasFreeProduct>(*this, x.derived());
  }
  Eigen::VectorXd Apply(const Eigen::VectorXd& y) const { return (*jacobian_) * preconditioner_->Apply(y); }

 private:
  const SparseMatrix* jacobian_;
  const PreconditionerSolve* preconditioner_;
};

}  // namespace contactlab::penalty

namespace Eigen::internal {
template <typename Rhs>
struct generic_product_impl<contactlab::penalty::RightPreconditionedJacobian, Rhs, SparseShape, DenseShape, GemvProduct>
    : generic_product_impl_base<contactlab::penalty::RightPreconditionedJacobian, Rhs,
                                generic_product_impl<contactlab::penalty::RightPreconditionedJacobian, Rhs>> {
  using Scalar = typename Product<contactlab::penalty::RightPreconditionedJacobian, Rhs>::Scalar;
  template <typename Dest>
  static void scaleAndAddTo(Dest& destination, const contactlab::penalty::RightPreconditionedJacobian& operator_,
                            const Rhs& rhs, const Scalar& alpha) {
    destination.noalias() += alpha * operator_.Apply(Eigen::VectorXd(rhs));
  }
};
}  // namespace Eigen::internal

namespace contactlab::penalty {

std::string StabilizedNewtonOptions::Validate() const {
  using solvers::CheckNonNegative;
  using solvers::CheckPositive;
  if (std::string e = CheckNonNegative("residual_tolerance", residual_tolerance); !e.empty()) return e;
  if (std::string e = CheckNonNegative("stationarity_tolerance", stationarity_tolerance); !e.empty()) return e;
  if (max_iterations < 1) return "max_iterations must be >= 1 (got " + std::to_string(max_iterations) + ")";
  if (gmres_iterations < 1) return "gmres_iterations must be >= 1 (got " + std::to_string(gmres_iterations) + ")";
  if (!(gmres_relative_tolerance > 0.0 && gmres_relative_tolerance < 1.0)) {
    return "gmres_relative_tolerance must lie in (0, 1) (got " + std::to_string(gmres_relative_tolerance) + ")";
  }
  if (std::string e = CheckNonNegative("descent_cosine", descent_cosine); !e.empty()) return e;
  solvers::WolfeLineSearchOptions line_search;
  line_search.sufficient_decrease = line_search_sufficient_decrease;
  line_search.curvature = line_search_curvature;
  line_search.max_evaluations = line_search_max_evaluations;
  if (std::string e = line_search.Validate(); !e.empty()) return "line_search_" + e;
  return "";
}

std::string StabilizedNewtonResults::BriefReport() const {
  std::ostringstream out;
  out << summary.BriefReport("stabilized Newton") << "; " << fallback_directions << " fallback directions, |g| "
      << initial_residual_norm << " -> " << final_residual_norm << ", |H^T g| " << final_stationarity_norm;
  return out.str();
}

NewtonDirection ComputeNewtonDirection(const SparseMatrix& jacobian, const Eigen::VectorXd& residual,
                                       const std::vector<int>& preconditioner_blocks,
                                       const StabilizedNewtonOptions& options, Preconditioner kind) {
  PreconditionerInputs inputs;
  inputs.blocks = preconditioner_blocks;
  return ComputeNewtonDirection(jacobian, residual, inputs, options, kind);
}

NewtonDirection ComputeNewtonDirection(const SparseMatrix& jacobian, const Eigen::VectorXd& residual,
                                       const PreconditionerInputs& inputs, const StabilizedNewtonOptions& options,
                                       Preconditioner kind) {
  if (kind == Preconditioner::kAuto) throw std::logic_error("ComputeNewtonDirection: resolve kAuto first");
  NewtonDirection result;
  // One cycle of right-preconditioned GMRES for H Δx = −g from Δx = 0.
  const PreconditionerSolve preconditioner(kind, jacobian, inputs);
  result.preconditioner = preconditioner.kind();
  const RightPreconditionedJacobian operator_(jacobian, preconditioner);
  Eigen::GMRES<RightPreconditionedJacobian, Eigen::IdentityPreconditioner> gmres;
  gmres.set_restart(options.gmres_iterations);
  gmres.setMaxIterations(options.gmres_iterations);
  gmres.setTolerance(options.gmres_relative_tolerance);
  gmres.compute(operator_);
  const Eigen::VectorXd preconditioned = gmres.solveWithGuess(-residual, Eigen::VectorXd::Zero(residual.size()));
  result.direction = preconditioner.Apply(preconditioned);
  result.gmres_iterations = static_cast<int>(gmres.iterations());
  result.gmres_converged = gmres.info() == Eigen::Success;
  const double residual_norm = residual.norm();
  Eigen::VectorXd jacobian_direction = jacobian * result.direction;
  result.gmres_relative_residual = residual_norm > 0.0 ? (jacobian_direction + residual).norm() / residual_norm : 0.0;

  // Keep it when (sufficiently) downhill for E, else the steepest descent direction −Hᵀg.
  const double slope = residual.dot(jacobian_direction);
  const double length = jacobian_direction.norm();
  if (!std::isfinite(slope) || length == 0.0 || slope > -options.descent_cosine * residual_norm * length) {
    result.direction = -(jacobian.transpose() * residual);
    result.fallback = true;
  }
  return result;
}

StabilizedNewtonResults SolveStabilizedNewton(NonlinearSystem& system, const StabilizedNewtonOptions& options,
                                              Eigen::VectorXd& x) {
  const Clock::time_point solve_start = Clock::now();
  StabilizedNewtonResults results;
  solvers::SolverSummary& summary = results.summary;
  solvers::WolfeLineSearchOptions line_search_options;
  line_search_options.sufficient_decrease = options.line_search_sufficient_decrease;
  line_search_options.curvature = options.line_search_curvature;
  line_search_options.max_evaluations = options.line_search_max_evaluations;

  Eigen::VectorXd residual;
  SparseMatrix jacobian;
  bool evaluated_at_x = false;
  // The latest line-search trial, kept so that an accepted step needs no re-evaluation.
  Eigen::VectorXd trial_residual;
  SparseMatrix trial_jacobian;
  double trial_step = -1.0;
  // The Cholesky preconditioner's factorization, kept over the solve (CHOLMOD's analysis of a
  // pattern serves every iteration whose contacts did not change it).
  linear_algebra::SparseCholesky cholesky;
  PreconditionerInputs preconditioner_inputs;
  preconditioner_inputs.symmetrizing_row_weights = system.SymmetrizingRowWeights();
  preconditioner_inputs.cholesky = &cholesky;

  for (;;) {
    solvers::SolverIterationRecord record;
    NewtonIterationDetail detail;
    record.iteration = summary.iterations;
    record.threshold = options.residual_tolerance;

    // 1. Contacts found at the iterate join the system; evaluate g and H there.
    detail.contacts_changed = system.BeginIteration(x);
    if (detail.contacts_changed || !evaluated_at_x) system.Evaluate(x, &residual, &jacobian);
    evaluated_at_x = true;
    const Eigen::VectorXd stationarity = jacobian.transpose() * residual;
    record.residual = residual.norm();
    record.cost = 0.5 * record.residual * record.residual;
    detail.stationarity_norm = stationarity.norm();
    if (summary.iterations == 0) results.initial_residual_norm = record.residual;
    results.final_residual_norm = record.residual;
    results.final_stationarity_norm = detail.stationarity_norm;
    summary.cost = record.cost;
    summary.residual = solvers::ResidualRatio(record.residual, options.residual_tolerance);
    const auto keep = [&] {
      summary.history.push_back(record);
      results.details.push_back(detail);
    };

    // 2. Stop on the equations, on stationarity of E, or on the iteration budget.
    if (!std::isfinite(record.residual) || !std::isfinite(detail.stationarity_norm)) {
      keep();
      summary.Stop(solvers::Termination::kNumericalFailure,
                   "g or H^T g is not finite at iteration " + std::to_string(summary.iterations));
      break;
    }
    if (record.residual <= options.residual_tolerance) {
      keep();
      summary.Stop(solvers::Termination::kConverged,
                   solvers::Compare("|g|", record.residual, "<=", options.residual_tolerance));
      break;
    }
    if (detail.stationarity_norm <= options.stationarity_tolerance) {
      keep();
      summary.Stop(solvers::Termination::kStationary,
                   solvers::Compare("|H^T g|", detail.stationarity_norm, "<=", options.stationarity_tolerance) +
                       " while " + solvers::Compare("|g|", record.residual, ">", options.residual_tolerance));
      break;
    }
    if (summary.iterations >= options.max_iterations) {
      keep();
      summary.Stop(solvers::Termination::kMaxIterations,
                   "no convergence in " + std::to_string(summary.iterations) + " iterations; " +
                       solvers::Compare("|g|", record.residual, ">", options.residual_tolerance));
      break;
    }

    // 3–4. Newton direction by GMRES, or steepest descent of E when not downhill.
    const Clock::time_point direction_start = Clock::now();
    preconditioner_inputs.blocks = system.PreconditionerBlocks();
    const Preconditioner preconditioner =
        options.preconditioner == Preconditioner::kAuto ? Preconditioner::kCholesky : options.preconditioner;
    NewtonDirection newton = ComputeNewtonDirection(jacobian, residual, preconditioner_inputs, options, preconditioner);
    ++results.directions_by_preconditioner[static_cast<int>(newton.preconditioner)];
    detail.preconditioner = newton.preconditioner;
    Eigen::VectorXd& direction = newton.direction;
    record.linear_iterations = newton.gmres_iterations;
    detail.gmres_relative_residual = newton.gmres_relative_residual;
    detail.fallback_direction = newton.fallback;
    if (newton.fallback) ++results.fallback_directions;
    const double slope = residual.dot(jacobian * direction);
    summary.seconds.linear_solve += SecondsSince(direction_start);

    // 5. Strong Wolfe line search on E(x + αΔx) = ½‖g‖², E' = gᵀ H Δx.
    const Clock::time_point search_start = Clock::now();
    trial_step = -1.0;
    const solvers::MeritFunction merit = [&](double step) {
      system.Evaluate(x + step * direction, &trial_residual, &trial_jacobian);
      trial_step = step;
      return solvers::MeritSample{0.5 * trial_residual.squaredNorm(), trial_residual.dot(trial_jacobian * direction)};
    };
    const solvers::WolfeLineSearchResult line_search =
        solvers::WolfeLineSearch(merit, {0.5 * residual.squaredNorm(), slope}, line_search_options);
    summary.seconds.line_search += SecondsSince(search_start);
    record.line_search_evaluations = line_search.evaluations;
    record.step = line_search.step;
    summary.linear_iterations += record.linear_iterations;
    summary.line_search_evaluations += line_search.evaluations;
    ++summary.iterations;
    keep();
    if (!line_search.decreased) {
      summary.Stop(solvers::Termination::kLineSearchFailed,
                   "no trial step lowered E = |g|^2/2 at iteration " + std::to_string(record.iteration));
      break;
    }

    // 6. Accept the step; reuse the trial's evaluation when it was the accepted one.
    x += line_search.step * direction;
    if (trial_step == line_search.step) {
      residual.swap(trial_residual);
      jacobian.swap(trial_jacobian);
      evaluated_at_x = true;
    } else {
      evaluated_at_x = false;
    }
  }
  summary.seconds.total = SecondsSince(solve_start);
  return results;
}

}  // namespace contactlab::penalty
