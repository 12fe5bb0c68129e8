// Tests of the triangle mesh (adjacency, pseudo-normals, closest points) and of the 4-state
// relaxation of attachments over a mesh (spec §2.5, A8, A9): every transition on a box and
// on flat open meshes, the cone at the stopping point, idempotence, termination on
// degenerate input, and ∂Y/∂Z against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "formulations/penalty/mesh_relaxation.h"
#include "formulations/penalty/relaxation.h"
#include "formulations/penalty/triangle_mesh.h"

namespace contactlab::penalty {
namespace {

constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

// Flat open mesh in the plane z = 0: an n×n grid of unit squares, each split along its
// (0,0)–(1,1) diagonal, normals +z.
TriangleMesh FlatGrid(int cells) {
  TriangleMesh mesh;
  for (int j = 0; j <= cells; ++j) {
    for (int i = 0; i <= cells; ++i) mesh.vertices.push_back(Vector3(i, j, 0.0));
  }
  const auto index = [&](int i, int j) { return j * (cells + 1) + i; };
  for (int j = 0; j < cells; ++j) {
    for (int i = 0; i < cells; ++i) {
      mesh.triangles.push_back({index(i, j), index(i + 1, j), index(i + 1, j + 1)});
      mesh.triangles.push_back({index(i, j), index(i + 1, j + 1), index(i, j + 1)});
    }
  }
  mesh.BuildAdjacency();
  return mesh;
}

// The mesh point of a position on a given triangle (barycentrics by least squares).
MeshPoint OnTriangle(const TriangleMesh& mesh, int triangle, const Vector3& position) {
  const Vector3& a = mesh.vertices[mesh.triangles[triangle][0]];
  Eigen::Matrix<double, 3, 2> edges;
  edges.col(0) = mesh.vertices[mesh.triangles[triangle][1]] - a;
  edges.col(1) = mesh.vertices[mesh.triangles[triangle][2]] - a;
  const Eigen::Vector2d weights = edges.colPivHouseholderQr().solve(position - a);
  return MeshPoint{triangle, Vector3(1.0 - weights.sum(), weights(0), weights(1))};
}

// The triangle of `mesh` containing `position` in its interior or on its boundary, with
// the outward normal `normal` (first found).
int TriangleContaining(const TriangleMesh& mesh, const Vector3& position, const Vector3& normal) {
  for (int t = 0; t < static_cast<int>(mesh.triangles.size()); ++t) {
    if (mesh.face_normals[t].dot(normal) < 0.999) continue;
    const MeshPoint point = OnTriangle(mesh, t, position);
    if (point.barycentric.minCoeff() >= -1e-12 && (PointOnMesh(mesh, point) - position).norm() < 1e-12) {
      return t;
    }
  }
  return -1;
}

// The box of half extents 1 used by most tests; its top face is z = 1, split along the
// diagonal from (−1, −1) to (1, 1).
const TriangleMesh& UnitBox() {
  static const TriangleMesh box = TriangleMesh::Box(Vector3::Ones());
  return box;
}

MeshPoint OnUnitBox(const Vector3& position, const Vector3& normal) {
  const int triangle = TriangleContaining(UnitBox(), position, normal);
  EXPECT_GE(triangle, 0) << position.transpose();
  return OnTriangle(UnitBox(), triangle, position);
}

// The cone (1) in the frame of the final feature: for a triangle interior, tangential and
// normal parts with the face normal (|normal part|, as the plane rule uses |φ|); on an edge,
// the part along the edge against the part across it. Vertices are not checked here.
void ExpectConeHolds(const TriangleMesh& mesh, const MeshRelaxation& relaxation, const Vector3& particle,
                     double friction) {
  const Vector3 spring = relaxation.relaxed_point - particle;
  const Vector3& barycentric = relaxation.relaxed_location.barycentric;
  const int zeros = (barycentric.array() == 0.0).count();
  const double tolerance = 1e-12 * (1.0 + spring.norm());
  const auto& corners = mesh.triangles[relaxation.relaxed_location.triangle];
  if (zeros == 0) {
    const Vector3& normal = mesh.face_normals[relaxation.relaxed_location.triangle];
    const double normal_part = spring.dot(normal);
    EXPECT_LE((spring - normal_part * normal).norm(), friction * std::abs(normal_part) + tolerance);
  } else if (zeros == 1) {
    int edge = 0;
    while (barycentric[edge] != 0.0) ++edge;
    const Vector3 direction =
        (mesh.vertices[corners[(edge + 2) % 3]] - mesh.vertices[corners[(edge + 1) % 3]]).normalized();
    const double along = spring.dot(direction);
    EXPECT_LE(std::abs(along), friction * (spring - along * direction).norm() + tolerance);
  }
}

// Central finite differences of Y with respect to Z (step h), and whether the state
// sequence stays the same at every perturbed point.
struct FiniteDifference {
  Matrix3 jacobian;
  bool same_states = true;
};
FiniteDifference DifferenceQuotient(const TriangleMesh& mesh, const MeshPoint& attachment, const Vector3& particle,
                                    double friction, double step) {
  const MeshRelaxation center = RelaxAgainstMesh(mesh, attachment, particle, friction);
  FiniteDifference result;
  for (int axis = 0; axis < 3; ++axis) {
    const Vector3 offset = step * Vector3::Unit(axis);
    const MeshRelaxation plus = RelaxAgainstMesh(mesh, attachment, particle + offset, friction);
    const MeshRelaxation minus = RelaxAgainstMesh(mesh, attachment, particle - offset, friction);
    result.same_states = result.same_states && plus.states == center.states && minus.states == center.states;
    result.jacobian.col(axis) = (plus.relaxed_point - minus.relaxed_point) / (2.0 * step);
  }
  return result;
}

// Expects the AD Jacobian to match central differences (away from decision boundaries:
// the state sequence must not change over the stencil). Truncation error h² times the third
// derivative of Y (curvature of the maps, O(1) here) plus round-off ε|Y|/h.
void ExpectJacobianMatchesDifferences(const TriangleMesh& mesh, const MeshPoint& attachment, const Vector3& particle,
                                      double friction) {
  const MeshRelaxation relaxation = RelaxAgainstMesh(mesh, attachment, particle, friction);
  const FiniteDifference difference = DifferenceQuotient(mesh, attachment, particle, friction, 1e-6);
  ASSERT_TRUE(difference.same_states);
  EXPECT_LT((relaxation.jacobian - difference.jacobian).norm(), 1e-7) << "AD\n"
                                                                      << relaxation.jacobian << "\nfinite differences\n"
                                                                      << difference.jacobian;
}

// ---- Mesh --------------------------------------------------------------------------------

TEST(PenaltyMeshTest, BoxAdjacencyAndPseudoNormals) {
  const TriangleMesh box = TriangleMesh::Box(Vector3(0.5, 0.3, 0.2));
  ASSERT_EQ(box.vertices.size(), 8u);
  ASSERT_EQ(box.triangles.size(), 12u);
  for (int t = 0; t < 12; ++t) {
    EXPECT_FALSE(box.degenerate[t]);
    EXPECT_NEAR(box.face_normals[t].norm(), 1.0, 4 * kEpsilon);
    // Outward: the normal points away from the centre.
    EXPECT_GT(box.face_normals[t].dot(box.vertices[box.triangles[t][0]]), 0.0);
    for (int e = 0; e < 3; ++e) {
      const int neighbor = box.neighbors[t][e];
      ASSERT_GE(neighbor, 0);
      // The neighbour shares the edge's two vertices, and has t as its own neighbour.
      const int start = box.triangles[t][(e + 1) % 3];
      const int end = box.triangles[t][(e + 2) % 3];
      EXPECT_GE(box.LocalIndex(neighbor, start), 0);
      EXPECT_GE(box.LocalIndex(neighbor, end), 0);
      const int back = 3 - box.LocalIndex(neighbor, start) - box.LocalIndex(neighbor, end);
      EXPECT_EQ(box.neighbors[neighbor][back], t);
      // Edge pseudo-normal: unit; on a box edge (n1 + n2)/√2, on a face diagonal the face
      // normal.
      const Vector3& edge_normal = box.edge_normals[t][e];
      EXPECT_NEAR(edge_normal.norm(), 1.0, 4 * kEpsilon);
      const Vector3 expected = (box.face_normals[t] + box.face_normals[neighbor]).normalized();
      EXPECT_LT((edge_normal - expected).norm(), 4 * kEpsilon);
    }
  }
  for (int v = 0; v < 8; ++v) {
    EXPECT_EQ(box.vertex_triangles[v].size() >= 4 && box.vertex_triangles[v].size() <= 6, true);
    const Vector3 expected = box.vertices[v].cwiseSign() / std::sqrt(3.0);
    EXPECT_LT((box.vertex_normals[v] - expected).norm(), 8 * kEpsilon) << v;
  }
}

TEST(PenaltyMeshTest, BuildAdjacencyRejectsNonManifoldInput) {
  TriangleMesh fan;  // three triangles on the edge (0, 1)
  fan.vertices = {Vector3(0, 0, 0), Vector3(1, 0, 0), Vector3(0, 1, 0), Vector3(0, -1, 0), Vector3(0, 0, 1)};
  fan.triangles = {{0, 1, 2}, {1, 0, 3}, {0, 1, 4}};
  EXPECT_THROW(fan.BuildAdjacency(), std::invalid_argument);
  TriangleMesh flipped;  // two triangles sharing an edge in the same direction
  flipped.vertices = {Vector3(0, 0, 0), Vector3(1, 0, 0), Vector3(0, 1, 0), Vector3(0, -1, 0)};
  flipped.triangles = {{0, 1, 2}, {0, 1, 3}};
  EXPECT_THROW(flipped.BuildAdjacency(), std::invalid_argument);
  TriangleMesh out_of_range;
  out_of_range.vertices = {Vector3(0, 0, 0), Vector3(1, 0, 0), Vector3(0, 1, 0)};
  out_of_range.triangles = {{0, 1, 3}};
  EXPECT_THROW(out_of_range.BuildAdjacency(), std::invalid_argument);
  out_of_range.triangles = {{0, 1, 1}};
  EXPECT_THROW(out_of_range.BuildAdjacency(), std::invalid_argument);
  // An open two-triangle mesh is fine: the shared diagonal has a neighbour, the rim none.
  TriangleMesh square = FlatGrid(1);
  EXPECT_EQ(square.neighbors[0][1], 1);
  EXPECT_EQ(square.neighbors[0][0], -1);
}

TEST(PenaltyMeshTest, ClosestPointOnBoxMatchesClamping) {
  const Vector3 half_extents(0.5, 0.3, 0.2);
  const TriangleMesh box = TriangleMesh::Box(half_extents);
  std::mt19937 generator(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const Vector3 point = 2.0 * half_extents.cwiseProduct(Vector3(unit(generator), unit(generator), unit(generator)));
    if ((point.cwiseAbs() - half_extents).maxCoeff() <= 0.0) continue;  // outside only
    const Vector3 clamped = point.cwiseMax(-half_extents).cwiseMin(half_extents);
    const MeshPoint closest = ClosestPointOnMesh(box, point);
    EXPECT_LT((PointOnMesh(box, closest) - clamped).norm(), 1e-14);
    EXPECT_GE(closest.barycentric.minCoeff(), -1e-15);
    EXPECT_NEAR(closest.barycentric.sum(), 1.0, 1e-15);
  }
}

// ---- Transitions -------------------------------------------------------------------------

TEST(PenaltyMeshRelaxationTest, StaticAndSlidingInsideOneTriangle) {
  const double friction = 0.5;
  const MeshPoint attachment = OnUnitBox(Vector3(0.5, -0.2, 1.0), Vector3::UnitZ());
  // Static: Z 0.1 below, within μ h = 0.05 of X.
  const Vector3 below(0.53, -0.22, 0.9);
  const MeshRelaxation rest = RelaxAgainstMesh(UnitBox(), attachment, below, friction);
  EXPECT_EQ(rest.states, std::vector<int>({1}));
  EXPECT_FALSE(rest.sliding);
  EXPECT_TRUE(rest.active);
  EXPECT_EQ(rest.relaxed_point, PointOnMesh(UnitBox(), attachment));
  EXPECT_EQ(rest.jacobian, Matrix3::Zero());
  EXPECT_EQ(rest.normal, Vector3::UnitZ());
  // Sliding, staying inside the triangle: the plane rule exactly.
  const Vector3 particle(0.7, -0.5, 0.9);
  const MeshRelaxation slide = RelaxAgainstMesh(UnitBox(), attachment, particle, friction);
  EXPECT_EQ(slide.states, std::vector<int>({1}));
  EXPECT_TRUE(slide.sliding);
  EXPECT_TRUE(slide.active);
  const Relaxation plane =
      RelaxAgainstPlane(PointOnMesh(UnitBox(), attachment), particle, Vector3::UnitZ(), Vector3::UnitZ(), friction);
  EXPECT_LT((slide.relaxed_point - plane.relaxed_point).norm(), 1e-15);
  EXPECT_LT((slide.jacobian - plane.jacobian).norm(), 1e-14);
  EXPECT_LT((PointOnMesh(UnitBox(), slide.relaxed_location) - slide.relaxed_point).norm(), 1e-15);
  ExpectConeHolds(UnitBox(), slide, particle, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), attachment, particle, friction);
  // Idempotence: relaxing again from Y is static.
  const MeshRelaxation again = RelaxAgainstMesh(UnitBox(), slide.relaxed_location, particle, friction);
  EXPECT_EQ(again.states, std::vector<int>({1}));
  EXPECT_LT((again.relaxed_point - slide.relaxed_point).norm(), 1e-15);
}

TEST(PenaltyMeshRelaxationTest, CrossesOneEdgeAndStops) {
  // 1 → 2: across the top face's diagonal, then inside the second triangle.
  const double friction = 0.5;
  const MeshPoint attachment = OnUnitBox(Vector3(0.5, -0.2, 1.0), Vector3::UnitZ());
  const Vector3 particle(-0.3, 0.4, 0.9);
  const MeshRelaxation relaxation = RelaxAgainstMesh(UnitBox(), attachment, particle, friction);
  EXPECT_EQ(relaxation.states, std::vector<int>({1, 2}));
  EXPECT_NE(relaxation.relaxed_location.triangle, attachment.triangle);
  EXPECT_TRUE(relaxation.active);
  EXPECT_EQ(relaxation.normal, Vector3::UnitZ());
  // Flat face: the same point as the plane rule.
  const Relaxation plane =
      RelaxAgainstPlane(PointOnMesh(UnitBox(), attachment), particle, Vector3::UnitZ(), Vector3::UnitZ(), friction);
  EXPECT_LT((relaxation.relaxed_point - plane.relaxed_point).norm(), 1e-15);
  ExpectConeHolds(UnitBox(), relaxation, particle, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), attachment, particle, friction);
  EXPECT_LT((relaxation.jacobian - plane.jacobian).norm(), 1e-12);
  const MeshRelaxation again = RelaxAgainstMesh(UnitBox(), relaxation.relaxed_location, particle, friction);
  EXPECT_EQ(again.states, std::vector<int>({1}));
  EXPECT_LT((again.relaxed_point - relaxation.relaxed_point).norm(), 1e-15);
}

TEST(PenaltyMeshRelaxationTest, CrossesSeveralTrianglesOfAFlatGrid) {
  // 1 → 2 → 2 → …: a long slide over a flat grid equals the plane rule.
  const TriangleMesh grid = FlatGrid(4);
  const double friction = 0.5;
  const MeshPoint attachment = OnTriangle(grid, 0, Vector3(0.6, 0.2, 0.0));
  const Vector3 particle(3.3, 2.6, -0.1);
  const MeshRelaxation relaxation = RelaxAgainstMesh(grid, attachment, particle, friction);
  ASSERT_GE(relaxation.states.size(), 3u);
  EXPECT_EQ(relaxation.states[0], 1);
  for (std::size_t k = 1; k < relaxation.states.size(); ++k) EXPECT_EQ(relaxation.states[k], 2);
  const Relaxation plane =
      RelaxAgainstPlane(PointOnMesh(grid, attachment), particle, Vector3::Zero(), Vector3::UnitZ(), friction);
  EXPECT_LT((relaxation.relaxed_point - plane.relaxed_point).norm(), 1e-14);
  EXPECT_LT((relaxation.jacobian - plane.jacobian).norm(), 1e-12);
  EXPECT_TRUE(relaxation.active);
  ExpectConeHolds(grid, relaxation, particle, friction);
  ExpectJacobianMatchesDifferences(grid, attachment, particle, friction);
}

TEST(PenaltyMeshRelaxationTest, StuckOverABoxEdgeSlidesAlongIt) {
  // 1 → 2 → 3: pulled off the top face over the x = 1 edge toward a particle above the top
  // face level; on the side face the pull goes straight back up, so the attachment is stuck
  // between the faces and slides along the edge, stopping inside it.
  const double friction = 0.5;
  const MeshPoint attachment = OnUnitBox(Vector3(0.9, 0.3, 1.0), Vector3::UnitZ());
  const Vector3 particle(1.5, -0.2, 1.3);
  const MeshRelaxation relaxation = RelaxAgainstMesh(UnitBox(), attachment, particle, friction);
  EXPECT_EQ(relaxation.states, std::vector<int>({1, 2, 3}));
  EXPECT_NEAR(relaxation.relaxed_point.x(), 1.0, 1e-15);
  EXPECT_NEAR(relaxation.relaxed_point.z(), 1.0, 1e-15);
  EXPECT_LT(relaxation.relaxed_point.y(), 0.3);
  EXPECT_GT(relaxation.relaxed_point.y(), -0.2);
  // Edge pseudo-normal (1, 0, 1)/√2; the particle is outside, so the pair is inactive.
  EXPECT_LT((relaxation.normal - Vector3(1, 0, 1).normalized()).norm(), 4 * kEpsilon);
  EXPECT_FALSE(relaxation.active);
  ExpectConeHolds(UnitBox(), relaxation, particle, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), attachment, particle, friction);
  // Idempotence: from Y (on the edge) the attachment stays (to round-off).
  const MeshRelaxation again = RelaxAgainstMesh(UnitBox(), relaxation.relaxed_location, particle, friction);
  EXPECT_LT((again.relaxed_point - relaxation.relaxed_point).norm(), 1e-14);

  // A deeper particle below the top face level pulls the attachment onto the side face:
  // 1 → 2 stop on the side, with the face normal +x.
  const Vector3 side_particle(1.2, 0.0, 0.5);
  const MeshRelaxation over = RelaxAgainstMesh(UnitBox(), attachment, side_particle, friction);
  EXPECT_EQ(over.states, std::vector<int>({1, 2}));
  EXPECT_EQ(over.normal, Vector3::UnitX());
  ExpectConeHolds(UnitBox(), over, side_particle, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), attachment, side_particle, friction);
}

TEST(PenaltyMeshRelaxationTest, SlidesAlongAnEdgeIntoACornerAndStops) {
  // 1 → 2 → 3 → 4 stop: as above, but the edge slide overshoots the corner (1, 1, 1); at the
  // corner the spring pulls away from every face and edge, so the attachment stays there.
  const double friction = 0.5;
  const MeshPoint attachment = OnUnitBox(Vector3(0.9, 0.3, 1.0), Vector3::UnitZ());
  const Vector3 particle(1.5, 1.8, 1.3);
  const MeshRelaxation relaxation = RelaxAgainstMesh(UnitBox(), attachment, particle, friction);
  EXPECT_EQ(relaxation.states, std::vector<int>({1, 2, 3, 4}));
  EXPECT_EQ(relaxation.relaxed_point, Vector3::Ones());
  EXPECT_LT((relaxation.normal - Vector3::Ones().normalized()).norm(), 8 * kEpsilon);
  EXPECT_EQ(relaxation.jacobian, Matrix3::Zero());  // Y is the vertex
  EXPECT_FALSE(relaxation.hit_step_cap);
  // Idempotent: from the corner it stays there.
  const MeshRelaxation again = RelaxAgainstMesh(UnitBox(), relaxation.relaxed_location, particle, friction);
  EXPECT_EQ(again.relaxed_point, Vector3::Ones());
}

TEST(PenaltyMeshRelaxationTest, FromACornerIntoAFaceOrAlongAnEdge) {
  const double friction = 0.5;
  // Attachment exactly at the corner (1, 1, 1), given on a top-face triangle.
  const int triangle = TriangleContaining(UnitBox(), Vector3(0.9, 0.5, 1.0), Vector3::UnitZ());
  ASSERT_GE(triangle, 0);
  MeshPoint corner{triangle, Vector3::Zero()};
  corner.barycentric[UnitBox().LocalIndex(triangle, 7)] = 1.0;
  ASSERT_EQ(PointOnMesh(UnitBox(), corner), Vector3::Ones());

  // 4 → 2: the spring pulls into the top face (the largest excess), then stops inside.
  const Vector3 into_top(0.2, 0.5, 0.8);
  const MeshRelaxation face = RelaxAgainstMesh(UnitBox(), corner, into_top, friction);
  ASSERT_GE(face.states.size(), 3u);
  EXPECT_EQ(face.states.front(), 1);
  EXPECT_EQ(face.states[face.states.size() - 2], 4);
  EXPECT_EQ(face.states.back(), 2);
  EXPECT_EQ(face.normal, Vector3::UnitZ());
  const Relaxation plane = RelaxAgainstPlane(Vector3::Ones(), into_top, Vector3::Ones(), Vector3::UnitZ(), friction);
  EXPECT_LT((face.relaxed_point - plane.relaxed_point).norm(), 1e-15);
  ExpectConeHolds(UnitBox(), face, into_top, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), corner, into_top, friction);

  // 4 → 3: the spring pulls down along the vertical edge x = y = 1 and away from the faces.
  const Vector3 down_edge(1.3, 1.5, 0.2);
  const MeshRelaxation edge = RelaxAgainstMesh(UnitBox(), corner, down_edge, friction);
  ASSERT_GE(edge.states.size(), 2u);
  EXPECT_EQ(edge.states[edge.states.size() - 2], 4);
  EXPECT_EQ(edge.states.back(), 3);
  EXPECT_NEAR(edge.relaxed_point.x(), 1.0, 1e-15);
  EXPECT_NEAR(edge.relaxed_point.y(), 1.0, 1e-15);
  // Edge rule: W_e = (1, 1, 0.2), d = ‖(0.3, 0.5)‖, Y = W_e + μ d ẑ.
  EXPECT_NEAR(edge.relaxed_point.z(), 0.2 + friction * std::hypot(0.3, 0.5), 1e-15);
  EXPECT_LT((edge.normal - Vector3(1, 1, 0).normalized()).norm(), 4 * kEpsilon);
  ExpectConeHolds(UnitBox(), edge, down_edge, friction);
  ExpectJacobianMatchesDifferences(UnitBox(), corner, down_edge, friction);

  // 4 stop: pulled outward past the corner.
  const Vector3 away(1.5, 1.8, 1.3);
  const MeshRelaxation stay = RelaxAgainstMesh(UnitBox(), corner, away, friction);
  EXPECT_EQ(stay.states.back(), 4);
  EXPECT_EQ(stay.relaxed_point, Vector3::Ones());
  EXPECT_FALSE(stay.sliding);
}

TEST(PenaltyMeshRelaxationTest, OpenBoundaryEdgeActsAsState3) {
  // A single triangle: the pull leaves through its (open) hypotenuse, the attachment then
  // slides along that edge and stops inside it.
  TriangleMesh single;
  single.vertices = {Vector3(0, 0, 0), Vector3(1, 0, 0), Vector3(0, 1, 0)};
  single.triangles = {{0, 1, 2}};
  single.BuildAdjacency();
  const double friction = 0.5;
  const MeshPoint attachment = OnTriangle(single, 0, Vector3(0.2, 0.2, 0.0));
  const Vector3 particle(1.0, 0.5, -0.1);
  const MeshRelaxation relaxation = RelaxAgainstMesh(single, attachment, particle, friction);
  EXPECT_EQ(relaxation.states, std::vector<int>({1, 3}));
  EXPECT_NEAR(relaxation.relaxed_point.x() + relaxation.relaxed_point.y(), 1.0, 1e-15);
  EXPECT_EQ(relaxation.relaxed_location.barycentric[0], 0.0);
  ExpectConeHolds(single, relaxation, particle, friction);
  ExpectJacobianMatchesDifferences(single, attachment, particle, friction);
  // Pulled out through the open edge y = 0 toward (2, −0.5): the edge slide passes the
  // vertex (1, 0, 0), where nothing qualifies.
  const Vector3 far(2.0, -0.5, -0.1);
  const MeshRelaxation corner = RelaxAgainstMesh(single, attachment, far, friction);
  EXPECT_EQ(corner.states, std::vector<int>({1, 3, 4}));
  EXPECT_EQ(corner.relaxed_point, Vector3(1, 0, 0));

  // Two triangles (an open square): across the diagonal, then out through the rim x = 1.
  const TriangleMesh square = FlatGrid(1);
  const MeshPoint start = OnTriangle(square, 1, Vector3(0.2, 0.7, 0.0));
  const Vector3 pull(1.6, 0.4, -0.1);
  const MeshRelaxation rim = RelaxAgainstMesh(square, start, pull, friction);
  EXPECT_EQ(rim.states, std::vector<int>({1, 2, 3}));
  EXPECT_NEAR(rim.relaxed_point.x(), 1.0, 1e-15);
  ExpectConeHolds(square, rim, pull, friction);
  ExpectJacobianMatchesDifferences(square, start, pull, friction);
}

TEST(PenaltyMeshRelaxationTest, DegenerateInputTerminatesWithFiniteResults) {
  const auto expect_finite = [](const MeshRelaxation& relaxation) {
    EXPECT_TRUE(relaxation.relaxed_point.allFinite());
    EXPECT_TRUE(relaxation.normal.allFinite());
    EXPECT_TRUE(relaxation.jacobian.allFinite());
    EXPECT_LE(relaxation.states.size(), static_cast<std::size_t>(kMaxMeshRelaxationSteps));
    EXPECT_NEAR(relaxation.normal.norm(), 1.0, 1e-12);
  };
  // A zero-area triangle (collinear corners) next to a proper one.
  TriangleMesh sliver;
  sliver.vertices = {Vector3(0, 0, 0), Vector3(1, 0, 0), Vector3(2, 0, 0), Vector3(1, 1, 0)};
  sliver.triangles = {{0, 1, 2}, {0, 2, 3}};
  sliver.BuildAdjacency();
  EXPECT_TRUE(sliver.degenerate[0]);
  EXPECT_FALSE(sliver.degenerate[1]);
  // Pulled from the proper triangle toward y < 0: the degenerate neighbour acts as a
  // boundary, so the attachment slides along the shared edge.
  const MeshRelaxation into_sliver =
      RelaxAgainstMesh(sliver, OnTriangle(sliver, 1, Vector3(1.0, 0.3, 0.0)), Vector3(1.4, -0.5, -0.1), 0.3);
  expect_finite(into_sliver);
  EXPECT_EQ(into_sliver.states.back(), 3);
  EXPECT_NEAR(into_sliver.relaxed_point.y(), 0.0, 1e-15);
  // An attachment on the degenerate triangle stays put.
  const MeshRelaxation on_sliver =
      RelaxAgainstMesh(sliver, MeshPoint{0, Vector3(0.2, 0.5, 0.3)}, Vector3(1.0, 0.5, -0.2), 0.3);
  expect_finite(on_sliver);
  EXPECT_FALSE(on_sliver.sliding);
  // The closest point of the sliver region is still found.
  EXPECT_LT((PointOnMesh(sliver, ClosestPointOnMesh(sliver, Vector3(1.5, -1.0, 0.0))) - Vector3(1.5, 0.0, 0.0)).norm(),
            1e-15);

  const MeshPoint attachment = OnUnitBox(Vector3(0.5, -0.2, 1.0), Vector3::UnitZ());
  // Z exactly at a vertex.
  expect_finite(RelaxAgainstMesh(UnitBox(), attachment, Vector3::Ones(), 0.5));
  // μ = 0: slides all the way to the closest point (on the face, then across edges).
  const MeshRelaxation frictionless = RelaxAgainstMesh(UnitBox(), attachment, Vector3(-0.4, 0.6, 0.7), 0.0);
  expect_finite(frictionless);
  EXPECT_LT((frictionless.relaxed_point - Vector3(-0.4, 0.6, 1.0)).norm(), 1e-15);
  const MeshRelaxation frictionless_corner = RelaxAgainstMesh(UnitBox(), attachment, Vector3(1.5, 1.5, 1.5), 0.0);
  expect_finite(frictionless_corner);
  EXPECT_LT((frictionless_corner.relaxed_point - Vector3::Ones()).norm(), 1e-14);
  // X = Z.
  const MeshRelaxation coincident = RelaxAgainstMesh(UnitBox(), attachment, PointOnMesh(UnitBox(), attachment), 0.5);
  expect_finite(coincident);
  EXPECT_FALSE(coincident.sliding);
  EXPECT_FALSE(coincident.active);
  // Z at a vertex with X at that same vertex, and at an edge midpoint.
  MeshPoint corner{attachment.triangle, Vector3::Zero()};
  corner.barycentric[0] = 1.0;
  expect_finite(RelaxAgainstMesh(UnitBox(), corner, PointOnMesh(UnitBox(), corner), 0.5));
  expect_finite(
      RelaxAgainstMesh(UnitBox(), MeshPoint{attachment.triangle, Vector3(0.5, 0.5, 0)}, Vector3(1.0, 0.0, 1.0), 0.5));
}

TEST(PenaltyMeshRelaxationTest, RandomStatesStopOnTheConeAndMatchFiniteDifferences) {
  // Random attachments on a box and random particles around it: the FSM terminates, the
  // stopping point satisfies the cone in its feature's frame, Y lies on the mesh, and the
  // AD Jacobian matches finite differences wherever the state sequence is locally constant.
  const TriangleMesh box = TriangleMesh::Box(Vector3(0.5, 0.4, 0.3));
  std::mt19937 generator(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked = 0, multi_step = 0;
  std::map<std::vector<int>, int> sequences;  // how often each state sequence occurred
  for (int trial = 0; trial < 600; ++trial) {
    const int triangle = static_cast<int>(unit(generator) * 12) % 12;
    double a = unit(generator), b = unit(generator);
    if (a + b > 1.0) {
      a = 1.0 - a;
      b = 1.0 - b;
    }
    const MeshPoint attachment{triangle, Vector3(1.0 - a - b, a, b)};
    const Vector3 particle = PointOnMesh(box, attachment) +
                             0.4 * Vector3(2 * unit(generator) - 1, 2 * unit(generator) - 1, 2 * unit(generator) - 1);
    const double friction = 0.1 + unit(generator);
    const MeshRelaxation relaxation = RelaxAgainstMesh(box, attachment, particle, friction);
    ASSERT_FALSE(relaxation.hit_step_cap);
    ++sequences[relaxation.states];
    EXPECT_LT((PointOnMesh(box, relaxation.relaxed_location) - relaxation.relaxed_point).norm(), 1e-14);
    ExpectConeHolds(box, relaxation, particle, friction);
    const FiniteDifference difference = DifferenceQuotient(box, attachment, particle, friction, 1e-6);
    if (!difference.same_states) continue;
    EXPECT_LT((relaxation.jacobian - difference.jacobian).norm(), 1e-7) << "states " << relaxation.states.size();
    ++checked;
    multi_step += relaxation.states.size() > 1;
  }
  EXPECT_GT(checked, 500);
  EXPECT_GT(multi_step, 100);
  // Report the sequences seen; states 3 and 4 must both occur.
  bool saw_edge = false, saw_vertex = false;
  std::cout << "[ observed ] state sequences:";
  for (const auto& [states, count] : sequences) {
    std::cout << " {";
    for (const int state : states) std::cout << state;
    std::cout << "}x" << count;
    for (const int state : states) {
      saw_edge = saw_edge || state == 3;
      saw_vertex = saw_vertex || state == 4;
    }
  }
  std::cout << "\n";
  EXPECT_TRUE(saw_edge);
  EXPECT_TRUE(saw_vertex);
}

}  // namespace
}  // namespace contactlab::penalty
