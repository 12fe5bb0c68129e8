#include "formulations/penalty/mesh_relaxation.h"

#include <ceres/jet.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "formulations/penalty/relaxation.h"

namespace contactlab::penalty {
namespace {

constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
// Guard 1 of spec §2.5: a barycentric weight above 1 − 128ε snaps to its vertex.
constexpr double kSnapThreshold = 1.0 - 128.0 * kEpsilon;

using Jet3 = ceres::Jet<double, 3>;

// ---- Smooth maps, templated on the scalar so the recorded sequence can be replayed with
// ---- Jets. The mesh geometry is constant (double); Y and Z carry the scalar type.

// Euclidean norm whose derivative at the zero vector is taken as zero (instead of NaN).
template <typename T>
T SafeNorm(const Vector3Of<T>& vector) {
  using std::sqrt;
  const T squared = vector.squaredNorm();
  if (squared == T(0.0)) return T(0.0);
  return sqrt(squared);
}

// Barycentric coordinates of the projection of `point` on the plane of triangle t.
template <typename T>
Vector3Of<T> BarycentricOf(const TriangleMesh& mesh, int t, const Vector3Of<T>& point) {
  const Vector3& a = mesh.vertices[mesh.triangles[t][0]];
  const Vector3 first = mesh.vertices[mesh.triangles[t][1]] - a;
  const Vector3 second = mesh.vertices[mesh.triangles[t][2]] - a;
  const double d00 = first.dot(first), d01 = first.dot(second), d11 = second.dot(second);
  const double denominator = d00 * d11 - d01 * d01;
  const Vector3Of<T> offset = point - a.cast<T>();
  const T d20 = offset.dot(first.cast<T>());
  const T d21 = offset.dot(second.cast<T>());
  Vector3Of<T> barycentric;
  barycentric(1) = (d11 * d20 - d01 * d21) / denominator;
  barycentric(2) = (d00 * d21 - d01 * d20) / denominator;
  barycentric(0) = T(1.0) - barycentric(1) - barycentric(2);
  return barycentric;
}

// In-plane relaxation of spec §2.5 states 1–2 (the plane rule of §2.3 in triangle t's plane),
// sliding branch: Ŷ = W_T + s (Y − W_T).
template <typename T>
Vector3Of<T> TriangleRelaxed(const TriangleMesh& mesh, int t, const Vector3Of<T>& current, const Vector3Of<T>& particle,
                             double friction) {
  return PlaneRelaxedPointFrozen<T>(current, particle, mesh.vertices[mesh.triangles[t][0]], mesh.face_normals[t],
                                    friction, true);
}

// Exit point of the segment Y → Ŷ through edge e of triangle t:
// Y + t* (Ŷ − Y) with t* = λ_e(Y) / (λ_e(Y) − λ_e(Ŷ)).
template <typename T>
Vector3Of<T> ExitPoint(const TriangleMesh& mesh, int t, int edge, const Vector3Of<T>& current,
                       const Vector3Of<T>& target) {
  const T current_weight = BarycentricOf<T>(mesh, t, current)(edge);
  const T target_weight = BarycentricOf<T>(mesh, t, target)(edge);
  const T fraction = current_weight / (current_weight - target_weight);
  return current + fraction * (target - current);
}

// Closest point W_e of the line through `start` and `end` to the particle, and the distance.
template <typename T>
Vector3Of<T> ClosestOnLine(const Vector3& start, const Vector3& end, const Vector3Of<T>& particle) {
  const Vector3 direction = (end - start).normalized();
  const Vector3Of<T> offset = particle - start.cast<T>();
  return start.cast<T>() + offset.dot(direction.cast<T>()) * direction.cast<T>();
}

// Relaxation along an edge line (spec §2.5 state 3), sliding branch:
// Ŷ = W_e + s (Y − W_e), s = μ‖Z − W_e‖ / ‖Y − W_e‖.
template <typename T>
Vector3Of<T> EdgeRelaxed(const Vector3& start, const Vector3& end, const Vector3Of<T>& current,
                         const Vector3Of<T>& particle, double friction) {
  const Vector3Of<T> closest = ClosestOnLine<T>(start, end, particle);
  const Vector3Of<T> offset = current - closest;
  const T fraction = friction * SafeNorm<T>(Vector3Of<T>(particle - closest)) / SafeNorm<T>(offset);
  return closest + fraction * offset;
}

// ---- Recorded sequence -------------------------------------------------------------------

// One smooth map Y ← map(Y, Z) applied by the FSM; steps that leave Y unchanged are not
// recorded (identity Jacobian with respect to the previous Y).
struct RecordedMap {
  enum Kind { kTriangleStop, kTriangleExit, kEdgeStop, kVertex } kind;
  int triangle = -1;  // kTriangleStop, kTriangleExit
  int edge = -1;      // kTriangleExit: local edge index
  int start = -1;     // kEdgeStop: global vertex indices of the edge; kVertex: the vertex
  int end = -1;
};

// Replays the recorded maps from X with scalar type T.
template <typename T>
Vector3Of<T> Replay(const TriangleMesh& mesh, const std::vector<RecordedMap>& maps, const Vector3& attachment,
                    const Vector3Of<T>& particle, double friction) {
  Vector3Of<T> current = attachment.cast<T>();
  for (const RecordedMap& map : maps) {
    switch (map.kind) {
      case RecordedMap::kTriangleStop:
        current = TriangleRelaxed<T>(mesh, map.triangle, current, particle, friction);
        break;
      case RecordedMap::kTriangleExit: {
        const Vector3Of<T> target = TriangleRelaxed<T>(mesh, map.triangle, current, particle, friction);
        current = ExitPoint<T>(mesh, map.triangle, map.edge, current, target);
        break;
      }
      case RecordedMap::kEdgeStop:
        current = EdgeRelaxed<T>(mesh.vertices[map.start], mesh.vertices[map.end], current, particle, friction);
        break;
      case RecordedMap::kVertex:
        current = mesh.vertices[map.start].cast<T>();
        break;
    }
  }
  return current;
}

// ---- The state machine (double precision, making the decisions) -------------------------

// Where the attachment currently is.
struct Location {
  int triangle = -1;
  Vector3 barycentric = Vector3::Zero();  // exact zeros on edges / at vertices
  // State 2: edges of `triangle` the attachment entered through (the entry edge, or both
  // edges at the entry vertex); a pull straight back across one of them means stuck.
  std::array<bool, 3> entry_edges = {false, false, false};
  int edge = -1;    // state 3: local edge index in `triangle`
  int vertex = -1;  // state 4: global vertex index
};

// Barycentric coordinates on edge e of triangle t for the point at parameter τ from the
// edge's first endpoint (corner (e+1) mod 3) to its second (corner (e+2) mod 3).
Vector3 EdgeBarycentric(int edge, double parameter) {
  Vector3 barycentric = Vector3::Zero();
  barycentric[(edge + 1) % 3] = 1.0 - parameter;
  barycentric[(edge + 2) % 3] = parameter;
  return barycentric;
}

// Parameter τ ∈ [0, 1] of the projection of `point` on the segment start → end.
double SegmentParameter(const Vector3& start, const Vector3& end, const Vector3& point) {
  const Vector3 direction = end - start;
  const double squared_length = direction.squaredNorm();
  if (squared_length == 0.0) return 0.0;
  return std::clamp((point - start).dot(direction) / squared_length, 0.0, 1.0);
}

// Normal of the feature a location lies on: face, edge (one exact zero barycentric) or
// vertex (two zeros); a degenerate triangle uses the normalized sum of its edge normals.
Vector3 FeatureNormal(const TriangleMesh& mesh, const MeshPoint& point) {
  const Vector3& barycentric = point.barycentric;
  const int zeros = (barycentric.array() == 0.0).count();
  if (zeros >= 2) {
    Eigen::Index corner = 0;
    barycentric.maxCoeff(&corner);
    return mesh.vertex_normals[mesh.triangles[point.triangle][corner]];
  }
  if (zeros == 1) {
    for (int e = 0; e < 3; ++e) {
      if (barycentric[e] == 0.0) return mesh.edge_normals[point.triangle][e];
    }
  }
  if (!mesh.degenerate[point.triangle]) return mesh.face_normals[point.triangle];
  Vector3 sum = Vector3::Zero();
  for (int e = 0; e < 3; ++e) sum += mesh.edge_normals[point.triangle][e];
  return sum.norm() > 0.0 ? Vector3(sum.normalized()) : Vector3::UnitZ();
}

}  // namespace

MeshRelaxation RelaxAgainstMesh(const TriangleMesh& mesh, const MeshPoint& attachment, const Vector3& particle,
                                double friction_coefficient) {
  const double friction = friction_coefficient;
  const Vector3 attachment_point = PointOnMesh(mesh, attachment);
  MeshRelaxation result;
  std::vector<RecordedMap> maps;

  int state = 1;
  Location where;
  where.triangle = attachment.triangle;
  where.barycentric = attachment.barycentric;
  Vector3 current = attachment_point;  // Y^(k)

  // Helpers that move to state 3 (on edge `edge` of `triangle`), state 4 (at `vertex`, with
  // Y snapped there) and state 2 (on `triangle` with the given barycentrics and entry edges).
  const auto go_to_edge = [&](int triangle, int edge) {
    where.triangle = triangle;
    where.edge = edge;
    state = 3;
  };
  const auto go_to_vertex = [&](int triangle, int vertex) {
    where.triangle = triangle;
    where.vertex = vertex;
    where.barycentric = Vector3::Zero();
    where.barycentric[mesh.LocalIndex(triangle, vertex)] = 1.0;
    current = mesh.vertices[vertex];
    maps.push_back({RecordedMap::kVertex, -1, -1, vertex, -1});
    state = 4;
  };

  bool stopped = false;
  int steps = 0;
  while (!stopped) {
    if (steps == kMaxMeshRelaxationSteps) {
      result.hit_step_cap = true;
      break;
    }
    ++steps;
    result.states.push_back(state);
    switch (state) {
      case 1:
      case 2: {
        const int triangle = where.triangle;
        if (mesh.degenerate[triangle]) {
          // No plane to relax in: stay (state 1), or slide along the entry edge (state 2).
          int entry = -1;
          for (int e = 0; e < 3; ++e) {
            if (where.entry_edges[e]) entry = e;
          }
          if (state == 2 && entry >= 0) {
            go_to_edge(triangle, entry);
          } else {
            stopped = true;
          }
          break;
        }
        // In-plane relaxation toward W_T (plane rule, static if the cone holds).
        const Relaxation in_plane = RelaxAgainstPlane(current, particle, mesh.vertices[mesh.triangles[triangle][0]],
                                                      mesh.face_normals[triangle], friction);
        if (!in_plane.sliding) {
          stopped = true;
          break;
        }
        const Vector3 target = in_plane.relaxed_point;  // Ŷ
        const Vector3 target_weights = BarycentricOf<double>(mesh, triangle, target);
        // Exit edge: smallest t* over the edges whose weight becomes negative.
        double exit_fraction = std::numeric_limits<double>::infinity();
        int exit_edge = -1;
        for (int e = 0; e < 3; ++e) {
          if (!(target_weights[e] < 0.0)) continue;
          const double weight = std::max(where.barycentric[e], 0.0);
          const double fraction = weight / (weight - target_weights[e]);
          if (fraction < exit_fraction) {
            exit_fraction = fraction;
            exit_edge = e;
          }
        }
        if (exit_edge < 0) {
          // Ŷ inside T: stop there.
          current = target;
          where.barycentric = target_weights;
          maps.push_back({RecordedMap::kTriangleStop, triangle, -1, -1, -1});
          stopped = true;
          break;
        }
        if (state == 2 && exit_fraction == 0.0 && where.entry_edges[exit_edge]) {
          // Pulled straight back across the edge it came from: stuck between two faces.
          go_to_edge(triangle, exit_edge);
          break;
        }
        // Move to the exit point on edge e* (unless t* = 0, where Y already is there).
        if (exit_fraction > 0.0) {
          current = ExitPoint<double>(mesh, triangle, exit_edge, current, target);
          maps.push_back({RecordedMap::kTriangleExit, triangle, exit_edge, -1, -1});
        }
        const int start = mesh.triangles[triangle][(exit_edge + 1) % 3];
        const int end = mesh.triangles[triangle][(exit_edge + 2) % 3];
        const double parameter = SegmentParameter(mesh.vertices[start], mesh.vertices[end], current);
        // Guard 1: a weight above 1 − 128ε snaps to the vertex (state 4).
        if (1.0 - parameter > kSnapThreshold) {
          go_to_vertex(triangle, start);
          break;
        }
        if (parameter > kSnapThreshold) {
          go_to_vertex(triangle, end);
          break;
        }
        where.barycentric = EdgeBarycentric(exit_edge, parameter);
        const int neighbor = mesh.neighbors[triangle][exit_edge];
        if (neighbor < 0 || mesh.degenerate[neighbor]) {
          // Open boundary (or a degenerate neighbour): slide along the edge (state 3).
          go_to_edge(triangle, exit_edge);
          break;
        }
        // State 2 on the neighbour, entering through the shared edge.
        const int local_start = mesh.LocalIndex(neighbor, start);
        const int local_end = mesh.LocalIndex(neighbor, end);
        const int entry = 3 - local_start - local_end;  // the edge opposite the third corner
        where.triangle = neighbor;
        where.barycentric = Vector3::Zero();
        where.barycentric[local_start] = 1.0 - parameter;
        where.barycentric[local_end] = parameter;
        where.entry_edges = {false, false, false};
        where.entry_edges[entry] = true;
        state = 2;
        break;
      }
      case 3: {
        const int triangle = where.triangle;
        const int start = mesh.triangles[triangle][(where.edge + 1) % 3];
        const int end = mesh.triangles[triangle][(where.edge + 2) % 3];
        const Vector3& start_point = mesh.vertices[start];
        const Vector3& end_point = mesh.vertices[end];
        if ((end_point - start_point).squaredNorm() == 0.0) {
          go_to_vertex(triangle, start);  // zero-length edge: it is a vertex
          break;
        }
        // Relaxation along the edge line toward W_e.
        const Vector3 closest = ClosestOnLine<double>(start_point, end_point, particle);
        const double length = (current - closest).norm();
        const double allowed = friction * (particle - closest).norm();
        if (StaysStatic(length, allowed, current.cwiseAbs().maxCoeff() + closest.cwiseAbs().maxCoeff())) {
          where.barycentric = EdgeBarycentric(where.edge, SegmentParameter(start_point, end_point, current));
          stopped = true;
          break;
        }
        const Vector3 target = EdgeRelaxed<double>(start_point, end_point, current, particle, friction);
        const double parameter =
            (target - start_point).dot(end_point - start_point) / (end_point - start_point).squaredNorm();
        if (parameter >= 0.0 && parameter <= 1.0) {
          // Ŷ within the segment: stop there.
          current = target;
          where.barycentric = EdgeBarycentric(where.edge, parameter);
          maps.push_back({RecordedMap::kEdgeStop, -1, -1, start, end});
          stopped = true;
          break;
        }
        go_to_vertex(triangle, parameter < 0.0 ? start : end);
        break;
      }
      case 4: {
        const int vertex = where.vertex;
        const Vector3& vertex_point = mesh.vertices[vertex];
        const Vector3 pull = particle - vertex_point;  // r = Z − v
        // Guard 2 / A8: a transition must beat the cone by 128ε‖Z − v‖.
        const double threshold = 128.0 * kEpsilon * pull.norm();
        // (a) Incident triangles the spring pulls into, with the cone violated.
        int best_triangle = -1;
        double best_excess = threshold;
        for (const int triangle : mesh.vertex_triangles[vertex]) {
          if (mesh.degenerate[triangle]) continue;
          const int corner = mesh.LocalIndex(triangle, vertex);
          const Vector3 first = mesh.vertices[mesh.triangles[triangle][(corner + 1) % 3]] - vertex_point;
          const Vector3 second = mesh.vertices[mesh.triangles[triangle][(corner + 2) % 3]] - vertex_point;
          const Vector3& normal = mesh.face_normals[triangle];
          const double normal_pull = pull.dot(normal);
          const Vector3 tangential_pull = pull - normal_pull * normal;  // r_T
          // r_T = α e1 + β e2 from the 2×2 Gram system.
          const double g11 = first.dot(first), g12 = first.dot(second), g22 = second.dot(second);
          const double b1 = first.dot(tangential_pull), b2 = second.dot(tangential_pull);
          const double determinant = g11 * g22 - g12 * g12;
          const double alpha = (g22 * b1 - g12 * b2) / determinant;
          const double beta = (g11 * b2 - g12 * b1) / determinant;
          if (!(alpha > 0.0 && beta > 0.0)) continue;
          const double excess = tangential_pull.norm() - friction * std::abs(normal_pull);
          if (excess > best_excess) {
            best_excess = excess;
            best_triangle = triangle;
          }
        }
        if (best_triangle >= 0) {
          const int corner = mesh.LocalIndex(best_triangle, vertex);
          where.triangle = best_triangle;
          where.barycentric = Vector3::Zero();
          where.barycentric[corner] = 1.0;
          where.entry_edges = {false, false, false};
          where.entry_edges[(corner + 1) % 3] = true;
          where.entry_edges[(corner + 2) % 3] = true;
          state = 2;
          break;
        }
        // (b) Incident edges the spring pulls along, with the cone violated along the edge.
        int best_edge_triangle = -1, best_edge = -1;
        best_excess = threshold;
        for (const int triangle : mesh.vertex_triangles[vertex]) {
          const int corner = mesh.LocalIndex(triangle, vertex);
          for (const int edge : {(corner + 1) % 3, (corner + 2) % 3}) {
            // Edge `edge` joins the vertex and the corner other than `corner` and `edge`.
            const int other = mesh.triangles[triangle][3 - corner - edge];
            const Vector3 along = mesh.vertices[other] - vertex_point;
            if (along.squaredNorm() == 0.0) continue;
            const Vector3 direction = along.normalized();  // u_e
            const double along_pull = pull.dot(direction);
            const double excess = along_pull - friction * (pull - along_pull * direction).norm();
            if (excess > best_excess) {
              best_excess = excess;
              best_edge_triangle = triangle;
              best_edge = edge;
            }
          }
        }
        if (best_edge >= 0) {
          go_to_edge(best_edge_triangle, best_edge);
          break;
        }
        stopped = true;  // nothing qualifies: Y = v
        break;
      }
    }
  }

  // Result, normal of the final feature and the separation test.
  result.relaxed_point = current;
  result.relaxed_location = MeshPoint{where.triangle, where.barycentric};
  if (state == 3 && !stopped) {
    // Capped while on an edge: place Y on the edge by its parameter.
    const int start = mesh.triangles[where.triangle][(where.edge + 1) % 3];
    const int end = mesh.triangles[where.triangle][(where.edge + 2) % 3];
    result.relaxed_location.barycentric =
        EdgeBarycentric(where.edge, SegmentParameter(mesh.vertices[start], mesh.vertices[end], current));
  }
  result.normal = FeatureNormal(mesh, result.relaxed_location);
  result.active = (current - particle).dot(result.normal) > 0.0;
  result.sliding = current != attachment_point;

  // ∂Y/∂Z: replay the recorded maps with Jets seeded on Z.
  if (!maps.empty()) {
    Vector3Of<Jet3> jet_particle;
    for (int i = 0; i < 3; ++i) jet_particle(i) = Jet3(particle(i), i);
    const Vector3Of<Jet3> replayed = Replay<Jet3>(mesh, maps, attachment_point, jet_particle, friction);
    for (int i = 0; i < 3; ++i) result.jacobian.row(i) = replayed(i).v.transpose();
  }
  return result;
}

}  // namespace contactlab::penalty
