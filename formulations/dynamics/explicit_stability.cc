#include "formulations/dynamics/explicit_stability.h"

#include <algorithm>
#include <limits>

namespace contactlab::dynamics {

double ExplicitSpeeds::total() const {
  return wave_speed + std::max(max_particle_speed, max_body_surface_speed);
}

double BodyRadius(const rigid::RigidBody& body) {
  double radius = 0.0;
  for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
    if (!body.geometries[g].shape.IsBounded()) continue;
    const Eigen::AlignedBox3d box = body.GeometryBounds(g);
    for (int corner = 0; corner < 8; ++corner) {
      radius = std::max(radius,
                        (box.corner(static_cast<Eigen::AlignedBox3d::CornerType>(corner)) - body.pose.position).norm());
    }
  }
  return radius;
}

ExplicitSpeeds MeasureExplicitSpeeds(const World& world) {
  ExplicitSpeeds speeds;
  for (const mpm::Material& material : world.materials) {
    speeds.wave_speed = std::max(speeds.wave_speed, material.WaveSpeed());
  }
  double max_speed = 0.0;
  const int count = static_cast<int>(world.particles.size());
#pragma omp parallel for reduction(max : max_speed) schedule(static)
  for (int p = 0; p < count; ++p) max_speed = std::max(max_speed, world.particles.velocity[p].norm());
  speeds.max_particle_speed = max_speed;
  for (const rigid::RigidBody& body : world.bodies) {
    if (body.motion == rigid::BodyMotion::kStatic) continue;
    speeds.max_body_surface_speed = std::max(
        speeds.max_body_surface_speed, body.linear_velocity.norm() + body.angular_velocity.norm() * BodyRadius(body));
  }
  return speeds;
}

double StableExplicitSubstep(const World& world, double cfl) {
  const double speed = MeasureExplicitSpeeds(world).total();
  if (speed == 0.0) return std::numeric_limits<double>::infinity();
  return cfl * world.grid_spacing / speed;
}

}  // namespace contactlab::dynamics
