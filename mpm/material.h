#pragma once
// A material: density, elastic constants, and its constitutive model (with the model's
// plasticity, if any) from the registry of mpm/constitutive/constitutive_model.h.
#include <memory>
#include <string>
#include <string_view>

#include "mpm/constitutive/constitutive_model.h"

namespace contactlab::mpm {

struct Material {
  std::string name;
  std::string model = "linear_corotated";                       // registered constitutive model
  double density = 1000.0;                                      // ρ [kg/m³]
  double youngs_modulus = 1e5;                                  // E [Pa]
  double poisson_ratio = 0.3;                                   // ν [-], in (-1, 0.5)
  double yield_stress = 0.0;                                    // von Mises η [Pa]; 0: elastic
  double friction_angle_degrees = 0.0;                          // Drucker–Prager φ [°] (granular)
  double cohesion = 0.0;                                        // Drucker–Prager c [Pa] (granular)
  double normal_stiffness = 0.0;                                // cloth k [Pa] (compression across the layer)
  double shear_stiffness = 0.0;                                 // cloth γ [Pa] (shear across the layer)
  double layer_friction = 0.0;                                  // cloth c_F [-] (friction between layers)
  LameParameters lame;                                          // derived from E and ν by MakeMaterial
  std::shared_ptr<const ConstitutiveModel> constitutive_model;  // built by MakeMaterial

  bool is_plastic() const { return constitutive_model != nullptr && constitutive_model->is_plastic(); }
  // The model's wave speed at this density [m/s]; bounds the explicit time step.
  double WaveSpeed() const { return constitutive_model->WaveSpeed(density); }
};

// A solid of a registered solid model. Throws std::invalid_argument naming the material for a
// bad constant, an unknown or liquid model, or a yield stress on a model without plasticity.
Material MakeMaterial(std::string name, std::string_view model, double density, double youngs_modulus,
                      double poisson_ratio, double yield_stress = 0.0);

// The equation-of-state liquid ("eos_liquid"): bulk modulus κ [Pa] and exponent γ (7 for
// water). Its Lamé parameters are μ_L = 0, λ = κ; E = 0 and ν = 0.5 mark it.
Material MakeLiquidMaterial(std::string name, double density, double bulk_modulus, double exponent = 7.0);

// Drucker–Prager sand ("drucker_prager"): Hencky elasticity of E and ν, friction angle φ in
// (0°, 90°) and cohesion c ≥ 0 [Pa] (mpm/constitutive/drucker_prager.h).
Material MakeGranularMaterial(std::string name, double density, double youngs_modulus, double poisson_ratio,
                              double friction_angle_degrees, double cohesion = 0.0);

// Codimensional cloth ("cloth", mpm/constitutive/cloth.h): in-plane E and ν, the layer's
// compression stiffness k > 0 [Pa], its cross-shear stiffness γ ≥ 0 [Pa] and inter-layer
// friction c_F ≥ 0. Its particles come from a triangle mesh (mpm/cloth_particles.h).
Material MakeClothMaterial(std::string name, double density, double youngs_modulus, double poisson_ratio,
                           double normal_stiffness, double shear_stiffness = 0.0, double layer_friction = 0.0);

}  // namespace contactlab::mpm
