#include "mpm/constitutive/fixed_corotated.h"

#include <cmath>

#include "mpm/constitutive/cofactor.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

// Smallest magnitude allowed for a sum of two signed singular values σ_j + σ_k in the
// rotation derivative [-, F is dimensionless]. The exact derivative grows like
// 1/(σ_j + σ_k) and is unbounded at the inversion boundary; clamping the denominator keeps
// the tangent finite there and leaves it exact everywhere else.
constexpr double kRotationDerivativeFloor = 1e-6;

Matrix3 CrossProductMatrix(const Vector3& vector) {
  Matrix3 cross;
  cross << 0.0, -vector.z(), vector.y(), vector.z(), 0.0, -vector.x(), -vector.y(), vector.x(), 0.0;
  return cross;
}

// Keeps the sign of σ_j + σ_k but bounds its magnitude from below.
double RegularizedSingularValueSum(double sum) {
  if (std::abs(sum) >= kRotationDerivativeFloor) return sum;
  return sum < 0.0 ? -kRotationDerivativeFloor : kRotationDerivativeFloor;
}

}  // namespace

double FixedCorotatedModel::EnergyDensity(const Matrix3& deformation_gradient,
                                          const Matrix3& /*reference_rotation*/) const {
  // Ψ = μ_L Σ(σ_i − 1)² + λ/2 (J − 1)²  [Pa]; spec-penalty-hybrid §1.9 (thesis eq. 6.1).
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const double volume_ratio = deformation_gradient.determinant();
  return lame_.shear_modulus * (svd.singular_values.array() - 1.0).square().sum() +
         0.5 * lame_.first_lame_parameter * (volume_ratio - 1.0) * (volume_ratio - 1.0);
}

Matrix3 FixedCorotatedModel::FirstPiolaStress(const Matrix3& deformation_gradient,
                                              const Matrix3& /*reference_rotation*/) const {
  // P = 2μ_L(F − R) + λ(J − 1) J F⁻ᵀ  [Pa]; the factor 2 corrects thesis eq. 6.1
  // (spec-penalty-hybrid §1.9 erratum).
  const Matrix3 rotation = ComputePolarDecomposition(deformation_gradient).rotation;
  const double volume_ratio = deformation_gradient.determinant();
  return 2.0 * lame_.shear_modulus * (deformation_gradient - rotation) +
         lame_.first_lame_parameter * (volume_ratio - 1.0) * Cofactor(deformation_gradient);
}

Matrix9 FixedCorotatedModel::FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                        const Matrix3& /*reference_rotation*/) const {
  // Signed SVD F = U diag(σ) Vᵀ, so R = U Vᵀ and S = V diag(σ) Vᵀ.
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const Matrix3 cofactor = Cofactor(deformation_gradient);
  const double volume_ratio = deformation_gradient.determinant();
  const double shear_modulus = lame_.shear_modulus;
  const double first_lame_parameter = lame_.first_lame_parameter;

  // In the eigenbasis V of S, tr(S) I − S = diag(σ₂ + σ₃, σ₁ + σ₃, σ₁ + σ₂).
  const Vector3& sigma = svd.singular_values;
  const Vector3 singular_value_sums(RegularizedSingularValueSum(sigma(1) + sigma(2)),
                                    RegularizedSingularValueSum(sigma(0) + sigma(2)),
                                    RegularizedSingularValueSum(sigma(0) + sigma(1)));

  // Column k of dP/dF is vec(δP) for δF = e_row e_colᵀ, k = row + 3 col (column-major).
  Matrix9 derivative;
  for (int column = 0; column < 9; ++column) {
    Matrix3 direction = Matrix3::Zero();
    direction(column % 3, column / 3) = 1.0;

    // δR = R [w]×, w = (tr(S) I − S)⁻¹ axial(RᵀδF − δFᵀR)  (spec-penalty-hybrid §1.5).
    // Expressed in the V basis: Vᵀ(RᵀδF − δFᵀR)V = G − Gᵀ with G = Uᵀ δF V, the system
    // is diagonal, and δR = U [w̃]× Vᵀ with w̃ = Vᵀ w.
    const Matrix3 rotated_direction = svd.u.transpose() * direction * svd.v;
    const Matrix3 skew = rotated_direction - rotated_direction.transpose();
    const Vector3 skew_axial(skew(2, 1), skew(0, 2), skew(1, 0));
    const Vector3 rotation_rate = skew_axial.cwiseQuotient(singular_value_sums);
    const Matrix3 rotation_differential = svd.u * CrossProductMatrix(rotation_rate) * svd.v.transpose();

    // δP = 2μ_L(δF − δR) + λ(J F⁻ᵀ : δF) J F⁻ᵀ + λ(J − 1) δ(J F⁻ᵀ)  (spec-penalty-hybrid §1.5).
    const Matrix3 stress_differential =
        2.0 * shear_modulus * (direction - rotation_differential) +
        first_lame_parameter * cofactor(column % 3, column / 3) * cofactor +
        first_lame_parameter * (volume_ratio - 1.0) * CofactorDifferential(deformation_gradient, direction);
    derivative.col(column) = Eigen::Map<const Vector9>(stress_differential.data());
  }
  return derivative;
}

}  // namespace contactlab::mpm
