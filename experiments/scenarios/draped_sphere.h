#pragma once
// draped_sphere (issue 21's second analytic check for cloth): friction holding or letting go of
// a cloth strip hung over a static rigid sphere, on either side of the threshold of μ.
//
// A narrow strip of mass λ per unit length lies over the top of a sphere of radius R along a
// great circle (the upper half circle, φ ∈ [−π/2, π/2] from the top) and hangs straight down
// from the equator on both sides, L₂ on the short side and L₁ > L₂ on the long one. Without
// bending stiffness it is the heavy belt of the capstan problem: along the arc, with the
// tension T(φ), the normal force per length n = T/R + λ g cos φ − λ v²/R and limiting friction
// μ n against a slip of speed v and acceleration a toward the long side,
//   dT/dφ = μ (T + λ g R cos φ − λ v²) − λ g R sin φ + λ R a,
// whose solution T = C e^{μφ} + λ g R [(1 − μ²) cos φ + 2 μ sin φ] / (1 + μ²) − λ (R a − μ v²)/μ
// meets the hanging parts' tensions T₂ = λ L₂ (g + a) at −π/2 and T₁ = λ L₁ (g − a) at +π/2.
// Eliminating C gives the strip's acceleration along itself,
//   a = [g (L₁ − b − E (L₂ + b)) + (E − 1) v²] / [L₁ + E L₂ + (E − 1) R / μ],
//   E = e^{μπ},  b = 2 μ R / (1 + μ²),
// (μ → 0: the Atwood machine g (L₁ − L₂) / (L₁ + L₂ + π R)). At rest the strip holds when
//   L₁ ≤ b + E (L₂ + b),
// which defines the threshold μ* of the geometry. The scene hangs two equal strips over two
// equal spheres side by side, one sphere at μ = holding_friction_ratio · μ* and the other at
// sliding_friction_ratio · μ*: the first strip must stay, the second slide as the slip x(t)
// of a = ẍ(x, ẋ) with L₁ + x, L₂ − x predicts (integrated by RK4 from rest, while L₂ − x > 0
// and n ≥ 0 along the arc).
//
// The strip starts at rest in its draped shape, which is its rest shape (a strip wrapped on a
// cylinder of radius R keeps its lengths). The slip is the arc coordinate along the draped path
// of the vertex row that starts at the sphere's top, against its start. Summary: μ*, the μ of
// each sphere, the holding strip's largest slip against h/2 (held), the sliding strip's final
// slip against the analytic one (sliding_slip_error) and against the analytic slips at radii
// R ± h/2 (slid_as_predicted): a formulation puts the contact surface within about h/2 of the
// sphere (at the particles or at grid nodes), and the slip changes by about 6% per h/2 of
// radius at the defaults.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo DrapedSphereInfo();

// The heavy capstan above, per unit λ: the strip's acceleration toward the long side [m/s²]
// at hanging lengths long_length = L₁, short_length = L₂ [m], slip speed v [m/s], sphere radius
// R [m], friction μ > 0 and gravity g [m/s²].
double DrapedStripAcceleration(double long_length, double short_length, double speed, double radius, double mu,
                               double gravity);

// The friction coefficient μ* at which the strip at rest is on the verge of slipping,
// L₁ = b + E (L₂ + b); requires L₁ > L₂ > 0 (bisection to round-off).
double DrapedStripThreshold(double long_length, double short_length, double radius);

}  // namespace contactlab::experiments
