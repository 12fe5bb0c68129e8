#pragma once
// hydrostatic_column (issue 19's first analytic check for liquids): a column of the
// equation-of-state liquid (mpm/constitutive/eos_liquid.h) at rest in a square rigid
// container under gravity. At rest, the pressure at every height carries the weight of the
// liquid above it,
//   p(z) = g · m_above(z) / A,
// with A the container's cross-section and m_above the mass above z (half of a particle
// layer's own mass counted for that layer). For an incompressible liquid this is ρ g d at
// depth d; counting mass includes the column's slight compression exactly.
//
// The particles' pressure is the model's p(J) = κ (J^{−γ} − 1) of their volume ratio. The
// column starts at J = 1 and rings (sound waves, period about 4H/c); the pressures are
// averaged over [settle_time, duration]. Summary: per-layer pressure against the weight
// above, the largest deviation relative to the bottom's (pressure_error, error_vs_analytic),
// the mean J (mass conservation: the volume the column fills) and the largest speed.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo HydrostaticColumnInfo();

}  // namespace contactlab::experiments
