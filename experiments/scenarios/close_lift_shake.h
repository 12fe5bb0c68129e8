#pragma once
// close_lift_shake ([zong2024convex] §VII-E Fig. 7, [yu2025async] §VI-A Fig. 3, spec-sap-qn E6), reduced
// without robot arms: two force-driven panels on a prescribed carrier squeeze a stack
// elastic cube | heavy rigid cube | elastic cube (density ratio 150), lift it and shake it
// along y. The grasp holds when the rigid cube stays within 1 cm of its grasp pose relative
// to the carrier to the end.
//
// support = table starts the stack resting on a static table instead of only in the panels'
// hold (spec E6's alternative): the panels close on it there and lift it off. The rigid cube
// on the table is rigid–rigid contact, which only `penalty` resolves today; the default
// (support = none) needs none.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo CloseLiftShakeInfo();

}  // namespace contactlab::experiments
