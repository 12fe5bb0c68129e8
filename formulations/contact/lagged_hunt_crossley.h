#pragma once
// The lagged Hunt–Crossley model ("lagged", spec-sap-qn §1.3.4, Castro et al. 2023).
// Normal part: the Hunt–Crossley impulse with the penetration linearized over the step,
//   n(v_n) = δt (f_e0 − δt k v_n)₊ (1 − d v_n)₊,
// whose antiderivative N gives the convex cost −N(min(v_n, v̂)). Tangential part: Coulomb
// friction regularized by a soft norm and bounded by the normal impulse n₀ frozen at the
// start of the step, so the cost separates:
//   ℓ_c = −N(min(v_n, v̂)) + μ n₀ ‖v_t‖_s,   ‖v_t‖_s = √(‖v_t‖² + ε_s²) − ε_s.
//
// The templated functions below are the core math; the class evaluates them in double and
// adds the Hessian. Tests differentiate the templates with ceres::Jet.
#include <cmath>
#include <string_view>

#include <Eigen/Core>

#include "formulations/contact/contact_model.h"

namespace contactlab::contact {

// n(v_n) [N s] (spec §1.3.4): positive exactly for v_n < v̂, zero beyond.
template <typename T>
T LaggedNormalImpulse(const PreparedContact& contact, const T& normal_velocity) {
  if (normal_velocity >= contact.max_normal_velocity) return T(0.0);
  const double time_step = contact.time_step;
  T force = contact.elastic_force - time_step * contact.stiffness * normal_velocity;  // f_e0 − δt k v_n
  T damping_factor = 1.0 - contact.dissipation * normal_velocity;                     // 1 − d v_n
  // Both factors are positive below v̂; the clamps only guard against round-off at v̂.
  if (force < 0.0) force = T(0.0);
  if (damping_factor < 0.0) damping_factor = T(0.0);
  return time_step * force * damping_factor;
}

// N(v) = ∫₀^v n [J] for v ≤ v̂ (spec §1.3.4), with Δf = −δt k v:
//   N(v) = δt [v (f_e0 + ½Δf) − ½ d v² (f_e0 + ⅔Δf)].
template <typename T>
T LaggedNormalPotential(const PreparedContact& contact, const T& normal_velocity) {
  const T& v = normal_velocity;
  const T force_change = -contact.time_step * contact.stiffness * v;
  return contact.time_step * (v * (contact.elastic_force + 0.5 * force_change) -
                              0.5 * contact.dissipation * v * v * (contact.elastic_force + (2.0 / 3.0) * force_change));
}

// ℓ_c(v_c) [J] (spec §1.3.4). For v_n ≥ v̂ the normal part is the constant −N(v̂), so the
// cost is C¹ (n(v̂) = 0) and convex.
template <typename T>
T LaggedHuntCrossleyCost(const PreparedContact& contact, const Eigen::Matrix<T, 3, 1>& contact_velocity) {
  using std::sqrt;
  const T& normal_velocity = contact_velocity(2);
  const T clamped_velocity =
      normal_velocity < contact.max_normal_velocity ? normal_velocity : T(contact.max_normal_velocity);
  const T normal_cost = -LaggedNormalPotential(contact, clamped_velocity);
  // √(‖v_t‖² + ε²) − ε written as ‖v_t‖²/(√(‖v_t‖² + ε²) + ε) to avoid cancellation.
  const double tolerance = contact.soft_norm_tolerance;
  const T slip_squared = contact_velocity.template head<2>().squaredNorm();
  const T soft_slip = slip_squared / (sqrt(slip_squared + tolerance * tolerance) + tolerance);
  return normal_cost + contact.friction_coefficient * contact.lagged_normal_impulse * soft_slip;
}

// γ = −∂ℓ_c/∂v_c = (−μ n₀ t̂_s, n(v_n)) [N s], t̂_s = v_t/√(‖v_t‖² + ε_s²) (spec §1.3.4).
template <typename T>
Eigen::Matrix<T, 3, 1> LaggedHuntCrossleyImpulse(const PreparedContact& contact,
                                                 const Eigen::Matrix<T, 3, 1>& contact_velocity) {
  using std::sqrt;
  const double tolerance = contact.soft_norm_tolerance;
  const Eigen::Matrix<T, 2, 1> slip = contact_velocity.template head<2>();
  const T soft_speed = sqrt(slip.squaredNorm() + tolerance * tolerance);
  Eigen::Matrix<T, 3, 1> impulse;
  impulse.template head<2>() = (-contact.friction_coefficient * contact.lagged_normal_impulse / soft_speed) * slip;
  impulse(2) = LaggedNormalImpulse(contact, contact_velocity(2));
  return impulse;
}

class LaggedHuntCrossley final : public ContactModel {
 public:
  explicit LaggedHuntCrossley(const ContactModelParameters& parameters);
  std::string_view name() const override { return "lagged"; }
  PreparedContact Prepare(const ContactPointState& state, double time_step) const override;
  double Cost(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  Vector3 Impulse(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  Matrix3 Hessian(const PreparedContact& contact, const Vector3& contact_velocity) const override;
  // Cost, impulse and Hessian from one soft speed √(‖v_t‖² + ε_s²): the values of the
  // three functions above.
  ContactEvaluation Evaluate(const PreparedContact& contact, const Vector3& contact_velocity,
                             bool with_hessian) const override;
  // The line-search terms in closed form (no Hessian matrix): the values of
  // ContactModel::EvaluateAlong up to round-off.
  LineTerms EvaluateAlong(const PreparedContact& contact, const Vector3& contact_velocity,
                          const Vector3& direction) const override;
  bool HasFrozenFrictionBound() const override { return true; }
  // n₀ ← normal_impulse, and ε_s = max(v_s, μ σ w n₀) with it.
  void SetFrictionNormalImpulse(PreparedContact& contact, double normal_impulse) const override;

 private:
  double stiffness_;                // k [N/m]
  double dissipation_;              // d [s/m]
  double stiction_tolerance_;       // v_s [m/s]
  double friction_regularization_;  // σ [-], for ε_s = max(v_s, μ σ w n₀)
};

}  // namespace contactlab::contact
