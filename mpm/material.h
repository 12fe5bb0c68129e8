#pragma once
// A material: density, elastic constants, constitutive model and optional plasticity.
#include <memory>
#include <string>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

struct Material {
  std::string name;
  ConstitutiveModelKind model = ConstitutiveModelKind::kLinearCorotated;
  double density = 1000.0;                                      // ρ [kg/m³]
  double youngs_modulus = 1e5;                                  // E [Pa]
  double poisson_ratio = 0.3;                                   // ν [-], in (-1, 0.5)
  double yield_stress = 0.0;                                    // von Mises η [Pa]; 0 means purely elastic
  LameParameters lame;                                          // derived from E and ν by MakeMaterial
  std::shared_ptr<const ConstitutiveModel> constitutive_model;  // built by MakeMaterial

  bool is_plastic() const { return yield_stress > 0.0; }
  // Dilatational (P-wave) speed sqrt((λ + 2μ_L)/ρ) [m/s]; bounds the explicit time step.
  double DilatationalWaveSpeed() const;
};

Material MakeMaterial(std::string name, ConstitutiveModelKind model, double density, double youngs_modulus,
                      double poisson_ratio, double yield_stress = 0.0);

}  // namespace contactlab::mpm
