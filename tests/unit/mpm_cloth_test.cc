// The codimensional cloth of [jiang2017cloth] (spec-sap-qn §2.5). The material: its stress
// checked against automatic differentiation (ceres::Jet) of a templated reference energy that
// shares no code with mpm/constitutive/cloth.cc (R from the Cholesky factor of FᵀF instead
// of Gram–Schmidt, the in-plane distance to the rotations in closed form instead of through
// the rotation's angle), and the return mapping's three cases. The mesh (mpm/cloth_mesh.h):
// volumes, rest frames, and the vertex forces against the Jet gradient of the triangle's
// energy in its vertex positions.
#include "mpm/cloth_mesh.h"
#include "mpm/constitutive/cloth.h"

#include <ceres/jet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <stdexcept>

#include <Eigen/SVD>

namespace contactlab::mpm {
namespace {

using Jet9 = ceres::Jet<double, 9>;
template <typename Scalar>
using Matrix3Of = Eigen::Matrix<Scalar, 3, 3>;

// Production and reference agree to round-off of O(100) operations on entries of order 1
// times the moduli; 1e-10 of the stress scale leaves a margin of 1e4 while a wrong term
// shows at O(1).
constexpr double kRelativeTolerance = 1e-10;

ClothMaterial TestMaterial() {
  ClothMaterial material;
  material.lame = LameParameters::FromYoungsModulus(3.2e6, 0.4);  // box bagging ([yu2025async])
  material.normal_stiffness = 4e5;                                // spec §2.5's calibration hint
  material.shear_stiffness = 2e5;
  material.layer_friction = 0.3;
  return material;
}

// Ψ(F) from R = chol(FᵀF)ᵀ's upper factor with r₃₃ signed by det F, and
// ‖R̂ − rot(R̂)‖² = ‖R̂‖² − 2 √((r₁₁ + r₂₂)² + r₁₂²) + 2 for an upper-triangular R̂.
template <typename Scalar>
Scalar ReferenceEnergy(const ClothMaterial& material, const Matrix3Of<Scalar>& f) {
  using std::sqrt;
  const auto dot = [&](int i, int j) { return f.col(i).dot(f.col(j)); };
  const Scalar r11 = sqrt(dot(0, 0));
  const Scalar r12 = dot(0, 1) / r11;
  const Scalar r22 = sqrt(dot(1, 1) - r12 * r12);
  const Scalar r13 = dot(0, 2) / r11;
  const Scalar r23 = (dot(1, 2) - r12 * r13) / r22;
  const Scalar r33 = f.determinant() / (r11 * r22);
  const double mu = material.lame.shear_modulus, lambda = material.lame.first_lame_parameter;
  const Scalar trace_term = sqrt((r11 + r22) * (r11 + r22) + r12 * r12);
  const Scalar area = r11 * r22 - Scalar(1.0);
  Scalar energy = mu * (r11 * r11 + r12 * r12 + r22 * r22 - 2.0 * trace_term + 2.0) + 0.5 * lambda * area * area;
  if (r33 <= Scalar(1.0)) {
    const Scalar gap = Scalar(1.0) - r33;
    energy += material.normal_stiffness / 3.0 * gap * gap * gap;
  }
  return energy + 0.5 * material.shear_stiffness * (r13 * r13 + r23 * r23);
}

Matrix3 ReferenceStress(const ClothMaterial& material, const Matrix3& f) {
  Matrix3Of<Jet9> jet;
  for (int i = 0; i < 9; ++i) jet(i) = Jet9(f(i), i);  // column-major: variable i is F(i)
  const Jet9 energy = ReferenceEnergy(material, jet);
  Matrix3 stress;
  for (int i = 0; i < 9; ++i) stress(i) = energy.v[i];
  return stress;
}

Matrix3 RandomRotation(std::mt19937& random) {
  std::normal_distribution<double> normal;
  const Eigen::Quaterniond q(normal(random), normal(random), normal(random), normal(random));
  return q.normalized().toRotationMatrix();
}

// A face particle's F: a rotation times an upper-triangular stretch with the given r₃₃ and
// cross-shear, plus a small random perturbation of the in-plane stretch.
Matrix3 RandomFaceDeformation(std::mt19937& random, double r33, double shear) {
  std::uniform_real_distribution<double> stretch(0.8, 1.25), offset(-0.2, 0.2);
  Matrix3 upper = Matrix3::Zero();
  upper(0, 0) = stretch(random);
  upper(1, 1) = stretch(random);
  upper(0, 1) = offset(random);
  upper(0, 2) = shear * offset(random);
  upper(1, 2) = shear * offset(random);
  upper(2, 2) = r33;
  return RandomRotation(random) * upper;
}

TEST(ClothMaterial, StressIsTheEnergysGradientInEveryRegime) {
  const ClothMaterial material = TestMaterial();
  std::mt19937 random(11);
  const double scale = material.lame.shear_modulus + material.lame.first_lame_parameter + material.normal_stiffness;
  // Compressed across the thickness (f active), stretched (f = 0), inverted (r₃₃ < 0).
  for (const double r33 : {0.4, 0.9, 1.3, -0.3}) {
    for (int trial = 0; trial < 10; ++trial) {
      const Matrix3 f = RandomFaceDeformation(random, r33, 1.0);
      const Matrix3 reference = ReferenceStress(material, f);
      const Matrix3 stress = ClothFirstPiolaStress(material, f);
      EXPECT_LT((stress - reference).norm(), kRelativeTolerance * scale) << "r33 " << r33 << "\n" << f;
      EXPECT_NEAR(ClothEnergyDensity(material, f), ReferenceEnergy(material, f), kRelativeTolerance * scale);
    }
  }
}

// The tangent the implicit formulations assemble, against central differences of the
// reference stress (itself the Jet gradient of the independent energy). Step 1e-6 on entries of
// order 1: truncation ~1e-12 and round-off ~1e-10 of the moduli, against a tolerance of 1e-6
// of them; a dropped term of the tangent is of order 1 of them.
TEST(ClothMaterial, TangentIsTheStresssDerivativeInEveryRegime) {
  const ClothMaterial material = TestMaterial();
  const ClothModel model(material);
  std::mt19937 random(13);
  const double scale = material.lame.shear_modulus + material.lame.first_lame_parameter + material.normal_stiffness;
  constexpr double kStep = 1e-6;
  for (const double r33 : {0.4, 0.9, 1.3, -0.3}) {
    for (int trial = 0; trial < 4; ++trial) {
      const Matrix3 f = RandomFaceDeformation(random, r33, 1.0);
      const Matrix9 tangent = model.FirstPiolaStressDerivative(f, Matrix3::Identity());
      for (int b = 0; b < 9; ++b) {
        Matrix3 plus = f, minus = f;
        plus(b) += kStep;
        minus(b) -= kStep;
        const Matrix3 difference = (ReferenceStress(material, plus) - ReferenceStress(material, minus)) / (2 * kStep);
        const Eigen::Map<const Vector9> column(difference.data());
        EXPECT_LT((tangent.col(b) - column).norm(), 1e-6 * scale) << "r33 " << r33 << ", F entry " << b;
      }
    }
  }
  // The model's wave speed is the faster of the plane's and the layer's.
  EXPECT_NEAR(model.WaveSpeed(1500.0),
              std::sqrt(std::max(material.lame.first_lame_parameter + 2 * material.lame.shear_modulus,
                                 2 * material.normal_stiffness) /
                        1500.0),
              1e-12);
  EXPECT_TRUE(model.is_plastic());
}

TEST(ClothMaterial, RestIsStressFreeAndRotationsChangeNothing) {
  const ClothMaterial material = TestMaterial();
  std::mt19937 random(5);
  const Matrix3 rotation = RandomRotation(random);
  EXPECT_NEAR(ClothEnergyDensity(material, rotation), 0.0, 1e-6);
  EXPECT_LT(ClothFirstPiolaStress(material, rotation).norm(), 1e-6);  // of moduli ~1e6
  const Matrix3 f = RandomFaceDeformation(random, 0.7, 1.0);
  const Matrix3 turn = RandomRotation(random);
  EXPECT_NEAR(ClothEnergyDensity(material, turn * f), ClothEnergyDensity(material, f),
              1e-9 * material.normal_stiffness);
  EXPECT_LT((ClothFirstPiolaStress(material, turn * f) - turn * ClothFirstPiolaStress(material, f)).norm(),
            1e-9 * material.normal_stiffness);
}

TEST(ClothMaterial, FactorsAreARotationAndAnUpperTriangleWithTheSignOfDetF) {
  std::mt19937 random(7);
  for (const double r33 : {0.5, -0.5}) {
    const Matrix3 f = RandomFaceDeformation(random, r33, 1.0);
    const ClothFactors factors = FactorCloth(f);
    EXPECT_LT((factors.rotation * factors.rotation.transpose() - Matrix3::Identity()).norm(), 1e-14);
    EXPECT_NEAR(factors.rotation.determinant(), 1.0, 1e-14);
    EXPECT_LT((factors.rotation * factors.upper - f).norm(), 1e-14);
    EXPECT_EQ(factors.upper(1, 0), 0.0);
    EXPECT_GT(factors.upper(0, 0), 0.0);
    EXPECT_GT(factors.upper(1, 1), 0.0);
    EXPECT_NEAR(factors.upper(2, 2), r33, 1e-14);
  }
}

TEST(ClothMaterial, ReturnMappingSeparatesLayersLimitsShearAndKeepsThePlane) {
  ClothMaterial material = TestMaterial();
  std::mt19937 random(3);
  const auto upper_after = [&](const Matrix3& f) { return FactorCloth(ClothReturnMapping(material, f)).upper; };
  // Stretched across the thickness: no cohesion, r₃₃ = 1 and no cross-shear.
  Matrix3 f = RandomFaceDeformation(random, 1.4, 1.0);
  Matrix3 r = upper_after(f);
  EXPECT_NEAR(r(2, 2), 1.0, 1e-14);
  EXPECT_NEAR(r(0, 2), 0.0, 1e-14);
  EXPECT_NEAR(r(1, 2), 0.0, 1e-14);
  // The in-plane columns are the mesh's: never changed.
  EXPECT_LT((ClothReturnMapping(material, f).leftCols<2>() - f.leftCols<2>()).norm(), 1e-14);
  // Inverted beyond −1: clamped, no cross-shear.
  r = upper_after(RandomFaceDeformation(random, -1.5, 1.0));
  EXPECT_NEAR(r(2, 2), -1.0, 1e-14);
  EXPECT_NEAR(std::hypot(r(0, 2), r(1, 2)), 0.0, 1e-14);
  // Compressed with cross-shear beyond the friction limit c_F k (1 − r₃₃)² / γ: scaled onto it.
  f = RandomFaceDeformation(random, 0.9, 1.0);
  const ClothFactors before = FactorCloth(f);
  const double limit = material.layer_friction * material.normal_stiffness * 0.01 / material.shear_stiffness;
  ASSERT_GT(std::hypot(before.upper(0, 2), before.upper(1, 2)), limit);
  r = upper_after(f);
  EXPECT_NEAR(std::hypot(r(0, 2), r(1, 2)), limit, 1e-12);
  EXPECT_NEAR(r(0, 2) * before.upper(1, 2) - r(1, 2) * before.upper(0, 2), 0.0, 1e-14);  // same direction
  EXPECT_NEAR(r(2, 2), 0.9, 1e-14);
  // Within the limit: unchanged. Without shear stiffness: no cross-shear at all.
  material.layer_friction = 1e3;
  EXPECT_LT((ClothReturnMapping(material, f) - f).norm(), 1e-14);
  material.shear_stiffness = 0.0;
  r = upper_after(f);
  EXPECT_NEAR(std::hypot(r(0, 2), r(1, 2)), 0.0, 1e-14);
}

TEST(ClothMesh, RectangleVolumesAndRestFrames) {
  const Vector3 origin(0.1, -0.2, 0.3);
  const Vector3 along_width = Vector3(1.0, 1.0, 0.0).normalized(), along_height(0.0, 0.0, 1.0);
  const ClothMesh mesh = RectangleCloth(0.42, 0.3, 8, 5, origin, along_width, along_height);
  ASSERT_EQ(mesh.rest_positions.size(), 40u);
  ASSERT_EQ(mesh.triangles.size(), 2u * 7u * 4u);
  const double thickness = 1e-3;
  const ClothParticles particles = DiscretizeCloth(mesh, thickness);
  double faces = 0.0, vertices = 0.0;
  for (const double v : particles.face_volume) faces += v;
  for (const double v : particles.vertex_volume) vertices += v;
  // A quarter of A t to the face particle and to each vertex: all of it, once.
  EXPECT_NEAR(faces, 0.25 * 0.42 * 0.3 * thickness, 1e-15);
  EXPECT_NEAR(faces + vertices, 0.42 * 0.3 * thickness, 1e-15);
  const Vector3 normal = along_width.cross(along_height);
  for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
    const Matrix3& rest = particles.face_deformation[e];
    EXPECT_LT((rest.transpose() * rest - Matrix3::Identity()).norm(), 1e-14);
    EXPECT_NEAR(rest.determinant(), 1.0, 1e-14);
    EXPECT_LT((rest.col(2) - normal).norm(), 1e-14) << "counter-clockwise triangles face the normal";
    const auto& t = mesh.triangles[e];
    const Matrix3 again =
        FaceDeformation({mesh.rest_positions[t[0]], mesh.rest_positions[t[1]], mesh.rest_positions[t[2]]},
                        particles.rest_inverse[e], rest.col(2));
    EXPECT_LT((again - rest).norm(), 1e-13);
    EXPECT_NEAR(ClothEnergyDensity(TestMaterial(), again), 0.0, 1e-6);
  }
  // A uniform stretch by 1.2 along the width: each face's in-plane singular values are 1.2 and 1.
  const Matrix3 stretch = Matrix3::Identity() + 0.2 * along_width * along_width.transpose();
  const auto& t = mesh.triangles[5];
  const Matrix3 f = FaceDeformation(
      {stretch * mesh.rest_positions[t[0]], stretch * mesh.rest_positions[t[1]], stretch * mesh.rest_positions[t[2]]},
      particles.rest_inverse[5], particles.face_deformation[5].col(2));
  const Eigen::Vector2d singular = Eigen::JacobiSVD<Eigen::Matrix<double, 3, 2>>(f.leftCols<2>()).singularValues();
  EXPECT_NEAR(singular[0], 1.2, 1e-13);
  EXPECT_NEAR(singular[1], 1.0, 1e-13);
  EXPECT_THROW(
      DiscretizeCloth(ClothMesh{{Vector3::Zero(), Vector3::UnitX(), Vector3(2.0, 0.0, 0.0)}, {{0, 1, 2}}}, thickness),
      std::invalid_argument);
  EXPECT_THROW(DiscretizeCloth(ClothMesh{{Vector3::Zero(), Vector3::UnitX()}, {{0, 1, 2}}}, thickness),
               std::invalid_argument);
}

TEST(ClothMesh, VertexForcesAreMinusTheTriangleEnergysGradient) {
  const ClothMaterial material = TestMaterial();
  const ClothMesh mesh = RectangleCloth(0.05, 0.04, 2, 2, Vector3::Zero(), Vector3::UnitX(), Vector3::UnitY());
  const double thickness = 1e-3;
  const ClothParticles particles = DiscretizeCloth(mesh, thickness);
  std::mt19937 random(17);
  std::normal_distribution<double> normal;
  for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
    const auto& t = mesh.triangles[e];
    std::array<Vector3, 3> x;
    for (int v = 0; v < 3; ++v) {
      x[v] = mesh.rest_positions[t[v]] + 0.004 * Vector3(normal(random), normal(random), normal(random));
    }
    // A normal direction compressed across the cloth and sheared, so that every energy term acts.
    const Vector3 d3 = 0.8 * particles.face_deformation[e].col(2) + Vector3(0.05, -0.03, 0.0);
    const Matrix2& rest_inverse = particles.rest_inverse[e];
    const double volume = particles.face_volume[e];
    const std::array<Vector3, 3> forces = InPlaneVertexForces(
        ClothFirstPiolaStress(material, FaceDeformation(x, rest_inverse, d3)), rest_inverse, volume);
    // E(x) = V Ψ(F(x)) with Jets for the nine vertex coordinates.
    Eigen::Matrix<Jet9, 3, 3> vertex;
    for (int v = 0; v < 3; ++v) {
      for (int a = 0; a < 3; ++a) vertex(a, v) = Jet9(x[v][a], 3 * v + a);
    }
    Eigen::Matrix<Jet9, 3, 2> edges;
    edges << vertex.col(1) - vertex.col(0), vertex.col(2) - vertex.col(0);
    Matrix3Of<Jet9> f;
    f.leftCols<2>() = edges * rest_inverse.cast<Jet9>();
    f.col(2) = d3.cast<Jet9>();
    const Jet9 energy = volume * ReferenceEnergy(material, f);
    double scale = 0.0;
    for (int v = 0; v < 3; ++v) scale = std::max(scale, forces[v].norm());
    ASSERT_GT(scale, 0.0);
    for (int v = 0; v < 3; ++v) {
      for (int a = 0; a < 3; ++a) {
        EXPECT_NEAR(forces[v][a], -energy.v[3 * v + a], kRelativeTolerance * 1e2 * scale) << "vertex " << v;
      }
    }
    EXPECT_LT((forces[0] + forces[1] + forces[2]).norm(), 1e-12 * scale);  // no net force
  }
}

}  // namespace
}  // namespace contactlab::mpm
