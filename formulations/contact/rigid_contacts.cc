#include "formulations/contact/rigid_contacts.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "formulations/contact/geometry_query.h"

namespace contactlab::contact {
namespace {

// Corners and edge points of a box with half extents `half`, in the shape frame.
std::vector<Vector3> BoxPoints(const Vector3& half, double spacing) {
  std::vector<Vector3> points;
  for (int corner = 0; corner < 8; ++corner) {
    points.emplace_back((corner & 1) ? half.x() : -half.x(), (corner & 2) ? half.y() : -half.y(),
                        (corner & 4) ? half.z() : -half.z());
  }
  // The four edges along each axis, interior points only (the corners are above).
  for (int axis = 0; axis < 3; ++axis) {
    const int u = (axis + 1) % 3, v = (axis + 2) % 3;
    const int segments = std::max(1, static_cast<int>(std::ceil(2.0 * half[axis] / spacing)));
    for (int side = 0; side < 4; ++side) {
      for (int i = 1; i < segments; ++i) {
        Vector3 point;
        point[axis] = -half[axis] + 2.0 * half[axis] * i / segments;
        point[u] = (side & 1) ? half[u] : -half[u];
        point[v] = (side & 2) ? half[v] : -half[v];
        points.push_back(point);
      }
    }
  }
  return points;
}

bool IsSphere(const rigid::Geometry& geometry) {
  return geometry.shape.kind == rigid::ShapeKind::kSphere;
}

RigidContact MakeContact(const std::vector<rigid::RigidBody>& bodies, int touching, int touched, int geometry,
                         const Vector3& point, const GeometryQuery& query, double gap) {
  RigidContact contact;
  contact.body = touched;
  contact.geometry = geometry;
  contact.other_body = touching;
  contact.position = point;
  contact.frame = MakeContactFrame(query.normal);
  contact.penetration = -gap;
  contact.relative_velocity =
      contact.frame.transpose() * (bodies[touching].PointVelocity(point) - bodies[touched].PointVelocity(point));
  contact.friction_coefficient = bodies[touched].geometries[geometry].friction_coefficient;
  return contact;
}

}  // namespace

RigidContactFeatures::RigidContactFeatures(const std::vector<rigid::RigidBody>& bodies, double spacing)
    : spacing_(spacing) {
  if (!(spacing > 0.0) || !std::isfinite(spacing)) {
    throw std::invalid_argument("RigidContactFeatures: spacing must be positive and finite");
  }
  points_.resize(bodies.size());
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    for (const rigid::Geometry& geometry : bodies[b].geometries) {
      std::vector<Vector3> shape_points;
      switch (geometry.shape.kind) {
        case rigid::ShapeKind::kBox:
          shape_points = BoxPoints(geometry.shape.half_extents, spacing);
          break;
        case rigid::ShapeKind::kCylinder:
          for (const rigid::SurfaceSample& sample : geometry.shape.SampleSurface(spacing)) {
            shape_points.push_back(sample.position);
          }
          break;
        case rigid::ShapeKind::kSphere:     // its deepest point, found per pair
        case rigid::ShapeKind::kHalfSpace:  // only touched
          break;
      }
      std::vector<Vector3>& body_points = points_[b].emplace_back();
      for (const Vector3& point : shape_points) body_points.push_back(geometry.pose_in_body.TransformPoint(point));
      num_points_ += static_cast<int>(body_points.size());
    }
  }
}

bool RigidPairCanTouch(const rigid::RigidBody& a, const rigid::RigidBody& b) {
  if (!a.has_finite_mass() && !b.has_finite_mass()) return false;
  if (a.tree_link >= 0 && b.tree_link >= 0) return false;
  return true;
}

std::vector<RigidContact> DetectRigidContacts(const std::vector<rigid::RigidBody>& bodies,
                                              const RigidContactFeatures& features, double margin) {
  std::vector<RigidContact> contacts;
  const int body_count = static_cast<int>(bodies.size());
  const auto boxes = GeometryBoundingBoxes(bodies, margin);
  for (int a = 0; a < body_count; ++a) {
    const rigid::RigidBody& touching = bodies[a];
    for (int ga = 0; ga < static_cast<int>(touching.geometries.size()); ++ga) {
      const bool sphere = IsSphere(touching.geometries[ga]);
      const std::vector<Vector3>& points = features.points(a, ga);
      if (!sphere && points.empty()) continue;
      // World positions of A's points (or the sphere's centre and box).
      std::vector<Vector3> world_points;
      world_points.reserve(points.size());
      for (const Vector3& point : points) world_points.push_back(touching.pose.TransformPoint(point));
      const Vector3 center = touching.GeometryPose(ga).position;
      const double radius = sphere ? touching.geometries[ga].shape.radius : 0.0;
      const Eigen::AlignedBox3d sphere_box(center.array() - radius, center.array() + radius);

      for (int b = 0; b < body_count; ++b) {
        if (b == a || !RigidPairCanTouch(touching, bodies[b])) continue;
        for (int gb = 0; gb < static_cast<int>(bodies[b].geometries.size()); ++gb) {
          const Eigen::AlignedBox3d& box = boxes[b][gb];
          if (sphere) {
            // Sphere against sphere once, from the lower body index.
            if (IsSphere(bodies[b].geometries[gb]) && b < a) continue;
            if (!box.intersects(sphere_box)) continue;
            const GeometryQuery query = QueryGeometry(bodies[b], gb, center);
            const double gap = query.signed_distance - radius;
            if (gap < margin) {
              contacts.push_back(MakeContact(bodies, a, b, gb, center - radius * query.normal, query, gap));
            }
            continue;
          }
          for (const Vector3& point : world_points) {
            if (!box.contains(point)) continue;
            const GeometryQuery query = QueryGeometry(bodies[b], gb, point);
            if (query.signed_distance < margin) {
              contacts.push_back(MakeContact(bodies, a, b, gb, point, query, query.signed_distance));
            }
          }
        }
      }
    }
  }
  return contacts;
}

}  // namespace contactlab::contact
