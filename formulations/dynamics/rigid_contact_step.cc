#include "formulations/dynamics/rigid_contact_step.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <Eigen/Cholesky>

namespace contactlab::dynamics {

double RigidContactMargin(const World& world, const RigidDofs& rigid, double dt) {
  return std::max(kMinimumRigidContactMargin * world.grid_spacing,
                  2.0 * dt * rigid.MaxFreeMotionSurfaceSpeed(world, dt));
}

contact::ContactModelParameters RigidStepContactParameters(contact::ContactModelParameters parameters) {
  parameters.model = contact::ContactModelKind::kSapCone;
  return parameters;
}

void RigidContacts::Detect(const World& world, const RigidDofs& rigid, const contact::ContactModel& model,
                           double margin, double dt) {
  if (!(world.grid_spacing > 0.0)) {
    throw std::invalid_argument(
        "rigid contacts: the world's grid spacing sets the contact point spacing and must be positive");
  }
  if (features_ == nullptr || features_->spacing() != world.grid_spacing) {
    features_ = std::make_unique<contact::RigidContactFeatures>(world.bodies, world.grid_spacing);
  }
  contacts_ = contact::DetectRigidContacts(world.bodies, *features_, margin);
  constraints_.assign(contacts_.size(), solvers::SapConstraint{});
  for (std::size_t c = 0; c < contacts_.size(); ++c) {
    const contact::RigidContact& point = contacts_[c];
    const Matrix3 world_to_contact = point.frame.transpose();  // R_CW
    solvers::SapConstraint& constraint = constraints_[c];
    Matrix3 mobility = Matrix3::Zero();
    Vector3 bias = Vector3::Zero();
    // A (sign +1) and B (sign −1).
    for (const auto& [body, sign] : {std::pair{point.other_body, 1.0}, std::pair{point.body, -1.0}}) {
      bias += sign * rigid.PointBiasVelocity(world, body, point.position, dt);
      if (!rigid.HasDofs(body)) continue;
      int first_column = -1;
      const Eigen::Matrix<double, 3, Eigen::Dynamic> jacobian =
          rigid.PointJacobian(world, body, point.position, &first_column);
      if (jacobian.cols() == 0) continue;
      constraint.jacobian.push_back({first_column, sign * world_to_contact * jacobian});
      mobility += rigid.PointMobility(first_column, jacobian);
    }
    constraint.bias = world_to_contact * bias;
    contact::ContactPointState state;
    state.penetration = point.penetration;
    state.previous_normal_velocity = point.relative_velocity.z();
    state.friction_coefficient = point.friction_coefficient;
    state.delassus_scale = mobility.trace() / 3.0;
    constraint.contact = model.Prepare(state, dt);
  }
}

Eigen::VectorXd RigidContacts::GeneralizedImpulse(int rigid_size, const std::vector<Vector3>& impulses) const {
  Eigen::VectorXd result = Eigen::VectorXd::Zero(rigid_size);
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    for (const solvers::JacobianBlock& block : constraints_[c].jacobian) {
      result.segment(block.column, block.matrix.cols()) += block.matrix.transpose() * impulses[c];
    }
  }
  return result;
}

void RigidContacts::Record(const World& world, const std::vector<Vector3>& impulses, double dt,
                           StepReport& report) const {
  if (report.contact_wrench.size() != world.bodies.size()) report.contact_wrench = ZeroWrenches(world);
  for (std::size_t c = 0; c < contacts_.size(); ++c) {
    const contact::RigidContact& point = contacts_[c];
    const Vector3 impulse_on_touching = point.frame * impulses[c];  // R_WC γ on A
    for (const auto& [body, impulse] :
         {std::pair{point.other_body, impulse_on_touching}, std::pair{point.body, Vector3(-impulse_on_touching)}}) {
      BodyWrench& wrench = report.contact_wrench[body];
      wrench.force += impulse / dt;
      wrench.torque += (point.position - world.bodies[body].pose.position).cross(impulse) / dt;
    }
    ContactForce force{point.body,         point.geometry,           point.position,
                       point.frame.col(2), impulse_on_touching / dt, point.friction_coefficient};
    force.other_body = point.other_body;
    force.other_point = point.position;
    report.contact_forces.push_back(force);
  }
}

RigidContactStepResult SolveRigidContactStep(const RigidDofs& rigid, const RigidContacts& contacts,
                                             const Eigen::VectorXd& external_impulse,
                                             const contact::ContactModel& model,
                                             const solvers::SapSolverOptions& options) {
  const int size = rigid.size();
  RigidContactStepResult result;
  result.contact_impulse = Eigen::VectorXd::Zero(size);
  if (contacts.empty() || size == 0) {
    result.impulses.assign(contacts.size(), Vector3::Zero());
    result.solver.summary.Stop(solvers::Termination::kNothingToSolve, "no rigid contacts: v = v* + A^-1 p");
    return result;
  }
  solvers::SapProblem problem;
  problem.model = &model;
  problem.constraints = contacts.constraints();
  // v* + A⁻¹ p: the external impulse moves the free motion the contacts start from.
  problem.free_motion_velocity = rigid.free_motion_velocity() + rigid.dynamics_matrix().llt().solve(external_impulse);
  solvers::DenseSapLinearSystem system(rigid.dynamics_matrix());
  result.solver = solvers::SolveSap(problem, system, problem.free_motion_velocity, options);
  result.impulses = result.solver.impulses;
  result.contact_impulse = contacts.GeneralizedImpulse(size, result.impulses);
  return result;
}

}  // namespace contactlab::dynamics
