#include "formulations/world.h"

#include <algorithm>

namespace contactlab {

std::string FindNonFiniteState(const World& world) {
  const mpm::Particles& particles = world.particles;
  const int count = static_cast<int>(particles.size());
  int first_bad = count;  // the lowest index, whatever the number of threads
#pragma omp parallel for schedule(static) reduction(min : first_bad)
  for (int p = 0; p < count; ++p) {
    if (!particles.position[p].allFinite() || !particles.velocity[p].allFinite() ||
        !particles.deformation_gradient[p].allFinite()) {
      first_bad = std::min(first_bad, p);
    }
  }
  if (first_bad < count) {
    return "particle " + std::to_string(first_bad) + " has a non-finite position, velocity or deformation gradient";
  }
  for (const rigid::RigidBody& body : world.bodies) {
    if (!body.pose.position.allFinite() || !body.linear_velocity.allFinite() || !body.angular_velocity.allFinite() ||
        !body.pose.orientation.coeffs().allFinite()) {
      return "rigid body '" + body.name + "' has a non-finite pose or velocity";
    }
  }
  return "";
}

int AddArticulatedBody(World& world, const std::string& name, std::vector<rigid::Geometry> geometries, double density,
                       rigid::JointSpec joint) {
  // Mass properties as for a free body placed at G = identity; its frame is the link frame.
  rigid::RigidBody body = rigid::MakeFreeBody(name, std::move(geometries), density, rigid::Pose{});
  const rigid::Vector3 center_in_g = body.pose.position;
  joint.frame_on_child.position -= center_in_g;
  body.motion = rigid::BodyMotion::kArticulated;
  body.tree_link = world.multibody.AddLink(name, body.mass, body.inertia_in_body, joint);
  world.bodies.push_back(std::move(body));
  world.multibody.UpdateKinematics();
  SyncArticulatedBodies(world);
  return static_cast<int>(world.bodies.size()) - 1;
}

void SyncArticulatedBodies(World& world) {
  for (rigid::RigidBody& body : world.bodies) {
    if (body.tree_link < 0) continue;
    body.pose = world.multibody.link_pose(body.tree_link);
    const rigid::SpatialVector velocity = world.multibody.link_spatial_velocity(body.tree_link);
    body.angular_velocity = velocity.head<3>();
    body.linear_velocity = velocity.tail<3>();
  }
}

}  // namespace contactlab
