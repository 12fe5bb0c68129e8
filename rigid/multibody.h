#pragma once
// Articulated rigid bodies: a kinematic tree of links connected by joints (weld, revolute,
// prismatic, free, prescribed), with generalized positions q and velocities v, the mass
// matrix M(q) by the composite-rigid-body algorithm, bias terms by recursive Newton–Euler,
// forward dynamics, point and spatial Jacobians, per-joint actuation (constant effort and PD
// tracking, optionally implicit), and a semi-implicit time step that accepts generalized
// contact impulses Jᵀγ from a formulation.
//
// Conventions. Spatial vectors are [angular; linear], expressed in world. A link's frame has
// its origin at the link's centre of mass; its spatial velocity is [ω_W; v_W of the centre
// of mass]. A joint connects frame F, fixed on the parent (or the world), to frame M, fixed
// on the child; at q = 0 the two coincide. Revolute and prismatic axes are given in F.
// Free joints connect a link to the world only; their positions are (p_FM, quaternion
// w x y z of R_FM), with F = X_PF placed in the world (identity F makes them p_WM, R_WM), and
// their velocities are [ω_W; v_W of the link's centre of mass] (not of M's origin), so that
// the free block of the mass matrix is exactly diag(I_W, m 1). The positions evolve by
// q̇ = N(q) v: ṗ_FM = R_FW (v_com + ω × (p_WM − p_WC)) and q̇_quat = ½ [0, R_FW ω] ⊗ q_quat,
// renormalized after each position update.
// Prescribed joints have no degrees of freedom: the coordinate along (prismatic) or about
// (revolute) the axis follows given functions of time, which enter the dynamics as known
// motion (their acceleration appears in the bias terms).
#include <functional>
#include <string>
#include <vector>

#include "rigid/pose.h"

namespace contactlab::rigid {

using VectorX = Eigen::VectorXd;
using MatrixX = Eigen::MatrixXd;
using SpatialVector = Eigen::Matrix<double, 6, 1>;  // [angular; linear]
using SpatialJacobian = Eigen::Matrix<double, 6, Eigen::Dynamic>;
using PointJacobianMatrix = Eigen::Matrix<double, 3, Eigen::Dynamic>;

enum class JointType { kWeld, kRevolute, kPrismatic, kFree, kPrescribed };

// A function of time and its first two derivatives.
struct TimeFunction {
  std::function<double(double)> value;              // [m or rad]
  std::function<double(double)> derivative;         // [m/s or rad/s]
  std::function<double(double)> second_derivative;  // [m/s² or rad/s²]
  static TimeFunction Constant(double value);
  // value(t) = start + rate·t.
  static TimeFunction Linear(double start, double rate);
};

// PD tracking of a target trajectory by a 1-DoF joint:
// τ = Kp (q_d(t) − q) + Kd (v_d(t) − v).
struct PdTracking {
  bool enabled = false;
  double stiffness = 0.0;  // Kp [N/m or N m/rad]
  double damping = 0.0;    // Kd [N s/m or N m s/rad]
  TimeFunction target;     // q_d(t), v_d(t) = target.derivative
  // Fold the PD terms into the linear dynamics of the step (as SAP does, spec-sap-qn
  // §1.3.5) so stiff gains stay stable at large steps; false evaluates them explicitly.
  bool implicit = true;
};

struct JointSpec {
  std::string name;
  JointType type = JointType::kWeld;
  int parent = -1;                                      // parent link index, -1 for the world
  Pose frame_on_parent;                                 // X_PF
  Pose frame_on_child;                                  // X_CM
  Vector3 axis = Vector3::UnitZ();                      // unit axis in F (revolute, prismatic, prescribed)
  JointType prescribed_motion = JointType::kPrismatic;  // kPrescribed: kPrismatic or kRevolute
  TimeFunction prescribed;                              // kPrescribed: the coordinate as a function of time
  double constant_effort = 0.0;                         // 1-DoF joints: force [N] or torque [N m] along the axis
  PdTracking pd;                                        // 1-DoF joints
  double initial_position = 0.0;                        // 1-DoF joints [m or rad]
  double initial_velocity = 0.0;                        // 1-DoF joints [m/s or rad/s]
};

class MultibodyTree {
 public:
  // Adds a link of the given mass [kg] and inertia about its centre of mass in its own frame
  // [kg m²], attached by `joint` to an earlier link or the world. Returns the link index.
  // Throws std::invalid_argument (naming the link and joint) for a parent that is not an
  // earlier link, a free joint with a parent, non-positive mass on a link that moves (a
  // non-weld joint on its path to the world), negative mass, an inertia that is not
  // symmetric positive semidefinite, a zero axis, a prescribed joint without value, derivative
  // and second derivative or with a motion other than revolute/prismatic, or a constant
  // effort or PD tracking (missing target, negative gains) on a joint that is not 1-DoF.
  // Free joints start at the identity (q = 0, unit quaternion), 1-DoF joints at their
  // initial position and velocity; kinematics are updated.
  int AddLink(const std::string& name, double mass, const Matrix3& inertia_about_com, const JointSpec& joint);

  int num_links() const;
  int num_positions() const;
  int num_velocities() const;
  // Offsets of a link's joint in q and v (-1 when the joint has none).
  int position_start(int link) const;
  int velocity_start(int link) const;
  const JointSpec& joint(int link) const;
  double link_mass(int link) const;
  const Matrix3& link_inertia(int link) const;
  const std::string& link_name(int link) const;

  // State. q, v and time are set directly; UpdateKinematics must follow any change.
  VectorX& positions();
  VectorX& velocities();
  const VectorX& positions() const;
  const VectorX& velocities() const;
  double time() const;
  void set_time(double time_s);
  // Sets a free joint's state from the link's pose X_WC (the link frame, origin at the centre
  // of mass) and velocity (ω_W, v_W of the link's centre of mass); updates kinematics.
  void SetFreeJointState(int link, const Pose& pose, const Vector3& angular_velocity, const Vector3& linear_velocity);

  // Link poses and spatial velocities from the current q, v and time.
  void UpdateKinematics();
  const Pose& link_pose(int link) const;
  SpatialVector link_spatial_velocity(int link) const;  // [ω_W; v_W of the centre of mass]

  // Dynamics at the current state (after UpdateKinematics).
  MatrixX MassMatrix() const;  // CRBA, nv × nv
  // C(q, v) v − τ_gravity, including the known motion of prescribed joints (RNEA, v̇ = 0).
  VectorX BiasForces(const Vector3& gravity) const;
  VectorX InverseDynamics(const VectorX& acceleration, const Vector3& gravity) const;
  VectorX ForwardDynamics(const VectorX& generalized_forces, const Vector3& gravity) const;
  double KineticEnergy() const;

  // Translational Jacobian of the material point of `link` now at `world_point`: its velocity
  // is J v (+ the velocity of prescribed joints, see PointBiasVelocity).
  PointJacobianMatrix PointJacobian(int link, const Vector3& world_point) const;
  // Spatial Jacobian of a link: [ω_W; v_W of the centre of mass] = J v (+ bias).
  SpatialJacobian LinkJacobian(int link) const;
  // Velocity of that point due to prescribed joints alone (zero without them).
  Vector3 PointBiasVelocity(int link, const Vector3& world_point) const;

  // Joint actuation at the current state and time: constant efforts plus explicit PD terms
  // (implicit PD terms are added by Step instead).
  VectorX ActuationForces() const;

  // One semi-implicit step of size dt [s]:
  //   (M + dt D + dt² K)(v⁺ − v) = dt (τ_act − C + K (q_d − q − dt v) + D (v_d − v)) + impulse,
  //   q⁺ = q + dt N(q) v⁺,   t⁺ = t + dt,
  // with K, D the diagonal implicit PD gains (zero for explicit ones), the targets q_d, v_d
  // taken at t⁺, and `impulse` a generalized impulse [N s or N m s] such as Jᵀγ from
  // contact. The −dt v makes the PD force K (q_d − q⁺) + D (v_d − v⁺) at the end of the step
  // (backward Euler, spec-sap-qn §1.3.5), so stiff gains converge rather than ring.
  // Updates kinematics before (from the current q, v, t) and after.
  void Step(double dt, const Vector3& gravity, const VectorX& generalized_impulse);
  // The linear dynamics Step solves, for implicit contact solvers (spec-sap-qn §1.3.5):
  // matrix A = M + dt D + dt² K (symmetric positive definite) and the free-motion velocity
  // v* that Step reaches without impulse, so Step(dt, gravity, impulse) gives
  // v⁺ = v* + A⁻¹ impulse. Updates kinematics; does not change the state.
  struct LinearizedStep {
    MatrixX matrix;
    VectorX free_velocity;
  };
  LinearizedStep LinearizeStep(double dt, const Vector3& gravity);
  // Jᵀ f: the generalized impulse of an impulse [N s] applied at a world point of a link.
  VectorX GeneralizedImpulse(int link, const Vector3& impulse, const Vector3& world_point) const;

 private:
  // A link, its joint to the parent, and the kinematics cached by UpdateKinematics.
  // Spatial quantities in the cache are Plücker coordinates at the world origin, world axes.
  struct Link {
    std::string name;
    double mass = 0.0;                  // [kg]
    Matrix3 inertia = Matrix3::Zero();  // about the centre of mass, link frame [kg m²]
    JointSpec joint;                    // axis normalized
    int position_start = -1;
    int velocity_start = -1;
    int num_positions = 0;
    int num_velocities = 0;
    // Kinematic cache.
    Pose pose;                                                          // X_WC
    Pose joint_child_frame;                                             // X_WM
    Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6> motion_subspace;  // S, world origin
    SpatialVector velocity = SpatialVector::Zero();                     // [ω; v of the world origin]
    SpatialVector prescribed_velocity = SpatialVector::Zero();          // S ṡ (prescribed joints)
    double prescribed_rate = 0.0;                                       // ṡ [m/s or rad/s]
    double prescribed_acceleration = 0.0;                               // s̈ [m/s² or rad/s²]
  };
  // A = M + dt D + dt² K and the right-hand side dt (τ − C) + PD terms of one step.
  void AssembleStepSystem(double dt, const Vector3& gravity, MatrixX& matrix, VectorX& right_hand_side) const;
  // 6 × 6 spatial inertia of a link about the world origin, world axes.
  Eigen::Matrix<double, 6, 6> SpatialInertia(int link) const;
  // Time derivative of S times a joint rate: Ṡ ṡ for the link's joint.
  SpatialVector MotionSubspaceRate(int link, const VectorX& joint_rate) const;
  // Featherstone's recursive Newton–Euler: generalized forces for the given generalized
  // accelerations at the current q, v, t (prescribed joints follow their functions).
  VectorX NewtonEuler(const VectorX& acceleration, const Vector3& gravity) const;
  // Joint transform X_FM for the link's joint at the current q and time.
  Pose JointTransform(int link) const;
  bool LinkMoves(int parent, const JointSpec& joint) const;

  std::vector<Link> links_;
  int num_positions_ = 0;
  int num_velocities_ = 0;
  VectorX positions_;
  VectorX velocities_;
  double time_ = 0.0;
};

}  // namespace contactlab::rigid
