#pragma once
// Polar decomposition F = R S with R a proper rotation (det R = +1) and S symmetric,
// computed from a 3x3 SVD with the sign fix of Irving et al. (2004): when det F < 0 the
// smallest singular value changes sign so that R stays a rotation.
#include <cmath>

#include "mpm/polar_newton_constants.h"
#include "mpm/types.h"

namespace contactlab::mpm {

struct PolarDecomposition {
  Matrix3 rotation;  // R, det R = +1
  Matrix3 stretch;   // S = Rᵀ F, symmetric
};

// Signed SVD F = U diag(σ) Vᵀ with U, V proper rotations; σ sorted descending except that
// σ₃ may be negative when det F < 0.
struct SignedSvd {
  Matrix3 u;
  Vector3 singular_values;
  Matrix3 v;
};

SignedSvd ComputeSignedSvd(const Matrix3& matrix);
PolarDecomposition ComputePolarDecomposition(const Matrix3& matrix);

// The rotation R of ComputePolarDecomposition alone, equal to it up to rounding, and
// cheaper: a few Newton steps where det F is well above zero, the SVD elsewhere. Inline so
// that the particle loops of mpm/transfers.cc can build it for their instruction sets.
inline Matrix3 ComputePolarRotation(const Matrix3& matrix) {
  // Newton's iteration X ← ½(ζX + ζ⁻¹X⁻ᵀ), X₀ = F (Higham 1986), converges to the orthogonal
  // polar factor of any nonsingular F; for det F > 0 that is the rotation U Vᵀ of the signed
  // SVD. X⁻ᵀ = cof(X)/det X, whose columns are cross products of the columns of X. The
  // scale ζ = (‖X⁻¹‖_F/‖X‖_F)^½ speeds up the steps that would be large (a strongly
  // stretched F); near convergence ζ → 1 and plain steps ½(X⁻ᵀ − X) are taken.
  Matrix3 iterate = matrix;
  for (int iteration = 0; iteration < polar_newton::kNewtonMaximumSteps; ++iteration) {
    Matrix3 cofactor;
    cofactor.col(0) = iterate.col(1).cross(iterate.col(2));
    cofactor.col(1) = iterate.col(2).cross(iterate.col(0));
    cofactor.col(2) = iterate.col(0).cross(iterate.col(1));
    const double determinant = iterate.col(0).dot(cofactor.col(0));
    const double squared_norm = iterate.squaredNorm();
    if (iteration == 0) {
      // det F > k ‖F‖³_F, compared squared to spare a square root.
      constexpr double k = polar_newton::kNewtonMinimumRelativeDeterminant;
      if (!(determinant > 0.0 && determinant * determinant > k * k * squared_norm * squared_norm * squared_norm)) break;
    }
    const Matrix3 inverse_transpose = (1.0 / determinant) * cofactor;
    // Squared length of the plain step ½(X⁻ᵀ − X).
    const double squared_step = 0.25 * (inverse_transpose - iterate).squaredNorm();
    if (squared_step > polar_newton::kNewtonScaledStep * polar_newton::kNewtonScaledStep) {
      const double scale = std::sqrt(std::sqrt(inverse_transpose.squaredNorm() / squared_norm));
      iterate = (0.5 * scale) * iterate + (0.5 / scale) * inverse_transpose;
      continue;
    }
    iterate = 0.5 * (iterate + inverse_transpose);
    if (squared_step <= polar_newton::kNewtonConvergedStep * polar_newton::kNewtonConvergedStep) return iterate;
  }
  return ComputePolarDecomposition(matrix).rotation;
}

}  // namespace contactlab::mpm
