#include "mpm/material.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace contactlab::mpm {

double Material::DilatationalWaveSpeed() const {
  // c = sqrt((λ + 2μ_L)/ρ)  [m/s]; spec-sap-qn §2.7.
  return std::sqrt((lame.first_lame_parameter + 2.0 * lame.shear_modulus) / density);
}

Material MakeMaterial(std::string name, ConstitutiveModelKind model, double density, double youngs_modulus,
                      double poisson_ratio, double yield_stress) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("material '" + name + "': density must be positive and finite");
  }
  if (!(yield_stress >= 0.0) || !std::isfinite(yield_stress)) {
    throw std::invalid_argument("material '" + name + "': yield stress must be non-negative and finite");
  }
  Material material;
  material.model = model;
  material.density = density;
  material.youngs_modulus = youngs_modulus;
  material.poisson_ratio = poisson_ratio;
  material.yield_stress = yield_stress;
  // Lamé parameters from E and ν, then the shared constitutive model.
  material.lame = LameParameters::FromYoungsModulus(youngs_modulus, poisson_ratio);
  material.constitutive_model = MakeConstitutiveModel(model, material.lame);
  material.name = std::move(name);
  return material;
}

}  // namespace contactlab::mpm
