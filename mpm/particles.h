#pragma once
// MPM particles as a struct of arrays: one contiguous array per field, indexed by particle.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "mpm/types.h"

namespace contactlab::mpm {

// How a particle takes part in a codimensional cloth (mpm/cloth_particles.h): not at all, as
// a vertex of its triangle mesh, as a vertex held by a pin (moved by the pin, not the grid),
// or as the face particle at a triangle's centroid.
enum class ClothRole : std::uint8_t { kNone = 0, kVertex = 1, kPinnedVertex = 2, kFace = 3 };

// The triangles of every cloth among the particles, one entry per triangle.
struct ClothFaces {
  std::vector<int> face_particle;                    // the particle at the centroid
  std::vector<std::array<int, 3>> vertex_particles;  // its vertices, counter-clockwise about the normal
  std::vector<Eigen::Matrix2d> rest_inverse;         // D_m⁻¹ (mpm/cloth_mesh.h)
  std::vector<double> volume;                        // quadrature volume of the triangle's energy, A t [m³]
  // The shortest rest dimension σ_min(D_m) over the triangles [m] (mpm::AddCloth keeps it):
  // what an explicit step's in-plane waves cross.
  double shortest_rest_dimension = std::numeric_limits<double>::infinity();
  std::size_t size() const { return face_particle.size(); }
  bool empty() const { return face_particle.empty(); }
};

// Cloth vertices held by a gripper from its grasp time until its release time: meanwhile each
// moves at the velocity of the schedule's current segment (zero after its last); before and
// after, the grid moves it.
struct ClothPin {
  std::vector<int> particles;                                     // vertex particles
  std::vector<double> segment_end;                                // end time of each segment [s], increasing
  std::vector<Vector3> segment_velocity;                          // velocity during each segment [m/s]
  double grasp_time = -std::numeric_limits<double>::infinity();   // [s]
  double release_time = std::numeric_limits<double>::infinity();  // [s]
  bool HoldsAt(double time) const { return grasp_time <= time && time < release_time; }
  bool holding = false;  // whether it holds in the current step (set by mpm::ApplyClothPins)
};

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
  // Per particle its part in a cloth; empty when no particle belongs to one.
  std::vector<ClothRole> cloth_role;
  ClothFaces cloth_faces;
  std::vector<ClothPin> cloth_pins;

  std::size_t size() const { return position.size(); }
  // Throws std::length_error when the fields of `count` particles exceed the machine's
  // physical memory.
  void Reserve(std::size_t count);
  // Appends an undeformed particle at rest in the affine sense (C = 0, F = I, R0 = I).
  void Add(const Vector3& position, const Vector3& velocity, double mass, double initial_volume, int material);
  bool has_cloth() const { return !cloth_faces.empty(); }
};

// Total mass [kg], linear momentum [kg m/s] and angular momentum about the world origin
// [kg m²/s], including the APIC affine contribution m_p (D_p C_pᵀ) with
// D_p = h²/4 I for quadratic B-splines (h = grid spacing).
double TotalMass(const Particles& particles);
Vector3 LinearMomentum(const Particles& particles);
Vector3 AngularMomentum(const Particles& particles, double grid_spacing);
Vector3 CenterOfMass(const Particles& particles);

}  // namespace contactlab::mpm
