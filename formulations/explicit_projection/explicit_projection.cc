#include "formulations/explicit_projection/explicit_projection.h"

#include <memory>

namespace contactlab::explicit_projection {

std::vector<ParameterSpec> ExplicitProjectionOptions::Specs() {
  return dynamics::ExplicitCouplingOptions::Specs("explicit_projection");
}

ExplicitProjectionOptions ExplicitProjectionOptions::FromParameters(const ParameterSet& parameters) {
  ExplicitProjectionOptions options;
  options.coupling = dynamics::ExplicitCouplingOptions::FromParameters(parameters, "explicit_projection");
  return options;
}

ExplicitProjectionFormulation::ExplicitProjectionFormulation(ExplicitProjectionOptions options)
    : ExplicitGridCoupling(options.coupling) {}

bool ExplicitProjectionFormulation::ExchangesThroughOwnPath(const rigid::RigidBody& body) const {
  return body.has_finite_mass() || body.motion == rigid::BodyMotion::kKinematic;
}

void ExplicitProjectionFormulation::ExchangeWithBodies(const World& world,
                                                       const std::vector<PredictedMotion>& predicted,
                                                       std::vector<BodyImpulse>& impulses) {
  std::vector<int> moving;
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    if (!world.bodies[b].is_grid_boundary() && ExchangesThroughOwnPath(world.bodies[b])) moving.push_back(b);
  }
  ProjectNodesInsideBodies(world, predicted, moving, impulses);
}

namespace {
std::unique_ptr<Formulation> MakeExplicitProjection(const ParameterSet& parameters) {
  return std::make_unique<ExplicitProjectionFormulation>(ExplicitProjectionOptions::FromParameters(parameters));
}
}  // namespace

FormulationInfo ExplicitProjectionInfo() {
  return FormulationInfo{
      "explicit_projection",
      "baseline, not a compared method: explicit MPM, grid velocities projected onto rigid geometry with Coulomb "
      "friction, the opposite impulse to the bodies (ManiSkill2, Gu et al. 2023)",
      ExplicitProjectionOptions::Specs(), &MakeExplicitProjection};
}

}  // namespace contactlab::explicit_projection
