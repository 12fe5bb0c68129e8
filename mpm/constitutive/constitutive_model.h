#pragma once
// One interface for hyperelastic energy densities, shared by the explicit and implicit
// MPM solvers: the energy Ψ(F), the first Piola–Kirchhoff stress P = ∂Ψ/∂F and its
// derivative dP/dF (the per-particle elasticity tangent), the wave speed that bounds an
// explicit step, and the end-of-step update of the particle's internal state (the lagged
// rotation, plasticity). Every model is registered once, in the table of
// constitutive_model.cc, which scene keys, parsing and construction read.
//
// Some models are defined relative to a reference rotation R0 that is lagged from the
// previous time step (linear corotated, [zong2024convex] eq. 19–21). Every call therefore takes
// the particle's stored R0; models that do not need it ignore it.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mpm/types.h"

namespace contactlab::mpm {

// Lamé parameters from Young's modulus and Poisson's ratio.
struct LameParameters {
  double shear_modulus = 0.0;         // μ_L [Pa]
  double first_lame_parameter = 0.0;  // λ [Pa]
  static LameParameters FromYoungsModulus(double youngs_modulus_pa, double poisson_ratio);
  // Dilatational (P-wave) speed √((λ + 2μ_L)/ρ) [m/s] for density ρ [kg/m³] (spec-sap-qn §2.7).
  double DilatationalWaveSpeed(double density) const;
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
  // Speed of the fastest wave in a material of density ρ [kg/m³], √(stiffness/ρ) [m/s]: the
  // explicit limit h/c and quasi_newton's substeps come from it.
  virtual double WaveSpeed(double density) const = 0;
  // Whether UpdateState may change F^E (a plasticity model is part of this one).
  virtual bool is_plastic() const { return false; }
  // The particle's state after each step or substep changed its F^E: the lagged rotation
  // R0 the model reads next time and, for plastic models, the return mapping onto the yield
  // surface (F^E projected, F = F^E F^P kept). Default: nothing to update.
  virtual void UpdateState(Matrix3& /*elastic_deformation_gradient*/, Matrix3& /*reference_rotation*/,
                           Matrix3& /*plastic_deformation_gradient*/) const {}

  // Plasticity inside an implicit step (spec-penalty-hybrid A13). An implicit formulation
  // minimizes the step's energy Σ V⁰ Ψ(F(v)), and UpdateState projects F^E only after the
  // solve: within the step the material is elastic, and a stiff plastic material (sand) carries
  // whatever stress the step's equilibrium asks of it. A model whose projected stress is the
  // gradient of an energy of the step's F, once one number is fixed from the state at the
  // step's start, offers that energy here. The implicit solvers then minimize it in place of Ψ,
  // so no stress of the step leaves the yield surface (by more than the lag of that number),
  // and UpdateState still projects after the step. Default: none.
  virtual bool has_in_step_plasticity() const { return false; }
  // Whether the implicit formulations use the step energy by default (`plasticity = auto`):
  // models whose source lags the return mapping ([zong2024convex]'s von Mises dough) say no.
  virtual bool in_step_plasticity_by_default() const { return false; }
  // The number the step's energy holds fixed, from the elastic gradient at the step's start.
  virtual double InStepState(const Matrix3& /*start_elastic_deformation_gradient*/) const { return 0.0; }
  // Ψ_step(F), P = ∂Ψ_step/∂F and dP/dF (symmetric, like the elastic ones) for that number and
  // the particle's reference rotation R0. The default throws std::logic_error: only models with
  // has_in_step_plasticity() offer them.
  virtual double InStepEnergyDensity(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                     double state) const;
  virtual Matrix3 InStepFirstPiolaStress(const Matrix3& deformation_gradient, const Matrix3& reference_rotation,
                                         double state) const;
  virtual Matrix9 InStepFirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                   const Matrix3& reference_rotation, double state) const;
};

// The constants a material gives its model: a solid's Lamé parameters (and yield stress), a
// liquid's bulk modulus and equation-of-state exponent, a granular material's Lamé
// parameters, friction angle and cohesion.
struct MaterialConstants {
  LameParameters lame;
  double yield_stress = 0.0;      // von Mises η [Pa]; 0: elastic
  double bulk_modulus = 0.0;      // κ [Pa] (liquids)
  double eos_exponent = 7.0;      // γ [-] (liquids)
  double friction_angle = 0.0;    // φ [rad] (granular)
  double cohesion = 0.0;          // c [Pa] (granular)
  double normal_stiffness = 0.0;  // k [Pa] (cloth: compression across the layer)
  double shear_stiffness = 0.0;   // γ [Pa] (cloth: shear across the layer)
  double layer_friction = 0.0;    // c_F [-] (cloth: friction between layers)
};

// Which constants a model reads: E and ν (solids, mpm::MakeMaterial), κ and γ (liquids,
// mpm::MakeLiquidMaterial), E, ν, φ and c (granular, mpm::MakeGranularMaterial), or E, ν,
// k, γ and c_F (cloth, mpm::MakeClothMaterial).
enum class MaterialKind { kSolid, kLiquid, kGranular, kCloth };

// One registered model: its key value, what it is, which constants it reads, whether it
// takes a yield stress, and how to build it.
struct ConstitutiveModelEntry {
  std::string_view name;
  std::string_view description;
  MaterialKind kind = MaterialKind::kSolid;
  bool accepts_yield_stress = false;
  std::unique_ptr<ConstitutiveModel> (*make)(const MaterialConstants& constants) = nullptr;
};

// Every model, in the order scene keys list them.
const std::vector<ConstitutiveModelEntry>& ConstitutiveModelRegistry();
std::vector<std::string> ConstitutiveModelNames();
std::vector<std::string> ConstitutiveModelNames(MaterialKind kind);
// The entry of `name`, or null.
const ConstitutiveModelEntry* FindConstitutiveModel(std::string_view name);

// The registered model `name` with these constants. Throws std::invalid_argument naming an
// unknown model (and the known ones) or a yield stress on a model without plasticity.
std::unique_ptr<ConstitutiveModel> MakeConstitutiveModel(std::string_view name, const MaterialConstants& constants);

}  // namespace contactlab::mpm
