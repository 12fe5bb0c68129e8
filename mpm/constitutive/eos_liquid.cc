#include "mpm/constitutive/eos_liquid.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "mpm/constitutive/cofactor.h"

namespace contactlab::mpm {

EquationOfStateLiquidModel::EquationOfStateLiquidModel(double bulk_modulus, double exponent)
    : bulk_modulus_(bulk_modulus), exponent_(exponent) {
  if (!(bulk_modulus > 0.0) || !std::isfinite(bulk_modulus)) {
    throw std::invalid_argument("eos_liquid: bulk modulus must be positive and finite");
  }
  if (!(exponent > 1.0) || !std::isfinite(exponent)) {
    throw std::invalid_argument("eos_liquid: exponent must be finite and above 1");
  }
}

double EquationOfStateLiquidModel::Pressure(double volume_ratio) const {
  // J ≤ 0 is no state of a liquid: p is infinite there (std::pow would give a finite value of
  // either sign for an integer γ).
  if (!(volume_ratio > 0.0)) return std::numeric_limits<double>::infinity();
  return bulk_modulus_ * (std::pow(volume_ratio, -exponent_) - 1.0);
}

double EquationOfStateLiquidModel::EnergyDensity(const Matrix3& deformation_gradient,
                                                 const Matrix3& /*reference_rotation*/) const {
  const double volume_ratio = deformation_gradient.determinant();
  // ψ → ∞ as J → 0⁺: a barrier, so a line search on an energy never steps through J = 0.
  if (!(volume_ratio > 0.0)) return std::numeric_limits<double>::infinity();
  return bulk_modulus_ * (volume_ratio - 1.0) -
         bulk_modulus_ * (std::pow(volume_ratio, 1.0 - exponent_) - 1.0) / (1.0 - exponent_);
}

Matrix3 EquationOfStateLiquidModel::FirstPiolaStress(const Matrix3& deformation_gradient,
                                                     const Matrix3& /*reference_rotation*/) const {
  // P = ψ'(J) ∂J/∂F = −p cof(F).
  return -Pressure(deformation_gradient.determinant()) * Cofactor(deformation_gradient);
}

Matrix9 EquationOfStateLiquidModel::FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                               const Matrix3& /*reference_rotation*/) const {
  const Matrix3 cofactor = Cofactor(deformation_gradient);
  const double volume_ratio = deformation_gradient.col(0).dot(cofactor.col(0));
  const double first = -Pressure(volume_ratio);  // ψ'(J)
  const double second = volume_ratio > 0.0 ? exponent_ * bulk_modulus_ * std::pow(volume_ratio, -exponent_ - 1.0)
                                           : std::numeric_limits<double>::infinity();  // ψ''(J)
  const Eigen::Map<const Vector9> cofactor_vector(cofactor.data());
  Matrix9 derivative = second * cofactor_vector * cofactor_vector.transpose();
  for (int k = 0; k < 9; ++k) {
    Matrix3 direction = Matrix3::Zero();
    direction(k) = 1.0;  // column-major: entry (k % 3, k / 3)
    const Matrix3 differential = CofactorDifferential(deformation_gradient, direction);
    derivative.col(k) += first * Eigen::Map<const Vector9>(differential.data());
  }
  return derivative;
}

double EquationOfStateLiquidModel::WaveSpeed(double density) const {
  return std::sqrt(exponent_ * bulk_modulus_ / density);
}

void EquationOfStateLiquidModel::UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                                             Matrix3& plastic_deformation_gradient) const {
  const double volume_ratio = elastic_deformation_gradient.determinant();
  const double stretch = std::cbrt(volume_ratio);
  // (J^{1/3} I)⁻¹ F^E_old F^P.
  plastic_deformation_gradient = (elastic_deformation_gradient / stretch) * plastic_deformation_gradient;
  elastic_deformation_gradient = stretch * Matrix3::Identity();
  reference_rotation = Matrix3::Identity();
}

}  // namespace contactlab::mpm
