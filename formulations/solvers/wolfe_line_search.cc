#include "formulations/solvers/wolfe_line_search.h"

#include <algorithm>
#include <cmath>

#include "formulations/solvers/exact_line_search.h"

namespace contactlab::solvers {
namespace {

struct Trial {
  double step = 0.0;
  MeritSample sample;
};

// Minimizer of the cubic that interpolates φ and φ' at a and b (Nocedal & Wright eq. 3.59),
// kept at least 10% of the interval away from both ends; bisection when the cubic has no
// real minimizer.
double CubicMinimizer(const Trial& a, const Trial& b) {
  const double low = std::min(a.step, b.step);
  const double high = std::max(a.step, b.step);
  const double margin = 0.1 * (high - low);
  double step = 0.5 * (low + high);
  const double d1 =
      a.sample.derivative + b.sample.derivative - 3.0 * (a.sample.value - b.sample.value) / (a.step - b.step);
  const double discriminant = d1 * d1 - a.sample.derivative * b.sample.derivative;
  if (discriminant >= 0.0) {
    const double d2 = std::copysign(std::sqrt(discriminant), b.step - a.step);
    const double denominator = b.sample.derivative - a.sample.derivative + 2.0 * d2;
    if (denominator != 0.0) {
      const double candidate = b.step - (b.step - a.step) * (b.sample.derivative + d2 - d1) / denominator;
      if (std::isfinite(candidate)) step = candidate;
    }
  }
  return std::clamp(step, low + margin, high - margin);
}

}  // namespace

std::string WolfeLineSearchOptions::Validate() const {
  if (std::string error = CheckPositive("sufficient_decrease", sufficient_decrease); !error.empty()) return error;
  if (!(sufficient_decrease < curvature && curvature < 1.0)) {
    return "curvature must lie in (sufficient_decrease, 1) (got " + std::to_string(curvature) + ")";
  }
  if (!(max_step >= 1.0)) return "max_step must be >= 1 (got " + std::to_string(max_step) + ")";
  if (max_evaluations < 1) return "max_evaluations must be >= 1 (got " + std::to_string(max_evaluations) + ")";
  return "";
}

WolfeLineSearchResult WolfeLineSearch(const MeritFunction& merit, const MeritSample& initial,
                                      const WolfeLineSearchOptions& options) {
  WolfeLineSearchResult result;
  result.sample = initial;
  if (!(initial.derivative < 0.0)) return result;  // not a descent direction: no step

  const double decrease_slope = options.sufficient_decrease * initial.derivative;
  const double curvature_bound = -options.curvature * initial.derivative;
  Trial best{0.0, initial};
  auto evaluate = [&](double step) {
    Trial trial{step, merit(step)};
    ++result.evaluations;
    if (std::isfinite(trial.sample.value) && trial.sample.value < best.sample.value) best = trial;
    return trial;
  };
  auto accept = [&](const Trial& trial) {
    result.step = trial.step;
    result.sample = trial.sample;
    result.wolfe_satisfied = true;
    result.decreased = true;
    return result;
  };
  auto sufficient = [&](const Trial& trial) {
    return std::isfinite(trial.sample.value) && trial.sample.value <= initial.value + trial.step * decrease_slope;
  };

  // Zoom (Algorithm 3.6) between `low`, which satisfies sufficient decrease with the lowest φ
  // so far, and `high`.
  auto zoom = [&](Trial low, Trial high) -> WolfeLineSearchResult {
    while (result.evaluations < options.max_evaluations) {
      const Trial trial = evaluate(CubicMinimizer(low, high));
      if (!sufficient(trial) || trial.sample.value >= low.sample.value) {
        high = trial;
        continue;
      }
      if (std::abs(trial.sample.derivative) <= curvature_bound) return accept(trial);
      if (trial.sample.derivative * (high.step - low.step) >= 0.0) high = low;
      low = trial;
    }
    result.step = best.step;
    result.sample = best.sample;
    result.decreased = best.step > 0.0;
    return result;
  };

  // Bracketing (Algorithm 3.5), starting from the full step α = 1.
  Trial previous{0.0, initial};
  double step = 1.0;
  while (result.evaluations < options.max_evaluations) {
    const Trial trial = evaluate(step);
    if (!sufficient(trial) || (previous.step > 0.0 && trial.sample.value >= previous.sample.value)) {
      return zoom(previous, trial);
    }
    if (std::abs(trial.sample.derivative) <= curvature_bound) return accept(trial);
    if (trial.sample.derivative >= 0.0) return zoom(trial, previous);
    if (step >= options.max_step) break;  // still descending at the longest step allowed
    previous = trial;
    step = std::min(2.0 * step, options.max_step);
  }
  result.step = best.step;
  result.sample = best.sample;
  result.decreased = best.step > 0.0;
  return result;
}

}  // namespace contactlab::solvers
