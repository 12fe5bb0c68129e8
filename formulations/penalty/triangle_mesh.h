#pragma once
// Triangle surface mesh with the adjacency and pseudo-normals needed by the relaxation of
// attachments on meshes (spec §2.5): neighbours across edges, triangles around vertices,
// face normals, and the edge and vertex pseudo-normals of the separation test.
//
// Edge convention: edge e of a triangle (vertices v0, v1, v2) is the edge opposite vertex e,
// joining v_{(e+1) mod 3} and v_{(e+2) mod 3}; it is where the barycentric coordinate λ_e
// vanishes.
#include <array>
#include <vector>

#include "mpm/types.h"

namespace contactlab::penalty {

using mpm::Vector3;

struct TriangleMesh {
  std::vector<Vector3> vertices;
  std::vector<std::array<int, 3>> triangles;  // counter-clockwise seen from outside

  // ---- Built by BuildAdjacency() ----
  // neighbors[t][e]: the triangle across edge e of t, −1 on an open boundary.
  std::vector<std::array<int, 3>> neighbors;
  // vertex_triangles[v]: the triangles having v as a corner.
  std::vector<std::vector<int>> vertex_triangles;
  // Unit face normals; zero for a degenerate (zero-area) triangle.
  std::vector<Vector3> face_normals;
  // degenerate[t]: twice the area is at most 128ε times the longest edge squared.
  std::vector<bool> degenerate;
  // Angle-weighted vertex pseudo-normals (unit; +z if no incident face has an area).
  std::vector<Vector3> vertex_normals;
  // edge_normals[t][e]: normalized sum of the face normals on both sides of edge e of t (t's
  // own normal on an open boundary or when the sum vanishes).
  std::vector<std::array<Vector3, 3>> edge_normals;

  // Fills the members above from `vertices` and `triangles`. Throws std::invalid_argument
  // on an out-of-range or repeated vertex index, an edge shared by more than two triangles,
  // or two triangles sharing an edge in the same direction (inconsistent orientation).
  void BuildAdjacency();

  // Axis-aligned box centred at the origin, 12 triangles, normals outward, adjacency built.
  static TriangleMesh Box(const Vector3& half_extents);

  // Local index (0..2) of global vertex `vertex` in triangle `triangle`, −1 if absent.
  int LocalIndex(int triangle, int vertex) const;
};

// A point on the mesh: a triangle and barycentric coordinates (λ0, λ1, λ2) of its corners.
struct MeshPoint {
  int triangle = -1;
  Vector3 barycentric = Vector3::Zero();
};

// Closest point of the mesh to `point` (brute force over all triangles; first on ties).
MeshPoint ClosestPointOnMesh(const TriangleMesh& mesh, const Vector3& point);
// Position of a mesh point: Σ λ_i v_i.
Vector3 PointOnMesh(const TriangleMesh& mesh, const MeshPoint& p);

}  // namespace contactlab::penalty
