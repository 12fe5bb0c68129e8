#pragma once
// Constants of the Newton iteration for the polar rotation (mpm/polar_decomposition.h:
// ComputePolarRotation). No includes, so that device code (the CUDA backend's
// device_constitutive.h) uses the same values.

namespace contactlab::mpm::polar_newton {
// Newton's iteration for the polar rotation is used only where det F exceeds this fraction
// of ‖F‖³_F (its largest value, for F = s·R, is 1/√27 ≈ 0.19): a well-conditioned F with a
// proper polar rotation. Other matrices, reflections among them, take the SVD path.
constexpr double kNewtonMinimumRelativeDeterminant = 1e-6;
// Newton's iteration converges quadratically: once a step moves X by less than this (in
// the Frobenius norm), X is within about half its square, i.e. below rounding, of R.
constexpr double kNewtonConvergedStep = 1e-8;
// Steps that would move X by more than this use Higham's norm scaling.
constexpr double kNewtonScaledStep = 1e-2;
// Well-conditioned matrices converge in under 10 steps; more means something is off.
constexpr int kNewtonMaximumSteps = 20;
}  // namespace contactlab::mpm::polar_newton
