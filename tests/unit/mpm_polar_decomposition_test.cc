// Signed SVD and polar decomposition F = R S (Irving et al. 2004 sign fix).
#include "mpm/polar_decomposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace contactlab::mpm {
namespace {

// Jacobi SVD is backward stable: U diag(σ) Vᵀ reproduces F, and UᵀU reproduces I, to a
// small multiple of machine epsilon times ‖F‖ (a few sweeps of 3 rotations each). 64 ε
// (≈ 1.4e-14) leaves room for that multiple without hiding an O(1) error.
constexpr double kRoundoff = 64.0 * std::numeric_limits<double>::epsilon();

Matrix3 RandomRotation(std::mt19937& generator) {
  // A normalized Gaussian quaternion is uniformly distributed on SO(3).
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::Quaterniond quaternion(normal(generator), normal(generator), normal(generator), normal(generator));
  return quaternion.normalized().toRotationMatrix();
}

Matrix3 RandomMatrix(std::mt19937& generator) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Matrix3 matrix;
  for (int i = 0; i < 9; ++i) matrix(i) = uniform(generator);
  return matrix;
}

void ExpectProperRotation(const Matrix3& rotation) {
  EXPECT_LE((rotation.transpose() * rotation - Matrix3::Identity()).norm(), kRoundoff);
  EXPECT_NEAR(rotation.determinant(), 1.0, kRoundoff);
}

void ExpectValidPolarDecomposition(const Matrix3& matrix) {
  const PolarDecomposition polar = ComputePolarDecomposition(matrix);
  ExpectProperRotation(polar.rotation);
  EXPECT_LE((polar.stretch - polar.stretch.transpose()).norm(), kRoundoff * matrix.norm());
  EXPECT_LE((polar.rotation * polar.stretch - matrix).norm(), kRoundoff * matrix.norm());
}

void ExpectValidSignedSvd(const Matrix3& matrix) {
  const SignedSvd svd = ComputeSignedSvd(matrix);
  ExpectProperRotation(svd.u);
  ExpectProperRotation(svd.v);
  const Vector3& sigma = svd.singular_values;
  // σ₁ ≥ σ₂ ≥ |σ₃|, and only σ₃ carries the sign of det F.
  EXPECT_GE(sigma(0), sigma(1));
  EXPECT_GE(sigma(1), std::abs(sigma(2)));
  EXPECT_GE(sigma(1), 0.0);
  // sign(σ₃) = sign(det F) wherever det F is resolved above rounding.
  const double determinant_scale = kRoundoff * std::pow(matrix.norm(), 3);
  if (matrix.determinant() < -determinant_scale) {
    EXPECT_LT(sigma(2), 0.0);
  }
  if (matrix.determinant() > determinant_scale) {
    EXPECT_GT(sigma(2), 0.0);
  }
  EXPECT_LE((svd.u * sigma.asDiagonal() * svd.v.transpose() - matrix).norm(), kRoundoff * matrix.norm());
}

TEST(MpmPolarDecompositionTest, RandomMatricesOfBothDeterminantSigns) {
  std::mt19937 generator(20240501);
  int negative_count = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const Matrix3 matrix = RandomMatrix(generator);
    if (matrix.determinant() < 0.0) ++negative_count;
    ExpectValidPolarDecomposition(matrix);
    ExpectValidSignedSvd(matrix);
  }
  // Entries uniform in [-1, 1] give both signs of det F about equally often.
  EXPECT_GT(negative_count, 100);
}

TEST(MpmPolarDecompositionTest, RotatedStretchIsRecovered) {
  std::mt19937 generator(7);
  for (int trial = 0; trial < 50; ++trial) {
    const Matrix3 rotation = RandomRotation(generator);
    const Matrix3 frame = RandomRotation(generator);
    const Matrix3 stretch = frame * Vector3(1.4, 0.9, 0.6).asDiagonal() * frame.transpose();
    const PolarDecomposition polar = ComputePolarDecomposition(rotation * stretch);
    // Singular values are well separated (gaps ≥ 0.3), so R and S are perturbed by
    // O(ε/gap) only.
    EXPECT_LE((polar.rotation - rotation).norm(), kRoundoff);
    EXPECT_LE((polar.stretch - stretch).norm(), kRoundoff);
  }
}

TEST(MpmPolarDecompositionTest, NegativeDeterminantKeepsProperRotation) {
  std::mt19937 generator(11);
  const Vector3 signed_values(1.2, 0.8, -0.5);
  for (int trial = 0; trial < 50; ++trial) {
    const Matrix3 left = RandomRotation(generator);
    const Matrix3 right = RandomRotation(generator);
    const Matrix3 matrix = left * signed_values.asDiagonal() * right.transpose();
    ASSERT_LT(matrix.determinant(), 0.0);

    const SignedSvd svd = ComputeSignedSvd(matrix);
    EXPECT_LE((svd.singular_values - signed_values).norm(), kRoundoff);
    ExpectValidSignedSvd(matrix);

    // R = U Vᵀ is the proper rotation left · right ᵀ, and S has eigenvalues (1.2, 0.8, −0.5):
    // the reflection is carried by S, not by R.
    const PolarDecomposition polar = ComputePolarDecomposition(matrix);
    ExpectValidPolarDecomposition(matrix);
    EXPECT_LE((polar.rotation - left * right.transpose()).norm(), kRoundoff);
    const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(polar.stretch);
    EXPECT_NEAR(eigen.eigenvalues()(0), -0.5, kRoundoff);
    EXPECT_NEAR(eigen.eigenvalues()(1), 0.8, kRoundoff);
    EXPECT_NEAR(eigen.eigenvalues()(2), 1.2, kRoundoff);
  }
}

TEST(MpmPolarDecompositionTest, StretchIsPositiveSemidefiniteForPositiveDeterminant) {
  std::mt19937 generator(13);
  for (int trial = 0; trial < 200; ++trial) {
    Matrix3 matrix = RandomMatrix(generator);
    if (matrix.determinant() < 0.0) matrix.col(0) *= -1.0;
    const PolarDecomposition polar = ComputePolarDecomposition(matrix);
    const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(polar.stretch);
    EXPECT_GE(eigen.eigenvalues().minCoeff(), -kRoundoff * matrix.norm());
  }
}

TEST(MpmPolarDecompositionTest, RotationAndIdentityAndSingularInputs) {
  std::mt19937 generator(17);
  // A pure rotation: R = F, S = I.
  const Matrix3 rotation = RandomRotation(generator);
  const PolarDecomposition polar = ComputePolarDecomposition(rotation);
  EXPECT_LE((polar.rotation - rotation).norm(), kRoundoff);
  EXPECT_LE((polar.stretch - Matrix3::Identity()).norm(), kRoundoff);

  // The identity, with repeated singular values.
  const PolarDecomposition identity = ComputePolarDecomposition(Matrix3::Identity());
  EXPECT_LE((identity.rotation - Matrix3::Identity()).norm(), kRoundoff);
  EXPECT_LE((identity.stretch - Matrix3::Identity()).norm(), kRoundoff);

  // Rank-deficient (flattened) input still gives a proper rotation with R S = F.
  const Matrix3 flattened = rotation * Vector3(1.1, 0.7, 0.0).asDiagonal() * RandomRotation(generator).transpose();
  ExpectValidPolarDecomposition(flattened);
  ExpectValidSignedSvd(flattened);
}

TEST(MpmPolarDecompositionTest, NewtonRotationMatchesTheSvdRotation) {
  // ComputePolarRotation (Newton's iteration where det F is well above zero) must give the
  // rotation of ComputePolarDecomposition up to rounding. R is perturbed by O(ε σ₁/(σ₂ + σ₃))
  // under a relative perturbation ε of F (σ descending), so the bound scales with that.
  std::mt19937 generator(23);
  std::uniform_real_distribution<double> log_stretch(-1.0, 1.0);
  const auto expect_match = [](const Matrix3& matrix) {
    const Matrix3 expected = ComputePolarDecomposition(matrix).rotation;
    const Vector3 sigma = ComputeSignedSvd(matrix).singular_values;
    const double sensitivity = std::max(1.0, sigma(0) / std::abs(sigma(1) + sigma(2)));
    const Matrix3 rotation = ComputePolarRotation(matrix);
    EXPECT_LE((rotation - expected).norm(), kRoundoff * sensitivity) << matrix;
    ExpectProperRotation(rotation);
  };
  // Small strains about random rotations, as in an elastic step, and large ones.
  for (const double strain : {0.0, 1e-9, 1e-6, 1e-3, 0.1, 0.5}) {
    for (int trial = 0; trial < 100; ++trial) {
      expect_match(RandomRotation(generator) * (Matrix3::Identity() + strain * RandomMatrix(generator)));
    }
  }
  // Stretches over up to two orders of magnitude in a random frame.
  for (int trial = 0; trial < 200; ++trial) {
    const Matrix3 frame = RandomRotation(generator);
    const Vector3 stretch(std::pow(10.0, log_stretch(generator)), std::pow(10.0, log_stretch(generator)),
                          std::pow(10.0, log_stretch(generator)));
    expect_match(RandomRotation(generator) * frame * stretch.asDiagonal() * frame.transpose());
  }
  // Random matrices of both determinant signs, the identity, a pure scaling.
  for (int trial = 0; trial < 500; ++trial) expect_match(RandomMatrix(generator));
  expect_match(Matrix3::Identity());
  expect_match(3.0 * RandomRotation(generator));
}

TEST(MpmPolarDecompositionTest, NewtonRotationLeavesReflectionsAndSingularInputsToTheSvd) {
  // Where det F ≤ 0 (or nearly so) Newton's iteration would find an improper or badly
  // conditioned factor: ComputePolarRotation then returns the SVD result itself.
  std::mt19937 generator(29);
  for (int trial = 0; trial < 50; ++trial) {
    const Matrix3 left = RandomRotation(generator);
    const Matrix3 right = RandomRotation(generator);
    for (const Vector3& signed_values : {Vector3(1.2, 0.8, -0.5), Vector3(1.1, 0.7, 0.0), Vector3(1.0, 1e-4, 1e-4)}) {
      const Matrix3 matrix = left * signed_values.asDiagonal() * right.transpose();
      EXPECT_EQ(ComputePolarRotation(matrix), ComputePolarDecomposition(matrix).rotation);
    }
  }
}

}  // namespace
}  // namespace contactlab::mpm
