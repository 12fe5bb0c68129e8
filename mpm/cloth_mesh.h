#pragma once
// The Lagrangian triangle mesh of a codimensional cloth ([jiang2017cloth] §4; spec-sap-qn §2.5)
// and what its particles carry. A vertex particle sits at each mesh vertex and a face
// particle at each triangle's centroid. Each triangle of rest area A and thickness t lends a
// quarter of its volume A t to its face particle and a quarter to each of its three vertices.
//
// The face particle's deformation gradient F has the mesh's in-plane columns,
// F[:, 0:2] = [x₁ − x₀, x₂ − x₀] D_m⁻¹, with D_m⁻¹ = R̄⁻¹ from the thin QR D = Q̄ R̄ of the
// rest edges D = [X₁ − X₀, X₂ − X₀]; its third column is the Eulerian normal direction d₃,
// the unit rest normal at the start (F = Q̄ completed to a rotation). The in-plane columns
// of the stress act on the vertices as forces of the triangle's energy V Ψ(F),
//   [f₁ f₂] = −V P[:, 0:2] D_m⁻ᵀ,   f₀ = −(f₁ + f₂),
// V the triangle's quadrature volume. contactlab takes the triangle's whole volume A t, so
// that the cloth's in-plane stiffness is the E and ν it is given; spec-sap-qn §2.5 notes
// that the authors' code weights by the face particle's A t / 4, a 4× softer cloth.
#include <array>
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "mpm/types.h"

namespace contactlab::mpm {

using Matrix2 = Eigen::Matrix2d;

struct ClothMesh {
  std::vector<Vector3> rest_positions;        // X per vertex [m]
  std::vector<std::array<int, 3>> triangles;  // vertex indices, counter-clockwise about the normal
};

// The most vertices RectangleCloth makes (std::length_error beyond): with about two face
// particles per vertex, 3·10⁷ particles, far beyond any cloth scene here and near what memory
// holds.
inline constexpr std::int64_t kMaxClothVertices = 10'000'000;

// A rectangle of width × height [m] in the plane through `origin` spanned by the unit
// vectors `along_width` and `along_height` (the normal is their cross product), with
// columns × rows vertices on a regular grid, each grid cell split into two triangles along
// alternating diagonals. columns, rows ≥ 2 (std::invalid_argument otherwise).
ClothMesh RectangleCloth(double width, double height, int columns, int rows, const Vector3& origin,
                         const Vector3& along_width, const Vector3& along_height);

struct ClothParticles {
  std::vector<double> vertex_volume;      // [m³]: a quarter of each adjacent triangle's A t
  std::vector<double> face_volume;        // [m³]: A t / 4 per triangle
  std::vector<Matrix2> rest_inverse;      // D_m⁻¹ = R̄⁻¹ per triangle
  std::vector<Matrix3> face_deformation;  // F at rest: Q̄ with the unit rest normal as third column
  std::vector<Vector3> face_position;     // centroid of each triangle at rest
};

// The particles' rest data of `mesh` at thickness t [m]. Throws std::invalid_argument for a
// triangle of zero area or a vertex index out of range.
ClothParticles DiscretizeCloth(const ClothMesh& mesh, double thickness);

// F[:, 0:2] of a triangle at the current vertex positions, with the given third column.
Matrix3 FaceDeformation(const std::array<Vector3, 3>& vertices, const Matrix2& rest_inverse,
                        const Vector3& normal_direction);

// The forces on the triangle's three vertices from the in-plane columns of its stress P
// (first Piola–Kirchhoff) at quadrature volume V.
std::array<Vector3, 3> InPlaneVertexForces(const Matrix3& stress, const Matrix2& rest_inverse, double volume);

}  // namespace contactlab::mpm
