#include "mpm/cloth_mesh.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace contactlab::mpm {

ClothMesh RectangleCloth(double width, double height, int columns, int rows, const Vector3& origin,
                         const Vector3& along_width, const Vector3& along_height) {
  if (columns < 2 || rows < 2) throw std::invalid_argument("a cloth rectangle needs at least 2 x 2 vertices");
  // In 64 bits: columns · rows must not wrap before it is compared.
  if (static_cast<std::int64_t>(columns) * rows > kMaxClothVertices) {
    throw std::length_error("a cloth rectangle of " + std::to_string(columns) + " x " + std::to_string(rows) +
                            " vertices has more than " + std::to_string(kMaxClothVertices));
  }
  ClothMesh mesh;
  mesh.rest_positions.reserve(static_cast<std::size_t>(columns) * rows);
  for (int j = 0; j < rows; ++j) {
    for (int i = 0; i < columns; ++i) {
      mesh.rest_positions.push_back(origin + (width * i / (columns - 1)) * along_width +
                                    (height * j / (rows - 1)) * along_height);
    }
  }
  const auto vertex = [columns](int i, int j) { return j * columns + i; };
  for (int j = 0; j + 1 < rows; ++j) {
    for (int i = 0; i + 1 < columns; ++i) {
      const int a = vertex(i, j), b = vertex(i + 1, j), c = vertex(i + 1, j + 1), d = vertex(i, j + 1);
      if ((i + j) % 2 == 0) {  // alternate the diagonals: no preferred shear direction
        mesh.triangles.push_back({a, b, c});
        mesh.triangles.push_back({a, c, d});
      } else {
        mesh.triangles.push_back({a, b, d});
        mesh.triangles.push_back({b, c, d});
      }
    }
  }
  return mesh;
}

ClothParticles DiscretizeCloth(const ClothMesh& mesh, double thickness) {
  ClothParticles out;
  const int vertex_count = static_cast<int>(mesh.rest_positions.size());
  out.vertex_volume.assign(vertex_count, 0.0);
  for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
    const std::array<int, 3>& triangle = mesh.triangles[e];
    for (const int v : triangle) {
      if (v < 0 || v >= vertex_count) {
        throw std::invalid_argument("cloth triangle " + std::to_string(e) + " names vertex " + std::to_string(v) +
                                    " of " + std::to_string(vertex_count));
      }
    }
    const Vector3& x0 = mesh.rest_positions[triangle[0]];
    const Vector3 edge1 = mesh.rest_positions[triangle[1]] - x0, edge2 = mesh.rest_positions[triangle[2]] - x0;
    // Thin QR of D = [e₁ e₂] by Gram–Schmidt: R̄ upper triangular with a positive diagonal.
    const double r11 = edge1.norm();
    const Vector3 q1 = edge1 / r11;
    const double r12 = q1.dot(edge2);
    const Vector3 rest = edge2 - r12 * q1;
    const double r22 = rest.norm();
    if (!(r11 > 0.0) || !(r22 > 1e-12 * r11)) {
      throw std::invalid_argument("cloth triangle " + std::to_string(e) + " has zero area");
    }
    const Vector3 q2 = rest / r22;
    Matrix2 upper;
    upper << r11, r12, 0.0, r22;
    out.rest_inverse.push_back(upper.inverse());
    Matrix3 rotation;
    rotation << q1, q2, q1.cross(q2);
    out.face_deformation.push_back(rotation);
    out.face_position.push_back((x0 + mesh.rest_positions[triangle[1]] + mesh.rest_positions[triangle[2]]) / 3.0);
    const double quarter = 0.25 * 0.5 * r11 * r22 * thickness;  // A = r₁₁ r₂₂ / 2
    out.face_volume.push_back(quarter);
    for (const int v : triangle) out.vertex_volume[v] += quarter;
  }
  return out;
}

Matrix3 FaceDeformation(const std::array<Vector3, 3>& vertices, const Matrix2& rest_inverse,
                        const Vector3& normal_direction) {
  Eigen::Matrix<double, 3, 2> edges;
  edges << vertices[1] - vertices[0], vertices[2] - vertices[0];
  Matrix3 f;
  f.leftCols<2>() = edges * rest_inverse;
  f.col(2) = normal_direction;
  return f;
}

std::array<Vector3, 3> InPlaneVertexForces(const Matrix3& stress, const Matrix2& rest_inverse, double volume) {
  // E = V Ψ(F) with F[:, 0:2] = [x₁ − x₀, x₂ − x₀] D_m⁻¹: ∂E/∂[x₁ x₂] = V P[:, 0:2] D_m⁻ᵀ.
  const Eigen::Matrix<double, 3, 2> forces = -volume * stress.leftCols<2>() * rest_inverse.transpose();
  return {Vector3(-forces.col(0) - forces.col(1)), Vector3(forces.col(0)), Vector3(forces.col(1))};
}

}  // namespace contactlab::mpm
