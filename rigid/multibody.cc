#include "rigid/multibody.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace contactlab::rigid {
namespace {

using Matrix6 = Eigen::Matrix<double, 6, 6>;

Matrix3 Skew(const Vector3& vector) {
  Matrix3 skew;
  skew << 0.0, -vector.z(), vector.y(), vector.z(), 0.0, -vector.x(), -vector.y(), vector.x(), 0.0;
  return skew;
}

// Spatial cross products (Featherstone): motion × motion and motion ×* force.
SpatialVector CrossMotion(const SpatialVector& velocity, const SpatialVector& motion) {
  const Vector3 angular = velocity.head<3>();
  const Vector3 linear = velocity.tail<3>();
  SpatialVector result;
  result.head<3>() = angular.cross(motion.head<3>());
  result.tail<3>() = angular.cross(motion.tail<3>()) + linear.cross(motion.head<3>());
  return result;
}

SpatialVector CrossForce(const SpatialVector& velocity, const SpatialVector& force) {
  const Vector3 angular = velocity.head<3>();
  const Vector3 linear = velocity.tail<3>();
  SpatialVector result;
  result.head<3>() = angular.cross(force.head<3>()) + linear.cross(force.tail<3>());
  result.tail<3>() = angular.cross(force.tail<3>());
  return result;
}

// The coordinate type a joint moves along: prescribed joints behave as their motion type.
JointType MotionType(const JointSpec& joint) {
  return joint.type == JointType::kPrescribed ? joint.prescribed_motion : joint.type;
}

bool IsOneDof(JointType type) {
  return type == JointType::kRevolute || type == JointType::kPrismatic;
}

const char* TypeName(JointType type) {
  switch (type) {
    case JointType::kWeld:
      return "weld";
    case JointType::kRevolute:
      return "revolute";
    case JointType::kPrismatic:
      return "prismatic";
    case JointType::kFree:
      return "free";
    case JointType::kPrescribed:
      return "prescribed";
  }
  return "unknown";
}

bool IsComplete(const TimeFunction& function, bool need_second_derivative) {
  return function.value && function.derivative && (!need_second_derivative || function.second_derivative);
}

}  // namespace

// ---- Time functions --------------------------------------------------------------------

TimeFunction TimeFunction::Constant(double value) {
  return TimeFunction{[value](double) { return value; }, [](double) { return 0.0; }, [](double) { return 0.0; }};
}

TimeFunction TimeFunction::Linear(double start, double rate) {
  return TimeFunction{[start, rate](double time_s) { return start + rate * time_s; }, [rate](double) { return rate; },
                      [](double) { return 0.0; }};
}

// ---- Building the tree -----------------------------------------------------------------

bool MultibodyTree::LinkMoves(int parent, const JointSpec& joint) const {
  if (joint.type != JointType::kWeld) return true;
  if (parent < 0) return false;
  return LinkMoves(links_[parent].joint.parent, links_[parent].joint);
}

int MultibodyTree::AddLink(const std::string& name, double mass, const Matrix3& inertia_about_com,
                           const JointSpec& joint) {
  const std::string where =
      "MultibodyTree::AddLink: link '" + name + "' (joint '" + joint.name + "', " + TypeName(joint.type) + "): ";
  const auto fail = [&where](const std::string& what) { throw std::invalid_argument(where + what); };

  // Topology: parents come first, free joints hang from the world.
  if (joint.parent < -1 || joint.parent >= num_links()) {
    fail("parent index " + std::to_string(joint.parent) + " is not an earlier link (0.." +
         std::to_string(num_links() - 1) + ") or -1 for the world");
  }
  if (joint.type == JointType::kFree && joint.parent != -1) {
    fail("a free joint must connect the link to the world (parent -1)");
  }
  if (joint.type == JointType::kPrescribed && !IsOneDof(joint.prescribed_motion)) {
    fail("prescribed_motion must be kRevolute or kPrismatic");
  }
  if (joint.type == JointType::kPrescribed && !IsComplete(joint.prescribed, true)) {
    fail("prescribed motion needs value, derivative and second_derivative");
  }

  // Axis: required and nonzero for revolute, prismatic and prescribed joints.
  const JointType motion = MotionType(joint);
  JointSpec stored = joint;
  if (IsOneDof(motion)) {
    const double axis_norm = joint.axis.norm();
    if (!std::isfinite(axis_norm) || axis_norm == 0.0) fail("the joint axis is zero or not finite");
    stored.axis = joint.axis / axis_norm;
  }

  // Mass properties: non-negative everywhere, positive mass wherever the link moves.
  if (!std::isfinite(mass) || mass < 0.0) fail("mass must be finite and non-negative");
  if (mass <= 0.0 && LinkMoves(joint.parent, joint)) {
    fail("a link that moves needs a positive mass");
  }
  if (!inertia_about_com.allFinite()) fail("inertia is not finite");
  const double inertia_scale = inertia_about_com.norm();
  const double symmetry_tolerance = 64.0 * std::numeric_limits<double>::epsilon() * inertia_scale;
  if ((inertia_about_com - inertia_about_com.transpose()).norm() > symmetry_tolerance) {
    fail("inertia is not symmetric");
  }
  const Eigen::SelfAdjointEigenSolver<Matrix3> eigen(inertia_about_com);
  if (eigen.eigenvalues().minCoeff() < -symmetry_tolerance) {
    fail("inertia is not positive semidefinite");
  }

  // Actuation: efforts and PD tracking act on 1-DoF joints only.
  const bool one_dof = IsOneDof(joint.type);
  if (!one_dof && joint.constant_effort != 0.0) {
    fail("constant_effort applies only to revolute and prismatic joints");
  }
  if (joint.pd.enabled) {
    if (!one_dof) fail("PD tracking applies only to revolute and prismatic joints");
    if (!IsComplete(joint.pd.target, false)) fail("PD tracking needs a target value and derivative");
    if (!(joint.pd.stiffness >= 0.0) || !(joint.pd.damping >= 0.0)) {
      fail("PD gains must be non-negative");
    }
  }

  // Append the link and its coordinates.
  Link link;
  link.name = name;
  link.mass = mass;
  link.inertia = 0.5 * (inertia_about_com + inertia_about_com.transpose());
  link.joint = std::move(stored);
  if (one_dof) {
    link.num_positions = 1;
    link.num_velocities = 1;
  } else if (joint.type == JointType::kFree) {
    link.num_positions = 7;
    link.num_velocities = 6;
  }
  if (link.num_velocities > 0) {
    link.position_start = num_positions_;
    link.velocity_start = num_velocities_;
  }
  positions_.conservativeResize(num_positions_ + link.num_positions);
  velocities_.conservativeResize(num_velocities_ + link.num_velocities);
  if (one_dof) {
    positions_[num_positions_] = joint.initial_position;
    velocities_[num_velocities_] = joint.initial_velocity;
  } else if (joint.type == JointType::kFree) {
    positions_.segment<7>(num_positions_) << 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0;
    velocities_.segment<6>(num_velocities_).setZero();
  }
  num_positions_ += link.num_positions;
  num_velocities_ += link.num_velocities;
  links_.push_back(std::move(link));
  UpdateKinematics();
  return num_links() - 1;
}

// ---- Accessors -------------------------------------------------------------------------

int MultibodyTree::num_links() const {
  return static_cast<int>(links_.size());
}
int MultibodyTree::num_positions() const {
  return num_positions_;
}
int MultibodyTree::num_velocities() const {
  return num_velocities_;
}
int MultibodyTree::position_start(int link) const {
  return links_.at(link).position_start;
}
int MultibodyTree::velocity_start(int link) const {
  return links_.at(link).velocity_start;
}
const JointSpec& MultibodyTree::joint(int link) const {
  return links_.at(link).joint;
}
double MultibodyTree::link_mass(int link) const {
  return links_.at(link).mass;
}
const Matrix3& MultibodyTree::link_inertia(int link) const {
  return links_.at(link).inertia;
}
const std::string& MultibodyTree::link_name(int link) const {
  return links_.at(link).name;
}
VectorX& MultibodyTree::positions() {
  return positions_;
}
VectorX& MultibodyTree::velocities() {
  return velocities_;
}
const VectorX& MultibodyTree::positions() const {
  return positions_;
}
const VectorX& MultibodyTree::velocities() const {
  return velocities_;
}
double MultibodyTree::time() const {
  return time_;
}
void MultibodyTree::set_time(double time_s) {
  time_ = time_s;
}
const Pose& MultibodyTree::link_pose(int link) const {
  return links_.at(link).pose;
}

SpatialVector MultibodyTree::link_spatial_velocity(int link) const {
  const Link& body = links_.at(link);
  const Vector3 angular = body.velocity.head<3>();
  SpatialVector result;
  result << angular, body.velocity.tail<3>() + angular.cross(body.pose.position);
  return result;
}

void MultibodyTree::SetFreeJointState(int link, const Pose& pose, const Vector3& angular_velocity,
                                      const Vector3& linear_velocity) {
  const Link& body = links_.at(link);
  if (body.joint.type != JointType::kFree) {
    throw std::invalid_argument("MultibodyTree::SetFreeJointState: link '" + body.name +
                                "' does not have a free joint");
  }
  // X_FM = X_WF⁻¹ · X_WC · X_CM, with F placed in the world by frame_on_parent.
  const Pose joint_transform = body.joint.frame_on_parent.Inverse() * pose * body.joint.frame_on_child;
  const Quaternion orientation = joint_transform.orientation.normalized();
  positions_.segment<3>(body.position_start) = joint_transform.position;
  positions_.segment<4>(body.position_start + 3) << orientation.w(), orientation.x(), orientation.y(), orientation.z();
  velocities_.segment<3>(body.velocity_start) = angular_velocity;
  velocities_.segment<3>(body.velocity_start + 3) = linear_velocity;
  UpdateKinematics();
}

// ---- Kinematics ------------------------------------------------------------------------

Pose MultibodyTree::JointTransform(int link) const {
  const Link& body = links_[link];
  const JointSpec& joint = body.joint;
  double coordinate = 0.0;  // [m or rad]
  switch (joint.type) {
    case JointType::kWeld:
      return Pose{};
    case JointType::kFree: {
      const auto q = positions_.segment<7>(body.position_start);
      const Quaternion orientation(q[3], q[4], q[5], q[6]);
      const double norm = orientation.norm();
      if (!(norm > 0.0) || !std::isfinite(norm)) {
        throw std::invalid_argument("MultibodyTree: link '" + body.name +
                                    "' has a zero or non-finite free-joint quaternion");
      }
      return Pose{q.head<3>(), Quaternion(orientation.coeffs() / norm)};
    }
    case JointType::kRevolute:
    case JointType::kPrismatic:
      coordinate = positions_[body.position_start];
      break;
    case JointType::kPrescribed:
      coordinate = joint.prescribed.value(time_);
      break;
  }
  if (MotionType(joint) == JointType::kRevolute) {
    return Pose{Vector3::Zero(), Quaternion(Eigen::AngleAxisd(coordinate, joint.axis))};
  }
  return Pose{coordinate * joint.axis, Quaternion::Identity()};
}

// Forward pass over the tree (parents first): X_WC = X_WP · X_PF · X_FM(q) · X_CM⁻¹, the
// joint's motion subspace S in world-origin Plücker coordinates, and V = V_parent + S v.
void MultibodyTree::UpdateKinematics() {
  for (int index = 0; index < num_links(); ++index) {
    Link& link = links_[index];
    const JointSpec& joint = link.joint;
    const Pose parent_pose = joint.parent >= 0 ? links_[joint.parent].pose : Pose{};
    const Pose joint_parent_frame = parent_pose * joint.frame_on_parent;  // X_WF
    link.joint_child_frame = joint_parent_frame * JointTransform(index);  // X_WM
    link.pose = link.joint_child_frame * joint.frame_on_child.Inverse();  // X_WC

    // Motion subspace: revolute [a; o × a] (axis a through o), prismatic [0; a], free
    // [1 0; [c]× 1] for [ω; v of the centre of mass c].
    const JointType motion = MotionType(joint);
    if (joint.type == JointType::kFree) {
      link.motion_subspace.setIdentity(6, 6);
      link.motion_subspace.bottomLeftCorner<3, 3>() = Skew(link.pose.position);
    } else if (joint.type == JointType::kWeld) {
      link.motion_subspace.resize(6, 0);
    } else {
      const Vector3 axis = joint_parent_frame.orientation * joint.axis;
      link.motion_subspace.resize(6, 1);
      if (motion == JointType::kRevolute) {
        link.motion_subspace.col(0) << axis, link.joint_child_frame.position.cross(axis);
      } else {
        link.motion_subspace.col(0) << Vector3::Zero(), axis;
      }
    }

    // Spatial velocity, with the known rate of a prescribed joint.
    link.velocity = joint.parent >= 0 ? links_[joint.parent].velocity : SpatialVector::Zero();
    link.prescribed_velocity.setZero();
    link.prescribed_rate = 0.0;
    link.prescribed_acceleration = 0.0;
    if (link.num_velocities > 0) {
      link.velocity += link.motion_subspace * velocities_.segment(link.velocity_start, link.num_velocities);
    } else if (joint.type == JointType::kPrescribed) {
      link.prescribed_rate = joint.prescribed.derivative(time_);
      link.prescribed_acceleration = joint.prescribed.second_derivative(time_);
      link.prescribed_velocity = link.motion_subspace.col(0) * link.prescribed_rate;
      link.velocity += link.prescribed_velocity;
    }
  }
}

// ---- Dynamics --------------------------------------------------------------------------

// Spatial inertia about the world origin: [I_W + m [c]×[c]×ᵀ, m [c]×; m [c]×ᵀ, m 1].
Matrix6 MultibodyTree::SpatialInertia(int index) const {
  const Link& link = links_[index];
  const Matrix3 rotation = link.pose.rotation();
  const Matrix3 centre_skew = Skew(link.pose.position);
  Matrix6 inertia;
  inertia.topLeftCorner<3, 3>() =
      rotation * link.inertia * rotation.transpose() + link.mass * centre_skew * centre_skew.transpose();
  inertia.topRightCorner<3, 3>() = link.mass * centre_skew;
  inertia.bottomLeftCorner<3, 3>() = link.mass * centre_skew.transpose();
  inertia.bottomRightCorner<3, 3>() = link.mass * Matrix3::Identity();
  return inertia;
}

// Ṡ times the joint rate. Revolute, prismatic and prescribed subspaces are fixed in the
// child, so Ṡ = V ×; the free joint's columns follow the centre of mass c, so only [c]×
// changes: Ṡ v = [0; ċ × ω].
SpatialVector MultibodyTree::MotionSubspaceRate(int index, const VectorX& joint_rate) const {
  const Link& link = links_[index];
  if (link.joint.type == JointType::kFree) {
    const Vector3 angular = joint_rate.head<3>();
    const Vector3 centre_velocity = link.velocity.tail<3>() + link.velocity.head<3>().cross(link.pose.position);
    SpatialVector result;
    result << Vector3::Zero(), centre_velocity.cross(angular);
    return result;
  }
  return CrossMotion(link.velocity, link.motion_subspace * joint_rate);
}

// Featherstone RNEA. Forward: a_i = a_parent + S v̇ + Ṡ v (prescribed joints: S s̈ + Ṡ ṡ),
// starting from a_world = [0; −g] so gravity acts as a fictitious upward acceleration;
// f_i = I_i a_i + V_i ×* I_i V_i. Backward: τ_i = S_iᵀ f_i, f_parent += f_i.
VectorX MultibodyTree::NewtonEuler(const VectorX& acceleration, const Vector3& gravity) const {
  if (acceleration.size() != num_velocities_) {
    throw std::invalid_argument("MultibodyTree: acceleration has size " + std::to_string(acceleration.size()) +
                                ", expected " + std::to_string(num_velocities_));
  }
  std::vector<SpatialVector> link_acceleration(links_.size());
  std::vector<SpatialVector> link_force(links_.size());
  SpatialVector world_acceleration;
  world_acceleration << Vector3::Zero(), -gravity;
  for (int index = 0; index < num_links(); ++index) {
    const Link& link = links_[index];
    SpatialVector& spatial_acceleration = link_acceleration[index];
    spatial_acceleration = link.joint.parent >= 0 ? link_acceleration[link.joint.parent] : world_acceleration;
    if (link.num_velocities > 0) {
      const VectorX joint_velocity = velocities_.segment(link.velocity_start, link.num_velocities);
      spatial_acceleration += link.motion_subspace * acceleration.segment(link.velocity_start, link.num_velocities) +
                              MotionSubspaceRate(index, joint_velocity);
    } else if (link.joint.type == JointType::kPrescribed) {
      spatial_acceleration += link.motion_subspace.col(0) * link.prescribed_acceleration +
                              CrossMotion(link.velocity, link.prescribed_velocity);
    }
    const Matrix6 inertia = SpatialInertia(index);
    link_force[index] = inertia * spatial_acceleration + CrossForce(link.velocity, inertia * link.velocity);
  }
  VectorX generalized_forces = VectorX::Zero(num_velocities_);
  for (int index = num_links() - 1; index >= 0; --index) {
    const Link& link = links_[index];
    if (link.num_velocities > 0) {
      generalized_forces.segment(link.velocity_start, link.num_velocities) =
          link.motion_subspace.transpose() * link_force[index];
    }
    if (link.joint.parent >= 0) link_force[link.joint.parent] += link_force[index];
  }
  return generalized_forces;
}

// Featherstone CRBA with world-frame composite inertias: I^c_i = I_i + Σ_children I^c_j,
// M_ii = S_iᵀ I^c_i S_i, and M_ji = S_jᵀ I^c_i S_i for every ancestor j of i.
MatrixX MultibodyTree::MassMatrix() const {
  std::vector<Matrix6> composite(links_.size());
  for (int index = 0; index < num_links(); ++index) composite[index] = SpatialInertia(index);
  for (int index = num_links() - 1; index >= 0; --index) {
    const int parent = links_[index].joint.parent;
    if (parent >= 0) composite[parent] += composite[index];
  }
  MatrixX mass_matrix = MatrixX::Zero(num_velocities_, num_velocities_);
  for (int index = 0; index < num_links(); ++index) {
    const Link& link = links_[index];
    if (link.num_velocities == 0) continue;
    const Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6> force = composite[index] * link.motion_subspace;
    mass_matrix.block(link.velocity_start, link.velocity_start, link.num_velocities, link.num_velocities) =
        link.motion_subspace.transpose() * force;
    for (int ancestor = link.joint.parent; ancestor >= 0; ancestor = links_[ancestor].joint.parent) {
      const Link& other = links_[ancestor];
      if (other.num_velocities == 0) continue;
      const MatrixX coupling = other.motion_subspace.transpose() * force;
      mass_matrix.block(other.velocity_start, link.velocity_start, other.num_velocities, link.num_velocities) =
          coupling;
      mass_matrix.block(link.velocity_start, other.velocity_start, link.num_velocities, other.num_velocities) =
          coupling.transpose();
    }
  }
  return mass_matrix;
}

VectorX MultibodyTree::BiasForces(const Vector3& gravity) const {
  return NewtonEuler(VectorX::Zero(num_velocities_), gravity);
}

VectorX MultibodyTree::InverseDynamics(const VectorX& acceleration, const Vector3& gravity) const {
  return NewtonEuler(acceleration, gravity);
}

// M v̇ = τ − C, solved with the LDLᵀ factorization of the SPD mass matrix.
VectorX MultibodyTree::ForwardDynamics(const VectorX& generalized_forces, const Vector3& gravity) const {
  if (generalized_forces.size() != num_velocities_) {
    throw std::invalid_argument("MultibodyTree::ForwardDynamics: forces have size " +
                                std::to_string(generalized_forces.size()) + ", expected " +
                                std::to_string(num_velocities_));
  }
  return MassMatrix().ldlt().solve(generalized_forces - BiasForces(gravity));
}

// T = Σ ½ (ωᵀ I_W ω + m |v_com|²) [J], from the link velocities directly.
double MultibodyTree::KineticEnergy() const {
  double energy = 0.0;
  for (int index = 0; index < num_links(); ++index) {
    const Link& link = links_[index];
    const SpatialVector velocity = link_spatial_velocity(index);
    const Vector3 angular = velocity.head<3>();
    const Vector3 angular_in_link = link.pose.orientation.conjugate() * angular;
    energy +=
        0.5 * (angular_in_link.dot(link.inertia * angular_in_link) + link.mass * velocity.tail<3>().squaredNorm());
  }
  return energy;
}

// ---- Jacobians -------------------------------------------------------------------------

// Columns of every joint on the path to the world; a world-origin motion [w; u] moves the
// point x at u + w × x = u − [x]× w.
PointJacobianMatrix MultibodyTree::PointJacobian(int link, const Vector3& world_point) const {
  PointJacobianMatrix jacobian = PointJacobianMatrix::Zero(3, num_velocities_);
  const Matrix3 point_skew = Skew(world_point);
  for (int index = link; index >= 0; index = links_.at(index).joint.parent) {
    const Link& body = links_[index];
    if (body.num_velocities == 0) continue;
    jacobian.middleCols(body.velocity_start, body.num_velocities) =
        body.motion_subspace.bottomRows<3>() - point_skew * body.motion_subspace.topRows<3>();
  }
  return jacobian;
}

SpatialJacobian MultibodyTree::LinkJacobian(int link) const {
  SpatialJacobian jacobian = SpatialJacobian::Zero(6, num_velocities_);
  const Matrix3 centre_skew = Skew(links_.at(link).pose.position);
  for (int index = link; index >= 0; index = links_[index].joint.parent) {
    const Link& body = links_[index];
    if (body.num_velocities == 0) continue;
    auto columns = jacobian.middleCols(body.velocity_start, body.num_velocities);
    columns.topRows<3>() = body.motion_subspace.topRows<3>();
    columns.bottomRows<3>() = body.motion_subspace.bottomRows<3>() - centre_skew * body.motion_subspace.topRows<3>();
  }
  return jacobian;
}

Vector3 MultibodyTree::PointBiasVelocity(int link, const Vector3& world_point) const {
  Vector3 velocity = Vector3::Zero();
  for (int index = link; index >= 0; index = links_.at(index).joint.parent) {
    const SpatialVector& motion = links_[index].prescribed_velocity;
    velocity += motion.tail<3>() + motion.head<3>().cross(world_point);
  }
  return velocity;
}

VectorX MultibodyTree::GeneralizedImpulse(int link, const Vector3& impulse, const Vector3& world_point) const {
  return PointJacobian(link, world_point).transpose() * impulse;
}

// ---- Actuation and time stepping -------------------------------------------------------

// Constant efforts plus explicit PD: τ = Kp (q_d(t) − q) + Kd (v_d(t) − v).
VectorX MultibodyTree::ActuationForces() const {
  VectorX forces = VectorX::Zero(num_velocities_);
  for (const Link& link : links_) {
    if (!IsOneDof(link.joint.type)) continue;
    double& force = forces[link.velocity_start];
    force = link.joint.constant_effort;
    const PdTracking& pd = link.joint.pd;
    if (pd.enabled && !pd.implicit) {
      force += pd.stiffness * (pd.target.value(time_) - positions_[link.position_start]) +
               pd.damping * (pd.target.derivative(time_) - velocities_[link.velocity_start]);
    }
  }
  return forces;
}

void MultibodyTree::AssembleStepSystem(double dt, const Vector3& gravity, MatrixX& matrix,
                                       VectorX& right_hand_side) const {
  const double next_time = time_ + dt;
  // Linear dynamics of the step: (M + dt D + dt² K) Δv = dt (τ − C) + impulse + PD terms,
  // with implicit PD force K (q_d − q − dt v⁺) + D (v_d − v⁺) at t⁺ (backward Euler).
  matrix = MassMatrix();
  right_hand_side = dt * (ActuationForces() - BiasForces(gravity));
  for (const Link& link : links_) {
    const PdTracking& pd = link.joint.pd;
    if (!IsOneDof(link.joint.type) || !pd.enabled || !pd.implicit) continue;
    const int row = link.velocity_start;
    const double position = positions_[link.position_start];
    const double velocity = velocities_[row];
    matrix(row, row) += dt * pd.damping + dt * dt * pd.stiffness;
    right_hand_side[row] += dt * (pd.stiffness * (pd.target.value(next_time) - position - dt * velocity) +
                                  pd.damping * (pd.target.derivative(next_time) - velocity));
  }
}

MultibodyTree::LinearizedStep MultibodyTree::LinearizeStep(double dt, const Vector3& gravity) {
  if (!(dt > 0.0)) throw std::invalid_argument("MultibodyTree::LinearizeStep: dt must be positive");
  UpdateKinematics();
  LinearizedStep step;
  VectorX right_hand_side;
  AssembleStepSystem(dt, gravity, step.matrix, right_hand_side);
  step.free_velocity = velocities_ + step.matrix.ldlt().solve(right_hand_side);
  return step;
}

void MultibodyTree::Step(double dt, const Vector3& gravity, const VectorX& generalized_impulse) {
  if (!(dt > 0.0)) throw std::invalid_argument("MultibodyTree::Step: dt must be positive");
  if (generalized_impulse.size() != num_velocities_) {
    throw std::invalid_argument("MultibodyTree::Step: impulse has size " + std::to_string(generalized_impulse.size()) +
                                ", expected " + std::to_string(num_velocities_));
  }
  UpdateKinematics();
  const double next_time = time_ + dt;
  MatrixX matrix;
  VectorX right_hand_side;
  AssembleStepSystem(dt, gravity, matrix, right_hand_side);
  right_hand_side += generalized_impulse;
  velocities_ += matrix.ldlt().solve(right_hand_side);

  // Positions: q⁺ = q + dt N(q) v⁺, with N from the step-start kinematics.
  for (const Link& link : links_) {
    if (IsOneDof(link.joint.type)) {
      positions_[link.position_start] += dt * velocities_[link.velocity_start];
    } else if (link.joint.type == JointType::kFree) {
      const Vector3 angular = velocities_.segment<3>(link.velocity_start);
      const Vector3 centre_velocity = velocities_.segment<3>(link.velocity_start + 3);
      // Velocity of M's origin, then both rates in F.
      const Vector3 origin_velocity =
          centre_velocity + angular.cross(link.joint_child_frame.position - link.pose.position);
      const Quaternion world_to_joint = link.joint.frame_on_parent.orientation.conjugate();
      auto q = positions_.segment<7>(link.position_start);
      q.head<3>() += dt * (world_to_joint * origin_velocity);
      const Quaternion orientation(q[3], q[4], q[5], q[6]);
      const Vector3 angular_in_joint = world_to_joint * angular;
      const Quaternion rate =
          Quaternion(0.0, angular_in_joint.x(), angular_in_joint.y(), angular_in_joint.z()) * orientation;
      Eigen::Vector4d updated(orientation.w() + 0.5 * dt * rate.w(), orientation.x() + 0.5 * dt * rate.x(),
                              orientation.y() + 0.5 * dt * rate.y(), orientation.z() + 0.5 * dt * rate.z());
      q.tail<4>() = updated.normalized();
    }
  }
  time_ = next_time;
  UpdateKinematics();
}

}  // namespace contactlab::rigid
