// Tests of the analytic shapes: signed distances and outward normals against independent
// closest-point constructions, normals against finite-difference gradients where the SDF is
// smooth, a rotated and translated geometry through Pose, volumes and inertias against the
// textbook formulas, and surface sampling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "rigid/pose.h"
#include "rigid/shape.h"

namespace contactlab::rigid {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

// Signed distance and outward normal computed a second, independent way.
struct Reference {
  double distance;
  Vector3 normal;
};

double SignOf(double value) {
  return value >= 0.0 ? 1.0 : -1.0;
}

// Box: outside, the closest point is the component-wise clamp of the point into the box;
// inside, the nearest face is the one with the smallest depth a_k − |x_k| (first on ties,
// the same convention as the shape).
Reference BoxReference(const Vector3& half_extents, const Vector3& point) {
  const Vector3 clamped = point.cwiseMax(-half_extents).cwiseMin(half_extents);
  if (clamped != point) {
    const Vector3 offset = point - clamped;
    return {offset.norm(), offset / offset.norm()};
  }
  const Vector3 depths = half_extents - point.cwiseAbs();
  Eigen::Index face_axis = 0;
  const double depth = depths.minCoeff(&face_axis);
  return {-depth, SignOf(point[face_axis]) * Vector3::Unit(face_axis)};
}

// Cylinder: the same construction in the (ρ, z) half-plane, with the rectangle
// [0, r] × [−c, c]; inside, the nearer of side (depth r − ρ) and cap (depth c − |z|).
Reference CylinderReference(double radius, double half_height, const Vector3& point) {
  const double radial = std::sqrt(point.x() * point.x() + point.y() * point.y());
  const Vector3 radial_direction =
      radial > 0.0 ? Vector3(point.x() / radial, point.y() / radial, 0.0) : Vector3::UnitX();
  const double clamped_radial = std::min(radial, radius);
  const double clamped_z = std::clamp(point.z(), -half_height, half_height);
  if (clamped_radial != radial || clamped_z != point.z()) {
    const double radial_offset = radial - clamped_radial;
    const double axial_offset = point.z() - clamped_z;
    const double distance = std::sqrt(radial_offset * radial_offset + axial_offset * axial_offset);
    return {distance, (radial_offset * radial_direction + axial_offset * Vector3::UnitZ()) / distance};
  }
  const double side_depth = radius - radial;
  const double cap_depth = half_height - std::abs(point.z());
  if (side_depth <= cap_depth) return {-side_depth, radial_direction};
  return {-cap_depth, SignOf(point.z()) * Vector3::UnitZ()};
}

// Sphere: distance from the centre minus the radius; +z at the centre.
Reference SphereReference(double radius, const Vector3& point) {
  const double norm = point.norm();
  return {norm - radius, norm > 0.0 ? Vector3(point / norm) : Vector3::UnitZ()};
}

// Deterministic test points around a shape of bounding half-size `extent`: a jittered
// lattice covering ±1.6 extent, and points at distances from 1e-10 to 1e-1 of the size
// around every `feature` (face centres, edges, corners, rim points).
std::vector<Vector3> TestPoints(const Vector3& extent, const std::vector<Vector3>& features, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<Vector3> points;
  constexpr int kLattice = 9;
  for (int i = 0; i < kLattice; ++i) {
    for (int j = 0; j < kLattice; ++j) {
      for (int k = 0; k < kLattice; ++k) {
        const Vector3 cell(i, j, k);
        const Vector3 jitter(unit(generator), unit(generator), unit(generator));
        const Vector3 fraction = (cell + Vector3::Constant(0.5) + 0.4 * jitter) / kLattice * 2.0 - Vector3::Ones();
        points.push_back(1.6 * extent.cwiseProduct(fraction));
      }
    }
  }
  const double size = extent.maxCoeff();
  for (const Vector3& feature : features) {
    points.push_back(feature);
    for (const double relative_offset : {1e-10, 1e-6, 1e-3, 1e-1}) {
      for (int repeat = 0; repeat < 6; ++repeat) {
        Vector3 direction(unit(generator), unit(generator), unit(generator));
        direction.normalize();
        points.push_back(feature + relative_offset * size * direction);
      }
    }
  }
  return points;
}

// Features of a box: face centres, edge midpoints, corners (all sign combinations).
std::vector<Vector3> BoxFeatures(const Vector3& half_extents) {
  std::vector<Vector3> features;
  for (int x = -1; x <= 1; ++x) {
    for (int y = -1; y <= 1; ++y) {
      for (int z = -1; z <= 1; ++z) {
        if (x == 0 && y == 0 && z == 0) continue;
        features.push_back(Vector3(x, y, z).cwiseProduct(half_extents));
      }
    }
  }
  return features;
}

// Features of a cylinder: cap centres, side points, rim points at several angles.
std::vector<Vector3> CylinderFeatures(double radius, double half_height) {
  std::vector<Vector3> features = {Vector3(0, 0, half_height), Vector3(0, 0, -half_height)};
  for (int i = 0; i < 5; ++i) {
    const double angle = 0.3 + 1.3 * i;
    const Vector3 radial(radius * std::cos(angle), radius * std::sin(angle), 0.0);
    features.push_back(radial);
    features.push_back(radial + Vector3(0, 0, half_height));
    features.push_back(radial - Vector3(0, 0, half_height));
  }
  return features;
}

// Checks value and normal against the reference. The values agree to a few ulps of the
// coordinates. Outside, the normal is an offset divided by the distance: an absolute
// round-off of a few ε·|x| in the offset becomes ε·|x|/φ in the normal. On the surface (to
// round-off) at an edge or the rim the normal is not unique; any n of the normal cone is
// right, which for a convex shape means that the point x + t n just outside has x as its
// closest point, i.e. reference normal n there (checked with t = 1e-6 size).
template <typename ReferenceFunction>
void ExpectMatchesReference(const Shape& shape, const std::vector<Vector3>& points, double size,
                            ReferenceFunction reference_function) {
  for (const Vector3& point : points) {
    const Reference reference = reference_function(point);
    const double scale = std::max(point.norm(), size);
    const double distance = shape.SignedDistance(point);
    const Vector3 normal = shape.OutwardNormal(point);
    const double distance_tolerance = 8.0 * kEpsilon * scale;
    EXPECT_NEAR(distance, reference.distance, distance_tolerance) << "point " << point.transpose();
    EXPECT_NEAR(normal.norm(), 1.0, 4.0 * kEpsilon);
    if (std::abs(reference.distance) <= distance_tolerance) {
      const double step_out = 1e-6 * size;
      const Reference outside = reference_function(point + step_out * normal);
      EXPECT_NEAR((normal - outside.normal).norm(), 0.0, 8.0 * kEpsilon * (1.0 + scale / step_out))
          << "surface point " << point.transpose() << " normal " << normal.transpose();
      continue;
    }
    const double normal_tolerance = 8.0 * kEpsilon * (1.0 + (distance > 0.0 ? scale / distance : 0.0));
    EXPECT_NEAR((normal - reference.normal).norm(), 0.0, normal_tolerance)
        << "point " << point.transpose() << " normal " << normal.transpose() << " expected "
        << reference.normal.transpose();
  }
}

// Central-difference gradient of a scalar function with step h.
template <typename Function>
Vector3 FiniteDifferenceGradient(Function function, const Vector3& point, double step) {
  Vector3 gradient;
  for (int axis = 0; axis < 3; ++axis) {
    const Vector3 offset = step * Vector3::Unit(axis);
    gradient[axis] = (function(point + offset) - function(point - offset)) / (2.0 * step);
  }
  return gradient;
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Which smooth piece of the SDF a local point lies in; the SDF is smooth at points whose
// neighbourhood stays in one piece.
int SmoothPiece(const Shape& shape, const Vector3& point) {
  switch (shape.kind) {
    case ShapeKind::kBox: {
      const Vector3 excess = point.cwiseAbs() - shape.half_extents;
      if (excess.maxCoeff() > 0.0) {
        int piece = 0;
        for (int axis = 0; axis < 3; ++axis) {
          if (excess[axis] > 0.0) piece |= (point[axis] > 0.0 ? 1 : 2) << (2 * axis);
        }
        return piece;
      }
      Eigen::Index face_axis = 0;
      excess.maxCoeff(&face_axis);
      return 100 + 2 * static_cast<int>(face_axis) + (point[face_axis] > 0.0 ? 1 : 0);
    }
    case ShapeKind::kCylinder: {
      const double radial_excess = std::hypot(point.x(), point.y()) - shape.radius;
      const double axial_excess = std::abs(point.z()) - shape.half_height;
      const int z_side = point.z() > 0.0 ? 1 : 0;
      if (radial_excess > 0.0 || axial_excess > 0.0) {
        return (radial_excess > 0.0 ? 1 : 0) + (axial_excess > 0.0 ? 2 + 4 * z_side : 0);
      }
      return radial_excess >= axial_excess ? 100 : 200 + z_side;
    }
    default:
      return 0;
  }
}

// Distance from a local point to the nearest curvature singularity of its smooth piece
// (infinite for linear pieces).
double SingularityDistance(const Shape& shape, const Vector3& point) {
  switch (shape.kind) {
    case ShapeKind::kBox: {
      // Face pieces (inside, or outside beyond one face) are linear; edge and corner pieces
      // are distances to a line or a point at distance φ.
      const Vector3 excess = point.cwiseAbs() - shape.half_extents;
      const int positive = static_cast<int>((excess.array() > 0.0).count());
      return positive >= 2 ? shape.SignedDistance(point) : kInfinity;
    }
    case ShapeKind::kSphere:
      return point.norm();
    case ShapeKind::kCylinder: {
      // Side pieces are functions of ρ (singular on the axis), rim pieces are distances to
      // the rim circle, cap pieces are linear.
      const double radial = std::hypot(point.x(), point.y());
      const double radial_excess = radial - shape.radius;
      const double axial_excess = std::abs(point.z()) - shape.half_height;
      if (radial_excess > 0.0 && axial_excess > 0.0) {
        return std::min(shape.SignedDistance(point), radial);
      }
      const bool side_piece = radial_excess > 0.0 || (axial_excess <= 0.0 && radial_excess >= axial_excess);
      return side_piece ? radial : kInfinity;
    }
    default:
      return kInfinity;
  }
}

// Compares the world normal R n(local point) with the central-difference gradient of the
// world SDF φ(X⁻¹ x) at every point whose stencil neighbourhood (±4h along each world axis)
// stays in one smooth piece and whose nearest curvature singularity lies at L ≥ 1e-2 size.
// Error of a central difference: truncation h²/6·|φ'''| ≤ h²/(2 L²) for a distance to a
// point, a line or a circle at distance L, plus round-off of about ε·|x|/h from each SDF
// evaluation; we allow (h/L)² + 10 ε·scale/h with scale = max(|x|, size).
int ExpectNormalIsGradient(const Shape& shape, const Pose& pose, const std::vector<Vector3>& local_points) {
  const double size = shape.LocalBounds().sizes().maxCoeff() / 2.0;
  const double step = 1e-6 * size;
  const auto world_distance = [&](const Vector3& world_point) {
    return shape.SignedDistance(pose.InverseTransformPoint(world_point));
  };
  int checked = 0;
  for (const Vector3& local_point : local_points) {
    const Vector3 world_point = pose.TransformPoint(local_point);
    const int piece = SmoothPiece(shape, local_point);
    bool smooth = true;
    for (int axis = 0; axis < 3 && smooth; ++axis) {
      for (const double side : {-4.0, 4.0}) {
        const Vector3 neighbour = pose.InverseTransformPoint(world_point + side * step * Vector3::Unit(axis));
        smooth = smooth && SmoothPiece(shape, neighbour) == piece;
      }
    }
    const double singularity = SingularityDistance(shape, local_point);
    if (!smooth || singularity < 1e-2 * size) continue;
    const Vector3 gradient = FiniteDifferenceGradient(world_distance, world_point, step);
    const Vector3 normal = pose.orientation * shape.OutwardNormal(local_point);
    const double scale = std::max(world_point.norm(), size);
    const double tolerance = std::pow(step / singularity, 2) + 10.0 * kEpsilon * scale / step;
    EXPECT_NEAR((gradient - normal).norm(), 0.0, tolerance) << "local point " << local_point.transpose();
    ++checked;
  }
  return checked;
}

// Compares SignedDistanceHessian with the central-difference derivative of OutwardNormal
// (column j = ∂n/∂x_j) at every local point whose stencil neighbourhood (±4h along each
// axis) stays in one smooth piece and whose nearest curvature singularity lies at
// L ≥ 1e-2 size. Error of the central difference: truncation h²/6 times the third
// derivative of n, at most h²/L³ for a distance to a point, a line or a circle at distance
// L, plus the round-off of the normal (about ε, or ε·scale/φ outside where n is an offset
// divided by φ) divided by h. Returns the number of points checked, and how many of them
// had a non-zero Hessian.
std::pair<int, int> ExpectHessianIsNormalDerivative(const Shape& shape, const std::vector<Vector3>& points) {
  const double size = shape.LocalBounds().sizes().maxCoeff() / 2.0;
  const double step = 1e-6 * size;
  int checked = 0;
  int curved = 0;
  for (const Vector3& point : points) {
    const int piece = SmoothPiece(shape, point);
    bool smooth = true;
    for (int axis = 0; axis < 3 && smooth; ++axis) {
      for (const double side : {-4.0, 4.0}) {
        smooth = smooth && SmoothPiece(shape, point + side * step * Vector3::Unit(axis)) == piece;
      }
    }
    const double singularity = SingularityDistance(shape, point);
    if (!smooth || singularity < 1e-2 * size) continue;
    Matrix3 difference_quotient;
    for (int axis = 0; axis < 3; ++axis) {
      const Vector3 offset = step * Vector3::Unit(axis);
      difference_quotient.col(axis) =
          (shape.OutwardNormal(point + offset) - shape.OutwardNormal(point - offset)) / (2.0 * step);
    }
    const Matrix3 hessian = shape.SignedDistanceHessian(point);
    const double distance = shape.SignedDistance(point);
    const double scale = std::max(point.norm(), size);
    const double normal_round_off = kEpsilon * (1.0 + (distance > 0.0 ? scale / distance : 0.0));
    const double tolerance = std::pow(step, 2) / std::pow(singularity, 3) + 20.0 * normal_round_off / step;
    EXPECT_NEAR((hessian - difference_quotient).norm(), 0.0, tolerance)
        << "point " << point.transpose() << "\nHessian\n"
        << hessian << "\nfinite difference\n"
        << difference_quotient;
    // ∇²φ is symmetric, and n is a unit vector so ∇²φ n = 0 (∇‖∇φ‖² = 2 ∇²φ ∇φ), up to
    // the round-off of n times ‖∇²φ‖.
    EXPECT_LT((hessian - hessian.transpose()).norm(), 1e-12 * (1.0 + hessian.norm()));
    EXPECT_LT((hessian * shape.OutwardNormal(point)).norm(), 16.0 * normal_round_off * (1.0 + hessian.norm()));
    ++checked;
    if (hessian.norm() > 0.0) ++curved;
  }
  return {checked, curved};
}

// ---- Half-space ------------------------------------------------------------------------

TEST(RigidShapeTest, HalfSpaceDistanceIsHeightAndNormalIsUp) {
  const Shape half_space = Shape::HalfSpace();
  EXPECT_FALSE(half_space.IsBounded());
  for (const Vector3& point : {Vector3(0, 0, 0), Vector3(1, -2, 3), Vector3(-5, 4, -0.25), Vector3(1e6, 1e6, 1e-12)}) {
    EXPECT_EQ(half_space.SignedDistance(point), point.z());
    EXPECT_EQ(half_space.OutwardNormal(point), Vector3::UnitZ());
  }
  const AlignedBox3 bounds = half_space.LocalBounds();
  for (int axis = 0; axis < 3; ++axis) {
    EXPECT_EQ(bounds.min()[axis], -kInfinity);
    EXPECT_EQ(bounds.max()[axis], kInfinity);
  }
  EXPECT_EQ(half_space.SignedDistanceHessian(Vector3(1, -2, 3)), Matrix3::Zero());
  EXPECT_EQ(half_space.Volume(), kInfinity);
  EXPECT_THROW(half_space.UnitDensityInertia(), std::logic_error);
  EXPECT_THROW(half_space.SampleSurface(0.1), std::logic_error);
}

// ---- Box ---------------------------------------------------------------------------------

TEST(RigidShapeTest, BoxMatchesClosestPointConstruction) {
  const Vector3 half_extents(0.5, 0.2, 0.35);
  const Shape box = Shape::Box(half_extents);
  const std::vector<Vector3> points = TestPoints(half_extents, BoxFeatures(half_extents), 11);
  ExpectMatchesReference(box, points, half_extents.maxCoeff(),
                         [&](const Vector3& point) { return BoxReference(half_extents, point); });
}

TEST(RigidShapeTest, BoxHandPickedValues) {
  const Shape box = Shape::Box(Vector3(1.0, 2.0, 3.0));
  // Centre: nearest face is x (depth 1).
  EXPECT_DOUBLE_EQ(box.SignedDistance(Vector3::Zero()), -1.0);
  EXPECT_EQ(box.OutwardNormal(Vector3::Zero()), Vector3::UnitX());
  // Inside near the −y face.
  EXPECT_NEAR(box.SignedDistance(Vector3(0.1, -1.9, 0.5)), -0.1, 4 * kEpsilon * 2.0);
  EXPECT_EQ(box.OutwardNormal(Vector3(0.1, -1.9, 0.5)), -Vector3::UnitY());
  // Outside the +z face, the −x/+y edge and the (+,+,−) corner.
  EXPECT_DOUBLE_EQ(box.SignedDistance(Vector3(0.2, 0.3, 3.5)), 0.5);
  EXPECT_EQ(box.OutwardNormal(Vector3(0.2, 0.3, 3.5)), Vector3::UnitZ());
  EXPECT_DOUBLE_EQ(box.SignedDistance(Vector3(-1.3, 2.4, 0.0)), 0.5);
  EXPECT_TRUE(box.OutwardNormal(Vector3(-1.3, 2.4, 0.0)).isApprox(Vector3(-0.6, 0.8, 0.0)));
  EXPECT_DOUBLE_EQ(box.SignedDistance(Vector3(3.0, 4.0, -3.0 - 2.0 * std::sqrt(2.0))), std::sqrt(4.0 + 4.0 + 8.0));
  // On a face and on an edge the distance is zero.
  EXPECT_EQ(box.SignedDistance(Vector3(1.0, 0.5, -0.5)), 0.0);
  EXPECT_EQ(box.OutwardNormal(Vector3(1.0, 0.5, -0.5)), Vector3::UnitX());
  EXPECT_EQ(box.SignedDistance(Vector3(1.0, -2.0, 1.0)), 0.0);
}

TEST(RigidShapeTest, BoxNormalIsGradientWhereSmooth) {
  const Vector3 half_extents(0.5, 0.2, 0.35);
  const Shape box = Shape::Box(half_extents);
  const std::vector<Vector3> points = TestPoints(half_extents, BoxFeatures(half_extents), 12);
  EXPECT_GT(ExpectNormalIsGradient(box, Pose{}, points), 500);
}

// ---- Sphere ------------------------------------------------------------------------------

TEST(RigidShapeTest, SphereMatchesClosedForm) {
  const double radius = 0.3;
  const Shape sphere = Shape::Sphere(radius);
  std::vector<Vector3> features;
  for (int i = 0; i < 8; ++i) {
    features.push_back(radius * Vector3(std::cos(i), std::sin(i) * std::cos(2 * i), std::sin(i) * std::sin(2 * i)));
  }
  const std::vector<Vector3> points = TestPoints(Vector3::Constant(radius), features, 21);
  ExpectMatchesReference(sphere, points, radius, [&](const Vector3& point) { return SphereReference(radius, point); });
  EXPECT_DOUBLE_EQ(sphere.SignedDistance(Vector3(0.0, 0.3, 0.4)), 0.2);
  EXPECT_TRUE(sphere.OutwardNormal(Vector3(0.0, 0.3, 0.4)).isApprox(Vector3(0.0, 0.6, 0.8)));
  EXPECT_DOUBLE_EQ(sphere.SignedDistance(Vector3::Zero()), -radius);
  EXPECT_EQ(sphere.OutwardNormal(Vector3::Zero()), Vector3::UnitZ());

  EXPECT_GT(ExpectNormalIsGradient(sphere, Pose{}, points), 600);
}

// ---- Cylinder ----------------------------------------------------------------------------

TEST(RigidShapeTest, CylinderMatchesClosestPointConstruction) {
  const double radius = 0.25;
  const double half_height = 0.4;
  const Shape cylinder = Shape::Cylinder(radius, half_height);
  const std::vector<Vector3> points =
      TestPoints(Vector3(radius, radius, half_height), CylinderFeatures(radius, half_height), 31);
  ExpectMatchesReference(cylinder, points, half_height,
                         [&](const Vector3& point) { return CylinderReference(radius, half_height, point); });
}

TEST(RigidShapeTest, CylinderHandPickedValues) {
  const Shape cylinder = Shape::Cylinder(1.0, 2.0);
  // Inside: nearest side (depth 0.5) or nearest cap (depth 0.25).
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(Vector3(0.3, 0.4, 0.0)), -0.5);
  EXPECT_TRUE(cylinder.OutwardNormal(Vector3(0.3, 0.4, 0.0)).isApprox(Vector3(0.6, 0.8, 0.0)));
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(Vector3(0.3, 0.4, -1.75)), -0.25);
  EXPECT_EQ(cylinder.OutwardNormal(Vector3(0.3, 0.4, -1.75)), -Vector3::UnitZ());
  // Outside: side, cap, and the rim region (closest point on the rim circle).
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(Vector3(0.0, -3.0, 1.0)), 2.0);
  EXPECT_EQ(cylinder.OutwardNormal(Vector3(0.0, -3.0, 1.0)), -Vector3::UnitY());
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(Vector3(0.5, 0.0, 2.5)), 0.5);
  EXPECT_EQ(cylinder.OutwardNormal(Vector3(0.5, 0.0, 2.5)), Vector3::UnitZ());
  const Vector3 rim_outside(0.0, 1.0 + 0.6, 2.0 + 0.8);
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(rim_outside), 1.0);
  EXPECT_TRUE(cylinder.OutwardNormal(rim_outside).isApprox(Vector3(0.0, 0.6, 0.8)));
  // Deep inside on the axis of a tall cylinder the side is nearest; the normal is a unit
  // radial vector.
  EXPECT_DOUBLE_EQ(cylinder.SignedDistance(Vector3::Zero()), -1.0);
  EXPECT_NEAR(cylinder.OutwardNormal(Vector3::Zero()).norm(), 1.0, kEpsilon);
  EXPECT_EQ(cylinder.OutwardNormal(Vector3::Zero()).z(), 0.0);
}

TEST(RigidShapeTest, CylinderNormalIsGradientWhereSmooth) {
  const double radius = 0.25;
  const double half_height = 0.4;
  const Shape cylinder = Shape::Cylinder(radius, half_height);
  const std::vector<Vector3> points =
      TestPoints(Vector3(radius, radius, half_height), CylinderFeatures(radius, half_height), 32);
  EXPECT_GT(ExpectNormalIsGradient(cylinder, Pose{}, points), 500);
}

// ---- Signed-distance Hessian -------------------------------------------------------------

TEST(RigidShapeTest, BoxHessianIsNormalDerivativeInEveryRegion) {
  const Vector3 half_extents(0.5, 0.2, 0.35);
  const Shape box = Shape::Box(half_extents);
  const std::vector<Vector3> points = TestPoints(half_extents, BoxFeatures(half_extents), 51);
  const auto [checked, curved] = ExpectHessianIsNormalDerivative(box, points);
  // The lattice covers the inside and the regions beyond the faces, edges and corners.
  EXPECT_GT(checked, 600);
  EXPECT_GT(curved, 150);
  std::vector<int> positive_counts(4, 0);  // checked points by number of axes outside
  for (const Vector3& point : points) {
    ++positive_counts[((point.cwiseAbs() - half_extents).array() > 0.0).count()];
  }
  for (const int count : positive_counts) EXPECT_GT(count, 20);
  // Hand-picked: beyond the (+x, +y) edge by (0.3, 0.4) the distance to the edge line is 0.5
  // and ∇²φ = (I_xy − n nᵀ)/0.5 with n = (0.6, 0.8, 0).
  const Vector3 normal(0.6, 0.8, 0.0);
  const Matrix3 expected = (Matrix3(Vector3(1, 1, 0).asDiagonal()) - normal * normal.transpose()) / 0.5;
  EXPECT_LT((box.SignedDistanceHessian(Vector3(0.8, 0.6, 0.1)) - expected).norm(), 1e-13);
  // Beyond a face and inside: flat.
  EXPECT_EQ(box.SignedDistanceHessian(Vector3(0.9, 0.1, -0.2)), Matrix3::Zero());
  EXPECT_EQ(box.SignedDistanceHessian(Vector3(0.1, 0.1, 0.1)), Matrix3::Zero());
}

TEST(RigidShapeTest, SphereHessianIsNormalDerivativeInsideAndOutside) {
  const double radius = 0.3;
  const Shape sphere = Shape::Sphere(radius);
  const std::vector<Vector3> points =
      TestPoints(Vector3::Constant(radius), {Vector3(radius, 0, 0), Vector3(0, 0, -radius)}, 52);
  const auto [checked, curved] = ExpectHessianIsNormalDerivative(sphere, points);
  EXPECT_GT(checked, 600);
  EXPECT_EQ(curved, checked);
  // At (0, 0.3, 0.4): (I − n nᵀ)/0.5 with n = (0, 0.6, 0.8); its trace is 2/‖x‖ (twice the
  // mean curvature of the level sphere through the point).
  const Matrix3 hessian = sphere.SignedDistanceHessian(Vector3(0.0, 0.3, 0.4));
  const Vector3 normal(0.0, 0.6, 0.8);
  EXPECT_LT((hessian - (Matrix3::Identity() - normal * normal.transpose()) / 0.5).norm(), 1e-14);
  EXPECT_NEAR(hessian.trace(), 4.0, 1e-14);
  // The centre has no second derivative; a finite zero is returned.
  EXPECT_EQ(sphere.SignedDistanceHessian(Vector3::Zero()), Matrix3::Zero());
}

TEST(RigidShapeTest, CylinderHessianIsNormalDerivativeOnSideCapsAndRims) {
  const double radius = 0.25;
  const double half_height = 0.4;
  const Shape cylinder = Shape::Cylinder(radius, half_height);
  const std::vector<Vector3> points =
      TestPoints(Vector3(radius, radius, half_height), CylinderFeatures(radius, half_height), 53);
  const auto [checked, curved] = ExpectHessianIsNormalDerivative(cylinder, points);
  EXPECT_GT(checked, 500);
  EXPECT_GT(curved, 200);
  // Every smooth piece is reached: inside side and both caps; outside side, both caps and
  // both rims.
  std::vector<int> pieces;
  for (const Vector3& point : points) pieces.push_back(SmoothPiece(cylinder, point));
  for (const int piece : {100, 200, 201, 1, 2, 6, 3, 7}) {
    EXPECT_NE(std::find(pieces.begin(), pieces.end(), piece), pieces.end()) << piece;
  }
  // Hand-picked rim point: 0.6 beyond the radius and 0.8 above the top cap at azimuth 90°.
  // Along the rim tangent (x) the curvature is d_ρ/(ρ φ) = 0.6/(1.6·1.0); in the (y, z)
  // plane the rim circle acts like a point: (I − n nᵀ)/φ restricted to (y, z).
  const Shape unit_cylinder = Shape::Cylinder(1.0, 2.0);
  const Vector3 rim_outside(0.0, 1.6, 2.8);
  const Vector3 normal(0.0, 0.6, 0.8);
  Matrix3 expected = Matrix3::Zero();
  expected(0, 0) = 0.6 / 1.6;
  expected.block<2, 2>(1, 1) = Eigen::Matrix2d::Identity() - normal.tail<2>() * normal.tail<2>().transpose();
  EXPECT_LT((unit_cylinder.SignedDistanceHessian(rim_outside) - expected).norm(), 1e-14);
  // Inside nearest the side: the level surfaces are coaxial cylinders of radius ρ.
  Matrix3 side = Matrix3::Zero();
  side(1, 1) = 1.0 / 0.5;
  EXPECT_LT((unit_cylinder.SignedDistanceHessian(Vector3(0.5, 0.0, 0.3)) - side).norm(), 1e-14);
  EXPECT_EQ(unit_cylinder.SignedDistanceHessian(Vector3(0.1, 0.2, 1.9)), Matrix3::Zero());
}

// ---- Posed geometry ----------------------------------------------------------------------

TEST(RigidShapeTest, PosedBoxThroughPose) {
  // Box with half extents (2, 1, 0.5) centred at (1, 2, 3), turned 90° about z: its local x
  // axis points along world y.
  const Shape box = Shape::Box(Vector3(2.0, 1.0, 0.5));
  const Pose pose{Vector3(1.0, 2.0, 3.0), Quaternion(Eigen::AngleAxisd(kPi / 2.0, Vector3::UnitZ()))};
  const auto world_distance = [&](const Vector3& world_point) {
    return box.SignedDistance(pose.InverseTransformPoint(world_point));
  };
  const auto world_normal = [&](const Vector3& world_point) -> Vector3 {
    return pose.orientation * box.OutwardNormal(pose.InverseTransformPoint(world_point));
  };
  // Values agree to a few ulps of the world coordinates (|x| < 6 m).
  const double round_off = 8 * kEpsilon * 6.0;
  // 3 m along world y from the centre is 1 m beyond the local +x face.
  EXPECT_NEAR(world_distance(Vector3(1.0, 5.0, 3.0)), 1.0, round_off);
  EXPECT_NEAR((world_normal(Vector3(1.0, 5.0, 3.0)) - Vector3::UnitY()).norm(), 0.0, round_off);
  // Beyond the local (+x, +y) edge by (0.3, 0.4): world offset R (2.3, 1.4, 0) = (−1.4, 2.3, 0);
  // the normal is the offset (0.3, 0.4)/0.5 rotated, with round-off amplified by |x|/φ.
  const Vector3 edge_point = Vector3(1.0, 2.0, 3.0) + Vector3(-1.4, 2.3, 0.0);
  EXPECT_NEAR(world_distance(edge_point), 0.5, round_off);
  EXPECT_NEAR((world_normal(edge_point) - Vector3(-0.8, 0.6, 0.0)).norm(), 0.0, round_off / 0.5);
  // World z = 2.6 on the axis is 0.1 m inside the local −z face (at world z = 2.5).
  EXPECT_NEAR(world_distance(Vector3(1.0, 2.0, 2.6)), -0.1, round_off);
  EXPECT_EQ(world_normal(Vector3(1.0, 2.0, 2.6)), -Vector3::UnitZ());
}

TEST(RigidShapeTest, PosedGeometryNormalIsWorldGradientAndSamplesLieOnSurface) {
  // A generic rotation and translation: world φ(x) = φ_local(X⁻¹ x), world n = R n_local.
  const Pose pose{Vector3(0.3, -1.2, 2.0), Quaternion(Eigen::AngleAxisd(0.7, Vector3(1.0, 2.0, 3.0).normalized()))};
  const std::vector<std::pair<Shape, std::vector<Vector3>>> cases = {
      {Shape::Box(Vector3(0.5, 0.2, 0.35)), BoxFeatures(Vector3(0.5, 0.2, 0.35))},
      {Shape::Sphere(0.3), {Vector3(0.3, 0.0, 0.0), Vector3(0.0, -0.3, 0.0)}},
      {Shape::Cylinder(0.25, 0.4), CylinderFeatures(0.25, 0.4)},
  };
  unsigned seed = 41;
  for (const auto& shape_and_features : cases) {
    const Shape& shape = shape_and_features.first;
    const std::vector<Vector3>& features = shape_and_features.second;
    const Vector3 extent = shape.LocalBounds().max();
    const double size = extent.maxCoeff();
    const auto world_distance = [&](const Vector3& world_point) {
      return shape.SignedDistance(pose.InverseTransformPoint(world_point));
    };
    // The posed distance equals the local one at the corresponding point, up to the
    // round-off of the transform (a few ε·|x| with |x| ≈ 3 m).
    const std::vector<Vector3> local_points = TestPoints(extent, features, seed++);
    for (const Vector3& local_point : local_points) {
      EXPECT_NEAR(world_distance(pose.TransformPoint(local_point)), shape.SignedDistance(local_point),
                  16 * kEpsilon * (size + 3.0));
    }
    // Where smooth, the rotated local normal is the world gradient.
    EXPECT_GT(ExpectNormalIsGradient(shape, pose, local_points), 400);

    // Local surface samples carried to world stay on the surface of the posed shape.
    for (const SurfaceSample& sample : shape.SampleSurface(0.1 * size)) {
      const Vector3 world_point = pose.TransformPoint(sample.position);
      EXPECT_NEAR(world_distance(world_point), 0.0, 1e-12 * size + 16 * kEpsilon * 3.0);
    }
  }
}

// ---- Mass properties ---------------------------------------------------------------------

TEST(RigidShapeTest, VolumesAndInertiasMatchTextbookFormulas) {
  // Box with full sides (a, b, c) = (1.0, 0.4, 0.7): V = abc, I_xx = V (b² + c²) / 12, ...
  {
    const double a = 1.0, b = 0.4, c = 0.7;
    const Shape box = Shape::Box(Vector3(a / 2, b / 2, c / 2));
    const double volume = a * b * c;
    EXPECT_NEAR(box.Volume(), volume, 4 * kEpsilon * volume);
    const Matrix3 inertia = box.UnitDensityInertia();
    const Matrix3 expected =
        Vector3(volume * (b * b + c * c) / 12, volume * (a * a + c * c) / 12, volume * (a * a + b * b) / 12)
            .asDiagonal();
    EXPECT_LT((inertia - expected).norm(), 8 * kEpsilon * expected.norm());
  }
  // Sphere: V = 4/3 π r³, I = 2/5 m r² about any diameter.
  {
    const double r = 0.3;
    const Shape sphere = Shape::Sphere(r);
    const double volume = 4.0 / 3.0 * kPi * r * r * r;
    EXPECT_NEAR(sphere.Volume(), volume, 4 * kEpsilon * volume);
    EXPECT_LT((sphere.UnitDensityInertia() - 0.4 * volume * r * r * Matrix3::Identity()).norm(),
              8 * kEpsilon * volume * r * r);
  }
  // Cylinder radius r, full height h: V = π r² h, I_zz = m r²/2, I_xx = I_yy = m (3r² + h²)/12.
  {
    const double r = 0.25, h = 0.8;
    const Shape cylinder = Shape::Cylinder(r, h / 2);
    const double volume = kPi * r * r * h;
    EXPECT_NEAR(cylinder.Volume(), volume, 4 * kEpsilon * volume);
    const Matrix3 expected =
        Vector3(volume * (3 * r * r + h * h) / 12, volume * (3 * r * r + h * h) / 12, volume * r * r / 2).asDiagonal();
    EXPECT_LT((cylinder.UnitDensityInertia() - expected).norm(), 8 * kEpsilon * expected.norm());
  }
}

TEST(RigidShapeTest, LocalBoundsAreTight) {
  const AlignedBox3 box_bounds = Shape::Box(Vector3(0.5, 0.2, 0.35)).LocalBounds();
  EXPECT_EQ(box_bounds.min(), Vector3(-0.5, -0.2, -0.35));
  EXPECT_EQ(box_bounds.max(), Vector3(0.5, 0.2, 0.35));
  const AlignedBox3 sphere_bounds = Shape::Sphere(0.3).LocalBounds();
  EXPECT_EQ(sphere_bounds.max(), Vector3::Constant(0.3));
  EXPECT_EQ(sphere_bounds.min(), Vector3::Constant(-0.3));
  const AlignedBox3 cylinder_bounds = Shape::Cylinder(0.25, 0.4).LocalBounds();
  EXPECT_EQ(cylinder_bounds.max(), Vector3(0.25, 0.25, 0.4));
  EXPECT_EQ(cylinder_bounds.min(), Vector3(-0.25, -0.25, -0.4));
}

TEST(RigidShapeTest, RejectsInvalidDimensions) {
  EXPECT_THROW(Shape::Box(Vector3(1.0, 0.0, 1.0)), std::invalid_argument);
  EXPECT_THROW(Shape::Sphere(-1.0), std::invalid_argument);
  EXPECT_THROW(Shape::Cylinder(1.0, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(Shape::Sphere(1.0).SampleSurface(0.0), std::invalid_argument);
}

// ---- Surface sampling --------------------------------------------------------------------

struct SamplingCase {
  Shape shape;
  double surface_area;  // [m²]
};

std::vector<SamplingCase> SamplingCases() {
  const double r_sphere = 0.3;
  const double r_cylinder = 0.25, c = 0.4;
  return {
      {Shape::Box(Vector3(0.5, 0.2, 0.35)), 8.0 * (0.5 * 0.2 + 0.2 * 0.35 + 0.5 * 0.35)},
      {Shape::Sphere(r_sphere), 4.0 * kPi * r_sphere * r_sphere},
      {Shape::Cylinder(r_cylinder, c), 2.0 * kPi * r_cylinder * 2.0 * c + 2.0 * kPi * r_cylinder * r_cylinder},
      // Thin shapes, and a spacing larger than the shape, still give exact areas.
      {Shape::Box(Vector3(0.5, 0.01, 0.35)), 8.0 * (0.5 * 0.01 + 0.01 * 0.35 + 0.5 * 0.35)},
      {Shape::Cylinder(0.02, 0.3), 2.0 * kPi * 0.02 * 0.6 + 2.0 * kPi * 0.02 * 0.02},
  };
}

TEST(RigidShapeTest, SamplesCoverSurfaceWithExactAreaOnSurfaceAndOutward) {
  for (const SamplingCase& sampling_case : SamplingCases()) {
    const Shape& shape = sampling_case.shape;
    const double size = shape.LocalBounds().sizes().maxCoeff() / 2.0;
    for (const double spacing : {size / 8.0, size / 3.0, 3.0 * size}) {
      const std::vector<SurfaceSample> samples = shape.SampleSurface(spacing);
      ASSERT_FALSE(samples.empty());
      double area = 0.0;                          // Σ A
      Vector3 normal_integral = Vector3::Zero();  // Σ A n  (∮ n dA = 0)
      double flux = 0.0;                          // Σ A x·n (∮ x·n dA = 3V)
      for (const SurfaceSample& sample : samples) {
        EXPECT_GT(sample.area, 0.0);
        EXPECT_NEAR(shape.SignedDistance(sample.position), 0.0, 1e-12 * size);
        EXPECT_NEAR(sample.outward_normal.norm(), 1.0, 4 * kEpsilon);
        // The sample normal is the shape's outward normal there.
        EXPECT_NEAR((sample.outward_normal - shape.OutwardNormal(sample.position)).norm(), 0.0, 1e-12);
        area += sample.area;
        normal_integral += sample.area * sample.outward_normal;
        flux += sample.area * sample.position.dot(sample.outward_normal);
      }
      // Areas sum to the surface area up to the round-off of N additions.
      const double round_off = 4.0 * kEpsilon * static_cast<double>(samples.size());
      EXPECT_NEAR(area, sampling_case.surface_area, round_off * sampling_case.surface_area);
      // Closed surface: every sampling here is symmetric, so ∮ n dA vanishes exactly for the
      // box and the cylinder; x·n is constant on every face (box), on the side and on each
      // cap (cylinder) and on the sphere, so the flux gives 3V to round-off.
      EXPECT_NEAR(flux, 3.0 * shape.Volume(), round_off * 3.0 * shape.Volume());
      if (shape.kind != ShapeKind::kSphere) {
        EXPECT_LT(normal_integral.norm(), round_off * sampling_case.surface_area);
      }
    }
  }
}

TEST(RigidShapeTest, SampleCountAndCoverageFollowSpacing) {
  const std::vector<SamplingCase> cases = SamplingCases();
  for (std::size_t index = 0; index < 3; ++index) {
    const SamplingCase& sampling_case = cases[index];
    const Shape& shape = sampling_case.shape;
    // A spacing of a fifth of the smallest half size gives at least 5 cells along every
    // grid direction (box sides, cylinder height, circumference and radius), so rounding the
    // cell counts changes a cell side by at most ±10 %: the count lies within
    // [1/1.1², 1/0.9²] of A/s² (N = round(A/s²) on the sphere).
    const double spacing = shape.LocalBounds().sizes().minCoeff() / 2.0 / 5.0;
    const std::vector<SurfaceSample> samples = shape.SampleSurface(spacing);
    const double expected_count = sampling_case.surface_area / (spacing * spacing);
    const double count = static_cast<double>(samples.size());
    EXPECT_GT(count, expected_count / (1.1 * 1.1) - 1.0);
    EXPECT_LT(count, expected_count / (0.9 * 0.9) + 1.0);

    // Determinism: a second call reproduces the samples bit for bit.
    const std::vector<SurfaceSample> again = shape.SampleSurface(spacing);
    ASSERT_EQ(again.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(again[i].position, samples[i].position);
      EXPECT_EQ(again[i].area, samples[i].area);
    }

    // Coverage: every point of a much finer sampling has a sample within one spacing. A
    // rectangular cell of sides ≤ 1.1 s has half-diagonal ≤ 0.78 s; the Fibonacci lattice is
    // close to hexagonal (covering radius ≈ 0.62 s), slightly worse near the poles.
    double worst = 0.0;
    for (const SurfaceSample& probe : shape.SampleSurface(spacing / 4.0)) {
      double nearest = kInfinity;
      for (const SurfaceSample& sample : samples) {
        nearest = std::min(nearest, (sample.position - probe.position).norm());
      }
      worst = std::max(worst, nearest);
    }
    EXPECT_LT(worst, spacing) << "worst coverage " << worst / spacing << " spacings";
  }
}

}  // namespace
}  // namespace contactlab::rigid
