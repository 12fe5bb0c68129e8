#pragma once
// incline_block ([P] = [ding_schroeder_penalty] Figs. 3 and 13, spec-penalty-hybrid §4.2 rows plane_m /
// plane_r, §4.7 items 1–2): a cubic block resting on a static incline of angle θ, launched
// down the slope at v₀ (0.1 m/s in [P]). It starts in resting contact with v₀ already
// imposed, which excludes the drop-and-settle phase of [P] Fig. 13 (spec §4.4).
//
// Analytic reference (point mass, one Coulomb coefficient μ, spec §4.4):
//   N = m g cos θ; while sliding a = g (sin θ − μ cos θ), v = v₀ + a t, s = v₀ t + ½ a t²,
//   and the friction force is μ N (F_t / F_n = μ, on the cone).
//   If a < 0 the block stops at t_s = v₀ / (g (μ cos θ − sin θ)) after
//   s_s = v₀² / (2 g (μ cos θ − sin θ)) and then stays static with F_t = m g sin θ
//   (F_t / F_n = tan θ < μ, inside the cone). θ = 6° (spec A14, the middle of the
//   [5.71°, 7.13°) that [P]'s "μ = 0.1 slides, μ = 0.125 stops" implies): μ = 0.1 slides on
//   at a = +0.0498 m/s²; μ = 0.125 stops at t_s = 0.5152 s after s_s = 0.02576 m.
//
// body = mpm is an elastic MPM block (plane_m, 1.3k particles by default); body = rigid
// is a free rigid box (plane_r), whose contact with the static incline is rigid–rigid.
#include <optional>

#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo InclineBlockInfo();

// a = g (sin θ − μ cos θ) [m/s²], the sliding acceleration along ŝ (negative: decelerating).
double InclineBlockAcceleration(double friction_coefficient, double slope_angle_rad, double gravity);
// The stop time t_s [s] when the block decelerates (μ > tan θ), else none.
std::optional<double> InclineBlockStopTime(double initial_speed, double friction_coefficient, double slope_angle_rad,
                                           double gravity);
// Speed along ŝ [m/s]: v₀ + a t while sliding, 0 after t_s.
double InclineBlockSpeed(double time_s, double initial_speed, double friction_coefficient, double slope_angle_rad,
                         double gravity);
// Displacement along ŝ [m]: v₀ t + ½ a t² while sliding, s_s after t_s.
double InclineBlockDisplacement(double time_s, double initial_speed, double friction_coefficient,
                                double slope_angle_rad, double gravity);

}  // namespace contactlab::experiments
