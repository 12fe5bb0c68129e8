#include "mpm/constitutive/linear_corotated.h"

namespace contactlab::mpm {
double LinearCorotatedModel::EnergyDensity(const Matrix3& deformation_gradient,
                                           const Matrix3& reference_rotation) const {
  // Ψ = μ_L‖Ê‖²_F + λ/2 tr(Ê)²  [Pa]; seed 000 eq. 19.
  const Matrix3 strain = Strain(deformation_gradient, reference_rotation);
  const double trace = strain.trace();
  return lame_.shear_modulus * strain.squaredNorm() + 0.5 * lame_.first_lame_parameter * trace * trace;
}

Matrix9 LinearCorotatedModel::FirstPiolaStressDerivative(const Matrix3& /*deformation_gradient*/,
                                                         const Matrix3& reference_rotation) const {
  // δP = μ_L δF + μ_L R0 δFᵀ R0 + λ (R0 : δF) R0  (spec-sap-qn §2.1, constant in F).
  // For δF = e_i e_jᵀ (column i + 3j): R0 δFᵀ R0 = R0(:, j) R0(i, :), so entry
  // (p + 3q, i + 3j) of the middle term is R0(p, j) R0(i, q).
  const double shear_modulus = lame_.shear_modulus;
  const Eigen::Map<const Vector9> rotation_vector(reference_rotation.data());

  Matrix9 derivative =
      shear_modulus * Matrix9::Identity() + lame_.first_lame_parameter * rotation_vector * rotation_vector.transpose();
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 3; ++i) {
      for (int q = 0; q < 3; ++q) {
        for (int p = 0; p < 3; ++p) {
          derivative(p + 3 * q, i + 3 * j) += shear_modulus * reference_rotation(p, j) * reference_rotation(i, q);
        }
      }
    }
  }
  return derivative;
}

}  // namespace contactlab::mpm
