#pragma once
// What every formulation books into its StepReport per contact impulse, written once.
#include "formulations/contact/grid_boundary.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/formulation.h"

namespace contactlab::dynamics {

// Books the impulse a rigid geometry gave an MPM particle at a particle contact, R_WC γ
// (world [N s]), over a step of dt [s]: the touched body receives the opposite as a
// step-mean force and torque about its centre of mass (report.contact_wrench, which must hold
// one wrench per body), and one ContactForce record carries the force on the particle,
// R_WC γ / Δt, so that a body's records sum to minus its wrench. A formulation that books
// several registrations per step (substeps) divides each by the whole step's dt, so the
// records sum to the step's mean force.
void RecordParticleContactImpulse(const World& world, const contact::ParticleContact& point,
                                  const mpm::Vector3& impulse_on_particle, double dt, StepReport& report);

// Books the force each cloth pin exerts on the free cloth at the particles' state
// (mpm::ClothPinForces), times `weight`, into report.pin_forces: an implicit step calls it once
// after its grid-to-particle transfer and before the return mapping (weight 1: the forces of
// the solved state), an explicit one before each substep's particle-to-grid transfer (weight
// δt/Δt: the forces that substep applies). No-op without pins.
void RecordClothPinForces(const World& world, double weight, StepReport& report);

// Books what grid-boundary walls received over a step of dt [s] (one WallImpulse per body,
// about its centre of mass) into report.contact_wrench as step-mean forces and torques.
void RecordWallImpulses(const std::vector<contact::WallImpulse>& impulses, double dt, StepReport& report);

}  // namespace contactlab::dynamics
