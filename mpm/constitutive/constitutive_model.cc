#include "mpm/constitutive/constitutive_model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "mpm/constitutive/cloth.h"
#include "mpm/constitutive/drucker_prager.h"
#include "mpm/constitutive/eos_liquid.h"
#include "mpm/constitutive/fixed_corotated.h"
#include "mpm/constitutive/linear_corotated.h"

namespace contactlab::mpm {

LameParameters LameParameters::FromYoungsModulus(double youngs_modulus_pa, double poisson_ratio) {
  // The conversion is finite and physical only for E > 0 and -1 < ν < 1/2.
  if (!(youngs_modulus_pa > 0.0) || !std::isfinite(youngs_modulus_pa)) {
    throw std::invalid_argument("Young's modulus must be positive and finite");
  }
  if (!(poisson_ratio > -1.0 && poisson_ratio < 0.5)) {
    throw std::invalid_argument("Poisson's ratio must lie in (-1, 0.5)");
  }
  // μ_L = E / (2(1 + ν)), λ = E ν / ((1 + ν)(1 − 2ν))  [Pa]; spec-sap-qn §2.
  LameParameters lame;
  lame.shear_modulus = youngs_modulus_pa / (2.0 * (1.0 + poisson_ratio));
  lame.first_lame_parameter = youngs_modulus_pa * poisson_ratio / ((1.0 + poisson_ratio) * (1.0 - 2.0 * poisson_ratio));
  return lame;
}

double LameParameters::DilatationalWaveSpeed(double density) const {
  return std::sqrt((first_lame_parameter + 2.0 * shear_modulus) / density);
}

double ConstitutiveModel::InStepEnergyDensity(const Matrix3& /*deformation_gradient*/,
                                              const Matrix3& /*reference_rotation*/, double /*state*/) const {
  throw std::logic_error(std::string(name()) + ": no energy for plasticity inside the step");
}

Matrix3 ConstitutiveModel::InStepFirstPiolaStress(const Matrix3& /*deformation_gradient*/,
                                                  const Matrix3& /*reference_rotation*/, double /*state*/) const {
  throw std::logic_error(std::string(name()) + ": no energy for plasticity inside the step");
}

Matrix9 ConstitutiveModel::InStepFirstPiolaStressDerivative(const Matrix3& /*deformation_gradient*/,
                                                            const Matrix3& /*reference_rotation*/,
                                                            double /*state*/) const {
  throw std::logic_error(std::string(name()) + ": no energy for plasticity inside the step");
}

const std::vector<ConstitutiveModelEntry>& ConstitutiveModelRegistry() {
  static const std::vector<ConstitutiveModelEntry> registry = {
      {"fixed_corotated", "fixed corotated elasticity (Stomakhin et al. 2012)", MaterialKind::kSolid, false,
       [](const MaterialConstants& constants) -> std::unique_ptr<ConstitutiveModel> {
         return std::make_unique<FixedCorotatedModel>(constants.lame);
       }},
      {"linear_corotated",
       "linear corotated elasticity about the lagged rotation ([zong2024convex] eq. 19-21); with a yield stress, the "
       "lagged "
       "von Mises return mapping ([zong2024convex] Algorithm 1)",
       MaterialKind::kSolid, true,
       [](const MaterialConstants& constants) -> std::unique_ptr<ConstitutiveModel> {
         return std::make_unique<LinearCorotatedModel>(constants.lame, constants.yield_stress);
       }},
      {"eos_liquid", "weakly compressible equation-of-state liquid, pressure from J alone (Tampubolon et al. 2017)",
       MaterialKind::kLiquid, false,
       [](const MaterialConstants& constants) -> std::unique_ptr<ConstitutiveModel> {
         return std::make_unique<EquationOfStateLiquidModel>(constants.bulk_modulus, constants.eos_exponent);
       }},
      {"drucker_prager",
       "Drucker-Prager sand: Hencky elasticity, return mapping onto the cone of the friction angle (apex moved by "
       "the cohesion) after every step (Klar et al. 2016)",
       MaterialKind::kGranular, false,
       [](const MaterialConstants& constants) -> std::unique_ptr<ConstitutiveModel> {
         return std::make_unique<DruckerPragerModel>(constants.lame, constants.friction_angle, constants.cohesion);
       }},
      {"cloth",
       "codimensional cloth of face and vertex particles: 2-D fixed corotated in the plane of the mesh, compression "
       "and shear across the layer with the frictional return mapping ([jiang2017cloth])",
       MaterialKind::kCloth, false,
       [](const MaterialConstants& constants) -> std::unique_ptr<ConstitutiveModel> {
         ClothMaterial material;
         material.lame = constants.lame;
         material.normal_stiffness = constants.normal_stiffness;
         material.shear_stiffness = constants.shear_stiffness;
         material.layer_friction = constants.layer_friction;
         return std::make_unique<ClothModel>(material);
       }},
  };
  return registry;
}

std::vector<std::string> ConstitutiveModelNames() {
  std::vector<std::string> names;
  for (const ConstitutiveModelEntry& entry : ConstitutiveModelRegistry()) names.emplace_back(entry.name);
  return names;
}

std::vector<std::string> ConstitutiveModelNames(MaterialKind kind) {
  std::vector<std::string> names;
  for (const ConstitutiveModelEntry& entry : ConstitutiveModelRegistry()) {
    if (entry.kind == kind) names.emplace_back(entry.name);
  }
  return names;
}

const ConstitutiveModelEntry* FindConstitutiveModel(std::string_view name) {
  for (const ConstitutiveModelEntry& entry : ConstitutiveModelRegistry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::unique_ptr<ConstitutiveModel> MakeConstitutiveModel(std::string_view name, const MaterialConstants& constants) {
  if (const ConstitutiveModelEntry* entry = FindConstitutiveModel(name)) {
    if (constants.yield_stress != 0.0 && !entry->accepts_yield_stress) {
      throw std::invalid_argument("constitutive model '" + std::string(name) +
                                  "' has no plasticity: its yield stress must be 0");
    }
    return entry->make(constants);
  }
  std::string known;
  for (const std::string& known_name : ConstitutiveModelNames()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown constitutive model '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace contactlab::mpm
