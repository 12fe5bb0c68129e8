#include "formulations/penalty/relaxation.h"

#include <cmath>
#include <limits>

namespace contactlab::penalty {
namespace {

// +1 for non-negative values, −1 otherwise: the derivative of |x| away from 0.
double SignOf(double value) {
  return value >= 0.0 ? 1.0 : -1.0;
}

// Unit normal ∇φ/‖∇φ‖ of a level-set sample and its derivative with respect to the point,
// (I − n nᵀ) ∇²φ / ‖∇φ‖ (equal to ∇²φ for a signed distance, where ∇²φ n = 0).
struct NormalAndDerivative {
  Vector3 normal;
  Matrix3 derivative;
  bool degenerate = false;  // ‖∇φ‖ too small to define a direction (spec A6)
};

NormalAndDerivative UnitNormal(const LevelSetSample& sample) {
  NormalAndDerivative result;
  const double gradient_norm = sample.gradient.norm();
  if (!(gradient_norm > kDegenerateGradientNorm) || !std::isfinite(gradient_norm)) {
    result.normal = Vector3::UnitZ();
    result.derivative = Matrix3::Zero();
    result.degenerate = true;
    return result;
  }
  result.normal = sample.gradient / gradient_norm;
  result.derivative =
      (Matrix3::Identity() - result.normal * result.normal.transpose()) * sample.hessian / gradient_norm;
  return result;
}

// StaysStatic with the coordinate scale of X and W.
bool IsStatic(double length, double allowed, const Vector3& attachment, const Vector3& closest) {
  return StaysStatic(length, allowed, attachment.cwiseAbs().maxCoeff() + closest.cwiseAbs().maxCoeff());
}

// Active test of spec A7: penetrating, and the spring pulls Y into the surface.
bool IsActive(double particle_value, const Vector3& relaxed_point, const Vector3& particle, const Vector3& normal) {
  return particle_value < 0.0 && (relaxed_point - particle).dot(normal) > 0.0;
}

}  // namespace

bool StaysStatic(double tangential_length, double allowed_length, double coordinate_scale) {
  constexpr double kSlack = 16.0 * std::numeric_limits<double>::epsilon();
  return tangential_length <= allowed_length + kSlack * (allowed_length + coordinate_scale);
}

Relaxation RelaxAgainstPlane(const Vector3& attachment, const Vector3& particle, const Vector3& plane_point,
                             const Vector3& normal, double friction_coefficient) {
  Relaxation relaxation;
  relaxation.normal = normal;
  // φ(Z) and the closest point W = Z − φ n (spec §2.3).
  const double height = normal.dot(particle - plane_point);
  const Vector3 closest = particle - height * normal;
  const Vector3 offset = attachment - closest;  // X − W, tangential
  const double length = offset.norm();          // ℓ
  const double allowed = friction_coefficient * std::abs(height);
  relaxation.particle_value = height;
  if (IsStatic(length, allowed, attachment, closest)) {
    // Static: the cone holds at Y = X; Y does not depend on Z.
    relaxation.relaxed_point = attachment;
    relaxation.jacobian.setZero();
  } else {
    // Sliding: Y = W + s (X − W) with s = μ|φ|/ℓ < 1 (eq. 2). Differentiating, with
    // ∂W/∂Z = P_t, ∂|φ|/∂Z = sgn(φ) nᵀ and ∂t̂/∂Z = −(I − t̂t̂ᵀ) P_t / ℓ:
    //   ∂Y/∂Z = (1 − s) P_t + s t̂ t̂ᵀ P_t + sgn(φ) μ t̂ nᵀ.
    // For X on the plane (t̂ tangential, t̂ᵀ P_t = t̂ᵀ) and φ < 0 this is the formula
    // (1 − s)P_t − μ t̂ nᵀ + s t̂t̂ᵀ of spec §2.9; the general form stays exact when X is off
    // the plane by round-off.
    const double fraction = allowed / length;
    const Vector3 direction = offset / length;  // t̂
    const Matrix3 tangential_projector = Matrix3::Identity() - normal * normal.transpose();
    relaxation.sliding = true;
    relaxation.relaxed_point = closest + fraction * offset;
    relaxation.jacobian = (1.0 - fraction) * tangential_projector +
                          fraction * direction * (direction.transpose() * tangential_projector) +
                          SignOf(height) * friction_coefficient * direction * normal.transpose();
  }
  relaxation.active = IsActive(height, relaxation.relaxed_point, particle, normal);
  return relaxation;
}

Relaxation RelaxAgainstLevelSet(const Vector3& attachment, const Vector3& particle, const LevelSetFunction& level_set,
                                double friction_coefficient) {
  Relaxation relaxation;
  const LevelSetSample particle_sample = level_set(particle);
  const double particle_value = particle_sample.value;
  relaxation.particle_value = particle_value;
  const NormalAndDerivative particle_normal = UnitNormal(particle_sample);

  // Static result Y = X, with the normal at X (n(Z) if X is degenerate too).
  const auto stay_at_attachment = [&]() {
    relaxation.relaxed_point = attachment;
    relaxation.jacobian.setZero();
    const NormalAndDerivative attachment_normal = UnitNormal(level_set(attachment));
    relaxation.normal = attachment_normal.degenerate ? particle_normal.normal : attachment_normal.normal;
    relaxation.active = IsActive(particle_value, relaxation.relaxed_point, particle, relaxation.normal);
    return relaxation;
  };

  // No direction at Z: W cannot be formed, keep the attachment (spec A6, extended to Z).
  if (particle_normal.degenerate) {
    relaxation.degenerate_normal = true;
    return stay_at_attachment();
  }

  // Closest point W = Z − φ(Z) n(Z) and the static test ‖X − W‖ ≤ μ|φ(Z)| (spec A6).
  const Vector3& normal_at_particle = particle_normal.normal;
  const Vector3 closest = particle - particle_value * normal_at_particle;
  const Vector3 offset = attachment - closest;  // X − W
  const double length = offset.norm();          // ℓ
  const double allowed = friction_coefficient * std::abs(particle_value);
  if (IsStatic(length, allowed, attachment, closest)) return stay_at_attachment();

  // Sliding along the chord K = W + s (X − W), s = μ|φ(Z)|/ℓ < 1, projected back to the
  // surface along the normal at K (spec §2.4).
  relaxation.sliding = true;
  const double fraction = allowed / length;
  const Vector3 direction = offset / length;  // t̂
  const Vector3 chord_point = closest + fraction * offset;
  const LevelSetSample chord_sample = level_set(chord_point);
  const NormalAndDerivative chord_normal = UnitNormal(chord_sample);

  // Derivatives (spec §2.9, with n = ∇φ/‖∇φ‖ and ∂n/∂x from UnitNormal):
  //   J_W = ∂W/∂Z = I − n(Z) ∇φ(Z)ᵀ − φ(Z) ∂n/∂Z,
  //   ∂s/∂Z = μ (sgn(φ) ∇φ(Z)ᵀ / ℓ + |φ| t̂ᵀ J_W / ℓ²),
  //   ∂K/∂Z = (1 − s) J_W + (X − W) ∂s/∂Z.
  const Matrix3 closest_jacobian = Matrix3::Identity() - normal_at_particle * particle_sample.gradient.transpose() -
                                   particle_value * particle_normal.derivative;
  const Eigen::RowVector3d fraction_gradient =
      friction_coefficient * (SignOf(particle_value) * particle_sample.gradient.transpose() / length +
                              std::abs(particle_value) * direction.transpose() * closest_jacobian / (length * length));
  const Matrix3 chord_jacobian = (1.0 - fraction) * closest_jacobian + offset * fraction_gradient;

  // Projection Y = K − φ(K) n, with n = n(K), or n(Z) in the A6 fallback. Its derivative
  // with respect to K is I − n ∇φ(K)ᵀ − φ(K) ∂n/∂K, chained with ∂K/∂Z (for the fallback
  // n(Z) varies with Z instead: − φ(K) ∂n(Z)/∂Z).
  if (chord_normal.degenerate) {
    relaxation.degenerate_normal = true;
    relaxation.normal = normal_at_particle;
    relaxation.relaxed_point = chord_point - chord_sample.value * normal_at_particle;
    relaxation.jacobian =
        (Matrix3::Identity() - normal_at_particle * chord_sample.gradient.transpose()) * chord_jacobian -
        chord_sample.value * particle_normal.derivative;
  } else {
    relaxation.normal = chord_normal.normal;
    relaxation.relaxed_point = chord_point - chord_sample.value * chord_normal.normal;
    const Matrix3 projection_jacobian = Matrix3::Identity() - chord_normal.normal * chord_sample.gradient.transpose() -
                                        chord_sample.value * chord_normal.derivative;
    relaxation.jacobian = projection_jacobian * chord_jacobian;
  }
  relaxation.active = IsActive(particle_value, relaxation.relaxed_point, particle, relaxation.normal);
  return relaxation;
}

PenaltyForce SpringForce(const Relaxation& relaxation, const Vector3& particle, double stiffness) {
  PenaltyForce result;
  if (!relaxation.active) return result;
  result.force = stiffness * (relaxation.relaxed_point - particle);
  result.jacobian = stiffness * (relaxation.jacobian - Matrix3::Identity());
  return result;
}

}  // namespace contactlab::penalty
