#include "mpm/constitutive/cloth.h"

#include <algorithm>
#include <cmath>

namespace contactlab::mpm {
namespace {

using Matrix2 = Eigen::Matrix2d;

// The rotation closest to a 2×2 matrix in the Frobenius norm (its polar rotation when
// det > 0): the angle atan2(a₂₁ − a₁₂, a₁₁ + a₂₂).
Matrix2 ClosestRotation(const Matrix2& a) {
  const double angle = std::atan2(a(1, 0) - a(0, 1), a(0, 0) + a(1, 1));
  const double c = std::cos(angle), s = std::sin(angle);
  Matrix2 rotation;
  rotation << c, -s, s, c;
  return rotation;
}

// ∂Ψ/∂R as an upper-triangular matrix: Ψ depends on R's upper triangle only.
Matrix3 EnergyGradientInR(const ClothMaterial& material, const Matrix3& upper) {
  const double mu = material.lame.shear_modulus, lambda = material.lame.first_lame_parameter;
  const Matrix2 plane = upper.topLeftCorner<2, 2>();
  Matrix2 cofactor;  // ∂det/∂R̂
  cofactor << plane(1, 1), -plane(1, 0), -plane(0, 1), plane(0, 0);
  // ∂‖R̂ − rot(R̂)‖²/∂R̂ = 2(R̂ − rot(R̂)): the rotation is the minimizer (envelope theorem).
  const Matrix2 plane_stress =
      2.0 * mu * (plane - ClosestRotation(plane)) + lambda * (plane.determinant() - 1.0) * cofactor;
  Matrix3 gradient = Matrix3::Zero();
  gradient(0, 0) = plane_stress(0, 0);
  gradient(0, 1) = plane_stress(0, 1);
  gradient(1, 1) = plane_stress(1, 1);
  const double r33 = upper(2, 2);
  gradient(2, 2) = r33 <= 1.0 ? -material.normal_stiffness * (1.0 - r33) * (1.0 - r33) : 0.0;
  gradient(0, 2) = material.shear_stiffness * upper(0, 2);
  gradient(1, 2) = material.shear_stiffness * upper(1, 2);
  return gradient;
}

}  // namespace

ClothFactors FactorCloth(const Matrix3& deformation_gradient) {
  const Vector3 f1 = deformation_gradient.col(0), f2 = deformation_gradient.col(1), f3 = deformation_gradient.col(2);
  ClothFactors factors;
  Matrix3& q = factors.rotation;
  Matrix3& r = factors.upper;
  r.setZero();
  r(0, 0) = f1.norm();
  q.col(0) = f1 / r(0, 0);
  r(0, 1) = q.col(0).dot(f2);
  const Vector3 rest = f2 - r(0, 1) * q.col(0);
  r(1, 1) = rest.norm();
  q.col(1) = rest / r(1, 1);
  q.col(2) = q.col(0).cross(q.col(1));
  r(0, 2) = q.col(0).dot(f3);
  r(1, 2) = q.col(1).dot(f3);
  r(2, 2) = q.col(2).dot(f3);
  return factors;
}

double ClothEnergyDensity(const ClothMaterial& material, const Matrix3& deformation_gradient) {
  const Matrix3 r = FactorCloth(deformation_gradient).upper;
  const Matrix2 plane = r.topLeftCorner<2, 2>();
  const double mu = material.lame.shear_modulus, lambda = material.lame.first_lame_parameter;
  const double determinant = plane.determinant();
  const double plane_energy =
      mu * (plane - ClosestRotation(plane)).squaredNorm() + 0.5 * lambda * (determinant - 1.0) * (determinant - 1.0);
  const double gap = 1.0 - r(2, 2);
  const double normal_energy = gap >= 0.0 ? material.normal_stiffness / 3.0 * gap * gap * gap : 0.0;
  const double shear_energy = 0.5 * material.shear_stiffness * (r(0, 2) * r(0, 2) + r(1, 2) * r(1, 2));
  return plane_energy + normal_energy + shear_energy;
}

Matrix3 ClothFirstPiolaStress(const ClothMaterial& material, const Matrix3& deformation_gradient) {
  // dΨ = G : dR with G = ∂Ψ/∂R (upper triangular). With M = Qᵀ dF R⁻¹ = Qᵀ dQ + dR R⁻¹, a
  // skew part plus an upper-triangular one, dR R⁻¹ is M's upper triangle with the strictly
  // lower one folded onto it: dR R⁻¹ = U(M) with U_ii = M_ii, U_ij = M_ij + M_ji (i < j).
  // Hence dΨ = (G Rᵀ) : U(M) = S : M, where S copies K = G Rᵀ's strict upper triangle onto
  // its lower one (S_ij = S_ji = K_ij, i < j; S_ii = K_ii), and P = Q S R⁻ᵀ.
  const ClothFactors factors = FactorCloth(deformation_gradient);
  const Matrix3 k = EnergyGradientInR(material, factors.upper) * factors.upper.transpose();
  Matrix3 s = k.triangularView<Eigen::Upper>();
  s.triangularView<Eigen::StrictlyLower>() = k.triangularView<Eigen::StrictlyUpper>().transpose();
  const Matrix3 inverse_transpose = factors.upper.inverse().transpose();
  return factors.rotation * s * inverse_transpose;
}

Matrix3 ClothReturnMapping(const ClothMaterial& material, const Matrix3& deformation_gradient) {
  ClothFactors factors = FactorCloth(deformation_gradient);
  Matrix3& r = factors.upper;
  if (r(2, 2) > 1.0) {
    r(2, 2) = 1.0;
    r(0, 2) = r(1, 2) = 0.0;
  } else if (r(2, 2) <= 0.0) {
    r(0, 2) = r(1, 2) = 0.0;
    r(2, 2) = std::max(r(2, 2), -1.0);
  } else if (material.shear_stiffness <= 0.0) {
    r(0, 2) = r(1, 2) = 0.0;
  } else {
    const double shear = std::hypot(r(0, 2), r(1, 2));
    const double gap = 1.0 - r(2, 2);
    const double limit = material.layer_friction * material.normal_stiffness * gap * gap;
    if (material.shear_stiffness * shear > limit) {
      const double scale = limit / (material.shear_stiffness * shear);
      r(0, 2) *= scale;
      r(1, 2) *= scale;
    }
  }
  return factors.rotation * r;
}

}  // namespace contactlab::mpm
