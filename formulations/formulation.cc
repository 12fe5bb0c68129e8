#include "formulations/formulation.h"

#include <algorithm>
#include <utility>

namespace contactlab {

std::vector<BodyWrench> ZeroWrenches(const World& world) {
  std::vector<BodyWrench> wrenches(world.bodies.size());
  for (std::size_t b = 0; b < world.bodies.size(); ++b) wrenches[b].moment_point = world.bodies[b].pose.position;
  return wrenches;
}

const char* ToString(SolveKind kind) {
  switch (kind) {
    case SolveKind::kFreeMotion:
      return "free_motion";
    case SolveKind::kContact:
      return "contact";
    case SolveKind::kRigidStep:
      return "rigid_step";
  }
  return "unknown";
}

void Formulation::RecordSolve(StepReport& report, SolveKind kind, int index, std::string solver,
                              solvers::SolverSummary summary) const {
  if (kind != SolveKind::kFreeMotion) {
    report.outer_iterations += summary.iterations;
    report.linear_iterations += summary.linear_iterations;
    report.residual = std::max(report.residual, summary.residual);
  }
  report.converged = report.converged && summary.converged();
  if (!log_iterations_) summary.history = std::vector<solvers::SolverIterationRecord>();
  report.solves.push_back(SolveRecord{kind, index, std::move(solver), std::move(summary)});
}

void UsedParameterTracker::Observe(double value) {
  if (!observed_) {
    used_.value = used_.smallest = value;
    observed_ = true;
    return;
  }
  used_.value = std::max(used_.value, value);
  used_.smallest = std::min(used_.smallest, value);
}

UsedChoiceTracker::UsedChoiceTracker(std::string key, std::vector<std::string> members, std::string occasion,
                                     std::string rule)
    : key_(std::move(key)),
      members_(std::move(members)),
      occasion_(std::move(occasion)),
      rule_(std::move(rule)),
      counts_(members_.size(), 0) {}

void UsedParameterTracker::VisitState(StateArchive& archive) {
  const StateArchive::Scope scope(archive, used_.key);
  archive("observed", observed_);
  archive("value", used_.value);
  archive("smallest", used_.smallest);
}

void UsedChoiceTracker::VisitState(StateArchive& archive) {
  const StateArchive::Scope scope(archive, key_);
  const std::size_t members = counts_.size();
  archive("counts", counts_);
  if (archive.loading() && counts_.size() != members) archive.Fail("counts", "does not count every member");
}

bool UsedChoiceTracker::observed() const {
  return std::any_of(counts_.begin(), counts_.end(), [](long long count) { return count > 0; });
}

UsedParameter UsedChoiceTracker::used() const {
  UsedParameter used;
  used.key = key_;
  used.rule = rule_;
  for (std::size_t k = 0; k < members_.size(); ++k) {
    if (counts_[k] == 0) continue;
    if (!used.choice.empty()) used.choice += ", ";
    used.choice += members_[k] + " (" + std::to_string(counts_[k]) + " " + occasion_ + ")";
  }
  return used;
}

}  // namespace contactlab
