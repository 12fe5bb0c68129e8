// Constitutive models: P = ∂Ψ/∂F and dP/dF checked against automatic differentiation
// (ceres::Jet) of templated reference formulas that share no code with the production
// models; Lamé conversion, model factory and material helpers.
#include <ceres/jet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mpm/constitutive/constitutive_model.h"
#include "mpm/constitutive/drucker_prager.h"
#include "mpm/constitutive/eos_liquid.h"
#include "mpm/constitutive/linear_corotated.h"
#include "mpm/constitutive/von_mises_linear_corotated.h"
#include "mpm/material.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

using Jet9 = ceres::Jet<double, 9>;
template <typename Scalar>
using Matrix3Of = Eigen::Matrix<Scalar, 3, 3>;

// Both the production code and the references below evaluate each quantity in O(100)
// floating-point operations, and the rotations they use (Jacobi SVD vs. Newton
// iteration) are accurate to a few ε amplified by 1/(σ_j + σ_k) ≤ 5 for the test
// gradients. Their difference is therefore O(1e-14) relative to the stress scale μ_L + λ;
// 1e-10 keeps a margin of more than 1000 while any wrong or missing term shows at O(1).
constexpr double kAutodiffRelativeTolerance = 1e-10;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

// ---- Templated reference formulas (independent of the production code) -------------

// Value part of a scalar (the Jet's real part).
template <typename Scalar>
double ValueOf(const Scalar& value) {
  if constexpr (std::is_same_v<Scalar, double>) {
    return value;
  } else {
    return value.a;
  }
}

template <typename Scalar>
Scalar Determinant(const Matrix3Of<Scalar>& m) {
  return m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1)) - m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0)) +
         m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0));
}

// cof(F) = det(F) F⁻ᵀ from signed 2x2 minors.
template <typename Scalar>
Matrix3Of<Scalar> Cofactor(const Matrix3Of<Scalar>& m) {
  Matrix3Of<Scalar> cofactor;
  for (int row = 0; row < 3; ++row) {
    for (int column = 0; column < 3; ++column) {
      const int r0 = (row + 1) % 3, r1 = (row + 2) % 3;
      const int c0 = (column + 1) % 3, c1 = (column + 2) % 3;
      cofactor(row, column) = m(r0, c0) * m(r1, c1) - m(r0, c1) * m(r1, c0);
    }
  }
  return cofactor;
}

template <typename Scalar>
Scalar SquaredFrobeniusNorm(const Matrix3Of<Scalar>& m) {
  Scalar sum(0.0);
  for (int i = 0; i < 9; ++i) sum += m(i) * m(i);
  return sum;
}

// Orthogonal polar factor by the scaled Newton iteration R ← ½(ζR + ζ⁻¹R⁻ᵀ),
// ζ = (‖R⁻¹‖_F/‖R‖_F)^½ (Higham 1986). Valid for det F > 0, where the factor is the proper
// rotation. After the values converge, a few unscaled steps (ζ = 1) let the derivative
// parts of a Jet converge too: at an orthogonal R the step's derivative is the projection
// δR ↦ ½(δR − R δRᵀ R) onto R·skew, so the Jet carries exactly dR/dF.
template <typename Scalar>
Matrix3Of<Scalar> PolarRotationByNewtonIteration(const Matrix3Of<Scalar>& matrix) {
  using std::sqrt;
  Matrix3Of<Scalar> rotation = matrix;
  bool converged = false;
  for (int iteration = 0; iteration < 100 && !converged; ++iteration) {
    const Matrix3Of<Scalar> inverse_transpose = Cofactor(rotation) / Determinant(rotation);
    const Scalar scale = sqrt(sqrt(SquaredFrobeniusNorm(inverse_transpose) / SquaredFrobeniusNorm(rotation)));
    const Matrix3Of<Scalar> next = Scalar(0.5) * (scale * rotation + inverse_transpose / scale);
    double change = 0.0;
    for (int i = 0; i < 9; ++i) change += std::pow(ValueOf(next(i)) - ValueOf(rotation(i)), 2);
    rotation = next;
    converged = std::sqrt(change) < 10.0 * kEpsilon;
  }
  EXPECT_TRUE(converged) << "Newton polar iteration did not converge";
  for (int iteration = 0; iteration < 3; ++iteration) {
    const Matrix3Of<Scalar> inverse_transpose = Cofactor(rotation) / Determinant(rotation);
    rotation = Scalar(0.5) * (rotation + inverse_transpose);
  }
  return rotation;
}

// Fixed corotated: Ψ = μ_L‖F − R‖²_F + λ/2 (J − 1)²  (= μ_L Σ(σ_i − 1)² + ... for det F > 0).
template <typename Scalar>
Scalar FixedCorotatedEnergy(const Matrix3Of<Scalar>& deformation_gradient, const LameParameters& lame) {
  const Matrix3Of<Scalar> rotation = PolarRotationByNewtonIteration(deformation_gradient);
  const Scalar volume_ratio = Determinant(deformation_gradient);
  return lame.shear_modulus * SquaredFrobeniusNorm<Scalar>(deformation_gradient - rotation) +
         0.5 * lame.first_lame_parameter * (volume_ratio - 1.0) * (volume_ratio - 1.0);
}

// Fixed corotated: P = 2μ_L(F − R) + λ(J − 1) cof(F).
template <typename Scalar>
Matrix3Of<Scalar> FixedCorotatedStress(const Matrix3Of<Scalar>& deformation_gradient, const LameParameters& lame) {
  const Matrix3Of<Scalar> rotation = PolarRotationByNewtonIteration(deformation_gradient);
  const Scalar volume_ratio = Determinant(deformation_gradient);
  return Scalar(2.0 * lame.shear_modulus) * (deformation_gradient - rotation) +
         Scalar(lame.first_lame_parameter) * (volume_ratio - 1.0) * Cofactor(deformation_gradient);
}

// Linear corotated: Ê = ½(R0ᵀF + FᵀR0) − I, Ψ = μ_L‖Ê‖² + λ/2 tr(Ê)² ([zong2024convex] eq. 19).
template <typename Scalar>
Matrix3Of<Scalar> LinearCorotatedStrain(const Matrix3Of<Scalar>& deformation_gradient,
                                        const Matrix3& reference_rotation) {
  const Matrix3Of<Scalar> rotation = reference_rotation.cast<Scalar>();
  return Scalar(0.5) * (rotation.transpose() * deformation_gradient + deformation_gradient.transpose() * rotation) -
         Matrix3Of<Scalar>::Identity();
}

template <typename Scalar>
Scalar LinearCorotatedEnergy(const Matrix3Of<Scalar>& deformation_gradient, const Matrix3& reference_rotation,
                             const LameParameters& lame) {
  const Matrix3Of<Scalar> strain = LinearCorotatedStrain(deformation_gradient, reference_rotation);
  const Scalar trace = strain(0, 0) + strain(1, 1) + strain(2, 2);
  return lame.shear_modulus * SquaredFrobeniusNorm(strain) + 0.5 * lame.first_lame_parameter * trace * trace;
}

template <typename Scalar>
Matrix3Of<Scalar> LinearCorotatedStress(const Matrix3Of<Scalar>& deformation_gradient,
                                        const Matrix3& reference_rotation, const LameParameters& lame) {
  const Matrix3Of<Scalar> strain = LinearCorotatedStrain(deformation_gradient, reference_rotation);
  const Scalar trace = strain(0, 0) + strain(1, 1) + strain(2, 2);
  return reference_rotation.cast<Scalar>() *
         (Scalar(2.0 * lame.shear_modulus) * strain +
          Scalar(lame.first_lame_parameter) * trace * Matrix3Of<Scalar>::Identity());
}

// F with Jet parts seeded so that entry k (column-major) carries ∂/∂vec(F)_k.
Matrix3Of<Jet9> SeededJetMatrix(const Matrix3& matrix) {
  Matrix3Of<Jet9> seeded;
  for (int k = 0; k < 9; ++k) seeded(k) = Jet9(matrix(k), k);
  return seeded;
}

Matrix3 GradientFromJet(const Jet9& energy) {
  Matrix3 gradient;
  for (int k = 0; k < 9; ++k) gradient(k) = energy.v(k);
  return gradient;
}

// Entry (a, b) = ∂vec(P)_a / ∂vec(F)_b, the layout of Matrix9.
Matrix9 JacobianFromJet(const Matrix3Of<Jet9>& stress) {
  Matrix9 jacobian;
  for (int a = 0; a < 9; ++a) jacobian.row(a) = stress(a).v.transpose();
  return jacobian;
}

// ---- Test inputs --------------------------------------------------------------------

Matrix3 RandomRotation(std::mt19937& generator) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::Quaterniond quaternion(normal(generator), normal(generator), normal(generator), normal(generator));
  return quaternion.normalized().toRotationMatrix();
}

Matrix3 RandomMatrix(std::mt19937& generator, double amplitude) {
  std::uniform_real_distribution<double> uniform(-amplitude, amplitude);
  Matrix3 matrix;
  for (int i = 0; i < 9; ++i) matrix(i) = uniform(generator);
  return matrix;
}

// Deformation gradients with det F > 0: identity, pure rotation, near identity, rotated
// stretches (distinct, repeated and compressive singular values), generic perturbations.
std::vector<Matrix3> PositiveDeterminantGradients() {
  std::mt19937 generator(314159);
  std::vector<Matrix3> gradients;
  gradients.push_back(Matrix3::Identity());
  gradients.push_back(RandomRotation(generator));
  for (int trial = 0; trial < 3; ++trial) {
    gradients.push_back(Matrix3::Identity() + RandomMatrix(generator, 1e-3));
  }
  for (const Vector3& stretches :
       {Vector3(1.3, 0.8, 1.1), Vector3(1.2, 1.2, 0.9), Vector3(0.5, 0.6, 0.7), Vector3(1.6, 1.05, 0.4)}) {
    gradients.push_back(RandomRotation(generator) * stretches.asDiagonal() * RandomRotation(generator).transpose());
  }
  for (int trial = 0; trial < 4; ++trial) {
    Matrix3 gradient = Matrix3::Identity() + RandomMatrix(generator, 0.3);
    gradients.push_back(RandomRotation(generator) * gradient);
  }
  for (const Matrix3& gradient : gradients) EXPECT_GT(gradient.determinant(), 0.0);
  return gradients;
}

std::vector<LameParameters> TestLameParameters() {
  // Dough of [zong2024convex] (E = 1e5 Pa, ν = 0.4) and the stiff ball (E = 1e8 Pa, ν = 0.2).
  return {LameParameters::FromYoungsModulus(1e5, 0.4), LameParameters::FromYoungsModulus(1e8, 0.2)};
}

double StressScale(const LameParameters& lame) {
  return lame.shear_modulus + lame.first_lame_parameter;
}

template <typename Derived>
double MaxAbs(const Eigen::MatrixBase<Derived>& matrix) {
  return matrix.cwiseAbs().maxCoeff();
}

// ---- Equation-of-state liquid reference (spec-sap-qn §2.3) ----------------------------

// ψ(J) = κ (J − 1) − κ (J^{1−γ} − 1)/(1 − γ), J = det F.
template <typename Scalar>
Scalar LiquidEnergy(const Matrix3Of<Scalar>& f, double bulk_modulus, double exponent) {
  using std::pow;
  const Scalar volume_ratio = Determinant(f);
  return bulk_modulus * (volume_ratio - 1.0) -
         bulk_modulus * (pow(volume_ratio, 1.0 - exponent) - 1.0) / (1.0 - exponent);
}

// P = −κ (J^{−γ} − 1) cof(F).
template <typename Scalar>
Matrix3Of<Scalar> LiquidStress(const Matrix3Of<Scalar>& f, double bulk_modulus, double exponent) {
  using std::pow;
  const Scalar pressure = bulk_modulus * (pow(Determinant(f), -exponent) - 1.0);
  return -pressure * Cofactor(f);
}

// ---- Hencky elasticity reference (Drucker–Prager sand) -------------------------------

template <typename Scalar>
Matrix3Of<Scalar> Inverse(const Matrix3Of<Scalar>& m) {
  return Cofactor(m).transpose() / Determinant(m);
}

// Material Hencky strain ε = ½ log C, C = FᵀF, without any eigen-decomposition: with
// Z = (C − I)(C + I)⁻¹ (eigenvalues (c − 1)/(c + 1) in (−1, 1) for C SPD),
// log C = 2 Σ_n Z^{2n+1}/(2n + 1), summed until the terms vanish.
template <typename Scalar>
Matrix3Of<Scalar> HenckyStrain(const Matrix3Of<Scalar>& f) {
  const Matrix3Of<Scalar> identity = Matrix3Of<Scalar>::Identity();
  const Matrix3Of<Scalar> c = f.transpose() * f;
  const Matrix3Of<Scalar> z = (c - identity) * Inverse<Scalar>(c + identity);
  const Matrix3Of<Scalar> z_squared = z * z;
  Matrix3Of<Scalar> power = z;
  Matrix3Of<Scalar> logarithm = Matrix3Of<Scalar>::Zero();
  for (int n = 0; n < 400; ++n) {
    logarithm += power / Scalar(2.0 * n + 1.0);
    double largest = 0.0;
    for (int i = 0; i < 9; ++i) largest = std::max(largest, std::abs(ValueOf(power(i))));
    if (largest < 1e-20) break;
    power = power * z_squared;
  }
  return logarithm;  // ε = ½ log C = Σ Z^{2n+1}/(2n + 1)
}

// ψ = μ_L tr(ε²) + λ/2 (tr ε)².
template <typename Scalar>
Scalar HenckyEnergy(const Matrix3Of<Scalar>& f, const LameParameters& lame) {
  const Matrix3Of<Scalar> strain = HenckyStrain(f);
  const Scalar trace = strain.trace();
  return lame.shear_modulus * (strain * strain).trace() + 0.5 * lame.first_lame_parameter * trace * trace;
}

// P = F S with the second Piola–Kirchhoff stress S = 2 ∂ψ/∂C = (2μ_L ε + λ tr ε I) C⁻¹
// (ε and C commute).
template <typename Scalar>
Matrix3Of<Scalar> HenckyStress(const Matrix3Of<Scalar>& f, const LameParameters& lame) {
  const Matrix3Of<Scalar> strain = HenckyStrain(f);
  const Matrix3Of<Scalar> kirchhoff_like =
      Scalar(2.0 * lame.shear_modulus) * strain +
      Scalar(lame.first_lame_parameter) * strain.trace() * Matrix3Of<Scalar>::Identity();
  return f * kirchhoff_like * Inverse<Scalar>(Matrix3Of<Scalar>(f.transpose() * f));
}

// ---- Fixed corotated ----------------------------------------------------------------

TEST(MpmConstitutiveTest, FixedCorotatedStressIsEnergyGradient) {
  for (const LameParameters& lame : TestLameParameters()) {
    const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
    const double tolerance = kAutodiffRelativeTolerance * StressScale(lame);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      const Jet9 energy = FixedCorotatedEnergy(SeededJetMatrix(gradient), lame);
      const Matrix3 stress = model->FirstPiolaStress(gradient, Matrix3::Identity());
      EXPECT_LE(MaxAbs(stress - GradientFromJet(energy)), tolerance) << "F =\n" << gradient;
      // Energy density [Pa] has the same scale as the stress for |F| = O(1).
      EXPECT_NEAR(model->EnergyDensity(gradient, Matrix3::Identity()), energy.a, tolerance) << "F =\n" << gradient;
    }
  }
}

TEST(MpmConstitutiveTest, FixedCorotatedTangentIsStressJacobian) {
  for (const LameParameters& lame : TestLameParameters()) {
    const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
    const double tolerance = kAutodiffRelativeTolerance * StressScale(lame);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      const Matrix9 reference = JacobianFromJet(FixedCorotatedStress(SeededJetMatrix(gradient), lame));
      const Matrix9 tangent = model->FirstPiolaStressDerivative(gradient, Matrix3::Identity());
      EXPECT_LE(MaxAbs(tangent - reference), tolerance) << "F =\n" << gradient;
      // Hessian of a hyperelastic energy: symmetric.
      EXPECT_LE(MaxAbs(tangent - tangent.transpose()), tolerance) << "F =\n" << gradient;
    }
  }
}

TEST(MpmConstitutiveTest, FixedCorotatedIgnoresReferenceRotation) {
  std::mt19937 generator(5);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e5, 0.4);
  const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
  const Matrix3 gradient = Matrix3::Identity() + RandomMatrix(generator, 0.3);
  const Matrix3 reference_rotation = RandomRotation(generator);
  EXPECT_EQ(model->EnergyDensity(gradient, Matrix3::Identity()), model->EnergyDensity(gradient, reference_rotation));
  EXPECT_EQ(model->FirstPiolaStress(gradient, Matrix3::Identity()),
            model->FirstPiolaStress(gradient, reference_rotation));
  EXPECT_EQ(model->FirstPiolaStressDerivative(gradient, Matrix3::Identity()),
            model->FirstPiolaStressDerivative(gradient, reference_rotation));
}

// Inverted states (det F < 0) use the signed singular values, where the Newton reference
// (which converges to an improper orthogonal factor) does not apply. Central differences
// check them instead: with step h the error is ≤ h²/6 max|third derivative| + ε|f|/h.
// For σ = (1.3, 0.9, −0.6) the third derivatives are O(μ_L/(σ₂+σ₃)²) ≈ 11 μ_L, so with
// h = 1e-5 the error is about 2e-9 of the stress scale; 1e-7 keeps a margin of 50.
TEST(MpmConstitutiveTest, FixedCorotatedInvertedStateMatchesCentralDifferences) {
  std::mt19937 generator(29);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e5, 0.4);
  const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
  const double tolerance = 1e-7 * StressScale(lame);
  constexpr double kStep = 1e-5;
  for (int trial = 0; trial < 5; ++trial) {
    const Matrix3 gradient =
        RandomRotation(generator) * Vector3(1.3, 0.9, -0.6).asDiagonal() * RandomRotation(generator).transpose();
    ASSERT_LT(gradient.determinant(), 0.0);
    const Matrix3 stress = model->FirstPiolaStress(gradient, Matrix3::Identity());
    const Matrix9 tangent = model->FirstPiolaStressDerivative(gradient, Matrix3::Identity());
    Matrix3 energy_difference;
    Matrix9 stress_difference;
    for (int k = 0; k < 9; ++k) {
      Matrix3 forward = gradient, backward = gradient;
      forward(k) += kStep;
      backward(k) -= kStep;
      energy_difference(k) =
          (model->EnergyDensity(forward, Matrix3::Identity()) - model->EnergyDensity(backward, Matrix3::Identity())) /
          (2.0 * kStep);
      const Matrix3 stress_change = (model->FirstPiolaStress(forward, Matrix3::Identity()) -
                                     model->FirstPiolaStress(backward, Matrix3::Identity())) /
                                    (2.0 * kStep);
      stress_difference.col(k) = Eigen::Map<const Vector9>(stress_change.data());
    }
    EXPECT_LE(MaxAbs(stress - energy_difference), tolerance);
    EXPECT_LE(MaxAbs(tangent - stress_difference), tolerance);
    EXPECT_LE(MaxAbs(tangent - tangent.transpose()), kAutodiffRelativeTolerance * StressScale(lame));
  }
}

TEST(MpmConstitutiveTest, FixedCorotatedSmallStrainApproachesLinearElasticity) {
  // F = I + ∇u: P = 2μ_L ε + λ tr(ε) I + O(a²) with ε = sym(∇u) and a = max|∇u_ij|. Per
  // entry the second-order remainder is bounded by λ|J − 1||cof F − I| ≤ λ(3a)(4a), the
  // second invariant in J − 1 (≤ 9λa²) and 2μ_L|F − R − ε| (a few μ_L a²): below
  // 30 (μ_L + λ) a² = 3e-7 (μ_L + λ) for a = 1e-4, against first-order terms of ~1e-4 (μ_L + λ).
  std::mt19937 generator(3);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e5, 0.4);
  const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
  constexpr double kAmplitude = 1e-4;
  for (int trial = 0; trial < 5; ++trial) {
    const Matrix3 displacement_gradient = RandomMatrix(generator, kAmplitude);
    const Matrix3 strain = 0.5 * (displacement_gradient + displacement_gradient.transpose());
    const Matrix3 linear =
        2.0 * lame.shear_modulus * strain + lame.first_lame_parameter * strain.trace() * Matrix3::Identity();
    const Matrix3 stress = model->FirstPiolaStress(Matrix3::Identity() + displacement_gradient, Matrix3::Identity());
    EXPECT_LE(MaxAbs(stress - linear), 30.0 * StressScale(lame) * kAmplitude * kAmplitude);
  }
}

TEST(MpmConstitutiveTest, FixedCorotatedRotationIsStressFree) {
  std::mt19937 generator(23);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e8, 0.2);
  const auto model = MakeConstitutiveModel("fixed_corotated", MaterialConstants{lame});
  for (int trial = 0; trial < 5; ++trial) {
    const Matrix3 rotation = RandomRotation(generator);
    // R is orthonormal to O(ε), so F − R and J − 1 are O(ε): P = O(10 ε (μ_L + λ)).
    EXPECT_LE(MaxAbs(model->FirstPiolaStress(rotation, Matrix3::Identity())), 64.0 * kEpsilon * StressScale(lame));
    EXPECT_LE(model->EnergyDensity(rotation, Matrix3::Identity()), 64.0 * kEpsilon * StressScale(lame));
  }
}

// ---- Linear corotated ---------------------------------------------------------------

// Reference rotations: identity, the polar rotation of F (the usual lagged state) and a
// polar rotation perturbed by a small extra rotation, and an unrelated rotation.
std::vector<Matrix3> ReferenceRotationsFor(const Matrix3& gradient, std::mt19937& generator) {
  const Matrix3 polar_rotation = ComputePolarDecomposition(gradient).rotation;
  const Matrix3 small_rotation = Eigen::AngleAxisd(0.05, Vector3(1.0, 2.0, -1.0).normalized()).toRotationMatrix();
  return {Matrix3::Identity(), polar_rotation, polar_rotation * small_rotation, RandomRotation(generator)};
}

TEST(MpmConstitutiveTest, LinearCorotatedStressIsEnergyGradient) {
  std::mt19937 generator(41);
  for (const LameParameters& lame : TestLameParameters()) {
    const auto model = MakeConstitutiveModel("linear_corotated", MaterialConstants{lame});
    const double tolerance = kAutodiffRelativeTolerance * StressScale(lame);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      for (const Matrix3& reference_rotation : ReferenceRotationsFor(gradient, generator)) {
        const Jet9 energy = LinearCorotatedEnergy(SeededJetMatrix(gradient), reference_rotation, lame);
        EXPECT_LE(MaxAbs(model->FirstPiolaStress(gradient, reference_rotation) - GradientFromJet(energy)), tolerance);
        EXPECT_NEAR(model->EnergyDensity(gradient, reference_rotation), energy.a, tolerance);
      }
    }
  }
}

TEST(MpmConstitutiveTest, LinearCorotatedTangentIsStressJacobian) {
  std::mt19937 generator(43);
  for (const LameParameters& lame : TestLameParameters()) {
    const auto model = MakeConstitutiveModel("linear_corotated", MaterialConstants{lame});
    const double tolerance = kAutodiffRelativeTolerance * StressScale(lame);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      for (const Matrix3& reference_rotation : ReferenceRotationsFor(gradient, generator)) {
        const Matrix9 reference =
            JacobianFromJet(LinearCorotatedStress(SeededJetMatrix(gradient), reference_rotation, lame));
        const Matrix9 tangent = model->FirstPiolaStressDerivative(gradient, reference_rotation);
        EXPECT_LE(MaxAbs(tangent - reference), tolerance);
        EXPECT_LE(MaxAbs(tangent - tangent.transpose()), tolerance);
        // Ψ is quadratic in F: the tangent does not depend on F for a fixed R0.
        EXPECT_LE(MaxAbs(tangent - model->FirstPiolaStressDerivative(Matrix3::Identity(), reference_rotation)),
                  tolerance);
      }
    }
  }
}

TEST(MpmConstitutiveTest, LinearCorotatedWithIdentityReferenceIsLinearElasticity) {
  // With R0 = I, Ê = sym(F) − I = ε exactly, so P = 2μ_L ε + λ tr(ε) I. Forming F = I + ∇u
  // rounds ∇u by machine epsilon, which moves P by ≲ 10 eps (μ_L + λ) and Ψ by
  // ≲ 10 eps (μ_L + λ)|ε|; 64 eps is the bound.
  std::mt19937 generator(47);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e5, 0.4);
  const auto model = MakeConstitutiveModel("linear_corotated", MaterialConstants{lame});
  for (int trial = 0; trial < 5; ++trial) {
    const Matrix3 displacement_gradient = RandomMatrix(generator, 1e-3);
    const Matrix3 strain = 0.5 * (displacement_gradient + displacement_gradient.transpose());
    const Matrix3 linear =
        2.0 * lame.shear_modulus * strain + lame.first_lame_parameter * strain.trace() * Matrix3::Identity();
    const Matrix3 gradient = Matrix3::Identity() + displacement_gradient;
    EXPECT_LE(MaxAbs(model->FirstPiolaStress(gradient, Matrix3::Identity()) - linear),
              64.0 * kEpsilon * StressScale(lame));
    const double linear_energy =
        lame.shear_modulus * strain.squaredNorm() + 0.5 * lame.first_lame_parameter * std::pow(strain.trace(), 2);
    EXPECT_NEAR(model->EnergyDensity(gradient, Matrix3::Identity()), linear_energy,
                64.0 * kEpsilon * StressScale(lame) * 1e-3);
  }
}

TEST(MpmConstitutiveTest, LinearCorotatedReferenceRotationIsStressFree) {
  std::mt19937 generator(53);
  const LameParameters lame = LameParameters::FromYoungsModulus(1e8, 0.2);
  const auto model = MakeConstitutiveModel("linear_corotated", MaterialConstants{lame});
  for (int trial = 0; trial < 5; ++trial) {
    const Matrix3 rotation = RandomRotation(generator);
    // R0ᵀR = I + O(ε), so Ê = O(ε) and P = O(10 ε (μ_L + λ)).
    EXPECT_LE(MaxAbs(model->FirstPiolaStress(rotation, rotation)), 64.0 * kEpsilon * StressScale(lame));
    EXPECT_LE(model->EnergyDensity(rotation, rotation), 64.0 * kEpsilon * StressScale(lame));
  }
}

// ---- Lamé parameters, factory, material ---------------------------------------------

// ---- Equation-of-state liquid --------------------------------------------------------

// Water-like (κ 2e4 Pa, γ 7) and a stiffer one with another exponent; gradients near the
// rest state (liquids stay within a few percent of J = 1) and strongly sheared ones (the
// energy ignores shear).
TEST(MpmConstitutiveTest, LiquidStressIsEnergyGradientAndTangentIsStressJacobian) {
  for (const auto& [bulk_modulus, exponent] : {std::pair{2e4, 7.0}, std::pair{1e6, 3.0}}) {
    const EquationOfStateLiquidModel model(bulk_modulus, exponent);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      const double tolerance = kAutodiffRelativeTolerance * bulk_modulus * std::pow(gradient.determinant(), -exponent);
      const Jet9 energy = LiquidEnergy(SeededJetMatrix(gradient), bulk_modulus, exponent);
      EXPECT_NEAR(model.EnergyDensity(gradient, Matrix3::Identity()), energy.a, tolerance) << "F =\n" << gradient;
      EXPECT_LE(MaxAbs(model.FirstPiolaStress(gradient, Matrix3::Identity()) - GradientFromJet(energy)), tolerance)
          << "F =\n"
          << gradient;
      const Matrix9 reference = JacobianFromJet(LiquidStress(SeededJetMatrix(gradient), bulk_modulus, exponent));
      EXPECT_LE(MaxAbs(model.FirstPiolaStressDerivative(gradient, Matrix3::Identity()) - reference), tolerance)
          << "F =\n"
          << gradient;
    }
  }
}

TEST(MpmConstitutiveTest, LiquidPressureWaveSpeedAndRestState) {
  const EquationOfStateLiquidModel model(2e4, 7.0);
  EXPECT_DOUBLE_EQ(model.Pressure(1.0), 0.0);
  EXPECT_NEAR(model.Pressure(0.99), 2e4 * (std::pow(0.99, -7.0) - 1.0), 1e-9);
  EXPECT_GT(model.Pressure(0.99), 0.0);  // compressed: positive pressure
  EXPECT_NEAR(model.EnergyDensity(Matrix3::Identity(), Matrix3::Identity()), 0.0, 1e-12);
  // Pure shear (J = 1) carries no stress.
  Matrix3 shear = Matrix3::Identity();
  shear(0, 1) = 0.4;
  EXPECT_LE(MaxAbs(model.FirstPiolaStress(shear, Matrix3::Identity())), 1e-12);
  // √(γ κ / ρ): 11.8 m/s for water-like κ = 2e4 Pa at 1000 kg/m³.
  EXPECT_NEAR(model.WaveSpeed(1000.0), std::sqrt(7.0 * 2e4 / 1000.0), 1e-12);
  EXPECT_THROW(EquationOfStateLiquidModel(0.0, 7.0), std::invalid_argument);
  EXPECT_THROW(EquationOfStateLiquidModel(2e4, 1.0), std::invalid_argument);
}

// J ≤ 0 is a barrier: +∞ energy and non-finite stress and tangent. With an integer γ, pow alone
// would give finite values there (J^{-7} of a negative J is negative), and a line search could
// step through J = 0 into them.
TEST(MpmConstitutiveTest, LiquidEnergyIsInfiniteAtAndBeyondZeroVolume) {
  const EquationOfStateLiquidModel model(2e4, 7.0);
  const Matrix3 inverted = Eigen::Vector3d(1.0, 1.0, -0.5).asDiagonal();
  const Matrix3 flat = Eigen::Vector3d(1.0, 1.0, 0.0).asDiagonal();
  for (const Matrix3& gradient : {inverted, flat}) {
    EXPECT_EQ(model.EnergyDensity(gradient, Matrix3::Identity()), std::numeric_limits<double>::infinity());
    EXPECT_FALSE(model.FirstPiolaStress(gradient, Matrix3::Identity()).allFinite());
    EXPECT_FALSE(model.FirstPiolaStressDerivative(gradient, Matrix3::Identity()).allFinite());
  }
  EXPECT_EQ(model.Pressure(-0.5), std::numeric_limits<double>::infinity());
  // Just above zero volume the energy is finite and large.
  const Matrix3 squeezed = Eigen::Vector3d(1.0, 1.0, 0.05).asDiagonal();
  EXPECT_TRUE(std::isfinite(model.EnergyDensity(squeezed, Matrix3::Identity())));
  EXPECT_GT(model.EnergyDensity(squeezed, Matrix3::Identity()), 1e9);
}

// The state update keeps only the volume: F^E = J^{1/3} I with the same J, F = F^E F^P kept,
// and a second update changes nothing.
TEST(MpmConstitutiveTest, LiquidStateUpdateKeepsOnlyTheVolume) {
  const EquationOfStateLiquidModel model(2e4, 7.0);
  for (const Matrix3& gradient : PositiveDeterminantGradients()) {
    Matrix3 elastic = gradient;
    Matrix3 rotation = RandomRotation(*std::make_unique<std::mt19937>(5));
    const Matrix3 plastic_before = Matrix3::Identity() + 0.1 * Matrix3::Ones();
    Matrix3 plastic = plastic_before;
    model.UpdateState(elastic, rotation, plastic);
    const double stretch = std::cbrt(gradient.determinant());
    EXPECT_LE(MaxAbs(elastic - stretch * Matrix3::Identity()), 1e-15 * stretch);
    EXPECT_LE(MaxAbs(elastic * plastic - gradient * plastic_before), 1e-12 * MaxAbs(gradient * plastic_before));
    EXPECT_LE(MaxAbs(rotation - Matrix3::Identity()), 0.0);
    const Matrix3 elastic_once = elastic, plastic_once = plastic;
    model.UpdateState(elastic, rotation, plastic);
    EXPECT_LE(MaxAbs(elastic - elastic_once), 1e-15);
    EXPECT_LE(MaxAbs(plastic - plastic_once), 1e-14 * MaxAbs(plastic_once));
  }
}

TEST(MpmConstitutiveTest, LiquidMaterialsTakeBulkModulusAndExponent) {
  const Material water = MakeLiquidMaterial("water", 1000.0, 2e4);
  EXPECT_EQ(water.model, "eos_liquid");
  EXPECT_EQ(water.constitutive_model->name(), "eos_liquid");
  EXPECT_TRUE(water.is_plastic());
  EXPECT_NEAR(water.WaveSpeed(), std::sqrt(7.0 * 2e4 / 1000.0), 1e-12);
  EXPECT_THROW(MakeLiquidMaterial("water", 1000.0, -1.0), std::invalid_argument);
  try {
    MakeMaterial("water", "eos_liquid", 1000.0, 1e5, 0.3);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("material 'water': 'eos_liquid' is a liquid model"), std::string::npos)
        << error.what();
  }
}

// ---- Drucker–Prager sand --------------------------------------------------------------

// Sand-like (E 3.5e5 Pa, ν 0.3) and stiffer constants; tolerances scale with μ_L + λ and the
// 1/σ² of the tangent.
TEST(MpmConstitutiveTest, HenckyStressIsEnergyGradientAndTangentIsStressJacobian) {
  for (const LameParameters& lame :
       {LameParameters::FromYoungsModulus(3.5e5, 0.3), LameParameters::FromYoungsModulus(1e8, 0.2)}) {
    const DruckerPragerModel model(lame, 0.5, 0.0);
    for (const Matrix3& gradient : PositiveDeterminantGradients()) {
      const double smallest = ComputeSignedSvd(gradient).singular_values.minCoeff();
      const double tolerance = kAutodiffRelativeTolerance * StressScale(lame) / (smallest * smallest);
      const Jet9 energy = HenckyEnergy(SeededJetMatrix(gradient), lame);
      EXPECT_NEAR(model.EnergyDensity(gradient, Matrix3::Identity()), energy.a, tolerance) << "F =\n" << gradient;
      EXPECT_LE(MaxAbs(model.FirstPiolaStress(gradient, Matrix3::Identity()) - GradientFromJet(energy)), tolerance)
          << "F =\n"
          << gradient;
      const Matrix9 reference = JacobianFromJet(HenckyStress(SeededJetMatrix(gradient), lame));
      EXPECT_LE(MaxAbs(model.FirstPiolaStressDerivative(gradient, Matrix3::Identity()) - reference), tolerance)
          << "F =\n"
          << gradient;
    }
  }
}

// Principal Kirchhoff stresses of principal Hencky strains.
Vector3 KirchhoffStresses(const Vector3& strains, const LameParameters& lame) {
  return 2.0 * lame.shear_modulus * strains + Vector3::Constant(lame.first_lame_parameter * strains.sum());
}

// The cone is Mohr–Coulomb's in triaxial compression: a state with τ₁ = τ₂ > τ₃ projected
// onto it satisfies τ₁ − τ₃ = −(τ₁ + τ₃) sin φ + 2 c cos φ, with φ and c as given. This
// checks α and the apex independently of how the code writes them.
TEST(MpmConstitutiveTest, DruckerPragerConeIsMohrCoulombInTriaxialCompression) {
  const LameParameters lame = LameParameters::FromYoungsModulus(3.5e5, 0.3);
  for (const double degrees : {20.0, 30.0, 40.0}) {
    for (const double cohesion : {0.0, 50.0}) {
      const double angle = degrees * std::acos(-1.0) / 180.0;
      const DruckerPragerModel model(lame, angle, cohesion);
      // Compressed along z, free sideways: far outside the cone.
      const DruckerPragerReturn projected = model.Project(Vector3(0.01, 0.01, -0.03));
      ASSERT_EQ(projected.kind, DruckerPragerReturn::Case::kShear);
      EXPECT_NEAR(projected.strains.sum(), -0.01, 1e-15);  // the volume is kept
      const Vector3 tau = KirchhoffStresses(projected.strains, lame);
      EXPECT_NEAR(tau(0), tau(1), 1e-9 * std::abs(tau(2)));
      EXPECT_NEAR(tau(0) - tau(2), -(tau(0) + tau(2)) * std::sin(angle) + 2.0 * cohesion * std::cos(angle),
                  1e-9 * std::abs(tau(2)))
          << degrees << "°, c " << cohesion;
    }
  }
}

// Inside the cone nothing changes; outside, the state lands on the cone with the volume and
// the direction of the deviatoric strain kept, F = F^E F^P holds, and a second update
// changes nothing; beyond the apex the sand separates to the apex.
TEST(MpmConstitutiveTest, DruckerPragerReturnMapping) {
  const LameParameters lame = LameParameters::FromYoungsModulus(3.5e5, 0.3);
  const double angle = 30.0 * std::acos(-1.0) / 180.0;
  for (const double cohesion : {0.0, 100.0}) {
    const DruckerPragerModel model(lame, angle, cohesion);
    const double alpha = model.cone_slope();
    const double apex_mean_stress = cohesion / std::tan(angle);
    const auto cone = [&](const Vector3& strains) {  // ‖dev τ‖ + α (tr τ − 3 p_t), [Pa]
      const Vector3 tau = KirchhoffStresses(strains, lame);
      return (tau - Vector3::Constant(tau.mean())).norm() + alpha * (tau.sum() - 3.0 * apex_mean_stress);
    };
    std::mt19937 generator(27);
    const Matrix3 left = RandomRotation(generator), right = RandomRotation(generator);
    const Matrix3 plastic_before = Matrix3::Identity() + 0.05 * Matrix3::Ones();
    const auto gradient_of = [&](const Vector3& strains) {
      return Matrix3(left * strains.array().exp().matrix().asDiagonal() * right.transpose());
    };

    // Inside: isotropic compression with a little shear.
    const Vector3 inside(-0.010, -0.011, -0.012);
    ASSERT_LT(cone(inside), 0.0);
    Matrix3 elastic = gradient_of(inside), plastic = plastic_before, rotation = Matrix3::Identity();
    const Matrix3 elastic_before = elastic;
    model.UpdateState(elastic, rotation, plastic);
    EXPECT_EQ(elastic, elastic_before);
    EXPECT_EQ(plastic, plastic_before);
    EXPECT_LE(MaxAbs(rotation - left * right.transpose()), 1e-12);

    // Outside: a sheared state under light compression.
    const Vector3 outside(0.01, -0.002, -0.02);
    ASSERT_GT(cone(outside), 0.0);
    elastic = gradient_of(outside);
    plastic = plastic_before;
    const Matrix3 total = elastic * plastic;
    model.UpdateState(elastic, rotation, plastic);
    const Vector3 strains = ComputeSignedSvd(elastic).singular_values.array().log();
    EXPECT_NEAR(cone(strains), 0.0, 1e-9 * StressScale(lame) * 0.02);
    EXPECT_NEAR(strains.sum(), outside.sum(), 1e-13);
    // outside is sorted like the singular values, so the deviatoric parts compare entry by entry.
    const Vector3 deviatoric_before = outside - Vector3::Constant(outside.mean());
    const Vector3 deviatoric_after = strains - Vector3::Constant(strains.mean());
    EXPECT_NEAR(deviatoric_after.normalized().dot(deviatoric_before.normalized()), 1.0, 1e-12);
    EXPECT_LT(deviatoric_after.norm(), deviatoric_before.norm());
    EXPECT_LE(MaxAbs(elastic * plastic - total), 1e-12);
    const Matrix3 elastic_once = elastic, plastic_once = plastic;
    model.UpdateState(elastic, rotation, plastic);
    EXPECT_LE(MaxAbs(elastic - elastic_once), 1e-13);
    EXPECT_LE(MaxAbs(plastic - plastic_once), 1e-13);

    // Beyond the apex: stretched in every direction.
    elastic = gradient_of(Vector3(0.02, 0.01, 0.015));
    plastic = plastic_before;
    const Matrix3 stretched_total = elastic * plastic;
    model.UpdateState(elastic, rotation, plastic);
    const double apex_stretch = std::exp(model.apex_volumetric_strain() / 3.0);
    EXPECT_LE(MaxAbs(elastic - apex_stretch * left * right.transpose()), 1e-13);
    EXPECT_LE(MaxAbs(elastic * plastic - stretched_total), 1e-12);
    const Matrix3 stress = model.FirstPiolaStress(elastic, rotation);
    // The apex carries only the mean stress p_t (none without cohesion): τ = P Fᵀ = p_t I.
    EXPECT_LE(MaxAbs(Matrix3(stress * elastic.transpose() - apex_mean_stress * Matrix3::Identity())),
              1e-9 * StressScale(lame));
  }
}

// ---- Drucker–Prager plasticity inside an implicit step ---------------------------------

// The step energy of DruckerPragerModel written out from the series Hencky strain: with
// K = λ + 2μ_L/3, t = tr ε, d = ε − (t/3) I and s = ‖d‖_F,
//   ψ_step = μ_L s² (s ≤ r) or μ_L (2 r s − r²) (s > r),  + K t²/2 (t ≤ e_t) or K e_t t − K e_t²/2.
template <typename Scalar>
Scalar StepSandEnergy(const Matrix3Of<Scalar>& f, const LameParameters& lame, double radius, double apex) {
  using std::sqrt;
  const Matrix3Of<Scalar> strain = HenckyStrain(f);
  const Scalar trace = strain.trace();
  const Matrix3Of<Scalar> deviatoric = strain - (trace / 3.0) * Matrix3Of<Scalar>::Identity();
  const Scalar squared = (deviatoric * deviatoric).trace();
  const double mu = lame.shear_modulus, bulk = lame.first_lame_parameter + 2.0 * mu / 3.0;
  const Scalar shear =
      ValueOf(squared) > radius * radius ? mu * (2.0 * radius * sqrt(squared) - radius * radius) : mu * squared;
  const Scalar volume =
      ValueOf(trace) > apex ? bulk * apex * trace - 0.5 * bulk * apex * apex : 0.5 * bulk * trace * trace;
  return shear + volume;
}

// P = F τ̃ C⁻¹ with τ̃ = ∂ψ_step/∂ε = 2μ_L min(1, r/s) d + K min(t, e_t) I (isotropic, so it
// commutes with C).
template <typename Scalar>
Matrix3Of<Scalar> StepSandStress(const Matrix3Of<Scalar>& f, const LameParameters& lame, double radius, double apex) {
  using std::sqrt;
  const Matrix3Of<Scalar> strain = HenckyStrain(f);
  const Scalar trace = strain.trace();
  const Matrix3Of<Scalar> identity = Matrix3Of<Scalar>::Identity();
  const Matrix3Of<Scalar> deviatoric = strain - (trace / 3.0) * identity;
  const Scalar squared = (deviatoric * deviatoric).trace();
  const double mu = lame.shear_modulus, bulk = lame.first_lame_parameter + 2.0 * mu / 3.0;
  const Scalar fraction = ValueOf(squared) > radius * radius ? Scalar(radius) / sqrt(squared) : Scalar(1.0);
  const Scalar mean = ValueOf(trace) > apex ? Scalar(bulk * apex) : Scalar(bulk) * trace;
  const Matrix3Of<Scalar> kirchhoff_like = Scalar(2.0 * mu) * fraction * deviatoric + mean * identity;
  return f * kirchhoff_like * Inverse<Scalar>(Matrix3Of<Scalar>(f.transpose() * f));
}

// Every regime: a radius of 0 (all shear yields), one that some of the gradients exceed, one
// none reaches (the step energy is then Hencky's below the apex), with and without cohesion.
TEST(MpmConstitutiveTest, DruckerPragerStepEnergyDerivativesMatchAutodiff) {
  const double angle = 30.0 * std::acos(-1.0) / 180.0;
  for (const LameParameters& lame :
       {LameParameters::FromYoungsModulus(3.5e5, 0.3), LameParameters::FromYoungsModulus(1e8, 0.2)}) {
    for (const double cohesion : {0.0, 0.02 * lame.shear_modulus}) {
      const DruckerPragerModel model(lame, angle, cohesion);
      const double apex = model.apex_volumetric_strain();
      for (const double radius : {0.0, 0.05, 10.0}) {
        for (const Matrix3& gradient : PositiveDeterminantGradients()) {
          const Vector3 strains = ComputeSignedSvd(gradient).singular_values.array().log();
          // At r = 0 the curvature of the shear term jumps from 2μ_L to 0 at s = 0: a rotation
          // (s = 0 up to rounding) would sit on that edge.
          if (radius == 0.0 && (strains - Vector3::Constant(strains.mean())).norm() < 1e-8) continue;
          const double smallest = ComputeSignedSvd(gradient).singular_values.minCoeff();
          const double tolerance = kAutodiffRelativeTolerance * StressScale(lame) / (smallest * smallest);
          const Jet9 energy = StepSandEnergy(SeededJetMatrix(gradient), lame, radius, apex);
          EXPECT_NEAR(model.InStepEnergyDensity(gradient, Matrix3::Identity(), radius), energy.a, tolerance)
              << "F =\n"
              << gradient;
          EXPECT_LE(
              MaxAbs(model.InStepFirstPiolaStress(gradient, Matrix3::Identity(), radius) - GradientFromJet(energy)),
              tolerance)
              << "r = " << radius << ", F =\n"
              << gradient;
          const Matrix9 reference = JacobianFromJet(StepSandStress(SeededJetMatrix(gradient), lame, radius, apex));
          const Matrix9 tangent = model.InStepFirstPiolaStressDerivative(gradient, Matrix3::Identity(), radius);
          EXPECT_LE(MaxAbs(tangent - reference), tolerance) << "r = " << radius << ", F =\n" << gradient;
          EXPECT_LE(MaxAbs(tangent - tangent.transpose()), tolerance);
          if (radius == 10.0 && strains.sum() <= apex) {
            EXPECT_NEAR(model.InStepEnergyDensity(gradient, Matrix3::Identity(), radius),
                        model.EnergyDensity(gradient, Matrix3::Identity()), tolerance);
          }
        }
      }
    }
  }
}

// With the radius the return mapping uses (that of the state's own volume), the step energy's
// stress is the stress of the projected state: the same Kirchhoff stress, P_step Fᵀ =
// P(F^E_projected) F^E_projectedᵀ, inside the cone, on its shear face and beyond the apex.
TEST(MpmConstitutiveTest, DruckerPragerStepStressIsTheProjectedStress) {
  const LameParameters lame = LameParameters::FromYoungsModulus(3.5e5, 0.3);
  const double angle = 30.0 * std::acos(-1.0) / 180.0;
  std::mt19937 generator(41);
  for (const double cohesion : {0.0, 100.0}) {
    const DruckerPragerModel model(lame, angle, cohesion);
    for (const Vector3& strains : {Vector3(-0.010, -0.011, -0.012), Vector3(0.01, -0.002, -0.02),
                                   Vector3(0.05, -0.03, -0.04), Vector3(0.02, 0.01, 0.015)}) {
      const Matrix3 left = RandomRotation(generator), right = RandomRotation(generator);
      const Matrix3 gradient = left * strains.array().exp().matrix().asDiagonal() * right.transpose();
      // The radius at the state's own volume: InStepState of a pure volume change with that volume.
      const double radius = model.InStepState(std::exp(strains.sum() / 3.0) * Matrix3::Identity());
      Matrix3 elastic = gradient, rotation = Matrix3::Identity(), plastic = Matrix3::Identity();
      model.UpdateState(elastic, rotation, plastic);
      const Matrix3 projected_kirchhoff = model.FirstPiolaStress(elastic, rotation) * elastic.transpose();
      const Matrix3 step_kirchhoff =
          model.InStepFirstPiolaStress(gradient, Matrix3::Identity(), radius) * gradient.transpose();
      EXPECT_LE(MaxAbs(step_kirchhoff - projected_kirchhoff), 1e-9 * StressScale(lame)) << strains.transpose();
    }
  }
}

// ---- Von Mises (linear corotated) plasticity inside an implicit step ---------------------

// ψ_step = μ_L h(s) + K t²/2 on the corotated strain Ê = sym(R0ᵀF) − I, h Huber-capped at
// r = η/(2μ_L) (linear_corotated.cc), written out independently.
template <typename Scalar>
Scalar StepVonMisesEnergy(const Matrix3Of<Scalar>& f, const Matrix3& reference_rotation, const LameParameters& lame,
                          double yield_stress) {
  using std::sqrt;
  const Matrix3Of<Scalar> strain = LinearCorotatedStrain(f, reference_rotation);
  const Scalar trace = strain(0, 0) + strain(1, 1) + strain(2, 2);
  const Matrix3Of<Scalar> deviatoric = strain - (trace / 3.0) * Matrix3Of<Scalar>::Identity();
  const Scalar squared = SquaredFrobeniusNorm(deviatoric);
  const double mu = lame.shear_modulus, bulk = lame.first_lame_parameter + 2.0 * mu / 3.0;
  const double radius = yield_stress / (2.0 * mu);
  const Scalar shear =
      ValueOf(squared) > radius * radius ? mu * (2.0 * radius * sqrt(squared) - radius * radius) : mu * squared;
  return shear + 0.5 * bulk * trace * trace;
}

// Its stress P = R0 (2μ_L min(1, r/s) d + K t I), for the Jacobian.
template <typename Scalar>
Matrix3Of<Scalar> StepVonMisesStress(const Matrix3Of<Scalar>& f, const Matrix3& reference_rotation,
                                     const LameParameters& lame, double yield_stress) {
  using std::sqrt;
  const Matrix3Of<Scalar> strain = LinearCorotatedStrain(f, reference_rotation);
  const Scalar trace = strain(0, 0) + strain(1, 1) + strain(2, 2);
  const Matrix3Of<Scalar> identity = Matrix3Of<Scalar>::Identity();
  const Matrix3Of<Scalar> deviatoric = strain - (trace / 3.0) * identity;
  const Scalar squared = SquaredFrobeniusNorm(deviatoric);
  const double mu = lame.shear_modulus, bulk = lame.first_lame_parameter + 2.0 * mu / 3.0;
  const double radius = yield_stress / (2.0 * mu);
  const Scalar fraction = ValueOf(squared) > radius * radius ? Scalar(radius) / sqrt(squared) : Scalar(1.0);
  return reference_rotation.cast<Scalar>() *
         (Scalar(2.0 * mu) * fraction * deviatoric + Scalar(bulk) * trace * identity);
}

// Yield stresses that cap all, some and none of the test gradients' shear (the dough's η is
// 6e3 Pa on μ_L 3.6e4 Pa, r = 0.08).
TEST(MpmConstitutiveTest, VonMisesStepEnergyDerivativesMatchAutodiff) {
  std::mt19937 generator(43);
  for (const LameParameters& lame : TestLameParameters()) {
    for (const double radius : {1e-4, 0.08, 10.0}) {
      const double yield_stress = 2.0 * lame.shear_modulus * radius;
      const LinearCorotatedModel model(lame, yield_stress);
      ASSERT_TRUE(model.has_in_step_plasticity());
      EXPECT_FALSE(model.in_step_plasticity_by_default());
      const double tolerance = kAutodiffRelativeTolerance * StressScale(lame);
      for (const Matrix3& gradient : PositiveDeterminantGradients()) {
        for (const Matrix3& reference_rotation : ReferenceRotationsFor(gradient, generator)) {
          const Matrix3 strain = LinearCorotatedModel::Strain(gradient, reference_rotation);
          // A state whose deviatoric strain is at the radius would sit on the cap's edge.
          const double shear = (strain - (strain.trace() / 3.0) * Matrix3::Identity()).norm();
          if (std::abs(shear - radius) < 1e-6) continue;
          const Jet9 energy = StepVonMisesEnergy(SeededJetMatrix(gradient), reference_rotation, lame, yield_stress);
          EXPECT_NEAR(model.InStepEnergyDensity(gradient, reference_rotation, 0.0), energy.a, tolerance);
          EXPECT_LE(MaxAbs(model.InStepFirstPiolaStress(gradient, reference_rotation, 0.0) - GradientFromJet(energy)),
                    tolerance);
          const Matrix9 reference =
              JacobianFromJet(StepVonMisesStress(SeededJetMatrix(gradient), reference_rotation, lame, yield_stress));
          const Matrix9 tangent = model.InStepFirstPiolaStressDerivative(gradient, reference_rotation, 0.0);
          EXPECT_LE(MaxAbs(tangent - reference), tolerance) << "r = " << radius << ", F =\n" << gradient;
          EXPECT_LE(MaxAbs(tangent - tangent.transpose()), tolerance);
        }
      }
    }
  }
}

// The step energy's stress at a trial state is the stress of the state the lagged return
// mapping projects it to ([zong2024convex] eqs. 22-26), with the same R0.
TEST(MpmConstitutiveTest, VonMisesStepStressIsTheProjectedStress) {
  const LameParameters lame = LameParameters::FromYoungsModulus(1e5, 0.4);
  const double yield_stress = 6e3;
  const LinearCorotatedModel model(lame, yield_stress);
  std::mt19937 generator(44);
  int yielded = 0;
  for (const Matrix3& gradient : PositiveDeterminantGradients()) {
    const Matrix3 reference_rotation = ComputePolarRotation(gradient);  // R0 near F's rotation
    const VonMisesReturnResult projected =
        VonMisesReturnMap(gradient, reference_rotation, yield_stress, lame.shear_modulus);
    if (projected.used_fallback) continue;
    yielded += projected.yielded ? 1 : 0;
    EXPECT_LE(MaxAbs(model.InStepFirstPiolaStress(gradient, reference_rotation, 0.0) -
                     model.FirstPiolaStress(projected.elastic_deformation_gradient, reference_rotation)),
              1e-9 * StressScale(lame));
  }
  EXPECT_GE(yielded, 4);
}

TEST(MpmConstitutiveTest, GranularMaterialsTakeFrictionAngleAndCohesion) {
  const Material sand = MakeGranularMaterial("sand", 1600.0, 3.5e5, 0.3, 30.0, 10.0);
  EXPECT_EQ(sand.model, "drucker_prager");
  EXPECT_TRUE(sand.is_plastic());
  EXPECT_EQ(sand.friction_angle_degrees, 30.0);
  EXPECT_EQ(sand.cohesion, 10.0);
  EXPECT_NEAR(sand.WaveSpeed(), sand.lame.DilatationalWaveSpeed(1600.0), 1e-12);
  const auto& model = dynamic_cast<const DruckerPragerModel&>(*sand.constitutive_model);
  // α = √(2/3)·2 sin φ/(3 − sin φ) = √(2/3)·0.4 at 30°.
  EXPECT_NEAR(model.cone_slope(), std::sqrt(2.0 / 3.0) * 0.4, 1e-15);
  EXPECT_THROW(MakeGranularMaterial("sand", 1600.0, 3.5e5, 0.3, 0.0), std::invalid_argument);
  EXPECT_THROW(MakeGranularMaterial("sand", 1600.0, 3.5e5, 0.3, 90.0), std::invalid_argument);
  EXPECT_THROW(MakeGranularMaterial("sand", 1600.0, 3.5e5, 0.3, 30.0, -1.0), std::invalid_argument);
  try {
    MakeMaterial("sand", "drucker_prager", 1600.0, 3.5e5, 0.3);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'drucker_prager' is a granular model"), std::string::npos)
        << error.what();
  }
}

TEST(MpmConstitutiveTest, LameConversionMatchesTabulatedValues) {
  // Exact values: E = 1e8, ν = 0.2 → μ_L = 1e8/2.4 = 125e6/3, λ = 2e7/0.72 = 250e6/9.
  const LameParameters ball = LameParameters::FromYoungsModulus(1e8, 0.2);
  EXPECT_NEAR(ball.shear_modulus, 125e6 / 3.0, 4.0 * kEpsilon * ball.shear_modulus);
  EXPECT_NEAR(ball.first_lame_parameter, 250e6 / 9.0, 4.0 * kEpsilon * 250e6 / 9.0);
  // Rounded table values of spec-sap-qn §2.7 and spec-penalty-hybrid §1.9 (5 digits).
  EXPECT_NEAR(ball.shear_modulus, 4.1667e7, 0.5e3);
  EXPECT_NEAR(ball.first_lame_parameter, 2.7778e7, 0.5e3);
  const LameParameters dough = LameParameters::FromYoungsModulus(1e5, 0.4);
  EXPECT_NEAR(dough.shear_modulus, 35714.0, 0.5);
  EXPECT_NEAR(dough.first_lame_parameter, 142857.0, 0.5);
  const LameParameters tet = LameParameters::FromYoungsModulus(1e6, 0.45);
  EXPECT_NEAR(tet.shear_modulus, 3.4483e5, 0.5e1);
  EXPECT_NEAR(tet.first_lame_parameter, 3.1034e6, 0.5e2);

  EXPECT_THROW(LameParameters::FromYoungsModulus(1e5, 0.5), std::invalid_argument);
  EXPECT_THROW(LameParameters::FromYoungsModulus(1e5, -1.0), std::invalid_argument);
  EXPECT_THROW(LameParameters::FromYoungsModulus(0.0, 0.3), std::invalid_argument);
}

// Every model is registered once: its name lists in the scene keys and builds the model.
TEST(MpmConstitutiveTest, RegistryListsAndBuildsEveryModel) {
  EXPECT_EQ(ConstitutiveModelNames(),
            (std::vector<std::string>{"fixed_corotated", "linear_corotated", "eos_liquid", "drucker_prager", "cloth"}));
  EXPECT_EQ(ConstitutiveModelNames(MaterialKind::kCloth), (std::vector<std::string>{"cloth"}));
  EXPECT_EQ(ConstitutiveModelNames(MaterialKind::kGranular), (std::vector<std::string>{"drucker_prager"}));
  EXPECT_EQ(ConstitutiveModelNames(MaterialKind::kLiquid), (std::vector<std::string>{"eos_liquid"}));
  const std::vector<std::string> names = ConstitutiveModelNames(MaterialKind::kSolid);
  EXPECT_EQ(names, (std::vector<std::string>{"fixed_corotated", "linear_corotated"}));
  for (const std::string& name : names) {
    const auto model = MakeConstitutiveModel(name, MaterialConstants{LameParameters::FromYoungsModulus(1e5, 0.3)});
    EXPECT_EQ(model->name(), name);
    EXPECT_FALSE(model->is_plastic());
  }
  try {
    MakeConstitutiveModel("neo_hookean", MaterialConstants{});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what())
                  .find("'neo_hookean' (known: fixed_corotated, linear_corotated, eos_liquid, drucker_prager, cloth)"),
              std::string::npos)
        << error.what();
  }
  // Plasticity belongs to the model: linear corotated takes a yield stress, fixed corotated
  // has none and refuses one instead of ignoring it.
  const MaterialConstants plastic{LameParameters::FromYoungsModulus(1e5, 0.3), 1e3};
  EXPECT_TRUE(MakeConstitutiveModel("linear_corotated", plastic)->is_plastic());
  EXPECT_THROW(MakeConstitutiveModel("fixed_corotated", plastic), std::invalid_argument);
}

TEST(MpmConstitutiveTest, MakeMaterialFillsDerivedQuantities) {
  const Material ball = MakeMaterial("ball", "linear_corotated", 1000.0, 1e8, 0.2);
  EXPECT_EQ(ball.name, "ball");
  EXPECT_FALSE(ball.is_plastic());
  EXPECT_NEAR(ball.lame.shear_modulus, 125e6 / 3.0, 4.0 * kEpsilon * ball.lame.shear_modulus);
  ASSERT_NE(ball.constitutive_model, nullptr);
  EXPECT_EQ(ball.constitutive_model->name(), "linear_corotated");
  // c = sqrt((λ + 2μ_L)/ρ) = sqrt(1e8/0.9/1000) = 333.33 m/s (spec-sap-qn §2.7, E1).
  EXPECT_NEAR(ball.WaveSpeed(), std::sqrt(1e8 / 0.9 / 1000.0), 1e-12);

  const Material dough = MakeMaterial("dough", "linear_corotated", 1000.0, 1e5, 0.4, 6000.0);
  EXPECT_TRUE(dough.is_plastic());
  EXPECT_EQ(dough.constitutive_model->name(), "linear_corotated");
  // Table value 14.6 m/s for E2 (3 digits).
  EXPECT_NEAR(dough.WaveSpeed(), 14.6, 0.05);
  // The same constants under fixed corotated, which has no plasticity: refused, named.
  try {
    MakeMaterial("dough", "fixed_corotated", 1000.0, 1e5, 0.4, 6000.0);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              "material 'dough': constitutive model 'fixed_corotated' has no plasticity: its yield stress must be 0");
  }

  EXPECT_THROW(MakeMaterial("bad", "linear_corotated", 0.0, 1e5, 0.3), std::invalid_argument);
  EXPECT_THROW(MakeMaterial("bad", "linear_corotated", 1000.0, 1e5, 0.3, -1.0), std::invalid_argument);
}

}  // namespace
}  // namespace contactlab::mpm
