#pragma once
// Analytic shapes with signed distance (negative inside) and outward unit normal, both in
// the shape's own frame. Used for particle–geometry contact, grid boundary conditions,
// particle sampling, and mass properties of rigid bodies.
#include <vector>

#include "rigid/types.h"

namespace contactlab::rigid {

enum class ShapeKind { kHalfSpace, kBox, kSphere, kCylinder };

// A point on a shape's surface, in the shape's frame, with the area it represents.
struct SurfaceSample {
  Vector3 position;
  Vector3 outward_normal;
  double area = 0.0;  // [m²]
};

struct Shape {
  ShapeKind kind = ShapeKind::kSphere;
  Vector3 half_extents = Vector3::Zero();  // box [m]
  double radius = 0.0;                     // sphere, cylinder [m]
  double half_height = 0.0;                // cylinder, along the local z axis [m]

  // The half-space z ≤ 0 of the shape frame; its outward normal is +z.
  static Shape HalfSpace();
  static Shape Box(const Vector3& half_extents);
  static Shape Sphere(double radius);
  // Capped cylinder with its axis along the local z axis.
  static Shape Cylinder(double radius, double half_height);

  // Exact signed distance [m], negative inside.
  double SignedDistance(const Vector3& point) const;
  // Outward unit normal at the closest surface feature. Inside a box this is the normal of
  // the nearest face (well defined also on the medial axis).
  Vector3 OutwardNormal(const Vector3& point) const;
  // Hessian of the signed distance ∇²φ in the shape frame [1/m] (the derivative of the
  // outward normal where it is smooth; zero on flat faces and inside a box's nearest-face
  // region). It is the exact derivative of OutwardNormal wherever OutwardNormal is the
  // gradient of SignedDistance and smooth. Where the distance has no second derivative
  // (sphere centre, cylinder axis inside the side region) it returns zero.
  Matrix3 SignedDistanceHessian(const Vector3& point) const;

  bool IsBounded() const { return kind != ShapeKind::kHalfSpace; }
  // Bounding box in the shape frame (unbounded shapes return an infinite box).
  AlignedBox3 LocalBounds() const;
  double Volume() const;  // [m³]; infinite for the half-space
  // Inertia about the centroid in the shape frame per unit density [m⁵].
  Matrix3 UnitDensityInertia() const;
  // Deterministic samples covering the surface with about one sample per spacing² of
  // area; every sample's area sums to the shape's surface area. Bounded shapes only.
  std::vector<SurfaceSample> SampleSurface(double spacing) const;
};

}  // namespace contactlab::rigid
