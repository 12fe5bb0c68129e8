#pragma once
// SAP's regularized friction cone ("sap_cone", spec-sap-qn §1.3.1–1.3.2, Castro et al. 2022).
// With the unprojected impulse y = −R⁻¹(v_c − v̂), the impulse is γ = P_F(y), the projection
// of y onto the Coulomb cone F = {‖γ_t‖ ≤ μ γ_n} in the norm ‖x‖²_R = xᵀ R x, and the cost is
// ℓ_c = ½ γᵀ R γ. The projection is piecewise analytic (stiction / sliding / no contact).
//
// The templated functions below are the core math; the class evaluates them in double and
// adds the Hessian. Tests differentiate the templates with ceres::Jet.
#include <cmath>
#include <string_view>

#include <Eigen/Core>

#include "formulations/contact/contact_model.h"

namespace contactlab::contact {

// Piece of the projection's domain (spec §1.3.1 table).
enum class SapConeRegion { kStiction, kSliding, kNoContact };

// Velocity [m/s] inside the soft norm of the tangential unprojected impulse: y_r =
// √(‖y_t‖² + (ε/R_t)²). It only keeps t̂ = y_t / y_r finite at y_t = 0 (spec §1.3.1) and is
// far below any slip the solver resolves.
inline constexpr double kSapSoftNormVelocity = 1.0e-14;

// The projection of y for one contact velocity, with what the Hessian needs.
template <typename T>
struct SapConeProjection {
  SapConeRegion region = SapConeRegion::kNoContact;
  Eigen::Matrix<T, 3, 1> unprojected;  // y [N s]
  T tangential_norm;                   // soft y_r [N s]
  Eigen::Matrix<T, 3, 1> impulse;      // γ = P_F(y) [N s]
};

// y = −R⁻¹(v_c − v̂) and its projection onto the friction cone (spec §1.3.1 table).
template <typename T>
SapConeProjection<T> ProjectOntoSapCone(const PreparedContact& contact,
                                        const Eigen::Matrix<T, 3, 1>& contact_velocity) {
  using std::sqrt;
  SapConeProjection<T> result;
  for (int i = 0; i < 3; ++i) {
    result.unprojected(i) =
        -(contact_velocity(i) - T(contact.stabilization_velocity(i))) / T(contact.regularization(i));
  }
  const Eigen::Matrix<T, 2, 1> tangential = result.unprojected.template head<2>();
  const T normal = result.unprojected(2);
  const double soft_tolerance = kSapSoftNormVelocity / contact.regularization(0);
  result.tangential_norm = sqrt(tangential.squaredNorm() + T(soft_tolerance * soft_tolerance));
  const T& tangential_norm = result.tangential_norm;
  const double mu = contact.friction_coefficient;

  if (tangential_norm <= mu * normal) {
    // Inside the cone: y is already feasible.
    result.region = SapConeRegion::kStiction;
    result.impulse = result.unprojected;
  } else if (normal <= -contact.mu_hat * tangential_norm) {
    // Inside the polar cone (in the R metric): the projection is the apex.
    result.region = SapConeRegion::kNoContact;
    result.impulse.setConstant(T(0.0));
  } else {
    // Onto the cone's surface: γ_n = (y_n + μ̂ y_r)/(1 + μ̃²), γ_t = μ γ_n t̂.
    result.region = SapConeRegion::kSliding;
    const T normal_impulse = (normal + contact.mu_hat * tangential_norm) / (1.0 + contact.mu_tilde * contact.mu_tilde);
    result.impulse.template head<2>() = (mu * normal_impulse / tangential_norm) * tangential;
    result.impulse(2) = normal_impulse;
  }
  return result;
}

// γ(v_c) [N s] (spec §1.3.1).
template <typename T>
Eigen::Matrix<T, 3, 1> SapFrictionConeImpulse(const PreparedContact& contact,
                                              const Eigen::Matrix<T, 3, 1>& contact_velocity) {
  return ProjectOntoSapCone(contact, contact_velocity).impulse;
}

// ℓ_c(v_c) = ½ γᵀ R γ [J] (spec §1.3.1); its gradient is −γ.
template <typename T>
T SapFrictionConeCost(const PreparedContact& contact, const Eigen::Matrix<T, 3, 1>& contact_velocity) {
  const Eigen::Matrix<T, 3, 1> impulse = SapFrictionConeImpulse(contact, contact_velocity);
  T cost(0.0);
  for (int i = 0; i < 3; ++i) cost += 0.5 * contact.regularization(i) * impulse(i) * impulse(i);
  return cost;
}

class SapFrictionCone final : public ContactModel {
 public:
  explicit SapFrictionCone(const ContactModelParameters& parameters);
  std::string_view name() const override { return "sap_cone"; }
  PreparedContact Prepare(const ContactPointState& state, double time_step) const override;
  double Cost(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  Vector3 Impulse(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  Matrix3 Hessian(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  ContactEvaluation Evaluate(const PreparedContact& contact, const Vector3& contact_velocity,
                             bool with_hessian) const override;

 private:
  double stiffness_;                // k [N/m]
  double dissipation_time_scale_;   // τ_d [s]
  double near_rigid_threshold_;     // β [-]
  double friction_regularization_;  // σ [-]
};

}  // namespace contactlab::contact
