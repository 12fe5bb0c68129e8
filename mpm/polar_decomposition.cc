#include "mpm/polar_decomposition.h"

#include <Eigen/SVD>

namespace contactlab::mpm {
SignedSvd ComputeSignedSvd(const Matrix3& matrix) {
  // Unsigned SVD F = U diag(σ) Vᵀ: σ₁ ≥ σ₂ ≥ σ₃ ≥ 0, U and V orthogonal with det ±1.
  // A square matrix needs no QR preconditioning.
  const Eigen::JacobiSVD<Matrix3, Eigen::NoQRPreconditioner> svd(matrix, Eigen::ComputeFullU | Eigen::ComputeFullV);
  SignedSvd result{svd.matrixU(), svd.singularValues(), svd.matrixV()};

  // Sign fix of Irving et al. 2004: a reflection in U (or V) is moved into σ₃ by negating
  // the last column together with σ₃, which leaves U diag(σ) Vᵀ unchanged. Afterwards U and
  // V are proper rotations and sign(σ₃) = sign(det F).
  if (result.u.determinant() < 0.0) {
    result.u.col(2) *= -1.0;
    result.singular_values(2) *= -1.0;
  }
  if (result.v.determinant() < 0.0) {
    result.v.col(2) *= -1.0;
    result.singular_values(2) *= -1.0;
  }
  return result;
}

PolarDecomposition ComputePolarDecomposition(const Matrix3& matrix) {
  // F = U diag(σ) Vᵀ = (U Vᵀ)(V diag(σ) Vᵀ) = R S.
  const SignedSvd svd = ComputeSignedSvd(matrix);
  PolarDecomposition result;
  result.rotation = svd.u * svd.v.transpose();
  // S = Rᵀ F, symmetrized to remove rounding asymmetry.
  const Matrix3 stretch = result.rotation.transpose() * matrix;
  result.stretch = 0.5 * (stretch + stretch.transpose());
  return result;
}

}  // namespace contactlab::mpm
