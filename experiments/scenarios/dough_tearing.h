#pragma once
// dough_tearing ([zong2024convex] §VII-B Fig. 4 and Table I; spec-sap-qn E2, reduced without robot
// arms): an elastoplastic dough slab (linear corotated with von Mises plasticity, [zong2024convex]
// eq. 21–26) lies on a table. Two grippers, each two parallel finger boxes, close on its two
// ends, lift it, pull apart along its long axis, lower it and open. The dough separates into
// two pieces when its neck yields and thins below the grid's resolution; MPM has no crack
// model, so the separation is where the particles of the neck stop sharing grid nodes.
//
// The fingers follow keyframed trajectories (smooth quintic steps, scene_tools.h). With
// finger_drive = kinematic (spec E2 variant K) they are kinematic bodies that move exactly on
// them. With finger_drive = pd (variant PD) each finger is a free 0.2 kg body on three
// prismatic joints in series (x, z, then y) whose PD drives track the same trajectories,
// folded implicitly into the step (spec-sap-qn §1.3.5), with its weight compensated on the
// z joint: the grip force is then whatever the drive pushes, and the finger yields when the
// dough resists.
//
// Measures (spec E2): the connected particle components at every step, two particles
// joined when closer than 1.5 particle spacings, and the pieces among them (components
// holding at least piece_min_fraction of the dough's mass); the separation time (first step
// with two pieces); the equivalent plastic strain √(2/3) ‖dev log V^P‖ of F^P = R^P V^P
// (mean and max); the finger tracking error of the PD variant; contacts per step ([zong2024convex]
// Table I: 113.7 on average, 306 at most) and outer iterations. No closed form exists.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo DoughTearingInfo();

}  // namespace contactlab::experiments
