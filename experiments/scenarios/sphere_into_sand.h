#pragma once
// sphere_into_sand ([ding_schroeder_penalty] Fig. 14, "sandbox_sph", reduced to the sphere alone: no robot):
// a heavy rigid sphere drops onto a flat bed of Drucker–Prager sand held in a square
// container and buries itself in it.
//
// Reference: the impact experiments of Uehara, Ambroso, Ojha & Durian [`uehara2003impact`],
// who dropped spheres of many densities and sizes from many heights into loose, dry granular
// beds and found that the depth at which the sphere comes to rest (measured from the bed's
// undisturbed surface to the sphere's bottom) follows
//   d = (0.14 / μ_r) (ρ_b / ρ_g)^{1/2} D^{2/3} H^{1/3},
// with μ_r = tan θ_r the tangent of the medium's angle of repose, ρ_b the sphere's density,
// ρ_g the bed's bulk density, D the sphere's diameter and H = h + d the whole distance the
// sphere's bottom fell (h in free fall above the surface, then d inside the bed). The repose
// angle of a cohesionless Drucker–Prager pile is its friction angle φ (sand_pile measures the
// flank at φ), so μ_r = tan φ here. Since H contains d, the law is the fixed point
// d = c (h + d)^{1/3}, c = (0.14/μ_r)(ρ_b/ρ_g)^{1/2} D^{2/3}; the scene solves it by iteration
// (analytic_penetration: 43 mm at the defaults).
//
// The sphere is a free rigid body that every formulation couples to the sand through its own
// contact; the container is a grid wall (sticky by default) or a set of contact bodies. To
// spare the simulated free fall, the sphere starts one grid cell above the sand's surface,
// moving down at the speed it would have after falling from drop_height.
//
// Measured: the penetration (the surface level at t = 0 minus the sphere's lowest point) at
// the end against Uehara's depth, its largest value, the impact speed (where the sphere's
// bottom crosses the surface level), the time after which the sphere stays at rest, and, as
// series, the sphere's height, velocity and the contact force the sand exerts on it. Particle
// contact stops the sphere at the particles' centres, half a particle spacing below the
// material's face, so the measured penetration contains up to that offset
// (particle_contact_offset).
//
// What the runs gave (quasi_newton, defaults): the sphere crosses the surface at the free-fall
// speed, is deepest (24 mm) after 35 ms, springs back a little from the soft elastic bed and
// then rings on it at about 20 Hz, still at 0.04 m/s after 0.25 s (rest_time NaN); final
// penetration 21.7 mm, half of Uehara's 42.9 mm. It grows with resolution (17.7 mm at
// grid_spacing 0.02 m, 26.1 mm at 0.005 m) and falls with a stiffer bed (10.7 mm at 10 E,
// 0.02 m), and slip walls let the sphere sink a third deeper than sticky ones: the continuum
// bed resists more than the loose, freshly poured beds of the experiment, and the reduced
// box confines it. hybrid_impulse brakes the sphere before it reaches the surface (impact
// 1.03 m/s instead of 1.40 m/s: its grid coupling reaches across the starting gap), stops it
// at 8 mm and lets it creep on at 7 mm/s (9.6 mm at 0.25 s).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo SphereIntoSandInfo();

// Uehara's final penetration depth d [m] of a sphere of diameter D [m] and density ρ_b
// dropped from a height h ≥ 0 [m] (its bottom above the surface) into a granular bed of bulk
// density ρ_g and repose-angle tangent μ_r: the root of d = c (h + d)^{1/3} with
// c = (0.14/μ_r)(ρ_b/ρ_g)^{1/2} D^{2/3}.
double UeharaPenetration(double diameter, double sphere_density, double bulk_density, double repose_tangent,
                         double drop_height);

}  // namespace contactlab::experiments
