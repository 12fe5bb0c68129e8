#include "formulations/contact/geometry_query.h"

namespace contactlab::contact {

GeometryQuery QueryGeometry(const rigid::RigidBody& body, int geometry_index, const mpm::Vector3& world_point) {
  const rigid::Pose pose = body.GeometryPose(geometry_index);
  const rigid::Shape& shape = body.geometries[geometry_index].shape;
  const mpm::Vector3 local_point = pose.InverseTransformPoint(world_point);
  GeometryQuery query;
  query.signed_distance = shape.SignedDistance(local_point);
  query.normal = pose.orientation * shape.OutwardNormal(local_point);
  return query;
}

std::vector<std::vector<Eigen::AlignedBox3d>> GeometryBoundingBoxes(const std::vector<rigid::RigidBody>& bodies,
                                                                    double margin) {
  std::vector<std::vector<Eigen::AlignedBox3d>> boxes(bodies.size());
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    for (int g = 0; g < static_cast<int>(bodies[b].geometries.size()); ++g) {
      Eigen::AlignedBox3d box = bodies[b].GeometryBounds(g);
      box.min().array() -= margin;
      box.max().array() += margin;
      boxes[b].push_back(box);
    }
  }
  return boxes;
}

}  // namespace contactlab::contact
