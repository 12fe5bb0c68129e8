#pragma once
// Signed distance and outward normal of a body's geometry at a world point.
#include "mpm/types.h"
#include "rigid/rigid_body.h"

namespace contactlab::contact {

struct GeometryQuery {
  double signed_distance = 0.0;                 // φ [m], negative inside
  mpm::Vector3 normal = mpm::Vector3::UnitZ();  // outward unit normal, world
};

GeometryQuery QueryGeometry(const rigid::RigidBody& body, int geometry_index, const mpm::Vector3& world_point);

// World bounding boxes of every geometry of every body, inflated by `margin` [m]
// (infinite for unbounded shapes): the broad phase of every contact query.
std::vector<std::vector<Eigen::AlignedBox3d>> GeometryBoundingBoxes(const std::vector<rigid::RigidBody>& bodies,
                                                                    double margin);

}  // namespace contactlab::contact
