#pragma once
// One interface for hyperelastic energy densities, shared by the explicit and implicit
// MPM solvers: the energy Ψ(F), the first Piola–Kirchhoff stress P = ∂Ψ/∂F and its
// derivative dP/dF (the per-particle elasticity tangent).
//
// Some models are defined relative to a reference rotation R0 that is lagged from the
// previous time step (linear corotated, seed 000 eq. 19–21). Every call therefore takes
// the particle's stored R0; models that do not need it ignore it.
#include <memory>
#include <string>
#include <string_view>

#include "mpm/types.h"

namespace contactlab::mpm {

// Lamé parameters from Young's modulus and Poisson's ratio.
struct LameParameters {
  double shear_modulus = 0.0;         // μ_L [Pa]
  double first_lame_parameter = 0.0;  // λ [Pa]
  static LameParameters FromYoungsModulus(double youngs_modulus_pa, double poisson_ratio);
};

class ConstitutiveModel {
 public:
  virtual ~ConstitutiveModel() = default;
  virtual std::string_view name() const = 0;

  // Energy density Ψ(F) [J/m³ = Pa].
  virtual double EnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const = 0;
  // First Piola–Kirchhoff stress P = ∂Ψ/∂F [Pa].
  virtual Matrix3 FirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation) const = 0;
  // dP/dF [Pa], column-major flattening (see Matrix9). Symmetric for hyperelastic models.
  virtual Matrix9 FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                             const Matrix3& reference_rotation) const = 0;
};

enum class ConstitutiveModelKind { kFixedCorotated, kLinearCorotated };

// Parses "fixed_corotated" | "linear_corotated"; returns false on an unknown name.
bool ParseConstitutiveModelKind(std::string_view text, ConstitutiveModelKind* kind);
std::string_view ToString(ConstitutiveModelKind kind);

std::unique_ptr<ConstitutiveModel> MakeConstitutiveModel(ConstitutiveModelKind kind, LameParameters lame);

}  // namespace contactlab::mpm
