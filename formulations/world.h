#pragma once
// The physical state a formulation advances: MPM particles and their materials, rigid
// bodies, an optional articulated multibody tree, gravity and time. Formulations own only
// scratch state (grids, factorizations, attachments); everything a scenario observes lives
// here.
#include <string>
#include <vector>

#include "mpm/material.h"
#include "mpm/particles.h"
#include "rigid/multibody.h"
#include "rigid/rigid_body.h"

namespace contactlab {
class StateArchive;
}

namespace contactlab {

struct World {
  double time = 0.0;                                     // [s]
  mpm::Vector3 gravity = mpm::Vector3(0.0, 0.0, -9.81);  // [m/s²]
  double grid_spacing = 0.0;                             // h [m]
  mpm::Particles particles;
  std::vector<mpm::Material> materials;  // indexed by particle material id
  // Every rigid body contact code sees, articulated links included (motion kArticulated,
  // mirrored from `multibody` by SyncArticulatedBodies).
  std::vector<rigid::RigidBody> bodies;
  rigid::MultibodyTree multibody;
};

// Adds a link to world.multibody and its mirror body to world.bodies. Geometries are given
// in a frame G of the link; mass, centre of mass and inertia come from `density` [kg/m³],
// the link frame is placed at the centre of mass (axes of G), and joint.frame_on_child is
// read in G and moved to the link frame. Returns the index in world.bodies.
int AddArticulatedBody(World& world, const std::string& name, std::vector<rigid::Geometry> geometries, double density,
                       rigid::JointSpec joint);

// Empty when every particle's position, velocity and deformation gradient and every body's
// pose and velocity are finite; else a description of the first value that is not. The run
// checks it after each step, the explicit formulations before each substep.
std::string FindNonFiniteState(const World& world);

// Saves or loads what the world carries from step to step (StateArchive): time, every
// particle field that a step changes, the cloth pins' holding flags, each body's pose, velocity
// and applied load, and the multibody tree's q, v and time (its kinematics are updated on
// loading). What the scenario's Build sets once (materials, geometries, masses, cloth faces,
// trajectories) is rebuilt, not stored; loading checks that the counts match the rebuilt world.
void VisitState(StateArchive& archive, World& world);

// Copies every link's pose and spatial velocity from world.multibody into its mirror body
// (after multibody.UpdateKinematics()).
void SyncArticulatedBodies(World& world);

}  // namespace contactlab
