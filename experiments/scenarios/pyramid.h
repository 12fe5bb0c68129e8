#pragma once
// pyramid ([P] = [ding_schroeder_penalty] Fig. 6, spec-penalty-hybrid §4.2 rows prmd_rm / prmd_rm slip,
// §4.7 item 6): three elastic MPM cubes stand on a static ground around a vertical axis,
// 120° apart with one face toward the axis, and a rigid ball rests on their three inner top
// edges. μ (ground and ball) = 0.3 stands, 0.05 collapses.
//
// There is no closed form (spec §4.4): the pass criteria are no drift of the ball after
// settling, collapse when μ is reduced, and static contacts inside the cone. A statics
// estimate sizes the scene: the ball (mass m_b) touches each edge at a horizontal distance
// r_e (edge_radius) from the axis, a height √(R² − r_e²) below its centre; with frictionless
// edge contacts each block is pushed outward by (m_b g / 3) tan α, tan α = r_e / √(R² − r_e²),
// which ground friction holds iff μ ≥ (m_b/3) tan α / (m_block + m_b/3): 0.21 with the
// defaults (R 0.08 m, r_e 0.05 m, m_b 1.07 kg, m_block 1 kg), so μ = 0.3 holds with
// margin and μ = 0.05 cannot (edge friction μ = 0.05 tilts the edge force by atan μ and
// lowers the demand only to 0.19).
// When the blocks spread by δ the ball drops by √(R² − r_e²) − √(R² − (r_e + δ)²); it falls
// between them after δ = R − r_e = 3 cm.
//
// The ball's contact with the ground (after a collapse) is rigid–static, which only
// `penalty` resolves: under the other formulations a collapsed ball falls through the
// ground, which the summary still reports as a collapse.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo PyramidInfo();

// Ground friction coefficient each block needs when the ball's edge contacts carry no
// friction: (m_b/3) tan α / (m_block + m_b/3), tan α = r_e / √(R² − r_e²) [-].
double PyramidRequiredGroundFriction(double ball_mass, double block_mass, double ball_radius, double edge_radius);
// How far the ball's centre drops [m] when every block moves outward by `spreading` [m]
// from edge radius r_e (the ball still resting on the edges).
double PyramidBallDrop(double ball_radius, double edge_radius, double spreading);

}  // namespace contactlab::experiments
