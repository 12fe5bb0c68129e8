#pragma once
// Rigid–rigid contact as SAP constraints over the rigid unknowns, shared by every
// formulation that resolves it through a convex problem:
//   sap             appends the constraints to its one problem over [v_rigid; v_MPM]
//                   ([zong2024convex]: rigid and grid DoFs in the same SAP solve);
//   quasi_newton    the rigid step of eq. 3 ([yu2025async]) becomes the convex problem
//                   min ½‖v − v*‖²_A − vᵀ p_MPM + Σ ℓ_c(J v + b) over the rigid DoFs, with
//                   p_MPM the MPM impulse accumulated over the substeps;
//   hybrid_impulse  the same rigid step after each substep's impulse exchange (the thesis
//                   leaves rigid–rigid contact open; README states the choice).
// A constraint's velocity is v_c = R_CW (J_A v + b_A − J_B v − b_B) for a point of body A
// touching body B (rigid_contacts.h for the signs): A's block is +R_CW J_A, B's −R_CW J_B.
#include <vector>

#include <Eigen/Core>

#include "formulations/contact/contact_model.h"
#include "formulations/contact/rigid_contacts.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/formulation.h"
#include "formulations/solvers/sap_solver.h"

namespace contactlab::dynamics {

// The smallest gap margin of rigid contacts, as a fraction of h [-].
inline constexpr double kMinimumRigidContactMargin = 0.05;

// The gap within which rigid points become contacts for a step of dt [m]:
// max(0.05 h, 2 Δt v_r), v_r the fastest rigid surface point under the step's free motion,
// so that two surfaces closing at up to 2 v_r are caught a step before they would cross.
double RigidContactMargin(const World& world, const RigidDofs& rigid, double dt);

// The contact model of the convex rigid step: SAP's regularized cone ("sap_cone") with the
// run's other contact.* constants, whatever model the MPM contacts use. The lagged model
// bounds friction by the normal impulse at the start of the step, which is zero for a body
// placed exactly on a surface, so its first step slides frictionless (measured on
// incline_block body = rigid: +g sinθ Δt of extra speed and a 7% late stop at Δt 5 ms).
contact::ContactModelParameters RigidStepContactParameters(contact::ContactModelParameters parameters);

// The rigid contacts of a world and their constraints for one step.
class RigidContacts {
 public:
  // Detects the contacts of `world` within `margin` [m] (features built on first use, points
  // every h along box edges; rigid_contacts.h) and prepares one constraint per contact with
  // `model`: exact Delassus scale w = tr(W_A + W_B)/3 (the two bodies' dynamics are
  // decoupled in A), penetration and normal velocity at detection.
  void Detect(const World& world, const RigidDofs& rigid, const contact::ContactModel& model, double margin, double dt);

  bool empty() const { return contacts_.empty(); }
  int size() const { return static_cast<int>(contacts_.size()); }
  const std::vector<contact::RigidContact>& contacts() const { return contacts_; }
  // Constraints over the rigid unknowns numbered as in RigidDofs (columns from 0).
  const std::vector<solvers::SapConstraint>& constraints() const { return constraints_; }

  // Jᵀγ over the rigid unknowns for impulses γ (one per contact, contact frame).
  Eigen::VectorXd GeneralizedImpulse(int rigid_size, const std::vector<Vector3>& impulses) const;
  // Books the impulses into a step report: each touched body B gets −R_WC γ at the point,
  // each touching body A +R_WC γ (as step-mean wrenches about the bodies' centres of mass),
  // and one ContactForce per contact (force R_WC γ/Δt on A's point, other_body = A).
  void Record(const World& world, const std::vector<Vector3>& impulses, double dt, StepReport& report) const;

 private:
  std::unique_ptr<contact::RigidContactFeatures> features_;
  std::vector<contact::RigidContact> contacts_;
  std::vector<solvers::SapConstraint> constraints_;
};

struct RigidContactStepResult {
  Eigen::VectorXd contact_impulse;   // Jᵀγ [rigid generalized impulse]
  std::vector<Vector3> impulses;     // γ per contact, contact frame [N s]
  solvers::SapSolverResults solver;  // kNothingToSolve (no iterations) without contacts
};

// The convex rigid step: velocities v minimizing ½‖v − v*‖²_A − vᵀ p + Σ ℓ_c(J_c v + b_c),
// i.e. SAP over the rigid unknowns with free motion v* + A⁻¹ p, for an external generalized
// impulse p (the MPM contact impulse). Returns Jᵀγ; the caller advances the bodies with
// RigidDofs::Advance(p + Jᵀγ).
RigidContactStepResult SolveRigidContactStep(const RigidDofs& rigid, const RigidContacts& contacts,
                                             const Eigen::VectorXd& external_impulse,
                                             const contact::ContactModel& model,
                                             const solvers::SapSolverOptions& options);

}  // namespace contactlab::dynamics
