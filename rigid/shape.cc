#include "rigid/shape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace contactlab::rigid {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Rejects non-positive or non-finite dimensions of a bounded shape.
void RequirePositive(double value, const char* what) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    throw std::invalid_argument(std::string("Shape: ") + what + " must be positive and finite, got " +
                                std::to_string(value));
  }
}

// Number of cells of side about `spacing` along a length, at least `minimum`.
int CellCount(double length, double spacing, int minimum) {
  const double cells = std::round(length / spacing);
  return std::max(minimum, static_cast<int>(cells));
}

// +1 for non-negative values, -1 otherwise (a point on a symmetry plane picks the + side).
double SignOf(double value) {
  return value >= 0.0 ? 1.0 : -1.0;
}

// Unit radial direction of a point around the z axis; +x on the axis itself.
Vector3 RadialDirection(const Vector3& point) {
  const double radial_distance = std::hypot(point.x(), point.y());
  if (radial_distance == 0.0) return Vector3::UnitX();
  return Vector3(point.x() / radial_distance, point.y() / radial_distance, 0.0);
}

// Samples on the six faces of a box: each face is cut into a regular grid of cells of side
// about `spacing`, one sample at each cell centre carrying the cell's area.
void SampleBoxSurface(const Vector3& half_extents, double spacing, std::vector<SurfaceSample>& samples) {
  for (int normal_axis = 0; normal_axis < 3; ++normal_axis) {
    const int first_axis = (normal_axis + 1) % 3;
    const int second_axis = (normal_axis + 2) % 3;
    const double first_length = 2.0 * half_extents[first_axis];    // [m]
    const double second_length = 2.0 * half_extents[second_axis];  // [m]
    const int first_cells = CellCount(first_length, spacing, 1);
    const int second_cells = CellCount(second_length, spacing, 1);
    const double first_cell_size = first_length / first_cells;     // [m]
    const double second_cell_size = second_length / second_cells;  // [m]
    const double cell_area = first_cell_size * second_cell_size;   // [m²]
    for (const double side : {1.0, -1.0}) {
      for (int i = 0; i < first_cells; ++i) {
        for (int j = 0; j < second_cells; ++j) {
          SurfaceSample sample;
          sample.position[normal_axis] = side * half_extents[normal_axis];
          sample.position[first_axis] = -half_extents[first_axis] + (i + 0.5) * first_cell_size;
          sample.position[second_axis] = -half_extents[second_axis] + (j + 0.5) * second_cell_size;
          sample.outward_normal = side * Vector3::Unit(normal_axis);
          sample.area = cell_area;
          samples.push_back(sample);
        }
      }
    }
  }
}

// Samples on a sphere from a Fibonacci lattice: N points equally spaced in z (so every
// point represents the same area, by Archimedes' hat-box theorem) and advanced by the
// golden angle in azimuth.
void SampleSphereSurface(double radius, double spacing, std::vector<SurfaceSample>& samples) {
  const double surface_area = 4.0 * kPi * radius * radius;  // [m²]
  const int count = std::max(1, static_cast<int>(std::round(surface_area / (spacing * spacing))));
  const double golden_angle = kPi * (3.0 - std::sqrt(5.0));  // [rad]
  const double area_per_sample = surface_area / count;       // [m²]
  for (int i = 0; i < count; ++i) {
    const double height = 1.0 - (2.0 * i + 1.0) / count;  // z of the unit direction
    const double ring_radius = std::sqrt(std::max(0.0, 1.0 - height * height));
    const double azimuth = golden_angle * i;
    const Vector3 direction(ring_radius * std::cos(azimuth), ring_radius * std::sin(azimuth), height);
    samples.push_back(SurfaceSample{radius * direction, direction, area_per_sample});
  }
}

// Samples on a capped cylinder: the side on a regular (angle, z) grid, each cap on a polar
// grid of rings of width about `spacing`, each ring cut into sectors of arc about `spacing`
// at its mid radius. Samples sit at the cell centres (mid angle, mid radius / mid height).
void SampleCylinderSurface(double radius, double half_height, double spacing, std::vector<SurfaceSample>& samples) {
  // Side: angle × height grid.
  const double circumference = 2.0 * kPi * radius;  // [m]
  const double height = 2.0 * half_height;          // [m]
  const int angle_cells = CellCount(circumference, spacing, 3);
  const int height_cells = CellCount(height, spacing, 1);
  const double angle_step = 2.0 * kPi / angle_cells;                     // [rad]
  const double height_step = height / height_cells;                      // [m]
  const double side_area = (circumference / angle_cells) * height_step;  // [m²]
  for (int i = 0; i < angle_cells; ++i) {
    const double angle = (i + 0.5) * angle_step;
    const Vector3 normal(std::cos(angle), std::sin(angle), 0.0);
    for (int j = 0; j < height_cells; ++j) {
      const double z = -half_height + (j + 0.5) * height_step;
      samples.push_back(SurfaceSample{Vector3(radius * normal.x(), radius * normal.y(), z), normal, side_area});
    }
  }

  // Caps: rings [j w, (j+1) w] of area π (2j+1) w², split into equal sectors.
  const int ring_count = CellCount(radius, spacing, 1);
  const double ring_width = radius / ring_count;  // [m]
  for (const double side : {1.0, -1.0}) {
    const Vector3 normal = side * Vector3::UnitZ();
    for (int ring = 0; ring < ring_count; ++ring) {
      const double mid_radius = (ring + 0.5) * ring_width;                          // [m]
      const double ring_area = kPi * (2.0 * ring + 1.0) * ring_width * ring_width;  // [m²]
      const int sectors = CellCount(2.0 * kPi * mid_radius, spacing, 1);
      const double sector_area = ring_area / sectors;  // [m²]
      // A lone sector covering the central disk is represented by the disk's centre.
      const double sample_radius = (sectors == 1 && ring == 0) ? 0.0 : mid_radius;
      for (int sector = 0; sector < sectors; ++sector) {
        const double angle = (sector + 0.5) * 2.0 * kPi / sectors;
        samples.push_back(
            SurfaceSample{Vector3(sample_radius * std::cos(angle), sample_radius * std::sin(angle), side * half_height),
                          normal, sector_area});
      }
    }
  }
}

}  // namespace

Shape Shape::HalfSpace() {
  Shape shape;
  shape.kind = ShapeKind::kHalfSpace;
  return shape;
}

Shape Shape::Box(const Vector3& half_extents) {
  for (int axis = 0; axis < 3; ++axis) RequirePositive(half_extents[axis], "box half extent");
  Shape shape;
  shape.kind = ShapeKind::kBox;
  shape.half_extents = half_extents;
  return shape;
}

Shape Shape::Sphere(double radius) {
  RequirePositive(radius, "sphere radius");
  Shape shape;
  shape.kind = ShapeKind::kSphere;
  shape.radius = radius;
  return shape;
}

Shape Shape::Cylinder(double radius, double half_height) {
  RequirePositive(radius, "cylinder radius");
  RequirePositive(half_height, "cylinder half height");
  Shape shape;
  shape.kind = ShapeKind::kCylinder;
  shape.radius = radius;
  shape.half_height = half_height;
  return shape;
}

double Shape::SignedDistance(const Vector3& point) const {
  switch (kind) {
    case ShapeKind::kHalfSpace:
      // φ = z: the boundary is the plane z = 0.
      return point.z();
    case ShapeKind::kBox: {
      // q = |x| − a: outside part is the distance to the closest face/edge/corner, the
      // inside part the (negative) distance to the nearest face.
      const Vector3 excess = point.cwiseAbs() - half_extents;
      return excess.cwiseMax(0.0).norm() + std::min(excess.maxCoeff(), 0.0);
    }
    case ShapeKind::kSphere:
      return point.norm() - radius;
    case ShapeKind::kCylinder: {
      // d = (ρ − r, |z| − c): the 2-D box SDF in the (ρ, z) half-plane.
      const double radial_excess = std::hypot(point.x(), point.y()) - radius;
      const double axial_excess = std::abs(point.z()) - half_height;
      const double outside = std::hypot(std::max(radial_excess, 0.0), std::max(axial_excess, 0.0));
      return outside + std::min(std::max(radial_excess, axial_excess), 0.0);
    }
  }
  throw std::logic_error("Shape::SignedDistance: unknown shape kind");
}

Vector3 Shape::OutwardNormal(const Vector3& point) const {
  switch (kind) {
    case ShapeKind::kHalfSpace:
      return Vector3::UnitZ();
    case ShapeKind::kBox: {
      const Vector3 excess = point.cwiseAbs() - half_extents;
      Eigen::Index nearest_face_axis = 0;
      const double largest_excess = excess.maxCoeff(&nearest_face_axis);
      if (largest_excess > 0.0) {
        // Outside: gradient of ‖max(q,0)‖, pointing from the closest box point to the point.
        // Every axis with q_k > 0 has |x_k| > a_k > 0, so the sign is well defined.
        const Vector3 positive_excess = excess.cwiseMax(0.0);
        Vector3 normal = positive_excess / positive_excess.norm();
        for (int axis = 0; axis < 3; ++axis) normal[axis] *= SignOf(point[axis]);
        return normal;
      }
      // Inside or on the surface: normal of the nearest face (first one on ties).
      return SignOf(point[nearest_face_axis]) * Vector3::Unit(nearest_face_axis);
    }
    case ShapeKind::kSphere: {
      const double distance = point.norm();
      if (distance == 0.0) return Vector3::UnitZ();
      return point / distance;
    }
    case ShapeKind::kCylinder: {
      const double radial_excess = std::hypot(point.x(), point.y()) - radius;
      const double axial_excess = std::abs(point.z()) - half_height;
      const Vector3 radial_direction = RadialDirection(point);
      const Vector3 cap_direction = SignOf(point.z()) * Vector3::UnitZ();
      if (radial_excess > 0.0 || axial_excess > 0.0) {
        // Outside: side region, cap region, or rim region (both positive), where the
        // normal points from the closest rim point to the point.
        const double radial_part = std::max(radial_excess, 0.0);
        const double axial_part = std::max(axial_excess, 0.0);
        const double length = std::hypot(radial_part, axial_part);
        return (radial_part * radial_direction + axial_part * cap_direction) / length;
      }
      // Inside or on the surface: the nearer of side and cap (side on ties).
      return radial_excess >= axial_excess ? radial_direction : cap_direction;
    }
  }
  throw std::logic_error("Shape::OutwardNormal: unknown shape kind");
}

Matrix3 Shape::SignedDistanceHessian(const Vector3& point) const {
  switch (kind) {
    case ShapeKind::kHalfSpace:
      return Matrix3::Zero();
    case ShapeKind::kBox: {
      const Vector3 excess = point.cwiseAbs() - half_extents;
      if (excess.maxCoeff() <= 0.0) return Matrix3::Zero();  // inside: linear in the point
      // Outside: φ = ‖q⁺‖ with q⁺ the positive excesses. Over the axes S with q_k > 0 it is
      // the distance to a face (|S| = 1), an edge line (|S| = 2) or a corner (|S| = 3), so
      // ∇²φ = (P_S − n nᵀ) / φ with P_S the projector on the axes of S.
      const Vector3 positive_excess = excess.cwiseMax(0.0);
      const double distance = positive_excess.norm();
      Vector3 normal = positive_excess / distance;
      Vector3 active_axes = Vector3::Zero();
      for (int axis = 0; axis < 3; ++axis) {
        normal[axis] *= SignOf(point[axis]);
        if (excess[axis] > 0.0) active_axes[axis] = 1.0;
      }
      return (Matrix3(active_axes.asDiagonal()) - normal * normal.transpose()) / distance;
    }
    case ShapeKind::kSphere: {
      // φ = ‖x‖ − r: ∇²φ = (I − n nᵀ) / ‖x‖, singular at the centre.
      const double distance = point.norm();
      if (distance == 0.0) return Matrix3::Zero();
      const Vector3 normal = point / distance;
      return (Matrix3::Identity() - normal * normal.transpose()) / distance;
    }
    case ShapeKind::kCylinder: {
      const double radial_distance = std::hypot(point.x(), point.y());
      if (radial_distance == 0.0) return Matrix3::Zero();
      const double radial_excess = radial_distance - radius;
      const double axial_excess = std::abs(point.z()) - half_height;
      const Vector3 radial_direction = RadialDirection(point);
      // Derivative of the radial direction ρ̂ = (x, y, 0)/ρ: (I_xy − ρ̂ρ̂ᵀ)/ρ.
      const Matrix3 planar = Vector3(1.0, 1.0, 0.0).asDiagonal();
      const Matrix3 radial_curvature = (planar - radial_direction * radial_direction.transpose()) / radial_distance;
      if (radial_excess > 0.0 || axial_excess > 0.0) {
        // Outside, φ = ‖(d_ρ⁺, d_z⁺)‖ and n = (d_ρ⁺ ρ̂ + d_z⁺ ẑ)/φ. Differentiating n gives
        // [d_ρ⁺ (I_xy − ρ̂ρ̂ᵀ)/ρ + [d_ρ > 0] ρ̂ρ̂ᵀ + [d_z > 0] ẑẑᵀ − n nᵀ] / φ, which is
        // (I_xy − ρ̂ρ̂ᵀ)/ρ on the side, zero beyond a cap and the rim-circle distance between.
        const double radial_part = std::max(radial_excess, 0.0);
        const double axial_part = std::max(axial_excess, 0.0);
        const double distance = std::hypot(radial_part, axial_part);
        const Vector3 normal = OutwardNormal(point);
        Matrix3 hessian = radial_part * radial_curvature - normal * normal.transpose();
        if (radial_excess > 0.0) hessian += radial_direction * radial_direction.transpose();
        if (axial_excess > 0.0) hessian += Vector3::UnitZ() * Vector3::UnitZ().transpose();
        return hessian / distance;
      }
      // Inside: the side distance r − ρ curves with ρ̂; the cap distance is linear.
      return radial_excess >= axial_excess ? radial_curvature : Matrix3::Zero();
    }
  }
  throw std::logic_error("Shape::SignedDistanceHessian: unknown shape kind");
}

AlignedBox3 Shape::LocalBounds() const {
  switch (kind) {
    case ShapeKind::kHalfSpace:
      return AlignedBox3(Vector3::Constant(-kInfinity), Vector3::Constant(kInfinity));
    case ShapeKind::kBox:
      return AlignedBox3(-half_extents, half_extents);
    case ShapeKind::kSphere:
      return AlignedBox3(Vector3::Constant(-radius), Vector3::Constant(radius));
    case ShapeKind::kCylinder: {
      const Vector3 corner(radius, radius, half_height);
      return AlignedBox3(-corner, corner);
    }
  }
  throw std::logic_error("Shape::LocalBounds: unknown shape kind");
}

double Shape::Volume() const {
  switch (kind) {
    case ShapeKind::kHalfSpace:
      return kInfinity;
    case ShapeKind::kBox:
      return 8.0 * half_extents.prod();
    case ShapeKind::kSphere:
      return 4.0 / 3.0 * kPi * radius * radius * radius;
    case ShapeKind::kCylinder:
      return kPi * radius * radius * 2.0 * half_height;
  }
  throw std::logic_error("Shape::Volume: unknown shape kind");
}

Matrix3 Shape::UnitDensityInertia() const {
  const double volume = Volume();
  switch (kind) {
    case ShapeKind::kHalfSpace:
      throw std::logic_error("Shape::UnitDensityInertia: the half-space has no finite inertia");
    case ShapeKind::kBox: {
      // I_xx = (b² + c²) V / 12 with full side lengths (a, b, c).
      const Vector3 squared_sides = (2.0 * half_extents).cwiseAbs2();
      return Vector3(squared_sides.y() + squared_sides.z(), squared_sides.x() + squared_sides.z(),
                     squared_sides.x() + squared_sides.y())
                 .asDiagonal() *
             (volume / 12.0);
    }
    case ShapeKind::kSphere:
      return Matrix3::Identity() * (0.4 * radius * radius * volume);
    case ShapeKind::kCylinder: {
      // About the axis ½ r² V; about a diameter (3 r² + h²) V / 12 with full height h.
      const double full_height = 2.0 * half_height;
      const double transverse = (3.0 * radius * radius + full_height * full_height) / 12.0 * volume;
      const double axial = 0.5 * radius * radius * volume;
      return Vector3(transverse, transverse, axial).asDiagonal();
    }
  }
  throw std::logic_error("Shape::UnitDensityInertia: unknown shape kind");
}

std::vector<SurfaceSample> Shape::SampleSurface(double spacing) const {
  if (!(spacing > 0.0) || !std::isfinite(spacing)) {
    throw std::invalid_argument("Shape::SampleSurface: spacing must be positive and finite, got " +
                                std::to_string(spacing));
  }
  std::vector<SurfaceSample> samples;
  switch (kind) {
    case ShapeKind::kHalfSpace:
      throw std::logic_error("Shape::SampleSurface: the half-space has an unbounded surface");
    case ShapeKind::kBox:
      SampleBoxSurface(half_extents, spacing, samples);
      break;
    case ShapeKind::kSphere:
      SampleSphereSurface(radius, spacing, samples);
      break;
    case ShapeKind::kCylinder:
      SampleCylinderSurface(radius, half_height, spacing, samples);
      break;
  }
  return samples;
}

}  // namespace contactlab::rigid
