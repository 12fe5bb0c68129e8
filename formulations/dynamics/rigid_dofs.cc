#include "formulations/dynamics/rigid_dofs.h"

#include <algorithm>

#include <cmath>

namespace contactlab::dynamics {

void RigidDofs::Setup(World& world, double dt) {
  // Number the unknowns: free bodies first, six each, then the tree.
  const int body_count = static_cast<int>(world.bodies.size());
  first_dof_.assign(body_count, -1);
  inverse_world_inertia_.assign(body_count, Matrix3::Zero());
  size_ = 0;
  for (int b = 0; b < body_count; ++b) {
    if (!world.bodies[b].is_free()) continue;
    first_dof_[b] = size_;
    size_ += 6;
  }
  rigid::MultibodyTree& tree = world.multibody;
  const int tree_size = tree.num_links() > 0 ? tree.num_velocities() : 0;
  tree_first_dof_ = tree_size > 0 ? size_ : -1;
  if (tree_size > 0) {
    for (int b = 0; b < body_count; ++b) {
      if (world.bodies[b].tree_link >= 0) first_dof_[b] = tree_first_dof_;
    }
  }
  size_ += tree_size;

  dynamics_matrix_.setZero(size_, size_);
  free_motion_velocity_.setZero(size_);
  current_velocity_.setZero(size_);

  // Free bodies: explicit gravity, loads and gyroscopic term (§1.3.5).
  for (int b = 0; b < body_count; ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (!body.is_free()) continue;
    const int first = first_dof_[b];
    const Matrix3 inertia = body.WorldInertia();
    inverse_world_inertia_[b] = body.WorldInverseInertia();
    current_velocity_.segment<3>(first) = body.linear_velocity;
    current_velocity_.segment<3>(first + 3) = body.angular_velocity;
    dynamics_matrix_.block<3, 3>(first, first) = body.mass * Matrix3::Identity();
    dynamics_matrix_.block<3, 3>(first + 3, first + 3) = inertia;
    free_motion_velocity_.segment<3>(first) =
        body.linear_velocity + dt * (world.gravity + body.applied_force / body.mass);
    free_motion_velocity_.segment<3>(first + 3) =
        body.angular_velocity +
        dt * inverse_world_inertia_[b] *
            (body.applied_torque - body.angular_velocity.cross(inertia * body.angular_velocity));
  }

  // The tree: its own linearized step, implicit PD included.
  if (tree_size > 0) {
    const rigid::MultibodyTree::LinearizedStep linear = tree.LinearizeStep(dt, world.gravity);
    dynamics_matrix_.block(tree_first_dof_, tree_first_dof_, tree_size, tree_size) = linear.matrix;
    free_motion_velocity_.segment(tree_first_dof_, tree_size) = linear.free_velocity;
    current_velocity_.segment(tree_first_dof_, tree_size) = tree.velocities();
    tree_factorization_.compute(linear.matrix);
  }
}

Eigen::Matrix<double, 3, Eigen::Dynamic> RigidDofs::PointJacobian(const World& world, int body_index,
                                                                  const Vector3& point, int* first_column) const {
  const rigid::RigidBody& body = world.bodies[body_index];
  *first_column = first_dof_[body_index];
  if (body.is_free()) {
    // v(x) = v + ω × (x − x_com) = [I, −[x − x_com]×] [v; ω].
    Eigen::Matrix<double, 3, Eigen::Dynamic> jacobian(3, 6);
    const Vector3 arm = point - body.pose.position;
    Matrix3 cross_matrix;
    cross_matrix << 0.0, -arm.z(), arm.y(), arm.z(), 0.0, -arm.x(), -arm.y(), arm.x(), 0.0;
    jacobian.leftCols<3>().setIdentity();
    jacobian.rightCols<3>() = -cross_matrix;
    return jacobian;
  }
  if (body.tree_link >= 0 && tree_first_dof_ >= 0) {
    return world.multibody.PointJacobian(body.tree_link, point);
  }
  return Eigen::Matrix<double, 3, Eigen::Dynamic>(3, 0);
}

Vector3 RigidDofs::PointBiasVelocity(const World& world, int body_index, const Vector3& point, double dt) const {
  const rigid::RigidBody& body = world.bodies[body_index];
  if (body.motion == rigid::BodyMotion::kKinematic && body.trajectory) {
    // Mid-step velocity of the prescribed motion (second-order accurate over the step).
    const rigid::KinematicState state = body.trajectory(world.time + 0.5 * dt);
    return state.linear_velocity + state.angular_velocity.cross(point - state.pose.position);
  }
  if (body.motion == rigid::BodyMotion::kArticulated && body.tree_link >= 0) {
    return world.multibody.PointBiasVelocity(body.tree_link, point);
  }
  return Vector3::Zero();
}

double RigidDofs::MaxFreeMotionSurfaceSpeed(const World& world, double dt) const {
  double fastest = 0.0;
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (body.motion == rigid::BodyMotion::kStatic) continue;
    for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
      if (!body.geometries[g].shape.IsBounded()) continue;
      const Eigen::AlignedBox3d box = body.GeometryBounds(g);
      for (int corner = 0; corner < 8; ++corner) {
        const Vector3 point = box.corner(static_cast<Eigen::AlignedBox3d::CornerType>(corner));
        Vector3 velocity = PointBiasVelocity(world, b, point, dt);
        if (HasDofs(b)) {
          int first_column = -1;
          const Eigen::Matrix<double, 3, Eigen::Dynamic> jacobian = PointJacobian(world, b, point, &first_column);
          velocity += jacobian * free_motion_velocity_.segment(first_column, jacobian.cols());
        }
        fastest = std::max(fastest, velocity.norm());
      }
    }
  }
  return fastest;
}

Matrix3 RigidDofs::PointMobility(int first_column, const Eigen::Matrix<double, 3, Eigen::Dynamic>& jacobian) const {
  if (jacobian.cols() == 0 || first_column < 0) return Matrix3::Zero();
  if (first_column == tree_first_dof_) {
    return jacobian * tree_factorization_.solve(Eigen::MatrixXd(jacobian.transpose()));
  }
  // Free body: A = diag(m I, I_W) is block diagonal; invert the blocks.
  const double inverse_mass = 1.0 / dynamics_matrix_(first_column, first_column);
  const Matrix3 inverse_inertia = dynamics_matrix_.block<3, 3>(first_column + 3, first_column + 3).inverse();
  const Matrix3 angular = jacobian.rightCols<3>();
  return inverse_mass * Matrix3::Identity() + angular * inverse_inertia * angular.transpose();
}

void RigidDofs::Advance(World& world, double dt, const Eigen::VectorXd& generalized_impulse) const {
  const int body_count = static_cast<int>(world.bodies.size());
  for (int b = 0; b < body_count; ++b) {
    rigid::RigidBody& body = world.bodies[b];
    if (body.is_free()) {
      // v⁺ = v* + A⁻¹ Jᵀγ with A = diag(m I, I_W); then the pose with v⁺ (q⁺ = q + Δt N v⁺).
      const int first = first_dof_[b];
      body.linear_velocity =
          free_motion_velocity_.segment<3>(first) + generalized_impulse.segment<3>(first) / body.mass;
      body.angular_velocity = free_motion_velocity_.segment<3>(first + 3) +
                              inverse_world_inertia_[b] * generalized_impulse.segment<3>(first + 3);
      body.pose.position += dt * body.linear_velocity;
      const double angle = body.angular_velocity.norm() * dt;
      if (angle > 0.0) {
        const rigid::Quaternion rotation(Eigen::AngleAxisd(angle, body.angular_velocity.normalized()));
        body.pose.orientation = (rotation * body.pose.orientation).normalized();
      }
    } else if (body.motion == rigid::BodyMotion::kKinematic) {
      rigid::UpdateKinematicBody(body, world.time + dt);
    }
  }
  if (tree_first_dof_ >= 0) {
    const int tree_size = world.multibody.num_velocities();
    world.multibody.Step(dt, world.gravity, generalized_impulse.segment(tree_first_dof_, tree_size));
    SyncArticulatedBodies(world);
  } else if (world.multibody.num_links() > 0) {
    // A tree without degrees of freedom (welded or prescribed links) still moves in time.
    world.multibody.Step(dt, world.gravity, rigid::VectorX::Zero(0));
    SyncArticulatedBodies(world);
  }
}

}  // namespace contactlab::dynamics
