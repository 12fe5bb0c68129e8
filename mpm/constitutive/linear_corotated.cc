#include "mpm/constitutive/linear_corotated.h"

namespace contactlab::mpm {
double LinearCorotatedModel::EnergyDensity(const Matrix3& deformation_gradient,
                                           const Matrix3& reference_rotation) const {
  // Ψ = μ_L‖Ê‖²_F + λ/2 tr(Ê)²  [Pa]; [zong2024convex] eq. 19.
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

// ---- Plasticity inside an implicit step -----------------------------------------------
//
// With Ê the corotated strain, t = tr Ê, d = Ê − (t/3) I, s = ‖d‖_F and K = λ + 2μ_L/3, the
// energy is μ_L s² + K t²/2, and the return mapping (von_mises_linear_corotated.h) shortens d
// to the cylinder's radius r = η/(2μ_L) and keeps t. The step energy
//   ψ_step = μ_L h(s) + K t²/2,  h(s) = s² (s ≤ r), 2 r s − r² (s > r),
// is convex in Ê (hence in F, Ê being linear in F for a fixed R0), C¹, and its stress
// P = R0 (2μ_L min(1, r/s) d + K t I) is the stress of the projected state.
namespace {

struct CappedStrain {
  Matrix3 deviatoric;
  double trace, norm, fraction;  // t, s, min(1, r/s)
  bool yielding;
};

CappedStrain CapStrain(const Matrix3& strain, double radius) {
  CappedStrain result;
  result.trace = strain.trace();
  result.deviatoric = strain - (result.trace / 3.0) * Matrix3::Identity();
  result.norm = result.deviatoric.norm();
  result.yielding = result.norm > radius;
  result.fraction = result.yielding ? radius / result.norm : 1.0;
  return result;
}

}  // namespace

double LinearCorotatedModel::InStepEnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                                 double /*state*/) const {
  const double mu = lame_.shear_modulus, bulk = lame_.first_lame_parameter + 2.0 * mu / 3.0;
  const double radius = yield_stress_ / (2.0 * mu);
  const CappedStrain strain = CapStrain(Strain(deformation_gradient, reference_rotation), radius);
  const double shear =
      strain.yielding ? mu * (2.0 * radius * strain.norm - radius * radius) : mu * strain.norm * strain.norm;
  return shear + 0.5 * bulk * strain.trace * strain.trace;
}

Matrix3 LinearCorotatedModel::InStepFirstPiolaStress(const Matrix3& deformation_gradient,
                                                     const Matrix3& reference_rotation, double /*state*/) const {
  const double mu = lame_.shear_modulus, bulk = lame_.first_lame_parameter + 2.0 * mu / 3.0;
  const CappedStrain strain = CapStrain(Strain(deformation_gradient, reference_rotation), yield_stress_ / (2.0 * mu));
  return reference_rotation *
         (2.0 * mu * strain.fraction * strain.deviatoric + bulk * strain.trace * Matrix3::Identity());
}

Matrix9 LinearCorotatedModel::InStepFirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                               const Matrix3& reference_rotation,
                                                               double /*state*/) const {
  // δÊ = sym(R0ᵀ δF), δP = R0 [2μ_L ρ (dev δÊ − [s > r] n (n : δÊ)) + K tr(δÊ) I], n = d/s.
  const double mu = lame_.shear_modulus, bulk = lame_.first_lame_parameter + 2.0 * mu / 3.0;
  const CappedStrain strain = CapStrain(Strain(deformation_gradient, reference_rotation), yield_stress_ / (2.0 * mu));
  const Matrix3 direction = strain.yielding ? Matrix3(strain.deviatoric / strain.norm) : Matrix3::Zero();
  Matrix9 derivative;
  for (int column = 0; column < 9; ++column) {
    Matrix3 change = Matrix3::Zero();
    change(column % 3, column / 3) = 1.0;
    const Matrix3 unrotated = reference_rotation.transpose() * change;
    const Matrix3 strain_change = 0.5 * (unrotated + unrotated.transpose());
    const double trace = strain_change.trace();
    Matrix3 deviatoric_change = strain_change - (trace / 3.0) * Matrix3::Identity();
    if (strain.yielding) deviatoric_change -= direction.cwiseProduct(strain_change).sum() * direction;
    const Matrix3 stress_change =
        reference_rotation * (2.0 * mu * strain.fraction * deviatoric_change + bulk * trace * Matrix3::Identity());
    derivative.col(column) = Eigen::Map<const Vector9>(stress_change.data());
  }
  return derivative;
}

}  // namespace contactlab::mpm
