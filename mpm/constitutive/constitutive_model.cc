#include "mpm/constitutive/constitutive_model.h"

#include <cmath>
#include <stdexcept>

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

bool ParseConstitutiveModelKind(std::string_view text, ConstitutiveModelKind* kind) {
  if (text == "fixed_corotated") {
    *kind = ConstitutiveModelKind::kFixedCorotated;
    return true;
  }
  if (text == "linear_corotated") {
    *kind = ConstitutiveModelKind::kLinearCorotated;
    return true;
  }
  return false;
}

std::string_view ToString(ConstitutiveModelKind kind) {
  switch (kind) {
    case ConstitutiveModelKind::kFixedCorotated:
      return "fixed_corotated";
    case ConstitutiveModelKind::kLinearCorotated:
      return "linear_corotated";
  }
  throw std::invalid_argument("unknown constitutive model kind");
}

std::unique_ptr<ConstitutiveModel> MakeConstitutiveModel(ConstitutiveModelKind kind, LameParameters lame) {
  switch (kind) {
    case ConstitutiveModelKind::kFixedCorotated:
      return std::make_unique<FixedCorotatedModel>(lame);
    case ConstitutiveModelKind::kLinearCorotated:
      return std::make_unique<LinearCorotatedModel>(lame);
  }
  throw std::invalid_argument("unknown constitutive model kind");
}

}  // namespace contactlab::mpm
