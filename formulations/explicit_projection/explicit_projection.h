#pragma once
// explicit_projection: the baseline the seeds compare against, not one of the four compared
// methods. [zong2024convex] §VII-E (Fig. 6, 7) and [yu2025async] §VI-A (Fig. 2) run ManiSkill2's coupling
// [gu2023maniskill2], which [zong2024convex] describes as an explicit exchange of contact impulses in
// every step, the MPM advancing in explicit substeps within the rigid step. Genesis [genesis2024] ships a coupling of
// this kind too (not checked against its code here). In the terms of this project:
//   explicit MLS-MPM substeps (δt ≤ cfl · h / (c + v_max)) on one grid;
//   at every node with mass inside a rigid geometry (φ(x_i) ≤ 0), the node's velocity
//   relative to the body's velocity there is projected: its approach along the geometry's
//   outward normal is removed and Coulomb friction removes the slip it can
//   (contact/coulomb_collision.h with the body of infinite mass, m̄ = m_i);
//   the body receives the opposite of the momentum the nodes lost, as force and torque about
//   its centre of mass, and moves by it with the shared rigid integrator; rigid–rigid
//   contact is the convex rigid step (dynamics/rigid_contact_step.h).
// The projection does not see the body's inertia: a node pressed by a light body or pressing
// on one is stopped as if by an immovable wall, and the body receives the whole momentum the
// node lost in that substep. Where the body should rest in stiction the impulses alternate
// in sign from substep to substep, which is the oscillation [zong2024convex] Fig. 6 shows. Static
// bodies take the same projection (the shared step does them before and after the moving
// ones); bodies chosen as grid walls keep their wall condition (contact/grid_boundary.h).
// The substep loop, the walls and the rigid step are the ones hybrid_impulse uses
// (dynamics/explicit_grid_coupling.h).
#include <string>
#include <vector>

#include "formulations/dynamics/explicit_grid_coupling.h"
#include "formulations/formulation.h"

namespace contactlab::explicit_projection {

struct ExplicitProjectionOptions {
  // explicit_projection.cfl, explicit_projection.max_substeps and the rigid step's contact.*
  // keys; the projection is inelastic (restitution 0).
  dynamics::ExplicitCouplingOptions coupling;

  static std::vector<ParameterSpec> Specs();
  static ExplicitProjectionOptions FromParameters(const ParameterSet& parameters);
};

class ExplicitProjectionFormulation final : public dynamics::ExplicitGridCoupling {
 public:
  explicit ExplicitProjectionFormulation(ExplicitProjectionOptions options);
  std::string_view name() const override { return "explicit_projection"; }

 protected:
  // Moving bodies (free, links of the tree, kinematic) take the projection here, between the
  // shared step's two passes over the static ones.
  bool ExchangesThroughOwnPath(const rigid::RigidBody& body) const override;
  void ExchangeWithBodies(const World& world, const std::vector<PredictedMotion>& predicted,
                          std::vector<BodyImpulse>& impulses) override;
};

FormulationInfo ExplicitProjectionInfo();

}  // namespace contactlab::explicit_projection
