#pragma once
// Linear corotated elasticity about a lagged reference rotation R0 (seed 000 eq. 19–21,
// spec-sap-qn §2.1):
//   Ê = ½(R0ᵀF + FᵀR0) − I,  Ψ = μ_L‖Ê‖²_F + λ/2 tr(Ê)²,  P = R0(2μ_L Ê + λ tr(Ê) I).
// Ψ is quadratic in F, so dP/dF is constant for a fixed R0.
#include <string_view>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

class LinearCorotatedModel final : public ConstitutiveModel {
 public:
  explicit LinearCorotatedModel(LameParameters lame) : lame_(lame) {}

  std::string_view name() const override { return "linear_corotated"; }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // Independent of F: δP = μ_L δF + μ_L R0 δFᵀ R0 + λ (R0 : δF) R0.
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& reference_rotation) const override;

 private:
  LameParameters lame_;
};

}  // namespace contactlab::mpm
