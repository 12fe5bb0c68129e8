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
  // Corotated strain Ê = ½(R0ᵀF + FᵀR0) − I  [-]; seed 000 eq. 19.
  static Matrix3 Strain(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) {
    const Matrix3 unrotated = reference_rotation.transpose() * deformation_gradient;
    return 0.5 * (unrotated + unrotated.transpose()) - Matrix3::Identity();
  }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // Defined inline below: the explicit P2G calls it per particle through a
  // LinearCorotatedModel (final), which the compiler can then inline.
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // Independent of F: δP = μ_L δF + μ_L R0 δFᵀ R0 + λ (R0 : δF) R0.
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& reference_rotation) const override;

 private:
  LameParameters lame_;
};

inline Matrix3 LinearCorotatedModel::FirstPiolaStress(const Matrix3& deformation_gradient,
                                                      const Matrix3& reference_rotation) const {
  // P = R0(2μ_L Ê + λ tr(Ê) I)  [Pa]; seed 000 eq. 21.
  const Matrix3 strain = Strain(deformation_gradient, reference_rotation);
  return reference_rotation *
         (2.0 * lame_.shear_modulus * strain + lame_.first_lame_parameter * strain.trace() * Matrix3::Identity());
}

}  // namespace contactlab::mpm
