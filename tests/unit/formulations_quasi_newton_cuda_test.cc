// CUDA backend of the quasi-Newton solver (formulations/quasi_newton/cuda/).
//
// Host-only, run everywhere (also in builds without CUDA):
//   * the __host__ __device__ contact models against the CPU ContactModel, in every region;
//   * the device port of the exact line search against solvers::ExactLineSearch;
//   * the 3 × 3 algebra (rotation of Hessians, Cholesky) against Eigen;
//   * the run detection of the warp-segmented scatter, on a lane-by-lane simulation;
//   * the device solver emulated serially on the host (same packed arrays, same per-thread
//     steps as the kernels) against SolveQuasiNewton;
//   * the device explicit MPM substep emulated on the host against mpm/transfers.h.
// On a GPU (skipped otherwise): CudaQuasiNewtonSolver against SolveQuasiNewton, and
// CudaExplicitSubstep against mpm/transfers.h.
//
// Agreement tolerance of two solves of problem (8), both stopped by the rule
// ‖M^-½ ∇ℓ_p‖ < ε_r s with s = max(‖M^½ v‖, ‖M^-½ j‖): ℓ_p is 1-strongly convex in the M
// norm (its Hessian is M plus a PSD term), so each solution lies within ‖M^-½ ∇ℓ_p‖ < ε_r s of
// the optimum in the M norm and the two within 2 ε_r s of each other. The tests solve to
// ε_r = 1e-10 and accept ‖M^½ (v_a − v_b)‖ ≤ 100 ε_r s = 1e-8 s. A contact's impulse moves by at
// most ‖G_p‖ |Δv_c,p| with |Δv_c,p| ≤ max_i |Δv_i| ≤ ‖M^½ Δv‖/√m_min, which gives the
// per-contact bound 1e-8 s ‖G_p‖/√m_min (plus round-off of γ). Only soft problems converge that
// far in reasonable time (ConvergentCases); at the models' default, stiff constants the
// block-diagonal iteration is compared step by step over a few iterations (StiffCases).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <Eigen/QR>

#include "formulations/contact/contact_model.h"
#include "formulations/contact/sap_friction_cone.h"
#include "formulations/quasi_newton/cuda/device_constitutive.h"
#include "formulations/quasi_newton/cuda/device_contact_models.h"
#include "formulations/quasi_newton/cuda/device_line_search.h"
#include "formulations/quasi_newton/cuda/device_math.h"
#include "formulations/quasi_newton/cuda/device_solver_steps.h"
#include "formulations/quasi_newton/cuda/emulated_device_solver.h"
#include "formulations/quasi_newton/cuda/emulated_explicit_substep.h"
#include "formulations/quasi_newton/cuda/problem_packing.h"
#include "formulations/quasi_newton/cuda/substep_problem_examples.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"
#include "formulations/solvers/exact_line_search.h"
#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/polar_decomposition.h"
#include "mpm/sparse_grid.h"
#include "mpm/transfers.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_explicit_substep.h"
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace contactlab::quasi_newton {
namespace {

using mpm::Matrix3;
using mpm::Vector3;

// Same formulas in the same order as the CPU models; only Eigen's vectorized reductions
// may round differently.
constexpr double kModelTolerance = 1e-12;
// ε_r of the agreement tests, and the accepted distance in units of ε_r s (header comment).
constexpr double kTightTolerance = 1e-10;
constexpr double kAgreementFactor = 100.0;

Vector3 FromDevice(const gpu::Vec3& v) {
  return Vector3(v.x, v.y, v.z);
}
gpu::Vec3 ToDevice(const Vector3& v) {
  return {v.x(), v.y(), v.z()};
}
Matrix3 FromDevice(const gpu::Sym3& s) {
  Matrix3 m;
  m << s.xx, s.xy, s.xz, s.xy, s.yy, s.yz, s.xz, s.yz, s.zz;
  return m;
}

contact::ContactModelParameters ModelParameters(const std::string& model, double stiffness) {
  contact::ContactModelParameters parameters;
  parameters.model = ParseChoice("contact.model", model, contact::ContactModelNames());
  parameters.stiffness = stiffness;
  return parameters;
}

// Expects the device evaluation to equal the CPU model's within kModelTolerance (relative
// to the size of each quantity).
void ExpectSameEvaluation(const contact::ContactModel& model, const contact::PreparedContact& prepared,
                          const Vector3& velocity, const std::string& label) {
  const contact::ContactEvaluation expected = model.Evaluate(prepared, velocity, true);
  const gpu::DeviceContactParameters parameters = gpu::ToDeviceParameters(prepared);
  const gpu::DeviceContactEvaluation actual = model.name() == "lagged"
                                                  ? gpu::EvaluateLagged(parameters, ToDevice(velocity), true)
                                                  : gpu::EvaluateSapCone(parameters, ToDevice(velocity), true);
  EXPECT_NEAR(actual.cost, expected.cost, kModelTolerance * std::max(std::abs(expected.cost), 1e-300)) << label;
  EXPECT_LE((FromDevice(actual.impulse) - expected.impulse).norm(),
            kModelTolerance * std::max(expected.impulse.norm(), 1e-300))
      << label;
  EXPECT_LE((FromDevice(actual.hessian) - expected.hessian).norm(),
            kModelTolerance * std::max(expected.hessian.norm(), 1e-300))
      << label;
  // Without the Hessian the other outputs do not change.
  const gpu::DeviceContactEvaluation cheaper = model.name() == "lagged"
                                                   ? gpu::EvaluateLagged(parameters, ToDevice(velocity), false)
                                                   : gpu::EvaluateSapCone(parameters, ToDevice(velocity), false);
  EXPECT_EQ(cheaper.cost, actual.cost) << label;
  EXPECT_EQ(FromDevice(cheaper.impulse), FromDevice(actual.impulse)) << label;
}

// The structure-of-arrays round trip keeps every field the model reads.
TEST(DeviceContactModels, ParametersSurviveStructureOfArrays) {
  gpu::DeviceContactParameters c;
  c.friction_coefficient = 0.1;
  for (int i = 0; i < 3; ++i) {
    c.regularization[i] = 1.0 + i;
    c.stabilization_velocity[i] = 4.0 + i;
  }
  c.mu_tilde = 7.0;
  c.mu_hat = 8.0;
  c.time_step = 9.0;
  c.stiffness = 10.0;
  c.dissipation = 11.0;
  c.elastic_force = 12.0;
  c.max_normal_velocity = 13.0;
  c.lagged_normal_impulse = 14.0;
  c.soft_norm_tolerance = 15.0;
  std::vector<double> values(3 * gpu::kContactParameterCount, -1.0);
  gpu::StoreContactParameters(c, values.data(), 3, 1);
  const auto sap = gpu::LoadContactParameters<gpu::DeviceContactModel::kSapCone>(values.data(), 3, 1);
  const auto lagged = gpu::LoadContactParameters<gpu::DeviceContactModel::kLagged>(values.data(), 3, 1);
  EXPECT_EQ(sap.friction_coefficient, 0.1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sap.regularization[i], 1.0 + i);
    EXPECT_EQ(sap.stabilization_velocity[i], 4.0 + i);
  }
  EXPECT_EQ(sap.mu_tilde, 7.0);
  EXPECT_EQ(sap.mu_hat, 8.0);
  EXPECT_EQ(lagged.friction_coefficient, 0.1);
  EXPECT_EQ(lagged.time_step, 9.0);
  EXPECT_EQ(lagged.stiffness, 10.0);
  EXPECT_EQ(lagged.dissipation, 11.0);
  EXPECT_EQ(lagged.elastic_force, 12.0);
  EXPECT_EQ(lagged.max_normal_velocity, 13.0);
  EXPECT_EQ(lagged.lagged_normal_impulse, 14.0);
  EXPECT_EQ(lagged.soft_norm_tolerance, 15.0);
}

TEST(DeviceContactModels, LaggedMatchesCpuModelInEveryRegime) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int compressing = 0, released = 0, sticking = 0;
  for (const double dissipation : {0.0, 10.0}) {
    contact::ContactModelParameters parameters = ModelParameters("lagged", 1e6);
    parameters.hunt_crossley_dissipation = dissipation;
    const auto model = contact::MakeContactModel(parameters);
    for (int trial = 0; trial < 400; ++trial) {
      contact::ContactPointState state;
      state.penetration = 1e-3 * unit(random) + 5e-4;  // some gaps (x₀ < 0)
      state.previous_normal_velocity = 0.3 * unit(random);
      state.friction_coefficient = 0.5 * (1.0 + unit(random));
      state.delassus_scale = 100.0 * (1.1 + unit(random));
      const contact::PreparedContact prepared = model->Prepare(state, 1e-3);
      // Slip from far below to far above ε_s; v_n on both sides of v̂.
      const double slip = std::pow(10.0, -6.0 + 5.0 * (0.5 + 0.5 * unit(random)));
      const double angle = 3.14159 * unit(random);
      const Vector3 velocity(slip * std::cos(angle), slip * std::sin(angle),
                             prepared.max_normal_velocity + 0.5 * unit(random));
      compressing += velocity.z() < prepared.max_normal_velocity;
      released += velocity.z() >= prepared.max_normal_velocity;
      sticking += slip < prepared.soft_norm_tolerance;
      ExpectSameEvaluation(*model, prepared, velocity, "lagged trial " + std::to_string(trial));
    }
  }
  EXPECT_GT(compressing, 100);
  EXPECT_GT(released, 100);
  EXPECT_GT(sticking, 20);
}

TEST(DeviceContactModels, SapConeMatchesCpuModelInEveryRegion) {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int counts[3] = {0, 0, 0};
  const auto model = contact::MakeContactModel(ModelParameters("sap_cone", 1e6));
  for (int trial = 0; trial < 1000; ++trial) {
    contact::ContactPointState state;
    state.penetration = 1e-3 * (1.0 + unit(random));
    state.friction_coefficient = 0.5 * (1.0 + unit(random));
    state.delassus_scale = 100.0 * (1.1 + unit(random));
    const contact::PreparedContact prepared = model->Prepare(state, 1e-3);
    // An unprojected impulse y aimed at one region (stiction, sliding, no contact in turn),
    // then v_c = v̂ − R y.
    const double mu = prepared.friction_coefficient;
    const double normal = std::pow(10.0, -4.0 + 2.0 * (0.5 + 0.5 * unit(random)));
    double ratio = 0.0;  // ‖y_t‖ / (μ y_n) for y_n > 0
    double signed_normal = normal;
    switch (trial % 3) {
      case 0:
        ratio = 0.5 + 0.5 * unit(random);
        break;
      case 1:
        ratio = 2.0 + 1.5 * unit(random);
        if (trial % 6 == 1) signed_normal = -0.5 * prepared.mu_hat * mu * ratio * normal;  // sliding below y_n = 0
        break;
      default:
        ratio = 1.0 + unit(random);
        signed_normal = -(1.0 + 0.5 * (1.0 + unit(random))) * prepared.mu_hat * mu * ratio * normal - 1e-9;
        break;
    }
    const double angle = 3.14159 * unit(random);
    const double tangential = (trial % 50 == 0 ? 0.0 : ratio) * mu * normal;
    const Vector3 unprojected(tangential * std::cos(angle), tangential * std::sin(angle), signed_normal);
    const Vector3 velocity = prepared.stabilization_velocity - prepared.regularization.cwiseProduct(unprojected);
    const auto region = contact::ProjectOntoSapCone<double>(prepared, velocity).region;
    ++counts[static_cast<int>(region)];
    ExpectSameEvaluation(*model, prepared, velocity, "sap trial " + std::to_string(trial));
  }
  EXPECT_GT(counts[static_cast<int>(contact::SapConeRegion::kStiction)], 50);
  EXPECT_GT(counts[static_cast<int>(contact::SapConeRegion::kSliding)], 50);
  EXPECT_GT(counts[static_cast<int>(contact::SapConeRegion::kNoContact)], 50);
}

TEST(DeviceMath, RotationAndCholeskyMatchEigen) {
  std::mt19937 random(3);
  std::normal_distribution<double> gaussian;
  for (int trial = 0; trial < 100; ++trial) {
    const Matrix3 rotation = Eigen::Quaterniond(gaussian(random), gaussian(random), gaussian(random), gaussian(random))
                                 .normalized()
                                 .toRotationMatrix();
    Matrix3 a;
    for (int i = 0; i < 9; ++i) a(i) = gaussian(random);
    const Matrix3 spd = a * a.transpose() + 0.1 * Matrix3::Identity();
    const Vector3 b(gaussian(random), gaussian(random), gaussian(random));
    gpu::Mat3 device_rotation;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) device_rotation.m[i][j] = rotation(i, j);
    }
    const gpu::Sym3 device_spd{spd(0, 0), spd(0, 1), spd(0, 2), spd(1, 1), spd(1, 2), spd(2, 2)};
    EXPECT_LE(
        (FromDevice(gpu::RotateToWorld(device_rotation, device_spd)) - rotation.transpose() * spd * rotation).norm(),
        1e-13 * spd.norm());
    EXPECT_LE((FromDevice(gpu::Multiply(device_rotation, ToDevice(b))) - rotation * b).norm(), 1e-14 * b.norm());
    EXPECT_LE((FromDevice(gpu::MultiplyTransposed(device_rotation, ToDevice(b))) - rotation.transpose() * b).norm(),
              1e-14 * b.norm());
    const Vector3 expected = Eigen::LLT<Matrix3>(spd).solve(b);
    EXPECT_LE((FromDevice(gpu::CholeskySolve(device_spd, ToDevice(b))) - expected).norm(), 1e-10 * expected.norm());
  }
}

// 1-D convex test functions for the line search: ℓ(α) with ℓ', ℓ''.
struct LineCase {
  std::string label;
  std::function<solvers::LineSample(double)> line;
};

std::vector<LineCase> LineCases() {
  std::vector<LineCase> cases;
  auto quadratic = [](double curvature, double slope, double value) {
    return [=](double a) {
      return solvers::LineSample{value + slope * a + 0.5 * curvature * a * a, slope + curvature * a, curvature};
    };
  };
  cases.push_back({"quadratic, minimum inside", quadratic(2.0, -1.0, 3.0)});
  cases.push_back({"quadratic, minimum beyond max_step", quadratic(1.0, -2.0, 3.0)});
  cases.push_back({"not a descent direction", quadratic(1.0, 0.5, 3.0)});
  cases.push_back({"negligible slope", quadratic(1.0, -1e-40, 1.0)});
  cases.push_back({"kink (contact switching on)", [](double a) {
                     const double active = a > 0.2 ? 1.0 : 0.0;
                     return solvers::LineSample{0.5 * (a - 0.9) * (a - 0.9) + 5.0 * active * (a - 0.2) * (a - 0.2),
                                                (a - 0.9) + 10.0 * active * (a - 0.2), 1.0 + 10.0 * active};
                   }});
  cases.push_back({"exponential", [](double a) {
                     return solvers::LineSample{std::exp(3.0 * a) - 4.0 * a, 3.0 * std::exp(3.0 * a) - 4.0,
                                                9.0 * std::exp(3.0 * a)};
                   }});
  cases.push_back({"soft norm", [](double a) {
                     const double u = a - 0.7;
                     const double root = std::sqrt(1e-6 + u * u);
                     return solvers::LineSample{root, u / root, 1e-6 / (root * root * root)};
                   }});
  cases.push_back({"flat after the kink (lagged release)", [](double a) {
                     const double v = std::min(a, 0.4);
                     return solvers::LineSample{-(v - 0.5 * v * v / 0.4), a < 0.4 ? -(1.0 - a / 0.4) : 0.0,
                                                a < 0.4 ? 1.0 / 0.4 : 0.0};
                   }});
  return cases;
}

std::string CpuMessage(gpu::LineSearchStop stop) {
  switch (stop) {
    case gpu::LineSearchStop::kNotDescent:
      return "not a descent direction";
    case gpu::LineSearchStop::kMaxStep:
      return "max_step";
    case gpu::LineSearchStop::kNegligibleSlope:
      return "negligible slope";
    case gpu::LineSearchStop::kDerivative:
      return "derivative";
    case gpu::LineSearchStop::kStep:
      return "step";
    case gpu::LineSearchStop::kMaxIterations:
      return "max_iterations";
  }
  return "?";
}

// The device port takes exactly the steps of solvers::ExactLineSearch.
TEST(DeviceLineSearch, TakesTheStepsOfTheCpuLineSearch) {
  for (const double derivative_tolerance : {1e-8, 1e-14}) {
    solvers::ExactLineSearchOptions options;
    options.derivative_tolerance = derivative_tolerance;
    gpu::LineSearchParameters parameters;
    parameters.max_step = options.max_step;
    parameters.derivative_tolerance = options.derivative_tolerance;
    parameters.step_tolerance = options.step_tolerance;
    parameters.max_iterations = options.max_iterations;
    parameters.cost_absolute_tolerance = options.cost_absolute_tolerance;
    parameters.cost_relative_tolerance = options.cost_relative_tolerance;
    for (const LineCase& line_case : LineCases()) {
      const solvers::LineSample initial = line_case.line(0.0);
      const solvers::LineSearchResult expected = solvers::ExactLineSearch(line_case.line, initial, options);
      auto device_line = [&](double step) {
        const solvers::LineSample sample = line_case.line(step);
        return gpu::LineSampleValue{sample.value, sample.derivative, sample.second_derivative};
      };
      const gpu::LineSearchOutcome actual = gpu::RunExactLineSearch(
          device_line, gpu::LineSampleValue{initial.value, initial.derivative, initial.second_derivative}, parameters);
      EXPECT_EQ(actual.step, expected.step) << line_case.label;
      EXPECT_EQ(actual.evaluations, expected.evaluations) << line_case.label;
      EXPECT_EQ(actual.success, expected.success) << line_case.label;
      EXPECT_EQ(expected.message.rfind(CpuMessage(actual.stop), 0), 0u)
          << line_case.label << ": CPU says '" << expected.message << "'";
    }
  }
}

// The warp-segmented sum (warp_segmented_sum.cuh) simulated lane by lane with
// the semantics of __shfl_up_sync / __shfl_down_sync / __ballot_sync: every run head must end
// with the sum of its run, for any pattern of runs.
TEST(WarpScatter, SegmentedSumsGiveEachRunHeadItsRunTotal) {
  std::mt19937 random(5);
  std::uniform_int_distribution<int> run_length(1, 12);
  for (int trial = 0; trial < 500; ++trial) {
    std::array<int, 32> node{};
    std::array<double, 32> value{};
    int lane = 0, key = trial % 3 == 0 ? -1 : 0;
    while (lane < 32) {
      const int length = trial % 7 == 0 ? 1 : run_length(random);
      for (int k = 0; k < length && lane < 32; ++k, ++lane) node[lane] = key;
      key += 1 + trial % 2;  // sorted keys; −1 (no node) first
    }
    for (int l = 0; l < 32; ++l) value[l] = 1.0 + l + 0.001 * trial;
    // Heads and run ends as the kernel computes them.
    unsigned heads = 0;
    for (int l = 0; l < 32; ++l) {
      const int previous = l == 0 ? node[0] : node[l - 1];  // __shfl_up_sync: lane 0 keeps its own
      if (l == 0 || node[l] != previous) heads |= 1u << l;
    }
    std::array<int, 32> last{};
    unsigned longest = 0;
    for (int l = 0; l < 32; ++l) {
      last[l] = gpu::RunEnd(heads, l);
      int brute = l;
      while (brute + 1 < 32 && node[brute + 1] == node[l]) ++brute;
      ASSERT_EQ(last[l], brute) << "trial " << trial << " lane " << l;
      longest = std::max(longest, static_cast<unsigned>(last[l] - l + 1));
    }
    // Suffix sums within runs.
    std::array<double, 32> sum = value;
    for (unsigned offset = 1; offset < longest; offset <<= 1) {
      std::array<double, 32> shuffled{};
      for (int l = 0; l < 32; ++l) shuffled[l] = l + offset < 32 ? sum[l + offset] : sum[l];  // __shfl_down_sync
      for (int l = 0; l < 32; ++l) {
        if (l + static_cast<int>(offset) <= last[l]) sum[l] += shuffled[l];
      }
    }
    for (int l = 0; l < 32; ++l) {
      if (((heads >> l) & 1u) == 0u) continue;
      double expected = 0.0;
      for (int k = l; k <= last[l]; ++k) expected += value[k];
      EXPECT_NEAR(sum[l], expected, 1e-12 * expected) << "trial " << trial << " head " << l;
    }
  }
}

// ---- solver-level comparisons ---------------------------------------------------------------

// Scale s = max(‖M^½ v‖, ‖M^-½ j‖) of a solution (the stopping rule's).
double SolutionScale(const SubstepContactProblem& problem, const QuasiNewtonResults& results) {
  const int n = static_cast<int>(problem.node_mass.size());
  std::vector<Vector3> node_impulse(n, Vector3::Zero());
  for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
    const GridContact& contact = problem.contacts[c];
    for (int s = 0; s < 27; ++s) {
      if (contact.node[s] >= 0) {
        node_impulse[contact.node[s]] +=
            contact.weight[s] * (contact.world_to_contact.transpose() * results.impulses[c]);
      }
    }
  }
  double momentum = problem.outside_momentum_squared, impulse = 0.0;
  for (int i = 0; i < n; ++i) {
    momentum += problem.node_mass[i] * results.velocity[i].squaredNorm();
    impulse += node_impulse[i].squaredNorm() / problem.node_mass[i];
  }
  return std::max(std::sqrt(momentum), std::sqrt(impulse));
}

// The agreement test of the header comment for two solutions found with ε_r = relative.
void ExpectSolutionsAgree(const SubstepContactProblem& problem, const QuasiNewtonResults& reference,
                          const QuasiNewtonResults& candidate, double relative, const std::string& label) {
  ASSERT_EQ(candidate.velocity.size(), reference.velocity.size()) << label;
  ASSERT_EQ(candidate.impulses.size(), reference.impulses.size()) << label;
  const double scale = SolutionScale(problem, reference);
  const double tolerance = kAgreementFactor * relative * scale;
  double distance_squared = 0.0;
  double smallest_mass = problem.node_mass.empty() ? 1.0 : problem.node_mass[0];
  for (std::size_t i = 0; i < reference.velocity.size(); ++i) {
    distance_squared += problem.node_mass[i] * (candidate.velocity[i] - reference.velocity[i]).squaredNorm();
    smallest_mass = std::min(smallest_mass, problem.node_mass[i]);
  }
  EXPECT_LE(std::sqrt(distance_squared), tolerance) << label << ": ‖M^½ Δv‖ vs scale " << scale;
  double largest_impulse = 0.0;
  for (const Vector3& impulse : reference.impulses) largest_impulse = std::max(largest_impulse, impulse.norm());
  int worst = -1;
  double worst_ratio = 0.0;
  for (std::size_t c = 0; c < reference.impulses.size(); ++c) {
    const GridContact& contact = problem.contacts[c];
    Vector3 gathered = Vector3::Zero();
    for (int s = 0; s < 27; ++s) {
      if (contact.node[s] >= 0) gathered += contact.weight[s] * reference.velocity[contact.node[s]];
    }
    const Vector3 contact_velocity = contact.world_to_contact * gathered + contact.bias;
    const double stiffness = problem.model->Hessian(contact.prepared, contact_velocity).norm();
    const double bound = tolerance * stiffness / std::sqrt(smallest_mass) + 1e-13 * largest_impulse;
    const double error = (candidate.impulses[c] - reference.impulses[c]).norm();
    if (bound > 0.0 && error / bound > worst_ratio) {
      worst_ratio = error / bound;
      worst = static_cast<int>(c);
    }
  }
  EXPECT_LE(worst_ratio, 1.0) << label << ": contact " << worst << " impulse outside its bound";
}

struct ProblemCase {
  std::string label;
  std::function<examples::OwnedSubstepProblem()> make;
};

examples::PressedBlockParameters SoftBlock(double friction_coefficient) {
  examples::PressedBlockParameters parameters;
  parameters.particles_per_side = 8;
  parameters.particle_layers = 3;
  parameters.friction_coefficient = friction_coefficient;
  parameters.contact = ModelParameters("lagged", 1e3);
  parameters.contact.stiction_tolerance = 0.1;
  return parameters;
}

// Problems on which SolveQuasiNewton reaches ε_r = 1e-10 in at most about a thousand
// iterations: soft contacts (k = 1e3 N/m) and soft friction. (At the default stiffness the
// block-diagonal iteration converges linearly at a rate too slow for such tolerances.)
std::vector<ProblemCase> ConvergentCases() {
  std::vector<ProblemCase> cases;
  cases.push_back(
      {"soft pressed block, lagged, frictionless", [] { return examples::PressedBlockProblem(SoftBlock(0.0)); }});
  cases.push_back({"soft pressed block, lagged, mu 0.4", [] { return examples::PressedBlockProblem(SoftBlock(0.4)); }});
  cases.push_back({"soft block on a moving surface, lagged, mu 0.4", [] {
                     examples::PressedBlockParameters parameters = SoftBlock(0.4);
                     parameters.particles_per_side = 6;
                     parameters.tilt = 0.0;
                     parameters.surface_velocity = Vector3(0.1, -0.05, 0.02);
                     return examples::PressedBlockProblem(parameters);
                   }});
  cases.push_back({"soft pressed block, sap_cone, frictionless", [] {
                     examples::PressedBlockParameters parameters = SoftBlock(0.0);
                     parameters.contact.model = contact::ContactModelKind::kSapCone;
                     return examples::PressedBlockProblem(parameters);
                   }});
  cases.push_back({"random, sap_cone", [] {
                     contact::ContactModelParameters model = ModelParameters("sap_cone", 1e3);
                     model.friction_regularization = 1.0;
                     return examples::RandomSubstepProblem(300, 20, model, 17);
                   }});
  cases.push_back({"random, lagged", [] {
                     contact::ContactModelParameters model = ModelParameters("lagged", 1e3);
                     model.stiction_tolerance = 0.01;
                     return examples::RandomSubstepProblem(300, 20, model, 17);
                   }});
  return cases;
}

// Stiff problems at the models' default constants, where the iteration is far from converged
// after a few steps: compared iterate by iterate.
std::vector<ProblemCase> StiffCases() {
  std::vector<ProblemCase> cases;
  for (const std::string model : {"lagged", "sap_cone"}) {
    cases.push_back({"pressed block, " + model, [model] {
                       examples::PressedBlockParameters parameters;
                       parameters.particles_per_side = 8;
                       parameters.particle_layers = 3;
                       parameters.contact.model = ParseChoice("contact.model", model, contact::ContactModelNames());
                       return examples::PressedBlockProblem(parameters);
                     }});
    cases.push_back({"block on a moving surface, " + model, [model] {
                       examples::PressedBlockParameters parameters;
                       parameters.particles_per_side = 6;
                       parameters.particle_layers = 3;
                       parameters.tilt = 0.0;
                       parameters.surface_velocity = Vector3(0.1, -0.05, 0.02);
                       parameters.contact.model = ParseChoice("contact.model", model, contact::ContactModelNames());
                       return examples::PressedBlockProblem(parameters);
                     }});
    cases.push_back({"random, " + model,
                     [model] { return examples::RandomSubstepProblem(300, 200, ModelParameters(model, 1e4), 17); }});
  }
  return cases;
}

// Two runs of the same algorithm for a fixed number of iterations take the same steps up to
// round-off. The iteration is chaotic over long runs (differences grow about twofold per
// iteration once a line search branches differently), hence few iterations.
void ExpectSameIterates(const SubstepContactProblem& problem, const QuasiNewtonResults& reference,
                        const QuasiNewtonResults& candidate, const std::string& label) {
  EXPECT_EQ(candidate.summary.termination, reference.summary.termination) << label;
  EXPECT_EQ(candidate.summary.iterations, reference.summary.iterations) << label;
  ASSERT_EQ(candidate.summary.history.size(), reference.summary.history.size()) << label;
  for (std::size_t k = 0; k < reference.summary.history.size(); ++k) {
    EXPECT_NEAR(candidate.summary.history[k].step, reference.summary.history[k].step, 1e-8)
        << label << " iteration " << k;
    EXPECT_NEAR(candidate.summary.history[k].cost, reference.summary.history[k].cost,
                1e-10 * std::abs(reference.summary.history[k].cost))
        << label << " iteration " << k;
    EXPECT_NEAR(candidate.summary.history[k].residual, reference.summary.history[k].residual,
                1e-8 * reference.summary.history[k].residual)
        << label << " iteration " << k;
  }
  double distance_squared = 0.0, largest_impulse = 0.0, impulse_error = 0.0;
  for (std::size_t i = 0; i < reference.velocity.size(); ++i) {
    distance_squared += problem.node_mass[i] * (candidate.velocity[i] - reference.velocity[i]).squaredNorm();
  }
  for (std::size_t c = 0; c < reference.impulses.size(); ++c) {
    largest_impulse = std::max(largest_impulse, reference.impulses[c].norm());
    impulse_error = std::max(impulse_error, (candidate.impulses[c] - reference.impulses[c]).norm());
  }
  EXPECT_LE(std::sqrt(distance_squared), 1e-9 * SolutionScale(problem, reference)) << label;
  EXPECT_LE(impulse_error, 1e-7 * largest_impulse) << label;
}

QuasiNewtonOptions FixedIterations(int iterations) {
  QuasiNewtonOptions options;
  options.relative_tolerance = 1e-14;  // never met: every run takes `iterations` steps
  options.max_iterations = iterations;
  options.record_history = true;
  return options;
}

// The emulated device solver takes the CPU solver's steps and converges to its solution.
TEST(EmulatedDeviceSolver, FollowsTheCpuIterates) {
  for (const ProblemCase& problem_case : StiffCases()) {
    const examples::OwnedSubstepProblem owned = problem_case.make();
    ASSERT_FALSE(owned.problem.contacts.empty()) << problem_case.label;
    const QuasiNewtonOptions options = FixedIterations(15);
    ExpectSameIterates(owned.problem, SolveQuasiNewton(owned.problem, options),
                       gpu::EmulateCudaQuasiNewton(owned.problem, options), problem_case.label);
  }
}

TEST(EmulatedDeviceSolver, ConvergesToTheCpuSolution) {
  for (const ProblemCase& problem_case : ConvergentCases()) {
    const examples::OwnedSubstepProblem owned = problem_case.make();
    ASSERT_FALSE(owned.problem.contacts.empty()) << problem_case.label;
    QuasiNewtonOptions options;
    options.relative_tolerance = kTightTolerance;
    const QuasiNewtonResults cpu = SolveQuasiNewton(owned.problem, options);
    const QuasiNewtonResults emulated = gpu::EmulateCudaQuasiNewton(owned.problem, options);
    ASSERT_TRUE(cpu.summary.converged()) << problem_case.label << ": " << cpu.summary.message;
    EXPECT_TRUE(emulated.summary.converged()) << problem_case.label << ": " << emulated.summary.message;
    EXPECT_LE(emulated.summary.residual, 1.0) << problem_case.label;  // residual / threshold
    ExpectSolutionsAgree(owned.problem, cpu, emulated, kTightTolerance, problem_case.label);
    // The reported cost is the cost of the returned velocities.
    EXPECT_NEAR(emulated.summary.cost, QuasiNewtonCost(owned.problem, emulated.velocity),
                1e-12 * std::abs(emulated.summary.cost))
        << problem_case.label;
  }
}

// The stencil sort is a stable permutation ordered by centre node, and packing then unpacking
// puts every contact's impulse back in its place.
TEST(ProblemPacking, StencilOrderIsAStablePermutationByCentreNode) {
  const examples::OwnedSubstepProblem owned =
      examples::RandomSubstepProblem(100, 300, ModelParameters("lagged", 1e4), 3);
  const std::vector<int> order = gpu::StencilOrder(owned.problem);
  ASSERT_EQ(order.size(), owned.problem.contacts.size());
  std::vector<int> seen(order.size(), 0);
  for (std::size_t q = 0; q < order.size(); ++q) {
    ++seen[order[q]];
    if (q > 0) {
      const int previous = gpu::StencilKey(owned.problem.contacts[order[q - 1]]);
      const int current = gpu::StencilKey(owned.problem.contacts[order[q]]);
      EXPECT_LE(previous, current);
      if (previous == current) {
        EXPECT_LT(order[q - 1], order[q]);
      }
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int count) { return count == 1; }));

  gpu::HostProblemStorage storage(static_cast<int>(owned.problem.node_mass.size()),
                                  static_cast<int>(owned.problem.contacts.size()));
  gpu::PackProblem(owned.problem, order, storage.buffers);
  const int nc = storage.buffers.contact_count;
  for (int q = 0; q < nc; ++q) {
    for (int k = 0; k < 3; ++k) storage.buffers.impulse[k * nc + q] = order[q] + 0.25 * k;
  }
  QuasiNewtonResults results;
  gpu::UnpackResults(gpu::DeviceSolveSummary{}, storage.buffers, order, results);
  for (int c = 0; c < nc; ++c) EXPECT_EQ(results.impulses[c], Vector3(c, c + 0.25, c + 0.5));
}

// ---- explicit substep --------------------------------------------------------------------

constexpr double kSubstepSpacing = 0.01;   // h [m]
constexpr double kSubstepTimeStep = 1e-4;  // δt [s], below h/c for E ≤ 1e6 Pa, ρ = 1000 kg/m³
const Vector3 kGravity(0.0, 0.0, -9.81);

std::vector<mpm::Material> SubstepMaterials() {
  return {mpm::MakeMaterial("soft", "linear_corotated", 1000.0, 1e5, 0.3),
          mpm::MakeMaterial("stiff", "linear_corotated", 1200.0, 1e6, 0.4, 1e4)};
}

// A jittered block of 8 particles per cell, deformed and moving: random velocities, affine
// velocities, elastic deformation gradients near I and lagged rotations R0 = polar(F).
mpm::Particles SubstepParticles(int side, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  mpm::Particles particles;
  const double spacing = 0.5 * kSubstepSpacing;
  for (int k = 0; k < side; ++k) {
    for (int j = 0; j < side; ++j) {
      for (int i = 0; i < side; ++i) {
        const Vector3 position =
            Vector3(0.1234, -0.0567, 0.0891) +
            spacing * Vector3(i + 0.5 + 0.2 * unit(random), j + 0.5 + 0.2 * unit(random), k + 0.5 + 0.2 * unit(random));
        const int material = (i + j + k) % 2;
        const double density = material == 0 ? 1000.0 : 1200.0;
        particles.Add(position, 0.5 * Vector3(unit(random), unit(random), unit(random)),
                      density * spacing * spacing * spacing, spacing * spacing * spacing, material);
        Matrix3 affine, deformation;
        for (int e = 0; e < 9; ++e) {
          affine(e) = 5.0 * unit(random);
          deformation(e) = (e % 4 == 0 ? 1.0 : 0.0) + 0.05 * unit(random);
        }
        particles.affine_velocity.back() = affine;
        particles.deformation_gradient.back() = deformation;
        particles.reference_rotation.back() = mpm::ComputePolarDecomposition(deformation).rotation;
      }
    }
  }
  return particles;
}

// One substep on the CPU (mpm/transfers.h); the grid is left in `grid`.
void CpuSubstep(mpm::Particles& particles, const std::vector<mpm::Material>& materials, mpm::SparseGrid& grid) {
  mpm::ParticleToGrid(particles, materials, kSubstepTimeStep, grid);
  mpm::ComputeGridVelocity(kGravity, kSubstepTimeStep, grid);
  mpm::GridToParticle(grid, kSubstepTimeStep, particles);
  mpm::UpdateConstitutiveState(materials, particles);
}

double LargestNorm(const std::vector<Vector3>& values) {
  double largest = 0.0;
  for (const Vector3& value : values) largest = std::max(largest, value.norm());
  return largest;
}
double LargestNorm(const std::vector<Matrix3>& values) {
  double largest = 0.0;
  for (const Matrix3& value : values) largest = std::max(largest, value.norm());
  return largest;
}

// Particles after the same substep(s) agree to round-off (sums in another order).
void ExpectSameParticles(const mpm::Particles& reference, const mpm::Particles& candidate, double relative,
                         const std::string& label) {
  ASSERT_EQ(candidate.size(), reference.size()) << label;
  const double speed = LargestNorm(reference.velocity);
  const double rate = LargestNorm(reference.affine_velocity) + 4.0 * speed / kSubstepSpacing;
  for (std::size_t p = 0; p < reference.size(); ++p) {
    EXPECT_LE((candidate.position[p] - reference.position[p]).norm(), relative * kSubstepSpacing)
        << label << " x " << p;
    EXPECT_LE((candidate.velocity[p] - reference.velocity[p]).norm(), relative * speed) << label << " v " << p;
    EXPECT_LE((candidate.affine_velocity[p] - reference.affine_velocity[p]).norm(), relative * rate)
        << label << " C " << p;
    EXPECT_LE((candidate.deformation_gradient[p] - reference.deformation_gradient[p]).norm(), relative)
        << label << " F " << p;
    EXPECT_LE((candidate.reference_rotation[p] - reference.reference_rotation[p]).norm(), relative)
        << label << " R0 " << p;
    EXPECT_LE((candidate.plastic_deformation_gradient[p] - reference.plastic_deformation_gradient[p]).norm(), relative)
        << label << " F^P " << p;
  }
}

// The grid of a snapshot equals the CPU grid on every node with mass.
void ExpectSameGrid(const mpm::SparseGrid& reference, const CudaGridSnapshot& candidate, double relative,
                    const std::string& label) {
  std::map<std::array<int, 3>, int> index;
  for (std::size_t k = 0; k < candidate.node.size(); ++k) {
    index[{candidate.node[k].x(), candidate.node[k].y(), candidate.node[k].z()}] = static_cast<int>(k);
  }
  double momentum_scale = 0.0, speed_scale = 0.0, mass_scale = 0.0;
  int nodes_with_mass = 0;
  for (int i = 0; i < reference.num_nodes(); ++i) {
    if (reference.mass[i] <= 0.0) continue;
    ++nodes_with_mass;
    mass_scale = std::max(mass_scale, reference.mass[i]);
    momentum_scale = std::max(momentum_scale, reference.momentum[i].norm());
    speed_scale = std::max(speed_scale, reference.velocity[i].norm());
  }
  EXPECT_EQ(static_cast<int>(candidate.node.size()), nodes_with_mass) << label;
  for (int i = 0; i < reference.num_nodes(); ++i) {
    if (reference.mass[i] <= 0.0) continue;
    const mpm::NodeCoordinate node = reference.NodeCoordinateOf(i);
    const auto found = index.find({node.x(), node.y(), node.z()});
    ASSERT_NE(found, index.end()) << label << ": node " << node.transpose() << " missing";
    const int k = found->second;
    EXPECT_LE(std::abs(candidate.mass[k] - reference.mass[i]), relative * mass_scale) << label;
    EXPECT_LE((candidate.momentum[k] - reference.momentum[i]).norm(), relative * momentum_scale) << label;
    // v = p/m: light boundary nodes amplify the momentum's round-off by m_max/m.
    EXPECT_LE((candidate.velocity[k] - reference.velocity[i]).norm(),
              relative * speed_scale * mass_scale / reference.mass[i])
        << label;
  }
}

gpu::Mat3 ToDevice(const Matrix3& a) {
  gpu::Mat3 m;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m.m[i][j] = a(i, j);
  }
  return m;
}
Matrix3 ToHost(const gpu::Mat3& a) {
  Matrix3 m;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m(i, j) = a.m[i][j];
  }
  return m;
}

// Deformation gradients of every regime the polar rotation meets: near rotations, strong
// stretches, nearly singular (det F ~ 1e-9, the SVD path), inverted (det F < 0).
std::vector<Matrix3> DeformationGradients() {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<Matrix3> gradients;
  for (int k = 0; k < 40; ++k) {
    const Matrix3 rotation =
        Eigen::Quaterniond(Eigen::Vector4d::NullaryExpr([&](Eigen::Index) { return unit(random); }).normalized())
            .toRotationMatrix();
    const Matrix3 other =
        Eigen::Quaterniond(Eigen::Vector4d::NullaryExpr([&](Eigen::Index) { return unit(random); }).normalized())
            .toRotationMatrix();
    Vector3 stretch;
    switch (k % 4) {
      case 0:
        stretch = Vector3::Ones() + 0.05 * Vector3(unit(random), unit(random), unit(random));
        break;
      case 1:
        stretch = Vector3(3.0, 0.7, 0.2) + 0.1 * Vector3(unit(random), unit(random), unit(random));
        break;
      case 2:
        stretch = Vector3(1.5, 0.8, 1e-9);
        break;
      default:
        stretch = Vector3(1.2, 0.9, -0.3) + 0.05 * Vector3(unit(random), unit(random), unit(random));
        break;
    }
    gradients.push_back(rotation * stretch.asDiagonal() * other);
  }
  return gradients;
}

// The device polar rotation is the host's where the rotation is unique (distinct singular
// values), Newton and SVD paths alike, and a proper rotation.
TEST(DeviceConstitutive, PolarRotationMatchesTheHost) {
  for (const Matrix3& gradient : DeformationGradients()) {
    const Matrix3 device = ToHost(gpu::PolarRotation(ToDevice(gradient)));
    const Matrix3 host = mpm::ComputePolarRotation(gradient);
    EXPECT_LT((device - host).norm(), 1e-10) << "F =\n" << gradient << "\ndet " << gradient.determinant();
    EXPECT_LT((device.transpose() * device - Matrix3::Identity()).norm(), 1e-12);
    EXPECT_NEAR(device.determinant(), 1.0, 1e-12);
  }
}

TEST(DeviceConstitutive, SymmetricEigenDecomposesAndAgreesWithEigen) {
  std::mt19937 random(3);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int k = 0; k < 50; ++k) {
    Matrix3 a = Matrix3::NullaryExpr([&](Eigen::Index, Eigen::Index) { return unit(random); });
    // Every fifth: a double eigenvalue.
    const Matrix3 q = a.householderQr().householderQ();
    const Matrix3 symmetric =
        k % 5 == 0 ? Matrix3(q * Vector3(2.0, 2.0, -1.0).asDiagonal() * q.transpose()) : Matrix3(a + a.transpose());
    double eigenvalue[3];
    gpu::Mat3 vectors;
    gpu::SymmetricEigen(ToDevice(symmetric), eigenvalue, vectors);
    const Matrix3 v = ToHost(vectors);
    const Vector3 lambda(eigenvalue[0], eigenvalue[1], eigenvalue[2]);
    EXPECT_LT((v * lambda.asDiagonal() * v.transpose() - symmetric).norm(), 1e-13 * symmetric.norm());
    EXPECT_LT((v.transpose() * v - Matrix3::Identity()).norm(), 1e-13);
    Vector3 sorted = lambda;
    std::sort(sorted.data(), sorted.data() + 3);
    EXPECT_LT((sorted - Eigen::SelfAdjointEigenSolver<Matrix3>(symmetric).eigenvalues()).norm(),
              1e-13 * symmetric.norm());
  }
}

// ½(Q X + X Qᵀ) = S: solved for a generic rotation; refused where the 6 × 6 system is
// singular (Q a quarter turn), as the host falls back there.
TEST(DeviceConstitutive, SymmetricProductSolveAndItsSingularCase) {
  const Matrix3 s = (Matrix3() << 1.1, 0.2, -0.1, 0.2, 0.9, 0.05, -0.1, 0.05, 1.0).finished();
  const Matrix3 q = Eigen::AngleAxisd(0.4, Vector3(1.0, 2.0, -0.5).normalized()).toRotationMatrix();
  gpu::Mat3 x;
  ASSERT_TRUE(gpu::SolveSymmetricProduct(ToDevice(q), ToDevice(s), 1e-8, x));
  const Matrix3 solution = ToHost(x);
  EXPECT_LT((solution - solution.transpose()).norm(), 1e-15);
  EXPECT_LT((0.5 * (q * solution + solution * q.transpose()) - s).norm(), 1e-13);
  const Matrix3 quarter = Eigen::AngleAxisd(0.5 * std::numbers::pi, Vector3::UnitZ()).toRotationMatrix();
  EXPECT_FALSE(gpu::SolveSymmetricProduct(ToDevice(quarter), ToDevice(s), 1e-8, x));
}

// The device return mapping gives the host's elastic F, next R0 and yield flag, inside and
// outside the cylinder.
TEST(DeviceConstitutive, VonMisesReturnMatchesTheHost) {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double shear_modulus = 1e5;
  int yielded = 0, elastic = 0;
  for (int k = 0; k < 60; ++k) {
    const Matrix3 previous =
        Matrix3::Identity() + 0.05 * Matrix3::NullaryExpr([&](Eigen::Index, Eigen::Index) { return unit(random); });
    const Matrix3 reference_rotation = mpm::ComputePolarRotation(previous);
    const Matrix3 trial =
        (Matrix3::Identity() + 0.03 * Matrix3::NullaryExpr([&](Eigen::Index, Eigen::Index) { return unit(random); })) *
        previous;
    const double yield_stress = (k % 3 == 0 ? 0.2 : 2e-3) * shear_modulus;
    const mpm::VonMisesReturnResult host =
        mpm::VonMisesReturnMap(trial, reference_rotation, yield_stress, shear_modulus);
    const gpu::DeviceVonMisesResult device =
        gpu::VonMisesReturn(ToDevice(trial), ToDevice(reference_rotation), yield_stress, shear_modulus);
    ASSERT_EQ(device.yielded, host.yielded) << k;
    (host.yielded ? yielded : elastic) += 1;
    EXPECT_LT((ToHost(device.elastic_deformation_gradient) - host.elastic_deformation_gradient).norm(), 1e-12) << k;
    EXPECT_LT((ToHost(device.next_reference_rotation) - host.next_reference_rotation).norm(), 1e-12) << k;
  }
  EXPECT_GT(yielded, 10);
  EXPECT_GT(elastic, 10);
}

TEST(EmulatedExplicitSubstep, MatchesTheCpuTransfers) {
  const std::vector<mpm::Material> materials = SubstepMaterials();
  mpm::Particles cpu = SubstepParticles(6, 1);
  mpm::Particles emulated = cpu;
  mpm::SparseGrid grid(kSubstepSpacing);
  CpuSubstep(cpu, materials, grid);
  const CudaGridSnapshot snapshot =
      gpu::EmulateExplicitSubstep(emulated, materials, kSubstepSpacing, kSubstepTimeStep, kGravity);
  ExpectSameGrid(grid, snapshot, 1e-13, "emulated grid");
  ExpectSameParticles(cpu, emulated, 1e-12, "emulated particles");
  // The von Mises material yielded somewhere, so the return mapping was compared too.
  int plastic = 0;
  for (const Matrix3& plastic_gradient : cpu.plastic_deformation_gradient) {
    plastic += (plastic_gradient - Matrix3::Identity()).norm() > 1e-6 ? 1 : 0;
  }
  EXPECT_GT(plastic, 10);
}

TEST(EmulatedExplicitSubstep, SeveralSubstepsMatchTheCpuTransfers) {
  const std::vector<mpm::Material> materials = SubstepMaterials();
  mpm::Particles cpu = SubstepParticles(8, 3);
  mpm::Particles emulated = cpu;
  mpm::SparseGrid grid(kSubstepSpacing);
  for (int k = 0; k < 5; ++k) {
    CpuSubstep(cpu, materials, grid);
    gpu::EmulateExplicitSubstep(emulated, materials, kSubstepSpacing, kSubstepTimeStep, kGravity);
  }
  ExpectSameParticles(cpu, emulated, 1e-12, "5 emulated substeps");
}

TEST(CudaExplicitSubstepHost, RejectsMaterialsWithoutADeviceModel) {
#ifdef CONTACTLAB_WITH_CUDA
  std::vector<mpm::Material> materials = SubstepMaterials();
  materials.push_back(mpm::MakeMaterial("rubber", "fixed_corotated", 1000.0, 1e5, 0.3));
  CudaExplicitSubstep substep(kSubstepSpacing);
  EXPECT_THROW(substep.Upload(SubstepParticles(2, 1), materials), std::invalid_argument);
  EXPECT_THROW(CudaExplicitSubstep(0.0), std::invalid_argument);
#else
  GTEST_SKIP() << "built without CUDA (CONTACTLAB_WITH_CUDA undefined)";
#endif
}

#ifdef CONTACTLAB_WITH_CUDA

class CudaQuasiNewtonSolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!CudaDeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  }
};

TEST_F(CudaQuasiNewtonSolverTest, ConvergesToTheCpuSolution) {
  CudaQuasiNewtonSolver solver;
  for (const ProblemCase& problem_case : ConvergentCases()) {
    const examples::OwnedSubstepProblem owned = problem_case.make();
    QuasiNewtonOptions options;
    options.relative_tolerance = kTightTolerance;
    const QuasiNewtonResults cpu = SolveQuasiNewton(owned.problem, options);
    const QuasiNewtonResults gpu = solver.Solve(owned.problem, options);
    ASSERT_TRUE(cpu.summary.converged()) << problem_case.label << ": " << cpu.summary.message;
    EXPECT_TRUE(gpu.summary.converged()) << problem_case.label << ": " << gpu.summary.message;
    EXPECT_LE(gpu.summary.residual, 1.0) << problem_case.label;  // residual / threshold
    ExpectSolutionsAgree(owned.problem, cpu, gpu, kTightTolerance, problem_case.label);
    // The device reports the cost of the velocities it returns.
    EXPECT_NEAR(gpu.summary.cost, QuasiNewtonCost(owned.problem, gpu.velocity), 1e-10 * std::abs(gpu.summary.cost))
        << problem_case.label;
  }
}

// The device takes the CPU's steps (round-off aside: atomics reorder the scatter's sums).
TEST_F(CudaQuasiNewtonSolverTest, FollowsTheCpuIterates) {
  CudaQuasiNewtonSolver solver;
  for (const ProblemCase& problem_case : StiffCases()) {
    const examples::OwnedSubstepProblem owned = problem_case.make();
    const QuasiNewtonOptions options = FixedIterations(10);
    ExpectSameIterates(owned.problem, SolveQuasiNewton(owned.problem, options), solver.Solve(owned.problem, options),
                       problem_case.label);
  }
}

// One solver object through growing and shrinking problems (buffer reuse), and the scatter
// without warp aggregation (one atomic per contact and node) gives the same solutions.
TEST_F(CudaQuasiNewtonSolverTest, ReusesBuffersAndAgreesWithoutWarpAggregation) {
  CudaQuasiNewtonSolver aggregated;
  CudaQuasiNewtonSolver plain(CudaQuasiNewtonSettings{.warp_aggregation = false, .max_iterations_per_sync = 1});
  QuasiNewtonOptions options;
  options.relative_tolerance = kTightTolerance;
  for (const int side : {4, 16, 6, 24, 5}) {
    examples::PressedBlockParameters parameters = SoftBlock(0.4);
    parameters.particles_per_side = side;
    const examples::OwnedSubstepProblem owned = examples::PressedBlockProblem(parameters);
    const std::string label = "side " + std::to_string(side);
    const QuasiNewtonResults cpu = SolveQuasiNewton(owned.problem, options);
    ASSERT_TRUE(cpu.summary.converged()) << label;
    ExpectSolutionsAgree(owned.problem, cpu, aggregated.Solve(owned.problem, options), kTightTolerance, label);
    ExpectSolutionsAgree(owned.problem, cpu, plain.Solve(owned.problem, options), kTightTolerance, label + " plain");
  }
}

TEST_F(CudaQuasiNewtonSolverTest, TenThousandContactsMatchTheCpuSolver) {
  examples::PressedBlockParameters parameters = SoftBlock(0.4);
  parameters.particles_per_side = 100;
  const examples::OwnedSubstepProblem owned = examples::PressedBlockProblem(parameters);
  ASSERT_EQ(owned.problem.contacts.size(), 10000u);
  QuasiNewtonOptions options;
  options.relative_tolerance = 1e-8;
  CudaQuasiNewtonSolver solver;
  const QuasiNewtonResults gpu = solver.Solve(owned.problem, options);
  const QuasiNewtonResults cpu = SolveQuasiNewton(owned.problem, options);
  ASSERT_TRUE(cpu.summary.converged()) << cpu.summary.message;
  EXPECT_TRUE(gpu.summary.converged()) << gpu.summary.message;
  ExpectSolutionsAgree(owned.problem, cpu, gpu, 1e-8, "10k contacts");
}

class CudaExplicitSubstepTest : public CudaQuasiNewtonSolverTest {};

// One substep on the device equals the CPU transfers, with and without warp aggregation and
// with a partial (10-bit) sort.
TEST_F(CudaExplicitSubstepTest, MatchesTheCpuTransfers) {
  const std::vector<mpm::Material> materials = SubstepMaterials();
  const mpm::Particles initial = SubstepParticles(12, 2);
  mpm::Particles cpu = initial;
  mpm::SparseGrid grid(kSubstepSpacing);
  CpuSubstep(cpu, materials, grid);
  for (const CudaExplicitSubstepSettings settings :
       {CudaExplicitSubstepSettings{}, CudaExplicitSubstepSettings{.warp_aggregation = false},
        CudaExplicitSubstepSettings{.sort_key_bits = 10}}) {
    const std::string label = "aggregation " + std::to_string(settings.warp_aggregation) + ", key bits " +
                              std::to_string(settings.sort_key_bits);
    CudaExplicitSubstep substep(kSubstepSpacing, settings);
    mpm::Particles device = initial;
    substep.Upload(device, materials);
    substep.Substep(kSubstepTimeStep, kGravity);
    substep.Download(device);
    ExpectSameGrid(grid, substep.DownloadGrid(), 1e-13, label);
    ExpectSameParticles(cpu, device, 1e-12, label);
  }
}

// Several substeps reuse the upload's order and grid box; the CPU rebuilds its grid every
// substep. Round-off grows a little per substep.
TEST_F(CudaExplicitSubstepTest, SeveralSubstepsMatchTheCpuTransfers) {
  const std::vector<mpm::Material> materials = SubstepMaterials();
  mpm::Particles cpu = SubstepParticles(10, 3);
  mpm::Particles device = cpu;
  CudaExplicitSubstep substep(kSubstepSpacing);
  substep.Upload(device, materials);
  mpm::SparseGrid grid(kSubstepSpacing);
  for (int k = 0; k < 5; ++k) {
    CpuSubstep(cpu, materials, grid);
    substep.Substep(kSubstepTimeStep, kGravity);
  }
  substep.Download(device);
  ExpectSameParticles(cpu, device, 1e-10, "5 substeps");
}

// A particle carried out of the grid box is reported, not silently lost.
TEST_F(CudaExplicitSubstepTest, ReportsParticlesLeavingTheGridBox) {
  const std::vector<mpm::Material> materials = SubstepMaterials();
  mpm::Particles particles = SubstepParticles(3, 4);
  for (Vector3& velocity : particles.velocity) velocity = Vector3(50.0, 0.0, 0.0);  // 5 mm per substep
  CudaExplicitSubstep substep(kSubstepSpacing, CudaExplicitSubstepSettings{.margin_cells = 1});
  substep.Upload(particles, materials);
  for (int k = 0; k < 10; ++k) substep.Substep(kSubstepTimeStep, kGravity);
  EXPECT_THROW(substep.Download(particles), std::runtime_error);
}

#endif  // CONTACTLAB_WITH_CUDA

// Neither needs a device: no contacts return v* at once, bad input throws before any CUDA call.
TEST(CudaQuasiNewtonSolverHost, NoContactsAndInvalidInputNeedNoDevice) {
#ifdef CONTACTLAB_WITH_CUDA
  examples::OwnedSubstepProblem owned = examples::RandomSubstepProblem(30, 0, ModelParameters("lagged", 1e4), 1);
  CudaQuasiNewtonSolver solver;
  const QuasiNewtonResults results = solver.Solve(owned.problem, QuasiNewtonOptions());
  EXPECT_TRUE(results.summary.converged());
  EXPECT_EQ(results.summary.termination, solvers::Termination::kNothingToSolve);
  EXPECT_EQ(results.velocity, owned.problem.free_velocity);

  QuasiNewtonOptions bad_options;
  bad_options.max_iterations = 0;
  EXPECT_THROW(solver.Solve(owned.problem, bad_options), std::invalid_argument);
  owned.problem.node_mass[3] = 0.0;
  EXPECT_THROW(solver.Solve(owned.problem, QuasiNewtonOptions()), std::invalid_argument);
  owned.problem.model = nullptr;
  EXPECT_THROW(solver.Solve(owned.problem, QuasiNewtonOptions()), std::invalid_argument);
#else
  GTEST_SKIP() << "built without CUDA (CONTACTLAB_WITH_CUDA undefined)";
#endif
}

}  // namespace
}  // namespace contactlab::quasi_newton
