#pragma once
// MPM particles as a struct of arrays: one contiguous array per field, indexed by particle.
#include <cstddef>
#include <vector>

#include "mpm/types.h"

namespace contactlab::mpm {

struct Particles {
  std::vector<Vector3> position;                      // x_p [m]
  std::vector<Vector3> velocity;                      // v_p [m/s]
  std::vector<Matrix3> affine_velocity;               // C_p, APIC affine matrix [1/s]
  std::vector<Matrix3> deformation_gradient;          // elastic part F^E [-]
  std::vector<Matrix3> plastic_deformation_gradient;  // F^P, total F = F^E F^P [-]
  std::vector<Matrix3> reference_rotation;            // R0: polar rotation of F^E after the previous step
  std::vector<double> mass;                           // m_p [kg]
  std::vector<double> initial_volume;                 // V_p^0 [m³]
  std::vector<int> material;                          // index into World::materials

  std::size_t size() const { return position.size(); }
  // Throws std::length_error when the fields of `count` particles exceed the machine's
  // physical memory.
  void Reserve(std::size_t count);
  // Appends an undeformed particle at rest in the affine sense (C = 0, F = I, R0 = I).
  void Add(const Vector3& position, const Vector3& velocity, double mass, double initial_volume, int material);
};

// Total mass [kg], linear momentum [kg m/s] and angular momentum about the world origin
// [kg m²/s], including the APIC affine contribution m_p (D_p C_pᵀ) with
// D_p = h²/4 I for quadratic B-splines (h = grid spacing).
double TotalMass(const Particles& particles);
Vector3 LinearMomentum(const Particles& particles);
Vector3 AngularMomentum(const Particles& particles, double grid_spacing);
Vector3 CenterOfMass(const Particles& particles);

}  // namespace contactlab::mpm
