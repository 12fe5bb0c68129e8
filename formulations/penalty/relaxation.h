#pragma once
// Relaxation of a penalty attachment along an object's surface (spec §2.2–§2.4): the
// attachment X is slid toward the particle's closest surface point W, to the relaxed point
// Y = P(X, Z), just far enough that the zero-length spring k (Y − Z) lies in the Coulomb
// cone of friction coefficient μ. Also the analytic derivative ∂Y/∂Z of spec §2.9 and the
// spring force built from it.
//
// Besides the double-precision functions (value and analytic Jacobian), the header provides
// templated value-only versions with the static/sliding branch given by the caller, so that
// tests can differentiate them with ceres::Jet and compare with the analytic Jacobian.
#include <cmath>
#include <functional>

#include "mpm/types.h"

namespace contactlab::penalty {

using mpm::Matrix3;
using mpm::Vector3;

// A level set evaluated at a world point: φ, ∇φ (= outward normal for a signed distance) and
// ∇²φ.
struct LevelSetSample {
  double value = 0;
  Vector3 gradient = Vector3::UnitZ();
  Matrix3 hessian = Matrix3::Zero();
};
using LevelSetFunction = std::function<LevelSetSample(const Vector3& world_point)>;

// A gradient shorter than this is treated as ill-defined (sonic point, spec §5 A6). For a
// signed distance ‖∇φ‖ = 1 wherever it is differentiable.
inline constexpr double kDegenerateGradientNorm = 1e-8;

// Static test of spec §2.3 / A6, ‖X − W‖ ≤ μ|φ(Z)| (`tangential_length` ≤ `allowed_length`),
// with a slack of 16ε·(allowed_length + coordinate_scale): a point already placed on the cone
// by a previous relaxation then counts as static despite the round-off of recomputing its
// distance to W (a few ε times the size of the coordinates, `coordinate_scale`), so that
// P(Y, Z) = Y holds exactly on flat surfaces. The switch moves by round-off only, where the
// force is continuous anyway.
bool StaysStatic(double tangential_length, double allowed_length, double coordinate_scale);

struct Relaxation {
  Vector3 relaxed_point = Vector3::Zero();  // Y = P(X, Z)
  // n used by the cone and the separation test: n(X) when static (Y = X), n(K) when sliding
  // (for a signed distance n(K) = n(Y) since Y is K's closest point), n(Z) in the A6
  // fallback; the plane normal for a plane.
  Vector3 normal = Vector3::UnitZ();
  bool sliding = false;  // the cone was violated at X, so Y moved toward W
  bool active = false;   // φ(Z) < 0 and (Y − Z)·n > 0 (spec A7): the spring applies force
  // ∂Y/∂Z with the static/sliding decision frozen (zero when static, since Y = X).
  Matrix3 jacobian = Matrix3::Zero();
  bool degenerate_normal = false;  // spec A6 fallback was used
  double particle_value = 0.0;     // φ(Z), the signed distance of the particle [m]
};

// Plane through `plane_point` with outward unit normal `normal` (spec §2.3, eq. 2 and the
// closed forms).
Relaxation RelaxAgainstPlane(const Vector3& attachment, const Vector3& particle, const Vector3& plane_point,
                             const Vector3& normal, double friction_coefficient);

// General level set (spec §2.4, "what [P] actually does", with the A6 guards). The normal
// used is ∇φ/‖∇φ‖, so the level set need not be an exact signed distance for the Jacobian to
// be exact; for a signed distance this is ∇φ itself and the formulas are those of §2.9.
// Guards (A6): static iff ‖X − W‖ ≤ μ|φ(Z)| (covers X = W); a degenerate gradient at Z
// keeps Y = X (no direction to slide along is known); a degenerate gradient at K projects
// K back along n(Z) instead. Both set `degenerate_normal`.
Relaxation RelaxAgainstLevelSet(const Vector3& attachment, const Vector3& particle, const LevelSetFunction& level_set,
                                double friction_coefficient);

// Penalty force f = k (Y − Z) on the particle and its Jacobian ∂f/∂Z = k(∂Y/∂Z − I) (zero
// when inactive).
struct PenaltyForce {
  Vector3 force = Vector3::Zero();
  Matrix3 jacobian = Matrix3::Zero();
};
PenaltyForce SpringForce(const Relaxation& relaxation, const Vector3& particle, double stiffness);

// ---- Templated value-only versions (branch frozen), for automatic differentiation --------

template <typename T>
using Vector3Of = Eigen::Matrix<T, 3, 1>;

// Y of RelaxAgainstPlane with the static/sliding decision given by `sliding` (spec §2.3).
template <typename T>
Vector3Of<T> PlaneRelaxedPointFrozen(const Vector3Of<T>& attachment, const Vector3Of<T>& particle,
                                     const Vector3& plane_point, const Vector3& normal, double friction_coefficient,
                                     bool sliding) {
  using std::abs;
  using std::sqrt;
  if (!sliding) return attachment;
  const Vector3Of<T> unit_normal = normal.cast<T>();
  const T height = unit_normal.dot(particle - plane_point.cast<T>());                  // φ(Z)
  const Vector3Of<T> closest = particle - height * unit_normal;                        // W
  const Vector3Of<T> offset = attachment - closest;                                    // X − W
  const T fraction = friction_coefficient * abs(height) / sqrt(offset.squaredNorm());  // s
  return closest + fraction * offset;
}

// Y of RelaxAgainstLevelSet with the decisions given. `level_set` is a functor usable with
// any scalar type T:
//   template <typename T> T operator()(const Vector3Of<T>& point, Vector3Of<T>* gradient) const
// returning φ(point) and writing ∇φ(point). `degenerate_normal` selects the A6 fallback at
// K (projection along n(Z)); a degenerate gradient at Z always means static.
template <typename T, typename TemplatedLevelSet>
Vector3Of<T> LevelSetRelaxedPointFrozen(const Vector3Of<T>& attachment, const Vector3Of<T>& particle,
                                        const TemplatedLevelSet& level_set, double friction_coefficient, bool sliding,
                                        bool degenerate_normal = false) {
  using std::abs;
  using std::sqrt;
  if (!sliding) return attachment;
  // Closest point W = Z − φ(Z) n(Z).
  Vector3Of<T> particle_gradient;
  const T particle_value = level_set(particle, &particle_gradient);
  const Vector3Of<T> particle_normal = particle_gradient / sqrt(particle_gradient.squaredNorm());
  const Vector3Of<T> closest = particle - particle_value * particle_normal;
  // Chord point K = W + s (X − W) with the plane fraction s = μ|φ(Z)| / ‖X − W‖ (eq. 2).
  const Vector3Of<T> offset = attachment - closest;
  const T fraction = friction_coefficient * abs(particle_value) / sqrt(offset.squaredNorm());
  const Vector3Of<T> chord_point = closest + fraction * offset;
  // Projection back to the surface: Y = K − φ(K) n(K), or along n(Z) in the fallback.
  Vector3Of<T> chord_gradient;
  const T chord_value = level_set(chord_point, &chord_gradient);
  if (degenerate_normal) return chord_point - chord_value * particle_normal;
  return chord_point - chord_value * chord_gradient / sqrt(chord_gradient.squaredNorm());
}

}  // namespace contactlab::penalty
