#pragma once
// dough_rolling ([zong2024convex] §VII-C, [yu2025async] §VI-B, spec-sap-qn E3), reduced without robot
// arms: a rigid rolling pin flattens an elastoplastic dough block on a table. The pin's axis
// follows a prescribed trajectory (press, roll back, lift, return with a yaw, press, roll
// forward and back deeper); its spin about the axis is a free revolute DoF that only
// friction drives. Measured: spin rate against v/r (slip ratio), contacts and solver
// iterations per step, and the dough's height; wall time per step is in /solver_log.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo DoughRollingInfo();

}  // namespace contactlab::experiments
