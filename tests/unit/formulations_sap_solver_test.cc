// The SAP Newton solver and its exact line search (spec-sap-qn §1.3.1–1.3.3): Algorithm LS
// on 1-D functions; SolveSap on random problems against an independent Ceres L-BFGS solve of
// the same objective, for both contact models; monotone decrease of ℓ; the Hessian H =
// A + Jᵀ G J against finite differences of ∇ℓ; rigid-body analytic checks (a box on a slope
// at the Coulomb limit, the "pizza saver" under torque); and option validation.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <ceres/gradient_problem.h>
#include <ceres/gradient_problem_solver.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>

#include "formulations/contact/contact_frame.h"
#include "formulations/contact/contact_model.h"
#include "formulations/contact/sap_friction_cone.h"
#include "formulations/solvers/exact_line_search.h"
#include "formulations/solvers/sap_solver.h"

namespace contactlab::solvers {
namespace {

using contact::ContactModel;
using contact::ContactModelParameters;
using contact::ContactPointState;

constexpr double kGravity = 9.81;  // [m/s²]

// ---------------------------------------------------------------------------------------
// Algorithm LS (§1.3.3) on 1-D functions with known minimizers.

// ℓ(α) = c (α − α_min)² + 3: the first Newton guess −ℓ'(0)/ℓ''(α_max) is already exact.
TEST(ExactLineSearch, QuadraticReturnsTheExactMinimizer) {
  for (const double minimizer : {0.05, 0.7, 1.0, 1.4}) {
    const double curvature = 4.0;
    auto line = [&](double step) {
      return LineSample{curvature * (step - minimizer) * (step - minimizer) + 3.0, 2.0 * curvature * (step - minimizer),
                        2.0 * curvature};
    };
    const auto result = ExactLineSearch(line, line(0.0));
    EXPECT_TRUE(result.success);
    EXPECT_NEAR(result.step, minimizer, 1e-12) << result.message;
  }
}

// ℓ(α) = eᵅ − 2α is smooth and not quadratic: Newton iterates to α = ln 2.
TEST(ExactLineSearch, SmoothConvexFunctionConvergesToTheRootOfTheSlope) {
  auto line = [](double step) { return LineSample{std::exp(step) - 2.0 * step, std::exp(step) - 2.0, std::exp(step)}; };
  const auto result = ExactLineSearch(line, line(0.0));
  EXPECT_TRUE(result.success);
  EXPECT_NEAR(result.step, std::log(2.0), 1e-9) << result.message;
  EXPECT_LT(result.evaluations, 10);
}

// ℓ(α) = ½(α − 1)² + 50 max(0, α − 0.3)²: C¹ with a jump of ℓ'' at 0.3 (like SAP's regions);
// the minimizer α = 31/101 lies just past the kink.
TEST(ExactLineSearch, PiecewiseQuadraticWithAJumpInCurvature) {
  auto line = [](double step) {
    const double active = std::max(0.0, step - 0.3);
    return LineSample{0.5 * (step - 1.0) * (step - 1.0) + 50.0 * active * active, (step - 1.0) + 100.0 * active,
                      1.0 + (step > 0.3 ? 100.0 : 0.0)};
  };
  const auto result = ExactLineSearch(line, line(0.0));
  EXPECT_TRUE(result.success);
  EXPECT_NEAR(result.step, 31.0 / 101.0, 1e-9) << result.message;
}

// ℓ(α) = 3|α − 0.4| + ½α²: ℓ' jumps from −2.6 to +3.4 at the kink, so ℓ' has no root and the
// bracket must close on the kink itself (to the step tolerance 1e-8 α₀).
TEST(ExactLineSearch, KinkWithoutARootOfTheSlopeIsBracketed) {
  auto line = [](double step) {
    const double sign = step > 0.4 ? 1.0 : -1.0;
    return LineSample{3.0 * std::abs(step - 0.4) + 0.5 * step * step, 3.0 * sign + step, 1.0};
  };
  const auto result = ExactLineSearch(line, line(0.0));
  EXPECT_TRUE(result.success);
  EXPECT_NEAR(result.step, 0.4, 1e-7) << result.message;
}

TEST(ExactLineSearch, AscentDirectionIsRejected) {
  auto line = [](double step) { return LineSample{step * step + step, 2.0 * step + 1.0, 2.0}; };
  const auto ascent = ExactLineSearch(line, line(0.0));
  EXPECT_FALSE(ascent.success);
  EXPECT_EQ(ascent.evaluations, 0);
  EXPECT_NE(ascent.message.find("descent"), std::string::npos);
  // A zero slope is no descent direction either.
  const auto flat = ExactLineSearch(line, LineSample{0.0, 0.0, 2.0});
  EXPECT_FALSE(flat.success);
}

// ℓ(α) = (α − 3)²: still decreasing at α_max = 1.5, which is accepted after one evaluation.
TEST(ExactLineSearch, AcceptsMaxStepWhileTheCostStillDecreases) {
  auto line = [](double step) { return LineSample{(step - 3.0) * (step - 3.0), 2.0 * (step - 3.0), 2.0}; };
  ExactLineSearchOptions options;
  options.max_step = 1.5;
  const auto result = ExactLineSearch(line, line(0.0), options);
  EXPECT_TRUE(result.success);
  EXPECT_EQ(result.step, 1.5);
  EXPECT_EQ(result.evaluations, 1);
}

// −ℓ'(0) below the round-off level of ℓ(0): the full step α = 1 is returned.
TEST(ExactLineSearch, NegligibleSlopeTakesTheFullStep) {
  auto line = [](double step) { return LineSample{1.0 - 1e-20 * step + 0.5 * step * step, -1e-20 + step, 1.0}; };
  const auto result = ExactLineSearch(line, line(0.0));
  EXPECT_TRUE(result.success);
  EXPECT_EQ(result.step, 1.0);
}

// ---------------------------------------------------------------------------------------
// A test-local quadratic contact cost ℓ_c = ½ (v_c − v̂)ᵀ diag(k) (v_c − v̂), with k stored in
// `regularization` and v̂ in `stabilization_velocity`: ℓ is then quadratic and one Newton
// step with α = 1 must land on the optimum.

class QuadraticContact final : public ContactModel {
 public:
  std::string_view name() const override { return "quadratic"; }
  contact::PreparedContact Prepare(const ContactPointState&, double) const override { return {}; }
  double Cost(const contact::PreparedContact& contact, const Vector3& velocity) const override {
    const Vector3 offset = velocity - contact.stabilization_velocity;
    return 0.5 * offset.dot(contact.regularization.cwiseProduct(offset));
  }
  Vector3 Impulse(const contact::PreparedContact& contact, const Vector3& velocity) const override {
    return -contact.regularization.cwiseProduct(velocity - contact.stabilization_velocity);
  }
  Matrix3 Hessian(const contact::PreparedContact& contact, const Vector3&) const override {
    return contact.regularization.asDiagonal();
  }
  contact::ContactEvaluation Evaluate(const contact::PreparedContact& contact, const Vector3& velocity,
                                      bool with_hessian) const override {
    contact::ContactEvaluation evaluation{Cost(contact, velocity), Impulse(contact, velocity), Matrix3::Zero()};
    if (with_hessian) evaluation.hessian = Hessian(contact, velocity);
    return evaluation;
  }
};

// ---------------------------------------------------------------------------------------
// Random problems: 12 unknowns, random SPD A, 4–6 constraints each with two 3 × k Jacobian
// blocks on disjoint column ranges, biases chosen so that at v* the constraints are in
// stiction, sliding or separation in turn.

constexpr int kUnknowns = 12;
constexpr double kTimeStep = 0.01;  // [s]

enum class Regime { kStiction, kSliding, kSeparation };

struct RandomProblem {
  Eigen::MatrixXd dynamics_matrix;  // A
  Eigen::MatrixXd jacobian;         // J, dense (3 per constraint) rows, for independent checks
  Eigen::VectorXd bias;             // b stacked
  SapProblem problem;
  std::unique_ptr<ContactModel> model;
  double smallest_eigenvalue = 0.0;  // λ_min(A), the strong-convexity modulus of ℓ
};

ContactModelParameters ModelParameters(const std::string& model) {
  ContactModelParameters parameters;
  parameters.model = ParseChoice("contact.model", model, contact::ContactModelNames());
  // SAP's near-rigid cap decides its normal compliance, so the stiff default stays. The
  // lagged model has no such cap; k = 1e4 N/m keeps δt² k ~ 1 comparable with A so the
  // L-BFGS reference converges well (the solver itself does not need it).
  parameters.stiffness = model == "lagged" ? 1.0e4 : 1.0e8;
  return parameters;
}

RandomProblem MakeRandomProblem(unsigned seed, const std::string& model_name) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto random_matrix = [&](int rows, int cols) {
    Eigen::MatrixXd matrix(rows, cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) matrix(i, j) = uniform(generator);
    return matrix;
  };
  RandomProblem result;
  result.model = contact::MakeContactModel(ModelParameters(model_name));
  const Eigen::MatrixXd factor = random_matrix(kUnknowns, kUnknowns);
  result.dynamics_matrix = factor.transpose() * factor / kUnknowns + Eigen::MatrixXd::Identity(kUnknowns, kUnknowns);
  result.smallest_eigenvalue =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(result.dynamics_matrix).eigenvalues().minCoeff();
  const Eigen::MatrixXd inverse = result.dynamics_matrix.inverse();

  SapProblem& problem = result.problem;
  problem.model = result.model.get();
  problem.free_motion_velocity = random_matrix(kUnknowns, 1);
  const int num_constraints = 4 + static_cast<int>(seed % 3);
  result.jacobian = Eigen::MatrixXd::Zero(3 * num_constraints, kUnknowns);
  result.bias.resize(3 * num_constraints);
  for (int c = 0; c < num_constraints; ++c) {
    // Two blocks at distinct starts among {0, 3, 6, 9}, widths 3 and 1–3.
    std::vector<int> starts = {0, 3, 6, 9};
    std::shuffle(starts.begin(), starts.end(), generator);
    SapConstraint constraint;
    for (int b = 0; b < 2; ++b) {
      const int width = b == 0 ? 3 : 1 + static_cast<int>(generator() % 3);
      JacobianBlock block{starts[b], random_matrix(3, width)};
      result.jacobian.block(3 * c, block.column, 3, width) = block.matrix;
      constraint.jacobian.push_back(std::move(block));
    }
    // Relative velocity at v*, friction and penetration of the intended regime.
    const Regime regime = static_cast<Regime>(c % 3);
    Vector3 velocity_at_free_motion;
    ContactPointState state;
    switch (regime) {
      case Regime::kStiction:
        velocity_at_free_motion = Vector3(0.01, -0.005, -0.5);
        state.friction_coefficient = 1.0;
        state.penetration = 1.0e-3;
        break;
      case Regime::kSliding:
        velocity_at_free_motion = Vector3(1.5, -1.0, -0.3);
        state.friction_coefficient = 0.2;
        state.penetration = 1.0e-3;
        break;
      case Regime::kSeparation:
        velocity_at_free_motion = Vector3(0.3, 0.2, 1.0);
        state.friction_coefficient = 0.5;
        state.penetration = 1.0e-3;
        break;
    }
    const Eigen::MatrixXd row_block = result.jacobian.middleRows(3 * c, 3);
    constraint.bias = velocity_at_free_motion - row_block * problem.free_motion_velocity;
    result.bias.segment<3>(3 * c) = constraint.bias;
    state.previous_normal_velocity = velocity_at_free_motion.z();
    state.delassus_scale = (row_block * inverse * row_block.transpose()).trace() / 3.0;
    constraint.contact = result.model->Prepare(state, kTimeStep);
    problem.constraints.push_back(std::move(constraint));
  }
  return result;
}

// ℓ and ∇ℓ = A(v − v*) − Jᵀγ from the dense J and the model's Cost/Impulse only, independent
// of the solver's sparse Jacobian products.
struct DenseObjective {
  const RandomProblem& random;
  double Cost(const Eigen::VectorXd& velocity, Eigen::VectorXd* gradient) const {
    const SapProblem& problem = random.problem;
    const Eigen::VectorXd change = velocity - problem.free_motion_velocity;
    const Eigen::VectorXd momentum_change = random.dynamics_matrix * change;
    const Eigen::VectorXd contact_velocities = random.jacobian * velocity + random.bias;
    double cost = 0.5 * change.dot(momentum_change);
    Eigen::VectorXd impulses(contact_velocities.size());
    for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
      const Vector3 contact_velocity = contact_velocities.segment<3>(3 * c);
      cost += random.model->Cost(problem.constraints[c].contact, contact_velocity);
      impulses.segment<3>(3 * c) = random.model->Impulse(problem.constraints[c].contact, contact_velocity);
    }
    if (gradient != nullptr) *gradient = momentum_change - random.jacobian.transpose() * impulses;
    return cost;
  }
};

class CeresObjective final : public ceres::FirstOrderFunction {
 public:
  explicit CeresObjective(const RandomProblem& random) : objective_{random} {}
  bool Evaluate(const double* parameters, double* cost, double* gradient) const override {
    const Eigen::VectorXd velocity = Eigen::Map<const Eigen::VectorXd>(parameters, kUnknowns);
    Eigen::VectorXd gradient_vector;
    *cost = objective_.Cost(velocity, gradient != nullptr ? &gradient_vector : nullptr);
    if (gradient != nullptr) Eigen::Map<Eigen::VectorXd>(gradient, kUnknowns) = gradient_vector;
    return true;
  }
  int NumParameters() const override { return kUnknowns; }

 private:
  DenseObjective objective_;
};

// L-BFGS from v* until the gradient's max-norm is ~1e-13 (function and step criteria off).
Eigen::VectorXd SolveWithCeres(const RandomProblem& random, ceres::GradientProblemSolver::Summary& summary) {
  ceres::GradientProblem ceres_problem(new CeresObjective(random));
  ceres::GradientProblemSolver::Options options;
  options.line_search_direction_type = ceres::LBFGS;
  options.max_num_iterations = 100000;
  options.function_tolerance = 0.0;
  options.parameter_tolerance = 0.0;
  options.gradient_tolerance = 1e-13;
  options.logging_type = ceres::SILENT;
  options.use_approximate_eigenvalue_bfgs_scaling = true;
  Eigen::VectorXd velocity = random.problem.free_motion_velocity;
  ceres::Solve(options, ceres_problem, velocity.data(), &summary);
  return velocity;
}

TEST(SapSolver, ContactVelocitiesAndJacobianTransposeMatchTheDenseJacobian) {
  const RandomProblem random = MakeRandomProblem(7, "sap_cone");
  std::mt19937 generator(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Eigen::VectorXd velocity(kUnknowns);
  for (int i = 0; i < kUnknowns; ++i) velocity(i) = uniform(generator);
  const std::vector<Vector3> contact_velocities = ContactVelocities(random.problem, velocity);
  const Eigen::VectorXd expected = random.jacobian * velocity + random.bias;
  std::vector<Vector3> forces;
  Eigen::VectorXd stacked_forces(expected.size());
  for (int c = 0; c < static_cast<int>(contact_velocities.size()); ++c) {
    EXPECT_LT((contact_velocities[c] - expected.segment<3>(3 * c)).norm(), 1e-14);
    forces.push_back(Vector3(uniform(generator), uniform(generator), uniform(generator)));
    stacked_forces.segment<3>(3 * c) = forces.back();
  }
  Eigen::VectorXd result = Eigen::VectorXd::Ones(kUnknowns);  // accumulates onto what is there
  AddJacobianTransposeProduct(random.problem, forces, result);
  EXPECT_LT((result - Eigen::VectorXd::Ones(kUnknowns) - random.jacobian.transpose() * stacked_forces).norm(), 1e-13);
}

// SAP against Ceres on 10 random problems per model. With the default options SAP must stop
// on the optimality rule. For the comparison it runs again with ε_r = 1e-10: the default
// ε_r = 1e-6 bounds the scaled gradient, not the velocity error, and the comparison is about
// the optimum. Tolerance: ℓ is λ-strongly convex with λ = λ_min(A) (the contact costs are
// convex), so ‖v − v_opt‖ ≤ ‖∇ℓ(v)‖/λ; the test asserts this bound is below 1e-9 ‖v*‖ for
// SAP, so the difference measures Ceres' error. L-BFGS only sees ℓ through its line search
// and stalls once cost decreases fall below round-off, ε ℓ ≈ 1e-15 ℓ, i.e. at a distance
// ~ √(2 ε ℓ/κ) ≈ 1e-7 ‖v*‖ along directions of curvature κ ~ λ (observed: up to ~1.4e-7).
// Hence the 1e-6 ‖v*‖ bound on the velocity difference; costs agree to 1e-9 relative (the
// cost error is second order in the velocity error).
void CompareWithCeres(const std::string& model_name) {
  int regime_counts[3] = {0, 0, 0};
  std::vector<int> iteration_counts, tight_iteration_counts;
  double largest_difference = 0.0;
  for (unsigned seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(model_name + " seed " + std::to_string(seed));
    const RandomProblem random = MakeRandomProblem(seed, model_name);
    DenseSapLinearSystem system(random.dynamics_matrix);
    const SapSolverResults default_results =
        SolveSap(random.problem, system, random.problem.free_motion_velocity, SapSolverOptions{});
    EXPECT_TRUE(default_results.summary.converged()) << default_results.summary.BriefReport("sap");
    EXPECT_EQ(default_results.summary.termination, solvers::Termination::kConverged)
        << default_results.summary.BriefReport("sap");
    EXPECT_LE(default_results.summary.residual, 1.0);
    // One history record per iterate: the Newton iterates, then the final one.
    EXPECT_EQ(default_results.summary.iterations + 1, static_cast<int>(default_results.summary.history.size()));
    EXPECT_EQ(default_results.summary.history.back().step, 0.0);
    EXPECT_LE(default_results.summary.history.back().residual, default_results.summary.history.back().threshold);
    iteration_counts.push_back(default_results.summary.iterations);

    SapSolverOptions tight;
    tight.relative_tolerance = 1e-10;
    const SapSolverResults results = SolveSap(random.problem, system, random.problem.free_motion_velocity, tight);
    EXPECT_EQ(results.summary.termination, solvers::Termination::kConverged) << results.summary.BriefReport("sap");
    tight_iteration_counts.push_back(results.summary.iterations);

    ceres::GradientProblemSolver::Summary summary;
    const Eigen::VectorXd reference = SolveWithCeres(random, summary);
    ASSERT_EQ(summary.termination_type, ceres::CONVERGENCE) << summary.BriefReport();

    const DenseObjective objective{random};
    Eigen::VectorXd sap_gradient;
    const double sap_cost = objective.Cost(results.velocity, &sap_gradient);
    const double ceres_cost = objective.Cost(reference, nullptr);
    const double scale = random.problem.free_motion_velocity.norm();
    EXPECT_LT(sap_gradient.norm() / random.smallest_eigenvalue, 1e-9 * scale);
    EXPECT_LT((results.velocity - reference).norm(), 1e-6 * scale) << summary.BriefReport();
    largest_difference = std::max(largest_difference, (results.velocity - reference).norm() / scale);
    EXPECT_NEAR(sap_cost, ceres_cost, 1e-9 * std::max(1.0, std::abs(ceres_cost)));
    EXPECT_NEAR(results.summary.cost, sap_cost, 1e-12 * std::max(1.0, std::abs(sap_cost)));
    EXPECT_NEAR(SapCost(random.problem, system, results.velocity), sap_cost, 1e-12 * std::max(1.0, std::abs(sap_cost)));

    // Regimes at the optimum, so that the comparison covers all three.
    for (int c = 0; c < static_cast<int>(results.impulses.size()); ++c) {
      const contact::PreparedContact& prepared = random.problem.constraints[c].contact;
      const Vector3& impulse = results.impulses[c];
      const Vector3& velocity = results.contact_velocities[c];
      if (impulse.z() == 0.0) {
        ++regime_counts[static_cast<int>(Regime::kSeparation)];
      } else if (model_name == "sap_cone") {
        const auto region = contact::ProjectOntoSapCone<double>(prepared, velocity).region;
        ++regime_counts[static_cast<int>(region == contact::SapConeRegion::kStiction ? Regime::kStiction
                                                                                     : Regime::kSliding)];
      } else {
        // The lagged model's friction is smooth; slip below ε_s is its stiction.
        const bool sticking = velocity.head<2>().norm() < prepared.soft_norm_tolerance;
        ++regime_counts[static_cast<int>(sticking ? Regime::kStiction : Regime::kSliding)];
      }
    }
  }
  std::cout << model_name << ": Newton iterations per problem (ε_r = 1e-6):";
  for (int count : iteration_counts) std::cout << ' ' << count;
  std::cout << "; (ε_r = 1e-10):";
  for (int count : tight_iteration_counts) std::cout << ' ' << count;
  std::cout << "; largest ‖v_sap − v_ceres‖/‖v*‖ " << largest_difference
            << "; regimes at the optimum (stiction, sliding, separation): " << regime_counts[0] << ", "
            << regime_counts[1] << ", " << regime_counts[2] << '\n';
  for (int count : regime_counts) EXPECT_GT(count, 0);
}

TEST(SapSolver, MatchesCeresOnRandomProblemsWithTheSapCone) {
  CompareWithCeres("sap_cone");
}
TEST(SapSolver, MatchesCeresOnRandomProblemsWithTheLaggedModel) {
  CompareWithCeres("lagged");
}

// Chord steps (factorization_reuse_ratio > 0) change the path, not the problem: from v = −3
// (several iterations) each run stops on the optimality rule at ε_r = 1e-10, with ℓ never
// increasing beyond round-off, and lands within ‖∇ℓ‖/λ of Newton's answer (ℓ is λ-strongly convex, λ =
// λ_min(A), so both lie within their own ‖∇ℓ‖/λ of the minimizer). Plain Newton factors once
// per iteration; over the 20 problems the chord runs must skip some factorizations. Round-off:
// near the optimum the chord runs take more iterations whose costs agree to the last digits;
// ℓ, recomputed from scratch as the sum of the quadratic part and 10 contact costs, then
// varies by a few ulps per term (observed up to 8.7e-16 ℓ), hence the slack of 4e-15 ℓ.
TEST(SapSolver, ChordStepsReachNewtonsMinimizerWithFewerFactorizations) {
  int newton_factorizations = 0, chord_factorizations = 0, chord_iterations = 0;
  for (const std::string model_name : {"sap_cone", "lagged"}) {
    for (unsigned seed = 40; seed < 50; ++seed) {
      SCOPED_TRACE(model_name + " seed " + std::to_string(seed));
      const RandomProblem random = MakeRandomProblem(seed, model_name);
      DenseSapLinearSystem system(random.dynamics_matrix);
      const Eigen::VectorXd start = Eigen::VectorXd::Constant(kUnknowns, -3.0);
      SapSolverOptions newton;
      newton.relative_tolerance = 1e-10;
      SapSolverOptions chord = newton;
      chord.factorization_reuse_ratio = 0.5;
      const SapSolverResults newton_results = SolveSap(random.problem, system, start, newton);
      const SapSolverResults chord_results = SolveSap(random.problem, system, start, chord);
      ASSERT_EQ(newton_results.summary.termination, solvers::Termination::kConverged);
      ASSERT_EQ(chord_results.summary.termination, solvers::Termination::kConverged)
          << chord_results.summary.BriefReport("sap");
      EXPECT_EQ(newton_results.factorizations, newton_results.summary.iterations);
      EXPECT_LE(chord_results.factorizations, chord_results.summary.iterations);
      EXPECT_GE(chord_results.factorizations, 1);
      newton_factorizations += newton_results.factorizations;
      chord_factorizations += chord_results.factorizations;
      chord_iterations += chord_results.summary.iterations;
      const std::vector<solvers::SolverIterationRecord>& history = chord_results.summary.history;
      for (size_t k = 0; k + 1 < history.size(); ++k) {
        EXPECT_LE(history[k + 1].cost, history[k].cost + 4e-15 * std::abs(history[k].cost)) << "iteration " << k;
      }
      const DenseObjective objective{random};
      Eigen::VectorXd newton_gradient, chord_gradient;
      objective.Cost(newton_results.velocity, &newton_gradient);
      objective.Cost(chord_results.velocity, &chord_gradient);
      const double bound = (newton_gradient.norm() + chord_gradient.norm()) / random.smallest_eigenvalue;
      EXPECT_LE((chord_results.velocity - newton_results.velocity).norm(), bound);
      EXPECT_LT(bound, 1e-8 * random.problem.free_motion_velocity.norm());
    }
  }
  std::cout << "factorizations over 20 problems: Newton " << newton_factorizations << ", chord " << chord_factorizations
            << " in " << chord_iterations << " iterations\n";
  EXPECT_LT(chord_factorizations, chord_iterations);
}

TEST(SapSolver, FactorizationReuseRatioOutsideZeroToOneIsRejected) {
  const RandomProblem random = MakeRandomProblem(1, "lagged");
  DenseSapLinearSystem system(random.dynamics_matrix);
  for (const double ratio : {-0.1, 1.0}) {
    SapSolverOptions options;
    options.factorization_reuse_ratio = ratio;
    EXPECT_THROW(SolveSap(random.problem, system, random.problem.free_motion_velocity, options), std::invalid_argument);
  }
}

// Exact line search on a convex ℓ: the cost at the start of every Newton iteration never
// increases, and the final cost is at most the last recorded one. The start v = 0 is far from
// v* so that several iterations are taken. The slack is a few ulps of ℓ: the cost at the
// new iterate is recomputed from scratch rather than read off the line function.
TEST(SapSolver, CostDecreasesMonotonically) {
  for (const std::string model_name : {"sap_cone", "lagged"}) {
    for (unsigned seed = 20; seed < 30; ++seed) {
      SCOPED_TRACE(model_name + " seed " + std::to_string(seed));
      const RandomProblem random = MakeRandomProblem(seed, model_name);
      DenseSapLinearSystem system(random.dynamics_matrix);
      const Eigen::VectorXd start = Eigen::VectorXd::Constant(kUnknowns, -3.0);
      const SapSolverResults results = SolveSap(random.problem, system, start, SapSolverOptions{});
      EXPECT_TRUE(results.summary.converged()) << results.summary.BriefReport("sap");
      ASSERT_GE(results.summary.history.size(), 2u) << results.summary.BriefReport("sap");
      const double initial_cost = SapCost(random.problem, system, start);
      EXPECT_DOUBLE_EQ(results.summary.history.front().cost, initial_cost);
      EXPECT_EQ(results.summary.history.back().cost, results.summary.cost);
      for (size_t k = 0; k + 1 < results.summary.history.size(); ++k) {
        const double next = results.summary.history[k + 1].cost;
        const double current = results.summary.history[k].cost;
        EXPECT_LE(next, current + 4e-16 * std::abs(current)) << "iteration " << k;
        EXPECT_GT(results.summary.history[k].step, 0.0);
        EXPECT_GT(results.summary.history[k].line_search_evaluations, 0);
      }
    }
  }
}

// With a quadratic contact cost ℓ is quadratic: the Newton step with α = 1 is exact, so SAP
// converges after exactly one iteration, to the closed-form optimum
// (A + Jᵀ K J) v = A v* − Jᵀ K (b − v̂).
TEST(SapSolver, QuadraticObjectiveConvergesInOneNewtonStep) {
  RandomProblem random = MakeRandomProblem(3, "sap_cone");
  QuadraticContact quadratic;
  random.problem.model = &quadratic;
  const int num_constraints = static_cast<int>(random.problem.constraints.size());
  Eigen::VectorXd stiffness(3 * num_constraints), target(3 * num_constraints);
  for (int c = 0; c < num_constraints; ++c) {
    contact::PreparedContact& prepared = random.problem.constraints[c].contact;
    prepared.regularization = Vector3(10.0 + c, 20.0, 30.0 + 2.0 * c);
    prepared.stabilization_velocity = Vector3(0.1 * c, -0.2, 0.3);
    stiffness.segment<3>(3 * c) = prepared.regularization;
    target.segment<3>(3 * c) = prepared.stabilization_velocity;
  }
  DenseSapLinearSystem system(random.dynamics_matrix);
  const SapSolverResults results =
      SolveSap(random.problem, system, random.problem.free_motion_velocity, SapSolverOptions{});
  EXPECT_EQ(results.summary.termination, solvers::Termination::kConverged);
  EXPECT_EQ(results.summary.iterations, 1);
  EXPECT_NEAR(results.summary.history.at(0).step, 1.0, 1e-8);
  const Eigen::MatrixXd& jacobian = random.jacobian;
  const Eigen::MatrixXd hessian = random.dynamics_matrix + jacobian.transpose() * stiffness.asDiagonal() * jacobian;
  const Eigen::VectorXd optimum =
      hessian.llt().solve(random.dynamics_matrix * random.problem.free_motion_velocity -
                          jacobian.transpose() * stiffness.asDiagonal() * (random.bias - target));
  EXPECT_LT((results.velocity - optimum).norm(), 1e-10 * optimum.norm());
}

// H = A + Σ J_cᵀ G_c J_c as factored by DenseSapLinearSystem, recovered column by column as
// the inverse of H⁻¹ eᵢ, against central differences of the independent ∇ℓ. At v* the
// constraints sit well inside their regimes, so ∇ℓ is smooth within the ±h stencil and the
// difference error is O(h²) plus round-off ~ ε ‖∇ℓ‖/h.
TEST(SapSolver, FactoredHessianMatchesFiniteDifferencesOfTheGradient) {
  for (const std::string model_name : {"sap_cone", "lagged"}) {
    SCOPED_TRACE(model_name);
    const RandomProblem random = MakeRandomProblem(5, model_name);
    const SapProblem& problem = random.problem;
    const Eigen::VectorXd velocity = problem.free_motion_velocity;
    const std::vector<Vector3> contact_velocities = ContactVelocities(problem, velocity);
    std::vector<Matrix3> contact_hessians;
    for (int c = 0; c < static_cast<int>(problem.constraints.size()); ++c) {
      contact_hessians.push_back(problem.model->Hessian(problem.constraints[c].contact, contact_velocities[c]));
    }
    DenseSapLinearSystem system(random.dynamics_matrix);
    ASSERT_TRUE(system.Factor(problem, contact_hessians));
    Eigen::MatrixXd inverse_hessian(kUnknowns, kUnknowns);
    Eigen::VectorXd column;
    for (int i = 0; i < kUnknowns; ++i) {
      system.Solve(Eigen::VectorXd::Unit(kUnknowns, i), column);
      inverse_hessian.col(i) = column;
    }
    const Eigen::MatrixXd hessian = inverse_hessian.inverse();

    const DenseObjective objective{random};
    Eigen::MatrixXd finite_difference(kUnknowns, kUnknowns);
    const double step = 1e-6;
    for (int i = 0; i < kUnknowns; ++i) {
      Eigen::VectorXd forward, backward;
      objective.Cost(velocity + step * Eigen::VectorXd::Unit(kUnknowns, i), &forward);
      objective.Cost(velocity - step * Eigen::VectorXd::Unit(kUnknowns, i), &backward);
      finite_difference.col(i) = (forward - backward) / (2.0 * step);
    }
    // The contacts must contribute, or the check would only see A.
    EXPECT_GT((finite_difference - random.dynamics_matrix).norm(), 0.1 * random.dynamics_matrix.norm());
    EXPECT_LT((hessian - finite_difference).norm(), 1e-6 * finite_difference.norm());
  }
}

// ---------------------------------------------------------------------------------------
// Rigid-only analytic checks: one free rigid body with v = [v; ω] in world,
// A = diag(m I, I_W), v* = v + Δt g, ω* = ω + Δt I_W⁻¹ τ, and point contacts with a static
// ground whose contact frame has z along the ground normal. The body plays the MPM side:
// v_c = R_CW (v + ω × r) = R_CW [I, −[r]×] [v; ω] with r the contact point relative to the
// centre of mass, so γ_n ≥ 0 pushes the body off the ground. SAP cone with k = 1e8 N/m,
// σ = 1e-3, β = 1, τ_d = 0, w = trace(J A⁻¹ Jᵀ)/3. The contact geometry is frozen relative
// to the ground (the offsets r are not rotated: the tilt stays ~1e-4 rad, and the spinning
// body is symmetric about its spin axis); each point's signed distance follows the centre of
// mass displacement and the small-angle rotation.

Matrix3 Skew(const Vector3& vector) {
  Matrix3 skew;
  skew << 0.0, -vector.z(), vector.y(), vector.z(), 0.0, -vector.x(), -vector.y(), vector.x(), 0.0;
  return skew;
}

struct RigidScene {
  double mass = 1.0;                      // [kg]
  Matrix3 inertia = Matrix3::Identity();  // I_W about the centre of mass [kg m²]
  Vector3 normal = Vector3::UnitZ();      // ground normal (world)
  std::vector<Vector3> contact_offsets;   // r: contact points − centre of mass (world) [m]
  double friction_coefficient = 0.5;
  Vector3 torque = Vector3::Zero();  // applied torque [N m]
  double time_step = 0.01;           // [s]
};

struct RigidState {
  Eigen::Matrix<double, 6, 1> velocity = Eigen::Matrix<double, 6, 1>::Zero();  // [v; ω]
  Vector3 displacement = Vector3::Zero();  // of the centre of mass from the resting pose [m]
  Vector3 rotation = Vector3::Zero();      // small-angle rotation from the resting pose [rad]
};

class RigidStepper {
 public:
  explicit RigidStepper(RigidScene scene)
      : scene_(std::move(scene)),
        model_(contact::MakeContactModel(ModelParameters("sap_cone"))),
        frame_(contact::MakeContactFrame(scene_.normal)) {
    dynamics_matrix_ = Eigen::MatrixXd::Zero(6, 6);
    dynamics_matrix_.topLeftCorner<3, 3>() = scene_.mass * Matrix3::Identity();
    dynamics_matrix_.bottomRightCorner<3, 3>() = scene_.inertia;
    const Eigen::MatrixXd inverse = dynamics_matrix_.inverse();
    for (const Vector3& offset : scene_.contact_offsets) {
      Eigen::Matrix<double, 3, 6> jacobian;
      jacobian << frame_.transpose(), -frame_.transpose() * Skew(offset);
      jacobians_.push_back(jacobian);
      delassus_scales_.push_back((jacobian * inverse * jacobian.transpose()).trace() / 3.0);
    }
  }

  double delassus_scale(int contact) const { return delassus_scales_[contact]; }

  // One step: solve SAP from v*, take its velocity, advance the pose.
  SapSolverResults Step(RigidState& state) const {
    const double time_step = scene_.time_step;
    SapProblem problem;
    problem.model = model_.get();
    problem.free_motion_velocity = state.velocity;
    problem.free_motion_velocity.head<3>() += time_step * Vector3(0.0, 0.0, -kGravity);
    problem.free_motion_velocity.tail<3>() += time_step * scene_.inertia.inverse() * scene_.torque;
    for (size_t c = 0; c < jacobians_.size(); ++c) {
      SapConstraint constraint;
      constraint.jacobian.push_back(JacobianBlock{0, jacobians_[c]});
      // Signed distance of the contact point to the ground, linearized in the rotation:
      // φ = n · (Δx + θ × r). SAP's v̂_n = −φ₀/δt holds for either sign of φ₀ (§1.3.1), so a
      // small gap (negative "penetration") keeps the constraint as a speculative contact;
      // without it the sliding regime's separation velocity μ‖v_t‖ of the convex model
      // (the "gliding" of the regularized cone) would lift the body off for good.
      const double signed_distance =
          scene_.normal.dot(state.displacement + state.rotation.cross(scene_.contact_offsets[c]));
      ContactPointState point;
      point.penetration = -signed_distance;
      point.previous_normal_velocity = (jacobians_[c] * state.velocity).z();
      point.friction_coefficient = scene_.friction_coefficient;
      point.delassus_scale = delassus_scales_[c];
      constraint.contact = model_->Prepare(point, time_step);
      problem.constraints.push_back(std::move(constraint));
    }
    DenseSapLinearSystem system(dynamics_matrix_);
    SapSolverResults results = SolveSap(problem, system, problem.free_motion_velocity, SapSolverOptions{});
    state.velocity = results.velocity;
    state.displacement += time_step * state.velocity.head<3>();
    state.rotation += time_step * state.velocity.tail<3>();
    return results;
  }

 private:
  RigidScene scene_;
  std::unique_ptr<ContactModel> model_;
  Matrix3 frame_;  // R_WC
  Eigen::MatrixXd dynamics_matrix_;
  std::vector<Eigen::Matrix<double, 3, 6>> jacobians_;
  std::vector<double> delassus_scales_;
};

// A 1 kg, 0.2 m cube resting on a slope of angle θ (normal n = (sin θ, 0, cos θ), downhill
// t = (cos θ, 0, −sin θ)) on its four bottom corners.
RigidScene BoxOnSlope(double slope_angle, double friction_coefficient) {
  RigidScene scene;
  const double side = 0.2;
  scene.mass = 1.0;
  scene.inertia = scene.mass * side * side / 6.0 * Matrix3::Identity();
  scene.normal = Vector3(std::sin(slope_angle), 0.0, std::cos(slope_angle));
  const Vector3 downhill(std::cos(slope_angle), 0.0, -std::sin(slope_angle));
  const Vector3 across = Vector3::UnitY();
  for (const double a : {-0.5, 0.5}) {
    for (const double b : {-0.5, 0.5}) {
      scene.contact_offsets.push_back(side * (a * downhill + b * across - 0.5 * scene.normal));
    }
  }
  scene.friction_coefficient = friction_coefficient;
  return scene;
}

struct SlopeRun {
  std::vector<double> downhill_speed;  // after each step [m/s]
  double largest_normal_speed = 0.0;   // [m/s]
  double downhill_distance = 0.0;      // after the last step [m]
  double final_angular_speed = 0.0;    // [rad/s]
  int max_iterations = 0;
  bool all_converged = true;
};

SlopeRun SimulateSlope(double slope_angle, double friction_coefficient, int steps) {
  const RigidScene scene = BoxOnSlope(slope_angle, friction_coefficient);
  const RigidStepper stepper(scene);
  const Vector3 downhill(std::cos(slope_angle), 0.0, -std::sin(slope_angle));
  RigidState state;
  SlopeRun run;
  for (int step = 0; step < steps; ++step) {
    const SapSolverResults results = stepper.Step(state);
    run.all_converged = run.all_converged && results.summary.converged();
    run.max_iterations = std::max(run.max_iterations, results.summary.iterations);
    run.downhill_speed.push_back(state.velocity.head<3>().dot(downhill));
    run.largest_normal_speed = std::max(run.largest_normal_speed, std::abs(state.velocity.head<3>().dot(scene.normal)));
  }
  run.downhill_distance = state.displacement.dot(downhill);
  run.final_angular_speed = state.velocity.tail<3>().norm();
  return run;
}

constexpr double kSlopeAngle = std::numbers::pi / 6.0;  // 30°

// μ = 1.2 tan θ: the box sticks. In SAP's regularized stiction γ_t = −v_t/R_t (R_t = σ w) at
// every sticking corner, and in steady state the corners carry Σγ_t = m g sin θ Δt. The
// uphill corners carry less normal load (the friction torque tips the box forward) and may
// sit on the cone's surface, so the downhill pair can carry up to all of it: the creep is at
// most R_t m g sin θ Δt / 2 ≈ 9.8e-5 m/s, the σ δt g scale of §1.3.1 (w = 4 kg⁻¹ here).
// That is the bound; the box then moves < 1e-4 m in 1 s.
TEST(SapSolverRigid, BoxOnSlopeSticksWhenFrictionExceedsTheSlope) {
  const double friction = 1.2 * std::tan(kSlopeAngle);
  const SlopeRun run = SimulateSlope(kSlopeAngle, friction, 100);
  EXPECT_TRUE(run.all_converged);
  const RigidStepper stepper(BoxOnSlope(kSlopeAngle, friction));
  const double creep_bound = 1.0e-3 * stepper.delassus_scale(0) * 1.0 * kGravity * std::sin(kSlopeAngle) * 0.01 / 2.0;
  std::cout << "slope, sticking: downhill speed after 1 s " << run.downhill_speed.back() << " m/s (bound "
            << creep_bound << "), |ω| after 1 s " << run.final_angular_speed << " rad/s, largest Newton iterations "
            << run.max_iterations << '\n';
  EXPECT_LT(std::abs(run.downhill_speed.back()), creep_bound);
  EXPECT_LT(std::abs(run.downhill_distance), 1e-4);
  EXPECT_LT(run.final_angular_speed, 1e-6);
}

// μ = 0.8 tan θ: the box slides with a = g (sin θ − μ cos θ); measured over [0.5 s, 1 s],
// after the first-step transient, within 1%. The convex cone lets a sliding contact separate
// at μ times the slip (SAP's "gliding", bounded by the speculative gap v̂_n = −φ₀/δt), which
// settles at v_n = δt μ a ≈ 4.5 mm/s; bound: twice that.
TEST(SapSolverRigid, BoxOnSlopeSlidesWithTheCoulombAcceleration) {
  const double friction = 0.8 * std::tan(kSlopeAngle);
  const SlopeRun run = SimulateSlope(kSlopeAngle, friction, 100);
  EXPECT_TRUE(run.all_converged);
  const double measured = (run.downhill_speed[99] - run.downhill_speed[49]) / 0.5;
  const double expected = kGravity * (std::sin(kSlopeAngle) - friction * std::cos(kSlopeAngle));
  std::cout << "slope, sliding: acceleration " << measured << " m/s² (expected " << expected << "), largest |v_n| "
            << run.largest_normal_speed << " m/s, largest Newton iterations " << run.max_iterations << '\n';
  EXPECT_NEAR(measured, expected, 0.01 * expected);
  EXPECT_LT(run.largest_normal_speed, 2.0 * 0.01 * friction * expected);
}

// "Pizza saver": a 1 kg body on three contact points at radius R = 0.1 m (120° apart),
// h = 0.05 m below the centre of mass, on the horizontal ground, μ = 0.5, with a torque M about
// the vertical axis. Thin-disc inertia I = diag(mR²/4, mR²/4, mR²/2). Friction can resist at
// most μ m g R.
RigidScene PizzaSaver(double torque) {
  RigidScene scene;
  const double radius = 0.1, height = 0.05;
  scene.mass = 1.0;
  scene.inertia = Vector3(0.25, 0.25, 0.5).asDiagonal();
  scene.inertia *= scene.mass * radius * radius;
  scene.normal = Vector3::UnitZ();
  for (int i = 0; i < 3; ++i) {
    const double angle = std::numbers::pi / 2.0 + 2.0 * std::numbers::pi * i / 3.0;
    scene.contact_offsets.push_back(Vector3(radius * std::cos(angle), radius * std::sin(angle), -height));
  }
  scene.friction_coefficient = 0.5;
  scene.torque = Vector3(0.0, 0.0, torque);
  return scene;
}

struct SpinRun {
  std::vector<double> spin;        // ω_z after each step [rad/s]
  double largest_tilt_rate = 0.0;  // max |ω_x|, |ω_y| [rad/s]
  int max_iterations = 0;
  bool all_converged = true;
};

SpinRun SimulatePizzaSaver(double torque, int steps) {
  const RigidStepper stepper(PizzaSaver(torque));
  RigidState state;
  SpinRun run;
  for (int step = 0; step < steps; ++step) {
    const SapSolverResults results = stepper.Step(state);
    run.all_converged = run.all_converged && results.summary.converged();
    run.max_iterations = std::max(run.max_iterations, results.summary.iterations);
    run.spin.push_back(state.velocity(5));
    run.largest_tilt_rate = std::max(run.largest_tilt_rate, state.velocity.segment<2>(3).norm());
  }
  return run;
}

constexpr double kPizzaFrictionTorque = 0.5 * 1.0 * kGravity * 0.1;  // μ m g R [N m]

// M = 0.9 μ m g R: it stays. By symmetry the three contacts share the load and all stick:
// each carries γ_t = M Δt/(3R) and creeps at R_t γ_t, a spin of σ w M Δt/(3R²) ≈ 5.4e-4
// rad/s (w ≈ 3.7 kg⁻¹); the steady spin must equal that within 5%.
TEST(SapSolverRigid, PizzaSaverHoldsBelowTheFrictionTorque) {
  const double torque = 0.9 * kPizzaFrictionTorque;
  const SpinRun run = SimulatePizzaSaver(torque, 100);
  EXPECT_TRUE(run.all_converged);
  const RigidStepper stepper(PizzaSaver(torque));
  const double creep = 1.0e-3 * stepper.delassus_scale(0) * torque * 0.01 / (3.0 * 0.1 * 0.1);
  std::cout << "pizza saver, holding: spin after 1 s " << run.spin.back() << " rad/s (creep " << creep
            << "), largest Newton iterations " << run.max_iterations << '\n';
  EXPECT_NEAR(run.spin.back(), creep, 0.05 * creep);
  EXPECT_LT(run.largest_tilt_rate, 1e-6);
}

// M = 1.1 μ m g R: it spins up with α = (M − μ m g R)/I_zz = 9.81 rad/s², measured over
// [0.5 s, 1 s] within 1%.
TEST(SapSolverRigid, PizzaSaverSpinsUpAboveTheFrictionTorque) {
  const double torque = 1.1 * kPizzaFrictionTorque;
  const SpinRun run = SimulatePizzaSaver(torque, 100);
  EXPECT_TRUE(run.all_converged);
  const double measured = (run.spin[99] - run.spin[49]) / 0.5;
  const double expected = (torque - kPizzaFrictionTorque) / (0.5 * 1.0 * 0.1 * 0.1);
  std::cout << "pizza saver, spinning: angular acceleration " << measured << " rad/s² (expected " << expected
            << "), largest Newton iterations " << run.max_iterations << '\n';
  EXPECT_NEAR(measured, expected, 0.01 * expected);
  EXPECT_LT(run.largest_tilt_rate, 1e-6);
}

// ---------------------------------------------------------------------------------------
// Options.

TEST(SapSolverOptions, ValidateNamesTheOffendingField) {
  EXPECT_EQ(SapSolverOptions{}.Validate(), "");
  auto message_for = [](auto change) {
    SapSolverOptions options;
    change(options);
    return options.Validate();
  };
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.relative_tolerance = -1e-6; }).find("relative_tolerance"),
            std::string::npos);
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.absolute_tolerance = -1.0; }).find("absolute_tolerance"),
            std::string::npos);
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.max_iterations = 0; }).find("max_iterations"), std::string::npos);
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.cost_relative_tolerance = -1.0; }).find("cost_relative_tolerance"),
            std::string::npos);
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.relative_tolerance = std::nan(""); }).find("relative_tolerance"),
            std::string::npos);
  EXPECT_NE(message_for([](SapSolverOptions& o) { o.line_search.max_step = 0.0; }).find("line_search.max_step"),
            std::string::npos);
  EXPECT_NE(
      message_for([](SapSolverOptions& o) { o.line_search.max_iterations = 0; }).find("line_search.max_iterations"),
      std::string::npos);

  // SolveSap refuses invalid options.
  const RandomProblem random = MakeRandomProblem(1, "sap_cone");
  DenseSapLinearSystem system(random.dynamics_matrix);
  SapSolverOptions options;
  options.max_iterations = 0;
  EXPECT_THROW(SolveSap(random.problem, system, random.problem.free_motion_velocity, options), std::invalid_argument);
}

}  // namespace
}  // namespace contactlab::solvers
