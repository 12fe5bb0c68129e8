#pragma once
// The velocity-level frictional collision used by explicit impulse exchange: two velocities
// meeting across a surface with unit normal n̂ (pointing from side 1 into side 2), with
// reduced mass m̄ = m₁m₂/(m₁+m₂) (m̄ = m₂ when side 1 has infinite mass).
// With v_r = v₁ − v₂ the approach speed is v_r·n̂ > 0 and the impulse on side 2 is
//   I_n = (1 + e) m̄ (v_r·n̂),  J_t = min(μ I_n, m̄ ‖v_t‖),  P₂ = I_n n̂ + J_t v_t/‖v_t‖,
// with v_t the tangential part of v_r; side 1 receives −P₂. This is the corrected friction
// of spec-penalty-hybrid §3.5 E6: one friction impulse for both sides, so momentum is
// conserved and the tangential slip never reverses; restitution e follows E2 (0 = inelastic).
// For m₁ → ∞ it reduces to the Coulomb grid boundary condition of §1.6.
#include "mpm/types.h"

namespace contactlab::contact {

struct CoulombCollisionResult {
  mpm::Vector3 impulse_on_second = mpm::Vector3::Zero();  // P₂ [N s]; side 1 gets −P₂
  bool approaching = false;                               // v_r·n̂ > 0
  bool sticking = false;                                  // friction removed all slip
};

inline CoulombCollisionResult ResolveCoulombCollision(const mpm::Vector3& first_velocity,
                                                      const mpm::Vector3& second_velocity,
                                                      const mpm::Vector3& unit_normal, double reduced_mass,
                                                      double friction_coefficient, double restitution) {
  CoulombCollisionResult result;
  const mpm::Vector3 relative_velocity = first_velocity - second_velocity;
  const double approach_speed = relative_velocity.dot(unit_normal);
  if (approach_speed <= 0.0) return result;  // separating or resting: no impulse (no cohesion)
  result.approaching = true;

  // Normal impulse removes (e = 0) or reverses (e > 0) the approach.
  const double normal_impulse = (1.0 + restitution) * reduced_mass * approach_speed;
  result.impulse_on_second = normal_impulse * unit_normal;

  // One friction impulse, capped by the cone and by the slip it can remove.
  const mpm::Vector3 tangential_velocity = relative_velocity - approach_speed * unit_normal;
  const double slip_speed = tangential_velocity.norm();
  if (slip_speed > 0.0) {
    const double stick_impulse = reduced_mass * slip_speed;
    const double friction_impulse = std::min(friction_coefficient * normal_impulse, stick_impulse);
    result.sticking = friction_impulse >= stick_impulse;
    result.impulse_on_second += (friction_impulse / slip_speed) * tangential_velocity;
  } else {
    result.sticking = true;
  }
  return result;
}

}  // namespace contactlab::contact
