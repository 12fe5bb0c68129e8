#pragma once
// wedge ([P] = [ding_schroeder_penalty] Fig. 8, spec-penalty-hybrid §4.2 rows wdg_rm / fall, §4.7 item 7):
// two cubic blocks side by side between two fixed vertical walls, pressed together by a
// slight initial overlap with the walls, with gravity on. With enough friction the pair
// jams and never slides down; with too little it slides.
//
// Force balance (spec §4.4 [O]): the overlap compresses the pair, the walls push back with a
// normal force N, and the pair (total mass M) stays up iff μ (N_left + N_right) ≥ M g; for
// two identical blocks that is μ ≥ μ* = m g / N. The scene measures μ* from the walls' mean
// normal force over the last half of the run. The default squeeze: the walls start
// overlap/2 = 1 mm inside the outermost particle layers (or rigid faces), the one MPM block
// of the default rigid + mpm pair is compressed by ε = overlap / 0.1 m = 2%, so
// N ≈ E ε A = 3e5 Pa · 0.02 · 0.01 m² = 60 N and μ* ≈ 9.81 N / 60 N = 0.16 per block, between
// [P]'s jamming μ = 0.25 and sliding μ = 0.1. Two MPM blocks share the strain (ε = 1%,
// μ* ≈ 0.33): pass overlap = 0.004 for the same squeeze.
//
// left_body / right_body: mpm (elastic MPM cube) or rigid (free rigid box, same density).
// Two MPM blocks share one grid and so form one body (no friction between them); a rigid
// block touches MPM through the formulation's MPM–rigid contact and the walls through
// rigid–static contact (each formulation's rigid–rigid contact).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo WedgeInfo();

// μ* = M g / (N_left + N_right) [-]: the friction coefficient the pair needs to stay up
// (NaN without wall force).
double WedgeFrictionThreshold(double total_mass, double gravity, double total_wall_normal_force);

}  // namespace contactlab::experiments
