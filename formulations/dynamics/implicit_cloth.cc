// Eigen eigensolvers first, with the shared warning workaround.
#include "formulations/linear_algebra/eigenvalues.h"

#include "formulations/dynamics/implicit_cloth.h"

#include <memory>

#include "mpm/bspline.h"
#include "mpm/cloth_particles.h"

namespace contactlab::dynamics {
namespace {

using mpm::Matrix3;
using mpm::Matrix9;
using mpm::Vector3;

// K_P(a, b)_αβ = Σ_γδ T(α + 3γ, β + 3δ) a_γ b_δ for the column-major flattening of Matrix9.
Matrix3 TangentBlock(const Matrix9& tangent, const Vector3& a, const Vector3& b) {
  Matrix3 block = Matrix3::Zero();
  for (int gamma = 0; gamma < 3; ++gamma) {
    if (a[gamma] == 0.0) continue;
    for (int delta = 0; delta < 3; ++delta) {
      if (b[delta] == 0.0) continue;
      block += (a[gamma] * b[delta]) * tangent.block<3, 3>(3 * gamma, 3 * delta);
    }
  }
  return block;
}

}  // namespace

void ImplicitCloth::Setup(const mpm::SparseGrid& grid, const std::vector<int>& active_index_of_node,
                          const mpm::Particles& particles, const std::vector<mpm::Material>& materials, double dt) {
  dt_ = dt;
  elements_.clear();
  num_points_ = 0;
  const mpm::ClothFaces& faces = particles.cloth_faces;
  if (faces.empty()) {
    interpolation_ = linear_algebra::SparseMatrix();
    interpolation_transpose_ = linear_algebra::SparseMatrix();
    return;
  }
  const double spacing = grid.spacing();
  const double inverse_inertia = mpm::ApicInverseInertiaScale(spacing);
  int active_count = 0;
  for (const int active : active_index_of_node) active_count = std::max(active_count, active + 1);

  // 1. The cloth points: each free vertex once, each face once.
  std::vector<int> point_of_particle(particles.size(), -1);
  std::vector<int> point_particles;
  const auto point_of = [&](int particle) {
    if (point_of_particle[particle] < 0) {
      point_of_particle[particle] = static_cast<int>(point_particles.size());
      point_particles.push_back(particle);
    }
    return point_of_particle[particle];
  };
  elements_.resize(faces.size());
  for (std::size_t face = 0; face < faces.size(); ++face) {
    Element& element = elements_[face];
    const int face_particle = faces.face_particle[face];
    const std::array<Vector3, 3> vertex_directions = mpm::ClothVertexDirections(faces.rest_inverse[face]);
    element.fixed_deformation = mpm::ClothFaceDeformation(particles, static_cast<int>(face));
    element.volume = faces.volume[face];
    element.model = materials[particles.material[face_particle]].constitutive_model;
    for (int k = 0; k < 3; ++k) {
      const int vertex = faces.vertex_particles[face][k];
      element.directions[k] = vertex_directions[k];
      if (particles.cloth_role[vertex] == mpm::ClothRole::kPinnedVertex) {
        element.points[k] = -1;  // its prescribed motion is part of F_fixed
        element.fixed_deformation += dt * particles.velocity[vertex] * vertex_directions[k].transpose();
      } else {
        element.points[k] = point_of(vertex);
      }
    }
    element.directions[3] = Vector3::UnitZ();
    element.points[3] = point_of(face_particle);
  }
  num_points_ = static_cast<int>(point_particles.size());

  // 2. W: a vertex's velocity is Σ_i w_i v_i, a face's rate of d₃ is Σ_i (w_i D⁻¹ (x_i − x_p)·d₃) v_i.
  //    Every stencil node with mass gets its entry, zero or not, so that the pattern depends on
  //    the stencils only.
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(static_cast<std::size_t>(num_points_) * 27 * 3);
  for (int point = 0; point < num_points_; ++point) {
    const int particle = point_particles[point];
    const bool face = particles.cloth_role[particle] == mpm::ClothRole::kFace;
    const Vector3 direction = particles.deformation_gradient[particle].col(2);
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particles.position[particle], spacing);
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int node = grid.FindNode(stencil.base_node + mpm::NodeCoordinate(a, b, c));
          const int active = node >= 0 ? active_index_of_node[node] : -1;
          if (active < 0) continue;
          const double weight = stencil.Weight(a, b, c);
          const double entry =
              face ? weight * inverse_inertia * stencil.NodeOffset(a, b, c, spacing).dot(direction) : weight;
          for (int axis = 0; axis < 3; ++axis) triplets.emplace_back(3 * point + axis, 3 * active + axis, entry);
        }
      }
    }
  }
  interpolation_.resize(3 * num_points_, 3 * active_count);
  interpolation_.setFromTriplets(triplets.begin(), triplets.end());
  interpolation_transpose_ = interpolation_.transpose();
}

Matrix3 ImplicitCloth::Deformation(const Element& element, const Eigen::VectorXd& point_velocity) const {
  Matrix3 deformation = element.fixed_deformation;
  for (int k = 0; k < 4; ++k) {
    if (element.points[k] < 0) continue;
    deformation.noalias() += dt_ * point_velocity.segment<3>(3 * element.points[k]) * element.directions[k].transpose();
  }
  return deformation;
}

std::vector<Matrix3> ImplicitCloth::Deformations(const Eigen::VectorXd& velocity) const {
  std::vector<Matrix3> deformations;
  if (empty()) return deformations;
  const Eigen::VectorXd point_velocity = interpolation_ * velocity;
  for (const Element& element : elements_) deformations.push_back(Deformation(element, point_velocity));
  return deformations;
}

double ImplicitCloth::Energy(const Eigen::VectorXd& velocity) const {
  if (empty()) return 0.0;
  const Eigen::VectorXd point_velocity = interpolation_ * velocity;
  const int count = static_cast<int>(elements_.size());
  std::vector<double> energies(count);
#pragma omp parallel for schedule(static)
  for (int e = 0; e < count; ++e) {
    const Element& element = elements_[e];
    energies[e] =
        element.volume * element.model->EnergyDensity(Deformation(element, point_velocity), Matrix3::Identity());
  }
  double energy = 0.0;
  for (const double value : energies) energy += value;  // in triangle order: any thread count
  return energy;
}

void ImplicitCloth::AddStressForces(const Eigen::VectorXd& velocity, Eigen::VectorXd& forces) const {
  if (empty()) return;
  const Eigen::VectorXd point_velocity = interpolation_ * velocity;
  const int count = static_cast<int>(elements_.size());
  std::vector<Matrix3> stresses(count);
#pragma omp parallel for schedule(static)
  for (int e = 0; e < count; ++e) {
    const Element& element = elements_[e];
    stresses[e] =
        element.volume * element.model->FirstPiolaStress(Deformation(element, point_velocity), Matrix3::Identity());
  }
  Eigen::VectorXd point_forces = Eigen::VectorXd::Zero(3 * num_points_);
  for (int e = 0; e < count; ++e) {
    const Element& element = elements_[e];
    for (int k = 0; k < 4; ++k) {
      if (element.points[k] >= 0) point_forces.segment<3>(3 * element.points[k]) += stresses[e] * element.directions[k];
    }
  }
  forces += interpolation_transpose_ * point_forces;
}

linear_algebra::SparseMatrix ImplicitCloth::Stiffness(const Eigen::VectorXd& velocity, bool projected) const {
  if (empty()) return linear_algebra::SparseMatrix(velocity.size(), velocity.size());
  const Eigen::VectorXd point_velocity = interpolation_ * velocity;
  const int count = static_cast<int>(elements_.size());
  // Per triangle its 12×12 block Δt² V [K_P(c_k, c_l)], then the points' matrix K, then Wᵀ K W.
  std::vector<Eigen::Matrix<double, 12, 12>> blocks(count);
#pragma omp parallel for schedule(static)
  for (int e = 0; e < count; ++e) {
    const Element& element = elements_[e];
    const Matrix9 derivative =
        element.model->FirstPiolaStressDerivative(Deformation(element, point_velocity), Matrix3::Identity());
    Matrix9 tangent = 0.5 * (derivative + derivative.transpose());
    if (projected) {
      const Eigen::SelfAdjointEigenSolver<Matrix9> eigen(tangent);
      const Eigen::Matrix<double, 9, 1> clamped = eigen.eigenvalues().cwiseMax(0.0);
      tangent = eigen.eigenvectors() * clamped.asDiagonal() * eigen.eigenvectors().transpose();
    }
    const double scale = dt_ * dt_ * element.volume;
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 4; ++l) {
        blocks[e].block<3, 3>(3 * k, 3 * l) =
            scale * TangentBlock(tangent, element.directions[k], element.directions[l]);
      }
    }
  }
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(static_cast<std::size_t>(count) * 144);
  for (int e = 0; e < count; ++e) {
    const Element& element = elements_[e];
    for (int k = 0; k < 4; ++k) {
      if (element.points[k] < 0) continue;
      for (int l = 0; l < 4; ++l) {
        if (element.points[l] < 0) continue;
        for (int beta = 0; beta < 3; ++beta) {
          for (int alpha = 0; alpha < 3; ++alpha) {
            triplets.emplace_back(3 * element.points[k] + alpha, 3 * element.points[l] + beta,
                                  blocks[e](3 * k + alpha, 3 * l + beta));
          }
        }
      }
    }
  }
  linear_algebra::SparseMatrix points(3 * num_points_, 3 * num_points_);
  points.setFromTriplets(triplets.begin(), triplets.end());
  const linear_algebra::SparseMatrix weighted = points * interpolation_;
  linear_algebra::SparseMatrix stiffness = interpolation_transpose_ * weighted;
  stiffness.makeCompressed();
  return stiffness;
}

}  // namespace contactlab::dynamics
