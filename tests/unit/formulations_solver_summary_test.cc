// The shared solver-summary shape (solvers/solver_summary.h) and the step bookkeeping built
// on it (Formulation::RecordSolve, UsedChoiceTracker).
#include <cmath>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "formulations/formulation.h"
#include "formulations/solvers/solver_summary.h"

namespace contactlab {
namespace {

using solvers::SolverSummary;
using solvers::Termination;

TEST(SolverSummary, EveryTerminationHasItsOwnNameAndOnlyThreeConverge) {
  std::set<std::string> names;
  int converged = 0;
  for (int k = 0; k < solvers::kNumTerminations; ++k) {
    const Termination termination = static_cast<Termination>(k);
    names.insert(solvers::ToString(termination));
    converged += solvers::IsConverged(termination) ? 1 : 0;
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(solvers::kNumTerminations));
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_EQ(converged, 3);
  EXPECT_TRUE(solvers::IsConverged(Termination::kCostStagnation));
  EXPECT_FALSE(solvers::IsConverged(Termination::kStationary));
}

TEST(SolverSummary, ResidualRatioHandlesVanishingThresholds) {
  EXPECT_DOUBLE_EQ(solvers::ResidualRatio(2.0, 4.0), 0.5);
  EXPECT_EQ(solvers::ResidualRatio(0.0, 0.0), 0.0);
  EXPECT_TRUE(std::isinf(solvers::ResidualRatio(1.0, 0.0)));
}

// A formulation that reports the solves it is given, to test the bookkeeping alone.
class ScriptedFormulation final : public Formulation {
 public:
  std::string_view name() const override { return "scripted"; }
  void VisitState(StateArchive&, const World&) override {}  // carries nothing between steps
  std::vector<std::pair<SolveKind, SolverSummary>> script;

 protected:
  StepReport AdvanceState(World&, double) override {
    StepReport report;
    for (std::size_t k = 0; k < script.size(); ++k) {
      RecordSolve(report, script[k].first, static_cast<int>(k), "scripted", script[k].second);
    }
    return report;
  }
};

SolverSummary Summary(Termination termination, int iterations, int linear_iterations, double residual) {
  SolverSummary summary;
  summary.Stop(termination, "scripted");
  summary.iterations = iterations;
  summary.linear_iterations = linear_iterations;
  summary.residual = residual;
  for (int k = 0; k <= iterations; ++k) summary.history.push_back({k, 0.0, 1.0, 1.0, 0.0, 0, 0});
  return summary;
}

TEST(RecordSolve, StepColumnsAggregateTheCoupledSolvesAndHistoriesFollowTheKey) {
  ScriptedFormulation formulation;
  // The free motion's iterations and residual stay out of the aggregates; its convergence
  // does not.
  formulation.script = {{SolveKind::kFreeMotion, Summary(Termination::kConverged, 7, 0, 50.0)},
                        {SolveKind::kContact, Summary(Termination::kConverged, 3, 11, 0.5)},
                        {SolveKind::kRigidStep, Summary(Termination::kCostStagnation, 2, 0, 0.9)}};
  World world;
  StepReport report = formulation.Step(world, 0.01);
  EXPECT_EQ(report.outer_iterations, 5);
  EXPECT_EQ(report.linear_iterations, 11);
  EXPECT_DOUBLE_EQ(report.residual, 0.9);
  EXPECT_TRUE(report.converged);
  ASSERT_EQ(report.solves.size(), 3u);
  for (const SolveRecord& solve : report.solves) EXPECT_TRUE(solve.summary.history.empty()) << "logging is off";

  formulation.set_log_iterations(true);
  formulation.script[0].second = Summary(Termination::kMaxIterations, 50, 0, 3.0);
  report = formulation.Step(world, 0.01);
  EXPECT_FALSE(report.converged) << "an unconverged free motion makes the step unconverged";
  EXPECT_DOUBLE_EQ(report.residual, 0.9);
  EXPECT_EQ(report.solves[1].summary.history.size(), 4u);
  EXPECT_EQ(report.solves[2].index, 2);
}

TEST(UsedChoiceTracker, NamesTheMembersUsedWithTheirCounts) {
  UsedChoiceTracker tracker("sap.linear_solver", {"auto", "schur", "full"}, "steps", "rule");
  EXPECT_FALSE(tracker.observed());
  for (int k = 0; k < 3; ++k) tracker.Observe(1);
  tracker.Observe(2);
  ASSERT_TRUE(tracker.observed());
  const UsedParameter used = tracker.used();
  EXPECT_EQ(used.key, "sap.linear_solver");
  EXPECT_EQ(used.choice, "schur (3 steps), full (1 steps)");
  EXPECT_EQ(used.rule, "rule");
}

}  // namespace
}  // namespace contactlab
