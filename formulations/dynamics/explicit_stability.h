#pragma once
// The stability limit of explicit MPM substeps, shared by the explicit formulations
// (`hybrid_impulse`, `quasi_newton`): a substep δt may not let an elastic wave or any
// material point cross more than a fraction of a cell,
//   δt ≤ cfl · h / (c + v_max),
// c the largest dilatational wave speed √((λ + 2μ)/ρ) of the world's materials, v_max the
// largest particle speed or rigid surface speed |v| + |ω| r of a moving body
// (spec-penalty-hybrid §1.10; the thesis, [han2020thesis] §5.6, bounds particle motion by CFL · h).
// A cloth's in-plane waves cross its shortest triangle dimension ℓ (mpm/cloth_particles.h): where
// ℓ < h its speed counts as c h/ℓ, so that the limit is cfl · ℓ / c.
#include "formulations/world.h"

namespace contactlab::dynamics {

// What sets the explicit limit at one instant.
struct ExplicitSpeeds {
  double wave_speed = 0.0;              // c [m/s]
  double max_particle_speed = 0.0;      // [m/s]
  double max_body_surface_speed = 0.0;  // |v| + |ω| r over moving bodies [m/s]
  double total() const;                 // c + max(particle, body surface) [m/s]
};

ExplicitSpeeds MeasureExplicitSpeeds(const World& world);

// The shortest rest dimension σ_min(D_m) over the cloth's triangles [m]; +∞ without cloth.
double ShortestClothLength(const mpm::Particles& particles);

// The largest stable substep cfl · h / (c + v_max) [s]; +∞ when nothing moves and no
// material carries waves (rigid bodies at rest), so any substep is stable.
double StableExplicitSubstep(const World& world, double cfl);

// Largest distance from a body's centre of mass to a corner of its bounded geometries [m].
double BodyRadius(const rigid::RigidBody& body);

}  // namespace contactlab::dynamics
