#pragma once
// Polar decomposition F = R S with R a proper rotation (det R = +1) and S symmetric,
// computed from a 3x3 SVD with the sign fix of Irving et al. (2004): when det F < 0 the
// smallest singular value changes sign so that R stays a rotation.
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
// cheaper: a few Newton steps where det F is well above zero, the SVD elsewhere.
Matrix3 ComputePolarRotation(const Matrix3& matrix);

}  // namespace contactlab::mpm
