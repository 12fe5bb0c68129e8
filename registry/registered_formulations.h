#pragma once
// The registry of formulations: the one place that knows every formulation of the project
// (each lives in its own folder and library under formulations/ and knows none of the
// others). Scenarios, the experiment driver and the tests find formulations here by name.
#include <memory>
#include <string_view>
#include <vector>

#include "formulations/formulation.h"

namespace contactlab {

const std::vector<FormulationInfo>& RegisteredFormulations();
// Throws InputError naming the formulation if it is unknown.
const FormulationInfo& FindFormulation(std::string_view name);

struct FormulationConfig {
  std::string name;
  ParameterSet parameters;  // must contain (at least) the formulation's declared keys
};
std::unique_ptr<Formulation> MakeFormulation(const FormulationConfig& config);

}  // namespace contactlab
