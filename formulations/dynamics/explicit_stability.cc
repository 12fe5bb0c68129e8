#include "formulations/dynamics/explicit_stability.h"

#include <algorithm>
#include <limits>

#include "mpm/constitutive/cloth.h"

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

double ShortestClothLength(const mpm::Particles& particles) {
  // A triangle's in-plane waves cross it in ℓ/c with ℓ = σ_min(D_m), the shortest of its rest
  // dimensions; the rest data do not change, so mpm::AddCloth keeps the smallest.
  return particles.cloth_faces.shortest_rest_dimension;
}

ExplicitSpeeds MeasureExplicitSpeeds(const World& world) {
  ExplicitSpeeds speeds;
  // A cloth's in-plane waves cross its shortest triangle dimension ℓ, which may be below h:
  // their speed counts as c h/ℓ on the grid's scale. Its layer's waves cross grid cells.
  const double cloth_scale =
      world.particles.has_cloth() ? std::max(1.0, world.grid_spacing / ShortestClothLength(world.particles)) : 1.0;
  for (const mpm::Material& material : world.materials) {
    const auto* cloth = dynamic_cast<const mpm::ClothModel*>(material.constitutive_model.get());
    const double speed = cloth == nullptr ? material.WaveSpeed()
                                          : std::max(cloth_scale * cloth->PlaneWaveSpeed(material.density),
                                                     cloth->LayerWaveSpeed(material.density));
    speeds.wave_speed = std::max(speeds.wave_speed, speed);
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
