#pragma once
// dam_break (issue 19's experimental check for the equation-of-state liquid,
// mpm/constitutive/eos_liquid.h): a liquid column of width a and height 2a stands against the
// back wall of a channel and is released at t = 0, the collapse that Martin & Moyce filmed
// [`martin1952collapse`] for their square-based (n² = 2) columns.
//
// The column falls and a surge runs along the floor. Martin & Moyce plot its leading edge in
// the variables Z = x/a and T = t √(2g/a), in which columns of every size fall on one curve;
// the scene carries their n² = 2 points (as tabulated again by Koshizuka & Oka
// [`koshizuka1996moving`], who used them to check their particle method) as the
// /analytic/front_position overlay, in metres and seconds for the scene's a and g. Their
// surge reaches Z = 4.11 at T = 3.33; its speed there, about 1.35 in these variables, is below
// the 2 √(g 2a) (dZ/dT = 2) of the frictionless shallow-water (Ritter) solution, a limit no
// flow of finite depth reaches.
//
// The flow is planar: a slab two grid cells thick between frictionless side walls
// (column_release.h), which costs a 3D run of the same resolution a fraction of its particles.
// The front is the far edge of the liquid still attached to the column (ConnectedFront:
// particles beyond a gap of two particle spacings are spray), with the farthest particle as a
// second series. Summary: the mean and largest relative error of Z at the data's T (the
// simulated curve interpolated), the front speed dZ/dT fitted over the data's range for both,
// and the time the front reaches the end wall.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo DamBreakInfo();

}  // namespace contactlab::experiments
