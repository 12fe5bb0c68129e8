#include "mpm/constitutive/von_mises_linear_corotated.h"

#include <array>
#include <stdexcept>
#include <utility>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>

#include "mpm/constitutive/von_mises_constants.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

using Matrix6 = Eigen::Matrix<double, 6, 6>;
using Vector6 = Eigen::Matrix<double, 6, 1>;

// Index pairs (row, column) of the upper triangle, in the order of the unknowns
// s = (Ṽ11, Ṽ12, Ṽ13, Ṽ22, Ṽ23, Ṽ33).
constexpr std::array<std::pair<int, int>, 6> kUpperTriangle = {{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}}};

Vector6 UpperTriangleVector(const Matrix3& symmetric) {
  Vector6 vector;
  for (int k = 0; k < 6; ++k) {
    vector(k) = symmetric(kUpperTriangle[k].first, kUpperTriangle[k].second);
  }
  return vector;
}

Matrix3 SymmetricFromUpperTriangle(const Vector6& vector) {
  Matrix3 symmetric;
  for (int k = 0; k < 6; ++k) {
    const auto [row, column] = kUpperTriangle[k];
    symmetric(row, column) = vector(k);
    symmetric(column, row) = vector(k);
  }
  return symmetric;
}

// Matrix of the linear map L(X) = ½(Q X + X Qᵀ) on symmetric X (spec-sap-qn §2.2):
// column k is the upper-triangle vector of L(B_k), with B_k = e_a e_aᵀ for a diagonal
// unknown and e_a e_bᵀ + e_b e_aᵀ for an off-diagonal one.
Matrix6 SymmetricProductMatrix(const Matrix3& relative_rotation) {
  Matrix6 matrix;
  for (int k = 0; k < 6; ++k) {
    const auto [row, column] = kUpperTriangle[k];
    Matrix3 basis = Matrix3::Zero();
    basis(row, column) = 1.0;
    basis(column, row) = 1.0;
    const Matrix3 image = 0.5 * (relative_rotation * basis + basis * relative_rotation.transpose());
    matrix.col(k) = UpperTriangleVector(image);
  }
  return matrix;
}

}  // namespace

VonMisesReturnResult VonMisesReturnMap(const Matrix3& trial_elastic_deformation_gradient,
                                       const Matrix3& reference_rotation, double yield_stress_pa,
                                       double shear_modulus_pa) {
  if (!(shear_modulus_pa > 0.0)) {
    throw std::invalid_argument("VonMisesReturnMap: shear modulus must be positive");
  }
  if (!(yield_stress_pa >= 0.0)) {
    throw std::invalid_argument("VonMisesReturnMap: yield stress must be non-negative");
  }
  const Matrix3& trial = trial_elastic_deformation_gradient;

  // Step 1: polar decomposition of the trial state, F^E = R V ([zong2024convex] Algorithm 1); only R
  // is needed (Newton's iteration, the SVD's rotation up to rounding).
  const Matrix3 trial_rotation = ComputePolarRotation(trial);

  // Step 2: S = ½(R0ᵀF^E + F^EᵀR0) and its eigen-decomposition S = U diag(σ) Uᵀ
  // ([zong2024convex] eq. 23–24).
  const Matrix3 unrotated = reference_rotation.transpose() * trial;
  const Matrix3 symmetric_stretch = 0.5 * (unrotated + unrotated.transpose());

  // Yield test ‖σ − σ̄(1,1,1)‖ ≤ η/(2μ_L): a cylinder about (1,1,1) ([zong2024convex] eq. 24). The
  // Frobenius norm is invariant under S → UᵀSU, so ‖σ − σ̄(1,1,1)‖ = ‖S − (tr S/3) I‖_F: the
  // elastic case (most particles, most steps) needs no eigen-decomposition.
  const double radius = yield_stress_pa / (2.0 * shear_modulus_pa);  // [-]
  const double trace_mean = symmetric_stretch.trace() / 3.0;
  VonMisesReturnResult result;
  if ((symmetric_stretch - trace_mean * Matrix3::Identity()).norm() <= radius) {
    // Inside the cylinder: elastic, state unchanged. A purely hydrostatic S (zero
    // deviatoric part, the guard of eq. 25) always lands here since r ≥ 0.
    result.elastic_deformation_gradient = trial;
    result.next_reference_rotation = trial_rotation;
    return result;
  }
  const Eigen::SelfAdjointEigenSolver<Matrix3> eigen_solver(symmetric_stretch);
  const Vector3& sigma = eigen_solver.eigenvalues();
  const Matrix3& eigenvectors = eigen_solver.eigenvectors();
  const double mean = sigma.mean();
  const Vector3 deviatoric = sigma.array() - mean;
  const double deviatoric_norm = deviatoric.norm();
  result.yielded = true;

  // Step 3: radial projection onto the cylinder, σ̃ = σ̄ + (r/‖σ − σ̄‖)(σ − σ̄) ([zong2024convex] eq. 25).
  const Vector3 projected_sigma = Vector3::Constant(mean) + (radius / deviatoric_norm) * deviatoric;

  // Step 4: S̃ = U diag(σ̃) Uᵀ.
  const Matrix3 projected_stretch = eigenvectors * projected_sigma.asDiagonal() * eigenvectors.transpose();

  // Step 4 (continued): solve ½(Q Ṽ + Ṽ Qᵀ) = S̃ for symmetric Ṽ, Q = R0ᵀR ([zong2024convex]
  // eq. 26), with a fully pivoted LU.
  const Matrix3 relative_rotation = reference_rotation.transpose() * trial_rotation;
  // Eigen's rcond() estimate is only meaningful when no pivot fell below the rank
  // threshold (for an exactly singular C it solves a reduced system and reports O(1)),
  // so both checks are needed.
  const Eigen::FullPivLU<Matrix6> lu(SymmetricProductMatrix(relative_rotation));
  if (lu.isInvertible() && lu.rcond() >= kVonMisesMinimumReciprocalCondition) {
    const Matrix3 projected_symmetric_factor =
        SymmetricFromUpperTriangle(lu.solve(UpperTriangleVector(projected_stretch)));
    // F̃^E = R Ṽ.
    result.elastic_deformation_gradient = trial_rotation * projected_symmetric_factor;
  } else {
    // Fallback F̃^E = R0 S̃: also satisfies ½(R0ᵀF̃^E + F̃^EᵀR0) = S̃ (same energy), only
    // the rotation differs (spec-sap-qn §2.2).
    result.used_fallback = true;
    result.elastic_deformation_gradient = reference_rotation * projected_stretch;
  }
  // R0 for the next step: polar rotation of F̃^E (= R when Ṽ is positive definite).
  result.next_reference_rotation = ComputePolarRotation(result.elastic_deformation_gradient);
  return result;
}

}  // namespace contactlab::mpm
