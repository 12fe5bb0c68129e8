#pragma once
// Linear corotated elasticity about a lagged reference rotation R0 ([zong2024convex] eq. 19–21,
// spec-sap-qn §2.1):
//   Ê = ½(R0ᵀF + FᵀR0) − I,  Ψ = μ_L‖Ê‖²_F + λ/2 tr(Ê)²,  P = R0(2μ_L Ê + λ tr(Ê) I).
// Ψ is quadratic in F, so dP/dF is constant for a fixed R0. With a yield stress η > 0 the
// state update is the lagged von Mises return mapping (von_mises_linear_corotated.h);
// without, it only refreshes R0 to the polar rotation of F^E.
#include <string_view>

#include <Eigen/LU>

#include "mpm/constitutive/constitutive_model.h"
#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {

class LinearCorotatedModel final : public ConstitutiveModel {
 public:
  explicit LinearCorotatedModel(LameParameters lame, double yield_stress = 0.0)
      : lame_(lame), yield_stress_(yield_stress) {}

  std::string_view name() const override { return "linear_corotated"; }
  // Corotated strain Ê = ½(R0ᵀF + FᵀR0) − I  [-]; [zong2024convex] eq. 19.
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
  // The dilatational wave speed √((λ + 2μ_L)/ρ).
  double WaveSpeed(double density) const override { return lame_.DilatationalWaveSpeed(density); }
  bool is_plastic() const override { return yield_stress_ > 0.0; }
  // Defined inline below, for the same reason as FirstPiolaStress (mpm/transfers.cc).
  void UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                   Matrix3& plastic_deformation_gradient) const override;

  // Plasticity inside an implicit step (ConstitutiveModel; linear_corotated.cc): with a yield
  // stress, the energy whose deviatoric part is Huber-capped at the yield cylinder's radius
  // η/(2μ_L). The radius is constant, so the state is unused and the energy is the exact
  // potential of the return mapping's stress. Not in the step by default: [zong2024convex] lags it
  // (eqs. 22-26).
  bool has_in_step_plasticity() const override { return is_plastic(); }
  double InStepEnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                             double state) const override;
  Matrix3 InStepFirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                 double state) const override;
  Matrix9 InStepFirstPiolaStressDerivative(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                           double state) const override;

  const LameParameters& lame() const { return lame_; }
  double yield_stress() const { return yield_stress_; }

 private:
  LameParameters lame_;
  double yield_stress_;  // von Mises η [Pa]; 0: elastic
};

inline Matrix3 LinearCorotatedModel::FirstPiolaStress(const Matrix3& deformation_gradient,
                                                      const Matrix3& reference_rotation) const {
  // P = R0(2μ_L Ê + λ tr(Ê) I)  [Pa]; [zong2024convex] eq. 21.
  const Matrix3 strain = Strain(deformation_gradient, reference_rotation);
  return reference_rotation *
         (2.0 * lame_.shear_modulus * strain + lame_.first_lame_parameter * strain.trace() * Matrix3::Identity());
}

inline void LinearCorotatedModel::UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                                              Matrix3& plastic_deformation_gradient) const {
  if (!is_plastic()) {
    reference_rotation = ComputePolarRotation(elastic_deformation_gradient);
    return;
  }
  // Lagged von Mises projection ([zong2024convex] Alg. 1) and F = F^E F^P kept consistent.
  const VonMisesReturnResult result =
      VonMisesReturnMap(elastic_deformation_gradient, reference_rotation, yield_stress_, lame_.shear_modulus);
  if (result.yielded) {
    plastic_deformation_gradient =
        result.elastic_deformation_gradient.inverse() * elastic_deformation_gradient * plastic_deformation_gradient;
    elastic_deformation_gradient = result.elastic_deformation_gradient;
  }
  reference_rotation = result.next_reference_rotation;
}

}  // namespace contactlab::mpm
