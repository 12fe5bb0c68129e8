#pragma once
// The block-diagonal quasi-Newton solver of [yu2025async] (Algorithm 1; spec-sap-qn §1.2.3,
// Algorithm B.1 and kernels K1–K8) for the contact problem of one MPM substep (eq. 8):
//   min_v ℓ_p(v) = ½ ‖v − v*‖²_M + Σ_p ℓ_c(v_c,p),   v_c,p = R_CW,p Σ_i w_ip v_i + b_p,
// with M the lumped (diagonal) grid mass, v* the explicit free-motion grid velocity and one
// convex contact cost per contact particle (contact_model.h; [yu2025async] uses "lagged").
//
// Each iteration evaluates the gradient r_i = m_i (v_i − v*_i) − Σ_p w_ip R_WC,p γ_p (eq. 9)
// and only the 3 × 3 node-diagonal blocks H_i = m_i I + Σ_p w_ip² R_WC,p G_p R_CW,p of the
// Hessian (eq. 10), solves each block by a 3 × 3 Cholesky factorization, and takes the exact
// line search along that direction. The iteration lives on the stencil nodes of contact
// particles only: started from v* (spec Y2), every other node is already optimal.
//
// CPU strategy (spec §6): contacts are few compared with particles, so the particle-to-grid
// scatters of K3 are done as node-wise gathers through the transposed stencil (for every
// node, the list of (contact, stencil slot) pairs touching it, built once per problem). All
// loops run in parallel and every reduction sums fixed chunks in a fixed order, so the result
// is bitwise the same for any number of threads.
#include <array>
#include <string>
#include <vector>

#include "formulations/contact/contact_model.h"
#include "formulations/solvers/exact_line_search.h"
#include "formulations/solvers/solver_summary.h"

namespace contactlab::quasi_newton {

using mpm::Matrix3;
using mpm::Vector3;

// One contact particle of a substep problem.
struct GridContact {
  // The 27 quadratic B-spline stencil nodes of the particle as indices into the problem's
  // nodes, ordered a + 3b + 9c; −1 where the node carries no weight.
  std::array<int, 27> node;
  std::array<double, 27> weight;                   // w_ip [-]
  Matrix3 world_to_contact = Matrix3::Identity();  // R_CW (rows t̂₁, t̂₂, n̂)
  // b_p = −R_CW v_B(x_p): the frozen rigid point velocity in the contact frame [m/s].
  Vector3 bias = Vector3::Zero();
  contact::PreparedContact prepared;  // per-substep model constants
};

// Problem (8) restricted to the stencil nodes of contact particles.
struct SubstepContactProblem {
  std::vector<double> node_mass;       // m_i [kg], > 0
  std::vector<Vector3> free_velocity;  // v*_i [m/s]
  std::vector<GridContact> contacts;
  const contact::ContactModel* model = nullptr;
  // Σ m_i ‖v*_i‖² over the active grid nodes outside the problem [kg m²/s²]: they are at
  // their optimum but still count in the momentum scale ‖M^½ v‖ of the stopping rule (K4).
  double outside_momentum_squared = 0.0;
  // Where the iteration starts [m/s], one per node; empty: v* (Algorithm 1, spec Y2). Any
  // start reaches the same minimizer of the convex ℓ_p; a good guess saves iterations.
  std::vector<Vector3> initial_velocity;
};

// The same problem seen from a frame moving at u [m/s]: v* − u (and the warm start − u) on the
// nodes, the rigid point velocities v_B − u in the biases b_p = −R_CW v_B. Since the stencil
// weights of a contact sum to one, its contact velocity R_CW Σ_i w_ip v_i + b_p, its impulse
// and the minimizer (less u) are unchanged; only the momentum term ‖M^½ v‖ of the stopping
// rule sees the frame. `outside_momentum_squared` is the caller's to set in the new frame.
void ShiftToMovingFrame(const Vector3& frame_velocity, SubstepContactProblem& problem);

struct QuasiNewtonOptions {
  // Stop when ‖M^-½ r‖ < ε_a + ε_r max(‖M^½ v‖, ‖M^-½ j‖) (spec Y1; SAP's scaled rule).
  // ε_r = 5e-2 is [yu2025async]'s default for every scene but the shake test (1e-2).
  double relative_tolerance = 5.0e-2;
  // ε_a [kg^½ m/s]: machine epsilon in double, as [yu2025async] ("machine epsilon").
  double absolute_tolerance = 2.220446049250313e-16;
  // Iterations before the substep is reported unconverged (spec Y1: 2000).
  int max_iterations = 2000;
  // Keep one record per iteration in summary.history (convergence histories for figures).
  bool record_history = false;
  // The exact line search of SAP (spec Y5). Its shortcut "slope negligible against the cost
  // → take α = 1" is off: ℓ_p'(α) is summed directly, not differenced from costs, and stays
  // accurate long after ℓ_p stops changing in double precision; with the shortcut a tight
  // ε_r stalls with α = 1 overshooting along block-diagonal directions.
  solvers::ExactLineSearchOptions line_search = [] {
    solvers::ExactLineSearchOptions options;
    options.cost_absolute_tolerance = 0.0;
    options.cost_relative_tolerance = 0.0;
    return options;
  }();

  // Empty when valid, else a one-line reason naming the field.
  std::string Validate() const;
};

struct QuasiNewtonResults {
  std::vector<Vector3> velocity;  // v_i per problem node [m/s]
  std::vector<Vector3> impulses;  // γ_p per contact, contact frame [N s], at the returned v
  // Termination (kConverged: the scaled rule; kNothingToSolve: no contacts; kMaxIterations;
  // kLineSearchFailed), quasi-Newton updates taken, final ℓ_p [J], ‖M^-½ r‖ / threshold, the
  // history when requested (one record per iterate, the last one final; residual ‖M^-½ r‖
  // [kg^½ m/s]) and the solve's wall time.
  solvers::SolverSummary summary;
};

// Throws std::invalid_argument naming the problem: missing model, sizes that disagree,
// non-positive mass, node index out of range. Every backend checks its input with it.
void CheckSubstepProblem(const SubstepContactProblem& problem);

// ℓ_p(v) for given node velocities (tests and cross-checks).
double QuasiNewtonCost(const SubstepContactProblem& problem, const std::vector<Vector3>& velocity);

// The per-node 3 × 3 diagonal blocks H_i of the Hessian of ℓ_p at v (eq. 10).
std::vector<Matrix3> QuasiNewtonHessianBlocks(const SubstepContactProblem& problem,
                                              const std::vector<Vector3>& velocity);

// Algorithm B.1, started from v*. Throws std::invalid_argument on a malformed problem
// (missing model, sizes that disagree, non-positive mass, node index out of range).
QuasiNewtonResults SolveQuasiNewton(const SubstepContactProblem& problem, const QuasiNewtonOptions& options);

}  // namespace contactlab::quasi_newton
