#include "formulations/contact/sap_friction_cone.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace contactlab::contact {
namespace {

// G = (∂P/∂y) R⁻¹ for one projection (spec §1.3.1 table), written in its symmetric form.
// With D = ∂γ_n/∂y_n = 1/(1 + μ̃²) (normal_gain), t̂ = y_t / y_r (soft) and μ̂/R_t = μ/R_n:
//   G_tt = μ γ_n /(y_r R_t) (I − t̂t̂ᵀ) + μ² D/R_n t̂t̂ᵀ,  G_tn = G_ntᵀ = μ D/R_n t̂,  G_nn = D/R_n.
// This is the exact derivative of the soft-norm formulas of ProjectOntoSapCone.
Matrix3 SapConeHessian(const PreparedContact& contact, const SapConeProjection<double>& projection) {
  const Vector3& regularization = contact.regularization;
  Matrix3 hessian = Matrix3::Zero();
  switch (projection.region) {
    case SapConeRegion::kNoContact:
      break;
    case SapConeRegion::kStiction:
      hessian.diagonal() = regularization.cwiseInverse();
      break;
    case SapConeRegion::kSliding: {
      const double mu = contact.friction_coefficient;
      const double tangential_norm = projection.tangential_norm;
      const double normal_impulse = projection.impulse(2);
      const double inverse_normal_regularization = 1.0 / regularization(2);
      const double normal_gain = 1.0 / (1.0 + contact.mu_tilde * contact.mu_tilde);
      const Eigen::Vector2d direction = projection.unprojected.head<2>() / tangential_norm;
      const Eigen::Matrix2d along = direction * direction.transpose();
      const Eigen::Matrix2d across = Eigen::Matrix2d::Identity() - along;
      hessian.topLeftCorner<2, 2>() = (mu * normal_impulse / (tangential_norm * regularization(0))) * across +
                                      (mu * mu * normal_gain * inverse_normal_regularization) * along;
      const Eigen::Vector2d coupling = (mu * normal_gain * inverse_normal_regularization) * direction;
      hessian.topRightCorner<2, 1>() = coupling;
      hessian.bottomLeftCorner<1, 2>() = coupling.transpose();
      hessian(2, 2) = normal_gain * inverse_normal_regularization;
      break;
    }
  }
  return hessian;
}

}  // namespace

SapFrictionCone::SapFrictionCone(const ContactModelParameters& parameters)
    : stiffness_(parameters.stiffness),
      dissipation_time_scale_(parameters.dissipation_time_scale),
      near_rigid_threshold_(parameters.near_rigid_threshold),
      friction_regularization_(parameters.friction_regularization) {}

PreparedContact SapFrictionCone::Prepare(const ContactPointState& state, double time_step) const {
  PreparedContact contact;
  const double delassus = state.delassus_scale;
  const double relaxation_time = time_step + dissipation_time_scale_;  // δt + τ_d [s]
  // §1.3.2: R_t = σ w; R_n is the softer of the near-rigid cap β² w/(4π²) and the
  // Kelvin–Voigt compliance 1/(δt k (δt + τ_d)).
  const double tangential_regularization = friction_regularization_ * delassus;
  const double near_rigid =
      near_rigid_threshold_ * near_rigid_threshold_ * delassus / (4.0 * std::numbers::pi * std::numbers::pi);
  const double stiffness = state.stiffness > 0.0 ? state.stiffness : stiffness_;
  const double compliance = 1.0 / (time_step * stiffness * relaxation_time);
  const double normal_regularization = std::max(near_rigid, compliance);
  contact.friction_coefficient = state.friction_coefficient;
  contact.regularization = Vector3(tangential_regularization, tangential_regularization, normal_regularization);
  // §1.3.1: v̂_n = −φ₀/(δt + τ_d) with φ₀ = −x₀.
  contact.stabilization_velocity = Vector3(0.0, 0.0, state.penetration / relaxation_time);
  const double ratio = tangential_regularization / normal_regularization;
  contact.mu_tilde = state.friction_coefficient * std::sqrt(ratio);
  contact.mu_hat = state.friction_coefficient * ratio;
  return contact;
}

double SapFrictionCone::Cost(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return SapFrictionConeCost<double>(contact, contact_velocity);
}

Vector3 SapFrictionCone::Impulse(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return SapFrictionConeImpulse<double>(contact, contact_velocity);
}

Matrix3 SapFrictionCone::Hessian(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return SapConeHessian(contact, ProjectOntoSapCone<double>(contact, contact_velocity));
}

ContactEvaluation SapFrictionCone::Evaluate(const PreparedContact& contact, const Vector3& contact_velocity,
                                            bool with_hessian) const {
  const SapConeProjection<double> projection = ProjectOntoSapCone<double>(contact, contact_velocity);
  ContactEvaluation evaluation;
  evaluation.impulse = projection.impulse;
  evaluation.cost = 0.5 * projection.impulse.dot(contact.regularization.cwiseProduct(projection.impulse));
  if (with_hessian) evaluation.hessian = SapConeHessian(contact, projection);
  return evaluation;
}

}  // namespace contactlab::contact
