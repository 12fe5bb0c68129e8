// Tests of the attachment relaxation of the penalty method (spec §2.2–§2.4, §2.9, A6, A7):
// static attachments stay put, sliding ones land on the Coulomb cone, P is idempotent, the
// result is continuous at the static/sliding switch and at separation, the active test,
// degenerate inputs, and the analytic Jacobians ∂Y/∂Z against ceres::Jet derivatives of the
// templated value functions with the branch frozen.
#include <ceres/jet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "formulations/penalty/relaxation.h"
#include "rigid/shape.h"

namespace contactlab::penalty {
namespace {

using Jet3 = ceres::Jet<double, 3>;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

// ---- Level sets usable with double and Jet --------------------------------------------

// Signed distance of a ball of radius `radius` centred at `centre`.
struct SphereLevelSet {
  Vector3 centre = Vector3::Zero();
  double radius = 1.0;
  template <typename T>
  T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const {
    using std::sqrt;
    const Vector3Of<T> offset = point - centre.cast<T>();
    const T distance = sqrt(offset.squaredNorm());
    *gradient = offset / distance;
    return distance - T(radius);
  }
};

// Signed distance of the cavity outside a ball: the object is ‖x‖ ≥ radius (concave).
struct CavityLevelSet {
  double radius = 1.0;
  template <typename T>
  T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const {
    using std::sqrt;
    const T distance = sqrt(point.squaredNorm());
    *gradient = -point / distance;
    return T(radius) - distance;
  }
};

// Signed distance of a half-space through `origin` with unit outward normal `normal` (the
// region of a box face).
struct PlaneLevelSet {
  Vector3 origin = Vector3::Zero();
  Vector3 normal = Vector3::UnitZ();
  template <typename T>
  T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const {
    *gradient = normal.cast<T>();
    return normal.cast<T>().dot(point - origin.cast<T>());
  }
};

// A wavy floor φ = z − a sin(b x) cos(c y): smooth, curved, and not a signed distance
// (‖∇φ‖ ≠ 1), which exercises the normalization of the gradient.
struct WavyLevelSet {
  double amplitude = 0.05, x_frequency = 2.0, y_frequency = 3.0;
  template <typename T>
  T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const {
    using std::cos;
    using std::sin;
    const T sine_x = sin(x_frequency * point.x());
    const T cosine_x = cos(x_frequency * point.x());
    const T sine_y = sin(y_frequency * point.y());
    const T cosine_y = cos(y_frequency * point.y());
    (*gradient)(0) = -amplitude * x_frequency * cosine_x * cosine_y;
    (*gradient)(1) = amplitude * y_frequency * sine_x * sine_y;
    (*gradient)(2) = T(1.0);
    return point.z() - amplitude * sine_x * cosine_y;
  }
};

// The side region of a rigid cylinder is the signed distance ρ − r of an infinite one.
struct CylinderSide {
  double radius = 0.3;
  template <typename T>
  T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const {
    using std::sqrt;
    const T radial = sqrt(point.x() * point.x() + point.y() * point.y());
    *gradient = Vector3Of<T>(point.x() / radial, point.y() / radial, T(0.0));
    return radial - T(radius);
  }
};

// Wraps a templated level set as a LevelSetFunction. The Hessian is the Jet derivative of
// the templated gradient: it is the input of the analytic Jacobian under test, and the
// Hessians of the analytic shapes are tested on their own in rigid_shape_test.
template <typename TemplatedLevelSet>
LevelSetFunction AsLevelSetFunction(const TemplatedLevelSet& level_set) {
  return [level_set](const Vector3& point) {
    Vector3Of<Jet3> jet_point;
    for (int i = 0; i < 3; ++i) jet_point(i) = Jet3(point(i), i);
    Vector3Of<Jet3> jet_gradient;
    const Jet3 value = level_set(jet_point, &jet_gradient);
    LevelSetSample sample;
    sample.value = value.a;
    for (int i = 0; i < 3; ++i) {
      sample.gradient(i) = jet_gradient(i).a;
      sample.hessian.row(i) = jet_gradient(i).v.transpose();
    }
    return sample;
  };
}

// A rigid shape's signed distance as a LevelSetFunction, with its analytic Hessian.
LevelSetFunction ShapeLevelSet(const rigid::Shape& shape) {
  return [shape](const Vector3& point) {
    return LevelSetSample{shape.SignedDistance(point), shape.OutwardNormal(point), shape.SignedDistanceHessian(point)};
  };
}

// Jet derivative ∂Y/∂Z of a templated relaxation `relaxed(X, Z)` at (X, Z).
template <typename RelaxedPoint>
Matrix3 JetJacobian(const Vector3& attachment, const Vector3& particle, RelaxedPoint relaxed_point) {
  Vector3Of<Jet3> jet_particle;
  for (int i = 0; i < 3; ++i) jet_particle(i) = Jet3(particle(i), i);
  const Vector3Of<Jet3> jet_attachment = attachment.cast<Jet3>();
  const Vector3Of<Jet3> result = relaxed_point(jet_attachment, jet_particle);
  Matrix3 jacobian;
  for (int i = 0; i < 3; ++i) jacobian.row(i) = result(i).v.transpose();
  return jacobian;
}

// Tangential and normal parts of the spring direction Y − Z in the frame of `normal`.
struct ConeParts {
  double normal_part;      // (Y − Z)·n
  double tangential_part;  // ‖(Y − Z) − ((Y − Z)·n) n‖
};
ConeParts SplitAlongNormal(const Vector3& relaxed_point, const Vector3& particle, const Vector3& normal) {
  const Vector3 spring = relaxed_point - particle;
  const double normal_part = spring.dot(normal);
  return {normal_part, (spring - normal_part * normal).norm()};
}

Vector3 RandomUnitVector(std::mt19937& generator) {
  std::normal_distribution<double> gaussian;
  return Vector3(gaussian(generator), gaussian(generator), gaussian(generator)).normalized();
}

// ---- Plane -------------------------------------------------------------------------------

TEST(PenaltyRelaxationTest, PlaneStaticAttachmentStaysPut) {
  const Vector3 plane_point(0.3, -0.2, 0.1);
  const Vector3 normal = Vector3(0.2, -0.1, 1.0).normalized();
  const double friction = 0.5;
  std::mt19937 generator(1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    // Z below the plane by depth d; X on the plane within μ d of W.
    const double depth = 0.01 + 0.1 * unit(generator);
    const Vector3 closest = plane_point + RandomUnitVector(generator).cross(normal);
    const Vector3 particle = closest - depth * normal;
    Vector3 tangent = RandomUnitVector(generator).cross(normal).normalized();
    const Vector3 attachment = closest + 0.99 * unit(generator) * friction * depth * tangent;
    const Relaxation relaxation = RelaxAgainstPlane(attachment, particle, plane_point, normal, friction);
    EXPECT_FALSE(relaxation.sliding);
    EXPECT_TRUE(relaxation.active);
    EXPECT_EQ(relaxation.relaxed_point, attachment);
    EXPECT_EQ(relaxation.jacobian, Matrix3::Zero());
    // Static force k (X − Z) inside the cone, with K = −k I.
    const PenaltyForce force = SpringForce(relaxation, particle, 1e3);
    EXPECT_EQ(force.force, 1e3 * (attachment - particle));
    EXPECT_EQ(force.jacobian, -1e3 * Matrix3::Identity());
  }
  // Zero tangential force at first contact: the particle right below its attachment.
  const Relaxation straight_below =
      RelaxAgainstPlane(plane_point, plane_point - 0.1 * normal, plane_point, normal, friction);
  const ConeParts parts = SplitAlongNormal(straight_below.relaxed_point, plane_point - 0.1 * normal, normal);
  EXPECT_NEAR(parts.tangential_part, 0.0, 1e-16);
  EXPECT_NEAR(parts.normal_part, 0.1, 1e-16);
}

TEST(PenaltyRelaxationTest, PlaneSlidingLandsExactlyOnTheCone) {
  std::mt19937 generator(2);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 500; ++trial) {
    const Vector3 plane_point = RandomUnitVector(generator);
    const Vector3 normal = RandomUnitVector(generator);
    const double friction = 0.05 + 1.5 * unit(generator);
    const double depth = 1e-4 + 0.1 * unit(generator);
    const Vector3 particle = plane_point + RandomUnitVector(generator).cross(normal) - depth * normal;
    const Vector3 closest = particle + depth * normal;
    const Vector3 tangent = RandomUnitVector(generator).cross(normal).normalized();
    const Vector3 attachment = closest + (1.01 + 3.0 * unit(generator)) * friction * depth * tangent;
    const double stiffness = 1e4;
    const Relaxation relaxation = RelaxAgainstPlane(attachment, particle, plane_point, normal, friction);
    ASSERT_TRUE(relaxation.sliding);
    ASSERT_TRUE(relaxation.active);
    const PenaltyForce force = SpringForce(relaxation, particle, stiffness);
    const double normal_force = force.force.dot(normal);
    const double tangential_force = (force.force - normal_force * normal).norm();
    // ‖f_t‖ = μ f_n, and the closed form f = k|φ| (n + μ t̂) of spec §2.3.
    EXPECT_NEAR(tangential_force, friction * normal_force, 1e-12 * friction * normal_force);
    EXPECT_NEAR(normal_force, stiffness * depth, 1e-12 * stiffness * depth);
    EXPECT_LT((force.force - stiffness * depth * (normal + friction * tangent)).norm(),
              1e-12 * stiffness * depth * (1.0 + friction) + 1e-15 * stiffness);
    // Y stays on the plane.
    EXPECT_NEAR(normal.dot(relaxation.relaxed_point - plane_point), 0.0, 8.0 * kEpsilon * 3.0);
  }
}

TEST(PenaltyRelaxationTest, PlaneRelaxationIsIdempotentExactly) {
  std::mt19937 generator(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int sliding = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const Vector3 plane_point = RandomUnitVector(generator);
    const Vector3 normal = RandomUnitVector(generator);
    const double friction = 0.05 + 1.5 * unit(generator);
    const double depth = 1e-4 + 0.1 * unit(generator);
    const Vector3 particle = plane_point + RandomUnitVector(generator) - depth * normal;
    const Vector3 closest = particle + depth * normal;
    const Vector3 attachment =
        closest + 3.0 * unit(generator) * friction * depth * RandomUnitVector(generator).cross(normal).normalized();
    const Relaxation first = RelaxAgainstPlane(attachment, particle, plane_point, normal, friction);
    const Relaxation second = RelaxAgainstPlane(first.relaxed_point, particle, plane_point, normal, friction);
    // The static test carries a round-off slack, so the point on the cone is static.
    EXPECT_FALSE(second.sliding);
    EXPECT_EQ(second.relaxed_point, first.relaxed_point);
    sliding += first.sliding;
  }
  EXPECT_GT(sliding, 300);
}

TEST(PenaltyRelaxationTest, PlaneForceIsContinuousAtTheSwitchAndAtSeparation) {
  const Vector3 plane_point = Vector3::Zero();
  const Vector3 normal = Vector3::UnitZ();
  const double friction = 0.4;
  const double stiffness = 1e3;
  const double depth = 0.05;
  const Vector3 particle(0.1, 0.2, -depth);
  const Vector3 closest(0.1, 0.2, 0.0);
  const Vector3 tangent = Vector3(1.0, 1.0, 0.0).normalized();
  // Static/sliding switch at ℓ = μ d: the force on both sides differs by O(k δ).
  for (const double relative_offset : {1e-3, 1e-6, 1e-9, 1e-12}) {
    const double switch_length = friction * depth;
    const Vector3 inside = closest + switch_length * (1.0 - relative_offset) * tangent;
    const Vector3 outside = closest + switch_length * (1.0 + relative_offset) * tangent;
    const Relaxation static_relaxation = RelaxAgainstPlane(inside, particle, plane_point, normal, friction);
    const Relaxation sliding_relaxation = RelaxAgainstPlane(outside, particle, plane_point, normal, friction);
    EXPECT_FALSE(static_relaxation.sliding);
    EXPECT_TRUE(sliding_relaxation.sliding);
    const Vector3 jump = SpringForce(sliding_relaxation, particle, stiffness).force -
                         SpringForce(static_relaxation, particle, stiffness).force;
    EXPECT_LT(jump.norm(), 2.0 * stiffness * switch_length * relative_offset + 1e-13);
  }
  // Separation: as φ → 0⁻ the sliding force k|φ|(n + μ t̂) goes to zero; at φ ≥ 0 inactive.
  const Vector3 attachment = closest + 0.3 * tangent;
  for (const double height : {-1e-2, -1e-5, -1e-10, -1e-300, 0.0, 1e-10, 1e-2}) {
    const Vector3 point(0.1, 0.2, height);
    const Relaxation relaxation = RelaxAgainstPlane(attachment, point, plane_point, normal, friction);
    const PenaltyForce force = SpringForce(relaxation, point, stiffness);
    EXPECT_EQ(relaxation.active, height < 0.0) << height;
    EXPECT_LE(force.force.norm(), stiffness * std::abs(height) * std::sqrt(1.0 + friction * friction) * (1 + 1e-14));
    if (height >= 0.0) {
      EXPECT_EQ(force.force, Vector3::Zero());
      EXPECT_EQ(force.jacobian, Matrix3::Zero());
    }
  }
}

TEST(PenaltyRelaxationTest, PlaneDegenerateInputIsFinite) {
  const Vector3 normal = Vector3::UnitZ();
  // X = W: ℓ = 0 is static, also with μ = 0 and with the particle on the plane.
  for (const double friction : {0.0, 0.5}) {
    for (const double height : {-0.1, 0.0}) {
      const Vector3 particle(0.2, 0.3, height);
      const Relaxation relaxation =
          RelaxAgainstPlane(Vector3(0.2, 0.3, 0.0), particle, Vector3::Zero(), normal, friction);
      EXPECT_FALSE(relaxation.sliding);
      EXPECT_TRUE(relaxation.relaxed_point.allFinite());
      EXPECT_TRUE(relaxation.jacobian.allFinite());
    }
  }
  // μ = 0 slides all the way to W, with ∂Y/∂Z = P_t.
  const Relaxation frictionless =
      RelaxAgainstPlane(Vector3(1.0, 0.0, 0.0), Vector3(0.2, 0.3, -0.1), Vector3::Zero(), normal, 0.0);
  EXPECT_TRUE(frictionless.sliding);
  EXPECT_EQ(frictionless.relaxed_point, Vector3(0.2, 0.3, 0.0));
  EXPECT_EQ(frictionless.jacobian, Matrix3(Vector3(1.0, 1.0, 0.0).asDiagonal()));
}

TEST(PenaltyRelaxationTest, PlaneJacobianMatchesJetAndTheClosedForm) {
  std::mt19937 generator(4);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int counts[2] = {0, 0};
  for (int trial = 0; trial < 400; ++trial) {
    const Vector3 plane_point = RandomUnitVector(generator);
    const Vector3 normal = RandomUnitVector(generator);
    const double friction = 0.05 + 1.5 * unit(generator);
    // Penetrating or (for the Jacobian only) above the plane.
    const double height = (trial % 4 == 3 ? 1.0 : -1.0) * (1e-3 + 0.1 * unit(generator));
    const Vector3 particle = plane_point + RandomUnitVector(generator).cross(normal) + height * normal;
    const Vector3 closest = particle - height * normal;
    const double length = std::abs(height) * friction * (0.1 + 2.0 * unit(generator));
    if (std::abs(length / (friction * std::abs(height)) - 1.0) < 1e-3) continue;
    // Every fifth attachment lies off the plane by up to 1e-3 (the formula stays exact).
    const double off_plane = trial % 5 == 4 ? 1e-3 * unit(generator) : 0.0;
    const Vector3 attachment =
        closest + length * RandomUnitVector(generator).cross(normal).normalized() + off_plane * normal;
    const Relaxation relaxation = RelaxAgainstPlane(attachment, particle, plane_point, normal, friction);
    const Matrix3 jet = JetJacobian(attachment, particle, [&](const auto& x, const auto& z) {
      return PlaneRelaxedPointFrozen(x, z, plane_point, normal, friction, relaxation.sliding);
    });
    EXPECT_LT((relaxation.jacobian - jet).norm(), 1e-10 * (1.0 + jet.norm()));
    // The templated value agrees with the double one.
    const Vector3 value =
        PlaneRelaxedPointFrozen<double>(attachment, particle, plane_point, normal, friction, relaxation.sliding);
    EXPECT_LT((value - relaxation.relaxed_point).norm(), 1e-14);
    if (relaxation.sliding && height < 0.0 && off_plane == 0.0) {
      // Spec §2.9: K = −k [n nᵀ + μ t̂ nᵀ + s b̂ b̂ᵀ].
      const Vector3 direction = (attachment - closest).normalized();
      const Vector3 binormal = normal.cross(direction);
      const double fraction = friction * std::abs(height) / (attachment - closest).norm();
      const Matrix3 expected = -(normal * normal.transpose() + friction * direction * normal.transpose() +
                                 fraction * binormal * binormal.transpose());
      EXPECT_LT((SpringForce(relaxation, particle, 1.0).jacobian - expected).norm(), 1e-12);
    }
    ++counts[relaxation.sliding];
  }
  EXPECT_GT(counts[0], 50);
  EXPECT_GT(counts[1], 150);
}

// ---- Level sets --------------------------------------------------------------------------

// A random contact state near the zero level of a level set: Z at φ ∈ [depth range], X on
// the surface (a point near W projected once onto the zero level; exact enough for these
// tests, which do not need X exactly on the surface).
struct LevelSetState {
  Vector3 attachment;
  Vector3 particle;
};

template <typename TemplatedLevelSet>
LevelSetState RandomState(const TemplatedLevelSet& level_set, const Vector3& surface_point, double spread,
                          double min_height, double max_height, std::mt19937& generator) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto project = [&](const Vector3& point) {
    Vector3 gradient;
    const double value = level_set(point, &gradient);
    return Vector3(point - value * gradient / gradient.squaredNorm());
  };
  const Vector3 base = project(project(surface_point + spread * RandomUnitVector(generator)));
  Vector3 base_gradient;
  level_set(base, &base_gradient);
  const Vector3 base_normal = base_gradient.normalized();
  const double height = min_height + (max_height - min_height) * unit(generator);
  LevelSetState state;
  state.particle = base + height * base_normal;
  state.attachment = project(project(base + spread * unit(generator) * RandomUnitVector(generator).cross(base_normal)));
  return state;
}

// Checks the analytic level-set Jacobian against the Jet derivative on random states;
// returns the number of {static, sliding} states checked.
template <typename TemplatedLevelSet>
std::array<int, 2> ExpectLevelSetJacobianMatchesJet(const TemplatedLevelSet& level_set,
                                                    const LevelSetFunction& function, const Vector3& surface_point,
                                                    double spread, double min_height, double max_height,
                                                    unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::array<int, 2> counts = {0, 0};
  for (int trial = 0; trial < 300; ++trial) {
    const LevelSetState state = RandomState(level_set, surface_point, spread, min_height, max_height, generator);
    const double friction = 0.1 + 1.0 * unit(generator);
    const Relaxation relaxation = RelaxAgainstLevelSet(state.attachment, state.particle, function, friction);
    // Skip states within 1e-6 of the static/sliding switch (the derivative jumps there).
    Vector3 gradient;
    const double value = level_set(state.particle, &gradient);
    const Vector3 closest = state.particle - value * gradient.normalized();
    const double ratio = (state.attachment - closest).norm() / (friction * std::abs(value));
    if (std::abs(ratio - 1.0) < 1e-6) continue;
    EXPECT_FALSE(relaxation.degenerate_normal);
    const Matrix3 jet = JetJacobian(state.attachment, state.particle, [&](const auto& x, const auto& z) {
      return LevelSetRelaxedPointFrozen(x, z, level_set, friction, relaxation.sliding);
    });
    EXPECT_LT((relaxation.jacobian - jet).norm(), 1e-10 * (1.0 + jet.norm()))
        << "sliding " << relaxation.sliding << "\nanalytic\n"
        << relaxation.jacobian << "\nJet\n"
        << jet;
    const Vector3 value_point =
        LevelSetRelaxedPointFrozen<double>(state.attachment, state.particle, level_set, friction, relaxation.sliding);
    EXPECT_LT((value_point - relaxation.relaxed_point).norm(), 1e-14);
    ++counts[relaxation.sliding];
  }
  return counts;
}

TEST(PenaltyRelaxationTest, LevelSetJacobianMatchesJetForSpheresPlanesAndWavyFloors) {
  const SphereLevelSet sphere{Vector3(0.1, -0.2, 0.3), 0.5};
  const CavityLevelSet cavity{0.8};
  const PlaneLevelSet plane{Vector3(0.2, 0.1, -0.3), Vector3(1.0, -2.0, 0.5).normalized()};
  const WavyLevelSet wavy;
  const Vector3 sphere_top = sphere.centre + sphere.radius * Vector3(0.3, 0.4, 1.0).normalized();
  // Sphere, particle inside the surface (penetrating) and outside (Jacobian only).
  for (const auto& [min_height, max_height, seed] : {std::tuple{-0.2, -1e-3, 10u}, std::tuple{1e-3, 0.2, 11u}}) {
    const auto counts = ExpectLevelSetJacobianMatchesJet(sphere, AsLevelSetFunction(sphere), sphere_top, 0.2,
                                                         min_height, max_height, seed);
    EXPECT_GT(counts[0], 30);
    EXPECT_GT(counts[1], 100);
  }
  // The same sphere through rigid::Shape with its analytic Hessian (centred at the origin).
  {
    const SphereLevelSet centred{Vector3::Zero(), 0.5};
    const auto counts = ExpectLevelSetJacobianMatchesJet(centred, ShapeLevelSet(rigid::Shape::Sphere(0.5)),
                                                         Vector3(0.0, 0.3, 0.4), 0.2, -0.2, -1e-3, 12u);
    EXPECT_GT(counts[0], 30);
    EXPECT_GT(counts[1], 100);
  }
  // Concave cavity, flat plane and wavy floor (not a signed distance).
  {
    const auto counts = ExpectLevelSetJacobianMatchesJet(cavity, AsLevelSetFunction(cavity), Vector3(0.0, 0.0, -0.8),
                                                         0.3, -0.2, -1e-3, 13u);
    EXPECT_GT(counts[0], 30);
    EXPECT_GT(counts[1], 100);
  }
  {
    const auto counts =
        ExpectLevelSetJacobianMatchesJet(plane, AsLevelSetFunction(plane), plane.origin, 0.3, -0.2, -1e-3, 14u);
    EXPECT_GT(counts[0], 30);
    EXPECT_GT(counts[1], 100);
  }
  {
    const auto counts =
        ExpectLevelSetJacobianMatchesJet(wavy, AsLevelSetFunction(wavy), Vector3(0.1, 0.2, 0.0), 0.3, -0.2, 0.1, 15u);
    EXPECT_GT(counts[0], 30);
    EXPECT_GT(counts[1], 100);
  }
}

TEST(PenaltyRelaxationTest, LevelSetJacobianOfRigidCylinderSideMatchesJet) {
  const auto counts = ExpectLevelSetJacobianMatchesJet(CylinderSide{}, ShapeLevelSet(rigid::Shape::Cylinder(0.3, 1.0)),
                                                       Vector3(0.3, 0.0, 0.0), 0.15, -0.1, -1e-3, 16u);
  EXPECT_GT(counts[0], 30);
  EXPECT_GT(counts[1], 100);
}

TEST(PenaltyRelaxationTest, LevelSetStaticStaysPutAndSlidingIsNearTheCone) {
  // Sphere of radius R: sliding lands on the cone only approximately (spec §2.4: the plane
  // formula assumes the surface flat over one step). The observed cone gap
  // ‖(Y − Z)_t‖ − μ (Y − Z)·n(Y), relative to μ|φ(Z)|, is reported. To first order, Y lies
  // an arc μ|φ| from W, so n(Y) is turned by α ≈ μ|φ|/R from n(W); in the frame of n(Y) the
  // spring μ|φ| t̂ + |φ| n(W) loses |φ|α of tangential and gains μ|φ|α of normal part, a gap
  // of about −(1 + μ²)|φ|α, i.e. −(1 + μ²)|φ|/R relative to μ|φ|. Also, the chord W→X dips
  // below the tangent plane at the angle ℓ/(2R), so K lies μ|φ|ℓ/(2R) below it and its
  // projection Y adds that much normal part: −μℓ/(2R) more. Both put Y inside the cone (less
  // friction than allowed) and vanish as the surface flattens over the step (|φ|, ℓ ≪ R).
  const double radius = 1.0;
  const SphereLevelSet sphere{Vector3::Zero(), radius};
  const LevelSetFunction function = AsLevelSetFunction(sphere);
  std::mt19937 generator(20);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double worst_gap = 0.0;             // largest |gap| / (μ|φ|)
  double worst_normalized_gap = 0.0;  // largest |gap| / first-order estimate
  double largest_gap = -1.0;          // most positive gap / (μ|φ|): outside the cone
  int sliding = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const LevelSetState state = RandomState(sphere, Vector3::UnitZ(), 0.2, -0.05, -1e-3, generator);
    const double friction = 0.1 + unit(generator);
    const Relaxation relaxation = RelaxAgainstLevelSet(state.attachment, state.particle, function, friction);
    EXPECT_TRUE(relaxation.active);
    if (!relaxation.sliding) {
      EXPECT_EQ(relaxation.relaxed_point, state.attachment);
      EXPECT_EQ(relaxation.jacobian, Matrix3::Zero());
      continue;
    }
    ++sliding;
    // Y on the sphere, and the cone with the normal at Y.
    EXPECT_NEAR(relaxation.relaxed_point.norm(), radius, 4 * kEpsilon);
    const Vector3 normal = relaxation.relaxed_point.normalized();
    EXPECT_LT((normal - relaxation.normal).norm(), 4 * kEpsilon);
    const ConeParts parts = SplitAlongNormal(relaxation.relaxed_point, state.particle, normal);
    const double depth = std::abs(radius - state.particle.norm());
    const double gap = (parts.tangential_part - friction * parts.normal_part) / (friction * depth);
    const double chord = (state.attachment - state.particle.normalized() * radius).norm();
    const double first_order = ((1.0 + friction * friction) * depth + 0.5 * friction * chord) / radius;
    worst_gap = std::max(worst_gap, std::abs(gap));
    worst_normalized_gap = std::max(worst_normalized_gap, std::abs(gap) / first_order);
    largest_gap = std::max(largest_gap, gap);
  }
  EXPECT_GT(sliding, 200);
  std::cout << "[ observed ] sphere cone gap (depth <= 0.05 R, mu in [0.1, 1.1]): worst "
               "|gap|/(mu|phi|) = "
            << worst_gap << ", worst |gap| / first-order estimate = " << worst_normalized_gap
            << ", most positive gap/(mu|phi|) = " << largest_gap << "\n";
  EXPECT_LT(worst_normalized_gap, 1.2);
  EXPECT_LT(worst_gap, 0.2);
  EXPECT_LT(largest_gap, 0.0);
}

TEST(PenaltyRelaxationTest, LevelSetIdempotence) {
  // Flat level set (a box face): exact, as for the plane.
  {
    const rigid::Shape box = rigid::Shape::Box(Vector3(0.5, 0.4, 0.3));
    const LevelSetFunction function = ShapeLevelSet(box);
    std::mt19937 generator(30);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    int sliding = 0;
    for (int trial = 0; trial < 300; ++trial) {
      // Z under the top face near its centre, X on the top face.
      const Vector3 particle(0.2 * unit(generator), 0.2 * unit(generator), 0.3 - 0.05 * (1.01 + unit(generator)));
      const Vector3 attachment(0.2 * unit(generator), 0.2 * unit(generator), 0.3);
      const double friction = 0.6 + 0.5 * unit(generator);
      const Relaxation first = RelaxAgainstLevelSet(attachment, particle, function, friction);
      const Relaxation second = RelaxAgainstLevelSet(first.relaxed_point, particle, function, friction);
      EXPECT_EQ(second.relaxed_point, first.relaxed_point);
      sliding += first.sliding;
      // On the flat face the cone holds to round-off.
      if (first.sliding) {
        const ConeParts parts = SplitAlongNormal(first.relaxed_point, particle, first.normal);
        EXPECT_NEAR(parts.tangential_part, friction * parts.normal_part, 1e-14);
      }
    }
    EXPECT_GT(sliding, 100);
  }
  // Sphere: P(Y, Z) ≠ Y by a second-order amount. Y is the radial projection of the chord
  // point K on the chord W→X; the second relaxation puts K' on the chord W→Y, whose
  // direction differs by about half the angle between X and Y, so |Y' − Y| is about
  // μ|φ| (ℓ/R)²/8; we allow μ|φ| (ℓ/R)² + round-off.
  {
    const double radius = 1.0;
    const SphereLevelSet sphere{Vector3::Zero(), radius};
    const LevelSetFunction function = AsLevelSetFunction(sphere);
    std::mt19937 generator(31);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double worst_ratio = 0.0;
    for (int trial = 0; trial < 300; ++trial) {
      const LevelSetState state = RandomState(sphere, Vector3::UnitZ(), 0.3, -0.05, -1e-3, generator);
      const double friction = 0.1 + unit(generator);
      const Relaxation first = RelaxAgainstLevelSet(state.attachment, state.particle, function, friction);
      const Relaxation second = RelaxAgainstLevelSet(first.relaxed_point, state.particle, function, friction);
      const double depth = radius - state.particle.norm();
      const double length = (state.attachment - state.particle.normalized() * radius).norm();
      const double bound = friction * depth * std::pow(length / radius, 2) + 1e-15;
      const double change = (second.relaxed_point - first.relaxed_point).norm();
      EXPECT_LE(change, bound);
      worst_ratio = std::max(worst_ratio, change / bound);
    }
    std::cout << "[ observed ] sphere idempotence: worst |P(Y,Z) − Y| / (μ|φ|(ℓ/R)²) = " << worst_ratio << "\n";
  }
}

TEST(PenaltyRelaxationTest, LevelSetContinuityAtTheSwitchAndAtSeparation) {
  const SphereLevelSet sphere{Vector3::Zero(), 1.0};
  const LevelSetFunction function = AsLevelSetFunction(sphere);
  const double friction = 0.5;
  const double stiffness = 1e3;
  const Vector3 particle(0.0, 0.0, 0.95);  // φ = −0.05, W = (0, 0, 1)
  // X on the sphere at geodesic angle θ from W; the switch is at the chord length μ|φ|.
  const auto on_sphere = [](double chord) {
    const double angle = 2.0 * std::asin(chord / 2.0);
    return Vector3(std::sin(angle), 0.0, std::cos(angle));
  };
  for (const double relative_offset : {1e-3, 1e-6, 1e-9}) {
    const double switch_length = friction * 0.05;
    const Relaxation static_relaxation =
        RelaxAgainstLevelSet(on_sphere(switch_length * (1.0 - relative_offset)), particle, function, friction);
    const Relaxation sliding_relaxation =
        RelaxAgainstLevelSet(on_sphere(switch_length * (1.0 + relative_offset)), particle, function, friction);
    EXPECT_FALSE(static_relaxation.sliding);
    EXPECT_TRUE(sliding_relaxation.sliding);
    const Vector3 jump = SpringForce(sliding_relaxation, particle, stiffness).force -
                         SpringForce(static_relaxation, particle, stiffness).force;
    EXPECT_LT(jump.norm(), 2.0 * stiffness * switch_length * relative_offset + 1e-12);
  }
  // Separation: the force vanishes as φ(Z) → 0⁻ and is off at φ ≥ 0.
  const Vector3 attachment = on_sphere(0.2);
  for (const double height : {-1e-2, -1e-5, -1e-10, 0.0, 1e-6}) {
    const Vector3 point(0.0, 0.0, 1.0 + height);
    const Relaxation relaxation = RelaxAgainstLevelSet(attachment, point, function, friction);
    EXPECT_EQ(relaxation.active, height < 0.0);
    EXPECT_LE(SpringForce(relaxation, point, stiffness).force.norm(),
              stiffness * std::abs(height) * std::sqrt(1.0 + friction * friction) * 1.01 + 1e-12);
  }
}

TEST(PenaltyRelaxationTest, LevelSetInactiveWhenTheSeparationTestFails) {
  // Concave cavity ‖x‖ ≥ 1: a particle 0.5 deep at (0, 0, 1.5) and an attachment on the far
  // side of the cavity wall. The spring Y − Z points out of the object at Y, so the contact
  // is inactive although φ(Z) < 0 (spec A7).
  const CavityLevelSet cavity{1.0};
  const LevelSetFunction function = AsLevelSetFunction(cavity);
  const Vector3 particle(0.0, 0.0, 1.5);
  const double friction = 3.0;
  // Static: ‖X − W‖ = √2 ≤ μ|φ| = 1.5, Y = X = (1, 0, 0) with n(Y) = (−1, 0, 0).
  const Relaxation static_relaxation = RelaxAgainstLevelSet(Vector3(1.0, 0.0, 0.0), particle, function, friction);
  EXPECT_FALSE(static_relaxation.sliding);
  EXPECT_LT(static_relaxation.particle_value, 0.0);
  EXPECT_FALSE(static_relaxation.active);
  EXPECT_EQ(SpringForce(static_relaxation, particle, 1e3).force, Vector3::Zero());
  // Sliding from the antipode: ℓ = 2, s = 0.75, K = (0, 0, −0.5), Y = (0, 0, −1).
  const Relaxation sliding_relaxation = RelaxAgainstLevelSet(Vector3(0.0, 0.0, -1.0), particle, function, friction);
  EXPECT_TRUE(sliding_relaxation.sliding);
  EXPECT_LT((sliding_relaxation.relaxed_point - Vector3(0.0, 0.0, -1.0)).norm(), 1e-15);
  EXPECT_FALSE(sliding_relaxation.active);
  // The same particle near its own wall point is active.
  EXPECT_TRUE(RelaxAgainstLevelSet(Vector3(0.0, 0.1, 0.995).normalized(), particle, function, friction).active);
}

TEST(PenaltyRelaxationTest, LevelSetDegenerateInputIsFinite) {
  // X = W: static.
  const SphereLevelSet sphere{Vector3::Zero(), 1.0};
  const Relaxation at_closest =
      RelaxAgainstLevelSet(Vector3::UnitZ(), Vector3(0.0, 0.0, 0.9), AsLevelSetFunction(sphere), 0.0);
  EXPECT_FALSE(at_closest.sliding);
  EXPECT_TRUE(at_closest.active);
  EXPECT_EQ(at_closest.relaxed_point, Vector3::UnitZ());

  // A constant level set has no gradient anywhere: Y = X, flagged, finite.
  const LevelSetFunction constant = [](const Vector3&) {
    return LevelSetSample{-0.1, Vector3::Zero(), Matrix3::Zero()};
  };
  const Relaxation flat = RelaxAgainstLevelSet(Vector3(1, 2, 3), Vector3(0, 0, 0), constant, 0.3);
  EXPECT_TRUE(flat.degenerate_normal);
  EXPECT_FALSE(flat.sliding);
  EXPECT_EQ(flat.relaxed_point, Vector3(1, 2, 3));
  EXPECT_TRUE(flat.normal.allFinite());
  EXPECT_TRUE(flat.jacobian.allFinite());

  // Gradient vanishing at the chord point only: a sphere whose gradient is zero at the
  // centre, with K landing exactly on the centre. The A6 fallback projects K along n(Z).
  const LevelSetFunction zero_at_centre = [](const Vector3& point) {
    const double distance = point.norm();
    if (distance == 0.0) return LevelSetSample{-1.0, Vector3::Zero(), Matrix3::Zero()};
    const Vector3 normal = point / distance;
    return LevelSetSample{distance - 1.0, normal, (Matrix3::Identity() - normal * normal.transpose()) / distance};
  };
  // Z = (0, 0, 0.5): W = (0, 0, 1); X = (0, 0, −1): ℓ = 2, s = 2·0.5/2 = 0.5, K = 0.
  const Vector3 particle(0.0, 0.0, 0.5);
  const Relaxation sonic = RelaxAgainstLevelSet(Vector3(0.0, 0.0, -1.0), particle, zero_at_centre, 2.0);
  EXPECT_TRUE(sonic.sliding);
  EXPECT_TRUE(sonic.degenerate_normal);
  EXPECT_EQ(sonic.relaxed_point, Vector3(0.0, 0.0, 1.0));
  EXPECT_TRUE(sonic.jacobian.allFinite());
  EXPECT_EQ(sonic.normal, Vector3::UnitZ());
}

}  // namespace
}  // namespace contactlab::penalty
