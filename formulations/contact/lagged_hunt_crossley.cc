#include "formulations/contact/lagged_hunt_crossley.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace contactlab::contact {
namespace {

// −n'(v_n) [N s²/m] (spec §1.3.4): δt [k δt (1 − d v_n) + d (f_e0 − δt k v_n)] below v̂, else 0.
double NormalStiffness(const PreparedContact& contact, double normal_velocity) {
  if (normal_velocity >= contact.max_normal_velocity) return 0.0;
  const double time_step = contact.time_step;
  const double force = contact.elastic_force - time_step * contact.stiffness * normal_velocity;
  const double damping_factor = 1.0 - contact.dissipation * normal_velocity;
  return time_step * (contact.stiffness * time_step * damping_factor + contact.dissipation * force);
}

// The soft slip of the friction term at one velocity: ‖v_t‖² and s = √(‖v_t‖² + ε_s²).
struct SoftSlip {
  Eigen::Vector2d slip;
  double squared_norm;
  double soft_speed;
};
SoftSlip ComputeSoftSlip(const PreparedContact& contact, const Vector3& contact_velocity) {
  SoftSlip result;
  result.slip = contact_velocity.head<2>();
  result.squared_norm = result.slip.squaredNorm();
  const double tolerance = contact.soft_norm_tolerance;
  result.soft_speed = std::sqrt(result.squared_norm + tolerance * tolerance);
  return result;
}

// Spec §1.3.4: G = diag(μ n₀/s (I − t̂_s t̂_sᵀ), −n'(v_n)), t̂_s = v_t/s.
Matrix3 LaggedHessian(const PreparedContact& contact, const SoftSlip& soft, double normal_velocity) {
  Matrix3 hessian = Matrix3::Zero();
  const Eigen::Vector2d direction = soft.slip / soft.soft_speed;
  hessian.topLeftCorner<2, 2>() = (contact.friction_coefficient * contact.lagged_normal_impulse / soft.soft_speed) *
                                  (Eigen::Matrix2d::Identity() - direction * direction.transpose());
  hessian(2, 2) = NormalStiffness(contact, normal_velocity);
  return hessian;
}

// ℓ_c of LaggedHuntCrossleyCost from a computed soft slip (the same operations).
double LaggedCost(const PreparedContact& contact, const SoftSlip& soft, double normal_velocity) {
  const double clamped_velocity = std::min(normal_velocity, contact.max_normal_velocity);
  const double soft_slip = soft.squared_norm / (soft.soft_speed + contact.soft_norm_tolerance);
  return -LaggedNormalPotential(contact, clamped_velocity) +
         contact.friction_coefficient * contact.lagged_normal_impulse * soft_slip;
}

}  // namespace

LaggedHuntCrossley::LaggedHuntCrossley(const ContactModelParameters& parameters)
    : stiffness_(parameters.stiffness),
      dissipation_(parameters.hunt_crossley_dissipation),
      stiction_tolerance_(parameters.stiction_tolerance),
      friction_regularization_(parameters.friction_regularization) {}

PreparedContact LaggedHuntCrossley::Prepare(const ContactPointState& state, double time_step) const {
  PreparedContact contact;
  contact.friction_coefficient = state.friction_coefficient;
  contact.time_step = time_step;
  contact.stiffness = state.stiffness > 0.0 ? state.stiffness : stiffness_;
  contact.dissipation = dissipation_;
  // §1.3.4 / §1.3.7: f_e0 = k x₀ and the normal impulse at the start-of-step velocity.
  contact.elastic_force = contact.stiffness * state.penetration;
  contact.lagged_normal_impulse = time_step * std::max(contact.elastic_force, 0.0) *
                                  std::max(1.0 - dissipation_ * state.previous_normal_velocity, 0.0);
  // v̂ = min(x₀/δt, 1/d): the normal velocity at which n vanishes (1/d = ∞ for d = 0).
  const double dissipation_limit = dissipation_ > 0.0 ? 1.0 / dissipation_ : std::numeric_limits<double>::infinity();
  contact.max_normal_velocity = std::min(state.penetration / time_step, dissipation_limit);
  // ε_s = max(v_s, μ σ w n₀) (spec §5 Y6).
  contact.soft_norm_gain = state.friction_coefficient * friction_regularization_ * state.delassus_scale;
  contact.soft_norm_tolerance = std::max(stiction_tolerance_, contact.soft_norm_gain * contact.lagged_normal_impulse);
  return contact;
}

void LaggedHuntCrossley::SetFrictionNormalImpulse(PreparedContact& contact, double normal_impulse) const {
  contact.lagged_normal_impulse = std::max(normal_impulse, 0.0);
  contact.soft_norm_tolerance = std::max(stiction_tolerance_, contact.soft_norm_gain * contact.lagged_normal_impulse);
}

double LaggedHuntCrossley::Cost(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return LaggedHuntCrossleyCost<double>(contact, contact_velocity);
}

Vector3 LaggedHuntCrossley::Impulse(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return LaggedHuntCrossleyImpulse<double>(contact, contact_velocity);
}

Matrix3 LaggedHuntCrossley::Hessian(const PreparedContact& contact, const Vector3& contact_velocity) const {
  return LaggedHessian(contact, ComputeSoftSlip(contact, contact_velocity), contact_velocity.z());
}

ContactEvaluation LaggedHuntCrossley::Evaluate(const PreparedContact& contact, const Vector3& contact_velocity,
                                               bool with_hessian) const {
  const SoftSlip soft = ComputeSoftSlip(contact, contact_velocity);
  const double normal_velocity = contact_velocity.z();
  ContactEvaluation evaluation;
  evaluation.cost = LaggedCost(contact, soft, normal_velocity);
  // γ = (−μ n₀ v_t/s, n(v_n)), as LaggedHuntCrossleyImpulse.
  evaluation.impulse.head<2>() =
      (-contact.friction_coefficient * contact.lagged_normal_impulse / soft.soft_speed) * soft.slip;
  evaluation.impulse.z() = LaggedNormalImpulse(contact, normal_velocity);
  if (with_hessian) evaluation.hessian = LaggedHessian(contact, soft, normal_velocity);
  return evaluation;
}

LineTerms LaggedHuntCrossley::EvaluateAlong(const PreparedContact& contact, const Vector3& contact_velocity,
                                            const Vector3& direction) const {
  // With g = μ n₀/s and the tangential direction d_t: −Δv_cᵀγ = g d_t·v_t − d_n n(v_n) and
  // Δv_cᵀ G Δv_c = g (‖d_t‖² − (d_t·v_t)²/s²) − n'(v_n) d_n², without forming G.
  const SoftSlip soft = ComputeSoftSlip(contact, contact_velocity);
  const double normal_velocity = contact_velocity.z();
  const double friction_gain = contact.friction_coefficient * contact.lagged_normal_impulse / soft.soft_speed;
  const Eigen::Vector2d tangential_direction = direction.head<2>();
  const double along_slip = tangential_direction.dot(soft.slip);
  LineTerms terms;
  terms.cost = LaggedCost(contact, soft, normal_velocity);
  terms.slope = friction_gain * along_slip - direction.z() * LaggedNormalImpulse(contact, normal_velocity);
  terms.curvature = friction_gain * (tangential_direction.squaredNorm() -
                                     along_slip * along_slip / (soft.soft_speed * soft.soft_speed)) +
                    NormalStiffness(contact, normal_velocity) * direction.z() * direction.z();
  return terms;
}

}  // namespace contactlab::contact
