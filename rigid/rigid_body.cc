#include "rigid/rigid_body.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace contactlab::rigid {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

AlignedBox3 InfiniteBox() {
  return AlignedBox3(Vector3::Constant(-kInfinity), Vector3::Constant(kInfinity));
}

// Inertia of a point mass m at offset d about the origin: m (‖d‖² 1 − d dᵀ) [kg m²].
Matrix3 ParallelAxisTerm(double mass, const Vector3& offset) {
  return mass * (offset.squaredNorm() * Matrix3::Identity() - offset * offset.transpose());
}

// Exact flow of the free rigid body for the kinetic energy Π_k² / (2 I_k) of one principal
// axis k over a time s: the body rotates at the constant rate Π_k / I_k about e_k, so the
// body-frame momentum rotates backwards, Π ← exp(−θ[e_k]×) Π, and the principal frame
// forwards, Q ← Q exp(θ[e_k]×), with θ = s Π_k / I_k. World momentum Q Π is unchanged.
void PrincipalAxisFlow(int axis, double duration, const Vector3& principal_moments, Vector3& body_momentum,
                       Quaternion& principal_orientation) {
  const double angle = duration * body_momentum[axis] / principal_moments[axis];  // [rad]
  body_momentum = Eigen::AngleAxisd(-angle, Vector3::Unit(axis)) * body_momentum;
  principal_orientation = principal_orientation * Quaternion(Eigen::AngleAxisd(angle, Vector3::Unit(axis)));
}

}  // namespace

Matrix3 RigidBody::WorldInertia() const {
  const Matrix3 rotation = pose.rotation();
  return rotation * inertia_in_body * rotation.transpose();
}

Matrix3 RigidBody::WorldInverseInertia() const {
  // Static and kinematic bodies have infinite inertia: their inverse is zero.
  if (!is_free()) return Matrix3::Zero();
  const Matrix3 rotation = pose.rotation();
  return rotation * inertia_in_body.inverse() * rotation.transpose();
}

Vector3 RigidBody::PointVelocity(const Vector3& world_point) const {
  return linear_velocity + angular_velocity.cross(world_point - pose.position);
}

void RigidBody::ApplyImpulse(const Vector3& impulse, const Vector3& world_point) {
  if (!is_free()) return;
  // Δv = J / m; Δω = I_world⁻¹ ((x − c) × J).
  linear_velocity += impulse / mass;
  angular_velocity += WorldInverseInertia() * (world_point - pose.position).cross(impulse);
}

Vector3 RigidBody::LinearMomentum() const {
  return mass * linear_velocity;
}

Vector3 RigidBody::AngularMomentum() const {
  // Orbital part c × m v plus spin about the centre of mass I_world ω.
  return pose.position.cross(mass * linear_velocity) + WorldInertia() * angular_velocity;
}

double RigidBody::KineticEnergy() const {
  return 0.5 * mass * linear_velocity.squaredNorm() + 0.5 * angular_velocity.dot(WorldInertia() * angular_velocity);
}

Pose RigidBody::GeometryPose(int geometry_index) const {
  return pose * geometries.at(static_cast<std::size_t>(geometry_index)).pose_in_body;
}

AlignedBox3 RigidBody::GeometryBounds(int geometry_index) const {
  const Shape& shape = geometries.at(static_cast<std::size_t>(geometry_index)).shape;
  if (!shape.IsBounded()) return InfiniteBox();
  // Bounding box of the eight transformed corners of the local bounding box.
  const AlignedBox3 local_bounds = shape.LocalBounds();
  const Pose world_pose = GeometryPose(geometry_index);
  AlignedBox3 world_bounds;
  world_bounds.setEmpty();
  for (int corner = 0; corner < 8; ++corner) {
    const auto corner_type = static_cast<AlignedBox3::CornerType>(corner);
    world_bounds.extend(world_pose.TransformPoint(local_bounds.corner(corner_type)));
  }
  return world_bounds;
}

RigidBody MakeFreeBody(std::string name, std::vector<Geometry> geometries, double density, const Pose& pose) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("MakeFreeBody(" + name + "): density must be positive and finite, got " +
                                std::to_string(density));
  }
  if (geometries.empty()) {
    throw std::invalid_argument("MakeFreeBody(" + name + "): a free body needs geometry");
  }

  // Mass and centre of mass in the common frame; every shape's centroid is its frame origin.
  // Overlapping geometries are counted twice (their volumes simply add).
  double total_volume = 0.0;                         // [m³]
  Vector3 volume_weighted_centre = Vector3::Zero();  // [m⁴]
  for (std::size_t index = 0; index < geometries.size(); ++index) {
    const Geometry& geometry = geometries[index];
    if (!geometry.shape.IsBounded()) {
      throw std::invalid_argument("MakeFreeBody(" + name + "): geometry " + std::to_string(index) +
                                  " is unbounded and cannot belong to a free body");
    }
    const double volume = geometry.shape.Volume();
    total_volume += volume;
    volume_weighted_centre += volume * geometry.pose_in_body.position;
  }
  const Vector3 centre_of_mass = volume_weighted_centre / total_volume;  // common frame [m]

  // Inertia about the centre of mass in the common frame: each shape's centroidal inertia
  // rotated into the frame, plus the parallel-axis term of its offset.
  Matrix3 inertia = Matrix3::Zero();
  for (const Geometry& geometry : geometries) {
    const Matrix3 rotation = geometry.pose_in_body.rotation();
    const double mass = density * geometry.shape.Volume();
    inertia += density * rotation * geometry.shape.UnitDensityInertia() * rotation.transpose();
    inertia += ParallelAxisTerm(mass, geometry.pose_in_body.position - centre_of_mass);
  }

  // Body frame: origin at the centre of mass, axes those of the common frame; geometries
  // shift by −c so they stay where they were in world.
  for (Geometry& geometry : geometries) geometry.pose_in_body.position -= centre_of_mass;

  RigidBody body;
  body.name = std::move(name);
  body.motion = BodyMotion::kFree;
  body.mass = density * total_volume;
  body.inertia_in_body = 0.5 * (inertia + inertia.transpose());
  body.pose = Pose{pose.TransformPoint(centre_of_mass), pose.orientation};
  body.geometries = std::move(geometries);
  return body;
}

RigidBody MakeStaticBody(std::string name, std::vector<Geometry> geometries, const Pose& pose) {
  RigidBody body;
  body.name = std::move(name);
  body.motion = BodyMotion::kStatic;
  body.pose = pose;
  body.geometries = std::move(geometries);
  return body;
}

RigidBody MakeKinematicBody(std::string name, std::vector<Geometry> geometries, KinematicTrajectory trajectory) {
  if (!trajectory) {
    throw std::invalid_argument("MakeKinematicBody(" + name + "): trajectory is empty");
  }
  RigidBody body;
  body.name = std::move(name);
  body.motion = BodyMotion::kKinematic;
  body.geometries = std::move(geometries);
  body.trajectory = std::move(trajectory);
  UpdateKinematicBody(body, 0.0);
  return body;
}

void AdvanceFreeBody(RigidBody& body, const Vector3& gravity, double dt) {
  if (!body.is_free()) return;
  if (!(body.mass > 0.0)) {
    throw std::invalid_argument("AdvanceFreeBody(" + body.name + "): mass must be positive");
  }

  // Translation, symplectic Euler: v ← v + dt (g + F/m), then x ← x + dt v.
  body.linear_velocity += dt * (gravity + body.applied_force / body.mass);
  body.pose.position += dt * body.linear_velocity;

  // Principal frame of the body inertia: I_body = P diag(I₁, I₂, I₃) Pᵀ with P a proper
  // rotation, so the principal frame's orientation in world is Q P.
  const Eigen::SelfAdjointEigenSolver<Matrix3> solver(body.inertia_in_body);
  if (solver.info() != Eigen::Success || !(solver.eigenvalues().minCoeff() > 0.0)) {
    throw std::invalid_argument("AdvanceFreeBody(" + body.name + "): body inertia must be symmetric positive definite");
  }
  const Vector3 principal_moments = solver.eigenvalues();  // ascending [kg m²]
  Matrix3 principal_axes = solver.eigenvectors();          // columns, in the body frame
  if (principal_axes.determinant() < 0.0) principal_axes.col(2) *= -1.0;
  // Rotating a vector by a quaternion scales it by |q|²: keep every quaternion that converts
  // between frames unit to round-off, or the conversions below bias |L| by ≈ ε per step.
  const Quaternion axes_rotation = Quaternion(principal_axes).normalized();

  // Momentum in the principal frame, Π = Λ Q_pᵀ ω, kicked by the torque impulse dt τ
  // (world). Using the same Λ here and in ω = Q_p Λ⁻¹ Π below keeps the round trip
  // ω → Π → ω consistent: converting with I_body instead would rescale L every step by the
  // O(ε) mismatch between I_body and P Λ Pᵀ, a systematic drift of about ε per step.
  Quaternion principal_orientation = (body.pose.orientation * axes_rotation).normalized();
  Vector3 body_momentum = principal_moments.cwiseProduct(principal_orientation.conjugate() * body.angular_velocity) +
                          principal_orientation.conjugate() * (dt * body.applied_torque);  // [kg m²/s]

  // Symmetric splitting 1(dt/2) 2(dt/2) 3(dt) 2(dt/2) 1(dt/2) of Dullweber, Leimkuhler and
  // McLachlan (1997).
  const double half_step = 0.5 * dt;
  PrincipalAxisFlow(0, half_step, principal_moments, body_momentum, principal_orientation);
  PrincipalAxisFlow(1, half_step, principal_moments, body_momentum, principal_orientation);
  PrincipalAxisFlow(2, dt, principal_moments, body_momentum, principal_orientation);
  PrincipalAxisFlow(1, half_step, principal_moments, body_momentum, principal_orientation);
  PrincipalAxisFlow(0, half_step, principal_moments, body_momentum, principal_orientation);

  // Back to the body frame; world angular velocity ω = Q_p diag(1/I) Π.
  principal_orientation.normalize();
  body.pose.orientation = (principal_orientation * axes_rotation.conjugate()).normalized();
  body.angular_velocity = principal_orientation * body_momentum.cwiseQuotient(principal_moments);
}

void UpdateKinematicBody(RigidBody& body, double time_s) {
  if (body.motion != BodyMotion::kKinematic) return;
  if (!body.trajectory) {
    throw std::invalid_argument("UpdateKinematicBody(" + body.name + "): trajectory is empty");
  }
  const KinematicState state = body.trajectory(time_s);
  body.pose = state.pose;
  body.linear_velocity = state.linear_velocity;
  body.angular_velocity = state.angular_velocity;
}

}  // namespace contactlab::rigid
