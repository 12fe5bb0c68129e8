#include "formulations/solvers/solver_summary.h"

#include <cstdio>
#include <limits>
#include <sstream>

namespace contactlab::solvers {

const char* ToString(Termination termination) {
  switch (termination) {
    case Termination::kConverged:
      return "converged";
    case Termination::kNothingToSolve:
      return "nothing_to_solve";
    case Termination::kCostStagnation:
      return "cost_stagnation";
    case Termination::kStationary:
      return "stationary";
    case Termination::kMaxIterations:
      return "max_iterations";
    case Termination::kLineSearchFailed:
      return "line_search_failed";
    case Termination::kNumericalFailure:
      return "numerical_failure";
  }
  return "unknown";
}

bool IsConverged(Termination termination) {
  return termination == Termination::kConverged || termination == Termination::kNothingToSolve ||
         termination == Termination::kCostStagnation;
}

double ResidualRatio(double residual, double threshold) {
  if (threshold > 0.0) return residual / threshold;
  return residual == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

std::string Compare(const char* what, double value, const char* relation, double bound) {
  char text[160];
  std::snprintf(text, sizeof(text), "%s %.3g %s %.3g", what, value, relation, bound);
  return text;
}

std::string SolverSummary::BriefReport(const std::string& solver) const {
  std::ostringstream report;
  report << solver << ": " << ToString(termination) << " after " << iterations << " iterations, "
         << line_search_evaluations << " line-search evaluations, " << linear_iterations
         << " linear iterations, residual/threshold " << residual << ", cost " << cost << " (" << message << ")";
  return report.str();
}

}  // namespace contactlab::solvers
