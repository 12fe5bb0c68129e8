#pragma once
// Strong Wolfe line search (Nocedal & Wright, Numerical Optimization, 2nd ed., Algorithms
// 3.5 and 3.6, with cubic interpolation in the zoom phase) for a smooth or piecewise-smooth
// merit function φ(α) along a descent direction. Used by the `penalty` stabilized Newton
// solver on E = ½‖g‖² (spec-penalty-hybrid §2.10, A3), where φ is not convex, so the exact
// line search of exact_line_search.h does not apply.
#include <functional>
#include <string>

namespace contactlab::solvers {

struct WolfeLineSearchOptions {
  // Sufficient decrease φ(α) ≤ φ(0) + c₁ α φ'(0) [-]; 1e-4 is the textbook value (spec A3).
  double sufficient_decrease = 1.0e-4;
  // Curvature |φ'(α)| ≤ c₂ |φ'(0)| [-]; 0.9 suits Newton-type directions (spec A3).
  double curvature = 0.9;
  // Largest step tried when the bracket phase keeps finding decrease [-]; a Newton step has
  // natural length 1, so larger steps only help when the direction is short.
  double max_step = 4.0;
  // Evaluations of φ before giving up (spec A3: 20).
  int max_evaluations = 20;

  // Empty when valid, else a one-line reason naming the field.
  std::string Validate() const;
};

// φ(α) and φ'(α).
struct MeritSample {
  double value = 0.0;
  double derivative = 0.0;
};
using MeritFunction = std::function<MeritSample(double step)>;

struct WolfeLineSearchResult {
  double step = 0.0;             // accepted α (0 when nothing decreased φ)
  MeritSample sample;            // φ and φ' at the accepted step
  int evaluations = 0;           // calls to the merit function
  bool wolfe_satisfied = false;  // both strong Wolfe conditions hold at `step`
  // False when no trial step decreased φ below φ(0): the caller should stop.
  bool decreased = false;
};

// `initial` is φ and φ' at α = 0 (φ'(0) < 0 is required; otherwise no step is taken). When
// the evaluation budget runs out, returns the trial with the lowest φ if it decreased φ
// (spec A3: "accept the best decrease").
WolfeLineSearchResult WolfeLineSearch(const MeritFunction& merit, const MeritSample& initial,
                                      const WolfeLineSearchOptions& options = {});

}  // namespace contactlab::solvers
