#pragma once
// The end-of-substep constitutive update of the device explicit substep, as
// __host__ __device__ code: mpm::UpdateConstitutiveState (mpm/transfers.cc) for linear
// corotated particles, term by term (spec-sap-qn §1.2.4 step 3.2, done after G2P as on the
// CPU):
//   elastic particles   R0 ← polar rotation of F^E;
//   von Mises particles the lagged return mapping of [zong2024convex] Algorithm 1 (eq. 23–26; the
//                       host version is mpm/constitutive/von_mises_linear_corotated.cc),
//                       F^P ← F̃^E⁻¹ F^E_trial F^P, F^E ← F̃^E, R0 ← polar rotation of F̃^E.
// The pieces Eigen gives the host (3 × 3 SVD and symmetric eigen-decomposition, 6 × 6 LU) are
// small cyclic-Jacobi and Gaussian-elimination routines here. They agree with the host's to
// rounding wherever the result is unique (distinct singular values, a well-conditioned 6 × 6
// system); where it is not (repeated singular values of a nearly singular F, the 6 × 6
// system at the conditioning threshold) either answer is a valid one. The conditioning test
// uses the exact 1-norm condition number where Eigen uses an estimate of it.
#include <float.h>

#include "formulations/quasi_newton/cuda/device_math.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"
#include "mpm/constitutive/von_mises_constants.h"
#include "mpm/polar_newton_constants.h"

namespace contactlab::quasi_newton::gpu {

CONTACTLAB_HOST_DEVICE inline Vec3 ColumnOf(const Mat3& a, int j) {
  return {a.m[0][j], a.m[1][j], a.m[2][j]};
}
CONTACTLAB_HOST_DEVICE inline void SetColumn(Mat3& a, int j, const Vec3& v) {
  a.m[0][j] = v.x;
  a.m[1][j] = v.y;
  a.m[2][j] = v.z;
}
CONTACTLAB_HOST_DEVICE inline Vec3 Cross(const Vec3& a, const Vec3& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
CONTACTLAB_HOST_DEVICE inline double SquaredFrobenius(const Mat3& a) {
  double sum = 0.0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) sum += a.m[i][j] * a.m[i][j];
  }
  return sum;
}
CONTACTLAB_HOST_DEVICE inline Mat3 Combination(double s, const Mat3& a, double t, const Mat3& b) {
  Mat3 c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c.m[i][j] = s * a.m[i][j] + t * b.m[i][j];
  }
  return c;
}
CONTACTLAB_HOST_DEVICE inline Mat3 ScaledMatrix(double s, const Mat3& a) {
  Mat3 c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c.m[i][j] = s * a.m[i][j];
  }
  return c;
}
CONTACTLAB_HOST_DEVICE inline Mat3 Identity3() {
  Mat3 a;
  a.m[0][0] = a.m[1][1] = a.m[2][2] = 1.0;
  return a;
}
// cof(A) with columns c₀ = a₁ × a₂, c₁ = a₂ × a₀, c₂ = a₀ × a₁ (a_j the columns of A), so
// A⁻ᵀ = cof(A) / det A and det A = a₀ · c₀.
CONTACTLAB_HOST_DEVICE inline Mat3 ColumnCofactor(const Mat3& a) {
  Mat3 cofactor;
  SetColumn(cofactor, 0, Cross(ColumnOf(a, 1), ColumnOf(a, 2)));
  SetColumn(cofactor, 1, Cross(ColumnOf(a, 2), ColumnOf(a, 0)));
  SetColumn(cofactor, 2, Cross(ColumnOf(a, 0), ColumnOf(a, 1)));
  return cofactor;
}
CONTACTLAB_HOST_DEVICE inline Mat3 Inverse(const Mat3& a) {
  const Mat3 cofactor = ColumnCofactor(a);
  const double determinant = Dot(ColumnOf(a, 0), ColumnOf(cofactor, 0));
  return ScaledMatrix(1.0 / determinant, Transposed(cofactor));
}

// A unit vector orthogonal to the unit vector u (across its smallest component).
CONTACTLAB_HOST_DEVICE inline Vec3 AnyOrthogonal(const Vec3& u) {
  const double ax = fabs(u.x), ay = fabs(u.y), az = fabs(u.z);
  const Vec3 axis =
      (ax <= ay && ax <= az) ? Vec3{1.0, 0.0, 0.0} : (ay <= az ? Vec3{0.0, 1.0, 0.0} : Vec3{0.0, 0.0, 1.0});
  const Vec3 w = Cross(u, axis);
  return Scale(1.0 / sqrt(SquaredNorm(w)), w);
}

// A = V diag(λ) Vᵀ for symmetric A by cyclic Jacobi rotations (Golub & Van Loan §8.5), V a
// rotation, λ unsorted. Each sweep zeroes the three off-diagonal entries in turn; it stops
// when they are below rounding relative to ‖A‖_F.
CONTACTLAB_HOST_DEVICE inline void SymmetricEigen(const Mat3& symmetric, double (&eigenvalue)[3], Mat3& eigenvectors) {
  Mat3 a = symmetric;
  eigenvectors = Identity3();
  const double scale = SquaredFrobenius(a);
  const int kPairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  for (int sweep = 0; sweep < 32; ++sweep) {
    const double off = a.m[0][1] * a.m[0][1] + a.m[0][2] * a.m[0][2] + a.m[1][2] * a.m[1][2];
    if (!(off > DBL_EPSILON * DBL_EPSILON * 1e-4 * scale)) break;
    for (const auto& pair : kPairs) {
      const int p = pair[0], q = pair[1];
      if (a.m[p][q] == 0.0) continue;
      // The rotation J (J_pp = J_qq = c, J_pq = s, J_qp = −s) with (JᵀAJ)_pq = 0.
      const double theta = (a.m[q][q] - a.m[p][p]) / (2.0 * a.m[p][q]);
      const double t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
      const double c = 1.0 / sqrt(t * t + 1.0);
      const double s = t * c;
      Mat3 rotation = Identity3();
      rotation.m[p][p] = c;
      rotation.m[q][q] = c;
      rotation.m[p][q] = s;
      rotation.m[q][p] = -s;
      a = MatrixProduct(Transposed(rotation), MatrixProduct(a, rotation));
      a.m[p][q] = a.m[q][p] = 0.0;
      eigenvectors = MatrixProduct(eigenvectors, rotation);
    }
  }
  for (int k = 0; k < 3; ++k) eigenvalue[k] = a.m[k][k];
}

// The rotation U Vᵀ of the signed SVD F = U diag(σ) Vᵀ (U, V rotations, σ₁ ≥ σ₂ ≥ |σ₃|, σ₃
// negative when det F < 0; Irving et al. 2004), from the eigenvectors of FᵀF: u₁ = F v₁/σ₁,
// u₂ the unit part of F v₂ orthogonal to u₁, u₃ = u₁ × u₂. mpm::ComputeSignedSvd's rotation.
CONTACTLAB_HOST_DEVICE inline Mat3 SignedSvdRotation(const Mat3& f) {
  double lambda[3];
  Mat3 v;
  SymmetricEigen(MatrixProduct(Transposed(f), f), lambda, v);
  int order[3] = {0, 1, 2};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2 - i; ++j) {
      if (lambda[order[j]] < lambda[order[j + 1]]) {
        const int swap = order[j];
        order[j] = order[j + 1];
        order[j + 1] = swap;
      }
    }
  }
  Mat3 sorted;
  for (int k = 0; k < 3; ++k) SetColumn(sorted, k, ColumnOf(v, order[k]));
  // A column swap may have made V a reflection: flip its last column.
  if (Dot(ColumnOf(sorted, 0), Cross(ColumnOf(sorted, 1), ColumnOf(sorted, 2))) < 0.0) {
    SetColumn(sorted, 2, Scale(-1.0, ColumnOf(sorted, 2)));
  }
  const double tiny = 1e-300;
  const Vec3 a0 = Multiply(f, ColumnOf(sorted, 0));
  const double n0 = sqrt(SquaredNorm(a0));
  if (!(n0 > tiny)) return Identity3();  // F = 0: any rotation; the identity
  const Vec3 u0 = Scale(1.0 / n0, a0);
  const Vec3 a1 = Multiply(f, ColumnOf(sorted, 1));
  const Vec3 r1 = Subtract(a1, Scale(Dot(u0, a1), u0));
  const double n1 = sqrt(SquaredNorm(r1));
  const Vec3 u1 = n1 > 1e-14 * n0 ? Scale(1.0 / n1, r1) : AnyOrthogonal(u0);
  Mat3 u;
  SetColumn(u, 0, u0);
  SetColumn(u, 1, u1);
  SetColumn(u, 2, Cross(u0, u1));
  return MatrixProduct(u, Transposed(sorted));
}

// mpm::ComputePolarRotation: Newton's iteration X ← ½(ζX + ζ⁻¹X⁻ᵀ) (Higham 1986) where
// det F > 10⁻⁶ ‖F‖³_F, the signed SVD's rotation elsewhere; the same constants
// (mpm/polar_newton_constants.h).
CONTACTLAB_HOST_DEVICE inline Mat3 PolarRotation(const Mat3& matrix) {
  constexpr double kMinimumRelativeDeterminant = mpm::polar_newton::kNewtonMinimumRelativeDeterminant;
  constexpr double kConvergedStep = mpm::polar_newton::kNewtonConvergedStep;
  constexpr double kScaledStep = mpm::polar_newton::kNewtonScaledStep;
  constexpr int kMaximumSteps = mpm::polar_newton::kNewtonMaximumSteps;
  Mat3 iterate = matrix;
  for (int iteration = 0; iteration < kMaximumSteps; ++iteration) {
    const Mat3 cofactor = ColumnCofactor(iterate);
    const double determinant = Dot(ColumnOf(iterate, 0), ColumnOf(cofactor, 0));
    const double squared_norm = SquaredFrobenius(iterate);
    if (iteration == 0) {
      constexpr double k = kMinimumRelativeDeterminant;
      if (!(determinant > 0.0 && determinant * determinant > k * k * squared_norm * squared_norm * squared_norm)) break;
    }
    const Mat3 inverse_transpose = ScaledMatrix(1.0 / determinant, cofactor);
    const double squared_step = 0.25 * SquaredFrobenius(Combination(1.0, inverse_transpose, -1.0, iterate));
    if (squared_step > kScaledStep * kScaledStep) {
      const double scale = sqrt(sqrt(SquaredFrobenius(inverse_transpose) / squared_norm));
      iterate = Combination(0.5 * scale, iterate, 0.5 / scale, inverse_transpose);
      continue;
    }
    iterate = Combination(0.5, iterate, 0.5, inverse_transpose);
    if (squared_step <= kConvergedStep * kConvergedStep) return iterate;
  }
  return SignedSvdRotation(matrix);
}

// Solves ½(Q X + X Qᵀ) = S for symmetric X ([zong2024convex] eq. 26) as a 6 × 6 system on the upper
// triangle (x₁₁, x₁₂, x₁₃, x₂₂, x₂₃, x₃₃), by Gaussian elimination with full pivoting. Returns
// false where the system is singular to working precision or its 1-norm reciprocal condition
// number is below `minimum_reciprocal_condition`.
CONTACTLAB_HOST_DEVICE inline bool SolveSymmetricProduct(const Mat3& q, const Mat3& s,
                                                         double minimum_reciprocal_condition, Mat3& x) {
  const int kRow[6] = {0, 0, 0, 1, 1, 2};
  const int kColumn[6] = {0, 1, 2, 1, 2, 2};
  double a[6][6];
  double norm_one = 0.0;
  for (int k = 0; k < 6; ++k) {
    // Column k: the upper triangle of L(B_k), B_k the symmetric basis matrix of unknown k.
    Mat3 basis;
    basis.m[kRow[k]][kColumn[k]] = 1.0;
    basis.m[kColumn[k]][kRow[k]] = 1.0;
    const Mat3 image = Combination(0.5, MatrixProduct(q, basis), 0.5, MatrixProduct(basis, Transposed(q)));
    double column_sum = 0.0;
    for (int row = 0; row < 6; ++row) {
      a[row][k] = image.m[kRow[row]][kColumn[row]];
      column_sum += fabs(a[row][k]);
    }
    norm_one = column_sum > norm_one ? column_sum : norm_one;
  }
  // LU with full pivoting: P A Qc = L U, in place.
  int row_of[6], column_of[6];
  for (int k = 0; k < 6; ++k) row_of[k] = column_of[k] = k;
  double largest_pivot = 0.0;
  for (int step = 0; step < 6; ++step) {
    int pivot_row = step, pivot_column = step;
    double pivot = 0.0;
    for (int i = step; i < 6; ++i) {
      for (int j = step; j < 6; ++j) {
        if (fabs(a[i][j]) > pivot) {
          pivot = fabs(a[i][j]);
          pivot_row = i;
          pivot_column = j;
        }
      }
    }
    if (step == 0) largest_pivot = pivot;
    if (!(pivot > 6.0 * DBL_EPSILON * largest_pivot)) return false;
    for (int j = 0; j < 6; ++j) {
      const double swap = a[step][j];
      a[step][j] = a[pivot_row][j];
      a[pivot_row][j] = swap;
    }
    for (int i = 0; i < 6; ++i) {
      const double swap = a[i][step];
      a[i][step] = a[i][pivot_column];
      a[i][pivot_column] = swap;
    }
    const int swap_row = row_of[step];
    row_of[step] = row_of[pivot_row];
    row_of[pivot_row] = swap_row;
    const int swap_column = column_of[step];
    column_of[step] = column_of[pivot_column];
    column_of[pivot_column] = swap_column;
    for (int i = step + 1; i < 6; ++i) {
      a[i][step] /= a[step][step];
      for (int j = step + 1; j < 6; ++j) a[i][j] -= a[i][step] * a[step][j];
    }
  }
  // Solves A y = b through the factors.
  auto solve = [&](const double(&b)[6], double(&y)[6]) {
    double z[6];
    for (int i = 0; i < 6; ++i) {
      z[i] = b[row_of[i]];
      for (int j = 0; j < i; ++j) z[i] -= a[i][j] * z[j];
    }
    for (int i = 5; i >= 0; --i) {
      for (int j = i + 1; j < 6; ++j) z[i] -= a[i][j] * z[j];
      z[i] /= a[i][i];
    }
    for (int i = 0; i < 6; ++i) y[column_of[i]] = z[i];
  };
  // ‖A⁻¹‖₁ exactly: the largest column sum of A⁻¹, column by column.
  double inverse_norm_one = 0.0;
  for (int k = 0; k < 6; ++k) {
    double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    unit[k] = 1.0;
    double column[6];
    solve(unit, column);
    double column_sum = 0.0;
    for (int i = 0; i < 6; ++i) column_sum += fabs(column[i]);
    inverse_norm_one = column_sum > inverse_norm_one ? column_sum : inverse_norm_one;
  }
  if (!(1.0 / (norm_one * inverse_norm_one) >= minimum_reciprocal_condition)) return false;
  double rhs[6], unknowns[6];
  for (int k = 0; k < 6; ++k) rhs[k] = s.m[kRow[k]][kColumn[k]];
  solve(rhs, unknowns);
  for (int k = 0; k < 6; ++k) {
    x.m[kRow[k]][kColumn[k]] = unknowns[k];
    x.m[kColumn[k]][kRow[k]] = unknowns[k];
  }
  return true;
}

struct DeviceVonMisesResult {
  Mat3 elastic_deformation_gradient;  // F̃^E
  Mat3 next_reference_rotation;       // R0 for the next substep
  bool yielded = false;
};

// mpm::VonMisesReturnMap ([zong2024convex] Algorithm 1) with the same radius, yield test, radial
// projection and fallback (and its conditioning threshold, von_mises_constants.h).
CONTACTLAB_HOST_DEVICE inline DeviceVonMisesResult VonMisesReturn(const Mat3& trial, const Mat3& reference_rotation,
                                                                  double yield_stress, double shear_modulus) {
  DeviceVonMisesResult result;
  const Mat3 trial_rotation = PolarRotation(trial);
  const Mat3 unrotated = MatrixProduct(Transposed(reference_rotation), trial);
  const Mat3 stretch = Combination(0.5, unrotated, 0.5, Transposed(unrotated));
  const double radius = yield_stress / (2.0 * shear_modulus);
  const double trace_mean = (stretch.m[0][0] + stretch.m[1][1] + stretch.m[2][2]) / 3.0;
  const Mat3 deviator = Combination(1.0, stretch, -trace_mean, Identity3());
  if (sqrt(SquaredFrobenius(deviator)) <= radius) {
    result.elastic_deformation_gradient = trial;
    result.next_reference_rotation = trial_rotation;
    return result;
  }
  double sigma[3];
  Mat3 eigenvectors;
  SymmetricEigen(stretch, sigma, eigenvectors);
  const double mean = (sigma[0] + sigma[1] + sigma[2]) / 3.0;
  const double deviatoric[3] = {sigma[0] - mean, sigma[1] - mean, sigma[2] - mean};
  const double deviatoric_norm =
      sqrt(deviatoric[0] * deviatoric[0] + deviatoric[1] * deviatoric[1] + deviatoric[2] * deviatoric[2]);
  result.yielded = true;
  // S̃ = U diag(σ̄ + (r/‖σ − σ̄‖)(σ − σ̄)) Uᵀ (eq. 25).
  Mat3 scaled_vectors;
  for (int k = 0; k < 3; ++k) {
    SetColumn(scaled_vectors, k, Scale(mean + radius / deviatoric_norm * deviatoric[k], ColumnOf(eigenvectors, k)));
  }
  const Mat3 projected_stretch = MatrixProduct(scaled_vectors, Transposed(eigenvectors));
  const Mat3 relative_rotation = MatrixProduct(Transposed(reference_rotation), trial_rotation);
  Mat3 symmetric_factor;
  if (SolveSymmetricProduct(relative_rotation, projected_stretch, mpm::kVonMisesMinimumReciprocalCondition,
                            symmetric_factor)) {
    result.elastic_deformation_gradient = MatrixProduct(trial_rotation, symmetric_factor);
  } else {
    result.elastic_deformation_gradient = MatrixProduct(reference_rotation, projected_stretch);
  }
  result.next_reference_rotation = PolarRotation(result.elastic_deformation_gradient);
  return result;
}

// The constitutive update of particle p after its G2P (mpm::UpdateConstitutiveState).
// yield_stress[material] > 0 marks a von Mises material.
CONTACTLAB_HOST_DEVICE inline void ConstitutiveUpdateStep(const ParticleView& particles, const MaterialView& materials,
                                                          int p) {
  const int n = particles.count;
  const int material = particles.material[p];
  const Mat3 trial = LoadMatrix(particles.deformation_gradient, n, p);
  const double yield_stress = materials.yield_stress[material];
  if (!(yield_stress > 0.0)) {
    StoreMatrix(particles.reference_rotation, n, p, PolarRotation(trial));
    return;
  }
  const DeviceVonMisesResult result = VonMisesReturn(trial, LoadMatrix(particles.reference_rotation, n, p),
                                                     yield_stress, materials.shear_modulus[material]);
  if (result.yielded) {
    const Mat3 plastic = LoadMatrix(particles.plastic_deformation_gradient, n, p);
    StoreMatrix(particles.plastic_deformation_gradient, n, p,
                MatrixProduct(Inverse(result.elastic_deformation_gradient), MatrixProduct(trial, plastic)));
    StoreMatrix(particles.deformation_gradient, n, p, result.elastic_deformation_gradient);
  }
  StoreMatrix(particles.reference_rotation, n, p, result.next_reference_rotation);
}

}  // namespace contactlab::quasi_newton::gpu
