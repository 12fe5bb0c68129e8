#include "formulations/solvers/exact_line_search.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace contactlab::solvers {

std::string CheckPositive(const char* field, double value) {
  if (value > 0.0) return "";
  std::ostringstream message;
  message << field << " must be > 0 (got " << value << ")";
  return message.str();
}

std::string CheckNonNegative(const char* field, double value) {
  if (value >= 0.0) return "";
  std::ostringstream message;
  message << field << " must be >= 0 (got " << value << ")";
  return message.str();
}

std::string ExactLineSearchOptions::Validate() const {
  for (const std::string& problem :
       {CheckPositive("line_search.max_step", max_step),
        CheckNonNegative("line_search.derivative_tolerance", derivative_tolerance),
        CheckNonNegative("line_search.step_tolerance", step_tolerance),
        CheckPositive("line_search.max_iterations", max_iterations),
        CheckNonNegative("line_search.cost_absolute_tolerance", cost_absolute_tolerance),
        CheckNonNegative("line_search.cost_relative_tolerance", cost_relative_tolerance)}) {
    if (!problem.empty()) return problem;
  }
  return "";
}

LineSearchResult ExactLineSearch(const LineFunction& line, const LineSample& initial,
                                 const ExactLineSearchOptions& options) {
  LineSearchResult result;
  auto evaluate = [&](double step) {
    ++result.evaluations;
    return line(step);
  };

  // A search needs a descent direction, ℓ'(0) < 0 (§1.3.3 step 3); otherwise the Newton
  // direction was spoiled by ill-conditioning and the caller must stop.
  const double initial_slope = initial.derivative;
  if (!(initial_slope < 0.0)) {
    std::ostringstream message;
    message << "not a descent direction: l'(0) = " << initial_slope << " >= 0";
    result.success = false;
    result.step = 0.0;
    result.message = message.str();
    return result;
  }

  // ℓ is convex along the line, so ℓ'(α_max) ≤ 0 means the cost still decreases at the end of
  // the bracket and α_max is the best step on [0, α_max].
  const double max_step = options.max_step;
  const LineSample at_max_step = evaluate(max_step);
  if (at_max_step.derivative <= 0.0) {
    result.step = max_step;
    result.message = "max_step (cost still decreasing)";
    return result;
  }

  // A slope below the round-off level of ℓ(0) cannot reduce the cost measurably; take the
  // full Newton step rather than chase noise.
  const double slope_scale = -initial_slope;
  if (slope_scale < options.cost_absolute_tolerance + options.cost_relative_tolerance * initial.value) {
    result.step = 1.0;
    result.message = "negligible slope";
    return result;
  }

  // Root of the normalized slope f(α) = ℓ'(α)/(−ℓ'(0)) on [0, α_max] (Algorithm LS):
  // f(0) = −1 < 0 < f(α_max), so [lower, upper] always brackets the root.
  double lower = 0.0;
  double upper = max_step;
  // Initial guess: one Newton step from α = 0 with the curvature seen at α_max.
  double step = max_step;
  if (at_max_step.second_derivative > 0.0) step = std::min(slope_scale / at_max_step.second_derivative, max_step);
  const double step_tolerance = options.step_tolerance * step;
  double previous_update = upper - lower;

  for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
    const LineSample sample = evaluate(step);
    const double residual = sample.derivative / slope_scale;
    const double residual_slope = sample.second_derivative / slope_scale;

    // Shrink the bracket: f(upper) > 0 and f(lower) < 0 always.
    if (residual > 0.0) {
      upper = step;
    } else {
      lower = step;
    }
    if (std::abs(residual) < options.derivative_tolerance) {
      result.step = step;
      result.message = "derivative";
      return result;
    }

    // Newton when it at least halves the residual and stays inside the bracket, else bisect.
    double next_step;
    if (2.0 * std::abs(residual) > std::abs(previous_update * residual_slope)) {
      next_step = 0.5 * (lower + upper);
    } else {
      next_step = step - residual / residual_slope;
      if (!(next_step >= lower && next_step <= upper)) next_step = 0.5 * (lower + upper);
    }
    previous_update = next_step - step;
    step = next_step;
    if (std::abs(previous_update) < step_tolerance) {
      result.step = step;
      result.message = "step";
      return result;
    }
  }
  result.step = step;
  result.message = "max_iterations";
  return result;
}

}  // namespace contactlab::solvers
