#include "mpm/cloth_particles.h"

#include <algorithm>
#include <stdexcept>

#include <Eigen/SVD>
#include <string>

namespace contactlab::mpm {

ClothRange AddCloth(const ClothMesh& mesh, double thickness, int material, const std::vector<Material>& materials,
                    const Vector3& velocity, Particles& particles) {
  if (material < 0 || material >= static_cast<int>(materials.size()) || materials[material].model != "cloth") {
    throw std::invalid_argument("AddCloth: material " + std::to_string(material) + " is not a cloth material");
  }
  if (!(thickness > 0.0)) throw std::invalid_argument("AddCloth: the cloth's thickness must be positive");
  const ClothParticles rest = DiscretizeCloth(mesh, thickness);
  const double density = materials[material].density;
  // Particles added before the first cloth had no role yet (Particles::Add keeps the roles
  // once there are any).
  const auto set_role = [&](ClothRole role) {
    particles.cloth_role.resize(particles.size(), ClothRole::kNone);
    particles.cloth_role.back() = role;
  };

  ClothRange range;
  range.first_vertex_particle = static_cast<int>(particles.size());
  range.first_face = static_cast<int>(particles.cloth_faces.size());
  for (std::size_t v = 0; v < mesh.rest_positions.size(); ++v) {
    particles.Add(mesh.rest_positions[v], velocity, density * rest.vertex_volume[v], rest.vertex_volume[v], material);
    set_role(ClothRole::kVertex);
  }
  range.first_face_particle = static_cast<int>(particles.size());
  for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
    particles.Add(rest.face_position[e], velocity, density * rest.face_volume[e], rest.face_volume[e], material);
    set_role(ClothRole::kFace);
    particles.deformation_gradient.back() = rest.face_deformation[e];
    ClothFaces& faces = particles.cloth_faces;
    faces.face_particle.push_back(range.first_face_particle + static_cast<int>(e));
    const std::array<int, 3>& triangle = mesh.triangles[e];
    faces.vertex_particles.push_back({range.first_vertex_particle + triangle[0],
                                      range.first_vertex_particle + triangle[1],
                                      range.first_vertex_particle + triangle[2]});
    faces.rest_inverse.push_back(rest.rest_inverse[e]);
    // σ_min(D_m) = 1 / σ_max(D_m⁻¹).
    faces.shortest_rest_dimension =
        std::min(faces.shortest_rest_dimension,
                 1.0 / Eigen::JacobiSVD<Eigen::Matrix2d>(rest.rest_inverse[e]).singularValues()[0]);
    faces.volume.push_back(4.0 * rest.face_volume[e]);  // the triangle's A t
  }
  return range;
}

std::array<Vector3, 3> ClothVertexDirections(const Eigen::Matrix2d& rest_inverse) {
  // F[:, 0:2] = [x₁ − x₀, x₂ − x₀] D_m⁻¹: b₁ = D_m⁻ᵀ e₁, b₂ = D_m⁻ᵀ e₂, b₀ = −(b₁ + b₂).
  const Eigen::Vector2d first = rest_inverse.row(0).transpose(), second = rest_inverse.row(1).transpose();
  const Vector3 b1(first.x(), first.y(), 0.0), b2(second.x(), second.y(), 0.0);
  return {Vector3(-b1 - b2), b1, b2};
}

Matrix3 ClothFaceDeformation(const Particles& particles, int face) {
  const ClothFaces& faces = particles.cloth_faces;
  const std::array<int, 3>& vertices = faces.vertex_particles[face];
  return FaceDeformation(
      {particles.position[vertices[0]], particles.position[vertices[1]], particles.position[vertices[2]]},
      faces.rest_inverse[face], particles.deformation_gradient[faces.face_particle[face]].col(2));
}

void ComputeClothLoads(const Particles& particles, const std::vector<Material>& materials, ClothLoads& loads) {
  const ClothFaces& faces = particles.cloth_faces;
  const int face_count = static_cast<int>(faces.size());
  loads.vertex_force.assign(particles.size(), Vector3::Zero());
  loads.face_stress.assign(particles.size(), Matrix3::Zero());
  std::vector<std::array<Vector3, 3>> face_forces(face_count);
#pragma omp parallel for schedule(static)
  for (int face = 0; face < face_count; ++face) {
    const int particle = faces.face_particle[face];
    const Matrix3 deformation = ClothFaceDeformation(particles, face);
    const Matrix3 stress =
        materials[particles.material[particle]].constitutive_model->FirstPiolaStress(deformation, Matrix3::Identity());
    face_forces[face] = InPlaneVertexForces(stress, faces.rest_inverse[face], faces.volume[face]);
    loads.face_stress[particle] = faces.volume[face] * stress.col(2) * deformation.col(2).transpose();
  }
  // Each vertex sums its triangles' forces in triangle order: the same bits for any thread count.
  for (int face = 0; face < face_count; ++face) {
    for (int k = 0; k < 3; ++k) {
      const int vertex = faces.vertex_particles[face][k];
      if (particles.cloth_role[vertex] == ClothRole::kVertex) loads.vertex_force[vertex] += face_forces[face][k];
    }
  }
}

void FinishClothParticles(double dt, Particles& particles) {
  const int count = static_cast<int>(particles.size());
#pragma omp parallel for schedule(static)
  for (int p = 0; p < count; ++p) {
    switch (particles.cloth_role[p]) {
      case ClothRole::kPinnedVertex:  // the grid-to-particle transfer left it alone
        particles.position[p] += dt * particles.velocity[p];
        particles.affine_velocity[p].setZero();
        particles.deformation_gradient[p].setIdentity();
        break;
      case ClothRole::kVertex:
        particles.deformation_gradient[p].setIdentity();
        break;
      default:
        break;
    }
  }
  const ClothFaces& faces = particles.cloth_faces;
  const int face_count = static_cast<int>(faces.size());
#pragma omp parallel for schedule(static)
  for (int face = 0; face < face_count; ++face) {
    const int particle = faces.face_particle[face];
    const std::array<int, 3>& vertices = faces.vertex_particles[face];
    particles.deformation_gradient[particle] = ClothFaceDeformation(particles, face);
    particles.position[particle] =
        (particles.position[vertices[0]] + particles.position[vertices[1]] + particles.position[vertices[2]]) / 3.0;
  }
}

std::vector<Vector3> ClothPinForces(const Particles& particles, const std::vector<Material>& materials) {
  std::vector<Vector3> forces(particles.cloth_pins.size(), Vector3::Zero());
  if (forces.empty()) return forces;
  // Which pin holds each pinned vertex.
  std::vector<int> pin_of(particles.size(), -1);
  for (std::size_t pin = 0; pin < particles.cloth_pins.size(); ++pin) {
    if (!particles.cloth_pins[pin].holding) continue;
    for (const int p : particles.cloth_pins[pin].particles) pin_of[p] = static_cast<int>(pin);
  }
  const ClothFaces& faces = particles.cloth_faces;
  for (std::size_t face = 0; face < faces.size(); ++face) {
    const std::array<int, 3>& vertices = faces.vertex_particles[face];
    if (pin_of[vertices[0]] < 0 && pin_of[vertices[1]] < 0 && pin_of[vertices[2]] < 0) continue;
    const Matrix3 deformation = ClothFaceDeformation(particles, static_cast<int>(face));
    const Matrix3 stress =
        materials[particles.material[faces.face_particle[face]]].constitutive_model->FirstPiolaStress(
            deformation, Matrix3::Identity());
    const std::array<Vector3, 3> vertex_forces =
        InPlaneVertexForces(stress, faces.rest_inverse[face], faces.volume[face]);
    for (int k = 0; k < 3; ++k) {
      if (pin_of[vertices[k]] >= 0) forces[pin_of[vertices[k]]] -= vertex_forces[k];
    }
  }
  return forces;
}

void ApplyClothPins(double time, Particles& particles) {
  // First every pin's vertices go to the grid, then the pins that hold now take theirs: a
  // vertex in two pins (one released, one grasping) is held.
  for (ClothPin& pin : particles.cloth_pins) {
    pin.holding = pin.HoldsAt(time);
    for (const int p : pin.particles) particles.cloth_role[p] = ClothRole::kVertex;
  }
  for (const ClothPin& pin : particles.cloth_pins) {
    if (!pin.holding) continue;
    Vector3 velocity = Vector3::Zero();
    for (std::size_t k = 0; k < pin.segment_end.size(); ++k) {
      if (time < pin.segment_end[k]) {
        velocity = pin.segment_velocity[k];
        break;
      }
    }
    for (const int p : pin.particles) {
      particles.cloth_role[p] = ClothRole::kPinnedVertex;
      particles.velocity[p] = velocity;
      particles.affine_velocity[p].setZero();
    }
  }
}

}  // namespace contactlab::mpm
