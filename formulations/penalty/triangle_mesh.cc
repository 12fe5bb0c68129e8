#include "formulations/penalty/triangle_mesh.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace contactlab::penalty {
namespace {

constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

// Interior angle of a triangle at corner `corner`, from the two edges leaving it.
double CornerAngle(const Vector3& corner, const Vector3& first, const Vector3& second) {
  const Vector3 a = first - corner;
  const Vector3 b = second - corner;
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

// Closest point of triangle (a, b, c) to p as barycentric coordinates, by the Voronoi
// regions of the corners, edges and face (Ericson, Real-Time Collision Detection §5.1.5).
Vector3 ClosestBarycentric(const Vector3& p, const Vector3& a, const Vector3& b, const Vector3& c) {
  const Vector3 ab = b - a, ac = c - a, ap = p - a;
  const double d1 = ab.dot(ap), d2 = ac.dot(ap);
  if (d1 <= 0.0 && d2 <= 0.0) return Vector3(1, 0, 0);  // corner a
  const Vector3 bp = p - b;
  const double d3 = ab.dot(bp), d4 = ac.dot(bp);
  if (d3 >= 0.0 && d4 <= d3) return Vector3(0, 1, 0);  // corner b
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {  // edge ab
    const double t = d1 / (d1 - d3);
    return Vector3(1 - t, t, 0);
  }
  const Vector3 cp = p - c;
  const double d5 = ab.dot(cp), d6 = ac.dot(cp);
  if (d6 >= 0.0 && d5 <= d6) return Vector3(0, 0, 1);  // corner c
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {  // edge ac
    const double t = d2 / (d2 - d6);
    return Vector3(1 - t, 0, t);
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {  // edge bc
    const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return Vector3(0, 1 - t, t);
  }
  // Face interior. A degenerate (collinear) triangle can reach here with a zero
  // denominator: then take the closest of the points on its three edges.
  const double denominator = va + vb + vc;
  if (!(denominator > 0.0)) {
    const auto on_segment = [&](const Vector3& start, const Vector3& end) {
      const Vector3 direction = end - start;
      const double squared = direction.squaredNorm();
      return squared > 0.0 ? std::clamp((p - start).dot(direction) / squared, 0.0, 1.0) : 0.0;
    };
    const double t_ab = on_segment(a, b), t_bc = on_segment(b, c), t_ca = on_segment(c, a);
    const std::array<Vector3, 3> candidates = {Vector3(1 - t_ab, t_ab, 0), Vector3(0, 1 - t_bc, t_bc),
                                               Vector3(t_ca, 0, 1 - t_ca)};
    Vector3 best = candidates[0];
    double best_distance = std::numeric_limits<double>::infinity();
    for (const Vector3& candidate : candidates) {
      const double distance = (candidate[0] * a + candidate[1] * b + candidate[2] * c - p).norm();
      if (distance < best_distance) {
        best_distance = distance;
        best = candidate;
      }
    }
    return best;
  }
  const double v = vb / denominator, w = vc / denominator;
  return Vector3(1 - v - w, v, w);
}

}  // namespace

int TriangleMesh::LocalIndex(int triangle, int vertex) const {
  for (int i = 0; i < 3; ++i) {
    if (triangles[triangle][i] == vertex) return i;
  }
  return -1;
}

void TriangleMesh::BuildAdjacency() {
  const int vertex_count = static_cast<int>(vertices.size());
  const int triangle_count = static_cast<int>(triangles.size());

  // Validate indices.
  for (int t = 0; t < triangle_count; ++t) {
    const auto& corners = triangles[t];
    for (int i = 0; i < 3; ++i) {
      if (corners[i] < 0 || corners[i] >= vertex_count) {
        throw std::invalid_argument("TriangleMesh: triangle " + std::to_string(t) +
                                    " has an out-of-range vertex index");
      }
    }
    if (corners[0] == corners[1] || corners[1] == corners[2] || corners[0] == corners[2]) {
      throw std::invalid_argument("TriangleMesh: triangle " + std::to_string(t) + " repeats a vertex");
    }
  }

  // Directed edges: edge e of t runs from corner (e+1) to corner (e+2). A manifold,
  // consistently oriented mesh has each directed edge at most once, and its reverse (if
  // any) belongs to the neighbour.
  std::map<std::pair<int, int>, std::pair<int, int>> directed_edges;  // → (triangle, edge)
  for (int t = 0; t < triangle_count; ++t) {
    for (int e = 0; e < 3; ++e) {
      const std::pair<int, int> key(triangles[t][(e + 1) % 3], triangles[t][(e + 2) % 3]);
      if (!directed_edges.emplace(key, std::make_pair(t, e)).second) {
        throw std::invalid_argument("TriangleMesh: edge (" + std::to_string(key.first) + ", " +
                                    std::to_string(key.second) +
                                    ") is used twice in the same direction (non-manifold or inconsistently oriented)");
      }
    }
  }
  neighbors.assign(triangle_count, {-1, -1, -1});
  for (const auto& [key, owner] : directed_edges) {
    const auto reverse = directed_edges.find({key.second, key.first});
    if (reverse != directed_edges.end()) neighbors[owner.first][owner.second] = reverse->second.first;
  }
  // With every directed edge unique, an undirected edge has at most one triangle per
  // direction, so at most two triangles: the mesh is edge-manifold.

  // Face normals and degeneracy.
  face_normals.assign(triangle_count, Vector3::Zero());
  degenerate.assign(triangle_count, false);
  for (int t = 0; t < triangle_count; ++t) {
    const Vector3& a = vertices[triangles[t][0]];
    const Vector3& b = vertices[triangles[t][1]];
    const Vector3& c = vertices[triangles[t][2]];
    const Vector3 doubled_area_vector = (b - a).cross(c - a);
    const double longest_squared = std::max({(b - a).squaredNorm(), (c - b).squaredNorm(), (a - c).squaredNorm()});
    const double doubled_area = doubled_area_vector.norm();
    if (!(doubled_area > 128.0 * kEpsilon * longest_squared)) {
      degenerate[t] = true;
      continue;
    }
    face_normals[t] = doubled_area_vector / doubled_area;
  }

  // Triangles around each vertex and angle-weighted vertex pseudo-normals.
  vertex_triangles.assign(vertex_count, {});
  std::vector<Vector3> weighted(vertex_count, Vector3::Zero());
  for (int t = 0; t < triangle_count; ++t) {
    for (int i = 0; i < 3; ++i) {
      const int vertex = triangles[t][i];
      vertex_triangles[vertex].push_back(t);
      if (degenerate[t]) continue;
      const double angle =
          CornerAngle(vertices[vertex], vertices[triangles[t][(i + 1) % 3]], vertices[triangles[t][(i + 2) % 3]]);
      weighted[vertex] += angle * face_normals[t];
    }
  }
  vertex_normals.assign(vertex_count, Vector3::UnitZ());
  for (int v = 0; v < vertex_count; ++v) {
    const double length = weighted[v].norm();
    if (length > 0.0) vertex_normals[v] = weighted[v] / length;
  }

  // Edge pseudo-normals.
  edge_normals.assign(triangle_count, {Vector3::UnitZ(), Vector3::UnitZ(), Vector3::UnitZ()});
  for (int t = 0; t < triangle_count; ++t) {
    for (int e = 0; e < 3; ++e) {
      Vector3 sum = face_normals[t];
      if (neighbors[t][e] >= 0) sum += face_normals[neighbors[t][e]];
      const double length = sum.norm();
      if (length > 1e-12) {
        edge_normals[t][e] = sum / length;
      } else if (!degenerate[t]) {
        edge_normals[t][e] = face_normals[t];
      }
    }
  }
}

TriangleMesh TriangleMesh::Box(const Vector3& half_extents) {
  TriangleMesh mesh;
  // Corner i has coordinate signs from its bits: bit 0 → x, bit 1 → y, bit 2 → z.
  for (int i = 0; i < 8; ++i) {
    mesh.vertices.push_back(Vector3((i & 1) ? half_extents.x() : -half_extents.x(),
                                    (i & 2) ? half_extents.y() : -half_extents.y(),
                                    (i & 4) ? half_extents.z() : -half_extents.z()));
  }
  // Each face: the four corners with a fixed sign on one axis, in cyclic order, split along
  // a diagonal; each triangle is flipped if needed so that it faces outward.
  for (int axis = 0; axis < 3; ++axis) {
    const int first = 1 << ((axis + 1) % 3);
    const int second = 1 << ((axis + 2) % 3);
    for (const int side : {0, 1}) {
      const int base = side ? (1 << axis) : 0;
      const std::array<int, 4> quad = {base, base | first, base | first | second, base | second};
      const Vector3 outward = (side ? 1.0 : -1.0) * Vector3::Unit(axis);
      for (const std::array<int, 3>& triangle :
           {std::array<int, 3>{quad[0], quad[1], quad[2]}, std::array<int, 3>{quad[0], quad[2], quad[3]}}) {
        const Vector3& a = mesh.vertices[triangle[0]];
        const Vector3 normal = (mesh.vertices[triangle[1]] - a).cross(mesh.vertices[triangle[2]] - a);
        mesh.triangles.push_back(normal.dot(outward) > 0.0 ? triangle
                                                           : std::array<int, 3>{triangle[0], triangle[2], triangle[1]});
      }
    }
  }
  mesh.BuildAdjacency();
  return mesh;
}

MeshPoint ClosestPointOnMesh(const TriangleMesh& mesh, const Vector3& point) {
  MeshPoint best;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int t = 0; t < static_cast<int>(mesh.triangles.size()); ++t) {
    const auto& corners = mesh.triangles[t];
    const Vector3 barycentric =
        ClosestBarycentric(point, mesh.vertices[corners[0]], mesh.vertices[corners[1]], mesh.vertices[corners[2]]);
    const MeshPoint candidate{t, barycentric};
    const double distance = (PointOnMesh(mesh, candidate) - point).squaredNorm();
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

Vector3 PointOnMesh(const TriangleMesh& mesh, const MeshPoint& p) {
  const auto& corners = mesh.triangles[p.triangle];
  return p.barycentric[0] * mesh.vertices[corners[0]] + p.barycentric[1] * mesh.vertices[corners[1]] +
         p.barycentric[2] * mesh.vertices[corners[2]];
}

}  // namespace contactlab::penalty
