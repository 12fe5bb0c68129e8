#pragma once
// The cofactor matrix cof(F) = J F⁻ᵀ and its differential, shared by the models whose energy
// depends on J = det F (fixed corotated, the equation-of-state liquid).
#include "mpm/types.h"

namespace contactlab::mpm {

// cof(F) written with cross products so that it stays defined for singular F: column i is
// f_{i+1} × f_{i+2} (columns of F, indices mod 3); J = f₀ · cof(F)₀.
inline Matrix3 Cofactor(const Matrix3& matrix) {
  Matrix3 cofactor;
  cofactor.col(0) = matrix.col(1).cross(matrix.col(2));
  cofactor.col(1) = matrix.col(2).cross(matrix.col(0));
  cofactor.col(2) = matrix.col(0).cross(matrix.col(1));
  return cofactor;
}

// Directional derivative of cof(F) along δF (product rule on the cross products). Equals
// δ(J F⁻ᵀ) = J(F⁻ᵀ : δF)F⁻ᵀ − J F⁻ᵀ δFᵀ F⁻ᵀ of spec-penalty-hybrid §1.5 for invertible F.
inline Matrix3 CofactorDifferential(const Matrix3& matrix, const Matrix3& direction) {
  Matrix3 differential;
  differential.col(0) = direction.col(1).cross(matrix.col(2)) + matrix.col(1).cross(direction.col(2));
  differential.col(1) = direction.col(2).cross(matrix.col(0)) + matrix.col(2).cross(direction.col(0));
  differential.col(2) = direction.col(0).cross(matrix.col(1)) + matrix.col(0).cross(direction.col(1));
  return differential;
}

}  // namespace contactlab::mpm
