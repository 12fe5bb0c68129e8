#include "formulations/world.h"

#include <algorithm>

#include "formulations/state_archive.h"

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

namespace {

// A per-particle field: loading checks that it has one entry per particle.
template <typename Field>
void VisitPerParticle(StateArchive& archive, std::string_view name, Field& field, std::size_t count) {
  archive(name, field);
  if (archive.loading() && field.size() != count) {
    archive.Fail(name, "has " + std::to_string(field.size()) + " entries for " + std::to_string(count) + " particles");
  }
}

}  // namespace

void VisitState(StateArchive& archive, World& world) {
  const StateArchive::Scope scope(archive, "world");
  archive("time", world.time);
  mpm::Particles& particles = world.particles;
  const std::size_t count = particles.size();
  archive.Expect("particle_count", static_cast<std::uint64_t>(count));
  {
    const StateArchive::Scope particle_scope(archive, "particles");
    VisitPerParticle(archive, "position", particles.position, count);
    VisitPerParticle(archive, "velocity", particles.velocity, count);
    VisitPerParticle(archive, "affine_velocity", particles.affine_velocity, count);
    VisitPerParticle(archive, "deformation_gradient", particles.deformation_gradient, count);
    VisitPerParticle(archive, "plastic_deformation_gradient", particles.plastic_deformation_gradient, count);
    VisitPerParticle(archive, "reference_rotation", particles.reference_rotation, count);
    VisitPerParticle(archive, "mass", particles.mass, count);
    VisitPerParticle(archive, "initial_volume", particles.initial_volume, count);
    // The pins switch their vertices between kVertex and kPinnedVertex.
    archive("cloth_role", particles.cloth_role);
    if (archive.loading() && !particles.cloth_role.empty() && particles.cloth_role.size() != count) {
      archive.Fail("cloth_role", "does not have one entry per particle");
    }
    for (const mpm::ClothRole role : particles.cloth_role) {
      if (static_cast<int>(role) > static_cast<int>(mpm::ClothRole::kFace)) archive.Fail("cloth_role", "holds no role");
    }
    archive.Expect("cloth_pin_count", static_cast<std::uint64_t>(particles.cloth_pins.size()));
    for (std::size_t pin = 0; pin < particles.cloth_pins.size(); ++pin) {
      archive("cloth_pin_" + std::to_string(pin) + "_holding", particles.cloth_pins[pin].holding);
    }
  }
  archive.Expect("body_count", static_cast<std::uint64_t>(world.bodies.size()));
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    rigid::RigidBody& body = world.bodies[b];
    const StateArchive::Scope body_scope(archive, "body_" + std::to_string(b));
    archive("position", body.pose.position);
    archive("orientation", body.pose.orientation.coeffs());
    archive("linear_velocity", body.linear_velocity);
    archive("angular_velocity", body.angular_velocity);
    archive("applied_force", body.applied_force);
    archive("applied_torque", body.applied_torque);
  }
  rigid::MultibodyTree& tree = world.multibody;
  const StateArchive::Scope tree_scope(archive, "multibody");
  archive.Expect("num_positions", static_cast<std::int64_t>(tree.num_positions()));
  archive.Expect("num_velocities", static_cast<std::int64_t>(tree.num_velocities()));
  archive("positions", tree.positions());
  archive("velocities", tree.velocities());
  double tree_time = tree.time();
  archive("time", tree_time);
  if (archive.loading()) {
    if (tree.positions().size() != tree.num_positions() || tree.velocities().size() != tree.num_velocities()) {
      archive.Fail("positions", "does not have the tree's size");
    }
    tree.set_time(tree_time);
    if (tree.num_links() > 0) tree.UpdateKinematics();
  }
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
