#pragma once
// block_on_slab (spec-penalty-hybrid §4.7 item 4, §3.6, B2–B3): a free rigid cubic block rests
// on an elastic MPM slab that rests on a static ground. It probes resting contact between a
// rigid body and MPM material: whether the block comes to rest at the height the slab's
// elasticity predicts, or keeps sinking into the material (the spec's analysis of grid
// impulses computed with the sample mass predicts a constant sinking speed).
//
// Analytic reference (uniaxial strain, linear elasticity): the block's pressure p = m g / A
// (A the footprint the block shares with the slab) and the slab's own weight compress the
// slab with the P-wave (constrained) modulus M = E (1 − ν) / ((1 + ν)(1 − 2ν)). Contact acts on
// particles (scene_tools.h): the slab's lowest particle layer rests on the ground and the block
// on its top layer, a span H_s = H − s apart (H the thickness, s the lattice spacing along z),
// and the stress at height ζ above the slab's bottom face is p + ρ g (H − ζ), so the two layers
// approach by
//   δ = (p + ρ g H / 2) · H_s / M,
// p H_s / M from the block (the estimate of the spec with H_s for H) and ρ g H H_s / (2M) from
// the slab. The estimate assumes no sideways strain: exact for ν = 0 or a slab held at its
// sides; a free slab with ν > 0 bulges sideways and compresses more, up to the uniaxial-stress
// value with E in place of M when its faces slip freely (also recorded). The default block
// covers the slab, so the load on the slab's top is uniform as the estimate assumes.
//
// The block touches only MPM material and the slab only the static ground, so every
// formulation runs the scene (no rigid–rigid contact).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo BlockOnSlabInfo();

// M = E (1 − ν) / ((1 + ν)(1 − 2ν)) [Pa].
double ConstrainedModulus(double youngs_modulus, double poisson_ratio);
// How far two particle layers a span H_s [m] apart, the lower one at the slab's bottom face's
// particle layer, approach under a pressure p [Pa] on the slab's top and the slab's own weight
// (density ρ [kg/m³], thickness H [m]), uniaxially with modulus `modulus` [Pa]:
// (p + ρ g H / 2) H_s / modulus [m].
double SlabCompression(double pressure, double slab_density, double gravity, double thickness, double span,
                       double modulus);

}  // namespace contactlab::experiments
