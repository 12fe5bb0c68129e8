#pragma once
// hanging_cloth (issue 21's first analytic check for cloth): a strip of codimensional cloth
// (mpm/cloth_particles.h) of width W, length L and thickness t, its top row of vertices held
// by a pin, stretches under its own weight. Small strain, uniaxial membrane stress: at a
// distance s above the bottom the stress is σ = ρ g s and the strain ε = σ / E₂, so the
// strip's bottom drops by
//   δ = ρ g L² / (2 E₂),   E₂ = 4 μ (μ + λ) / (2 μ + λ),
// E₂ the uniaxial modulus of the 2-D fixed-corotated plane model with the material's Lamé
// parameters μ, λ (the plane-strain modulus E / (1 − ν²)). The strip starts unstretched, so
// it rings about the static state (period about 4 L / √(E₂/ρ)); the elongation is averaged
// over [settle_time, duration]. Summary: that mean against δ (elongation_error,
// error_vs_analytic), the ringing left in the window, the largest out-of-plane drift, and the
// mean force of the pin on the free cloth (StepReport::pin_forces) against the weight of the
// cloth below the pinned row (pin_force_error).
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo HangingClothInfo();

}  // namespace contactlab::experiments
