#include "formulations/solvers/sap_solver.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "formulations/phase_clock.h"

namespace contactlab::solvers {

namespace {

// out_c = J_c x (+ b_c when `with_bias`) for every constraint; `out` keeps its storage.
void MultiplyByJacobian(const SapProblem& problem, const Eigen::VectorXd& x, bool with_bias,
                        std::vector<Vector3>& out) {
  const int num_constraints = static_cast<int>(problem.constraints.size());
  out.resize(num_constraints);
  for (int c = 0; c < num_constraints; ++c) {
    const SapConstraint& constraint = problem.constraints[c];
    Vector3 product = with_bias ? constraint.bias : Vector3::Zero();
    for (const JacobianBlock& block : constraint.jacobian) {
      product.noalias() += block.matrix * x.segment(block.column, block.matrix.cols());
    }
    out[c] = product;
  }
}

// Checks the problem against the size of the linear system; throws std::invalid_argument.
void CheckProblem(const SapProblem& problem, int size) {
  if (problem.model == nullptr) throw std::invalid_argument("SapProblem: model is null");
  if (problem.free_motion_velocity.size() != size) {
    throw std::invalid_argument("SapProblem: free_motion_velocity has size " +
                                std::to_string(problem.free_motion_velocity.size()) + ", the linear system " +
                                std::to_string(size));
  }
  for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
    for (const JacobianBlock& block : problem.constraints[c].jacobian) {
      if (block.column < 0 || block.column + block.matrix.cols() > size) {
        throw std::invalid_argument("SapProblem: Jacobian block of constraint " + std::to_string(c) +
                                    " spans columns outside [0, " + std::to_string(size) + ")");
      }
    }
  }
}

}  // namespace

std::vector<Vector3> ContactVelocities(const SapProblem& problem, const Eigen::VectorXd& velocity) {
  std::vector<Vector3> contact_velocities;
  MultiplyByJacobian(problem, velocity, /*with_bias=*/true, contact_velocities);
  return contact_velocities;
}

void AddJacobianTransposeProduct(const SapProblem& problem, const std::vector<Vector3>& per_constraint,
                                 Eigen::VectorXd& result) {
  for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
    for (const JacobianBlock& block : problem.constraints[c].jacobian) {
      result.segment(block.column, block.matrix.cols()).noalias() += block.matrix.transpose() * per_constraint[c];
    }
  }
}

// ---------------------------------------------------------------------------------------
// DenseSapLinearSystem.

DenseSapLinearSystem::DenseSapLinearSystem(Eigen::MatrixXd dynamics_matrix) : matrix_(std::move(dynamics_matrix)) {
  if (matrix_.rows() != matrix_.cols()) {
    throw std::invalid_argument("DenseSapLinearSystem: the dynamics matrix is not square");
  }
  diagonal_ = matrix_.diagonal();
  hessian_.resize(matrix_.rows(), matrix_.cols());
}

void DenseSapLinearSystem::Multiply(const Eigen::VectorXd& x, Eigen::VectorXd& result) const {
  result.noalias() = matrix_ * x;
}

bool DenseSapLinearSystem::Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) {
  // H = A + Σ_c J_cᵀ G_c J_c (§1.3.1). Each constraint touches only the columns of its
  // Jacobian blocks, so it adds B_iᵀ G_c B_j into the block (column_i, column_j) for every
  // pair (i, j) of its blocks; both triangles are filled so H stays symmetric.
  hessian_ = matrix_;
  for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
    const Matrix3& contact_hessian = contact_hessians[c];
    if (contact_hessian.isZero(0.0)) continue;  // no contact: nothing to add
    const std::vector<JacobianBlock>& blocks = problem.constraints[c].jacobian;
    for (const JacobianBlock& right : blocks) {
      hessian_times_block_.noalias() = contact_hessian * right.matrix;  // G_c B_j
      for (const JacobianBlock& left : blocks) {
        hessian_.block(left.column, right.column, left.matrix.cols(), right.matrix.cols()).noalias() +=
            left.matrix.transpose() * hessian_times_block_;
      }
    }
  }
  return factorization_.Factor(hessian_);
}

void DenseSapLinearSystem::Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const {
  factorization_.Solve(rhs, solution);
}

// ---------------------------------------------------------------------------------------
// Options, cost and report.

std::string SapSolverOptions::Validate() const {
  using solvers::CheckNonNegative;
  using solvers::CheckPositive;
  for (const std::string& problem :
       {CheckNonNegative("relative_tolerance", relative_tolerance),
        CheckNonNegative("absolute_tolerance", absolute_tolerance), CheckPositive("max_iterations", max_iterations),
        CheckNonNegative("cost_absolute_tolerance", cost_absolute_tolerance),
        CheckNonNegative("cost_relative_tolerance", cost_relative_tolerance),
        factorization_reuse_ratio >= 0.0 && factorization_reuse_ratio < 1.0
            ? std::string()
            : "factorization_reuse_ratio must lie in [0, 1), got " + std::to_string(factorization_reuse_ratio),
        line_search.Validate()}) {
    if (!problem.empty()) return problem;
  }
  return "";
}

double SapCost(const SapProblem& problem, const SapLinearSystem& system, const Eigen::VectorXd& velocity) {
  // ℓ(v) = ½ ‖v − v*‖²_A + Σ_c ℓ_c(J_c v + b_c) (§1.3.1).
  const Eigen::VectorXd velocity_change = velocity - problem.free_motion_velocity;
  Eigen::VectorXd momentum_change(system.size());
  system.Multiply(velocity_change, momentum_change);
  double cost = 0.5 * velocity_change.dot(momentum_change);
  const std::vector<Vector3> contact_velocities = ContactVelocities(problem, velocity);
  for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
    cost += problem.model->Cost(problem.constraints[c].contact, contact_velocities[c]);
  }
  return cost;
}

// ---------------------------------------------------------------------------------------
// The Newton loop (§1.3.3).

SapSolverResults SolveSap(const SapProblem& problem, SapLinearSystem& system, const Eigen::VectorXd& initial_velocity,
                          const SapSolverOptions& options) {
  if (const std::string problem_with_options = options.Validate(); !problem_with_options.empty()) {
    throw std::invalid_argument("SapSolverOptions: " + problem_with_options);
  }
  const int size = system.size();
  CheckProblem(problem, size);
  if (initial_velocity.size() != size) {
    throw std::invalid_argument("SolveSap: initial velocity has size " + std::to_string(initial_velocity.size()) +
                                ", the linear system " + std::to_string(size));
  }
  const contact::ContactModel& model = *problem.model;
  const int num_constraints = static_cast<int>(problem.constraints.size());
  const Eigen::VectorXd& free_motion_velocity = problem.free_motion_velocity;

  // Per-solve constants: the optimality scaling D = diag(A)^(-1/2) and p* = A v*.
  const Eigen::VectorXd scaling = system.Diagonal().cwiseSqrt().cwiseInverse();
  const double weight_sum = system.Diagonal().sum();  // Σ_k (D_kk)⁻² of the rule's weights
  Eigen::VectorXd free_motion_momentum(size);
  system.Multiply(free_motion_velocity, free_motion_momentum);

  // State at the current iterate v: momentum p = A v, per-constraint v_c, γ_c, G_c, the
  // generalized impulse j_c = Jᵀγ and ∇ℓ = p − p* − j_c. Buffers are allocated once.
  const Clock::time_point solve_start = Clock::now();
  SapSolverResults results;
  SolverSummary& summary = results.summary;
  Eigen::VectorXd& velocity = results.velocity;
  velocity = initial_velocity;
  std::vector<Vector3>& contact_velocities = results.contact_velocities;
  std::vector<Vector3>& impulses = results.impulses;
  impulses.resize(num_constraints);
  std::vector<Matrix3> contact_hessians(num_constraints);
  Eigen::VectorXd momentum(size), generalized_impulse(size), gradient(size);
  // Search direction Δv, its momentum Δp = A Δv and contact velocities Δv_c = J Δv.
  Eigen::VectorXd search_direction(size), momentum_direction(size);
  std::vector<Vector3> contact_velocity_direction(num_constraints);
  Eigen::VectorXd negative_gradient(size);

  double previous_cost = std::numeric_limits<double>::quiet_NaN();
  double previous_step = 0.0;
  double previous_residual = std::numeric_limits<double>::infinity();
  bool previous_step_reused = false;  // the last direction came from an older factorization
  for (int iteration = 0;; ++iteration) {
    // Evaluate ℓ, γ, G and ∇ℓ at v (§1.3.1).
    MultiplyByJacobian(problem, velocity, /*with_bias=*/true, contact_velocities);
    double contact_cost = 0.0;
    for (int c = 0; c < num_constraints; ++c) {
      const contact::ContactEvaluation evaluation =
          model.Evaluate(problem.constraints[c].contact, contact_velocities[c], /*with_hessian=*/true);
      impulses[c] = evaluation.impulse;
      contact_hessians[c] = evaluation.hessian;
      contact_cost += evaluation.cost;
    }
    system.Multiply(velocity, momentum);
    const double momentum_cost = 0.5 * (velocity - free_motion_velocity).dot(momentum - free_motion_momentum);
    const double cost = momentum_cost + contact_cost;
    generalized_impulse.setZero();
    AddJacobianTransposeProduct(problem, impulses, generalized_impulse);
    gradient = momentum - free_motion_momentum - generalized_impulse;

    // Optimality rule ‖D∇ℓ‖ ≤ ε_a + ε_r max(‖D p‖, ‖D j_c‖) (§1.3.3).
    const double optimality_residual = scaling.cwiseProduct(gradient).norm();
    const double optimality_threshold =
        options.absolute_tolerance +
        options.relative_tolerance *
            std::max(scaling.cwiseProduct(momentum).norm(), scaling.cwiseProduct(generalized_impulse).norm());
    summary.cost = cost;
    summary.iterations = iteration;
    summary.residual = ResidualRatio(optimality_residual, optimality_threshold);
    summary.momentum_residual_bound = std::sqrt(weight_sum) * optimality_residual;
    SolverIterationRecord record;
    record.iteration = iteration;
    record.cost = cost;
    record.residual = optimality_residual;
    record.threshold = optimality_threshold;
    if (optimality_residual <= optimality_threshold) {
      summary.history.push_back(record);
      summary.Stop(Termination::kConverged, Compare("|D grad l|", optimality_residual, "<=", optimality_threshold));
      break;
    }
    // Cost-stagnation rule after a Newton step with α > 0.5 (§1.3.3): round-off keeps ℓ from
    // decreasing further, so more Newton steps cannot improve v. A chord step's small change
    // may come from its stale direction instead, so it does not count.
    if (iteration > 0 && previous_step > 0.5 && !previous_step_reused &&
        std::abs(cost - previous_cost) <
            options.cost_absolute_tolerance + options.cost_relative_tolerance * 0.5 * (cost + previous_cost)) {
      summary.history.push_back(record);
      summary.Stop(
          Termination::kCostStagnation,
          Compare("cost change", std::abs(cost - previous_cost), "<",
                  options.cost_absolute_tolerance + options.cost_relative_tolerance * 0.5 * (cost + previous_cost)) +
              " after a step of " + std::to_string(previous_step));
      break;
    }
    if (iteration == options.max_iterations) {
      summary.history.push_back(record);
      summary.Stop(Termination::kMaxIterations,
                   "no convergence in " + std::to_string(iteration) + " iterations; " +
                       Compare("|D grad l|", optimality_residual, ">", optimality_threshold));
      break;
    }

    // Newton direction H Δv = −∇ℓ with H = A + Jᵀ G J, or a chord direction with the last
    // factorization after an iteration that cut the residual enough.
    const Clock::time_point factor_start = Clock::now();
    const bool reuse =
        results.factorizations > 0 && optimality_residual <= options.factorization_reuse_ratio * previous_residual;
    const bool factored = reuse || system.Factor(problem, contact_hessians);
    if (!reuse) ++results.factorizations;
    previous_residual = optimality_residual;
    previous_step_reused = reuse;
    if (factored) {
      negative_gradient = -gradient;
      system.Solve(negative_gradient, search_direction);
    }
    summary.seconds.linear_solve += SecondsSince(factor_start);
    if (!factored) {
      summary.history.push_back(record);
      summary.Stop(Termination::kNumericalFailure,
                   "the Newton matrix H = A + J^T G J could not be factored at iteration " + std::to_string(iteration));
      break;
    }

    // Exact line search on ℓ(α) = ℓ(v + αΔv) at O(contacts) per evaluation (§1.3.3 step 3):
    // with a = Δvᵀ A Δv and b = Δvᵀ A (v − v*) the quadratic part is ℓ_A(0) + αb + ½α²a,
    // and every contact moves along v_c + αΔv_c.
    system.Multiply(search_direction, momentum_direction);
    const double curvature = search_direction.dot(momentum_direction);
    const double momentum_slope = search_direction.dot(momentum - free_motion_momentum);
    MultiplyByJacobian(problem, search_direction, /*with_bias=*/false, contact_velocity_direction);
    auto line = [&](double step) {
      solvers::LineSample sample;
      sample.value = momentum_cost + step * momentum_slope + 0.5 * step * step * curvature;
      sample.derivative = momentum_slope + step * curvature;
      sample.second_derivative = curvature;
      for (int c = 0; c < num_constraints; ++c) {
        const Vector3& direction = contact_velocity_direction[c];
        const contact::ContactEvaluation evaluation = model.Evaluate(
            problem.constraints[c].contact, contact_velocities[c] + step * direction, /*with_hessian=*/true);
        sample.value += evaluation.cost;
        sample.derivative -= direction.dot(evaluation.impulse);
        sample.second_derivative += direction.dot(evaluation.hessian * direction);
      }
      return sample;
    };
    // The sample at α = 0 reuses the evaluation at v.
    solvers::LineSample initial;
    initial.value = cost;
    initial.derivative = momentum_slope;
    initial.second_derivative = curvature;
    for (int c = 0; c < num_constraints; ++c) {
      const Vector3& direction = contact_velocity_direction[c];
      initial.derivative -= direction.dot(impulses[c]);
      initial.second_derivative += direction.dot(contact_hessians[c] * direction);
    }
    const Clock::time_point search_start = Clock::now();
    const solvers::LineSearchResult search = solvers::ExactLineSearch(line, initial, options.line_search);
    summary.seconds.line_search += SecondsSince(search_start);
    summary.line_search_evaluations += search.evaluations;
    record.line_search_evaluations = search.evaluations;
    if (!search.success) {
      summary.history.push_back(record);
      summary.Stop(Termination::kLineSearchFailed,
                   "the exact line search found no minimizer along the Newton direction at iteration " +
                       std::to_string(iteration));
      break;
    }
    record.step = search.step;
    summary.history.push_back(record);

    // Take the step.
    velocity.noalias() += search.step * search_direction;
    previous_cost = cost;
    previous_step = search.step;
  }
  summary.seconds.total = SecondsSince(solve_start);
  return results;
}

}  // namespace contactlab::solvers
