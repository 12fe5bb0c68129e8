#include "formulations/contact/particle_contacts.h"

#include <algorithm>

#include <omp.h>

#include "formulations/contact/geometry_query.h"

namespace contactlab::contact {
namespace {

std::vector<ParticleContact> Detect(const mpm::Particles& particles, const std::vector<rigid::RigidBody>& bodies,
                                    double margin, bool with_grid_boundaries) {
  const auto boxes = GeometryBoundingBoxes(bodies, margin);
  const int particle_count = static_cast<int>(particles.size());

  // Each thread scans a contiguous range of particles (static schedule); concatenating the
  // per-thread lists in thread order yields the list ordered by particle.
  std::vector<std::vector<ParticleContact>> per_thread(omp_get_max_threads());
#pragma omp parallel
  {
    std::vector<ParticleContact>& found = per_thread[omp_get_thread_num()];
#pragma omp for schedule(static)
    for (int p = 0; p < particle_count; ++p) {
      const Vector3& x = particles.position[p];
      for (int b = 0; b < static_cast<int>(bodies.size()); ++b) {
        if (bodies[b].is_grid_boundary() && !with_grid_boundaries) continue;
        for (int g = 0; g < static_cast<int>(bodies[b].geometries.size()); ++g) {
          if (!boxes[b][g].contains(x)) continue;
          const GeometryQuery query = QueryGeometry(bodies[b], g, x);
          if (!(query.signed_distance < margin)) continue;
          ParticleContact contact;
          contact.particle = p;
          contact.body = b;
          contact.geometry = g;
          contact.position = x;
          contact.frame = MakeContactFrame(query.normal);
          contact.penetration = -query.signed_distance;
          contact.relative_velocity = contact.frame.transpose() * (particles.velocity[p] - bodies[b].PointVelocity(x));
          contact.friction_coefficient = bodies[b].geometries[g].friction_coefficient;
          found.push_back(contact);
        }
      }
    }
  }
  std::vector<ParticleContact> contacts;
  for (auto& found : per_thread) contacts.insert(contacts.end(), found.begin(), found.end());
  return contacts;
}

}  // namespace

std::vector<ParticleContact> DetectParticleContacts(const mpm::Particles& particles,
                                                    const std::vector<rigid::RigidBody>& bodies, double margin) {
  return Detect(particles, bodies, margin, /*with_grid_boundaries=*/false);
}

double MaxPenetration(const mpm::Particles& particles, const std::vector<rigid::RigidBody>& bodies) {
  double deepest = 0.0;
  for (const ParticleContact& point : Detect(particles, bodies, 0.0, /*with_grid_boundaries=*/true)) {
    deepest = std::max(deepest, point.penetration);
  }
  return deepest;
}

}  // namespace contactlab::contact
