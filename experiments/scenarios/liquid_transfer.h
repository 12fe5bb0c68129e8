#pragma once
// liquid_transfer ([zong2024convex] §VII-D, spec-sap-qn E4, issue 19): an equation-of-state liquid
// (mpm/constitutive/eos_liquid.h) carried in a kinematic mug and poured into an open bin,
// reduced without the robot arm and hand of the paper: the mug's motion is prescribed.
//
// The mug is one kinematic body of five boxes (a floor and four walls, 5 mm thick), square
// rather than the spec's round mug, since the rigid shapes have no hollow cylinder; its inner
// width 6 cm equals the spec's inner diameter. Its body frame sits at the centre of the rim,
// the pivot of the pour. The trajectory (quintic steps between keyframes,
// KeyframeTrajectory): lift (0 → lift_time), carry over the bin (→ + carry_time), tilt about
// +y by tilt_deg (→ + tilt_time), then hold. About 100 mL (864 particles at the defaults,
// [zong2024convex] Table I: 791) starts at hydrostatic pressure in the mug. The bin is an open box
// (scene_tools AddSquareContainer) standing on a ground plane; the bin's floor and walls and
// the ground take "table_model".
//
// Measures (the spec's): the fraction of the liquid in the bin, in the mug and spilled
// elsewhere; leakage, as the particles found deeper than h/2 inside any wall of the mug or
// the bin at the end of a step and the deepest penetration; the drift of the mean volume
// ratio J from its start; contacts (the run's solver log has them per step).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo LiquidTransferInfo();

}  // namespace contactlab::experiments
