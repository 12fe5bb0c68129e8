#pragma once
// The two per-contact models of contact_model.h ("lagged", "sap_cone") as __host__ __device__
// functions on plain structs, for the CUDA quasi-Newton solver. They repeat the arithmetic of
// lagged_hunt_crossley.{h,cc} and sap_friction_cone.{h,cc} term by term (those use Eigen and
// virtual calls, which device code cannot); tests/unit/formulations_quasi_newton_cuda_test.cc
// compares both against the CPU ContactModel on the host.
#include "formulations/quasi_newton/cuda/device_math.h"

namespace contactlab::quasi_newton::gpu {

enum class DeviceContactModel : int { kSapCone = 0, kLagged = 1 };

// contact::PreparedContact without Eigen: the per-substep constants of one contact.
struct DeviceContactParameters {
  double friction_coefficient = 0.0;  // μ [-]
  // sap_cone (spec-sap-qn §1.3.1)
  double regularization[3] = {0.0, 0.0, 0.0};          // (R_t, R_t, R_n) [1/kg]
  double stabilization_velocity[3] = {0.0, 0.0, 0.0};  // v̂ [m/s]
  double mu_tilde = 0.0;                               // μ √(R_t/R_n)
  double mu_hat = 0.0;                                 // μ R_t/R_n
  // lagged (spec-sap-qn §1.3.4)
  double time_step = 0.0;              // δt [s]
  double stiffness = 0.0;              // k [N/m]
  double dissipation = 0.0;            // d [s/m]
  double elastic_force = 0.0;          // f_e0 = k x₀ [N]
  double max_normal_velocity = 0.0;    // v̂ = min(x₀/δt, 1/d) [m/s]
  double lagged_normal_impulse = 0.0;  // n₀ [N s]
  double soft_norm_tolerance = 0.0;    // ε_s [m/s]
};

// Number of doubles a DeviceContactParameters occupies in structure-of-arrays storage.
inline constexpr int kContactParameterCount = 16;

// Structure-of-arrays storage: field k of contact p at values[k * count + p]. Only the
// fields a model reads are loaded.
CONTACTLAB_HOST_DEVICE inline void StoreContactParameters(const DeviceContactParameters& c, double* values, int count,
                                                          int p) {
  const double fields[kContactParameterCount] = {c.friction_coefficient,
                                                 c.regularization[0],
                                                 c.regularization[1],
                                                 c.regularization[2],
                                                 c.stabilization_velocity[0],
                                                 c.stabilization_velocity[1],
                                                 c.stabilization_velocity[2],
                                                 c.mu_tilde,
                                                 c.mu_hat,
                                                 c.time_step,
                                                 c.stiffness,
                                                 c.dissipation,
                                                 c.elastic_force,
                                                 c.max_normal_velocity,
                                                 c.lagged_normal_impulse,
                                                 c.soft_norm_tolerance};
  for (int k = 0; k < kContactParameterCount; ++k) values[k * count + p] = fields[k];
}

template <DeviceContactModel kModel>
CONTACTLAB_HOST_DEVICE inline DeviceContactParameters LoadContactParameters(const double* values, int count, int p) {
  DeviceContactParameters c;
  c.friction_coefficient = values[p];
  if (kModel == DeviceContactModel::kSapCone) {
    for (int i = 0; i < 3; ++i) c.regularization[i] = values[(1 + i) * count + p];
    for (int i = 0; i < 3; ++i) c.stabilization_velocity[i] = values[(4 + i) * count + p];
    c.mu_tilde = values[7 * count + p];
    c.mu_hat = values[8 * count + p];
  } else {
    c.time_step = values[9 * count + p];
    c.stiffness = values[10 * count + p];
    c.dissipation = values[11 * count + p];
    c.elastic_force = values[12 * count + p];
    c.max_normal_velocity = values[13 * count + p];
    c.lagged_normal_impulse = values[14 * count + p];
    c.soft_norm_tolerance = values[15 * count + p];
  }
  return c;
}

// Cost ℓ_c [J], impulse γ = −∂ℓ_c/∂v_c [N s] and Hessian G = ∂²ℓ_c/∂v_c² [kg] of one contact.
struct DeviceContactEvaluation {
  double cost = 0.0;
  Vec3 impulse;
  Sym3 hessian;
};

// ---- lagged Hunt–Crossley (spec §1.3.4) ---------------------------------------------------

// n(v_n) = δt (f_e0 − δt k v_n)₊ (1 − d v_n)₊ for v_n < v̂, else 0 [N s].
CONTACTLAB_HOST_DEVICE inline double LaggedNormalImpulse(const DeviceContactParameters& c, double normal_velocity) {
  if (normal_velocity >= c.max_normal_velocity) return 0.0;
  double force = c.elastic_force - c.time_step * c.stiffness * normal_velocity;
  double damping_factor = 1.0 - c.dissipation * normal_velocity;
  if (force < 0.0) force = 0.0;
  if (damping_factor < 0.0) damping_factor = 0.0;
  return c.time_step * force * damping_factor;
}

// −n'(v_n) = δt [k δt (1 − d v_n) + d (f_e0 − δt k v_n)] below v̂, else 0 [N s²/m].
CONTACTLAB_HOST_DEVICE inline double LaggedNormalStiffness(const DeviceContactParameters& c, double normal_velocity) {
  if (normal_velocity >= c.max_normal_velocity) return 0.0;
  const double force = c.elastic_force - c.time_step * c.stiffness * normal_velocity;
  const double damping_factor = 1.0 - c.dissipation * normal_velocity;
  return c.time_step * (c.stiffness * c.time_step * damping_factor + c.dissipation * force);
}

// ℓ_c = −N(min(v_n, v̂)) + μ n₀ ‖v_t‖_s, γ = (−μ n₀ t̂_s, n(v_n)),
// G = diag(μ n₀/√(‖v_t‖² + ε_s²) (I − t̂_s t̂_sᵀ), −n'(v_n)).
CONTACTLAB_HOST_DEVICE inline DeviceContactEvaluation EvaluateLagged(const DeviceContactParameters& c, const Vec3& v,
                                                                     bool with_hessian) {
  DeviceContactEvaluation e;
  // Normal potential N(v̄) = δt [v̄ (f_e0 + ½Δf) − ½ d v̄² (f_e0 + ⅔Δf)], Δf = −δt k v̄.
  const double clamped = v.z < c.max_normal_velocity ? v.z : c.max_normal_velocity;
  const double force_change = -c.time_step * c.stiffness * clamped;
  const double potential =
      c.time_step * (clamped * (c.elastic_force + 0.5 * force_change) -
                     0.5 * c.dissipation * clamped * clamped * (c.elastic_force + (2.0 / 3.0) * force_change));
  // Soft slip √(s² + ε²) − ε = s²/(√(s² + ε²) + ε), free of cancellation.
  const double tolerance = c.soft_norm_tolerance;
  const double slip_squared = v.x * v.x + v.y * v.y;
  const double soft_speed = sqrt(slip_squared + tolerance * tolerance);
  const double soft_slip = slip_squared / (soft_speed + tolerance);
  e.cost = -potential + c.friction_coefficient * c.lagged_normal_impulse * soft_slip;
  const double friction_gain = -c.friction_coefficient * c.lagged_normal_impulse / soft_speed;
  e.impulse = {friction_gain * v.x, friction_gain * v.y, LaggedNormalImpulse(c, v.z)};
  if (with_hessian) {
    const double tangential_gain = c.friction_coefficient * c.lagged_normal_impulse / soft_speed;
    const double tx = v.x / soft_speed;
    const double ty = v.y / soft_speed;
    e.hessian.xx = tangential_gain * (1.0 - tx * tx);
    e.hessian.xy = tangential_gain * (0.0 - tx * ty);
    e.hessian.yy = tangential_gain * (1.0 - ty * ty);
    e.hessian.zz = LaggedNormalStiffness(c, v.z);
  }
  return e;
}

// ---- SAP regularized friction cone (spec §1.3.1) -----------------------------------------

// Same value as contact::kSapSoftNormVelocity (checked by a static_assert on the host side).
inline constexpr double kDeviceSapSoftNormVelocity = 1.0e-14;

// γ = P_F(y), y = −R⁻¹(v_c − v̂), projected in the R norm (stiction / sliding / no contact);
// ℓ_c = ½ γᵀ R γ; G = (∂P/∂y) R⁻¹ in its symmetric form.
CONTACTLAB_HOST_DEVICE inline DeviceContactEvaluation EvaluateSapCone(const DeviceContactParameters& c, const Vec3& v,
                                                                      bool with_hessian) {
  DeviceContactEvaluation e;
  const double yx = -(v.x - c.stabilization_velocity[0]) / c.regularization[0];
  const double yy = -(v.y - c.stabilization_velocity[1]) / c.regularization[1];
  const double yn = -(v.z - c.stabilization_velocity[2]) / c.regularization[2];
  const double soft_tolerance = kDeviceSapSoftNormVelocity / c.regularization[0];
  const double tangential_norm = sqrt(yx * yx + yy * yy + soft_tolerance * soft_tolerance);
  const double mu = c.friction_coefficient;
  if (tangential_norm <= mu * yn) {
    // Stiction: y is inside the cone, G = R⁻¹.
    e.impulse = {yx, yy, yn};
    if (with_hessian) {
      e.hessian.xx = 1.0 / c.regularization[0];
      e.hessian.yy = 1.0 / c.regularization[1];
      e.hessian.zz = 1.0 / c.regularization[2];
    }
  } else if (yn <= -c.mu_hat * tangential_norm) {
    // No contact: the projection is the apex, γ = 0, G = 0.
  } else {
    // Sliding: γ_n = (y_n + μ̂ y_r)/(1 + μ̃²), γ_t = μ γ_n t̂.
    const double normal_gain = 1.0 / (1.0 + c.mu_tilde * c.mu_tilde);
    const double normal_impulse = (yn + c.mu_hat * tangential_norm) / (1.0 + c.mu_tilde * c.mu_tilde);
    const double tangential_scale = mu * normal_impulse / tangential_norm;
    e.impulse = {tangential_scale * yx, tangential_scale * yy, normal_impulse};
    if (with_hessian) {
      const double inverse_normal_regularization = 1.0 / c.regularization[2];
      const double tx = yx / tangential_norm;
      const double ty = yy / tangential_norm;
      const double across_gain = mu * normal_impulse / (tangential_norm * c.regularization[0]);
      const double along_gain = mu * mu * normal_gain * inverse_normal_regularization;
      e.hessian.xx = across_gain * (1.0 - tx * tx) + along_gain * (tx * tx);
      e.hessian.xy = across_gain * (0.0 - tx * ty) + along_gain * (tx * ty);
      e.hessian.yy = across_gain * (1.0 - ty * ty) + along_gain * (ty * ty);
      const double coupling = mu * normal_gain * inverse_normal_regularization;
      e.hessian.xz = coupling * tx;
      e.hessian.yz = coupling * ty;
      e.hessian.zz = normal_gain * inverse_normal_regularization;
    }
  }
  e.cost =
      0.5 * (e.impulse.x * (c.regularization[0] * e.impulse.x) + e.impulse.y * (c.regularization[1] * e.impulse.y) +
             e.impulse.z * (c.regularization[2] * e.impulse.z));
  return e;
}

template <DeviceContactModel kModel>
CONTACTLAB_HOST_DEVICE inline DeviceContactEvaluation EvaluateContact(const DeviceContactParameters& c, const Vec3& v,
                                                                      bool with_hessian) {
  if (kModel == DeviceContactModel::kSapCone) return EvaluateSapCone(c, v, with_hessian);
  return EvaluateLagged(c, v, with_hessian);
}

}  // namespace contactlab::quasi_newton::gpu
