#pragma once
// The rigid degrees of freedom every formulation advances (the rigid half of SAP's unknowns,
// spec-sap-qn §1.3.5): every rigid degree of freedom that responds to contact, in one
// velocity vector —
//   six per free body, [v of the centre of mass; ω], both in world,
//   then the generalized velocities of the multibody tree —
// with the linearized dynamics A_rigid (mass matrices plus implicit PD terms) and the
// free-motion velocities v*_rigid of one step. Static and kinematic bodies have no degrees
// of freedom: their (prescribed) velocity enters contacts as a bias.
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "formulations/world.h"

namespace contactlab::dynamics {

using mpm::Matrix3;
using mpm::Vector3;

class RigidDofs {
 public:
  // Free-motion velocities and A_rigid for a step of dt from the world at tⁿ:
  //   free body  v* = v + Δt (g + f/m),  ω* = ω + Δt I_W⁻¹ (τ − ω × I_W ω),  A = diag(m I, I_W);
  //   tree       (v*, A) = MultibodyTree::LinearizeStep (A = M + Δt D + Δt² K).
  void Setup(World& world, double dt);

  int size() const { return size_; }
  const Eigen::MatrixXd& dynamics_matrix() const { return dynamics_matrix_; }
  const Eigen::VectorXd& free_motion_velocity() const { return free_motion_velocity_; }
  // vⁿ of the same unknowns at the start of the step (a Newton warm start).
  const Eigen::VectorXd& current_velocity() const { return current_velocity_; }

  // True when contacts with `body` involve rigid unknowns.
  bool HasDofs(int body) const { return first_dof_[body] >= 0; }
  // World velocity of the material point of `body` at `point` as J v_rigid: returns the
  // 3 × width Jacobian and the first rigid unknown it acts on.
  Eigen::Matrix<double, 3, Eigen::Dynamic> PointJacobian(const World& world, int body, const Vector3& point,
                                                         int* first_column) const;
  // World velocity of that point not produced by rigid unknowns: the prescribed motion of a
  // kinematic body over the step (its trajectory at tⁿ + Δt/2), or of prescribed tree joints.
  Vector3 PointBiasVelocity(const World& world, int body, const Vector3& point, double dt) const;
  // The fastest point of any body's bounded geometry (the corners of its bounding boxes)
  // under the free-motion velocities v* (and prescribed motion) of the step [m/s]: how far
  // rigid surfaces can travel toward material in one step, per unit time.
  double MaxFreeMotionSurfaceSpeed(const World& world, double dt) const;
  // The rigid part of the Delassus operator J A⁻¹ Jᵀ for a world-frame point Jacobian.
  Matrix3 PointMobility(int first_column, const Eigen::Matrix<double, 3, Eigen::Dynamic>& jacobian) const;

  // Ends the step: v⁺ = v* + A⁻¹ (generalized contact impulse), positions by
  // q⁺ = q + Δt N(q) v⁺; kinematic bodies move to tⁿ + Δt; tree links are re-mirrored.
  void Advance(World& world, double dt, const Eigen::VectorXd& generalized_impulse) const;

 private:
  int size_ = 0;
  int tree_first_dof_ = -1;
  std::vector<int> first_dof_;  // per world body, −1 without unknowns
  Eigen::MatrixXd dynamics_matrix_;
  Eigen::VectorXd free_motion_velocity_;
  Eigen::VectorXd current_velocity_;
  std::vector<Matrix3> inverse_world_inertia_;  // per free body (others unused)
  Eigen::LDLT<Eigen::MatrixXd> tree_factorization_;
};

}  // namespace contactlab::dynamics
