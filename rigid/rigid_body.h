#pragma once
// Rigid bodies: mass properties from geometry and density, a quaternion pose, a spatial
// velocity (linear velocity of the centre of mass and angular velocity, both in world),
// and constant applied loads. Four kinds of motion:
//   static      — never moves (slopes, tables); infinite mass for every formulation;
//   kinematic   — follows a prescribed trajectory (pose and velocity as functions of time);
//   free        — Newton–Euler dynamics with the gyroscopic term;
//   articulated — a link of a MultibodyTree (rigid/multibody.h); the tree owns its state and
//                 dynamics, and this body mirrors the link's pose and velocity so that
//                 contact code treats every body alike.
// The body frame has its origin at the centre of mass. Every body carries the offset of its
// velocities in a generalized velocity vector (six per free body) so that formulations can
// assemble global systems; joints will later replace the free-body block.
#include <functional>
#include <string>
#include <vector>

#include "rigid/pose.h"
#include "rigid/shape.h"

namespace contactlab::rigid {

enum class BodyMotion { kStatic, kKinematic, kFree, kArticulated };

// How MPM material meets a static body (formulations/contact/grid_boundary.h): as a contact
// body whose geometry each formulation registers particles against (kContactBody, every body
// by default), or as a boundary condition on the MPM grid nodes inside the geometry (the wall
// of most MPM codes): sticky (node velocity zero), slip (normal component zero, tangential
// free) or separating (no approach along the normal, Coulomb friction with the geometry's μ).
// Rigid–rigid contact treats every body alike.
enum class GridBoundary { kContactBody, kSticky, kSlip, kSeparating };

// A shape attached to a body at a fixed pose in the body frame.
struct Geometry {
  Shape shape;
  Pose pose_in_body;
  double friction_coefficient = 0.0;  // μ used for contacts against this geometry [-]
};

// The prescribed state of a kinematic body at a time.
struct KinematicState {
  Pose pose;
  Vector3 linear_velocity = Vector3::Zero();   // of the body origin, world [m/s]
  Vector3 angular_velocity = Vector3::Zero();  // world [rad/s]
};
using KinematicTrajectory = std::function<KinematicState(double time_s)>;

struct RigidBody {
  std::string name;
  BodyMotion motion = BodyMotion::kStatic;
  double mass = 0.0;                           // [kg]; meaningful for free bodies
  Matrix3 inertia_in_body = Matrix3::Zero();   // about the centre of mass [kg m²]
  Pose pose;                                   // body frame in world
  Vector3 linear_velocity = Vector3::Zero();   // of the centre of mass, world [m/s]
  Vector3 angular_velocity = Vector3::Zero();  // world [rad/s]
  Vector3 applied_force = Vector3::Zero();     // constant external force, world [N]
  Vector3 applied_torque = Vector3::Zero();    // constant external torque, world [N m]
  std::vector<Geometry> geometries;
  KinematicTrajectory trajectory;                           // kinematic bodies only
  int velocity_offset = -1;                                 // first generalized velocity, -1 if none
  int tree_link = -1;                                       // articulated bodies: link in the MultibodyTree
  GridBoundary grid_boundary = GridBoundary::kContactBody;  // static bodies only

  bool is_free() const { return motion == BodyMotion::kFree; }
  // Free and articulated bodies respond to contact; static and kinematic ones do not.
  bool has_finite_mass() const { return is_free() || motion == BodyMotion::kArticulated; }
  // MPM particles never register contacts against a grid-boundary body.
  bool is_grid_boundary() const { return grid_boundary != GridBoundary::kContactBody; }
  Matrix3 WorldInertia() const;
  Matrix3 WorldInverseInertia() const;
  // Velocity of the material point of this body currently at `world_point`.
  Vector3 PointVelocity(const Vector3& world_point) const;
  // Changes the velocity of a free body by an impulse [N s] applied at a world point.
  // Static and kinematic bodies are unaffected; articulated ones take impulses through
  // MultibodyTree::GeneralizedImpulse.
  void ApplyImpulse(const Vector3& impulse, const Vector3& world_point);
  Vector3 LinearMomentum() const;   // [kg m/s]
  Vector3 AngularMomentum() const;  // about the world origin [kg m²/s]
  double KineticEnergy() const;     // [J]
  // World-frame pose of one of the body's geometries.
  Pose GeometryPose(int geometry_index) const;
  // World bounding box of one geometry (infinite for unbounded shapes).
  AlignedBox3 GeometryBounds(int geometry_index) const;
};

// Builds a free body from geometries given in a common frame placed at `pose`; mass,
// centre of mass and inertia come from `density` [kg/m³]. The body frame is moved to the
// centre of mass, with the geometry poses adjusted so that nothing moves in world.
RigidBody MakeFreeBody(std::string name, std::vector<Geometry> geometries, double density, const Pose& pose);
RigidBody MakeStaticBody(std::string name, std::vector<Geometry> geometries, const Pose& pose);
RigidBody MakeKinematicBody(std::string name, std::vector<Geometry> geometries, KinematicTrajectory trajectory);

// Advances a free body by dt under gravity and its applied loads: linear velocity by
// symplectic Euler, rotation by the splitting of Dullweber, Leimkuhler and McLachlan (1997)
// for Euler's equations, which carries the gyroscopic term exactly in each sub-flow and
// conserves the angular momentum of a torque-free body to round-off. Non-free bodies are
// left unchanged.
void AdvanceFreeBody(RigidBody& body, const Vector3& gravity, double dt);
// Sets a kinematic body's pose and velocity from its trajectory at `time_s`.
void UpdateKinematicBody(RigidBody& body, double time_s);

}  // namespace contactlab::rigid
