#pragma once
// Exact line search along a descent direction of a convex, piecewise-smooth function ℓ(α)
// (spec-sap-qn §1.3.3, Algorithm LS; the SAP line search of Castro et al. 2022 as in Drake):
// finds the root of ℓ'(α) on [0, α_max] by Newton's method safeguarded with bisection.
// Shared by the `sap` Newton solver and the `quasi_newton` solver.
#include <functional>
#include <string>

namespace contactlab::solvers {

struct ExactLineSearchOptions {
  // Largest step α_max [-]; 1.5 lets the search overshoot a full Newton step when the cost
  // keeps decreasing (Drake default).
  double max_step = 1.5;
  // Stop when |ℓ'(α)| < tolerance · |ℓ'(0)| [-].
  double derivative_tolerance = 1.0e-8;
  // Stop when the Newton or bisection update is below tolerance · α₀ [-].
  double step_tolerance = 1.0e-8;
  // Iterations of the 1-D Newton/bisection loop.
  int max_iterations = 100;
  // If −ℓ'(0) < absolute + relative · ℓ(0) the direction cannot reduce the cost measurably
  // (round-off) and α = 1 is returned.
  double cost_absolute_tolerance = 1.0e-30;
  double cost_relative_tolerance = 1.0e-15;

  // Empty when valid, else a one-line reason naming the field ("line_search.max_step ...").
  std::string Validate() const;
};

// Option checks shared by the solvers' Validate(): empty when fine, else
// "<field> must be > 0 (got <value>)". NaN fails both.
std::string CheckPositive(const char* field, double value);
std::string CheckNonNegative(const char* field, double value);

// ℓ(α), ℓ'(α), ℓ''(α) along the search line.
struct LineSample {
  double value = 0.0;
  double derivative = 0.0;
  double second_derivative = 0.0;
};
using LineFunction = std::function<LineSample(double step)>;

struct LineSearchResult {
  double step = 0.0;    // α
  int evaluations = 0;  // calls to the line function
  bool success = true;  // false when ℓ'(0) ≥ 0 (not a descent direction)
  std::string message;  // why it failed, or which rule accepted the step
};

// `initial` is the sample at α = 0 (already known to the caller).
LineSearchResult ExactLineSearch(const LineFunction& line, const LineSample& initial,
                                 const ExactLineSearchOptions& options = {});

}  // namespace contactlab::solvers
