#pragma once
// The SAP solver (Castro, Permenter, Han 2022; spec-sap-qn §1.3.1–1.3.3) for the convex
// contact problem of one time step ([zong2024convex] eq. 7):
//   min_v ℓ(v) = ½ ‖v − v*‖²_A + Σ_c ℓ_c(J_c v + b_c),
// with A symmetric positive definite, v* the free-motion velocity, and one convex contact
// cost ℓ_c per constraint (contact_model.h). Newton's method on ℓ: gradient
// ∇ℓ = A (v − v*) − Jᵀ γ, Hessian H = A + Jᵀ G J, the exact line search, and SAP's two
// stopping rules (scaled optimality and cost stagnation).
//
// The quadratic part is reached through SapLinearSystem so the same Newton loop runs on a
// dense reduced problem (Schur complement of the MPM grid onto contact nodes) and on the
// full sparse problem (CHOLMOD).
#include <string>
#include <vector>

#include <Eigen/Core>

#include "formulations/contact/contact_model.h"
#include "formulations/linear_algebra/dense_cholesky.h"
#include "formulations/solvers/exact_line_search.h"
#include "formulations/solvers/solver_summary.h"

namespace contactlab::solvers {

using mpm::Matrix3;
using mpm::Vector3;

// A 3 × width block of a contact Jacobian acting on the unknowns [column, column + width).
struct JacobianBlock {
  int column = 0;
  Eigen::Matrix<double, 3, Eigen::Dynamic> matrix;
};

// One contact constraint: v_c = Σ_blocks block · v[column…] + bias (contact frame).
struct SapConstraint {
  std::vector<JacobianBlock> jacobian;  // blocks with disjoint column ranges
  Vector3 bias = Vector3::Zero();       // b [m/s]: velocity of prescribed motion
  contact::PreparedContact contact;
};

struct SapProblem {
  Eigen::VectorXd free_motion_velocity;  // v* (size of the linear system)
  std::vector<SapConstraint> constraints;
  const contact::ContactModel* model = nullptr;
};

// v_c of every constraint for velocities v.
std::vector<Vector3> ContactVelocities(const SapProblem& problem, const Eigen::VectorXd& velocity);
// result += Σ_c J_cᵀ f_c (e.g. the generalized impulse Jᵀ γ).
void AddJacobianTransposeProduct(const SapProblem& problem, const std::vector<Vector3>& per_constraint,
                                 Eigen::VectorXd& result);

// The linear algebra of the quadratic part.
class SapLinearSystem {
 public:
  virtual ~SapLinearSystem() = default;
  virtual int size() const = 0;
  // result = A x.
  virtual void Multiply(const Eigen::VectorXd& x, Eigen::VectorXd& result) const = 0;
  // diag(A), for the optimality scaling D = diag(A)^(-1/2).
  virtual const Eigen::VectorXd& Diagonal() const = 0;
  // Factors H = A + Σ_c J_cᵀ G_c J_c; false when H is not numerically positive definite.
  virtual bool Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) = 0;
  // solution = H⁻¹ rhs with the last factorization.
  virtual void Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const = 0;
};

// A dense A and a dense LLᵀ of H: the reduced (Schur complement) problems and tests.
class DenseSapLinearSystem final : public SapLinearSystem {
 public:
  explicit DenseSapLinearSystem(Eigen::MatrixXd dynamics_matrix);
  int size() const override { return static_cast<int>(matrix_.rows()); }
  void Multiply(const Eigen::VectorXd& x, Eigen::VectorXd& result) const override;
  const Eigen::VectorXd& Diagonal() const override { return diagonal_; }
  bool Factor(const SapProblem& problem, const std::vector<Matrix3>& contact_hessians) override;
  void Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd& solution) const override;
  const Eigen::MatrixXd& matrix() const { return matrix_; }

 private:
  Eigen::MatrixXd matrix_;
  Eigen::VectorXd diagonal_;
  Eigen::MatrixXd hessian_;
  linear_algebra::DenseCholesky factorization_;
  // Scratch for G_c B_j while assembling H (no allocation once wide enough).
  Eigen::Matrix<double, 3, Eigen::Dynamic> hessian_times_block_;
};

struct SapSolverOptions {
  // ε_r of the optimality rule ‖D ∇ℓ‖ ≤ ε_a + ε_r max(‖D A v‖, ‖D Jᵀγ‖) [-]; [zong2024convex] uses
  // 1e-6 for every experiment.
  double relative_tolerance = 1.0e-6;
  // ε_a [√J]: guards problems whose momentum scale is zero (Drake default 1e-14).
  double absolute_tolerance = 1.0e-14;
  // Newton iterations before giving up (Drake default 100).
  int max_iterations = 100;
  // Cost-stagnation rule after a step with α > 0.5:
  // |ℓᵏ⁺¹ − ℓᵏ| < absolute + relative · ½(ℓᵏ⁺¹ + ℓᵏ), which detects round-off stalls.
  double cost_absolute_tolerance = 1.0e-30;
  double cost_relative_tolerance = 1.0e-15;
  // Chord steps (modified Newton): after an iteration that cut the scaled residual ‖D∇ℓ‖ to
  // at most this fraction of the previous iterate's, the next direction is solved with the
  // last factorization of H instead of a new one. That H is SPD, so the direction still
  // descends and the exact line search still lowers ℓ; the minimizer and the stopping rules
  // are unchanged. A reused step that does not cut the residual by this fraction brings a
  // fresh factorization. 0: factor H at every iteration (Newton, as SAP does).
  double factorization_reuse_ratio = 0.0;
  solvers::ExactLineSearchOptions line_search;
  // Empty when valid, else a one-line reason naming the field.
  std::string Validate() const;
};

struct SapSolverResults {
  Eigen::VectorXd velocity;                 // v
  std::vector<Vector3> impulses;            // γ per constraint, contact frame [N s]
  std::vector<Vector3> contact_velocities;  // v_c per constraint [m/s]
  int factorizations = 0;                   // of H; fewer than the iterations with chord steps
  // Termination (kConverged: the optimality rule; kCostStagnation; kMaxIterations;
  // kLineSearchFailed; kNumericalFailure: H could not be factored), Newton iterations, cost
  // ℓ(v) [J], ‖D∇ℓ‖ / threshold, the history (one record per iterate, the last one final) and
  // the time split (linear_solve: building and factoring H and the Newton solves).
  SolverSummary summary;
};

// ℓ(v) and its pieces, for tests and diagnostics.
double SapCost(const SapProblem& problem, const SapLinearSystem& system, const Eigen::VectorXd& velocity);

// Newton from `initial_velocity` (warm start; v* is the usual choice).
SapSolverResults SolveSap(const SapProblem& problem, SapLinearSystem& system, const Eigen::VectorXd& initial_velocity,
                          const SapSolverOptions& options);

}  // namespace contactlab::solvers
