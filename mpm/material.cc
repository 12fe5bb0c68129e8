#include "mpm/material.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace contactlab::mpm {

Material MakeMaterial(std::string name, std::string_view model, double density, double youngs_modulus,
                      double poisson_ratio, double yield_stress) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("material '" + name + "': density must be positive and finite");
  }
  if (!(yield_stress >= 0.0) || !std::isfinite(yield_stress)) {
    throw std::invalid_argument("material '" + name + "': yield stress must be non-negative and finite");
  }
  const ConstitutiveModelEntry* entry = FindConstitutiveModel(model);
  if (entry != nullptr && entry->kind != MaterialKind::kSolid) {
    const char* instead = entry->kind == MaterialKind::kLiquid
                              ? "' is a liquid model (MakeLiquidMaterial: bulk modulus and exponent)"
                          : entry->kind == MaterialKind::kGranular
                              ? "' is a granular model (MakeGranularMaterial: friction angle and cohesion)"
                              : "' is the cloth model (MakeClothMaterial: layer stiffnesses and friction)";
    throw std::invalid_argument("material '" + name + "': '" + std::string(model) + instead);
  }
  Material material;
  material.model = std::string(model);
  material.density = density;
  material.youngs_modulus = youngs_modulus;
  material.poisson_ratio = poisson_ratio;
  material.yield_stress = yield_stress;
  // Lamé parameters from E and ν, then the shared constitutive model.
  material.lame = LameParameters::FromYoungsModulus(youngs_modulus, poisson_ratio);
  try {
    material.constitutive_model = MakeConstitutiveModel(model, MaterialConstants{material.lame, yield_stress});
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("material '" + name + "': " + error.what());
  }
  material.name = std::move(name);
  return material;
}

Material MakeLiquidMaterial(std::string name, double density, double bulk_modulus, double exponent) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("material '" + name + "': density must be positive and finite");
  }
  Material material;
  material.model = "eos_liquid";
  material.density = density;
  material.youngs_modulus = 0.0;
  material.poisson_ratio = 0.5;
  material.lame = LameParameters{0.0, bulk_modulus};
  MaterialConstants constants;
  constants.bulk_modulus = bulk_modulus;
  constants.eos_exponent = exponent;
  try {
    material.constitutive_model = MakeConstitutiveModel(material.model, constants);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("material '" + name + "': " + error.what());
  }
  material.name = std::move(name);
  return material;
}

Material MakeGranularMaterial(std::string name, double density, double youngs_modulus, double poisson_ratio,
                              double friction_angle_degrees, double cohesion) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("material '" + name + "': density must be positive and finite");
  }
  Material material;
  material.model = "drucker_prager";
  material.density = density;
  material.youngs_modulus = youngs_modulus;
  material.poisson_ratio = poisson_ratio;
  material.friction_angle_degrees = friction_angle_degrees;
  material.cohesion = cohesion;
  try {
    material.lame = LameParameters::FromYoungsModulus(youngs_modulus, poisson_ratio);
    MaterialConstants constants;
    constants.lame = material.lame;
    constants.friction_angle = friction_angle_degrees * std::acos(-1.0) / 180.0;
    constants.cohesion = cohesion;
    material.constitutive_model = MakeConstitutiveModel(material.model, constants);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("material '" + name + "': " + error.what());
  }
  material.name = std::move(name);
  return material;
}

Material MakeClothMaterial(std::string name, double density, double youngs_modulus, double poisson_ratio,
                           double normal_stiffness, double shear_stiffness, double layer_friction) {
  if (!(density > 0.0) || !std::isfinite(density)) {
    throw std::invalid_argument("material '" + name + "': density must be positive and finite");
  }
  if (!(normal_stiffness > 0.0) || !std::isfinite(normal_stiffness)) {
    throw std::invalid_argument("material '" + name + "': the cloth's normal stiffness must be positive and finite");
  }
  if (!(shear_stiffness >= 0.0) || !std::isfinite(shear_stiffness) || !(layer_friction >= 0.0) ||
      !std::isfinite(layer_friction)) {
    throw std::invalid_argument("material '" + name +
                                "': the cloth's shear stiffness and layer friction must be non-negative and finite");
  }
  Material material;
  material.model = "cloth";
  material.density = density;
  material.youngs_modulus = youngs_modulus;
  material.poisson_ratio = poisson_ratio;
  material.normal_stiffness = normal_stiffness;
  material.shear_stiffness = shear_stiffness;
  material.layer_friction = layer_friction;
  try {
    material.lame = LameParameters::FromYoungsModulus(youngs_modulus, poisson_ratio);
    MaterialConstants constants;
    constants.lame = material.lame;
    constants.normal_stiffness = normal_stiffness;
    constants.shear_stiffness = shear_stiffness;
    constants.layer_friction = layer_friction;
    material.constitutive_model = MakeConstitutiveModel(material.model, constants);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("material '" + name + "': " + error.what());
  }
  material.name = std::move(name);
  return material;
}

}  // namespace contactlab::mpm
