#include "formulations/penalty/stabilized_newton.h"

#include <cmath>
#include <memory>
#include <sstream>

#include <Eigen/LU>
#include <Eigen/SparseLU>
#include <unsupported/Eigen/IterativeSolvers>

#include "formulations/solvers/exact_line_search.h"
#include "formulations/solvers/wolfe_line_search.h"

namespace contactlab::penalty {
namespace {

// P⁻¹ of one Newton iteration.
class PreconditionerSolve {
 public:
  PreconditionerSolve(Preconditioner kind, const SparseMatrix& jacobian, const std::vector<int>& blocks) : kind_(kind) {
    switch (kind) {
      case Preconditioner::kBlockJacobi: {
        // LU of each diagonal block: the nodes' contact stiffness Δt² w² K (not symmetric)
        // and the rigid bodies' translation–rotation coupling are inverted exactly.
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
      case Preconditioner::kNone:
        break;
    }
  }

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
      case Preconditioner::kNone:
        break;
    }
    return vector;
  }

 private:
  Preconditioner kind_;
  std::vector<int> blocks_;
  std::vector<Eigen::PartialPivLU<Eigen::MatrixXd>> factors_;
  std::unique_ptr<Eigen::IncompleteLUT<double>> incomplete_lu_;
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

const char* ToString(NewtonTermination termination) {
  switch (termination) {
    case NewtonTermination::kResidual:
      return "residual";
    case NewtonTermination::kStationary:
      return "stationary";
    case NewtonTermination::kMaxIterations:
      return "max_iterations";
    case NewtonTermination::kLineSearchFailed:
      return "line_search_failed";
    case NewtonTermination::kNonFinite:
      return "non_finite";
  }
  return "unknown";
}

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

std::string StabilizedNewtonSummary::BriefReport() const {
  std::ostringstream out;
  out << "stabilized Newton: " << ToString(termination) << " after " << iterations << " iterations ("
      << gmres_iterations << " GMRES, " << line_search_evaluations << " line-search evaluations, "
      << fallback_directions << " fallback directions); |g| " << initial_residual_norm << " -> " << final_residual_norm
      << ", |H^T g| " << final_stationarity_norm;
  return out.str();
}

NewtonDirection ComputeNewtonDirection(const SparseMatrix& jacobian, const Eigen::VectorXd& residual,
                                       const std::vector<int>& preconditioner_blocks,
                                       const StabilizedNewtonOptions& options) {
  NewtonDirection result;
  // One cycle of right-preconditioned GMRES for H Δx = −g from Δx = 0.
  const PreconditionerSolve preconditioner(options.preconditioner, jacobian, preconditioner_blocks);
  const RightPreconditionedJacobian operator_(jacobian, preconditioner);
  Eigen::GMRES<RightPreconditionedJacobian, Eigen::IdentityPreconditioner> gmres;
  gmres.set_restart(options.gmres_iterations);
  gmres.setMaxIterations(options.gmres_iterations);
  gmres.setTolerance(options.gmres_relative_tolerance);
  gmres.compute(operator_);
  const Eigen::VectorXd preconditioned = gmres.solveWithGuess(-residual, Eigen::VectorXd::Zero(residual.size()));
  result.direction = preconditioner.Apply(preconditioned);
  result.gmres_iterations = static_cast<int>(gmres.iterations());
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

StabilizedNewtonSummary SolveStabilizedNewton(NonlinearSystem& system, const StabilizedNewtonOptions& options,
                                              Eigen::VectorXd& x) {
  StabilizedNewtonSummary summary;
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

  for (;;) {
    NewtonIterationRecord record;
    record.iteration = summary.iterations;

    // 1. Contacts found at the iterate join the system; evaluate g and H there.
    record.contacts_changed = system.BeginIteration(x);
    if (record.contacts_changed || !evaluated_at_x) system.Evaluate(x, &residual, &jacobian);
    evaluated_at_x = true;
    const Eigen::VectorXd stationarity = jacobian.transpose() * residual;
    record.residual_norm = residual.norm();
    record.stationarity_norm = stationarity.norm();
    if (summary.iterations == 0) summary.initial_residual_norm = record.residual_norm;
    summary.final_residual_norm = record.residual_norm;
    summary.final_stationarity_norm = record.stationarity_norm;

    // 2. Stop on the equations, on stationarity of E, or on the iteration budget.
    if (!std::isfinite(record.residual_norm) || !std::isfinite(record.stationarity_norm)) {
      summary.termination = NewtonTermination::kNonFinite;
      summary.records.push_back(record);
      break;
    }
    if (record.residual_norm <= options.residual_tolerance) {
      summary.termination = NewtonTermination::kResidual;
      summary.records.push_back(record);
      break;
    }
    if (record.stationarity_norm <= options.stationarity_tolerance) {
      summary.termination = NewtonTermination::kStationary;
      summary.records.push_back(record);
      break;
    }
    if (summary.iterations >= options.max_iterations) {
      summary.termination = NewtonTermination::kMaxIterations;
      summary.records.push_back(record);
      break;
    }

    // 3–4. Newton direction by GMRES, or steepest descent of E when not downhill.
    NewtonDirection newton = ComputeNewtonDirection(jacobian, residual, system.PreconditionerBlocks(), options);
    Eigen::VectorXd& direction = newton.direction;
    record.gmres_iterations = newton.gmres_iterations;
    record.gmres_relative_residual = newton.gmres_relative_residual;
    record.fallback_direction = newton.fallback;
    if (newton.fallback) ++summary.fallback_directions;
    const double slope = residual.dot(jacobian * direction);

    // 5. Strong Wolfe line search on E(x + αΔx) = ½‖g‖², E' = gᵀ H Δx.
    trial_step = -1.0;
    const solvers::MeritFunction merit = [&](double step) {
      system.Evaluate(x + step * direction, &trial_residual, &trial_jacobian);
      trial_step = step;
      return solvers::MeritSample{0.5 * trial_residual.squaredNorm(), trial_residual.dot(trial_jacobian * direction)};
    };
    const solvers::WolfeLineSearchResult line_search =
        solvers::WolfeLineSearch(merit, {0.5 * residual.squaredNorm(), slope}, line_search_options);
    record.line_search_evaluations = line_search.evaluations;
    record.step = line_search.step;
    summary.gmres_iterations += record.gmres_iterations;
    summary.line_search_evaluations += line_search.evaluations;
    ++summary.iterations;
    summary.records.push_back(record);
    if (!line_search.decreased) {
      summary.termination = NewtonTermination::kLineSearchFailed;
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
  return summary;
}

}  // namespace contactlab::penalty
