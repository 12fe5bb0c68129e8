#include "mpm/constitutive/cloth.h"

// ceres::Jet is header-only: it gives the tangent dP/dF by forward differentiation of the
// stress below, so the tangent is exactly the derivative of the stress that is tested
// against an independent energy (tests/unit/mpm_cloth_test.cc).
#include <ceres/jet.h>

#include <algorithm>
#include <cmath>

namespace contactlab::mpm {
namespace {

template <typename Scalar>
using Matrix2Of = Eigen::Matrix<Scalar, 2, 2>;
template <typename Scalar>
using Matrix3Of = Eigen::Matrix<Scalar, 3, 3>;
template <typename Scalar>
using Vector3Of = Eigen::Matrix<Scalar, 3, 1>;

// The rotation closest to a 2×2 matrix in the Frobenius norm (its polar rotation when
// det > 0): the angle atan2(a₂₁ − a₁₂, a₁₁ + a₂₂).
template <typename Scalar>
Matrix2Of<Scalar> ClosestRotation(const Matrix2Of<Scalar>& a) {
  using std::atan2, std::cos, std::sin;
  const Scalar angle = atan2(a(1, 0) - a(0, 1), a(0, 0) + a(1, 1));
  const Scalar c = cos(angle), s = sin(angle);
  Matrix2Of<Scalar> rotation;
  rotation << c, -s, s, c;
  return rotation;
}

// Gram–Schmidt F = Q R (see FactorCloth), for any scalar type.
template <typename Scalar>
void Factor(const Matrix3Of<Scalar>& f, Matrix3Of<Scalar>& q, Matrix3Of<Scalar>& r) {
  const Vector3Of<Scalar> f1 = f.col(0), f2 = f.col(1), f3 = f.col(2);
  r.setZero();
  r(0, 0) = f1.norm();
  q.col(0) = f1 / r(0, 0);
  r(0, 1) = q.col(0).dot(f2);
  const Vector3Of<Scalar> rest = f2 - r(0, 1) * q.col(0);
  r(1, 1) = rest.norm();
  q.col(1) = rest / r(1, 1);
  q.col(2) = q.col(0).cross(q.col(1));
  r(0, 2) = q.col(0).dot(f3);
  r(1, 2) = q.col(1).dot(f3);
  r(2, 2) = q.col(2).dot(f3);
}

// ∂Ψ/∂R as an upper-triangular matrix: Ψ depends on R's upper triangle only.
template <typename Scalar>
Matrix3Of<Scalar> EnergyGradientInR(const ClothMaterial& material, const Matrix3Of<Scalar>& upper) {
  const double mu = material.lame.shear_modulus, lambda = material.lame.first_lame_parameter;
  const Matrix2Of<Scalar> plane = upper.template topLeftCorner<2, 2>();
  Matrix2Of<Scalar> cofactor;  // ∂det/∂R̂
  cofactor << plane(1, 1), -plane(1, 0), -plane(0, 1), plane(0, 0);
  // ∂‖R̂ − rot(R̂)‖²/∂R̂ = 2(R̂ − rot(R̂)): the rotation is the minimizer (envelope theorem).
  const Matrix2Of<Scalar> plane_stress =
      (2.0 * mu) * (plane - ClosestRotation(plane)) + (lambda * (plane.determinant() - Scalar(1.0))) * cofactor;
  Matrix3Of<Scalar> gradient = Matrix3Of<Scalar>::Zero();
  gradient(0, 0) = plane_stress(0, 0);
  gradient(0, 1) = plane_stress(0, 1);
  gradient(1, 1) = plane_stress(1, 1);
  const Scalar r33 = upper(2, 2);
  const Scalar gap = Scalar(1.0) - r33;
  gradient(2, 2) = r33 <= Scalar(1.0) ? Scalar(-material.normal_stiffness * gap * gap) : Scalar(0.0);
  gradient(0, 2) = material.shear_stiffness * upper(0, 2);
  gradient(1, 2) = material.shear_stiffness * upper(1, 2);
  return gradient;
}

template <typename Scalar>
Matrix3Of<Scalar> Stress(const ClothMaterial& material, const Matrix3Of<Scalar>& deformation_gradient) {
  // dΨ = G : dR with G = ∂Ψ/∂R (upper triangular). With M = Qᵀ dF R⁻¹ = Qᵀ dQ + dR R⁻¹, a
  // skew part plus an upper-triangular one, dR R⁻¹ is M's upper triangle with the strictly
  // lower one folded onto it: dR R⁻¹ = U(M) with U_ii = M_ii, U_ij = M_ij + M_ji (i < j).
  // Hence dΨ = (G Rᵀ) : U(M) = S : M, where S copies K = G Rᵀ's strict upper triangle onto
  // its lower one (S_ij = S_ji = K_ij, i < j; S_ii = K_ii), and P = Q S R⁻ᵀ.
  Matrix3Of<Scalar> q, r;
  Factor(deformation_gradient, q, r);
  const Matrix3Of<Scalar> k = EnergyGradientInR(material, r) * r.transpose();
  Matrix3Of<Scalar> s = k;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < i; ++j) s(i, j) = k(j, i);
  }
  // R⁻¹ of the upper-triangular R by back substitution.
  Matrix3Of<Scalar> inverse = Matrix3Of<Scalar>::Zero();
  for (int i = 0; i < 3; ++i) inverse(i, i) = Scalar(1.0) / r(i, i);
  inverse(0, 1) = -r(0, 1) * inverse(0, 0) * inverse(1, 1);
  inverse(1, 2) = -r(1, 2) * inverse(1, 1) * inverse(2, 2);
  inverse(0, 2) = -(r(0, 1) * inverse(1, 2) + r(0, 2) * inverse(2, 2)) * inverse(0, 0);
  return q * s * inverse.transpose();
}

}  // namespace

ClothFactors FactorCloth(const Matrix3& deformation_gradient) {
  ClothFactors factors;
  Factor<double>(deformation_gradient, factors.rotation, factors.upper);
  return factors;
}

double ClothEnergyDensity(const ClothMaterial& material, const Matrix3& deformation_gradient) {
  const Matrix3 r = FactorCloth(deformation_gradient).upper;
  const Matrix2Of<double> plane = r.topLeftCorner<2, 2>();
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
  return Stress<double>(material, deformation_gradient);
}

Matrix9 ClothFirstPiolaStressDerivative(const ClothMaterial& material, const Matrix3& deformation_gradient) {
  using Jet9 = ceres::Jet<double, 9>;
  Matrix3Of<Jet9> f;
  for (int b = 0; b < 9; ++b) f(b) = Jet9(deformation_gradient(b), b);  // column-major: variable b is vec(F)_b
  const Matrix3Of<Jet9> stress = Stress<Jet9>(material, f);
  Matrix9 derivative;
  for (int a = 0; a < 9; ++a) derivative.row(a) = stress(a).v.transpose();
  return derivative;
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

double ClothModel::PlaneWaveSpeed(double density) const {
  return material_.lame.DilatationalWaveSpeed(density);
}

double ClothModel::LayerWaveSpeed(double density) const {
  // f = k/3 (1 − r₃₃)³ has stiffness f'' = 2k (1 − r₃₃) ≤ 2k for r₃₃ ≥ 0; g has γ.
  return std::sqrt(std::max(2.0 * material_.normal_stiffness, material_.shear_stiffness) / density);
}

double ClothModel::WaveSpeed(double density) const {
  return std::max(PlaneWaveSpeed(density), LayerWaveSpeed(density));
}

void ClothModel::UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& /*reference_rotation*/,
                             Matrix3& /*plastic_deformation_gradient*/) const {
  elastic_deformation_gradient = ClothReturnMapping(material_, elastic_deformation_gradient);
}

}  // namespace contactlab::mpm
