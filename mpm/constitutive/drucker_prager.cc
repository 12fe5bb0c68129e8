#include "mpm/constitutive/drucker_prager.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

// log1p(x)/x, the divided difference (ln a − ln b)/(a − b) times b for x = (a − b)/b; its
// limit 1 − x/2 where x is too small for the quotient to be accurate.
double LogRatioQuotient(double x) {
  if (std::abs(x) < 1e-8) return 1.0 - 0.5 * x;
  return std::log1p(x) / x;
}

Vector3 HenckyStrains(const Vector3& singular_values) {
  return Vector3(std::log(singular_values(0)), std::log(singular_values(1)), std::log(singular_values(2)));
}

// dP/dF of an isotropic energy of the principal Hencky strains ε_i = ln σ_i whose Kirchhoff
// stresses are τ_i = g ε_i + q, with the slope g and offset q the same for every i, and whose
// strain Hessian is ∂τ_i/∂ε_k = strain_hessian(i, k). With p_i = τ_i/σ_i = ∂ψ̂/∂σ_i, in the
// singular frame
// (δF̃ = Uᵀ δF V, δP = U δP̃ Vᵀ; [`teran2005robust`], [`stomakhin2012invertible`]):
//   δP̃_ii = Σ_k H_ik δF̃_kk,            H_ik = ∂p_i/∂σ_k = ∂τ_i/∂ε_k/(σ_i σ_k) − δ_ik τ_i/σ_i²,
//   δP̃_ij = a δF̃_ij + b δF̃_ji (i ≠ j),  a, b = ½[D_ij ± (p_i + p_j)/(σ_i + σ_j)],
// with the divided difference D_ij = (p_i − p_j)/(σ_i − σ_j), evaluated without the
// cancellation at σ_i ≈ σ_j:
//   D_ij = [g (log1p(x)/x − ln σ_j) − q] / (σ_i σ_j),  x = (σ_i − σ_j)/σ_j.
Matrix9 HenckyTangent(const SignedSvd& svd, const Vector3& strains, double slope, double offset,
                      const Matrix3& strain_hessian) {
  const Vector3& sigma = svd.singular_values;
  const Vector3 kirchhoff = slope * strains + Vector3::Constant(offset);
  const Vector3 stress = kirchhoff.cwiseQuotient(sigma);

  Matrix3 hessian;  // H_ik
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) {
      hessian(i, k) =
          strain_hessian(i, k) / (sigma(i) * sigma(k)) - (i == k ? kirchhoff(i) / (sigma(i) * sigma(i)) : 0.0);
    }
  }
  Matrix3 same_direction, cross_direction;  // a and b for each ordered pair (i, j), i ≠ j
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (i == j) continue;
      const double x = (sigma(i) - sigma(j)) / sigma(j);
      const double difference = (slope * (LogRatioQuotient(x) - strains(j)) - offset) / (sigma(i) * sigma(j));
      const double sum = (stress(i) + stress(j)) / (sigma(i) + sigma(j));
      same_direction(i, j) = 0.5 * (difference + sum);
      cross_direction(i, j) = 0.5 * (difference - sum);
    }
  }

  Matrix9 derivative;
  for (int column = 0; column < 9; ++column) {
    Matrix3 direction = Matrix3::Zero();
    direction(column % 3, column / 3) = 1.0;
    const Matrix3 rotated = svd.u.transpose() * direction * svd.v;
    Matrix3 response;
    const Vector3 diagonal = hessian * rotated.diagonal();
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        response(i, j) =
            i == j ? diagonal(i) : same_direction(i, j) * rotated(i, j) + cross_direction(i, j) * rotated(j, i);
      }
    }
    const Matrix3 stress_differential = svd.u * response * svd.v.transpose();
    derivative.col(column) = Eigen::Map<const Vector9>(stress_differential.data());
  }
  return derivative;
}

}  // namespace

DruckerPragerModel::DruckerPragerModel(const LameParameters& lame, double friction_angle, double cohesion)
    : lame_(lame) {
  if (!(lame.shear_modulus > 0.0) || !(lame.first_lame_parameter > -2.0 / 3.0 * lame.shear_modulus)) {
    throw std::invalid_argument("drucker_prager: needs a positive shear modulus and bulk modulus");
  }
  constexpr double kQuarterTurn = 1.5707963267948966;
  if (!(friction_angle > 0.0 && friction_angle < kQuarterTurn)) {
    throw std::invalid_argument("drucker_prager: the friction angle must lie in (0, 90) degrees");
  }
  if (!(cohesion >= 0.0) || !std::isfinite(cohesion)) {
    throw std::invalid_argument("drucker_prager: the cohesion must be non-negative and finite");
  }
  const double sine = std::sin(friction_angle);
  // α = √(2/3) · 2 sin φ / (3 − sin φ) (Klár et al. 2016 §4.3).
  cone_slope_ = std::sqrt(2.0 / 3.0) * 2.0 * sine / (3.0 - sine);
  // Apex at the tensile mean stress p_t = c cot φ, i.e. tr τ = 3 p_t = (3λ + 2μ_L) e_t.
  const double apex_mean_stress = cohesion / std::tan(friction_angle);
  apex_volumetric_strain_ = 3.0 * apex_mean_stress / (3.0 * lame.first_lame_parameter + 2.0 * lame.shear_modulus);
}

double DruckerPragerModel::EnergyDensity(const Matrix3& deformation_gradient,
                                         const Matrix3& /*reference_rotation*/) const {
  // ψ = μ_L Σ ε_i² + λ/2 (Σ ε_i)².
  const Vector3 strains = HenckyStrains(ComputeSignedSvd(deformation_gradient).singular_values);
  const double volumetric = strains.sum();
  return lame_.shear_modulus * strains.squaredNorm() + 0.5 * lame_.first_lame_parameter * volumetric * volumetric;
}

Matrix3 DruckerPragerModel::FirstPiolaStress(const Matrix3& deformation_gradient,
                                             const Matrix3& /*reference_rotation*/) const {
  // P = U diag(τ_i/σ_i) Vᵀ, τ_i = 2μ_L ε_i + λ Σ ε.
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const Vector3 strains = HenckyStrains(svd.singular_values);
  const Vector3 kirchhoff =
      2.0 * lame_.shear_modulus * strains + Vector3::Constant(lame_.first_lame_parameter * strains.sum());
  return svd.u * kirchhoff.cwiseQuotient(svd.singular_values).asDiagonal() * svd.v.transpose();
}

Matrix9 DruckerPragerModel::FirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                       const Matrix3& /*reference_rotation*/) const {
  // τ_i = 2μ_L ε_i + λ Σ ε: g = 2μ_L, q = λ Σ ε, ∂τ_i/∂ε_k = 2μ_L δ_ik + λ.
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const Vector3 strains = HenckyStrains(svd.singular_values);
  const double mu = lame_.shear_modulus;
  const double lambda = lame_.first_lame_parameter;
  const Matrix3 strain_hessian = 2.0 * mu * Matrix3::Identity() + Matrix3::Constant(lambda);
  return HenckyTangent(svd, strains, 2.0 * mu, lambda * strains.sum(), strain_hessian);
}

DruckerPragerReturn DruckerPragerModel::Project(const Vector3& strains) const {
  DruckerPragerReturn result;
  result.strains = strains;
  const double volumetric = strains.sum();
  const double shifted = volumetric - apex_volumetric_strain_;
  if (shifted >= 0.0) {
    // Beyond the apex: no stress but the apex's mean stress; the grains separate.
    result.kind = DruckerPragerReturn::Case::kApex;
    result.strains = Vector3::Constant(apex_volumetric_strain_ / 3.0);
    return result;
  }
  const Vector3 deviatoric = strains - Vector3::Constant(volumetric / 3.0);
  const double deviatoric_norm = deviatoric.norm();
  const double bulk_ratio =
      (3.0 * lame_.first_lame_parameter + 2.0 * lame_.shear_modulus) / (2.0 * lame_.shear_modulus);
  const double multiplier = deviatoric_norm + cone_slope_ * bulk_ratio * shifted;  // δγ
  if (multiplier <= 0.0) return result;
  // Inside the cone's reach: shorten the deviatoric strain to the cone, keep the volume.
  result.kind = DruckerPragerReturn::Case::kShear;
  result.plastic_multiplier = multiplier;
  result.strains = strains - (multiplier / deviatoric_norm) * deviatoric;
  return result;
}

void DruckerPragerModel::UpdateState(Matrix3& elastic_deformation_gradient, Matrix3& reference_rotation,
                                     Matrix3& plastic_deformation_gradient) const {
  const SignedSvd svd = ComputeSignedSvd(elastic_deformation_gradient);
  reference_rotation = svd.u * svd.v.transpose();
  // An inverted particle has no Hencky strain; its stress is already non-finite, which the
  // formulation records as divergence.
  if (!(svd.singular_values.minCoeff() > 0.0)) return;
  const DruckerPragerReturn projected = Project(HenckyStrains(svd.singular_values));
  if (projected.kind == DruckerPragerReturn::Case::kElastic) return;
  const Vector3 stretches = projected.strains.array().exp();
  const Matrix3 inverse_projected = svd.v * stretches.cwiseInverse().asDiagonal() * svd.u.transpose();
  plastic_deformation_gradient = inverse_projected * elastic_deformation_gradient * plastic_deformation_gradient;
  elastic_deformation_gradient = svd.u * stretches.asDiagonal() * svd.v.transpose();
}

// ---- Plasticity inside an implicit step -----------------------------------------------
//
// With K = λ + 2μ_L/3, t = Σ ε, ε̂ = ε − (t/3)(1, 1, 1) and s = ‖ε̂‖, Hencky's energy is
// μ_L s² + K t²/2, and Project keeps t while it shortens ε̂ to the cone's radius
//   r(t) = α (3λ + 2μ_L)/(2μ_L) (e_t − t),
// or, beyond the apex (t ≥ e_t), replaces ε by (e_t/3)(1, 1, 1). The step's energy
//   ψ_step = μ_L h(s) + V(t),
//   h(s) = s² for s ≤ r,  2 r s − r² beyond (the Huber function: its slope 2 min(s, r)),
//   V(t) = K t²/2 for t ≤ e_t,  K e_t t − K e_t²/2 beyond,
// is convex in ε and C¹, and its Kirchhoff stress τ = 2μ_L min(1, r/s) ε̂ + K min(t, e_t)
// (1, 1, 1) is that of Project's result wherever the radius r is the one Project uses. The
// radius depends on the step's own t, and an energy in which it does is associated plasticity
// (its gradient in t adds a dilatant pressure that Klár et al.'s non-associated flow does not
// have). So the step fixes r at its start, r = max(0, r(t_n)) from F^E at tⁿ (InStepState),
// and Project applies the current one after the step. The cone's radius then lags one step
// behind the pressure; the stress of the step never exceeds the cone of its start.

double DruckerPragerModel::InStepState(const Matrix3& start_elastic_deformation_gradient) const {
  const Vector3 singular_values = ComputeSignedSvd(start_elastic_deformation_gradient).singular_values;
  if (!(singular_values.minCoeff() > 0.0)) return 0.0;
  const double volumetric = HenckyStrains(singular_values).sum();
  const double bulk_ratio =
      (3.0 * lame_.first_lame_parameter + 2.0 * lame_.shear_modulus) / (2.0 * lame_.shear_modulus);
  return std::max(0.0, cone_slope_ * bulk_ratio * (apex_volumetric_strain_ - volumetric));
}

DruckerPragerModel::StepStress DruckerPragerModel::InStepStress(const Vector3& strains, double radius) const {
  const double mu = lame_.shear_modulus;
  const double bulk = lame_.first_lame_parameter + 2.0 * mu / 3.0;
  StepStress result;
  result.volumetric = strains.sum();
  result.deviatoric = strains - Vector3::Constant(result.volumetric / 3.0);
  result.deviatoric_norm = result.deviatoric.norm();
  result.yielding = result.deviatoric_norm > radius;
  result.shear_fraction = result.yielding ? radius / result.deviatoric_norm : 1.0;
  result.separating = result.volumetric > apex_volumetric_strain_;
  const double volumetric_slope = bulk * std::min(result.volumetric, apex_volumetric_strain_);  // V'(t)
  // τ_i = g ε_i + q with g = 2μ_L ρ, q = V'(t) − g t/3.
  result.slope = 2.0 * mu * result.shear_fraction;
  result.offset = volumetric_slope - result.slope * result.volumetric / 3.0;
  return result;
}

double DruckerPragerModel::InStepEnergyDensity(const Matrix3& deformation_gradient,
                                               const Matrix3& /*reference_rotation*/, double state) const {
  const Vector3 strains = HenckyStrains(ComputeSignedSvd(deformation_gradient).singular_values);
  const StepStress step = InStepStress(strains, state);
  const double mu = lame_.shear_modulus;
  const double bulk = lame_.first_lame_parameter + 2.0 * mu / 3.0;
  const double s = step.deviatoric_norm;
  const double shear = step.yielding ? mu * (2.0 * state * s - state * state) : mu * s * s;
  const double t = step.volumetric, apex = apex_volumetric_strain_;
  const double volume = step.separating ? bulk * apex * t - 0.5 * bulk * apex * apex : 0.5 * bulk * t * t;
  return shear + volume;
}

Matrix3 DruckerPragerModel::InStepFirstPiolaStress(const Matrix3& deformation_gradient,
                                                   const Matrix3& /*reference_rotation*/, double state) const {
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const Vector3 strains = HenckyStrains(svd.singular_values);
  const StepStress step = InStepStress(strains, state);
  const Vector3 kirchhoff = step.slope * strains + Vector3::Constant(step.offset);
  return svd.u * kirchhoff.cwiseQuotient(svd.singular_values).asDiagonal() * svd.v.transpose();
}

Matrix9 DruckerPragerModel::InStepFirstPiolaStressDerivative(const Matrix3& deformation_gradient,
                                                             const Matrix3& /*reference_rotation*/,
                                                             double state) const {
  // ∂τ/∂ε = 2μ_L ρ (I − 11ᵀ/3 − [s > r] n̂ n̂ᵀ) + V''(t) 11ᵀ with n̂ = ε̂/s and
  // V'' = K below the apex, 0 beyond: positive semidefinite.
  const SignedSvd svd = ComputeSignedSvd(deformation_gradient);
  const Vector3 strains = HenckyStrains(svd.singular_values);
  const StepStress step = InStepStress(strains, state);
  const double bulk = lame_.first_lame_parameter + 2.0 * lame_.shear_modulus / 3.0;
  Matrix3 strain_hessian = step.slope * (Matrix3::Identity() - Matrix3::Constant(1.0 / 3.0));
  if (step.yielding) {
    const Vector3 direction = step.deviatoric / step.deviatoric_norm;
    strain_hessian -= step.slope * direction * direction.transpose();
  }
  if (!step.separating) strain_hessian += Matrix3::Constant(bulk);
  return HenckyTangent(svd, strains, step.slope, step.offset, strain_hessian);
}

}  // namespace contactlab::mpm
