#pragma once
// column_collapse (issue 19's experimental check for the Drucker–Prager sand,
// mpm/constitutive/drucker_prager.h): a granular column of width d_i and height h_i stands
// against the back wall of a channel and is released at t = 0, the planar collapse of Lube,
// Huppert, Sparks & Freundt [`lube2005collapses`].
//
// The column's front fails along a plane, the grains flow out along the floor and stop. Lube
// et al. measured the run-out (d∞ − d_i)/d_i, with d∞ the deposit's extent from the back
// wall, against the aspect ratio a = h_i/d_i, and fitted two branches to it: about 1.2 a for
// a ≲ 1.8 and about 1.9 a^(2/3) for a ≳ 2.8, with a transition between them. The scene
// reports the run-out against the branch that applies to its a (none in the transition,
// where it gives both), the final height h∞/d_i, and the time to rest.
//
// The flow is planar: a slab two grid cells thick between frictionless side walls
// (column_release.h). The floor is a sticky grid wall by default (table_model): the nodes in
// it hold still, so the lowest grains do not slide, as on the rough bases of such
// experiments, and the flow stops by the sand's internal friction alone. The deposit's
// extent d∞ is the far edge of the sand still attached to the deposit (ConnectedFront:
// grains beyond a gap of two particle spacings are shed), which follows the thin tip a
// mass quantile would cut short: on a deposit tapering linearly to its tip the last 1% of
// the mass spans the last 10% of its length. The farthest particle is reported beside it.
//
// sap and penalty put the sand's return mapping inside the implicit step by default
// (sap.plasticity, penalty.plasticity = auto; dynamics::PlasticityTiming). With it after the
// step the sand is elastic within each step and barely flows.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo ColumnCollapseInfo();

}  // namespace contactlab::experiments
