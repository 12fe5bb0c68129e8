#include "mpm/particles.h"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace contactlab::mpm {

void Particles::Reserve(std::size_t count) {
  // The particle fields alone are a lower bound of what a run needs: more than the
  // machine's memory is refused here, before the allocation, rather than ending in
  // std::bad_alloc or the kernel's out-of-memory killer.
  constexpr double kBytesPerParticle = 2 * sizeof(Vector3) + 4 * sizeof(Matrix3) + 2 * sizeof(double) + sizeof(int);
  const double needed = kBytesPerParticle * static_cast<double>(count);
  const double available =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  if (available > 0.0 && needed > available) {
    char message[160];
    std::snprintf(message, sizeof(message),
                  "Particles: %zu particles need %.1f GiB for their fields alone; this machine has %.1f GiB", count,
                  needed / (1u << 30), available / (1u << 30));
    throw std::length_error(message);
  }
  position.reserve(count);
  velocity.reserve(count);
  affine_velocity.reserve(count);
  deformation_gradient.reserve(count);
  plastic_deformation_gradient.reserve(count);
  reference_rotation.reserve(count);
  mass.reserve(count);
  initial_volume.reserve(count);
  material.reserve(count);
}

void Particles::Add(const Vector3& new_position, const Vector3& new_velocity, double new_mass,
                    double new_initial_volume, int new_material) {
  position.push_back(new_position);
  velocity.push_back(new_velocity);
  affine_velocity.push_back(Matrix3::Zero());
  deformation_gradient.push_back(Matrix3::Identity());
  plastic_deformation_gradient.push_back(Matrix3::Identity());
  reference_rotation.push_back(Matrix3::Identity());
  mass.push_back(new_mass);
  initial_volume.push_back(new_initial_volume);
  material.push_back(new_material);
  if (!cloth_role.empty()) cloth_role.push_back(ClothRole::kNone);
}

double TotalMass(const Particles& particles) {
  double total = 0.0;
  for (const double m : particles.mass) total += m;
  return total;
}

Vector3 LinearMomentum(const Particles& particles) {
  Vector3 total = Vector3::Zero();
  for (std::size_t p = 0; p < particles.size(); ++p) total += particles.mass[p] * particles.velocity[p];
  return total;
}

Vector3 AngularMomentum(const Particles& particles, double grid_spacing) {
  // L_p = m_p [x_p × v_p + (h²/4) axial(C_p − C_pᵀ)]: the affine field's spin about x_p.
  const double inertia_scale = 0.25 * grid_spacing * grid_spacing;
  Vector3 total = Vector3::Zero();
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const Matrix3& c = particles.affine_velocity[p];
    const Vector3 affine_spin(c(2, 1) - c(1, 2), c(0, 2) - c(2, 0), c(1, 0) - c(0, 1));
    total += particles.mass[p] * (particles.position[p].cross(particles.velocity[p]) + inertia_scale * affine_spin);
  }
  return total;
}

Vector3 CenterOfMass(const Particles& particles) {
  Vector3 weighted = Vector3::Zero();
  double total = 0.0;
  for (std::size_t p = 0; p < particles.size(); ++p) {
    weighted += particles.mass[p] * particles.position[p];
    total += particles.mass[p];
  }
  return total > 0.0 ? Vector3(weighted / total) : Vector3::Zero();
}

}  // namespace contactlab::mpm
