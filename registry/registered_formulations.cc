#include "registry/registered_formulations.h"

#include <string>

#include "formulations/explicit_projection/explicit_projection.h"
#include "formulations/hybrid_impulse/hybrid_impulse.h"
#include "formulations/penalty/penalty_formulation.h"
#include "formulations/quasi_newton/quasi_newton_formulation.h"
#include "formulations/sap/sap_formulation.h"

namespace contactlab {

const std::vector<FormulationInfo>& RegisteredFormulations() {
  // Every formulation of the project, in the order `contactlab list` prints them: the four
  // compared methods, then the baseline the seeds compare them against.
  static const std::vector<FormulationInfo> registry = {
      hybrid_impulse::HybridImpulseInfo(),
      sap::SapInfo(),
      quasi_newton::QuasiNewtonInfo(),
      penalty::PenaltyInfo(),
      explicit_projection::ExplicitProjectionInfo(),
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

std::unique_ptr<Formulation> MakeFormulation(const FormulationConfig& config) {
  return FindFormulation(config.name).factory(config.parameters);
}

}  // namespace contactlab
