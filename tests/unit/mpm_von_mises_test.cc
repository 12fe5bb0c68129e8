// Von Mises return mapping for linear corotated elasticity ([zong2024convex] eq. 22–26,
// Algorithm 1; spec-sap-qn §2.2).
#include "mpm/constitutive/von_mises_linear_corotated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

// Every result passes through one 3x3 polar decomposition, one 3x3 symmetric eigen-solve
// and one 6x6 pivoted LU solve, each backward stable to a small multiple of ε‖S‖; the
// 6x6 matrix has its smallest singular value ≈ min(|cos θ|, |cos θ/2|) ≥ 0.5 for the
// relative rotations θ ≤ 1 rad used here, so its condition number is below 3. That bounds
// the errors by about 1e3 ε ≈ 2e-13 relative to ‖S‖ ≈ √3, or ≈ 1e-11 relative to the
// smallest cylinder radius (0.05) tested. 1e-10 keeps a margin of 10 on the radius and of
// 500 on everything else, while any error in the algorithm shows at O(r). (Measured: all
// checks below also hold at 1e-13.)
constexpr double kRelativeTolerance = 1e-10;

// Dough of [zong2024convex] §VII-B: E = 1e5 Pa, ν = 0.4 → μ_L = 1e5/2.8 Pa.
constexpr double kShearModulus = 1e5 / 2.8;

Matrix3 RandomRotation(std::mt19937& generator) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::Quaterniond quaternion(normal(generator), normal(generator), normal(generator), normal(generator));
  return quaternion.normalized().toRotationMatrix();
}

Matrix3 RotationAboutRandomAxis(std::mt19937& generator, double angle) {
  std::normal_distribution<double> normal(0.0, 1.0);
  const Vector3 axis(normal(generator), normal(generator), normal(generator));
  return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix();
}

// S = ½(R0ᵀF + FᵀR0) ([zong2024convex] eq. 23).
Matrix3 SymmetricStretch(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) {
  const Matrix3 unrotated = reference_rotation.transpose() * deformation_gradient;
  return 0.5 * (unrotated + unrotated.transpose());
}

Matrix3 Deviatoric(const Matrix3& matrix) {
  return matrix - matrix.trace() / 3.0 * Matrix3::Identity();
}

// Independent closed form of the projected stretch: scaling the eigenvalues radially about
// their mean (eq. 25) with the eigenvectors kept is S̃ = (tr S/3) I + (r/‖dev S‖_F) dev S.
Matrix3 ExpectedProjectedStretch(const Matrix3& stretch, double radius) {
  const Matrix3 deviatoric = Deviatoric(stretch);
  return stretch.trace() / 3.0 * Matrix3::Identity() + radius / deviatoric.norm() * deviatoric;
}

double YieldStressForRadius(double radius) {
  return 2.0 * kShearModulus * radius;
}

TEST(MpmVonMisesTest, InsideYieldCylinderReturnsTrialUnchanged) {
  std::mt19937 generator(101);
  constexpr double kRadius = 0.084;  // η/(2μ_L) of the tearing dough (spec-sap-qn §2.7)
  for (int trial_index = 0; trial_index < 20; ++trial_index) {
    const Matrix3 reference_rotation = RandomRotation(generator);
    const Matrix3 frame = RandomRotation(generator);
    // Deviatoric part of the stretch (0.03, −0.01, −0.02): norm 0.037 < 0.084.
    const Matrix3 stretch = frame * Vector3(1.03, 0.99, 0.98).asDiagonal() * frame.transpose();
    const Matrix3 trial = reference_rotation * RotationAboutRandomAxis(generator, 0.01) * stretch;
    ASSERT_LT(Deviatoric(SymmetricStretch(trial, reference_rotation)).norm(), kRadius);

    const VonMisesReturnResult result =
        VonMisesReturnMap(trial, reference_rotation, YieldStressForRadius(kRadius), kShearModulus);
    EXPECT_FALSE(result.yielded);
    EXPECT_FALSE(result.used_fallback);
    EXPECT_EQ(result.elastic_deformation_gradient, trial);
    // The polar rotation of the trial state (Newton's iteration: the SVD's up to rounding).
    EXPECT_LE((result.next_reference_rotation - ComputePolarDecomposition(trial).rotation).norm(), 1e-13);
  }
}

TEST(MpmVonMisesTest, HydrostaticTrialIsNotProjected) {
  // dev S = 0 exactly (1.5 I, exact in binary): elastic even for η = 0 (guard of eq. 25).
  const Matrix3 hydrostatic = 1.5 * Matrix3::Identity();
  const VonMisesReturnResult exact = VonMisesReturnMap(hydrostatic, Matrix3::Identity(), 0.0, kShearModulus);
  EXPECT_FALSE(exact.yielded);
  EXPECT_EQ(exact.elastic_deformation_gradient, hydrostatic);

  // A rotated hydrostatic state has dev S = O(ε) from rounding; with η = 0 the projection
  // removes only that rounding-level part, so F^E moves by O(ε) at most.
  std::mt19937 generator(103);
  const Matrix3 rotation = RandomRotation(generator);
  const Matrix3 trial = 1.1 * rotation;
  const VonMisesReturnResult rotated = VonMisesReturnMap(trial, rotation, 0.0, kShearModulus);
  EXPECT_LE((rotated.elastic_deformation_gradient - trial).norm(), kRelativeTolerance * trial.norm());
}

TEST(MpmVonMisesTest, OutsideYieldCylinderProjectsOntoIt) {
  std::mt19937 generator(107);
  for (const double radius : {0.05, 0.07, 0.084}) {
    for (const double relative_angle : {0.0, 0.05, 0.3, 1.0}) {
      for (int trial_index = 0; trial_index < 5; ++trial_index) {
        const Matrix3 reference_rotation = RandomRotation(generator);
        const Matrix3 frame = RandomRotation(generator);
        const Matrix3 stretch = frame * Vector3(1.3, 0.9, 0.85).asDiagonal() * frame.transpose();
        const Matrix3 trial_rotation = reference_rotation * RotationAboutRandomAxis(generator, relative_angle);
        const Matrix3 trial = trial_rotation * stretch;
        const Matrix3 trial_stretch = SymmetricStretch(trial, reference_rotation);
        ASSERT_GT(Deviatoric(trial_stretch).norm(), radius);

        const VonMisesReturnResult result =
            VonMisesReturnMap(trial, reference_rotation, YieldStressForRadius(radius), kShearModulus);
        EXPECT_TRUE(result.yielded);
        EXPECT_FALSE(result.used_fallback);
        const Matrix3& projected = result.elastic_deformation_gradient;
        const Matrix3 projected_stretch = SymmetricStretch(projected, reference_rotation);

        // (ii) On the cylinder: ‖dev S(F̃^E)‖_F = η/(2μ_L), and S(F̃^E) = S̃ (eq. 25–26).
        EXPECT_NEAR(Deviatoric(projected_stretch).norm(), radius, kRelativeTolerance * radius);
        const Matrix3 expected_stretch = ExpectedProjectedStretch(trial_stretch, radius);
        EXPECT_LE((projected_stretch - expected_stretch).norm(), kRelativeTolerance * expected_stretch.norm());
        // (iii) The hydrostatic part (mean eigenvalue) is unchanged.
        EXPECT_NEAR(projected_stretch.trace(), trial_stretch.trace(), kRelativeTolerance * trial_stretch.norm());
        // The polar rotation of F̃^E is the trial's R: F̃^E = R Ṽ with Ṽ symmetric positive
        // definite. The next reference rotation is that rotation.
        const PolarDecomposition polar = ComputePolarDecomposition(projected);
        EXPECT_LE((polar.rotation - trial_rotation).norm(), kRelativeTolerance);
        EXPECT_LE((result.next_reference_rotation - trial_rotation).norm(), kRelativeTolerance);
        const Matrix3 symmetric_factor = trial_rotation.transpose() * projected;
        EXPECT_LE((symmetric_factor - symmetric_factor.transpose()).norm(),
                  kRelativeTolerance * symmetric_factor.norm());
      }
    }
  }
}

TEST(MpmVonMisesTest, ProjectionIsIdempotent) {
  // A state on the cylinder maps to itself (to rounding: it may sit ε outside).
  std::mt19937 generator(109);
  constexpr double kRadius = 0.07;
  const Matrix3 reference_rotation = RandomRotation(generator);
  const Matrix3 trial =
      reference_rotation * RotationAboutRandomAxis(generator, 0.2) * Vector3(1.25, 0.95, 0.8).asDiagonal();
  const VonMisesReturnResult first =
      VonMisesReturnMap(trial, reference_rotation, YieldStressForRadius(kRadius), kShearModulus);
  ASSERT_TRUE(first.yielded);
  const VonMisesReturnResult second = VonMisesReturnMap(first.elastic_deformation_gradient, reference_rotation,
                                                        YieldStressForRadius(kRadius), kShearModulus);
  EXPECT_LE((second.elastic_deformation_gradient - first.elastic_deformation_gradient).norm(),
            kRelativeTolerance * first.elastic_deformation_gradient.norm());
}

TEST(MpmVonMisesTest, IdentityRelativeRotationGivesProjectedStretch) {
  // (iv) R0 = R, so Q = R0ᵀR = I and eq. 26 reads Ṽ = S̃: F̃^E = R S̃.
  std::mt19937 generator(113);
  constexpr double kRadius = 0.05;
  for (int trial_index = 0; trial_index < 10; ++trial_index) {
    const Matrix3 rotation = RandomRotation(generator);
    const Matrix3 frame = RandomRotation(generator);
    const Matrix3 stretch = frame * Vector3(1.2, 1.0, 0.7).asDiagonal() * frame.transpose();
    const VonMisesReturnResult result =
        VonMisesReturnMap(rotation * stretch, rotation, YieldStressForRadius(kRadius), kShearModulus);
    ASSERT_TRUE(result.yielded);
    EXPECT_FALSE(result.used_fallback);
    // R0ᵀR = I + O(ε) here, since both come from the same rotation.
    const Matrix3 symmetric_factor = rotation.transpose() * result.elastic_deformation_gradient;
    const Matrix3 expected = ExpectedProjectedStretch(stretch, kRadius);
    EXPECT_LE((symmetric_factor - expected).norm(), kRelativeTolerance * expected.norm());
  }
}

TEST(MpmVonMisesTest, SingularRelativeRotationUsesFallback) {
  // Q = R0ᵀR turning by 90° or 180° makes the 6x6 system singular (eigenvalue cos θ or
  // cos(θ/2) of the map ½(QX + XQᵀ)); the fallback F̃^E = R0 S̃ still satisfies
  // ½(R0ᵀF̃^E + F̃^EᵀR0) = S̃.
  std::mt19937 generator(127);
  constexpr double kRadius = 0.05;
  for (const double angle : {std::numbers::pi / 2.0, std::numbers::pi}) {
    const Matrix3 reference_rotation = RandomRotation(generator);
    const Matrix3 relative_rotation = RotationAboutRandomAxis(generator, angle);
    const Matrix3 frame = RandomRotation(generator);
    const Matrix3 stretch = frame * Vector3(1.2, 1.0, 0.7).asDiagonal() * frame.transpose();
    const Matrix3 trial = reference_rotation * relative_rotation * stretch;
    const VonMisesReturnResult result =
        VonMisesReturnMap(trial, reference_rotation, YieldStressForRadius(kRadius), kShearModulus);
    ASSERT_TRUE(result.yielded);
    EXPECT_TRUE(result.used_fallback) << "angle " << angle;
    const Matrix3 trial_stretch = SymmetricStretch(trial, reference_rotation);
    const Matrix3 expected = ExpectedProjectedStretch(trial_stretch, kRadius);
    EXPECT_LE((reference_rotation.transpose() * result.elastic_deformation_gradient - expected).norm(),
              kRelativeTolerance * expected.norm());
    EXPECT_LE((SymmetricStretch(result.elastic_deformation_gradient, reference_rotation) - expected).norm(),
              kRelativeTolerance * expected.norm());
    EXPECT_LE((result.next_reference_rotation - ComputePolarDecomposition(result.elastic_deformation_gradient).rotation)
                  .norm(),
              kRelativeTolerance);
  }
}

TEST(MpmVonMisesTest, NearlySingularRelativeRotationStillSolvesExactly) {
  // 1e-3 rad away from the 90° singularity, rcond(C) ≈ 3e-4 > 1e-8: the 6x6 path is used
  // and S(F̃^E) = S̃ holds to the solve's accuracy, ε · cond(C) ≈ 1e-12 relative.
  std::mt19937 generator(131);
  constexpr double kRadius = 0.05;
  const Matrix3 reference_rotation = RandomRotation(generator);
  const Matrix3 relative_rotation = RotationAboutRandomAxis(generator, std::numbers::pi / 2.0 - 1e-3);
  const Matrix3 trial = reference_rotation * relative_rotation * Vector3(1.2, 1.0, 0.7).asDiagonal();
  const VonMisesReturnResult result =
      VonMisesReturnMap(trial, reference_rotation, YieldStressForRadius(kRadius), kShearModulus);
  ASSERT_TRUE(result.yielded);
  EXPECT_FALSE(result.used_fallback);
  const Matrix3 expected = ExpectedProjectedStretch(SymmetricStretch(trial, reference_rotation), kRadius);
  EXPECT_LE((SymmetricStretch(result.elastic_deformation_gradient, reference_rotation) - expected).norm(),
            kRelativeTolerance * expected.norm());
}

TEST(MpmVonMisesTest, RejectsInvalidParameters) {
  EXPECT_THROW(VonMisesReturnMap(Matrix3::Identity(), Matrix3::Identity(), 1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(VonMisesReturnMap(Matrix3::Identity(), Matrix3::Identity(), -1.0, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace contactlab::mpm
