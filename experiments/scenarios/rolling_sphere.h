#pragma once
// rolling_sphere ([P] = [ding_schroeder_penalty] Fig. 4, spec-penalty-hybrid §4.2 row plane_sph, §4.7 item
// 5): a solid sphere released at rest touching the static incline of incline_block
// (θ = 6°). Friction alone makes it roll.
//
// Analytic reference (solid sphere, I = 2/5 m R², spec §4.4):
//   rolls without slipping iff μ ≥ 2/7 tan θ (0.0300 at 6°): a = 5/7 g sin θ (0.7324 m/s²),
//   ω = v / R, slip speed 0, static friction 2/7 m g sin θ;
//   otherwise it slips: a = g (sin θ − μ cos θ) (0.9279 m/s² at μ = 0.01), ω̇ = 5 μ g cos θ / (2R),
//   and the slip speed v − ωR grows at g (sin θ − 7/2 μ cos θ).
// [P]'s μ = 0.3 rolls and μ = 0.01 slips, and the slipping sphere is the faster one.
//
// body = rigid (plane_sph) is a free rigid sphere; its contact with the static incline is
// rigid–rigid. body = mpm is an elastic MPM ball (jittered lattice, as in ball_on_slope).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo RollingSphereInfo();

// True when a solid sphere rolls without slipping: μ ≥ 2/7 tan θ.
bool RollingSphereRolls(double friction_coefficient, double slope_angle_rad);
// Acceleration of the centre along ŝ [m/s²]: 5/7 g sin θ rolling, g (sin θ − μ cos θ) slipping.
double RollingSphereAcceleration(double friction_coefficient, double slope_angle_rad, double gravity);
// Spin about n̂ × ŝ of a sphere released at rest [rad/s]: a t / R rolling, 5 μ g cos θ t / (2R) slipping.
double RollingSphereSpin(double time_s, double friction_coefficient, double slope_angle_rad, double gravity,
                         double radius);
// Slip speed v − ωR [m/s]: 0 rolling, g (sin θ − 7/2 μ cos θ) t slipping.
double RollingSphereSlipSpeed(double time_s, double friction_coefficient, double slope_angle_rad, double gravity);

}  // namespace contactlab::experiments
