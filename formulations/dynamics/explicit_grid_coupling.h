#pragma once
// The step of an explicit MPM formulation that couples rigid bodies on the MPM grid, shared by
// `hybrid_impulse` (Han thesis ch. 6: impulses through the bodies' surface samples) and the
// baseline `explicit_projection` (grid velocities projected onto the bodies' geometry, Gu et
// al. 2023). Each substep of δt ≤ cfl · h / (c + v_max) (explicit_stability.h):
//   1. APIC P2G with the explicit MLS stress impulse, gravity: the grid velocities v_i*;
//   2. the rigid free motion v* of the shared integrator (RigidDofs), the predictor every
//      exchange below reads its body velocities from;
//   3. grid walls (grid_boundary.h) and the infinite-mass projection at the nodes inside the
//      bodies the formulation does not exchange through its own path: the nodes of a
//      geometry (φ ≤ 0) lose their approach to the body, and Coulomb friction stops the slip
//      it can (coulomb_collision.h with m̄ = m_i); the body receives the opposite impulse;
//   4. the formulation's own exchange (ExchangeWithBodies), then step 3 again, so that no
//      exchange can push material through a static wall;
//   5. G2P, the deformation update and plasticity; particles that drifted into a grid wall go
//      back to its surface;
//   6. the bodies advance by the impulses they received, with rigid–rigid contact resolved by
//      the convex rigid step (rigid_contact_step.h) with those impulses as external load.
// A formulation chooses which bodies take its own exchange (ExchangesThroughOwnPath) and
// implements it; the rest (the step, its bookkeeping and its report) is here.
#include <string>
#include <vector>

#include "formulations/contact/contact_model.h"
#include "formulations/contact/grid_boundary.h"
#include "formulations/dynamics/rigid_contact_step.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/formulation.h"
#include "mpm/sparse_grid.h"

namespace contactlab::dynamics {

// The options of the explicit substep loop and of its rigid step, under the keys
// `<prefix>.cfl` and `<prefix>.max_substeps` and the SAP cone's contact.* keys.
struct ExplicitCouplingOptions {
  // Substep Δt_s ≤ cfl · h / (c + v_max), with c the largest dilatational wave speed and
  // v_max the largest particle or rigid-surface speed [-]. 0.3 is the thesis' ch. 5 value
  // and keeps explicit MLS-MPM with quadratic B-splines stable.
  double cfl = 0.3;
  // Upper bound on substeps per step; exceeding it means the state has blown up.
  int max_substeps = 200000;
  // Restitution e of the infinite-mass projection at the nodes inside bodies [-]; 0 stops
  // the approach (spec-penalty-hybrid E2).
  double restitution = 0.0;
  // The convex rigid step that resolves rigid–rigid contact after each substep's exchange:
  // SAP's cone with the contact.* constants it has, and the SAP solver's default options.
  contact::ContactModelParameters contact;
  solvers::SapSolverOptions rigid_solver;

  // The specs of `<prefix>.cfl`, `<prefix>.max_substeps` and the SAP cone's contact.* keys.
  static std::vector<ParameterSpec> Specs(const std::string& prefix);
  static ExplicitCouplingOptions FromParameters(const ParameterSet& parameters, const std::string& prefix);
};

class ExplicitGridCoupling : public Formulation {
 public:
  // Linear impulse [N s] and angular impulse about the body's centre of mass [N m s] that
  // MPM material gave a body.
  struct BodyImpulse {
    mpm::Vector3 linear = mpm::Vector3::Zero();
    mpm::Vector3 angular = mpm::Vector3::Zero();
  };
  // Velocity of a body's centre of mass and its angular velocity after the rigid free motion
  // of a substep (the predictor, step 2); a kinematic body's prescribed velocity; zero for a
  // static body.
  struct PredictedMotion {
    mpm::Vector3 linear = mpm::Vector3::Zero();
    mpm::Vector3 angular = mpm::Vector3::Zero();
    mpm::Vector3 PointVelocity(const mpm::Vector3& center, const mpm::Vector3& point) const {
      return linear + angular.cross(point - center);
    }
  };

 protected:
  explicit ExplicitGridCoupling(ExplicitCouplingOptions options);

  StepReport AdvanceState(World& world, double dt) final;
  // Nothing: each step starts from the world alone (grids, samples and rigid contact
  // features are rebuilt or built again on first use from what Build made).
  void VisitState(StateArchive&, const World&) override {}

  // Called once, before the first substep, with the grid already made.
  virtual void Prepare(const World& /*world*/) {}
  // Whether `body` takes the formulation's own exchange (step 4) instead of the
  // infinite-mass projection (step 3). Grid walls never do.
  virtual bool ExchangesThroughOwnPath(const rigid::RigidBody& body) const = 0;
  // Step 4: exchanges impulses between the grid velocities (grid()) and the bodies that take
  // the formulation's own path, adding what each body received to `impulses`.
  virtual void ExchangeWithBodies(const World& world, const std::vector<PredictedMotion>& predicted,
                                  std::vector<BodyImpulse>& impulses) = 0;

  // The infinite-mass projection (step 3) at the nodes inside the geometries of `bodies`
  // (world indices): a node with mass at φ ≤ 0 loses its approach to the body's predicted
  // velocity there and, by Coulomb friction, the slip it can; the body receives the opposite
  // impulse, added to `impulses`.
  void ProjectNodesInsideBodies(const World& world, const std::vector<PredictedMotion>& predicted,
                                const std::vector<int>& bodies, std::vector<BodyImpulse>& impulses);

  mpm::SparseGrid& grid() { return grid_; }
  const RigidDofs& rigid_dofs() const { return rigid_dofs_; }
  const ExplicitCouplingOptions& coupling_options() const { return options_; }

 private:
  void Substep(World& world, double dt, double step_dt, std::vector<BodyImpulse>& impulses, StepReport& rigid_report,
               Timings& timings);
  std::vector<PredictedMotion> PredictRigidMotion(const World& world) const;
  // Step 3: grid walls and the projection at nodes inside the other bodies (`wall_nodes`:
  // the grid-boundary nodes of this substep's grid, empty without grid-boundary bodies).
  void ApplyInfiniteMassBoundaries(const World& world, const std::vector<PredictedMotion>& predicted,
                                   const std::vector<contact::GridBoundaryNode>& wall_nodes,
                                   std::vector<BodyImpulse>& impulses);
  void AdvanceRigidBodies(World& world, double dt, double step_dt, const std::vector<BodyImpulse>& impulses,
                          StepReport& rigid_report);

  ExplicitCouplingOptions options_;
  std::unique_ptr<contact::ContactModel> contact_model_;
  // The rigid integrator every formulation shares (free motion v*, A, and the advance).
  RigidDofs rigid_dofs_;
  RigidContacts rigid_contacts_;
  mpm::SparseGrid grid_;
  bool prepared_ = false;
  int grid_boundary_nodes_ = 0;  // grid-boundary nodes, largest over the step's substeps
};

}  // namespace contactlab::dynamics
