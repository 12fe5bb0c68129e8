// Per-contact convex models (contact_model.h, spec-sap-qn §1.3.1, §1.3.4, §1.3.7): impulse and
// Hessian against ceres::Jet derivatives of the templated cost and impulse in every region,
// positive semidefinite Hessians, continuity across region boundaries, Coulomb bounds,
// convexity, the sign convention, SAP's exact projection, and parameter handling.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <ceres/jet.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>

#include "formulations/contact/contact_model.h"
#include "formulations/contact/lagged_hunt_crossley.h"
#include "formulations/contact/sap_friction_cone.h"

namespace contactlab::contact {
namespace {

using Jet3 = ceres::Jet<double, 3>;
using JetVector3 = Eigen::Matrix<Jet3, 3, 1>;

constexpr double kDerivativeTolerance = 1e-10;  // relative, Jet versus hand-written derivatives

// v_c with Jet parts seeded so that component i carries ∂/∂v_c(i).
JetVector3 SeededVelocity(const Vector3& velocity) {
  JetVector3 seeded;
  for (int i = 0; i < 3; ++i) seeded(i) = Jet3(velocity(i), i);
  return seeded;
}

Vector3 GradientFromJet(const Jet3& value) {
  return value.v;
}

Matrix3 JacobianFromJet(const JetVector3& value) {
  Matrix3 jacobian;
  for (int i = 0; i < 3; ++i) jacobian.row(i) = value(i).v.transpose();
  return jacobian;
}

// ---------------------------------------------------------------------------------------
// SAP friction cone.

struct SapCase {
  std::string label;
  ContactModelParameters parameters;
  ContactPointState state;
  double time_step = 1e-3;
};

ContactModelParameters SapParameters(double stiffness, double dissipation_time_scale) {
  ContactModelParameters parameters;
  parameters.model = ContactModelKind::kSapCone;
  parameters.stiffness = stiffness;
  parameters.dissipation_time_scale = dissipation_time_scale;
  return parameters;
}

ContactPointState State(double penetration, double previous_normal_velocity, double friction, double delassus_scale) {
  ContactPointState state;
  state.penetration = penetration;
  state.previous_normal_velocity = previous_normal_velocity;
  state.friction_coefficient = friction;
  state.delassus_scale = delassus_scale;
  return state;
}

std::vector<SapCase> SapCases() {
  return {
      // k = 1e8: the near-rigid cap β² w/(4π²) sets R_n.
      {"near_rigid", SapParameters(1e8, 0.0), State(1e-4, -0.1, 0.5, 1e3), 1e-3},
      // Soft contact with damping: R_n = 1/(δt k (δt + τ_d)).
      {"compliant_damped", SapParameters(1e3, 2e-3), State(3e-4, 0.0, 1.0, 50.0), 1e-3},
      // Large friction, small Delassus scale (heavy contact).
      {"high_friction", SapParameters(1e8, 0.0), State(2e-5, 0.0, 2.0, 0.3), 5e-4},
      // Frictionless: no stiction region, only sliding (γ_t = 0) and no contact.
      {"frictionless", SapParameters(1e8, 0.0), State(1e-4, 0.0, 0.0, 1e3), 1e-3},
  };
}

// The velocity whose unprojected impulse is y: v_c = v̂ − R y.
Vector3 VelocityForUnprojected(const PreparedContact& contact, const Vector3& unprojected) {
  return contact.stabilization_velocity - contact.regularization.cwiseProduct(unprojected);
}

// Typical impulse and Hessian magnitudes of a prepared SAP contact.
double SapImpulseScale(const PreparedContact& contact) {
  return contact.stabilization_velocity.z() / contact.regularization.z();
}
double SapHessianScale(const PreparedContact& contact) {
  return contact.regularization.cwiseInverse().maxCoeff();
}

// Unprojected impulses y of magnitude ~scale inside one region of the projection.
std::vector<Vector3> UnprojectedInRegion(const PreparedContact& contact, SapConeRegion region, double scale,
                                         std::mt19937& random) {
  std::uniform_real_distribution<double> unit(0.1, 0.9);
  std::uniform_real_distribution<double> angle(0.0, 2.0 * std::numbers::pi);
  const double mu = contact.friction_coefficient;
  std::vector<Vector3> result;
  for (int sample = 0; sample < 8; ++sample) {
    const Eigen::Vector2d direction(std::cos(angle(random)), std::sin(angle(random)));
    const Eigen::Vector2d tangent_direction = direction.normalized();
    Vector3 y;
    if (region == SapConeRegion::kStiction) {
      const double normal = scale * (0.2 + unit(random));
      y << unit(random) * mu * normal * tangent_direction, normal;
    } else if (region == SapConeRegion::kSliding) {
      const double radius = scale * (0.2 + unit(random));
      // Strictly between −μ̂ y_r and y_r/μ (the upper end is open-ended when μ = 0).
      const double upper = mu > 0.0 ? radius / mu : 3.0 * scale;
      const double normal = -contact.mu_hat * radius + unit(random) * (upper + contact.mu_hat * radius);
      y << radius * tangent_direction, normal;
    } else {
      const double radius = scale * unit(random);
      y << radius * tangent_direction, -contact.mu_hat * radius - scale * unit(random);
    }
    result.push_back(y);
  }
  return result;
}

class SapFrictionConeTest : public ::testing::Test {
 protected:
  SapFrictionConeTest() : random_(20240611) {}
  std::mt19937 random_;
};

TEST_F(SapFrictionConeTest, PrepareFollowsTheRegularizationFormulas) {
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double w = test_case.state.delassus_scale;
    const double dt = test_case.time_step;
    const double tau = test_case.parameters.dissipation_time_scale;
    const double expected_normal = std::max(w / (4.0 * std::numbers::pi * std::numbers::pi),
                                            1.0 / (dt * test_case.parameters.stiffness * (dt + tau)));
    EXPECT_DOUBLE_EQ(contact.regularization.x(), 1e-3 * w);
    EXPECT_DOUBLE_EQ(contact.regularization.y(), 1e-3 * w);
    EXPECT_DOUBLE_EQ(contact.regularization.z(), expected_normal);
    EXPECT_DOUBLE_EQ(contact.stabilization_velocity.z(), test_case.state.penetration / (dt + tau));
    EXPECT_EQ(contact.stabilization_velocity.head<2>().norm(), 0.0);
    const double mu = test_case.state.friction_coefficient;
    EXPECT_NEAR(contact.mu_tilde * contact.mu_tilde, mu * contact.mu_hat, 1e-15);
    EXPECT_DOUBLE_EQ(contact.mu_hat, mu * contact.regularization.x() / contact.regularization.z());
    // Lagged-model fields stay zero.
    EXPECT_EQ(contact.time_step, 0.0);
    EXPECT_EQ(contact.lagged_normal_impulse, 0.0);
  }
  // The compliant case really exercises the Kelvin–Voigt branch.
  const SapCase compliant = SapCases()[1];
  const PreparedContact contact = SapFrictionCone(compliant.parameters).Prepare(compliant.state, 1e-3);
  EXPECT_DOUBLE_EQ(contact.regularization.z(), 1.0 / (1e-3 * 1e3 * 3e-3));
}

// γ = −∂ℓ/∂v_c and G = −∂γ/∂v_c against Jet derivatives, in every region.
TEST_F(SapFrictionConeTest, ImpulseAndHessianMatchJetDerivativesInEveryRegion) {
  for (const SapCase& test_case : SapCases()) {
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double impulse_scale = SapImpulseScale(contact);
    const double hessian_scale = SapHessianScale(contact);
    for (SapConeRegion region : {SapConeRegion::kStiction, SapConeRegion::kSliding, SapConeRegion::kNoContact}) {
      if (region == SapConeRegion::kStiction && contact.friction_coefficient == 0.0) continue;
      for (const Vector3& y : UnprojectedInRegion(contact, region, impulse_scale, random_)) {
        const Vector3 velocity = VelocityForUnprojected(contact, y);
        SCOPED_TRACE(test_case.label + " region " + std::to_string(static_cast<int>(region)));
        ASSERT_EQ(ProjectOntoSapCone<double>(contact, velocity).region, region) << "y = " << y.transpose();

        const Vector3 impulse = model.Impulse(contact, velocity);
        const Vector3 cost_gradient = GradientFromJet(SapFrictionConeCost<Jet3>(contact, SeededVelocity(velocity)));
        EXPECT_LE((impulse + cost_gradient).norm(), kDerivativeTolerance * (impulse.norm() + impulse_scale))
            << "γ = " << impulse.transpose() << ", −∇ℓ = " << -cost_gradient.transpose();

        const Matrix3 hessian = model.Hessian(contact, velocity);
        const Matrix3 impulse_jacobian =
            JacobianFromJet(SapFrictionConeImpulse<Jet3>(contact, SeededVelocity(velocity)));
        EXPECT_LE((hessian + impulse_jacobian).norm(), kDerivativeTolerance * (hessian.norm() + hessian_scale))
            << "G =\n"
            << hessian << "\n−∂γ/∂v_c =\n"
            << -impulse_jacobian;

        // The region's closed form (spec §1.3.1 table).
        if (region == SapConeRegion::kStiction) {
          EXPECT_LE((impulse - y).norm(), 1e-14 * y.norm());
          EXPECT_LE((hessian - Matrix3(contact.regularization.cwiseInverse().asDiagonal())).norm(),
                    1e-14 * hessian_scale);
        } else if (region == SapConeRegion::kNoContact) {
          EXPECT_EQ(impulse.norm(), 0.0);
          EXPECT_EQ(hessian.norm(), 0.0);
        } else {
          EXPECT_GT(impulse.z(), 0.0);
        }
      }
    }
  }
}

TEST_F(SapFrictionConeTest, EvaluateAgreesWithCostImpulseAndHessian) {
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    for (SapConeRegion region : {SapConeRegion::kStiction, SapConeRegion::kSliding, SapConeRegion::kNoContact}) {
      for (const Vector3& y : UnprojectedInRegion(contact, region, SapImpulseScale(contact), random_)) {
        const Vector3 velocity = VelocityForUnprojected(contact, y);
        const ContactEvaluation evaluation = model.Evaluate(contact, velocity, true);
        const double cost = model.Cost(contact, velocity);
        EXPECT_NEAR(evaluation.cost, cost, 1e-14 * std::abs(cost));
        EXPECT_EQ(evaluation.impulse, model.Impulse(contact, velocity));
        EXPECT_EQ(evaluation.hessian, model.Hessian(contact, velocity));
        // ℓ = ½ γᵀ R γ.
        EXPECT_NEAR(cost, 0.5 * evaluation.impulse.dot(contact.regularization.cwiseProduct(evaluation.impulse)),
                    1e-14 * std::abs(cost));
        const ContactEvaluation without_hessian = model.Evaluate(contact, velocity, false);
        EXPECT_EQ(without_hessian.impulse, evaluation.impulse);
        EXPECT_EQ(without_hessian.cost, evaluation.cost);
      }
    }
  }
}

// Random unprojected impulses covering all three regions, with y_t from tiny to large.
std::vector<Vector3> RandomUnprojected(const PreparedContact& contact, int count, std::mt19937& random) {
  std::uniform_real_distribution<double> symmetric(-1.0, 1.0);
  std::uniform_real_distribution<double> exponent(-12.0, 1.0);
  const double scale = SapImpulseScale(contact);
  std::vector<Vector3> result;
  for (int i = 0; i < count; ++i) {
    const double tangential_magnitude = scale * std::pow(10.0, exponent(random));
    const Eigen::Vector2d direction = Eigen::Vector2d(symmetric(random), symmetric(random)).normalized();
    result.emplace_back(tangential_magnitude * direction.x(), tangential_magnitude * direction.y(),
                        2.0 * scale * symmetric(random));
  }
  return result;
}

TEST_F(SapFrictionConeTest, HessianIsSymmetricPositiveSemidefinite) {
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double scale = SapHessianScale(contact);
    int regions_seen[3] = {0, 0, 0};
    for (const Vector3& y : RandomUnprojected(contact, 3000, random_)) {
      const Vector3 velocity = VelocityForUnprojected(contact, y);
      ++regions_seen[static_cast<int>(ProjectOntoSapCone<double>(contact, velocity).region)];
      const Matrix3 hessian = model.Hessian(contact, velocity);
      ASSERT_LE((hessian - hessian.transpose()).norm(), 1e-14 * scale);
      const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(hessian);
      ASSERT_GE(eigen.eigenvalues().minCoeff(), -1e-12 * scale) << "G =\n" << hessian;
    }
    // The sample visits every region (stiction only exists with friction).
    if (contact.friction_coefficient > 0.0) {
      EXPECT_GT(regions_seen[0], 0);
    }
    EXPECT_GT(regions_seen[1], 0);
    EXPECT_GT(regions_seen[2], 0);
  }
}

TEST_F(SapFrictionConeTest, ImpulseIsContinuousAcrossRegionBoundaries) {
  std::uniform_real_distribution<double> angle(0.0, 2.0 * std::numbers::pi);
  std::uniform_real_distribution<double> unit(0.2, 1.0);
  constexpr double kOffset = 1e-9;
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double mu = contact.friction_coefficient;
    for (int sample = 0; sample < 50; ++sample) {
      const double theta = angle(random_);
      const Eigen::Vector2d direction(std::cos(theta), std::sin(theta));
      const double radius = SapImpulseScale(contact) * unit(random_);
      // Boundaries in y: the cone y_r = μ y_n and the polar cone y_n = −μ̂ y_r.
      std::vector<std::pair<double, std::pair<SapConeRegion, SapConeRegion>>> boundaries = {
          {-contact.mu_hat * radius, {SapConeRegion::kSliding, SapConeRegion::kNoContact}}};
      if (mu > 0.0) boundaries.push_back({radius / mu, {SapConeRegion::kStiction, SapConeRegion::kSliding}});
      for (const auto& [normal, sides] : boundaries) {
        const double step = kOffset * radius;
        const Vector3 above(radius * direction.x(), radius * direction.y(), normal + step);
        const Vector3 below(radius * direction.x(), radius * direction.y(), normal - step);
        const Vector3 velocity_above = VelocityForUnprojected(contact, above);
        const Vector3 velocity_below = VelocityForUnprojected(contact, below);
        // The two points really sit on the two sides of the boundary.
        ASSERT_EQ(ProjectOntoSapCone<double>(contact, velocity_above).region, sides.first);
        ASSERT_EQ(ProjectOntoSapCone<double>(contact, velocity_below).region, sides.second);
        const Vector3 jump = model.Impulse(contact, velocity_above) - model.Impulse(contact, velocity_below);
        // P is Lipschitz (a projection): the jump is of the order of the offset.
        EXPECT_LE(jump.norm(), 10.0 * (1.0 + mu) * (2.0 * step)) << "boundary y_n = " << normal;
      }
    }
  }
}

TEST_F(SapFrictionConeTest, ImpulseRespectsTheCoulombCone) {
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double mu = contact.friction_coefficient;
    for (const Vector3& y : RandomUnprojected(contact, 3000, random_)) {
      const Vector3 impulse = model.Impulse(contact, VelocityForUnprojected(contact, y));
      ASSERT_GE(impulse.z(), 0.0);
      ASSERT_LE(impulse.head<2>().norm(), mu * impulse.z() * (1.0 + 1e-14)) << impulse.transpose();
    }
  }
}

// γ is the projection of y onto F in the R norm: γ ∈ F, (y − γ)ᵀRγ = 0 and
// (y − γ)ᵀR z ≤ 0 for every z ∈ F (the optimality conditions of the projection onto a cone).
TEST_F(SapFrictionConeTest, ImpulseIsTheProjectionInTheRegularizationNorm) {
  std::uniform_real_distribution<double> symmetric(-1.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double mu = contact.friction_coefficient;
    const Vector3& regularization = contact.regularization;
    for (const Vector3& y : RandomUnprojected(contact, 300, random_)) {
      const Vector3 impulse = model.Impulse(contact, VelocityForUnprojected(contact, y));
      const Vector3 residual = y - impulse;
      const double scale = y.dot(regularization.cwiseProduct(y));
      EXPECT_LE(std::abs(residual.dot(regularization.cwiseProduct(impulse))), 1e-12 * scale);
      for (int k = 0; k < 20; ++k) {
        const double normal = unit(random_) * y.norm();
        const Eigen::Vector2d tangent = Eigen::Vector2d(symmetric(random_), symmetric(random_)).normalized();
        const Vector3 feasible(mu * normal * unit(random_) * tangent.x(), mu * normal * unit(random_) * tangent.y(),
                               normal);
        EXPECT_LE(residual.dot(regularization.cwiseProduct(feasible)), 1e-12 * scale);
      }
    }
  }
}

TEST_F(SapFrictionConeTest, CostIsConvexAlongRandomLines) {
  std::uniform_real_distribution<double> fraction(0.0, 1.0);
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const std::vector<Vector3> ends = RandomUnprojected(contact, 1000, random_);
    for (std::size_t i = 0; i + 1 < ends.size(); i += 2) {
      const Vector3 a = VelocityForUnprojected(contact, ends[i]);
      const Vector3 b = VelocityForUnprojected(contact, ends[i + 1]);
      const double cost_a = model.Cost(contact, a);
      const double cost_b = model.Cost(contact, b);
      const double t = fraction(random_);
      const double cost_between = model.Cost(contact, (1.0 - t) * a + t * b);
      ASSERT_LE(cost_between, (1.0 - t) * cost_a + t * cost_b + 1e-12 * (cost_a + cost_b) + 1e-300);
    }
  }
}

TEST_F(SapFrictionConeTest, RestingContactPushesOutAndSeparatingContactIsFree) {
  for (const SapCase& test_case : SapCases()) {
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    // Penetrating and at rest: repulsive impulse along the outward normal of the rigid body.
    const Vector3 resting = model.Impulse(contact, Vector3::Zero());
    EXPECT_GT(resting.z(), 0.0);
    // Separating fast (v_n ≫ v̂_n), with any slip: no impulse.
    const double fast = 100.0 * contact.stabilization_velocity.z();
    for (const Vector3& velocity : {Vector3(0.0, 0.0, fast), Vector3(0.3 * fast, -0.2 * fast, fast)}) {
      EXPECT_EQ(model.Impulse(contact, velocity).norm(), 0.0);
      EXPECT_EQ(model.Cost(contact, velocity), 0.0);
    }
    // Approaching: a larger push than at rest.
    EXPECT_GT(model.Impulse(contact, Vector3(0.0, 0.0, -0.1)).z(), resting.z());
  }
}

TEST_F(SapFrictionConeTest, StictionImpulseAtRestIsTheStabilizationImpulse) {
  for (const SapCase& test_case : SapCases()) {
    if (test_case.state.friction_coefficient == 0.0) continue;
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    ASSERT_EQ(ProjectOntoSapCone<double>(contact, Vector3::Zero()).region, SapConeRegion::kStiction);
    const Vector3 impulse = model.Impulse(contact, Vector3::Zero());
    const double relaxation_time = test_case.time_step + test_case.parameters.dissipation_time_scale;
    const double expected = test_case.state.penetration / (relaxation_time * contact.regularization.z());
    EXPECT_NEAR(impulse.z(), expected, 1e-14 * expected);
    EXPECT_EQ(impulse.head<2>().norm(), 0.0);
    EXPECT_LE((impulse - contact.regularization.cwiseInverse().cwiseProduct(contact.stabilization_velocity)).norm(),
              1e-14 * expected);
  }
}

// v_c = v̂ − R γ* gives y = γ*, which the projection keeps when it is strictly inside F.
TEST_F(SapFrictionConeTest, VelocityOfAnImpulseInsideTheConeReturnsThatImpulse) {
  std::uniform_real_distribution<double> unit(0.0, 0.95);
  std::uniform_real_distribution<double> angle(0.0, 2.0 * std::numbers::pi);
  for (const SapCase& test_case : SapCases()) {
    if (test_case.state.friction_coefficient == 0.0) continue;
    SCOPED_TRACE(test_case.label);
    const SapFrictionCone model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    for (int sample = 0; sample < 200; ++sample) {
      const double normal = SapImpulseScale(contact) * (0.01 + 3.0 * unit(random_));
      const double slip_fraction = unit(random_);
      const double theta = angle(random_);
      const Vector3 target(contact.friction_coefficient * normal * slip_fraction * std::cos(theta),
                           contact.friction_coefficient * normal * slip_fraction * std::sin(theta), normal);
      const Vector3 velocity = contact.stabilization_velocity - contact.regularization.cwiseProduct(target);
      const Vector3 impulse = model.Impulse(contact, velocity);
      EXPECT_LE((impulse - target).norm(), 1e-12 * target.norm())
          << impulse.transpose() << " vs " << target.transpose();
    }
  }
}

// ---------------------------------------------------------------------------------------
// Lagged Hunt–Crossley.

struct LaggedCase {
  std::string label;
  ContactModelParameters parameters;
  ContactPointState state;
  double time_step = 1e-3;
};

ContactModelParameters LaggedParameters(double stiffness, double dissipation) {
  ContactModelParameters parameters;
  parameters.model = ContactModelKind::kLagged;
  parameters.stiffness = stiffness;
  parameters.hunt_crossley_dissipation = dissipation;
  return parameters;
}

std::vector<LaggedCase> LaggedCases() {
  return {
      // v̂ = x₀/δt = 0.05 < 1/d = 0.1.
      {"penetration_limited", LaggedParameters(4e4, 10.0), State(5e-5, -0.05, 0.5, 1e3), 1e-3},
      // v̂ = 1/d = 0.1 < x₀/δt = 0.2.
      {"dissipation_limited", LaggedParameters(4e4, 10.0), State(2e-4, 0.02, 0.8, 1e3), 1e-3},
      // d = 0: v̂ = x₀/δt.
      {"undamped", LaggedParameters(4e4, 0.0), State(1e-4, 0.3, 0.5, 1e3), 1e-3},
      // Stiff substep contact where μ σ w n₀ exceeds v_s.
      {"large_soft_tolerance", LaggedParameters(5e6, 50.0), State(1e-5, 0.0, 1.0, 8e4), 1e-4},
  };
}

double LaggedImpulseScale(const PreparedContact& contact) {
  return contact.time_step * contact.elastic_force + contact.lagged_normal_impulse;
}
double LaggedHessianScale(const PreparedContact& contact) {
  return contact.friction_coefficient * contact.lagged_normal_impulse / contact.soft_norm_tolerance +
         contact.time_step * (contact.stiffness * contact.time_step + contact.dissipation * contact.elastic_force);
}

// Normal velocities below 0, between 0 and v̂, and above v̂, each with no, small and large slip.
std::vector<Vector3> LaggedRegionVelocities(const PreparedContact& contact) {
  const double limit = contact.max_normal_velocity;
  const double tolerance = contact.soft_norm_tolerance;
  std::vector<Vector3> result;
  for (double normal : {-1.7 * limit, -0.3 * limit, 0.4 * limit, 0.9 * limit, 1.3 * limit, 5.0 * limit}) {
    for (const Eigen::Vector2d& slip :
         {Eigen::Vector2d(0.0, 0.0), Eigen::Vector2d(0.3 * tolerance, -0.2 * tolerance), Eigen::Vector2d(-0.4, 0.25)}) {
      result.emplace_back(slip.x(), slip.y(), normal);
    }
  }
  return result;
}

class LaggedHuntCrossleyTest : public ::testing::Test {
 protected:
  LaggedHuntCrossleyTest() : random_(7771) {}
  std::mt19937 random_;
};

TEST_F(LaggedHuntCrossleyTest, PrepareFollowsTheLaggedFormulas) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double dt = test_case.time_step;
    const double k = test_case.parameters.stiffness;
    const double d = test_case.parameters.hunt_crossley_dissipation;
    const double x0 = test_case.state.penetration;
    const double mu = test_case.state.friction_coefficient;
    EXPECT_DOUBLE_EQ(contact.elastic_force, k * x0);
    EXPECT_DOUBLE_EQ(contact.lagged_normal_impulse,
                     dt * k * x0 * std::max(0.0, 1.0 - d * test_case.state.previous_normal_velocity));
    EXPECT_DOUBLE_EQ(contact.max_normal_velocity, d > 0.0 ? std::min(x0 / dt, 1.0 / d) : x0 / dt);
    EXPECT_DOUBLE_EQ(contact.soft_norm_tolerance,
                     std::max(1e-3, mu * 1e-3 * test_case.state.delassus_scale * contact.lagged_normal_impulse));
    EXPECT_EQ(contact.time_step, dt);
    EXPECT_EQ(contact.friction_coefficient, mu);
    // SAP fields stay zero.
    EXPECT_EQ(contact.regularization.norm(), 0.0);
    EXPECT_EQ(contact.mu_hat, 0.0);
  }
  // The cases cover both v̂ branches and both ε_s branches.
  const std::vector<LaggedCase> cases = LaggedCases();
  const auto prepare = [](const LaggedCase& c) {
    return LaggedHuntCrossley(c.parameters).Prepare(c.state, c.time_step);
  };
  EXPECT_DOUBLE_EQ(prepare(cases[0]).max_normal_velocity, 0.05);
  EXPECT_DOUBLE_EQ(prepare(cases[1]).max_normal_velocity, 0.1);
  EXPECT_GT(prepare(cases[3]).soft_norm_tolerance, 1e-3);
  // Separating fast at the start of the step: no lagged normal impulse, hence no friction.
  LaggedCase separating = cases[0];
  separating.state.previous_normal_velocity = 1.0;
  EXPECT_EQ(prepare(separating).lagged_normal_impulse, 0.0);
}

TEST_F(LaggedHuntCrossleyTest, ImpulseAndHessianMatchJetDerivativesInEveryRegion) {
  for (const LaggedCase& test_case : LaggedCases()) {
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double impulse_scale = LaggedImpulseScale(contact);
    const double hessian_scale = LaggedHessianScale(contact);
    for (const Vector3& velocity : LaggedRegionVelocities(contact)) {
      SCOPED_TRACE(test_case.label);
      SCOPED_TRACE(::testing::Message() << "v_c = " << velocity.transpose());
      const Vector3 impulse = model.Impulse(contact, velocity);
      const Vector3 cost_gradient = GradientFromJet(LaggedHuntCrossleyCost<Jet3>(contact, SeededVelocity(velocity)));
      EXPECT_LE((impulse + cost_gradient).norm(), kDerivativeTolerance * (impulse.norm() + impulse_scale))
          << "γ = " << impulse.transpose() << ", −∇ℓ = " << -cost_gradient.transpose();

      const Matrix3 hessian = model.Hessian(contact, velocity);
      const Matrix3 impulse_jacobian =
          JacobianFromJet(LaggedHuntCrossleyImpulse<Jet3>(contact, SeededVelocity(velocity)));
      EXPECT_LE((hessian + impulse_jacobian).norm(), kDerivativeTolerance * (hessian.norm() + hessian_scale))
          << "G =\n"
          << hessian << "\n−∂γ/∂v_c =\n"
          << -impulse_jacobian;

      // Closed forms of the normal impulse on either side of v̂.
      const double v = velocity.z();
      if (v < contact.max_normal_velocity) {
        const double expected = contact.time_step *
                                (contact.elastic_force - contact.time_step * contact.stiffness * v) *
                                (1.0 - contact.dissipation * v);
        EXPECT_NEAR(impulse.z(), expected, 1e-14 * impulse_scale);
        EXPECT_GT(impulse.z(), 0.0);
        EXPECT_GT(hessian(2, 2), 0.0);
      } else {
        EXPECT_EQ(impulse.z(), 0.0);
        EXPECT_EQ(hessian(2, 2), 0.0);
      }
    }
  }
}

TEST_F(LaggedHuntCrossleyTest, EvaluateAgreesWithCostImpulseAndHessian) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    for (const Vector3& velocity : LaggedRegionVelocities(contact)) {
      const ContactEvaluation evaluation = model.Evaluate(contact, velocity, true);
      EXPECT_EQ(evaluation.cost, model.Cost(contact, velocity));
      EXPECT_EQ(evaluation.impulse, model.Impulse(contact, velocity));
      EXPECT_EQ(evaluation.hessian, model.Hessian(contact, velocity));
      const ContactEvaluation without_hessian = model.Evaluate(contact, velocity, false);
      EXPECT_EQ(without_hessian.cost, evaluation.cost);
      EXPECT_EQ(without_hessian.impulse, evaluation.impulse);
    }
  }
}

TEST_F(LaggedHuntCrossleyTest, LineTermsInClosedFormMatchTheOnesFromTheHessian) {
  // The override forms −Δv_cᵀγ and Δv_cᵀGΔv_c without G; the base class derives them from
  // Evaluate. Same values up to round-off in every region, along random directions.
  std::uniform_real_distribution<double> symmetric(-1.0, 1.0);
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    for (const Vector3& velocity : LaggedRegionVelocities(contact)) {
      const Vector3 direction(symmetric(random_), symmetric(random_), symmetric(random_));
      const LineTerms closed_form = model.EvaluateAlong(contact, velocity, direction);
      const LineTerms from_hessian = model.ContactModel::EvaluateAlong(contact, velocity, direction);
      EXPECT_EQ(closed_form.cost, from_hessian.cost);
      const double slope_scale = direction.norm() * LaggedImpulseScale(contact);
      const double curvature_scale = direction.squaredNorm() * LaggedHessianScale(contact);
      EXPECT_NEAR(closed_form.slope, from_hessian.slope, 1e-13 * slope_scale);
      EXPECT_NEAR(closed_form.curvature, from_hessian.curvature, 1e-13 * curvature_scale);
      EXPECT_GE(closed_form.curvature, -1e-13 * curvature_scale);  // G is PSD
    }
  }
}

// Random velocities: normal in [−3v̂, 3v̂], slip from far below to far above ε_s.
std::vector<Vector3> RandomLaggedVelocities(const PreparedContact& contact, int count, std::mt19937& random) {
  std::uniform_real_distribution<double> symmetric(-1.0, 1.0);
  std::uniform_real_distribution<double> exponent(-6.0, 3.0);
  std::vector<Vector3> result;
  for (int i = 0; i < count; ++i) {
    const double slip = contact.soft_norm_tolerance * std::pow(10.0, exponent(random));
    const Eigen::Vector2d direction = Eigen::Vector2d(symmetric(random), symmetric(random)).normalized();
    result.emplace_back(slip * direction.x(), slip * direction.y(),
                        3.0 * contact.max_normal_velocity * symmetric(random));
  }
  return result;
}

TEST_F(LaggedHuntCrossleyTest, HessianIsSymmetricPositiveSemidefinite) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double scale = LaggedHessianScale(contact);
    for (const Vector3& velocity : RandomLaggedVelocities(contact, 3000, random_)) {
      const Matrix3 hessian = model.Hessian(contact, velocity);
      ASSERT_LE((hessian - hessian.transpose()).norm(), 1e-14 * scale);
      const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(hessian);
      ASSERT_GE(eigen.eigenvalues().minCoeff(), -1e-12 * scale) << "G =\n" << hessian;
    }
  }
}

TEST_F(LaggedHuntCrossleyTest, ImpulseAndCostAreContinuousAtTheMaximumNormalVelocity) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double limit = contact.max_normal_velocity;
    const double offset = 1e-9 * limit;
    for (const Eigen::Vector2d& slip : {Eigen::Vector2d(0.0, 0.0), Eigen::Vector2d(0.01, -0.02)}) {
      const Vector3 below(slip.x(), slip.y(), limit - offset);
      const Vector3 above(slip.x(), slip.y(), limit + offset);
      const Vector3 impulse_below = model.Impulse(contact, below);
      const Vector3 impulse_above = model.Impulse(contact, above);
      EXPECT_GT(impulse_below.z(), 0.0);
      EXPECT_EQ(impulse_above.z(), 0.0);
      // |n(v̂ − δ)| ≤ |n'| δ.
      EXPECT_LE((impulse_below - impulse_above).norm(), 2.0 * LaggedHessianScale(contact) * offset);
      EXPECT_NEAR(model.Cost(contact, below), model.Cost(contact, above), 1e-12 * LaggedImpulseScale(contact) * limit);
      // Above v̂ the normal cost is the constant −N(v̂).
      const Vector3 far_above(slip.x(), slip.y(), 10.0 * limit);
      EXPECT_NEAR(model.Cost(contact, far_above), model.Cost(contact, above),
                  1e-15 * LaggedImpulseScale(contact) * limit);
    }
  }
}

TEST_F(LaggedHuntCrossleyTest, FrictionIsBoundedByTheLaggedNormalImpulse) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const double bound = contact.friction_coefficient * contact.lagged_normal_impulse;
    ASSERT_GT(bound, 0.0);
    double largest = 0.0;
    for (const Vector3& velocity : RandomLaggedVelocities(contact, 3000, random_)) {
      const Vector3 impulse = model.Impulse(contact, velocity);
      ASSERT_GE(impulse.z(), 0.0);
      ASSERT_LE(impulse.head<2>().norm(), bound) << velocity.transpose();
      // Friction opposes slip.
      ASSERT_LE(impulse.head<2>().dot(velocity.head<2>()), 0.0);
      largest = std::max(largest, impulse.head<2>().norm());
    }
    // Fast slip saturates near the bound.
    EXPECT_GT(largest, 0.99 * bound);
  }
}

// friction_bound = carried rebases n₀ on an impulse found by the caller: the bound becomes
// μ n, ε_s follows it (max(v_s, μ σ w n)), the normal part is untouched, and the rebased
// contact is still the gradient of its cost.
TEST_F(LaggedHuntCrossleyTest, RebasedFrictionBoundIsTheGivenImpulse) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact prepared = model.Prepare(test_case.state, test_case.time_step);
    const double mu = test_case.state.friction_coefficient;
    for (const double factor : {0.0, 0.3, 40.0}) {
      PreparedContact contact = prepared;
      const double normal_impulse = factor * prepared.lagged_normal_impulse;
      model.SetFrictionNormalImpulse(contact, normal_impulse);
      EXPECT_EQ(contact.lagged_normal_impulse, normal_impulse);
      EXPECT_DOUBLE_EQ(contact.soft_norm_tolerance,
                       std::max(1e-3, mu * 1e-3 * test_case.state.delassus_scale * normal_impulse));
      // Slip a thousand times ε_s: the soft norm's direction is saturated to 5e-7.
      const double slip = 1e3 * contact.soft_norm_tolerance;
      const Vector3 fast_slip(0.6 * slip, -0.8 * slip, 0.2 * contact.max_normal_velocity);
      EXPECT_NEAR(model.Impulse(contact, fast_slip).head<2>().norm(), mu * normal_impulse,
                  1e-3 * mu * normal_impulse + 1e-300);
      EXPECT_EQ(model.Impulse(contact, fast_slip).z(), model.Impulse(prepared, fast_slip).z());
      for (const Vector3& velocity : LaggedRegionVelocities(contact)) {
        using Jet = ceres::Jet<double, 3>;
        const Eigen::Matrix<Jet, 3, 1> jet_velocity(Jet(velocity.x(), 0), Jet(velocity.y(), 1), Jet(velocity.z(), 2));
        const Jet cost = LaggedHuntCrossleyCost<Jet>(contact, jet_velocity);
        const Vector3 impulse = model.Impulse(contact, velocity);
        EXPECT_LE((impulse + cost.v).norm(), 1e-9 * (LaggedImpulseScale(contact) + mu * normal_impulse) + 1e-300)
            << velocity.transpose();
      }
    }
    // A negative impulse (round-off of a separating contact) is no bound at all.
    PreparedContact contact = prepared;
    model.SetFrictionNormalImpulse(contact, -1e-12);
    EXPECT_EQ(contact.lagged_normal_impulse, 0.0);
  }
}

TEST_F(LaggedHuntCrossleyTest, CostIsConvexAlongRandomLines) {
  std::uniform_real_distribution<double> fraction(0.0, 1.0);
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const std::vector<Vector3> ends = RandomLaggedVelocities(contact, 2000, random_);
    const double cost_scale = LaggedImpulseScale(contact) * contact.max_normal_velocity;
    for (std::size_t i = 0; i + 1 < ends.size(); i += 2) {
      const double cost_a = model.Cost(contact, ends[i]);
      const double cost_b = model.Cost(contact, ends[i + 1]);
      const double t = fraction(random_);
      const double cost_between = model.Cost(contact, (1.0 - t) * ends[i] + t * ends[i + 1]);
      ASSERT_LE(cost_between,
                (1.0 - t) * cost_a + t * cost_b + 1e-12 * (std::abs(cost_a) + std::abs(cost_b) + cost_scale));
    }
  }
}

TEST_F(LaggedHuntCrossleyTest, RestingContactPushesOutAndSeparatingContactIsFree) {
  for (const LaggedCase& test_case : LaggedCases()) {
    SCOPED_TRACE(test_case.label);
    const LaggedHuntCrossley model(test_case.parameters);
    const PreparedContact contact = model.Prepare(test_case.state, test_case.time_step);
    const Vector3 resting = model.Impulse(contact, Vector3::Zero());
    EXPECT_DOUBLE_EQ(resting.z(), test_case.time_step * contact.elastic_force);  // n(0) = δt k x₀
    EXPECT_GT(resting.z(), 0.0);
    EXPECT_EQ(resting.head<2>().norm(), 0.0);
    EXPECT_EQ(model.Impulse(contact, Vector3(0.0, 0.0, 10.0 * contact.max_normal_velocity + 1.0)).norm(), 0.0);
    EXPECT_GT(model.Impulse(contact, Vector3(0.0, 0.0, -0.1)).z(), resting.z());
  }
}

// ---------------------------------------------------------------------------------------
// Parameters and the factory.

TEST(ContactModelParameters, SpecsCarryThePrefixUnitsAndDescriptions) {
  const std::vector<ParameterSpec> specs = ContactModelParameters::Specs();
  ASSERT_EQ(specs.size(), 7u);
  for (const ParameterSpec& spec : specs) {
    EXPECT_EQ(spec.key.rfind("contact.", 0), 0u) << spec.key;
    EXPECT_FALSE(spec.description.empty()) << spec.key;
    EXPECT_TRUE(spec.check) << spec.key;
    if (std::holds_alternative<double>(spec.default_value)) {
      EXPECT_FALSE(spec.unit.empty()) << spec.key;
    }
  }
}

TEST(ContactModelParameters, RoundTripThroughAParameterSet) {
  ParameterSet parameters;
  parameters.Declare(ContactModelParameters::Specs());
  parameters.Validate();
  const ContactModelParameters defaults = ContactModelParameters::FromParameters(parameters);
  const ContactModelParameters expected;
  EXPECT_EQ(defaults.model, expected.model);
  EXPECT_EQ(defaults.stiffness, expected.stiffness);
  EXPECT_EQ(defaults.friction_regularization, expected.friction_regularization);

  parameters.SetFromText("contact.model", "lagged", "test");
  parameters.SetFromText("contact.stiffness", "2.5e4", "test");
  parameters.SetFromText("contact.dissipation_time_scale", "0.002", "test");
  parameters.SetFromText("contact.hunt_crossley_dissipation", "20", "test");
  parameters.SetFromText("contact.near_rigid_threshold", "2", "test");
  parameters.SetFromText("contact.friction_regularization", "0.01", "test");
  parameters.SetFromText("contact.stiction_tolerance", "1e-4", "test");
  parameters.Validate();
  const ContactModelParameters read = ContactModelParameters::FromParameters(parameters);
  EXPECT_EQ(read.model, ContactModelKind::kLagged);
  EXPECT_EQ(read.stiffness, 2.5e4);
  EXPECT_EQ(read.dissipation_time_scale, 0.002);
  EXPECT_EQ(read.hunt_crossley_dissipation, 20.0);
  EXPECT_EQ(read.near_rigid_threshold, 2.0);
  EXPECT_EQ(read.friction_regularization, 0.01);
  EXPECT_EQ(read.stiction_tolerance, 1e-4);

  parameters.SetFromText("contact.model", "similar", "test");
  try {
    parameters.Validate();
    ADD_FAILURE() << "an unknown model validated";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("contact.model"), std::string::npos) << error.what();
  }
  parameters.SetFromText("contact.model", "sap_cone", "test");
  parameters.SetFromText("contact.stiffness", "-1", "test");
  EXPECT_THROW(parameters.Validate(), InputError);
}

TEST(MakeContactModel, BuildsEachModelAndRejectsUnknownNames) {
  ContactModelParameters parameters;
  // Every name of the table builds the model of that name.
  for (const auto& [name, kind] : ContactModelNames()) {
    parameters.model = kind;
    EXPECT_EQ(MakeContactModel(parameters)->name(), name);
  }

  ParameterSet set;
  set.Declare(ContactModelParameters::Specs());
  set.SetFromText("contact.model", "lagged", "test");
  EXPECT_EQ(ContactModelParameters::FromParameters(set).model, ContactModelKind::kLagged);
  try {
    set.SetFromText("contact.model", "hunt_crossley", "test");
    set.Validate();
    ContactModelParameters::FromParameters(set);
    ADD_FAILURE() << "an unknown model was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("contact.model"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("hunt_crossley"), std::string::npos) << error.what();
  }

  parameters.model = ContactModelKind::kSapCone;
  parameters.friction_regularization = 0.0;
  try {
    MakeContactModel(parameters);
    ADD_FAILURE() << "σ = 0 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("contact.friction_regularization"), std::string::npos);
  }
}

// The factory's models behave like the directly built ones.
TEST(MakeContactModel, FactoryModelsMatchDirectConstruction) {
  ContactModelParameters parameters;
  const ContactPointState state = State(1e-4, -0.1, 0.6, 200.0);
  const Vector3 velocity(0.02, -0.01, -0.05);
  for (const auto& [name, kind] : ContactModelNames()) {
    parameters.model = kind;
    const std::unique_ptr<ContactModel> model = MakeContactModel(parameters);
    const PreparedContact contact = model->Prepare(state, 1e-3);
    Vector3 direct;
    if (kind == ContactModelKind::kSapCone) {
      direct = SapFrictionCone(parameters).Impulse(SapFrictionCone(parameters).Prepare(state, 1e-3), velocity);
    } else {
      direct = LaggedHuntCrossley(parameters).Impulse(LaggedHuntCrossley(parameters).Prepare(state, 1e-3), velocity);
    }
    EXPECT_EQ(model->Impulse(contact, velocity), direct) << name;
    EXPECT_GT(direct.z(), 0.0) << name;
  }
}

}  // namespace
}  // namespace contactlab::contact
