#include "formulations/dynamics/step_bookkeeping.h"

namespace contactlab::dynamics {

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
