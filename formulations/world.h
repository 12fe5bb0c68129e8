#pragma once
// The physical state a formulation advances: MPM particles and their materials, rigid
// bodies, gravity and time. Formulations own only scratch state (grids, factorizations,
// attachments); everything a scenario observes lives here.
#include <vector>

#include "mpm/material.h"
#include "mpm/particles.h"
#include "rigid/rigid_body.h"

namespace contactlab {

struct World {
  double time = 0.0;                                      // [s]
  mpm::Vector3 gravity = mpm::Vector3(0.0, 0.0, -9.81);   // [m/s²]
  double grid_spacing = 0.0;                              // h [m]
  mpm::Particles particles;
  std::vector<mpm::Material> materials;                   // indexed by particle material id
  std::vector<rigid::RigidBody> bodies;
};

}  // namespace contactlab
