#pragma once
// stack ([P] = [ding_schroeder_penalty] Fig. 3 right, spec-penalty-hybrid §4.2 row "stack", §4.4 "stacks and
// pyramids"): cubic blocks stacked on a static ground, each a free rigid box or an elastic
// MPM block, one letter per block of the key `layers` from the ground up ("rmrmr": three
// rigid and two deformable blocks, the mixture of [P]'s figure; [P] does not give the order).
//
// Neighbouring blocks are offset by `stagger` along x (alternately −stagger/2 and +stagger/2),
// so each block loads the one below off-centre: a perfectly aligned stack could not drift
// by symmetry, whatever its friction.
//
// There is no closed form (spec §4.4): the pass criterion is that the stack stands with no
// long-term drift of the top block after settling. The stack counts as standing when no
// block's centre has moved horizontally by more than stand_fraction · block_size from its
// start at any time; the vertical settling (elastic compression of the MPM blocks and contact
// penetration) is reported beside it, not judged.
//
// Placement follows scene_tools.h: a rigid block's bottom face lies on the surface below it
// (the ground, a rigid top face, or an MPM block's top particle layer); an MPM block's lowest
// particle layer lies on a rigid face or the ground, and above another MPM block the lattice
// continues one spacing higher. Two adjacent MPM blocks share the grid and so act as one body
// (MPM has no contact between bodies on one grid).
//
// A rigid block on the ground or on another rigid block is rigid–rigid contact, which every
// formulation resolves in its own way (README, "Rigid–rigid contact").
#include <string>

#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo StackInfo();

}  // namespace contactlab::experiments
