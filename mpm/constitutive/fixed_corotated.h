#pragma once
// Fixed corotated elasticity (Stomakhin et al. 2012; spec-penalty-hybrid §1.9,
// spec-sap-qn §2.4):
//   Ψ = μ_L Σ(σ_i − 1)² + λ/2 (J − 1)²,   P = 2μ_L(F − R) + λ(J − 1) J F⁻ᵀ,
// with σ the signed singular values and R the proper polar rotation of F. The reference
// rotation argument of the interface is ignored.
#include <string_view>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

class FixedCorotatedModel final : public ConstitutiveModel {
 public:
  explicit FixedCorotatedModel(LameParameters lame) : lame_(lame) {}

  std::string_view name() const override { return "fixed_corotated"; }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const override;
  // Analytic dP/dF from the differential of spec-penalty-hybrid §1.5. Where two signed
  // singular values sum to nearly zero (near inversion) the rotation derivative is
  // regularized, see fixed_corotated.cc.
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& reference_rotation) const override;
  // The dilatational wave speed √((λ + 2μ_L)/ρ) of the linearized model.
  double WaveSpeed(double density) const override { return lame_.DilatationalWaveSpeed(density); }

 private:
  LameParameters lame_;
};

}  // namespace contactlab::mpm
