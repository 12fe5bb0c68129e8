#include "formulations/formulation.h"

#include <algorithm>

#include "formulations/hybrid_impulse/hybrid_impulse.h"
#include "formulations/penalty/penalty_formulation.h"
#include "formulations/quasi_newton/quasi_newton_formulation.h"
#include "formulations/sap/sap_formulation.h"

namespace contactlab {

const std::vector<FormulationInfo>& RegisteredFormulations() {
  // Every formulation of the project, in the order `contactlab list` prints them.
  static const std::vector<FormulationInfo> registry = {
      hybrid_impulse::HybridImpulseInfo(),
      sap::SapInfo(),
      quasi_newton::QuasiNewtonInfo(),
      penalty::PenaltyInfo(),
  };
  return registry;
}

const FormulationInfo& FindFormulation(std::string_view name) {
  for (const FormulationInfo& info : RegisteredFormulations()) {
    if (info.name == name) return info;
  }
  std::string known;
  for (const FormulationInfo& info : RegisteredFormulations()) known += " " + info.name;
  throw InputError("unknown formulation '" + std::string(name) + "' (known:" + known + ")");
}

std::vector<BodyWrench> ZeroWrenches(const World& world) {
  std::vector<BodyWrench> wrenches(world.bodies.size());
  for (std::size_t b = 0; b < world.bodies.size(); ++b) wrenches[b].moment_point = world.bodies[b].pose.position;
  return wrenches;
}

void UsedParameterTracker::Observe(double value) {
  if (!observed_) {
    used_.value = used_.smallest = value;
    observed_ = true;
    return;
  }
  used_.value = std::max(used_.value, value);
  used_.smallest = std::min(used_.smallest, value);
}

std::unique_ptr<Formulation> MakeFormulation(const FormulationConfig& config) {
  return FindFormulation(config.name).factory(config.parameters);
}

}  // namespace contactlab
