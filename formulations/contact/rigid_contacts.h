#pragma once
// Contact points between rigid bodies, found once for every formulation that resolves
// rigid–rigid contact. Each point lies on the surface of one body (the "touching" body A)
// and is tested against the geometry of another (the "touched" body B, static, kinematic,
// free or articulated); the frame's z axis is B's outward normal, so the signs are those of
// particle contacts (contact_frame.h) with A in the particle's place:
//   v_c = R_CW (v_A(x) − v_B(x)),  v_n > 0 separating,
//   an impulse γ acts on A as R_WC γ and on B as −R_WC γ at x.
//
// Which points of A are tested (RigidContactFeatures):
//   sphere    its deepest point into each geometry of B, x = c − r n̂_B(c) with gap
//             φ_B(c) − r: exact against every convex shape (half-space, box, sphere), and
//             one point per touching pair, so a rolling ball has no sampling bumps;
//   box       its 8 corners and points along its 12 edges every `spacing` (face–face,
//             edge–face and corner contacts; a face is touched through the other body's
//             points);
//   cylinder  its surface samples (Shape::SampleSurface) every `spacing`.
// Half-spaces carry no points. Both directions are tested when both bodies move (A's points
// against B and B's against A), except sphere against sphere, taken once. Pairs where
// neither body responds to contact, and pairs of links of the same multibody tree (joints
// keep them together), are skipped.
#include <vector>

#include "formulations/contact/contact_frame.h"
#include "rigid/rigid_body.h"

namespace contactlab::contact {

struct RigidContact {
  int body = -1;                                // B: the body whose geometry is touched
  int geometry = -1;                            // geometry index within B
  int other_body = -1;                          // A: the body the contact point lies on
  Vector3 position = Vector3::Zero();           // the point of A, world [m]
  Matrix3 frame = Matrix3::Identity();          // R_WC, z = B's outward normal
  double penetration = 0.0;                     // −φ_B(x) [m]; < 0 for a gap within the margin
  Vector3 relative_velocity = Vector3::Zero();  // R_CW (v_A(x) − v_B(x)) at detection [m/s]
  double friction_coefficient = 0.0;            // μ of B's geometry, as for particles [-]
};

// The surface points of every body's geometries in body frames (fixed for a run).
class RigidContactFeatures {
 public:
  // Points every `spacing` [m] along box edges and over cylinder surfaces.
  RigidContactFeatures(const std::vector<rigid::RigidBody>& bodies, double spacing);

  double spacing() const { return spacing_; }
  // Points (body frame) of geometry g of body b; empty for spheres and half-spaces.
  const std::vector<Vector3>& points(int body, int geometry) const { return points_[body][geometry]; }
  int num_points() const { return num_points_; }

 private:
  double spacing_ = 0.0;
  std::vector<std::vector<std::vector<Vector3>>> points_;
  int num_points_ = 0;
};

// True when contact between bodies a and b is resolved at all (see the header comment).
bool RigidPairCanTouch(const rigid::RigidBody& a, const rigid::RigidBody& b);

// Every contact point with gap below `margin` [m] (penetrating points have negative gap),
// ordered by (A, A's geometry, point, B, B's geometry).
std::vector<RigidContact> DetectRigidContacts(const std::vector<rigid::RigidBody>& bodies,
                                              const RigidContactFeatures& features, double margin);

}  // namespace contactlab::contact
