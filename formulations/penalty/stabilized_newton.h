#pragma once
// The stabilized Newton solver of [ding_schroeder_penalty] §3 (spec-penalty-hybrid §2.10–2.11, A3–A5) for a
// square nonlinear system g(x) = 0 whose Jacobian H = ∂g/∂x is not symmetric:
//   * merit function E(x) = ½‖g(x)‖², with ∇E = Hᵀg;
//   * direction: inexact Newton, H Δx ≈ −g by one cycle of right-preconditioned GMRES
//     (Eigen's unsupported IterativeSolvers module) from Δx = 0, preconditioned by the Cholesky
//     factor of H's symmetric part (Preconditioner::kAuto; [ding_schroeder_penalty] names no
//     preconditioner). Any such iterate that
//     lowers the residual is downhill for E (spec §2.10: gᵀHΔx = −‖g‖² − gᵀρ < 0 when
//     ‖ρ‖ < ‖g‖); when GMRES stagnates the direction falls back to −Hᵀg;
//   * step: strong Wolfe line search on E (solvers/wolfe_line_search.h);
//   * stop: ‖g‖ ≤ τ_g (the equations hold) or ‖Hᵀg‖ ≤ τ_s (a stationary point of E, which
//     may not be a solution; [ding_schroeder_penalty] never saw one). Unconverged steps are kept and
//     reported, as [ding_schroeder_penalty] does.
#include <array>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "formulations/linear_algebra/sparse_cholesky.h"
#include "formulations/solvers/solver_summary.h"

namespace contactlab::penalty {

using SparseMatrix = Eigen::SparseMatrix<double>;  // column-major

// The equations of one implicit step.
class NonlinearSystem {
 public:
  virtual ~NonlinearSystem() = default;
  virtual int size() const = 0;
  // Called at the start of every Newton iteration with the current iterate. Returns true
  // when g changed as a function (the penalty system registers contacts found at x here,
  // spec A5); between two calls the system is a fixed function of x.
  virtual bool BeginIteration(const Eigen::VectorXd& x) = 0;
  // g(x), and H(x) when `jacobian` is not null.
  virtual void Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) = 0;
  // The diagonal blocks [starts[k], starts[k+1]) of the block-Jacobi preconditioner, ending
  // with size() (e.g. three per grid node, six per free rigid body).
  virtual std::vector<int> PreconditionerBlocks() const = 0;
  // Row weights W under which W H is symmetric but for the few nonsymmetric terms of contact
  // (the Cholesky preconditioner factors the symmetric part of W H). Empty: W = I.
  virtual Eigen::VectorXd SymmetrizingRowWeights() const { return {}; }
};

enum class Preconditioner {
  // kCholesky. Block Jacobi leaves GMRES(20) far from the Newton step wherever the material's
  // stiffness outweighs its mass at the grid scale (Δt² K / m ~ (c Δt / h)², thousands for the
  // elastic ball), and Newton then takes a hundred iterations a step.
  kAuto,
  kBlockJacobi,   // LU of H's diagonal blocks (spec A4)
  kIncompleteLu,  // Eigen's IncompleteLUT of the whole H
  kSparseLu,      // UMFPACK's complete LU of the whole H: GMRES then needs one iteration
  kNone,
  // CHOLMOD's Cholesky factor of S = sym(W H) (NonlinearSystem::SymmetrizingRowWeights),
  // applied as P⁻¹ = S⁻¹ W: exact but for the nonsymmetric part of the contact stiffness, so
  // GMRES needs a few iterations however stiff the material. Where the sliding contacts
  // leave S indefinite, S + σ diag|S| (σ = 0.01, 0.1, 1); where none factors, kSparseLu.
  kCholesky,
};
inline constexpr int kPreconditionerCount = 6;

struct StabilizedNewtonOptions {
  // Stop when ‖g‖ ≤ residual_tolerance [units of g]. The caller scales it to its problem.
  double residual_tolerance = 1.0e-8;
  // Stop when ‖Hᵀg‖ ≤ stationarity_tolerance [units of Hᵀg]: E cannot be lowered further.
  double stationarity_tolerance = 1.0e-12;
  // Newton iterations before giving up ([ding_schroeder_penalty]: 1000, never reached).
  int max_iterations = 1000;
  // GMRES iterations in its single cycle ([ding_schroeder_penalty] §5: at most 20).
  int gmres_iterations = 20;
  // GMRES stops once ‖HΔx + g‖ ≤ this · ‖g‖ [-]: inexact Newton (spec A4: about 1e-3).
  double gmres_relative_tolerance = 1.0e-3;
  Preconditioner preconditioner = Preconditioner::kAuto;
  // The GMRES direction is used only when gᵀHΔx ≤ −c₀ ‖g‖ ‖HΔx‖ [-] (spec §2.10, c₀ ~ 1e-8);
  // otherwise the steepest descent direction of E, −Hᵀg.
  double descent_cosine = 1.0e-8;
  double line_search_sufficient_decrease = 1.0e-4;  // Wolfe c₁ [-] (spec A3)
  double line_search_curvature = 0.9;               // Wolfe c₂ [-] (spec A3)
  int line_search_max_evaluations = 20;             // spec A3

  // Empty when valid, else a one-line reason naming the field.
  std::string Validate() const;
};

// What stabilized Newton records per iteration beyond the shared SolverIterationRecord
// (same index in SolverSummary::history).
struct NewtonIterationDetail {
  double stationarity_norm = 0.0;                         // ‖Hᵀg‖ at the iterate
  double gmres_relative_residual = 0.0;                   // ‖HΔx + g‖ / ‖g‖ after GMRES
  bool fallback_direction = false;                        // −Hᵀg was used
  bool contacts_changed = false;                          // BeginIteration changed g
  Preconditioner preconditioner = Preconditioner::kNone;  // the one the direction used
};

struct StabilizedNewtonResults {
  // Termination: kConverged (‖g‖ ≤ τ_g), kStationary (‖Hᵀg‖ ≤ τ_s only), kMaxIterations,
  // kLineSearchFailed (no trial step lowered E) or kNumericalFailure (g or H not finite).
  // cost is the merit E = ½‖g‖², residual ‖g‖ / τ_g, linear_iterations the GMRES
  // iterations; the history (always kept) has ‖g‖ against τ_g, one record per iterate.
  solvers::SolverSummary summary;
  std::vector<NewtonIterationDetail> details;  // one per history record
  int fallback_directions = 0;
  // Newton directions per preconditioner applied (indexed by Preconditioner; kAuto stays 0).
  std::array<int, kPreconditionerCount> directions_by_preconditioner{};
  double initial_residual_norm = 0.0;    // ‖g‖ at the first iterate
  double final_residual_norm = 0.0;      // ‖g‖ at the last
  double final_stationarity_norm = 0.0;  // ‖Hᵀg‖ at the last

  bool converged() const { return summary.converged(); }
  // One line: the shared report, then the fallback count and ‖g‖ from first to last.
  std::string BriefReport() const;
};

// The search direction of one iteration (steps 3–4 of the loop): right-preconditioned
// GMRES for H Δx = −g from Δx = 0, replaced by −Hᵀg when it is not downhill for E.
// `preconditioner` is the one to apply (not kAuto); a sparse LU that fails (H singular to
// UMFPACK, or out of memory) gives way to block Jacobi, and `preconditioner` says so.
struct NewtonDirection {
  Eigen::VectorXd direction;
  int gmres_iterations = 0;
  double gmres_relative_residual = 0.0;                   // ‖HΔx + g‖ / ‖g‖ of the GMRES direction
  bool gmres_converged = false;                           // GMRES met gmres_relative_tolerance in its cycle
  bool fallback = false;                                  // −Hᵀg was returned
  Preconditioner preconditioner = Preconditioner::kNone;  // the one applied
};
// What the preconditioners read beside H: block Jacobi's blocks, and for kCholesky the row
// weights W and the factorization object, kept from one direction to the next so that CHOLMOD
// analyses a pattern once (null: a new one per direction).
struct PreconditionerInputs {
  std::vector<int> blocks;
  Eigen::VectorXd symmetrizing_row_weights;
  linear_algebra::SparseCholesky* cholesky = nullptr;
};
NewtonDirection ComputeNewtonDirection(const SparseMatrix& jacobian, const Eigen::VectorXd& residual,
                                       const PreconditionerInputs& inputs, const StabilizedNewtonOptions& options,
                                       Preconditioner preconditioner);
// The same with block Jacobi's blocks alone (W = I).
NewtonDirection ComputeNewtonDirection(const SparseMatrix& jacobian, const Eigen::VectorXd& residual,
                                       const std::vector<int>& preconditioner_blocks,
                                       const StabilizedNewtonOptions& options, Preconditioner preconditioner);

// Solves g(x) = 0 from `x` (overwritten with the last accepted iterate).
StabilizedNewtonResults SolveStabilizedNewton(NonlinearSystem& system, const StabilizedNewtonOptions& options,
                                              Eigen::VectorXd& x);

}  // namespace contactlab::penalty
