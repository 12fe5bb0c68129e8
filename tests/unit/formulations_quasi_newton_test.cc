// The quasi-Newton contact solver of [yu2025async] (Algorithm 1) and the quasi_newton
// formulation: Hessian blocks, monotone cost, agreement with SAP and with an independent
// Ceres solve, thread independence, momentum bookkeeping of the weak coupling, and a block
// whose weight the table carries.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>

#include <ceres/gradient_problem.h>
#include <ceres/gradient_problem_solver.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <Eigen/Eigenvalues>

#include "formulations/contact/contact_frame.h"
#include "formulations/quasi_newton/quasi_newton_formulation.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"
#include "formulations/solvers/sap_solver.h"
#include "mpm/bspline.h"
#include "test_worlds.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace contactlab::quasi_newton {
namespace {

constexpr double kSubstep = 1.0e-3;  // δt [s]

// A substep problem on a lattice of nodes (spacing 1) under `contact_count` contact
// particles at random positions in the interior, with random frames, biases and states that
// cover sticking, sliding and separating contacts. Node masses are m_i = Σ_p w_ip m_p of a
// background of particles plus the contact particles, as P2G would give.
struct RandomSubstepProblem {
  std::unique_ptr<contact::ContactModel> model;
  SubstepContactProblem problem;
  Eigen::MatrixXd jacobian;  // dense J (3 per contact × 3 per node)
  Eigen::VectorXd bias;
};

RandomSubstepProblem MakeRandomProblem(const std::string& model_name, int contact_count, int lattice, unsigned seed,
                                       double stiffness = 1.0e3) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  RandomSubstepProblem result;
  contact::ContactModelParameters parameters;
  parameters.model = ParseChoice("contact.model", model_name, contact::ContactModelNames());
  parameters.stiffness = stiffness;
  result.model = contact::MakeContactModel(parameters);
  SubstepContactProblem& problem = result.problem;
  problem.model = result.model.get();
  const int node_count = lattice * lattice * lattice;
  auto node_index = [&](const mpm::NodeCoordinate& node) {
    return node.x() + lattice * (node.y() + lattice * node.z());
  };
  // Particles are placed so their whole stencil lies on the lattice: x ∈ [1, lattice − 2).
  auto random_position = [&]() -> Vector3 {
    return Vector3::Constant(1.0) +
           (lattice - 3.0) * Vector3(uniform(generator), uniform(generator), uniform(generator));
  };
  problem.node_mass.assign(node_count, 1.0e-6);
  const double particle_mass = 1.0e-3;
  auto scatter_mass = [&](const Vector3& position) {
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(position, 1.0);
    for (int c = 0; c < 3; ++c)
      for (int b = 0; b < 3; ++b)
        for (int a = 0; a < 3; ++a)
          problem.node_mass[node_index(stencil.base_node + mpm::NodeCoordinate(a, b, c))] +=
              stencil.Weight(a, b, c) * particle_mass;
  };
  for (int p = 0; p < 4 * node_count; ++p) scatter_mass(random_position());
  problem.free_velocity.resize(node_count);
  for (Vector3& velocity : problem.free_velocity) {
    velocity = Vector3(uniform(generator) - 0.5, uniform(generator) - 0.5, uniform(generator) - 0.5);
  }

  result.jacobian = Eigen::MatrixXd::Zero(3 * contact_count, 3 * node_count);
  result.bias.resize(3 * contact_count);
  std::vector<Vector3> positions(contact_count);
  for (Vector3& position : positions) {
    position = random_position();
    scatter_mass(position);
  }
  for (int c = 0; c < contact_count; ++c) {
    GridContact contact;
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(positions[c], 1.0);
    double lumped_mobility = 0.0;
    int slot = 0;
    for (int cz = 0; cz < 3; ++cz)
      for (int cy = 0; cy < 3; ++cy)
        for (int cx = 0; cx < 3; ++cx, ++slot) {
          contact.node[slot] = node_index(stencil.base_node + mpm::NodeCoordinate(cx, cy, cz));
          contact.weight[slot] = stencil.Weight(cx, cy, cz);
          lumped_mobility += contact.weight[slot] * contact.weight[slot] / problem.node_mass[contact.node[slot]];
        }
    const Vector3 normal = Vector3(uniform(generator) - 0.5, uniform(generator) - 0.5, 1.0).normalized();
    contact.world_to_contact = contact::MakeContactFrame(normal).transpose();
    // Bias from a rigid velocity chosen so that contacts stick, slide or separate at v*.
    const int regime = c % 3;
    const Vector3 rigid_velocity =
        regime == 2 ? Vector3(0.0, 0.0, -2.0) : Vector3(uniform(generator) - 0.5, uniform(generator) - 0.5, 0.5);
    contact.bias = -contact.world_to_contact * rigid_velocity;
    contact::ContactPointState state;
    state.penetration = regime == 2 ? 1.0e-4 : 2.0e-3 * uniform(generator);
    state.previous_normal_velocity = -0.2 * uniform(generator);
    state.friction_coefficient = regime == 0 ? 1.0 : 0.2;
    state.delassus_scale = lumped_mobility;
    contact.prepared = result.model->Prepare(state, kSubstep);
    for (int k = 0; k < 27; ++k) {
      result.jacobian.block<3, 3>(3 * c, 3 * contact.node[k]) += contact.weight[k] * contact.world_to_contact;
    }
    result.bias.segment<3>(3 * c) = contact.bias;
    problem.contacts.push_back(contact);
  }
  // Drop lattice nodes no stencil touches, as the formulation does (renumber the rest).
  std::vector<int> renumber(node_count, -1);
  SubstepContactProblem compact;
  compact.model = problem.model;
  std::vector<int> kept;
  for (GridContact& contact : problem.contacts) {
    for (int& node : contact.node) {
      if (renumber[node] < 0) {
        renumber[node] = static_cast<int>(kept.size());
        kept.push_back(node);
        compact.node_mass.push_back(problem.node_mass[node]);
        compact.free_velocity.push_back(problem.free_velocity[node]);
      }
      node = renumber[node];
    }
  }
  compact.contacts = problem.contacts;
  Eigen::MatrixXd compact_jacobian(3 * contact_count, 3 * kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    compact_jacobian.middleCols<3>(3 * i) = result.jacobian.middleCols<3>(3 * kept[i]);
  }
  result.jacobian = compact_jacobian;
  result.problem = std::move(compact);
  return result;
}

Eigen::VectorXd Flatten(const std::vector<Vector3>& vectors) {
  Eigen::VectorXd flat(3 * vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i) flat.segment<3>(3 * i) = vectors[i];
  return flat;
}

std::vector<Vector3> Unflatten(const Eigen::VectorXd& flat) {
  std::vector<Vector3> vectors(flat.size() / 3);
  for (std::size_t i = 0; i < vectors.size(); ++i) vectors[i] = flat.segment<3>(3 * i);
  return vectors;
}

Eigen::VectorXd MassDiagonal(const SubstepContactProblem& problem) {
  Eigen::VectorXd diagonal(3 * problem.node_mass.size());
  for (std::size_t i = 0; i < problem.node_mass.size(); ++i)
    diagonal.segment<3>(3 * i).setConstant(problem.node_mass[i]);
  return diagonal;
}

// ℓ_p and ∇ℓ_p = M (v − v*) − Jᵀγ from the dense J and the model's Cost/Impulse only.
double DenseCost(const RandomSubstepProblem& random, const Eigen::VectorXd& velocity, Eigen::VectorXd* gradient) {
  const SubstepContactProblem& problem = random.problem;
  const Eigen::VectorXd change = velocity - Flatten(problem.free_velocity);
  const Eigen::VectorXd momentum_change = MassDiagonal(problem).cwiseProduct(change);
  const Eigen::VectorXd contact_velocities = random.jacobian * velocity + random.bias;
  double cost = 0.5 * change.dot(momentum_change);
  Eigen::VectorXd impulses(contact_velocities.size());
  for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
    const Vector3 contact_velocity = contact_velocities.segment<3>(3 * c);
    cost += random.model->Cost(problem.contacts[c].prepared, contact_velocity);
    impulses.segment<3>(3 * c) = random.model->Impulse(problem.contacts[c].prepared, contact_velocity);
  }
  if (gradient != nullptr) *gradient = momentum_change - random.jacobian.transpose() * impulses;
  return cost;
}

TEST(QuasiNewtonSolver, HessianBlocksAreTheNodeDiagonalBlocksOfTheFullHessian) {
  for (const std::string model : {"lagged", "sap_cone"}) {
    const RandomSubstepProblem random = MakeRandomProblem(model, 40, 7, 3);
    const SubstepContactProblem& problem = random.problem;
    // Evaluate at a velocity away from v* so every regime's Hessian is exercised.
    std::vector<Vector3> velocity = problem.free_velocity;
    for (std::size_t i = 0; i < velocity.size(); ++i) velocity[i] += Vector3(0.1, -0.2, 0.05 * (i % 5));
    const Eigen::VectorXd flat = Flatten(velocity);
    // Full Hessian (eq. 10 before dropping blocks): M + Jᵀ G J, G from the model.
    Eigen::MatrixXd full = MassDiagonal(problem).asDiagonal();
    const Eigen::VectorXd contact_velocities = random.jacobian * flat + random.bias;
    for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
      const Matrix3 hessian = random.model->Hessian(problem.contacts[c].prepared, contact_velocities.segment<3>(3 * c));
      const Eigen::MatrixXd rows = random.jacobian.middleRows<3>(3 * c);
      full += rows.transpose() * hessian * rows;
    }
    const std::vector<Matrix3> blocks = QuasiNewtonHessianBlocks(problem, velocity);
    ASSERT_EQ(blocks.size(), problem.node_mass.size());
    double largest_off_diagonal = 0.0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const Matrix3 expected = full.block<3, 3>(3 * i, 3 * i);
      EXPECT_LT((blocks[i] - expected).norm(), 1e-12 * expected.norm()) << model << " node " << i;
      for (std::size_t j = 0; j < blocks.size(); ++j) {
        if (j != i) largest_off_diagonal = std::max(largest_off_diagonal, full.block<3, 3>(3 * i, 3 * j).norm());
      }
    }
    // The dropped cross-node terms are not negligible: the approximation is a real one.
    EXPECT_GT(largest_off_diagonal, 0.0) << model;
  }
}

TEST(QuasiNewtonSolver, GradientOfTheDenseCostMatchesFiniteDifferences) {
  // Guards the test's own dense J (used by the Ceres and SAP cross-checks) against the
  // solver's cost: the directional derivative of QuasiNewtonCost is gᵀd.
  const RandomSubstepProblem random = MakeRandomProblem("lagged", 20, 6, 5);
  const SubstepContactProblem& problem = random.problem;
  std::mt19937 generator(11);
  std::normal_distribution<double> normal;
  const Eigen::VectorXd velocity = Flatten(problem.free_velocity);
  Eigen::VectorXd direction(velocity.size());
  for (int i = 0; i < direction.size(); ++i) direction[i] = normal(generator);
  Eigen::VectorXd gradient;
  DenseCost(random, velocity, &gradient);
  const double step = 1e-6;
  const double numeric = (QuasiNewtonCost(problem, Unflatten(velocity + step * direction)) -
                          QuasiNewtonCost(problem, Unflatten(velocity - step * direction))) /
                         (2.0 * step);
  EXPECT_NEAR(numeric, gradient.dot(direction), 1e-6 * std::max(1.0, std::abs(numeric)));
  EXPECT_NEAR(QuasiNewtonCost(problem, Unflatten(velocity)), DenseCost(random, velocity, nullptr), 1e-12);
}

TEST(QuasiNewtonSolver, CostDecreasesMonotonicallyAndTheStoppingRuleHolds) {
  for (const std::string model : {"lagged", "sap_cone"}) {
    const RandomSubstepProblem random = MakeRandomProblem(model, 60, 8, 7);
    QuasiNewtonOptions options;
    options.relative_tolerance = 1e-8;
    options.max_iterations = 100000;
    options.record_history = true;
    const QuasiNewtonResults results = SolveQuasiNewton(random.problem, options);
    ASSERT_TRUE(results.summary.converged()) << model << " " << results.summary.message;
    ASSERT_EQ(results.summary.history.size(), static_cast<std::size_t>(results.summary.iterations + 1));
    for (std::size_t k = 1; k < results.summary.history.size(); ++k) {
      EXPECT_LE(results.summary.history[k].cost,
                results.summary.history[k - 1].cost + 1e-14 * std::abs(results.summary.history[k - 1].cost))
          << model << " iteration " << k;
    }
    EXPECT_LT(results.summary.history.back().residual, results.summary.history.back().threshold);
    EXPECT_GT(results.summary.iterations, 1) << "a block-diagonal step alone should not solve a coupled problem";
    std::cout << model << ": " << results.summary.iterations << " iterations to eps_r = 1e-8, "
              << results.summary.line_search_evaluations << " line-search evaluations\n";
  }
}

TEST(QuasiNewtonSolver, AgreesWithSapOnTheSameSubstepProblem) {
  // The substep problem is SAP's problem with A = M ([yu2025async] §IV-C): the dense SAP Newton
  // solve must reach the same minimizer. Both run to tight tolerances; the distance between
  // their answers is bounded by their residuals over the smallest mass.
  for (const std::string model : {"lagged", "sap_cone"}) {
    const RandomSubstepProblem random = MakeRandomProblem(model, 50, 7, 13);
    const SubstepContactProblem& problem = random.problem;
    solvers::SapProblem sap_problem;
    sap_problem.model = random.model.get();
    sap_problem.free_motion_velocity = Flatten(problem.free_velocity);
    for (const GridContact& contact : problem.contacts) {
      solvers::SapConstraint constraint;
      for (int k = 0; k < 27; ++k) {
        constraint.jacobian.push_back({3 * contact.node[k], contact.weight[k] * contact.world_to_contact});
      }
      constraint.bias = contact.bias;
      constraint.contact = contact.prepared;
      sap_problem.constraints.push_back(std::move(constraint));
    }
    solvers::DenseSapLinearSystem system(Eigen::MatrixXd(MassDiagonal(problem).asDiagonal()));
    solvers::SapSolverOptions sap_options;
    sap_options.relative_tolerance = 1e-12;
    const solvers::SapSolverResults sap_results =
        solvers::SolveSap(sap_problem, system, sap_problem.free_motion_velocity, sap_options);
    ASSERT_TRUE(sap_results.summary.converged()) << sap_results.summary.BriefReport("sap");
    QuasiNewtonOptions options;
    options.relative_tolerance = 1e-10;
    options.max_iterations = 100000;
    options.record_history = true;
    const QuasiNewtonResults results = SolveQuasiNewton(problem, options);
    ASSERT_TRUE(results.summary.converged()) << results.summary.message;
    const Eigen::VectorXd difference = Flatten(results.velocity) - sap_results.velocity;
    const double scale = Flatten(problem.free_velocity).norm();
    EXPECT_LT(difference.norm(), 1e-8 * scale) << model;
    for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
      EXPECT_LT((results.impulses[c] - sap_results.impulses[c]).norm(),
                1e-6 * std::max(1e-12, sap_results.impulses[c].norm()) + 1e-14)
          << model << " contact " << c;
    }
    std::cout << model << ": QN " << results.summary.iterations << " iterations, SAP " << sap_results.summary.iterations
              << " Newton iterations, |v_qn - v_sap|/|v*| = " << difference.norm() / scale << "\n";
  }
}

// ℓ_p in the mass-scaled variables u = M^½ v, where it is strongly convex with modulus ≥ 1,
// so a small gradient in u pins the minimizer down in every direction.
class CeresSubstepObjective final : public ceres::FirstOrderFunction {
 public:
  explicit CeresSubstepObjective(const RandomSubstepProblem& random)
      : random_(random), root_mass_(MassDiagonal(random.problem).cwiseSqrt()) {}
  bool Evaluate(const double* parameters, double* cost, double* gradient) const override {
    const Eigen::VectorXd scaled = Eigen::Map<const Eigen::VectorXd>(parameters, NumParameters());
    Eigen::VectorXd gradient_vector;
    *cost = DenseCost(random_, scaled.cwiseQuotient(root_mass_), gradient != nullptr ? &gradient_vector : nullptr);
    if (gradient != nullptr)
      Eigen::Map<Eigen::VectorXd>(gradient, NumParameters()) = gradient_vector.cwiseQuotient(root_mass_);
    return true;
  }
  int NumParameters() const override { return 3 * static_cast<int>(random_.problem.node_mass.size()); }

 private:
  const RandomSubstepProblem& random_;
  Eigen::VectorXd root_mass_;
};

// A warm start (SubstepContactProblem::initial_velocity) changes where the iteration starts,
// not where it ends: from the converged velocities it stops at once, and from a perturbed
// start it reaches the minimizer the start at v* reaches.
TEST(QuasiNewtonSolver, WarmStartReachesTheSameMinimizer) {
  for (const std::string model : {"lagged", "sap_cone"}) {
    RandomSubstepProblem random = MakeRandomProblem(model, 40, 8, 31);
    QuasiNewtonOptions options;
    options.relative_tolerance = 1e-10;
    options.max_iterations = 100000;
    const QuasiNewtonResults cold = SolveQuasiNewton(random.problem, options);
    ASSERT_TRUE(cold.summary.converged()) << cold.summary.message;
    ASSERT_GT(cold.summary.iterations, 1);

    random.problem.initial_velocity = cold.velocity;
    const QuasiNewtonResults restarted = SolveQuasiNewton(random.problem, options);
    EXPECT_EQ(restarted.summary.iterations, 0) << model;
    EXPECT_TRUE(restarted.summary.converged());

    std::mt19937 generator(5);
    std::normal_distribution<double> noise(0.0, 0.05);
    for (Vector3& velocity : random.problem.initial_velocity)
      velocity += Vector3(noise(generator), noise(generator), noise(generator));
    const QuasiNewtonResults perturbed = SolveQuasiNewton(random.problem, options);
    ASSERT_TRUE(perturbed.summary.converged()) << perturbed.summary.message;
    // Both stop within 1e-10 of their momentum scale; the strongly convex ℓ_p then puts the
    // two minimizers within a few times that of each other (in the M-norm).
    double difference = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < cold.velocity.size(); ++i) {
      const double mass = random.problem.node_mass[i];
      difference += mass * (perturbed.velocity[i] - cold.velocity[i]).squaredNorm();
      scale += mass * cold.velocity[i].squaredNorm();
    }
    EXPECT_LE(std::sqrt(difference), 1e-8 * std::sqrt(scale)) << model;
    EXPECT_NEAR(perturbed.summary.cost, cold.summary.cost, 1e-12 * std::abs(cold.summary.cost)) << model;

    random.problem.initial_velocity.pop_back();
    EXPECT_THROW(SolveQuasiNewton(random.problem, options), std::invalid_argument);
  }
}

// Problem (8) is Galilean invariant: the stencil weights of a contact sum to one, so moving
// v*, the warm start and the rigid point velocities by −u moves the minimizer by −u and leaves
// the impulses as they are (quasi_newton.stopping_frame relies on it): only the stopping rule's
// momentum term sees the frame.
TEST(QuasiNewtonSolver, TheProblemSeenFromAMovingFrameHasTheSameSolution) {
  const Vector3 frame_velocity(0.7, -0.4, 1.1);
  for (const std::string model : {"lagged", "sap_cone"}) {
    const RandomSubstepProblem still = MakeRandomProblem(model, 40, 8, 41);
    QuasiNewtonOptions tight;
    tight.relative_tolerance = 1e-10;
    tight.max_iterations = 100000;
    const QuasiNewtonResults at_rest = SolveQuasiNewton(still.problem, tight);
    ASSERT_TRUE(at_rest.summary.converged()) << at_rest.summary.message;

    // Everything moving at u: the grid's v* and the rigid point velocities.
    RandomSubstepProblem moving = MakeRandomProblem(model, 40, 8, 41);
    for (Vector3& velocity : moving.problem.free_velocity) velocity += frame_velocity;
    for (GridContact& contact : moving.problem.contacts) contact.bias -= contact.world_to_contact * frame_velocity;
    const QuasiNewtonResults carried = SolveQuasiNewton(moving.problem, tight);
    ASSERT_TRUE(carried.summary.converged()) << carried.summary.message;
    double difference = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < at_rest.velocity.size(); ++i) {
      const double mass = still.problem.node_mass[i];
      difference += mass * (carried.velocity[i] - frame_velocity - at_rest.velocity[i]).squaredNorm();
      scale += mass * at_rest.velocity[i].squaredNorm();
    }
    EXPECT_LE(std::sqrt(difference), 1e-8 * std::sqrt(scale)) << model;
    for (std::size_t c = 0; c < at_rest.impulses.size(); ++c) {
      EXPECT_LE((carried.impulses[c] - at_rest.impulses[c]).norm(), 1e-6 * at_rest.impulses[c].norm() + 1e-14)
          << model << " contact " << c;
    }

    // ShiftToMovingFrame takes the moving problem back to the one at rest.
    ShiftToMovingFrame(frame_velocity, moving.problem);
    for (std::size_t i = 0; i < still.problem.free_velocity.size(); ++i) {
      EXPECT_LE((moving.problem.free_velocity[i] - still.problem.free_velocity[i]).norm(), 1e-14) << model;
    }
    for (std::size_t c = 0; c < still.problem.contacts.size(); ++c) {
      EXPECT_LE((moving.problem.contacts[c].bias - still.problem.contacts[c].bias).norm(), 1e-14) << model;
    }
  }
}

TEST(QuasiNewtonSolver, AgreesWithAnIndependentCeresSolve) {
  for (const std::string model : {"lagged", "sap_cone"}) {
    for (unsigned seed : {21u, 22u, 23u}) {
      const RandomSubstepProblem random = MakeRandomProblem(model, 30, 7, seed);
      const Eigen::VectorXd root_mass = MassDiagonal(random.problem).cwiseSqrt();
      ceres::GradientProblem ceres_problem(new CeresSubstepObjective(random));
      ceres::GradientProblemSolver::Options ceres_options;
      ceres_options.line_search_direction_type = ceres::LBFGS;
      ceres_options.max_num_iterations = 100000;
      ceres_options.function_tolerance = 0.0;
      ceres_options.parameter_tolerance = 0.0;
      ceres_options.gradient_tolerance = 1e-15;
      ceres_options.logging_type = ceres::SILENT;
      Eigen::VectorXd scaled = Flatten(random.problem.free_velocity).cwiseProduct(root_mass);
      ceres::GradientProblemSolver::Summary summary;
      ceres::Solve(ceres_options, ceres_problem, scaled.data(), &summary);
      ASSERT_EQ(summary.termination_type, ceres::CONVERGENCE) << summary.BriefReport();
      const Eigen::VectorXd reference = scaled.cwiseQuotient(root_mass);

      QuasiNewtonOptions options;
      options.relative_tolerance = 1e-12;
      options.max_iterations = 100000;
      const QuasiNewtonResults results = SolveQuasiNewton(random.problem, options);
      ASSERT_TRUE(results.summary.converged());
      const double reference_cost = DenseCost(random, reference, nullptr);
      EXPECT_NEAR(results.summary.cost, reference_cost, 1e-12 * std::max(1.0, std::abs(reference_cost)))
          << model << seed;
      // Strong convexity (modulus 1 in u) bounds ‖u_qn − u_ceres‖ by the sum of the two
      // scaled gradient norms; the bound itself is round-off sized.
      Eigen::VectorXd qn_gradient, reference_gradient;
      DenseCost(random, Flatten(results.velocity), &qn_gradient);
      DenseCost(random, reference, &reference_gradient);
      const double bound =
          qn_gradient.cwiseQuotient(root_mass).norm() + reference_gradient.cwiseQuotient(root_mass).norm();
      const double scaled_difference = (Flatten(results.velocity).cwiseProduct(root_mass) - scaled).norm();
      EXPECT_LE(scaled_difference, 1.01 * bound + 1e-15) << model << seed;
      EXPECT_LT(scaled_difference, 1e-8 * scaled.norm()) << model << seed;
    }
  }
}

TEST(QuasiNewtonSolver, OneAndTwoThreadsGiveTheSameBits) {
  // Enough contacts and nodes that the chunked sums and parallel loops split the work.
  const RandomSubstepProblem random = MakeRandomProblem("lagged", 300, 12, 31);
  QuasiNewtonOptions options;
  options.relative_tolerance = 1e-3;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const QuasiNewtonResults one = SolveQuasiNewton(random.problem, options);
  omp_set_num_threads(2);
  const QuasiNewtonResults two = SolveQuasiNewton(random.problem, options);
  omp_set_num_threads(threads);
  ASSERT_EQ(one.summary.iterations, two.summary.iterations);
  ASSERT_GT(one.summary.iterations, 1);
  for (std::size_t i = 0; i < one.velocity.size(); ++i) {
    ASSERT_EQ(one.velocity[i], two.velocity[i]) << "node " << i;
  }
  for (std::size_t c = 0; c < one.impulses.size(); ++c) ASSERT_EQ(one.impulses[c], two.impulses[c]);
}

TEST(QuasiNewtonSolver, WithoutContactsTheFreeMotionIsReturned) {
  RandomSubstepProblem random = MakeRandomProblem("lagged", 5, 6, 41);
  random.problem.contacts.clear();
  const QuasiNewtonResults results = SolveQuasiNewton(random.problem, QuasiNewtonOptions{});
  EXPECT_TRUE(results.summary.converged());
  EXPECT_EQ(results.summary.termination, solvers::Termination::kNothingToSolve);
  EXPECT_EQ(results.summary.iterations, 0);
  EXPECT_EQ(results.velocity, random.problem.free_velocity);
}

TEST(QuasiNewtonSolver, MalformedProblemsAndOptionsAreRejected) {
  RandomSubstepProblem random = MakeRandomProblem("lagged", 5, 6, 43);
  QuasiNewtonOptions options;
  options.max_iterations = 0;
  EXPECT_NE(options.Validate().find("max_iterations"), std::string::npos);
  EXPECT_THROW(SolveQuasiNewton(random.problem, options), std::invalid_argument);
  SubstepContactProblem bad = random.problem;
  bad.node_mass[0] = 0.0;
  EXPECT_THROW(SolveQuasiNewton(bad, QuasiNewtonOptions{}), std::invalid_argument);
  bad = random.problem;
  bad.contacts[0].node[0] = static_cast<int>(bad.node_mass.size());
  EXPECT_THROW(SolveQuasiNewton(bad, QuasiNewtonOptions{}), std::invalid_argument);
}

// --- The formulation --------------------------------------------------------------------

QuasiNewtonFormulationOptions FormulationOptions(int substeps) {
  QuasiNewtonFormulationOptions options;
  options.substeps = substeps;
  options.contact.model = contact::ContactModelKind::kLagged;
  options.solver.relative_tolerance = 1e-6;
  // The softer of spec A1's stiffness rules keeps the iteration counts, and the test, short.
  options.stiffness_rule = quasi_newton::StiffnessRule::kNearRigidParticleMass;
  return options;
}

// Largest |ΔP_total| over 60 steps of the cube hitting the free box, relative to |P|; checks
// on every step that the box's momentum change equals the accumulated impulse.
double MomentumDrift(QuasiNewtonFormulationOptions options) {
  World world = test_worlds::CubeHitsBox();
  QuasiNewtonFormulation formulation(options);
  const double dt = 2.0e-3;
  const Vector3 initial = test_worlds::TotalMomentum(world).first;
  double largest_drift = 0.0;
  int steps_with_contact = 0;
  for (int step = 0; step < 60; ++step) {
    const Vector3 body_momentum = world.bodies[0].LinearMomentum();
    const StepReport report = formulation.Step(world, dt);
    if (report.contacts > 0) ++steps_with_contact;
    EXPECT_LT(
        (world.bodies[0].LinearMomentum() - body_momentum - formulation.last_step().body_linear_impulse[0]).norm(),
        1e-12 * initial.norm());
    largest_drift = std::max(largest_drift, (test_worlds::TotalMomentum(world).first - initial).norm());
  }
  EXPECT_GE(steps_with_contact, 5);
  // The box was pushed: a real exchange happened.
  EXPECT_GT(world.bodies[0].linear_velocity.x(), 0.1);
  return largest_drift / initial.norm();
}

TEST(QuasiNewtonFormulation, ImpulseGridUpdateConservesMomentumAtAnyTolerance) {
  // Spec V3 for formulation B: without gravity the rigid momentum change is the sum of the
  // substep impulses and the grid receives exactly the opposite, even at [yu2025async]'s loose ε_r.
  QuasiNewtonFormulationOptions options = FormulationOptions(4);
  options.grid_update = quasi_newton::GridUpdate::kImpulse;
  options.solver.relative_tolerance = 5e-2;
  const double drift = MomentumDrift(options);
  EXPECT_LT(drift, 1e-12);
  std::cout << "impulse update, eps_r 5e-2: largest |dP|/|P| " << drift << "\n";
}

TEST(QuasiNewtonFormulation, SolverVelocityUpdateConservesMomentumToTheSolverTolerance) {
  // [yu2025async]'s update keeps the solver's v: the imbalance is the final residual, so a tight
  // solve conserves momentum to about ε_r of the momentum scale, a loose one does not.
  QuasiNewtonFormulationOptions options = FormulationOptions(4);
  options.grid_update = quasi_newton::GridUpdate::kSolverVelocity;
  options.solver.relative_tolerance = 1e-7;
  options.solver.max_iterations = 200000;
  const double tight = MomentumDrift(options);
  options.solver.relative_tolerance = 5e-2;
  const double loose = MomentumDrift(options);
  EXPECT_LT(tight, 1e-5);
  EXPECT_GT(loose, 100 * tight);
  std::cout << "solver velocity update: largest |dP|/|P| " << tight << " at eps_r 1e-7, " << loose << " at 5e-2\n";
}

TEST(QuasiNewtonFormulation, TableCarriesTheWeightOfARestingBlock) {
  // A 0.1 m elastic block settles on a static table; averaged over the last 0.1 s the contact
  // force on the table equals the block's weight (its momentum no longer changes). At
  // ε_r = 1e-3 each substep may leave a momentum imbalance of 1e-3 of the momentum scale,
  // which bounds the symmetric block's lateral force.
  World world;
  world.grid_spacing = 0.025;
  test_worlds::AddCube(world, Vector3(-0.05, -0.05, 0.0), 0.1, 500.0, 2e4, Vector3::Zero());
  world.bodies.push_back(
      rigid::MakeStaticBody("table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}}, rigid::Pose{}));
  const double weight = mpm::TotalMass(world.particles) * 9.81;
  QuasiNewtonFormulationOptions options = FormulationOptions(5);
  options.solver.relative_tolerance = 1e-3;
  QuasiNewtonFormulation formulation(options);
  const double dt = 5.0e-3;
  Vector3 force_sum = Vector3::Zero();
  int samples = 0;
  for (int step = 0; step < 200; ++step) {
    const StepReport report = formulation.Step(world, dt);
    if (step >= 180) {
      force_sum += report.contact_wrench[0].force;
      ++samples;
    }
  }
  const Vector3 mean_force = force_sum / samples;
  // Residual vertical momentum change over the window bounds the error of the average.
  EXPECT_NEAR(-mean_force.z(), weight, 0.02 * weight);
  EXPECT_LT(std::hypot(mean_force.x(), mean_force.y()), 1e-3 * weight);
  EXPECT_GT(test_worlds::LowestParticle(world), -0.25 * world.grid_spacing);
  std::cout << "table force " << -mean_force.z() << " N, weight " << weight << " N, last substep iterations "
            << formulation.last_step().iterations_per_substep.back() << "\n";
}

// stopping_frame: a block resting on a table that slides at a constant 0.6 m/s, carried with
// it, is the block at rest seen from a moving frame. "auto" solves it in the table's frame
// (every substep records touched_surfaces) and needs about the iterations of the block on a
// static table, where it keeps the world frame; "world" measures the carried block's momentum
// at 0.6 m/s against ~g δt = 0.01 m/s at rest and stops after far fewer iterations.
TEST(QuasiNewtonFormulation, StoppingFrameAutoSolvesACarriedBlockLikeOneAtRest) {
  struct Run {
    long long iterations = 0;
    std::string frames;
  };
  const auto run = [](double table_speed, StoppingFrame frame) {
    World world;
    world.grid_spacing = 0.025;
    const Vector3 carry(table_speed, 0.0, 0.0);
    test_worlds::AddCube(world, Vector3(-0.05, -0.05, 0.0), 0.1, 500.0, 2e4, carry);
    world.bodies.push_back(rigid::MakeKinematicBody(
        "table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}}, [carry](double time) {
          rigid::KinematicState state;
          state.pose.position = carry * time;
          state.linear_velocity = carry;
          return state;
        }));
    QuasiNewtonFormulationOptions options;
    options.substeps = 5;
    options.solver.relative_tolerance = 1e-3;
    options.stopping_frame = frame;
    QuasiNewtonFormulation formulation(options);
    Run result;
    for (int step = 0; step < 20; ++step) {
      formulation.Step(world, 5.0e-3);
      for (const int iterations : formulation.last_step().iterations_per_substep) result.iterations += iterations;
    }
    for (const UsedParameter& used : formulation.UsedParameters()) {
      if (used.key == "quasi_newton.stopping_frame") result.frames = used.choice;
    }
    return result;
  };
  const Run at_rest = run(0.0, StoppingFrame::kAuto);
  const Run carried = run(0.6, StoppingFrame::kAuto);
  const Run carried_world = run(0.6, StoppingFrame::kWorld);
  // One member each (no ", "), on every substep with contacts.
  EXPECT_EQ(at_rest.frames.rfind("world (", 0), 0u) << at_rest.frames;
  EXPECT_EQ(carried.frames.rfind("touched_surfaces (", 0), 0u) << carried.frames;
  EXPECT_EQ(carried_world.frames.rfind("world (", 0), 0u) << carried_world.frames;
  for (const Run* result : {&at_rest, &carried, &carried_world}) {
    EXPECT_EQ(result->frames.find(", "), std::string::npos) << result->frames;
  }
  // The carried block crosses the grid (6 cm in 0.1 s), so its discretization differs a little.
  EXPECT_NEAR(static_cast<double>(carried.iterations), static_cast<double>(at_rest.iterations),
              0.3 * static_cast<double>(at_rest.iterations));
  EXPECT_LT(carried_world.iterations, 0.75 * static_cast<double>(carried.iterations));
  std::cout << "iterations: at rest " << at_rest.iterations << ", carried " << carried.iterations
            << ", carried in the world frame " << carried_world.iterations << "\n";
}

// stopping_scale: a block resting on a table is solved the same whether or not a larger block
// flies past far above it, touching nothing. With "contact_nodes" the rule's momentum scale is
// the contact problem's own, so the far block changes nothing; with "all_nodes" its momentum
// joins the scale and the resting contact is solved far more loosely (ε_r as in [yu2025async]).
TEST(QuasiNewtonFormulation, StoppingScaleIgnoresMaterialThatTouchesNothing) {
  const auto iterations = [](bool with_far_block, StoppingScale scale) {
    World world;
    world.grid_spacing = 0.025;
    test_worlds::AddCube(world, Vector3(-0.05, -0.05, 0.0), 0.1, 500.0, 2e4, Vector3::Zero());
    if (with_far_block) test_worlds::AddCube(world, Vector3(0.3, -0.1, 1.0), 0.2, 500.0, 2e4, Vector3(2.0, 0.0, 0.0));
    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}}, rigid::Pose{}));
    QuasiNewtonFormulationOptions options;
    options.substeps = 5;
    options.stopping_scale = scale;
    QuasiNewtonFormulation formulation(options);
    long long sum = 0;
    for (int step = 0; step < 20; ++step) {
      formulation.Step(world, 5.0e-3);
      for (const int count : formulation.last_step().iterations_per_substep) sum += count;
    }
    return static_cast<double>(sum);
  };
  const double alone = iterations(false, StoppingScale::kContactNodes);
  const double beside = iterations(true, StoppingScale::kContactNodes);
  const double beside_all_nodes = iterations(true, StoppingScale::kAllNodes);
  // The same contact problem; only the order of the grid's sums may differ.
  EXPECT_NEAR(beside, alone, 0.02 * alone);
  EXPECT_LT(beside_all_nodes, 0.5 * beside);
  std::cout << "iterations: alone " << alone << ", beside a flying block " << beside << ", all_nodes "
            << beside_all_nodes << "\n";
}

TEST(QuasiNewtonFormulation, OneAndTwoThreadsGiveTheSameTrajectory) {
  World one_world = test_worlds::CubeHitsBox();
  World two_world = test_worlds::CubeHitsBox();
  QuasiNewtonFormulation one(FormulationOptions(3));
  QuasiNewtonFormulation two(FormulationOptions(3));
  const int threads = omp_get_max_threads();
  for (int step = 0; step < 25; ++step) {
    omp_set_num_threads(1);
    one.Step(one_world, 2.0e-3);
    omp_set_num_threads(2);
    two.Step(two_world, 2.0e-3);
  }
  omp_set_num_threads(threads);
  for (std::size_t p = 0; p < one_world.particles.size(); ++p) {
    ASSERT_EQ(one_world.particles.position[p], two_world.particles.position[p]) << "particle " << p;
  }
  EXPECT_EQ(one_world.bodies[0].linear_velocity, two_world.bodies[0].linear_velocity);
}

// backend = emulated replays the cuda path on the host: particles kept in the device's arrays
// through each step (P2G, grid update, G2P and the constitutive update of
// quasi_newton/cuda/device_constitutive.h), the grid exchanged with the host around the
// contact solve, the device solver's iteration. Its trajectory is the CPU path's up to the
// round-off that the solver's stopping test and the contact registration can magnify: a
// plastic cube (von Mises, so the device return mapping runs) hits a free box.
void ExpectBackendFollowsTheCpuTrajectory(quasi_newton::Backend backend) {
  const auto make_world = [] {
    World world = test_worlds::CubeHitsBox();
    world.materials[0] = mpm::MakeMaterial("cube", "linear_corotated", 1000.0, 1e5, 0.3, 2e3);
    return world;
  };
  World cpu_world = make_world();
  World device_world = make_world();
  QuasiNewtonFormulationOptions options = FormulationOptions(3);
  options.solver.relative_tolerance = 1e-8;
  options.solver.max_iterations = 100000;
  // One solve per substep from v* on both sides: the device solver takes no starting point, so
  // the cpu's warm start and its restarted friction-bound passes would compare different
  // iterations, not the device kernels.
  options.warm_start = WarmStart::kNone;
  options.friction_bound = FrictionBound::kPenetration;
  QuasiNewtonFormulation cpu(options);
  options.backend = backend;
  QuasiNewtonFormulation device(options);
  int steps_with_contact = 0;
  for (int step = 0; step < 40; ++step) {
    const StepReport cpu_report = cpu.Step(cpu_world, 2.0e-3);
    const StepReport device_report = device.Step(device_world, 2.0e-3);
    EXPECT_EQ(device_report.contacts, cpu_report.contacts) << "step " << step;
    if (cpu_report.contacts > 0) ++steps_with_contact;
  }
  EXPECT_GE(steps_with_contact, 10);
  double position = 0.0, deformation = 0.0, rotation = 0.0, plastic = 0.0;
  int yielded = 0;
  for (std::size_t p = 0; p < cpu_world.particles.size(); ++p) {
    position = std::max(position, (device_world.particles.position[p] - cpu_world.particles.position[p]).norm());
    deformation =
        std::max(deformation,
                 (device_world.particles.deformation_gradient[p] - cpu_world.particles.deformation_gradient[p]).norm());
    rotation = std::max(
        rotation, (device_world.particles.reference_rotation[p] - cpu_world.particles.reference_rotation[p]).norm());
    plastic = std::max(plastic, (device_world.particles.plastic_deformation_gradient[p] -
                                 cpu_world.particles.plastic_deformation_gradient[p])
                                    .norm());
    yielded += (cpu_world.particles.plastic_deformation_gradient[p] - Matrix3::Identity()).norm() > 1e-3 ? 1 : 0;
  }
  std::cout << ChoiceName(backend, quasi_newton::BackendNames()) << " vs cpu after 40 steps: |dx| " << position
            << " m, |dF| " << deformation << ", |dR0| " << rotation << ", |dF^P| " << plastic << ", " << yielded
            << " particles yielded\n";
  EXPECT_GT(yielded, 10);
  EXPECT_LT(position, 1e-8 * cpu_world.grid_spacing);
  EXPECT_LT(deformation, 1e-8);
  EXPECT_LT(rotation, 1e-8);
  EXPECT_LT(plastic, 1e-8);
  EXPECT_LT((device_world.bodies[0].linear_velocity - cpu_world.bodies[0].linear_velocity).norm(),
            1e-8 * cpu_world.bodies[0].linear_velocity.norm());
}

TEST(QuasiNewtonFormulation, EmulatedDeviceBackendFollowsTheCpuTrajectory) {
  ExpectBackendFollowsTheCpuTrajectory(quasi_newton::Backend::kEmulated);
}

// A material without a device model stops the run with an input error naming the backend.
TEST(QuasiNewtonFormulation, DeviceBackendRefusesMaterialsWithoutADeviceModel) {
  World world = test_worlds::CubeHitsBox();
  world.materials[0] = mpm::MakeMaterial("rubber", "fixed_corotated", 1000.0, 1e5, 0.3);
  QuasiNewtonFormulationOptions options = FormulationOptions(3);
  options.backend = quasi_newton::Backend::kEmulated;
  QuasiNewtonFormulation formulation(options);
  try {
    formulation.Step(world, 2.0e-3);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("quasi_newton.backend = emulated"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("rubber"), std::string::npos) << error.what();
  }
}

// The same on the GPU (atomic sums: another round-off).
TEST(QuasiNewtonFormulation, CudaBackendFollowsTheCpuTrajectory) {
#ifdef CONTACTLAB_WITH_CUDA
  std::string reason;
  if (!quasi_newton::CudaDeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  ExpectBackendFollowsTheCpuTrajectory(quasi_newton::Backend::kCuda);
#else
  GTEST_SKIP() << "built without CUDA (CONTACTLAB_WITH_CUDA undefined)";
#endif
}

// A kinematic box pressing down into a block on a table. kinematic_poses = substep (beyond
// the paper) moves the box through the substeps instead of at once: every step still ends
// with the box on its trajectory, the contact solves converge, and the first substep of a
// step no longer starts from the whole step's jump (measured: 970 iterations there over the
// 20 steps against 12,364 under step).
TEST(QuasiNewtonFormulation, KinematicPosesFollowTheTrajectoryThroughTheSubsteps) {
  const auto make_world = [] {
    World world;
    world.grid_spacing = 0.025;
    test_worlds::AddCube(world, Vector3(-0.05, -0.05, 0.0), 0.1, 500.0, 2e4, Vector3::Zero());
    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}}, rigid::Pose{}));
    // The box's lower face starts 2 mm above the block and descends at 0.2 m/s.
    world.bodies.push_back(rigid::MakeKinematicBody(
        "press", {rigid::Geometry{rigid::Shape::Box(Vector3(0.1, 0.1, 0.02)), rigid::Pose{}, 0.5}}, [](double t) {
          rigid::KinematicState state;
          state.pose.position = Vector3(0.0, 0.0, 0.122 - 0.2 * t);
          state.linear_velocity = Vector3(0.0, 0.0, -0.2);
          return state;
        }));
    rigid::UpdateKinematicBody(world.bodies.back(), 0.0);
    return world;
  };
  std::array<double, 2> first_substep_iterations{};
  for (const KinematicPoses poses : {KinematicPoses::kStep, KinematicPoses::kSubstep}) {
    World world = make_world();
    QuasiNewtonFormulationOptions options = FormulationOptions(8);
    options.solver.relative_tolerance = 1e-3;
    options.kinematic_poses = poses;
    QuasiNewtonFormulation formulation(options);
    const double dt = 5.0e-3;
    int pressing_steps = 0;
    for (int step = 0; step < 20; ++step) {  // the box presses 18 mm into the 0.1 m block
      const StepReport report = formulation.Step(world, dt);
      // Under "step" the first substep's solve hits the iteration cap once the box presses
      // (as the dough's pin does); under "substep" every solve converges.
      if (poses == KinematicPoses::kSubstep) {
        EXPECT_TRUE(report.converged) << "step " << step;
      }
      EXPECT_NEAR(world.bodies[1].pose.position.z(), 0.122 - 0.2 * world.time, 1e-12) << "step " << step;
      if (report.solves.empty() || report.solves.front().summary.termination == solvers::Termination::kNothingToSolve)
        continue;
      first_substep_iterations[static_cast<int>(poses)] += report.solves.front().summary.iterations;
      ++pressing_steps;
    }
    EXPECT_GT(pressing_steps, 10) << "the table's contacts make a solve every step";
  }
  std::cout << "first-substep iterations, step " << first_substep_iterations[0] << ", substep "
            << first_substep_iterations[1] << "\n";
  EXPECT_LT(first_substep_iterations[1], first_substep_iterations[0]);
}

// The rigid_step cap on a free cube (mass m, side a) touched on one face by n contacts on a
// symmetric grid: G = Σ gᵀg has the translation eigenvalue n/m and the rotation eigenvalues
// Σ z²/I = n/(2 m) (I = m a²/6, mean z² = a²/12 over the face), so λ_max = n/m and the cap
// is κ m/(n Δt²), which puts Δt² λ_max(M⁻¹ K) at exactly κ. Material lighter than κ m (λ m ≤
// κ) leaves the contacts uncapped.
TEST(QuasiNewtonFormulation, RigidStepCapPutsTheExplicitSpringAtTheGivenRatio) {
  World world;
  world.grid_spacing = 0.02;
  const double side = 0.1;
  world.bodies.push_back(rigid::MakeFreeBody(
      "cube", {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * side)), rigid::Pose{}, 0.5}}, 400.0,
      rigid::Pose{}));
  const double mass = world.bodies[0].mass;  // 0.4 kg
  world.materials.push_back(mpm::MakeMaterial("m", "linear_corotated", 1000.0, 1e5, 0.3));
  std::vector<contact::ParticleContact> contacts;
  const int per_side = 10;
  for (int i = 0; i < per_side; ++i) {
    for (int j = 0; j < per_side; ++j) {
      contact::ParticleContact point;
      point.particle = static_cast<int>(contacts.size());
      point.body = 0;
      // Cell centres of a 10 × 10 grid over the +x face; mean z² = (a²/12)(1 − 1/100).
      point.position = Vector3(0.5 * side, side * ((i + 0.5) / per_side - 0.5), side * ((j + 0.5) / per_side - 0.5));
      point.frame.col(0) = Vector3::UnitY();
      point.frame.col(1) = Vector3::UnitZ();
      point.frame.col(2) = Vector3::UnitX();  // normal
      contacts.push_back(point);
      world.particles.Add(point.position, Vector3::Zero(), 1e-3, 1e-6, 0);
    }
  }
  const int count = static_cast<int>(contacts.size());
  dynamics::RigidDofs rigid_dofs;
  const double dt = 4e-3, ratio = 1.0;
  rigid_dofs.Setup(world, dt);

  // Heavy material behind the contacts (M = 4 m): every contact capped at κ m/(n Δt²).
  const std::vector<double> capped = RigidStepStiffnessCaps(world, rigid_dofs, contacts, {4.0 * mass}, ratio, dt);
  ASSERT_EQ(static_cast<int>(capped.size()), count);
  const double expected = ratio * mass / (count * dt * dt);
  for (const double cap : capped) EXPECT_NEAR(cap, expected, 1e-10 * expected);
  // Independently: Δt² λ_max(M⁻¹ K) with K = cap Σ gᵀg assembled from the point Jacobians.
  Eigen::Matrix<double, 6, 6> stiffness = Eigen::Matrix<double, 6, 6>::Zero();
  for (const contact::ParticleContact& point : contacts) {
    int first_column = -1;
    const Eigen::Matrix<double, 6, 1> g =
        rigid_dofs.PointJacobian(world, 0, point.position, &first_column).transpose() * point.frame.col(2);
    stiffness += capped[0] * g * g.transpose();
  }
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eigen(
      stiffness, rigid_dofs.dynamics_matrix().block(0, 0, 6, 6), Eigen::EigenvaluesOnly);
  EXPECT_NEAR(dt * dt * eigen.eigenvalues().maxCoeff(), ratio, 1e-10);

  // Light material (M = 0.5 m): no cap.
  for (const double cap : RigidStepStiffnessCaps(world, rigid_dofs, contacts, {0.5 * mass}, ratio, dt)) {
    EXPECT_TRUE(std::isinf(cap));
  }
  // A static body has no rigid unknowns: no cap either.
  world.bodies[0].motion = rigid::BodyMotion::kStatic;
  rigid_dofs.Setup(world, dt);
  for (const double cap : RigidStepStiffnessCaps(world, rigid_dofs, contacts, {4.0 * mass}, ratio, dt)) {
    EXPECT_TRUE(std::isinf(cap));
  }
}

// --- Coulomb friction at the defaults ----------------------------------------------------
// A single particle, or a 2 × 2 × 2 block of particles in one cell, on a static table under
// gravity tilted by θ from the table's normal (an incline without a tilted geometry), at the
// formulation's default stiffness rule, friction bound and tolerances. Under stiffness_rule =
// load the resting particle rings and creeps downhill at 1.2 cm/s, its mean normal force 17%
// above m g cos θ (measured); Coulomb's law decides here:
// below tan θ = μ the contact sticks and carries the downslope weight m g sin θ; above it the
// material slides with F_t = μ F_n and accelerates at g (sin θ − μ cos θ).

struct InclineOutcome {
  double tangential_force = 0.0;  // mean over the window, on the material [N]
  double normal_force = 0.0;      // [N]
  double downslope_speed = 0.0;   // at the window's end [m/s]
  double acceleration = 0.0;      // mean downslope acceleration over the window [m/s²]
  double weight = 0.0;            // m g [N]
  double normal_weight = 0.0;     // m g cos θ [N]
  double downslope_weight = 0.0;  // m g sin θ [N]
  int last_iterations = 0;        // of the last substep, all its friction-bound passes
};

InclineOutcome SlideOnIncline(int per_side, double tan_theta, double friction) {
  World world;
  world.grid_spacing = 0.05;
  const double theta = std::atan(tan_theta);
  world.gravity = 9.81 * Vector3(std::sin(theta), 0.0, -std::cos(theta));
  // n × n × n particles at the lattice spacing s = h/2, the lowest layer on the table's
  // surface, at rest.
  mpm::SamplingOptions sampling;
  sampling.grid_spacing = world.grid_spacing;
  const double spacing = mpm::ParticleSpacing(sampling);
  std::vector<Vector3> positions;
  for (int i = 0; i < per_side; ++i) {
    for (int j = 0; j < per_side; ++j) {
      for (int k = 0; k < per_side; ++k) positions.push_back(spacing * Vector3(i + 0.5, j + 0.5, k));
    }
  }
  world.materials.push_back(mpm::MakeMaterial("block", "linear_corotated", 1000.0, 1e5, 0.3));
  mpm::AddSampledParticles(positions, sampling, 1000.0, Vector3::Zero(), 0, world.particles);
  world.bodies.push_back(rigid::MakeStaticBody(
      "table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}}, rigid::Pose{}));
  QuasiNewtonFormulation formulation(QuasiNewtonFormulationOptions{});  // the defaults, lagged model included
  const double dt = 2.0e-3;
  const int settle_steps = 100;
  const int window_steps = 50;
  InclineOutcome outcome;
  outcome.weight = mpm::TotalMass(world.particles) * 9.81;
  outcome.normal_weight = outcome.weight * std::cos(theta);
  outcome.downslope_weight = outcome.weight * std::sin(theta);
  double start_speed = 0.0;
  for (int step = 0; step < settle_steps + window_steps; ++step) {
    if (step == settle_steps) start_speed = mpm::LinearMomentum(world.particles).x() / mpm::TotalMass(world.particles);
    const StepReport report = formulation.Step(world, dt);
    if (step >= settle_steps) {
      const Vector3 on_material = -report.contact_wrench[0].force;
      outcome.tangential_force += on_material.x() / window_steps;
      outcome.normal_force += on_material.z() / window_steps;
    }
  }
  outcome.downslope_speed = mpm::LinearMomentum(world.particles).x() / mpm::TotalMass(world.particles);
  outcome.last_iterations = formulation.last_step().iterations_per_substep.back();
  outcome.acceleration = (outcome.downslope_speed - start_speed) / (window_steps * dt);
  return outcome;
}

class QuasiNewtonCoulombTest : public ::testing::TestWithParam<int> {};  // particles per side

constexpr double kInclineFriction = 0.5;

TEST_P(QuasiNewtonCoulombTest, SticksBelowTheFrictionAngle) {
  const double tan_theta = 0.8 * kInclineFriction;
  const InclineOutcome outcome = SlideOnIncline(GetParam(), tan_theta, kInclineFriction);
  // The contact carries the weight: normal m g cos θ and the whole downslope pull m g sin θ.
  EXPECT_NEAR(outcome.normal_force, outcome.normal_weight, 0.01 * outcome.weight);
  EXPECT_NEAR(outcome.tangential_force, -outcome.downslope_weight, 0.01 * outcome.weight);
  // Regularized stiction creeps at v_s r/√(1 − r²), r = tan θ/μ = 0.8: 1.3 mm/s at the default
  // v_s = 1 mm/s. Anything beyond twice that is slip.
  const double ratio = tan_theta / kInclineFriction;
  const double creep = 1e-3 * ratio / std::sqrt(1.0 - ratio * ratio);
  EXPECT_LT(std::abs(outcome.downslope_speed), 2.0 * creep);
  std::cout << "tan θ = 0.8 μ: F_t/F_n " << outcome.tangential_force / outcome.normal_force << ", speed "
            << outcome.downslope_speed << " m/s, " << outcome.last_iterations << " iterations in the last substep\n";
}

TEST_P(QuasiNewtonCoulombTest, SlidesAboveTheFrictionAngleWithTheCoulombForce) {
  const double tan_theta = 1.25 * kInclineFriction;
  const InclineOutcome outcome = SlideOnIncline(GetParam(), tan_theta, kInclineFriction);
  EXPECT_NEAR(outcome.normal_force, outcome.normal_weight, 0.01 * outcome.weight);
  // F_t = μ F_n to the friction bound's tolerance (1e-2 relative), and the acceleration of a
  // Coulomb slider, g (sin θ − μ cos θ).
  EXPECT_NEAR(-outcome.tangential_force / outcome.normal_force, kInclineFriction, 0.02 * kInclineFriction);
  const double expected_acceleration =
      (outcome.downslope_weight - kInclineFriction * outcome.normal_weight) / outcome.weight * 9.81;
  EXPECT_NEAR(outcome.acceleration, expected_acceleration, 0.03 * expected_acceleration);
  std::cout << "tan θ = 1.25 μ: F_t/F_n " << -outcome.tangential_force / outcome.normal_force << ", acceleration "
            << outcome.acceleration << " m/s² (Coulomb " << expected_acceleration << ")\n";
}

INSTANTIATE_TEST_SUITE_P(OneParticleAndABlock, QuasiNewtonCoulombTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 1 ? std::string("OneParticle") : std::string("TwoByTwoByTwo");
                         });

TEST(QuasiNewtonFormulation, OptionsRejectBadValuesNamingTheKey) {
  ParameterSet parameters;
  parameters.Declare(QuasiNewtonFormulationOptions::Specs());
  EXPECT_EQ(parameters.GetString("contact.model"), "lagged");
  parameters.SetFromText("quasi_newton.relative_tolerance", "0", "test");
  parameters.SetFromText("quasi_newton.absolute_tolerance", "0", "test");
  try {
    QuasiNewtonFormulationOptions::FromParameters(parameters);
    FAIL() << "both tolerances zero must be rejected";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("quasi_newton"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace contactlab::quasi_newton
