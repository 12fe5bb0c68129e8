#pragma once
// Particle-versus-geometry contact points (spec-sap-qn §3): one contact per pair of an MPM
// particle and a rigid geometry that contains it, located at the particle, with the
// geometry's outward normal as the frame's z axis (see contact_frame.h for the signs).
#include <vector>

#include "formulations/contact/contact_frame.h"
#include "mpm/particles.h"
#include "rigid/rigid_body.h"

namespace contactlab::contact {

struct ParticleContact {
  int particle = -1;
  int body = -1;
  int geometry = -1;
  Vector3 position = Vector3::Zero();           // contact point = particle position [m]
  Matrix3 frame = Matrix3::Identity();          // R_WC, columns (t̂₁, t̂₂, n̂)
  double penetration = 0.0;                     // −φ [m]: ≥ 0 inside, < 0 for a gap within the margin
  Vector3 relative_velocity = Vector3::Zero();  // v_c = R_CW (v_p − v_B(x_p)), contact frame [m/s]
  double friction_coefficient = 0.0;            // μ of the geometry [-]
};

// Finds every particle inside a rigid geometry, or closer to it than `margin` [m] (then the
// "penetration" is negative: a gap, which implicit solvers use to stop a particle before it
// would cross the surface within the step). Broad phase: world bounding box per geometry,
// inflated by the margin. The list is ordered by (particle, body, geometry) for any thread
// count. Grid-boundary bodies (contact/grid_boundary.h) are skipped: the grid holds them.
std::vector<ParticleContact> DetectParticleContacts(const mpm::Particles& particles,
                                                    const std::vector<rigid::RigidBody>& bodies, double margin = 0.0);

// The deepest particle penetration into any rigid geometry [m] (0 when none), grid-boundary
// bodies included: what step reports call max_penetration.
double MaxPenetration(const mpm::Particles& particles, const std::vector<rigid::RigidBody>& bodies);

}  // namespace contactlab::contact
