#pragma once
// Weakly compressible equation-of-state liquid ([zong2024convex] §VII-D names it; the form of
// Tampubolon et al. 2017 [`tampubolon2017sandwater`], spec-sap-qn §2.3): an energy of the
// volume ratio J = det F alone,
//   ψ(J) = κ (J − 1) − κ (J^{1−γ} − 1)/(1 − γ),   p = −ψ'(J) = κ (J^{−γ} − 1),
//   P = ψ'(J) cof(F) = −p J F⁻ᵀ,
// with bulk modulus κ and exponent γ (7 for water); ψ(1) = 0. No shear stiffness. J is the
// state: UpdateState keeps F^E = J^{1/3} I (the shear part of the motion goes to F^P, so
// F = F^E F^P still holds), which is all the particle needs to carry.
// ψ is not convex in F; sap uses its PSD-projected tangent (spec §2.3), penalty the exact one.
// Defined for J > 0: at J ≤ 0 the energy is +∞ (a line search on it backs off) and the
// stress non-finite, which the formulations report as divergence.
#include <string_view>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

class EquationOfStateLiquidModel final : public ConstitutiveModel {
 public:
  // κ [Pa] > 0 and γ [-] > 1; throws std::invalid_argument otherwise.
  EquationOfStateLiquidModel(double bulk_modulus, double exponent);

  std::string_view name() const override { return "eos_liquid"; }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // ψ''(J) cof(F) ⊗ cof(F) + ψ'(J) ∂cof(F)/∂F: indefinite (the second term).
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& reference_rotation) const override;
  // √(γ κ / ρ): the sound speed at rest, J = 1 (dp/dρ = γ κ J^{1−γ}/ρ₀).
  double WaveSpeed(double density) const override;
  bool is_plastic() const override { return true; }
  // F^E ← J^{1/3} I with J = det F^E; F^P ← (F^E_new)⁻¹ F^E_old F^P; R0 ← I.
  void UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                   Matrix3& plastic_deformation_gradient) const override;

  // p(J) = κ (J^{−γ} − 1) [Pa].
  double Pressure(double volume_ratio) const;
  double bulk_modulus() const { return bulk_modulus_; }
  double exponent() const { return exponent_; }

 private:
  double bulk_modulus_;  // κ [Pa]
  double exponent_;      // γ [-]
};

}  // namespace contactlab::mpm
