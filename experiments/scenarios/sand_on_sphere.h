#pragma once
// sand_on_sphere ([ding_schroeder_penalty] Fig. 16, "sand_on_sph" of its Table 1, reduced; issue 19): a
// column of Drucker–Prager sand falls onto one side of a free rigid sphere resting on a
// rough floor. [ding_schroeder_penalty] shows the sand pulling the sphere into the column: the sand that
// slides down the sphere's near side drags that side down, the sphere turns and rolls
// toward the sand.
//
// Why the direction depends on the friction. Take the sphere of radius R on the floor, the
// sand arriving on its +x side at polar angle θ from the top, pressing with a normal force N
// and, as it slides down the surface, dragging with a tangential force T ≤ μ N. About the
// floor contact (the point the rolling sphere turns about) the normal force has the moment
// −N R sin θ (toward −x, away from the sand) and the drag T R (1 + cos θ) (toward +x). With
// the sand sliding, T = μ N, and the sand pulls when
//   μ > sin θ / (1 + cos θ) = tan(θ/2).
// The column (half width w/2, axis at x = a) lands on the sphere at polar angles up to
// θ_max = asin((a + w/2)/R); `analytic_pull_friction` = tan(θ_max/2) is the friction above
// which every grain that slides down the landing patch pulls. A frictionless sphere (μ = 0)
// is pushed away. The sand that reaches the floor and piles against the sphere's lower side
// pushes it back, so the sign of the motion is the scene's observable, not a closed-form
// trajectory.
//
// The sphere rolls on the floor through rigid–rigid contact (friction `floor_mu`): rolling
// without slip turns it by x/R for a displacement x, so the summary `rolling_ratio` = R θ_y/x
// is 1 when the floor holds. The floor meets the sand as a sticky grid wall by default (a
// rough base; `table_model`).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo SandOnSphereInfo();

}  // namespace contactlab::experiments
