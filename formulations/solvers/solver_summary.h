#pragma once
// The one shape every iterative solver of the project reports (SAP's Newton, the
// quasi-Newton contact solve on CPU and GPU, penalty's stabilized Newton, the implicit MPM
// free-motion Newton): why it stopped (an enum and a one-line message), how many iterations,
// line-search evaluations and inner linear iterations it took, the final residual relative to
// its stopping threshold, an optional per-iteration history, and where the time went. It
// follows Ceres' Solver::Summary (termination type + message + time breakdown) and Drake's
// SAP statistics (counters plus per-iteration vectors), so that the run file can hold every
// solve of every formulation in one table and the convergence of all four can be plotted on
// the same axes.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace contactlab::solvers {

// Why a solve stopped. Solvers report only the members that apply to them.
enum class Termination : std::int8_t {
  kConverged = 0,         // the solver's optimality / residual rule held
  kNothingToSolve = 1,    // no unknowns or no constraints: the initial guess is the answer
  kCostStagnation = 2,    // the cost stopped decreasing at round-off after a full step (SAP)
  kStationary = 3,        // ‖Hᵀg‖ ≤ τ_s while ‖g‖ > τ_g: a stationary point of the merit only
  kMaxIterations = 4,     // the iteration cap was reached first
  kLineSearchFailed = 5,  // no step along the direction lowered the objective
  kNumericalFailure = 6,  // a factorization failed or a value became non-finite
};
inline constexpr int kNumTerminations = 7;

// "converged", "nothing_to_solve", "cost_stagnation", "stationary", "max_iterations",
// "line_search_failed", "numerical_failure".
const char* ToString(Termination termination);
// Terminations that leave an answer the solver vouches for: kConverged, kNothingToSolve and
// kCostStagnation (SAP counts the round-off stall as converged, as Drake does).
bool IsConverged(Termination termination);

// One iteration, taken at its iterate before the update (the last record of a history is the
// final iterate, with step 0).
struct SolverIterationRecord {
  int iteration = 0;       // 0 = the initial guess
  double cost = 0.0;       // the objective the solver minimizes [J], or its merit
  double residual = 0.0;   // the solver's scaled optimality residual
  double threshold = 0.0;  // what the stopping rule compares `residual` with
  double step = 0.0;       // accepted line-search step α (0 on the final record)
  int line_search_evaluations = 0;
  int linear_iterations = 0;  // inner Krylov iterations for this direction (0 if direct)
};

// Wall-clock seconds of one solve.
struct SolverTimeSplit {
  double total = 0.0;         // the whole solve
  double linear_solve = 0.0;  // building and solving for the search direction
  double line_search = 0.0;   // inside the line search
};

struct SolverSummary {
  Termination termination = Termination::kMaxIterations;
  std::string message;  // one line naming the rule that stopped it and its numbers
  int iterations = 0;   // search directions computed
  int line_search_evaluations = 0;
  int linear_iterations = 0;  // summed over the iterations
  // Final residual divided by its threshold (≤ 1 when the optimality rule held; 0 when both
  // vanish).
  double residual = 0.0;
  // What the final residual g (generalized momentum, one row per unknown) can leave unbalanced:
  // √(Σ_k w_k⁻²) ‖W g‖ for the rule's row weights W (M^(-1/2), diag(A)^(-1/2)), which bounds
  // |Σ_k∈S g_k| over any set S of rows (Cauchy–Schwarz), e.g. the x rows of the grid nodes
  // [kg m/s]. NaN until the solver sets it.
  double momentum_residual_bound = std::numeric_limits<double>::quiet_NaN();
  double cost = 0.0;                           // final objective (or merit)
  std::vector<SolverIterationRecord> history;  // when the solver was asked to keep it
  SolverTimeSplit seconds;

  bool converged() const { return IsConverged(termination); }
  // Sets termination and message together.
  void Stop(Termination why, std::string text) {
    termination = why;
    if (why == Termination::kNothingToSolve) momentum_residual_bound = 0.0;  // the guess is exact
    message = std::move(text);
  }
  // One line: solver name, termination, counts, residual ratio, message.
  std::string BriefReport(const std::string& solver) const;
};

// residual / threshold as SolverSummary::residual defines it (0 when both vanish, ∞ when only
// the threshold does).
double ResidualRatio(double residual, double threshold);

// "‖r‖ 3.1e-07 ≤ 4.0e-07" style text for stop messages: value, relation, bound.
std::string Compare(const char* what, double value, const char* relation, double bound);

}  // namespace contactlab::solvers
