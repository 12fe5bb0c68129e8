#pragma once
// ball_on_slope ([zong2024convex] §VII-A, spec-sap-qn E1): an elastic MPM ball released at rest
// tangent to a static rigid slope. The centre of mass moves along the slope like a rigid
// ball: slipping when μ ≤ 2/7·tanθ, rolling otherwise.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo BallOnSlopeInfo();

// Analytic displacement along the slope of a rigid ball released at rest [m]
// ([zong2024convex] eq. 27, with the sinθ that the printed rolling branch omits, spec-sap-qn A3):
//   slip (μ ≤ 2/7 tanθ): u = ½ g t² (sinθ − μ cosθ);  roll: u = 5/14 g t² sinθ.
double BallOnSlopeDisplacement(double time_s, double friction_coefficient, double slope_angle_rad, double gravity);
// Spin about the rolling axis n̂ × d̂ [rad/s]: slip ω = 5μg cosθ t/(2r); roll ω = v/r.
double BallOnSlopeSpin(double time_s, double friction_coefficient, double slope_angle_rad, double gravity,
                       double radius);
bool BallOnSlopeRolls(double friction_coefficient, double slope_angle_rad);

}  // namespace contactlab::experiments
