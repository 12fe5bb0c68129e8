#pragma once
// Drucker–Prager sand (Klár et al. 2016 [`klar2016sand`], spec-penalty-hybrid §4.2, [ding_schroeder_penalty]
// §6): Hencky (St. Venant–Kirchhoff in logarithmic strain) elasticity with a return mapping
// onto the Drucker–Prager cone after every step.
//
// Elasticity. With the signed SVD F^E = U diag(σ) Vᵀ and the principal Hencky strains
// ε_i = ln σ_i,
//   ψ = μ_L Σ ε_i² + λ/2 (Σ ε_i)²,   Kirchhoff stress τ_i = 2 μ_L ε_i + λ Σ ε,
//   P = U diag(τ_i / σ_i) Vᵀ.
// Defined for det F^E > 0: a particle squeezed through zero volume gives non-finite stress,
// which the formulations record as divergence.
//
// Plasticity (UpdateState). The cone in Kirchhoff stress is
//   ‖dev τ‖_F + α (tr τ − 3 p_t) ≤ 0,   α = √(2/3) · 2 sin φ / (3 − sin φ),
// with friction angle φ; α is Klár et al.'s, which matches Mohr–Coulomb in triaxial
// compression. Cohesion c [Pa] moves the apex to the tensile mean stress p_t = c cot φ (the
// Mohr–Coulomb apex); c = 0 is Klár et al.'s cohesionless sand. Because τ is linear in ε the
// projection is closed form in strain space (Klár et al. §4.3, shifted by the apex strain
// e_t = 3 p_t / (3λ + 2μ_L), the volumetric strain at which tr τ = 3 p_t):
//   tr ε ≥ e_t (beyond the apex):  ε ← (e_t/3)(1, 1, 1)          (the sand separates)
//   δγ = ‖ε̂‖ + α (3λ + 2μ_L)/(2μ_L) (tr ε − e_t) ≤ 0:  elastic
//   otherwise:                       ε ← ε − δγ ε̂/‖ε̂‖           (shear flow, volume kept)
// with ε̂ the deviatoric part. F^E ← U diag(e^ε) Vᵀ, F^P ← (F^E_new)⁻¹ F^E_old F^P so that
// F = F^E F^P holds, R0 ← U Vᵀ. No hardening and no volume correction (Tampubolon et al.
// 2017): both are options the papers list, not needed for dry sand at rest.
#include <string_view>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

// Where a trial state sits relative to the cone, and the strains after the projection.
struct DruckerPragerReturn {
  enum class Case { kElastic, kShear, kApex };
  Case kind = Case::kElastic;
  Vector3 strains;                // principal Hencky strains after the projection
  double plastic_multiplier = 0;  // δγ of the shear case (0 otherwise)
};

class DruckerPragerModel final : public ConstitutiveModel {
 public:
  // Lamé parameters (μ_L > 0), friction angle φ in (0, π/2) [rad], cohesion c ≥ 0 [Pa];
  // throws std::invalid_argument otherwise.
  DruckerPragerModel(const LameParameters& lame, double friction_angle, double cohesion);

  std::string_view name() const override { return "drucker_prager"; }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // Exact dP/dF of the Hencky energy (symmetric, not PSD under large strains).
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& reference_rotation) const override;
  double WaveSpeed(double density) const override { return lame_.DilatationalWaveSpeed(density); }
  bool is_plastic() const override { return true; }
  void UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                   Matrix3& plastic_deformation_gradient) const override;

  // Plasticity inside an implicit step (drucker_prager.cc, ConstitutiveModel): the state is
  // the cone's radius in deviatoric Hencky strain at the step's start.
  // R0 is not used. In the step by default: spec-penalty-hybrid A13 for sand runs.
  bool has_in_step_plasticity() const override { return true; }
  bool in_step_plasticity_by_default() const override { return true; }
  double InStepState(const Matrix3& start_elastic_deformation_gradient) const override;
  double InStepEnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                             double state) const override;
  Matrix3 InStepFirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                 double state) const override;
  Matrix9 InStepFirstPiolaStressDerivative(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                           double state) const override;

  // The projection of principal Hencky strains onto the cone.
  DruckerPragerReturn Project(const Vector3& strains) const;
  // The cone's α and its apex strain e_t (see above).
  double cone_slope() const { return cone_slope_; }
  double apex_volumetric_strain() const { return apex_volumetric_strain_; }
  const LameParameters& lame() const { return lame_; }

 private:
  // The step energy's Kirchhoff stresses τ_i = slope ε_i + offset at principal strains ε and
  // cone radius r, with the quantities its derivative needs.
  struct StepStress {
    double volumetric, deviatoric_norm, shear_fraction, slope, offset;
    Vector3 deviatoric;
    bool yielding, separating;
  };
  StepStress InStepStress(const Vector3& strains, double radius) const;

  LameParameters lame_;
  double cone_slope_;              // α [-]
  double apex_volumetric_strain_;  // e_t [-]
};

}  // namespace contactlab::mpm
