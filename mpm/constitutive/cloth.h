#pragma once
// The face-particle material of codimensional cloth ([jiang2017cloth] §4–5; spec-sap-qn §2.5).
//
// A face particle sits at a triangle's centroid. The first two columns of its deformation
// gradient F come from the mesh (the triangle's edges times the rest inverse D_m⁻¹); the third
// is Eulerian, the material's normal direction d₃ advected by the grid. F = Q R with Q a
// rotation and R upper triangular (r₁₁, r₂₂ > 0; r₃₃ < 0 when the cloth is inverted). The
// energy density depends on R only:
//   Ψ(R) = Ψ_plane(R̂) + f(r₃₃) + g(r₁₃, r₂₃),
//   Ψ_plane = μ_L ‖R̂ − rot(R̂)‖² + λ/2 (det R̂ − 1)²   (2-D fixed corotated of R̂ = R[0:2, 0:2]),
//   f = k/3 (1 − r₃₃)³ for r₃₃ ≤ 1, else 0              (compression across the cloth only),
//   g = γ/2 (r₁₃² + r₂₃²)                                (shear across the cloth).
// The stress follows from the chain rule through F = QR (cloth.cc). The return mapping keeps
// the cloth from pulling apart across its thickness (r₃₃ ≤ 1, no cohesion between layers)
// and limits the cross-shear by Coulomb-like friction between layers.
#include "mpm/constitutive/constitutive_model.h"
#include "mpm/types.h"

namespace contactlab::mpm {

struct ClothMaterial {
  LameParameters lame;          // in-plane μ_L, λ [Pa]
  double normal_stiffness = 0;  // k [Pa] of f(r₃₃)
  double shear_stiffness = 0;   // γ [Pa] of g(r₁₃, r₂₃)
  double layer_friction = 0;    // c_F of the return mapping's shear limit
};

// F = Q R: Gram–Schmidt on F's first two columns (r₁₁, r₂₂ > 0), q₃ = q₁ × q₂, so that Q is a
// rotation and r₃₃ = q₃ · F e₃ carries the sign of det F. F's first two columns must be
// linearly independent (a triangle of nonzero area).
struct ClothFactors {
  Matrix3 rotation;  // Q
  Matrix3 upper;     // R
};
ClothFactors FactorCloth(const Matrix3& deformation_gradient);

// Ψ(F) [Pa].
double ClothEnergyDensity(const ClothMaterial& material, const Matrix3& deformation_gradient);
// P = ∂Ψ/∂F [Pa].
Matrix3 ClothFirstPiolaStress(const ClothMaterial& material, const Matrix3& deformation_gradient);
// dP/dF [Pa] (column-major flattening, Matrix9): the forward derivative (ceres::Jet) of the
// same stress code, for the implicit formulations' Hessians.
Matrix9 ClothFirstPiolaStressDerivative(const ClothMaterial& material, const Matrix3& deformation_gradient);
// The return mapping of [jiang2017cloth] §5 on R, F ← Q R_projected:
// - r₃₃ > 1 (stretched across the thickness): r₃₃ = 1, r₁₃ = r₂₃ = 0;
// - r₃₃ ≤ 0 (inverted): r₁₃ = r₂₃ = 0, r₃₃ = max(r₃₃, −1);
// - otherwise the cross-shear ‖(r₁₃, r₂₃)‖ is limited to c_F k (1 − r₃₃)² / γ (all of it
//   removed when γ = 0).
Matrix3 ClothReturnMapping(const ClothMaterial& material, const Matrix3& deformation_gradient);

// The registered model "cloth": the face particles' energy and stress, with the return
// mapping as its end-of-step state update. A cloth's vertex particles carry the same
// material but no energy of their own: the transfers and the implicit step read the
// triangle's energy through its face particle (mpm/cloth_particles.h). The reference rotation
// is not used.
class ClothModel final : public ConstitutiveModel {
 public:
  explicit ClothModel(ClothMaterial material) : material_(material) {}
  const ClothMaterial& material() const { return material_; }

  std::string_view name() const override { return "cloth"; }
  double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& /*reference_rotation*/) const override {
    return ClothEnergyDensity(material_, deformation_gradient);
  }
  Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& /*reference_rotation*/) const override {
    return ClothFirstPiolaStress(material_, deformation_gradient);
  }
  Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                     const Matrix3& /*reference_rotation*/) const override {
    return ClothFirstPiolaStressDerivative(material_, deformation_gradient);
  }
  // The faster of the in-plane dilatational wave √((λ + 2μ_L)/ρ) and the layer's compression
  // wave √(max(2k, γ)/ρ) [m/s].
  double WaveSpeed(double density) const override;
  // Each of the two: the plane's waves run along the mesh (its edges bound an explicit step),
  // the layer's through the grid (its spacing does).
  double PlaneWaveSpeed(double density) const;
  double LayerWaveSpeed(double density) const;
  // The return mapping changes F's third column (the layer's state), never its plane.
  bool is_plastic() const override { return true; }
  void UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                   Matrix3& plastic_deformation_gradient) const override;

 private:
  ClothMaterial material_;
};

}  // namespace contactlab::mpm
