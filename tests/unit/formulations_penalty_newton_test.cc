// The stabilized Newton solver of the penalty formulation (spec-penalty-hybrid §2.10–2.11)
// and its strong Wolfe line search: Wolfe conditions at the accepted step, the GMRES
// direction downhill for E = ½‖g‖² whenever it lowered the residual, convergence on a
// nonsymmetric, kinked system with a known solution, and stationary points reported as such.
#include <array>
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <Eigen/LU>

#include "formulations/penalty/stabilized_newton.h"
#include "formulations/solvers/wolfe_line_search.h"

namespace contactlab::penalty {
namespace {

using solvers::MeritSample;

TEST(WolfeLineSearch, AcceptedStepSatisfiesBothConditions) {
  // φ(α) = (α − 0.3)² + 0.1 α⁴ − 0.09, minimum near 0.29: α = 1 overshoots, zoom finds it.
  auto merit = [](double a) {
    return MeritSample{(a - 0.3) * (a - 0.3) + 0.1 * a * a * a * a - 0.09, 2.0 * (a - 0.3) + 0.4 * a * a * a};
  };
  const solvers::WolfeLineSearchOptions options;
  const MeritSample initial = merit(0.0);
  const solvers::WolfeLineSearchResult result = solvers::WolfeLineSearch(merit, initial, options);
  ASSERT_TRUE(result.wolfe_satisfied);
  EXPECT_LE(result.sample.value, initial.value + options.sufficient_decrease * result.step * initial.derivative);
  EXPECT_LE(std::abs(result.sample.derivative), -options.curvature * initial.derivative);
  EXPECT_GT(result.step, 0.0);
  EXPECT_LT(result.step, 1.0);
}

TEST(WolfeLineSearch, ExtendsShortDirectionsAndRefusesAscent) {
  // Minimum at α = 30: at α = 1 the slope has barely changed, so the bracket phase doubles
  // the step (up to max_step).
  auto merit = [](double a) { return MeritSample{(a - 30.0) * (a - 30.0), 2.0 * (a - 30.0)}; };
  const solvers::WolfeLineSearchResult result = solvers::WolfeLineSearch(merit, merit(0.0));
  EXPECT_TRUE(result.wolfe_satisfied);
  EXPECT_GT(result.step, 1.0);
  // φ'(0) > 0: not a descent direction, no step is taken.
  auto ascent = [](double a) { return MeritSample{a, 1.0}; };
  const solvers::WolfeLineSearchResult refused = solvers::WolfeLineSearch(ascent, ascent(0.0));
  EXPECT_FALSE(refused.decreased);
  EXPECT_EQ(refused.step, 0.0);
  EXPECT_EQ(refused.evaluations, 0);
}

// A random sparse nonsymmetric matrix: diagonal d ∈ [1, 3] plus off-diagonal couplings.
SparseMatrix RandomNonsymmetric(int size, std::mt19937& random, double coupling) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Eigen::Triplet<double>> triplets;
  for (int i = 0; i < size; ++i) {
    triplets.emplace_back(i, i, 2.0 + uniform(random));
    for (int k = 0; k < 4; ++k) {
      const int j = static_cast<int>((random() % size));
      if (j != i) triplets.emplace_back(i, j, coupling * uniform(random));
    }
  }
  SparseMatrix matrix(size, size);
  matrix.setFromTriplets(triplets.begin(), triplets.end());
  return matrix;
}

TEST(NewtonDirection, DownhillWheneverGmresLowersTheResidual) {
  // Spec §2.10: gᵀHΔx = −‖g‖² − gᵀρ < 0 when ‖ρ‖ < ‖g‖, for any right-preconditioned GMRES
  // iterate. Few iterations, so GMRES stops well before solving.
  std::mt19937 random(7);
  std::normal_distribution<double> normal;
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int size = 30;
    const SparseMatrix jacobian = RandomNonsymmetric(size, random, 1.5);
    Eigen::VectorXd residual(size);
    for (int i = 0; i < size; ++i) residual[i] = normal(random);
    StabilizedNewtonOptions options;
    options.gmres_iterations = 1 + trial % 4;
    const Preconditioner preconditioner =
        std::array{Preconditioner::kBlockJacobi, Preconditioner::kIncompleteLu, Preconditioner::kNone}[trial % 3];
    std::vector<int> blocks;
    for (int i = 0; i <= size; i += 3) blocks.push_back(i);
    const NewtonDirection direction = ComputeNewtonDirection(jacobian, residual, blocks, options, preconditioner);
    if (direction.fallback) continue;
    const double slope = residual.dot(jacobian * direction.direction);
    const double linear_residual = (jacobian * direction.direction + residual).norm();
    ASSERT_LT(direction.gmres_relative_residual, 1.0);
    EXPECT_NEAR(linear_residual / residual.norm(), direction.gmres_relative_residual, 1e-12);
    EXPECT_LE(slope, -residual.squaredNorm() + residual.norm() * linear_residual + 1e-12);
    EXPECT_LT(slope, 0.0);
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(NewtonDirection, FallsBackToSteepestDescentWhenGmresCannotHelp) {
  // H singular in the residual's direction: GMRES returns 0 and −Hᵀg is used.
  SparseMatrix jacobian(2, 2);
  jacobian.insert(0, 0) = 1.0;
  jacobian.insert(1, 0) = 1.0;
  jacobian.makeCompressed();
  const Eigen::Vector2d residual(1.0, -1.0);  // orthogonal to H's range
  const NewtonDirection direction =
      ComputeNewtonDirection(jacobian, residual, {0, 1, 2}, StabilizedNewtonOptions{}, Preconditioner::kBlockJacobi);
  EXPECT_TRUE(direction.fallback);
  EXPECT_NEAR((direction.direction + jacobian.transpose() * residual).norm(), 0.0, 1e-15);
}

TEST(NewtonDirection, SparseLuGivesTheNewtonStepAndYieldsToBlockJacobiWhenSingular) {
  std::mt19937 random(5);
  std::normal_distribution<double> normal;
  const int size = 60;
  const SparseMatrix jacobian = RandomNonsymmetric(size, random, 1.5);
  Eigen::VectorXd residual(size);
  for (int i = 0; i < size; ++i) residual[i] = normal(random);
  std::vector<int> blocks;
  for (int i = 0; i <= size; i += 3) blocks.push_back(i);
  const NewtonDirection exact =
      ComputeNewtonDirection(jacobian, residual, blocks, StabilizedNewtonOptions{}, Preconditioner::kSparseLu);
  EXPECT_EQ(exact.preconditioner, Preconditioner::kSparseLu);
  EXPECT_TRUE(exact.gmres_converged);
  EXPECT_FALSE(exact.fallback);
  EXPECT_LE(exact.gmres_iterations, 2);
  // Against a dense LU of the same H.
  const Eigen::VectorXd dense = Eigen::MatrixXd(jacobian).partialPivLu().solve(-residual);
  EXPECT_LT((exact.direction - dense).norm(), 1e-10 * dense.norm());

  // A zero column: UMFPACK reports H singular and the direction comes from block Jacobi.
  SparseMatrix singular = jacobian;
  for (SparseMatrix::InnerIterator it(singular, 7); it; ++it) it.valueRef() = 0.0;
  const NewtonDirection fallback =
      ComputeNewtonDirection(singular, residual, blocks, StabilizedNewtonOptions{}, Preconditioner::kSparseLu);
  EXPECT_EQ(fallback.preconditioner, Preconditioner::kBlockJacobi);
  EXPECT_TRUE(fallback.direction.allFinite());
}

// g(x) = (m I + k L) x + ε x∘x∘x − b with L the Laplacian of a chain of `size` unknowns
// (fixed ends): a stiff membrane in one dimension. With k/m = 1e4 the spectrum spans four
// decades and the 2×2 blocks of block Jacobi see only m + 2k, so GMRES(20) cannot reach 1e-3.
class StiffChainSystem final : public NonlinearSystem {
 public:
  StiffChainSystem(int size, double stiffness) : size_(size), stiffness_(stiffness) {
    solution_.resize(size);
    for (int i = 0; i < size; ++i) solution_[i] = std::sin(0.05 * i) + 0.3 * std::cos(0.31 * i);
    right_side_ = Eigen::VectorXd::Zero(size);
    Eigen::VectorXd at_solution;
    Evaluate(solution_, &at_solution, nullptr);
    right_side_ = at_solution;
  }
  int size() const override { return size_; }
  bool BeginIteration(const Eigen::VectorXd&) override { return false; }
  void Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) override {
    residual->resize(size_);
    std::vector<Eigen::Triplet<double>> triplets;
    for (int i = 0; i < size_; ++i) {
      double laplacian = 2.0 * x[i];
      if (i > 0) laplacian -= x[i - 1];
      if (i + 1 < size_) laplacian -= x[i + 1];
      (*residual)[i] = x[i] + stiffness_ * laplacian + 0.1 * x[i] * x[i] * x[i] - right_side_[i];
      triplets.emplace_back(i, i, 1.0 + 2.0 * stiffness_ + 0.3 * x[i] * x[i]);
      if (i > 0) triplets.emplace_back(i, i - 1, -stiffness_);
      if (i + 1 < size_) triplets.emplace_back(i, i + 1, -stiffness_);
    }
    if (jacobian == nullptr) return;
    jacobian->resize(size_, size_);
    jacobian->setFromTriplets(triplets.begin(), triplets.end());
  }
  std::vector<int> PreconditionerBlocks() const override {
    std::vector<int> blocks;
    for (int i = 0; i < size_; i += 2) blocks.push_back(i);
    blocks.push_back(size_);
    return blocks;
  }
  const Eigen::VectorXd& solution() const { return solution_; }

 private:
  int size_;
  double stiffness_;
  Eigen::VectorXd solution_;
  Eigen::VectorXd right_side_;
};

TEST(StabilizedNewton, AutoFactorsTheSymmetricPartWhereBlockJacobiWouldNotConverge) {
  StabilizedNewtonOptions options;
  options.residual_tolerance = 1e-9;
  options.max_iterations = 200;
  const auto solve = [&](Preconditioner preconditioner) {
    StiffChainSystem system(400, 1.0e4);
    options.preconditioner = preconditioner;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(system.size());
    StabilizedNewtonResults results = SolveStabilizedNewton(system, options, x);
    EXPECT_EQ(results.directions_by_preconditioner[static_cast<int>(Preconditioner::kAuto)], 0);
    if (results.converged()) {
      EXPECT_LT((x - system.solution()).norm(), 1e-6 * system.solution().norm()) << results.BriefReport();
    }
    return results;
  };
  // A stiffness 10⁴ times the mass: block Jacobi's GMRES(20) leaves most of the residual and
  // Newton does not converge within the budget.
  const StabilizedNewtonResults block_jacobi = solve(Preconditioner::kBlockJacobi);
  EXPECT_FALSE(block_jacobi.converged()) << block_jacobi.BriefReport();
  // auto factors the (here whole, symmetric) Jacobian: exact directions, Newton's quadratic
  // convergence from x = 0 on the cubic term, every direction a Cholesky one.
  const StabilizedNewtonResults automatic = solve(Preconditioner::kAuto);
  EXPECT_TRUE(automatic.converged()) << automatic.BriefReport();
  EXPECT_LE(automatic.summary.iterations, 10) << automatic.BriefReport();
  EXPECT_EQ(automatic.directions_by_preconditioner[static_cast<int>(Preconditioner::kCholesky)],
            automatic.summary.iterations);
}

TEST(NewtonDirection, CholeskyOfTheWeightedSymmetricPartAndItsFallbackToTheLu) {
  // H = W⁻¹ S + a skew part: the weights W make W H nearly symmetric, and the Cholesky factor
  // of sym(W H) then brings GMRES to the Newton step in a few iterations.
  std::mt19937 random(5);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const int n = 30;
  Eigen::MatrixXd square = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = std::max(0, i - 2); j <= std::min(n - 1, i + 2); ++j) square(i, j) = uniform(random);
  }
  const Eigen::MatrixXd spd = square * square.transpose() + 1.0e3 * Eigen::MatrixXd::Identity(n, n);
  Eigen::VectorXd weights(n);
  for (int i = 0; i < n; ++i) weights[i] = std::exp(3.0 * uniform(random));
  Eigen::MatrixXd skew = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i + 1 < n; ++i) {
    skew(i, i + 1) = 0.5 * uniform(random);
    skew(i + 1, i) = -skew(i, i + 1);
  }
  const SparseMatrix jacobian = (weights.cwiseInverse().asDiagonal() * (spd + skew)).sparseView();
  Eigen::VectorXd residual(n);
  for (int i = 0; i < n; ++i) residual[i] = uniform(random);
  PreconditionerInputs inputs;
  for (int i = 0; i <= n; ++i) inputs.blocks.push_back(i);
  inputs.symmetrizing_row_weights = weights;
  const NewtonDirection direction =
      ComputeNewtonDirection(jacobian, residual, inputs, StabilizedNewtonOptions{}, Preconditioner::kCholesky);
  EXPECT_EQ(direction.preconditioner, Preconditioner::kCholesky);
  EXPECT_TRUE(direction.gmres_converged);
  EXPECT_LE(direction.gmres_iterations, 5);
  EXPECT_FALSE(direction.fallback);
  EXPECT_LE((jacobian * direction.direction + residual).norm(), 1e-3 * residual.norm());

  // sym(H) = diag(1, −1) is not positive definite: the direction takes the LU instead.
  SparseMatrix indefinite(2, 2);
  indefinite.insert(0, 0) = 1.0;
  indefinite.insert(1, 1) = -1.0;
  indefinite.makeCompressed();
  PreconditionerInputs plain;
  plain.blocks = {0, 1, 2};
  const NewtonDirection lu = ComputeNewtonDirection(indefinite, Eigen::Vector2d(1.0, 2.0), plain,
                                                    StabilizedNewtonOptions{}, Preconditioner::kCholesky);
  EXPECT_EQ(lu.preconditioner, Preconditioner::kSparseLu);
  EXPECT_NEAR(lu.direction[0], -1.0, 1e-12);
  EXPECT_NEAR(lu.direction[1], 2.0, 1e-12);
}

// g(x) = A x + ½ x∘x∘x + c max(0, x_next) − b: nonsymmetric, with a kink like a contact
// switching on, and a known root x*.
class KinkedSystem final : public NonlinearSystem {
 public:
  KinkedSystem(int size, std::mt19937& random) : matrix_(RandomNonsymmetric(size, random, 0.8)) {
    std::normal_distribution<double> normal;
    solution_.resize(size);
    for (int i = 0; i < size; ++i) solution_[i] = normal(random);
    right_side_ = Eigen::VectorXd::Zero(size);
    Eigen::VectorXd at_solution;
    Evaluate(solution_, &at_solution, nullptr);
    right_side_ = at_solution;
  }
  int size() const override { return static_cast<int>(solution_.size()); }
  bool BeginIteration(const Eigen::VectorXd&) override { return false; }
  void Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) override {
    const int n = size();
    *residual = matrix_ * x + 0.5 * x.array().cube().matrix() - right_side_;
    for (int i = 0; i < n; ++i) (*residual)[i] += 0.7 * std::max(0.0, x[(i + 1) % n]);
    if (jacobian == nullptr) return;
    std::vector<Eigen::Triplet<double>> triplets;
    for (int k = 0; k < matrix_.outerSize(); ++k) {
      for (SparseMatrix::InnerIterator it(matrix_, k); it; ++it) triplets.emplace_back(it.row(), it.col(), it.value());
    }
    for (int i = 0; i < n; ++i) {
      triplets.emplace_back(i, i, 1.5 * x[i] * x[i]);
      if (x[(i + 1) % n] > 0.0) triplets.emplace_back(i, (i + 1) % n, 0.7);
    }
    jacobian->resize(n, n);
    jacobian->setFromTriplets(triplets.begin(), triplets.end());
  }
  std::vector<int> PreconditionerBlocks() const override {
    std::vector<int> blocks;
    for (int i = 0; i < size(); i += 2) blocks.push_back(i);
    blocks.push_back(size());
    return blocks;
  }
  const Eigen::VectorXd& solution() const { return solution_; }

 private:
  SparseMatrix matrix_;
  Eigen::VectorXd solution_;
  Eigen::VectorXd right_side_;
};

TEST(StabilizedNewton, ConvergesOnAKinkedNonsymmetricSystem) {
  for (Preconditioner preconditioner :
       {Preconditioner::kAuto, Preconditioner::kBlockJacobi, Preconditioner::kIncompleteLu, Preconditioner::kSparseLu,
        Preconditioner::kNone}) {
    std::mt19937 random(11);
    KinkedSystem system(40, random);
    StabilizedNewtonOptions options;
    options.preconditioner = preconditioner;
    options.residual_tolerance = 1e-10;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(40);
    const StabilizedNewtonResults results = SolveStabilizedNewton(system, options, x);
    const solvers::SolverSummary& summary = results.summary;
    EXPECT_EQ(summary.termination, solvers::Termination::kConverged) << results.BriefReport();
    EXPECT_LT((x - system.solution()).norm(), 1e-9 * system.solution().norm()) << results.BriefReport();
    EXPECT_LT(summary.iterations, 40) << results.BriefReport();
    // The shared shape: one record per iterate (the last one final), each with its GMRES
    // count summed into linear_iterations, ‖g‖ against τ_g and the merit E = ½‖g‖².
    ASSERT_EQ(summary.history.size(), static_cast<std::size_t>(summary.iterations + 1));
    ASSERT_EQ(results.details.size(), summary.history.size());
    int linear_iterations = 0;
    for (const solvers::SolverIterationRecord& record : summary.history) {
      linear_iterations += record.linear_iterations;
      EXPECT_EQ(record.threshold, options.residual_tolerance);
      EXPECT_NEAR(record.cost, 0.5 * record.residual * record.residual, 1e-15 * (1.0 + record.cost));
    }
    EXPECT_EQ(linear_iterations, summary.linear_iterations);
    EXPECT_LE(summary.residual, 1.0);
    // Every direction counted under the preconditioner it used; auto factors sym(H), which
    // is positive definite here (A is diagonally dominant).
    int directions = 0;
    for (int count : results.directions_by_preconditioner) directions += count;
    EXPECT_EQ(directions, summary.iterations);
    const Preconditioner expected =
        preconditioner == Preconditioner::kAuto ? Preconditioner::kCholesky : preconditioner;
    EXPECT_EQ(results.directions_by_preconditioner[static_cast<int>(expected)], summary.iterations);
    // The merit E = ½‖g‖² never increases between accepted iterates.
    for (std::size_t k = 1; k < summary.history.size(); ++k) {
      EXPECT_LE(summary.history[k].residual, summary.history[k - 1].residual * (1.0 + 1e-12));
    }
  }
}

// g(x) = x² + 1 has no real root; at x = 0, H = 0 and E is stationary.
class NoRootSystem final : public NonlinearSystem {
 public:
  int size() const override { return 1; }
  bool BeginIteration(const Eigen::VectorXd&) override { return false; }
  void Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) override {
    residual->resize(1);
    (*residual)[0] = x[0] * x[0] + 1.0;
    if (jacobian != nullptr) {
      jacobian->resize(1, 1);
      jacobian->insert(0, 0) = 2.0 * x[0];
      jacobian->makeCompressed();
    }
  }
  std::vector<int> PreconditionerBlocks() const override { return {0, 1}; }
};

TEST(StabilizedNewton, ReportsAStationaryPointThatIsNoSolution) {
  NoRootSystem system;
  StabilizedNewtonOptions options;
  options.stationarity_tolerance = 1e-6;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(1, 0.5);
  const StabilizedNewtonResults results = SolveStabilizedNewton(system, options, x);
  EXPECT_EQ(results.summary.termination, solvers::Termination::kStationary) << results.BriefReport();
  EXPECT_FALSE(results.converged());
  EXPECT_NE(results.summary.message.find("|H^T g|"), std::string::npos) << results.summary.message;
  EXPECT_NEAR(x[0], 0.0, 1e-6);
}

TEST(StabilizedNewton, OptionsAreValidatedWithTheFieldName) {
  StabilizedNewtonOptions options;
  EXPECT_EQ(options.Validate(), "");
  options.gmres_iterations = 0;
  EXPECT_NE(options.Validate().find("gmres_iterations"), std::string::npos);
  options = StabilizedNewtonOptions{};
  options.line_search_curvature = 1e-5;
  EXPECT_NE(options.Validate().find("curvature"), std::string::npos);
}

}  // namespace
}  // namespace contactlab::penalty
