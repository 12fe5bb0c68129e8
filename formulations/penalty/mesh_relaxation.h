#pragma once
// Relaxation of a penalty attachment over a triangle mesh: the 4-state machine of spec §2.5
// (1 inside a triangle, 2 entering a triangle across an edge or from a vertex, 3 sliding
// along an edge, 4 at a vertex), with the guards of §2.5 and A8, the separation test with
// face / edge / vertex pseudo-normals, and ∂Y/∂Z through the recorded state sequence by
// forward-mode automatic differentiation (A9). Mesh and points are in the mesh's own frame.
#include <vector>

#include "formulations/penalty/triangle_mesh.h"
#include "mpm/types.h"

namespace contactlab::penalty {

using mpm::Matrix3;

// Most FSM steps of one relaxation (spec A8); reaching it stops with the current Y.
inline constexpr int kMaxMeshRelaxationSteps = 64;

struct MeshRelaxation {
  Vector3 relaxed_point = Vector3::Zero();  // Y
  MeshPoint relaxed_location;               // Y's triangle and barycentrics
  // Face normal, edge pseudo-normal or vertex pseudo-normal of the feature where Y ended
  // (spec §2.5 separation test). A point with an exactly zero barycentric coordinate is on
  // an edge (two zeros: at a vertex).
  Vector3 normal = Vector3::UnitZ();
  bool active = false;   // (Y − Z)·normal > 0
  bool sliding = false;  // Y ≠ X
  // ∂Y/∂Z with the state sequence frozen (forward-mode AD with ceres::Jet<double, 3> through
  // the recorded sequence of smooth maps). Zero while Y = X or Y is a vertex.
  Matrix3 jacobian = Matrix3::Zero();
  std::vector<int> states;    // visited FSM states, e.g. {1}, {1,2}, {1,2,3,4,2}
  bool hit_step_cap = false;  // kMaxMeshRelaxationSteps reached (spec A8)
};

// Relaxes the attachment X (a point on `mesh`) toward the particle Z with friction
// coefficient μ. A triangle flagged degenerate by BuildAdjacency has no plane to relax in: an
// attachment on it stays put, and it acts like an open boundary for the neighbours (the
// attachment slides along the shared edge instead of entering it).
MeshRelaxation RelaxAgainstMesh(const TriangleMesh& mesh, const MeshPoint& attachment, const Vector3& particle,
                                double friction_coefficient);

}  // namespace contactlab::penalty
