#pragma once
// Static supports as boundary conditions on the MPM grid (rigid::GridBoundary): instead of
// registering particle contacts against the body, every formulation constrains the velocity
// of the grid nodes that lie inside its geometry (φ ≤ 0), the wall of most MPM codes
// (Stomakhin et al. 2013 §8; thesis §1.6 for hybrid_impulse's static bodies). With n̂ the
// outward normal of the wall at the node (of the geometry the node is deepest in):
//   sticky      v_i = 0;
//   slip        v_i·n̂ = 0, the tangential part free (frictionless, no separation);
//   separating  no approach, v_i·n̂ ≥ 0, and Coulomb friction with the geometry's μ: the
//               collision of coulomb_collision.h against an infinite mass.
// Grid walls are static (the body is checked), so the wall velocity is zero.
//
// The explicit formulations (quasi_newton, hybrid_impulse) project the grid velocities after
// each grid update (ApplyGridBoundary). The implicit ones (sap, penalty) make the walls
// constraints of the step's Newton solves instead (ImplicitMpm::ConstrainGridBoundary):
// a projection after an implicit solve would let the solve's elasticity ignore the support,
// and the unsupported body would sink by g Δt every step.
#include <cstdint>
#include <vector>

#include "formulations/parameters.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"
#include "rigid/rigid_body.h"

namespace contactlab::contact {

using mpm::Vector3;

// "contact_body", "sticky", "slip", "separating" (scene keys that choose a support's model).
const ChoiceTable<rigid::GridBoundary>& GridBoundaryNames();

// One grid node inside a grid-boundary body.
struct GridBoundaryNode {
  int node = -1;                       // grid node index
  int body = -1;                       // world body
  Vector3 position = Vector3::Zero();  // of the node, world [m]
  rigid::GridBoundary kind = rigid::GridBoundary::kSticky;
  Vector3 normal = Vector3::UnitZ();  // outward unit normal of the wall at the node, world
  double friction_coefficient = 0.0;  // μ of the geometry [-]
};

// Impulse a wall body received over a step [N s], and its moment about the body's centre of
// mass [N m s].
struct WallImpulse {
  Vector3 linear = Vector3::Zero();
  Vector3 angular = Vector3::Zero();
};

// Every node of `grid` with mass inside a geometry of a grid-boundary body, in node order:
// one record per wall geometry the node lies in, deepest first, so that a node at a concave
// edge or corner of several walls (a container) is held along each wall's normal. Throws
// InputError naming the body when a grid-boundary body is not static.
std::vector<GridBoundaryNode> FindGridBoundaryNodes(const mpm::SparseGrid& grid,
                                                    const std::vector<rigid::RigidBody>& bodies);

// True when some body of `bodies` is a grid boundary.
bool HasGridBoundary(const std::vector<rigid::RigidBody>& bodies);

// Explicit formulations: projects grid.velocity of `nodes` onto their walls' conditions, one
// record after the other, and adds to `impulses` (one per body) what each wall received,
// −Σ m_i Δv_i and its moment.
void ApplyGridBoundary(const std::vector<GridBoundaryNode>& nodes, const std::vector<rigid::RigidBody>& bodies,
                       mpm::SparseGrid& grid, std::vector<WallImpulse>& impulses);

// Every formulation after its G2P: the particles that ended inside a grid wall. The walls
// hold nodes, not particles: a particle next to a wall moves with the free nodes of its
// stencil and can drift up to half a cell into the wall, where the held nodes keep it (a
// liquid or sand flowing along a wall loses particles into it). Each particle inside a wall
// geometry (φ < 0) is put back on its surface, x ← x − φ n̂, and its velocity meets the
// wall's condition as a node's would: sticky removes all of it, slip the approach v·n̂ < 0,
// separating the approach and, by Coulomb friction, the slip it can stop. The momentum the
// particles lose goes to `impulses` (one per body) like ApplyGridBoundary's. Returns the
// number of particles moved.
int ProjectParticlesOutOfGridWalls(const std::vector<rigid::RigidBody>& bodies, mpm::Particles& particles,
                                   std::vector<WallImpulse>& impulses);

// The implicit formulations' constraint on one node: which world components of its velocity
// are fixed at zero (bit k for axis k) in the step's solves. Sticky fixes all three, slip the
// normal axis, separating the normal axis when the node's predictor vⁿ + Δt g approaches the
// wall (the step's active set; a node leaving the wall is left free). The constrained
// components must be world axes: throws InputError naming the body when the wall's normal
// at a node is not along one (a tilted grid wall needs a rotated node basis, which the
// implicit solves do not have).
std::uint8_t ImplicitConstraintMask(const GridBoundaryNode& node, const Vector3& predictor,
                                    const std::vector<rigid::RigidBody>& bodies);

// Coulomb friction of a separating wall after an implicit solve: for a node whose normal
// axis was constrained and whose wall pushed it with normal impulse `normal_impulse` ≥ 0
// [N s], the tangential velocity shrinks by at most μ normal_impulse / m (to zero at most).
// Returns the change of the node's velocity [m/s].
Vector3 SeparatingWallFriction(const GridBoundaryNode& node, const Vector3& velocity, double node_mass,
                               double normal_impulse);

}  // namespace contactlab::contact
