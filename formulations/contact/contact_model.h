#pragma once
// Convex per-contact models shared by the implicit formulations (`sap`, `quasi_newton`):
// for one contact and a relative contact velocity v_c (contact frame, z = outward normal
// of the rigid geometry, v_n > 0 separating — contact_frame.h), each model gives
//   the cost ℓ_c(v_c)              [J = N m],
//   the impulse γ = −∂ℓ_c/∂v_c      [N s], γ_n ≥ 0 repulsive, acting on the MPM side,
//   the Hessian G = ∂²ℓ_c/∂v_c²    [N s²/m = kg], symmetric positive semidefinite.
// The velocity passed in is always the full relative velocity v_c = J v + b, bias b of
// prescribed (kinematic) bodies included.
//
// Two models (spec-sap-qn §1.3):
//   "sap_cone"  SAP's regularized friction cone (§1.3.1–1.3.2, Castro et al. 2022): γ is the
//               projection of y = −R⁻¹(v_c − v̂) onto the Coulomb cone in the R norm.
//   "lagged"    the lagged Hunt–Crossley model (§1.3.4, Castro et al. 2023): a convex normal
//               potential from Hunt–Crossley with a linearized penetration, and regularized
//               Coulomb friction bounded by the normal impulse frozen at the start of the step.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formulations/parameters.h"
#include "mpm/types.h"

namespace contactlab::contact {

using mpm::Matrix3;
using mpm::Vector3;

// The per-contact convex models (contact.model).
enum class ContactModelKind {
  kSapCone,  // "sap_cone": SAP's regularized friction cone (§1.3.1)
  kLagged,   // "lagged": the lagged Hunt–Crossley model (§1.3.4)
};
const ChoiceTable<ContactModelKind>& ContactModelNames();

// Model constants chosen per run (spec-sap-qn §5 A1: the papers give none).
struct ContactModelParameters {
  ContactModelKind model = ContactModelKind::kSapCone;
  // Point-contact stiffness k [N/m]. Large by default so that, for SAP, the near-rigid
  // regularization (β) decides the compliance rather than k (spec A1).
  double stiffness = 1.0e8;
  // SAP dissipation time scale τ_d [s]: the Kelvin–Voigt damping is d = τ_d k. 0 makes the
  // stabilization velocity v̂_n = x₀/δt remove the penetration in one step (spec §1.3.2).
  double dissipation_time_scale = 0.0;
  // Hunt–Crossley dissipation d [s/m] of the lagged model (spec A1 default 10).
  double hunt_crossley_dissipation = 10.0;
  // SAP near-rigid constant β [-]: R_n ≥ β² w /(4π²) makes the stiffest contact behave like
  // an oscillator of period β δt, the stiffest the step can resolve (Drake default 1).
  double near_rigid_threshold = 1.0;
  // SAP friction regularization σ [-]: R_t = σ w, giving stiction slip of order σ δt g
  // (Drake default 1e-3).
  double friction_regularization = 1.0e-3;
  // Stiction tolerance v_s [m/s] of the lagged model's soft tangential norm
  // (Drake default 1e-3).
  double stiction_tolerance = 1.0e-3;

  // Parameter specs under the "contact." prefix, and the struct from a resolved set.
  static std::vector<ParameterSpec> Specs();
  static ContactModelParameters FromParameters(const ParameterSet& parameters);
  // Only the keys of the "sap_cone" model (stiffness, dissipation time scale, near-rigid
  // threshold, friction regularization), for a formulation whose one convex solve is SAP's
  // rigid step; the struct they give has model "sap_cone".
  static std::vector<ParameterSpec> SapConeSpecs();
  static ContactModelParameters SapConeFromParameters(const ParameterSet& parameters);
};

// What detection and the formulation know about one contact at the start of the step.
struct ContactPointState {
  double penetration = 0.0;               // x₀ = −φ₀ [m]; negative for a gap (speculative contact)
  double previous_normal_velocity = 0.0;  // v_n0, normal relative velocity at the start [m/s]
  double friction_coefficient = 0.0;      // μ [-]
  double delassus_scale = 0.0;            // w ≈ ‖J A⁻¹ Jᵀ‖ for this contact [1/kg], > 0
  // Stiffness k of this contact [N/m]; 0 takes the model's contact.stiffness. Formulations
  // that scale k per contact (spec A1's near-rigid stiffness for the lagged model) set it.
  double stiffness = 0.0;
};

// A contact with every quantity its cost needs precomputed for one time step δt.
// Fields a model does not use stay zero.
struct PreparedContact {
  double friction_coefficient = 0.0;  // μ [-]
  // sap_cone
  Vector3 regularization = Vector3::Zero();          // diag R = (R_t, R_t, R_n) [1/kg]
  Vector3 stabilization_velocity = Vector3::Zero();  // v̂ = (0, 0, x₀/(δt + τ_d)) [m/s]
  double mu_tilde = 0.0;                             // μ √(R_t/R_n) [-]
  double mu_hat = 0.0;                               // μ R_t/R_n [-]
  // lagged
  double time_step = 0.0;              // δt [s]
  double stiffness = 0.0;              // k [N/m]
  double dissipation = 0.0;            // d [s/m]
  double elastic_force = 0.0;          // f_e0 = k x₀ [N]
  double max_normal_velocity = 0.0;    // v̂ = min(x₀/δt, 1/d) [m/s]
  double lagged_normal_impulse = 0.0;  // n₀ = δt f_e0 (1 − d v_n0)₊ [N s]
  double soft_norm_tolerance = 0.0;    // ε_s = max(v_s, μ σ w n₀) [m/s]
  double soft_norm_gain = 0.0;         // μ σ w, so that ε_s = max(v_s, μ σ w n₀) [1/kg]
};

// Value, impulse and Hessian of one contact at one velocity.
struct ContactEvaluation {
  double cost = 0.0;
  Vector3 impulse = Vector3::Zero();
  Matrix3 hessian = Matrix3::Zero();
};

// The three terms one contact adds to the exact line search along a direction Δv_c
// (spec-sap-qn §1.2.3 K7) at the velocity v_c: ℓ_c(v_c), −Δv_cᵀγ(v_c) and Δv_cᵀ G(v_c) Δv_c.
struct LineTerms {
  double cost = 0.0;
  double slope = 0.0;
  double curvature = 0.0;
};

class ContactModel {
 public:
  virtual ~ContactModel() = default;
  virtual std::string_view name() const = 0;
  // Precomputes the per-step constants of one contact for a step of δt [s].
  virtual PreparedContact Prepare(const ContactPointState& state, double time_step) const = 0;
  virtual double Cost(const PreparedContact& contact, const Vector3& contact_velocity) const = 0;
  virtual Vector3 Impulse(const PreparedContact& contact, const Vector3& contact_velocity) const = 0;
  virtual Matrix3 Hessian(const PreparedContact& contact, const Vector3& contact_velocity) const = 0;
  // All three at once (what solvers call); `hessian` may be skipped.
  virtual ContactEvaluation Evaluate(const PreparedContact& contact, const Vector3& contact_velocity,
                                     bool with_hessian) const = 0;
  // The line-search terms at `contact_velocity` along `direction`. This default derives them
  // from Evaluate; a model may override it with a cheaper form of the same values.
  virtual LineTerms EvaluateAlong(const PreparedContact& contact, const Vector3& contact_velocity,
                                  const Vector3& direction) const;
  // Whether the friction bound is a normal impulse n₀ frozen before the solve ("lagged"),
  // rather than the normal impulse of the solve itself ("sap_cone").
  virtual bool HasFrozenFrictionBound() const { return false; }
  // Rebases the frozen friction bound on the normal impulse `normal_impulse` [N s] (a model
  // without one leaves the contact as it is): a caller that knows the impulse the contact
  // carries makes μ n₀ Coulomb's bound for it.
  virtual void SetFrictionNormalImpulse(PreparedContact& /*contact*/, double /*normal_impulse*/) const {}
};

// Throws InputError naming "contact.model" for an unknown model.
std::unique_ptr<ContactModel> MakeContactModel(const ContactModelParameters& parameters);

}  // namespace contactlab::contact
