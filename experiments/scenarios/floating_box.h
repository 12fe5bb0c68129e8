#pragma once
// floating_box (issue 19's buoyancy check): a rigid box floating in the equation-of-state
// liquid (mpm/constitutive/eos_liquid.h) in a square container. At rest the liquid's pressure
// on the box's bottom carries its weight (Archimedes), so a box of density ρ_b and height b
// floats upright at the draft
//   d = (ρ_b / ρ_l) b.
// The default box is flat (width 2 × its height) so that floating upright is stable at
// ρ_b/ρ_l = 1/2: its metacentric height d/2 + w²/(12 d) − b/2 is positive (a cube at that
// ratio rolls onto an edge). It starts at the analytic draft with the liquid level and the
// liquid at J = 1 around it; the liquid rings and the box heaves, and the draft is averaged
// over [settle_time, duration]. The liquid's compression (1.3% at the bottom of
// hydrostatic_column's default) makes it 0.2% denser at the box's bottom than ρ_l: within
// the tolerance of the check, so the analytic draft uses ρ_l.
//
// The box is a free body the liquid carries through each formulation's own contact; the
// container is a grid wall (sticky by default, as in hydrostatic_column). Contact stops the
// particles' centres at the box, while the liquid's face lies half a particle spacing s
// beyond them: the liquid overlaps the box's bottom by s/2, and a box floating right under
// particle contact sits at d + s/2 (summary analytic_draft_particle_contact). Summary: draft
// against both, the box's tilt and sideways drift, and the liquid particles inside the
// box's volume.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo FloatingBoxInfo();

}  // namespace contactlab::experiments
