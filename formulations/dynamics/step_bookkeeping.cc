#include "formulations/dynamics/step_bookkeeping.h"

#include "mpm/cloth_particles.h"

namespace contactlab::dynamics {

void RecordClothPinForces(const World& world, double weight, StepReport& report) {
  if (world.particles.cloth_pins.empty()) return;
  const std::vector<mpm::Vector3> forces = mpm::ClothPinForces(world.particles, world.materials);
  report.pin_forces.resize(forces.size(), mpm::Vector3::Zero());
  for (std::size_t pin = 0; pin < forces.size(); ++pin) report.pin_forces[pin] += weight * forces[pin];
}

void RecordParticleContactImpulse(const World& world, const contact::ParticleContact& point,
                                  const mpm::Vector3& impulse_on_particle, double dt, StepReport& report) {
  const mpm::Vector3 impulse_on_body = -impulse_on_particle;
  BodyWrench& wrench = report.contact_wrench[point.body];
  wrench.force += impulse_on_body / dt;
  wrench.torque += (point.position - world.bodies[point.body].pose.position).cross(impulse_on_body) / dt;
  report.contact_forces.push_back(ContactForce{point.body, point.geometry, point.position, point.frame.col(2),
                                               impulse_on_particle / dt, point.friction_coefficient});
}

void RecordWallImpulses(const std::vector<contact::WallImpulse>& impulses, double dt, StepReport& report) {
  for (std::size_t b = 0; b < impulses.size(); ++b) {
    report.contact_wrench[b].force += impulses[b].linear / dt;
    report.contact_wrench[b].torque += impulses[b].angular / dt;
  }
}

}  // namespace contactlab::dynamics
