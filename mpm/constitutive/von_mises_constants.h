#pragma once
// Constants of the lagged von Mises return mapping (von_mises_linear_corotated.cc). No
// includes, so that device code (the CUDA backend's device_constitutive.h) uses the same values.

namespace contactlab::mpm {

// Below this reciprocal condition number of the 6x6 matrix of [zong2024convex] eq. 26 the solve is
// treated as ill-conditioned. rcond = 1e-8 still leaves about 8 correct digits of Ṽ in double
// precision; C is exactly singular when the relative rotation Q = R0ᵀR turns by 90° or 180°.
constexpr double kVonMisesMinimumReciprocalCondition = 1e-8;

}  // namespace contactlab::mpm
