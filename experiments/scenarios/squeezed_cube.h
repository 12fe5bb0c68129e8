#pragma once
// squeezed_cube ([zong2024convex] §VII-E Fig. 6, [yu2025async] §VI-A Fig. 2, spec-sap-qn E5): an elastic
// MPM cube held by friction between two rigid panels, each on a prismatic joint along x and
// pushed toward the cube by a constant force, with gravity along −z. In steady state each
// panel carries the squeeze force normal to its face and half the cube's weight.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo SqueezedCubeInfo();

}  // namespace contactlab::experiments
