#pragma once
// Von Mises–type plasticity for the linear corotated model ([zong2024convex] eq. 22–26,
// Algorithm 1; spec-sap-qn §2.2). The return mapping is applied once per particle at the
// end of a step ("lagged"), so the implicit free-motion problem stays quadratic.
#include "mpm/types.h"

namespace contactlab::mpm {

struct VonMisesReturnResult {
  Matrix3 elastic_deformation_gradient;  // F̃^E after projection (= trial if elastic)
  Matrix3 next_reference_rotation;       // R0 for the next step: polar rotation of F̃^E
  bool yielded = false;                  // true when the trial state was outside the yield cylinder
  bool used_fallback = false;            // true when the 6x6 solve was ill-conditioned
};

// Projects the trial elastic deformation gradient onto the yield cylinder
// ‖dev S‖_F ≤ η / (2 μ_L), with S = ½(R0ᵀF^E + F^Eᵀ R0) and R0 the reference rotation of
// the previous step. Eigenvalues of S are projected (the paper's choice); the symmetric
// stretch is recovered from the 6x6 system of eq. 26.
VonMisesReturnResult VonMisesReturnMap(const Matrix3& trial_elastic_deformation_gradient,
                                       const Matrix3& reference_rotation, double yield_stress_pa,
                                       double shear_modulus_pa);

}  // namespace contactlab::mpm
