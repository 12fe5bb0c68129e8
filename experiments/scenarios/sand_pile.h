#pragma once
// sand_pile (issue 19's checks for the Drucker–Prager sand, mpm/constitutive/drucker_prager.h):
// a cylinder of sand of radius R₀ and height H₀ released on a rough floor.
//
// Cohesionless sand (cohesion 0) slumps into a pile. A static slope of a cohesionless
// frictional material cannot be steeper than its friction angle φ (the infinite-slope bound
// tan θ ≤ tan φ), and a pile that flows and stops lies at or somewhat below it. The scene
// fits the flank of the final pile (its surface between a quarter and three quarters of the
// peak's height) and reports the slope angle θ against φ; the analytic overlay is the cone
// of angle φ with the same volume.
//
// Cohesive sand stands when the column's weight does not reach the cone anywhere. On a slip
// floor (table_model = slip) the sides and the base are free, so the stress is uniaxial,
// σ_zz = −ρ g (H₀ − z), and the Drucker–Prager cone, matched to Mohr–Coulomb in triaxial
// compression (which contains uniaxial compression), is reached at the unconfined strength
// 2 c cos φ/(1 − sin φ). The column is therefore elastic throughout above the critical
// cohesion
//   c* = ρ g H₀ (1 − sin φ) / (2 cos φ),
// and settles only by ρ g H₀²/(2E) (analytic_elastic_settlement); below c* its lower part
// flows out until the widened base carries the weight, and it settles far more. A sticky
// floor confines the base, which then carries more: the onset moves below c*.
// Summary: the settlement H₀ − H against the elastic one, the cohesion ratio c/c*, and the
// run-out (r∞ − R₀)/R₀ with r∞ the radius inside which 99% of the sand lies.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo SandPileInfo();

}  // namespace contactlab::experiments
