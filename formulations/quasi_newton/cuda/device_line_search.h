#pragma once
// The exact line search of formulations/solvers/exact_line_search.h (spec-sap-qn §1.3.3,
// Algorithm LS: 1-D Newton on ℓ'(α) safeguarded by bisection on [0, α_max]) as a
// __host__ __device__ template, so that one CUDA block can run it next to its data. Same
// steps, same tests, same order as solvers::ExactLineSearch; the unit test checks that both
// take identical steps on the same functions.
//
// In the kernel every thread of the block runs this function with identical arguments; the
// line functor is block-collective (a block reduction over contacts that hands every thread
// the same sample), so all threads follow the same branches.
#include "formulations/quasi_newton/cuda/device_math.h"

namespace contactlab::quasi_newton::gpu {

// solvers::ExactLineSearchOptions without std::string.
struct LineSearchParameters {
  double max_step = 1.5;
  double derivative_tolerance = 1.0e-8;
  double step_tolerance = 1.0e-8;
  int max_iterations = 100;
  double cost_absolute_tolerance = 1.0e-30;
  double cost_relative_tolerance = 1.0e-15;
};

// ℓ(α), ℓ'(α), ℓ''(α).
struct LineSampleValue {
  double value = 0.0;
  double derivative = 0.0;
  double second_derivative = 0.0;
};

// Which rule ended the search (the messages of solvers::ExactLineSearch).
enum class LineSearchStop : int {
  kNotDescent = 0,       // ℓ'(0) ≥ 0: failure
  kMaxStep = 1,          // ℓ'(α_max) ≤ 0
  kNegligibleSlope = 2,  // −ℓ'(0) below round-off of ℓ(0): α = 1
  kDerivative = 3,       // |ℓ'(α)| small
  kStep = 4,             // update small
  kMaxIterations = 5,
};

struct LineSearchOutcome {
  double step = 0.0;
  int evaluations = 0;
  bool success = true;
  LineSearchStop stop = LineSearchStop::kNotDescent;
};

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <typename Line>
CONTACTLAB_HOST_DEVICE LineSearchOutcome RunExactLineSearch(Line& line, const LineSampleValue& initial,
                                                            const LineSearchParameters& options) {
  LineSearchOutcome result;
  // A descent direction is required (ℓ'(0) < 0).
  const double initial_slope = initial.derivative;
  if (!(initial_slope < 0.0)) {
    result.success = false;
    result.step = 0.0;
    result.stop = LineSearchStop::kNotDescent;
    return result;
  }
  // Convex along the line: ℓ'(α_max) ≤ 0 makes α_max the best step on the bracket.
  const double max_step = options.max_step;
  ++result.evaluations;
  const LineSampleValue at_max_step = line(max_step);
  if (at_max_step.derivative <= 0.0) {
    result.step = max_step;
    result.stop = LineSearchStop::kMaxStep;
    return result;
  }
  // A slope below the round-off of ℓ(0) cannot reduce the cost measurably: full step.
  const double slope_scale = -initial_slope;
  if (slope_scale < options.cost_absolute_tolerance + options.cost_relative_tolerance * initial.value) {
    result.step = 1.0;
    result.stop = LineSearchStop::kNegligibleSlope;
    return result;
  }
  // Root of f(α) = ℓ'(α)/(−ℓ'(0)) with f(lower) < 0 < f(upper).
  double lower = 0.0;
  double upper = max_step;
  double step = max_step;
  if (at_max_step.second_derivative > 0.0) {
    const double newton_step = slope_scale / at_max_step.second_derivative;
    step = newton_step < max_step ? newton_step : max_step;
  }
  const double step_tolerance = options.step_tolerance * step;
  double previous_update = upper - lower;
  for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
    ++result.evaluations;
    const LineSampleValue sample = line(step);
    const double residual = sample.derivative / slope_scale;
    const double residual_slope = sample.second_derivative / slope_scale;
    if (residual > 0.0) {
      upper = step;
    } else {
      lower = step;
    }
    if (fabs(residual) < options.derivative_tolerance) {
      result.step = step;
      result.stop = LineSearchStop::kDerivative;
      return result;
    }
    // Newton when it at least halves the residual and stays in the bracket, else bisection.
    double next_step;
    if (2.0 * fabs(residual) > fabs(previous_update * residual_slope)) {
      next_step = 0.5 * (lower + upper);
    } else {
      next_step = step - residual / residual_slope;
      if (!(next_step >= lower && next_step <= upper)) next_step = 0.5 * (lower + upper);
    }
    previous_update = next_step - step;
    step = next_step;
    if (fabs(previous_update) < step_tolerance) {
      result.step = step;
      result.stop = LineSearchStop::kStep;
      return result;
    }
  }
  result.step = step;
  result.stop = LineSearchStop::kMaxIterations;
  return result;
}

}  // namespace contactlab::quasi_newton::gpu
