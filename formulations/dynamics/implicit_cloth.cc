// Eigen eigensolvers first, with the shared warning workaround.
#include "formulations/linear_algebra/eigenvalues.h"

#include "formulations/dynamics/implicit_cloth.h"

#include <algorithm>
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
  point_nodes_.assign(num_points_, {});
  point_weights_.assign(num_points_, {});
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
          point_nodes_[point][a + 3 * b + 9 * c] = active;
          if (active < 0) continue;
          const double weight = stencil.Weight(a, b, c);
          const double entry =
              face ? weight * inverse_inertia * stencil.NodeOffset(a, b, c, spacing).dot(direction) : weight;
          point_weights_[point][a + 3 * b + 9 * c] = entry;
          for (int axis = 0; axis < 3; ++axis) triplets.emplace_back(3 * point + axis, 3 * active + axis, entry);
        }
      }
    }
  }
  interpolation_.resize(3 * num_points_, 3 * active_count);
  interpolation_.setFromTriplets(triplets.begin(), triplets.end());
  interpolation_transpose_ = interpolation_.transpose();
  BuildStiffnessPattern(active_count);
}

void ImplicitCloth::BuildStiffnessPattern(int active_count) {
  // 1. Point adjacency through the triangles.
  std::vector<std::vector<int>> neighbors(num_points_);
  for (const Element& element : elements_) {
    for (const int k : element.points) {
      if (k < 0) continue;
      for (const int l : element.points) {
        if (l >= 0) neighbors[k].push_back(l);
      }
    }
  }
  neighbor_begin_.assign(num_points_ + 1, 0);
  neighbor_points_.clear();
  for (int p = 0; p < num_points_; ++p) {
    std::sort(neighbors[p].begin(), neighbors[p].end());
    neighbors[p].erase(std::unique(neighbors[p].begin(), neighbors[p].end()), neighbors[p].end());
    neighbor_points_.insert(neighbor_points_.end(), neighbors[p].begin(), neighbors[p].end());
    neighbor_begin_[p + 1] = static_cast<int>(neighbor_points_.size());
  }
  const auto slot_of = [&](int p, int q) {
    const auto begin = neighbor_points_.begin() + neighbor_begin_[p],
               end = neighbor_points_.begin() + neighbor_begin_[p + 1];
    return static_cast<int>(std::lower_bound(begin, end, q) - neighbor_points_.begin());
  };
  element_slots_.assign(elements_.size(), {});
  for (std::size_t e = 0; e < elements_.size(); ++e) {
    const Element& element = elements_[e];
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 4; ++l) {
        element_slots_[e][4 * k + l] =
            element.points[k] >= 0 && element.points[l] >= 0 ? slot_of(element.points[k], element.points[l]) : -1;
      }
    }
  }

  // 2. The nodes each point's neighbours reach, and where each neighbour's stencil node lands.
  reach_begin_.assign(num_points_ + 1, 0);
  reach_nodes_.clear();
  reach_position_.assign(neighbor_points_.size() * 27, -1);
  for (int p = 0; p < num_points_; ++p) {
    std::vector<int> reached;
    for (int s = neighbor_begin_[p]; s < neighbor_begin_[p + 1]; ++s) {
      for (const int node : point_nodes_[neighbor_points_[s]]) {
        if (node >= 0) reached.push_back(node);
      }
    }
    std::sort(reached.begin(), reached.end());
    reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
    for (int s = neighbor_begin_[p]; s < neighbor_begin_[p + 1]; ++s) {
      const std::array<int, 27>& nodes = point_nodes_[neighbor_points_[s]];
      for (int c = 0; c < 27; ++c) {
        if (nodes[c] < 0) continue;
        reach_position_[static_cast<std::size_t>(s) * 27 + c] =
            static_cast<int>(std::lower_bound(reached.begin(), reached.end(), nodes[c]) - reached.begin());
      }
    }
    reach_nodes_.insert(reach_nodes_.end(), reached.begin(), reached.end());
    reach_begin_[p + 1] = static_cast<int>(reach_nodes_.size());
  }

  // 3. Column node j holds row nodes i with i in a point's stencil and j among what it reaches.
  std::vector<std::vector<int>> rows(active_count);
  for (int p = 0; p < num_points_; ++p) {
    for (int r = reach_begin_[p]; r < reach_begin_[p + 1]; ++r) {
      for (const int i : point_nodes_[p]) {
        if (i >= 0) rows[reach_nodes_[r]].push_back(i);
      }
    }
  }
  std::vector<int> column_value_begin(active_count + 1, 0);
  column_stride_.assign(active_count, 0);
  for (int j = 0; j < active_count; ++j) {
    std::sort(rows[j].begin(), rows[j].end());
    rows[j].erase(std::unique(rows[j].begin(), rows[j].end()), rows[j].end());
    column_stride_[j] = 3 * static_cast<int>(rows[j].size());
    column_value_begin[j + 1] = column_value_begin[j] + 9 * static_cast<int>(rows[j].size());
  }
  const int dofs = 3 * active_count;
  const int nonzeros = column_value_begin[active_count];
  stiffness_pattern_ = linear_algebra::SparseMatrix(dofs, dofs);
  stiffness_pattern_.resizeNonZeros(nonzeros);
  std::fill_n(stiffness_pattern_.valuePtr(), nonzeros, 0.0);
  int* outer = stiffness_pattern_.outerIndexPtr();
  int* inner = stiffness_pattern_.innerIndexPtr();
  outer[dofs] = nonzeros;
  for (int j = 0; j < active_count; ++j) {
    for (int beta = 0; beta < 3; ++beta) {
      const int begin = column_value_begin[j] + beta * column_stride_[j];
      outer[3 * j + beta] = begin;
      for (std::size_t r = 0; r < rows[j].size(); ++r) {
        for (int alpha = 0; alpha < 3; ++alpha) inner[begin + 3 * static_cast<int>(r) + alpha] = 3 * rows[j][r] + alpha;
      }
    }
  }
  block_start_.assign(reach_nodes_.size() * 27, -1);
  for (int p = 0; p < num_points_; ++p) {
    for (int r = reach_begin_[p]; r < reach_begin_[p + 1]; ++r) {
      const int j = reach_nodes_[r];
      for (int a = 0; a < 27; ++a) {
        const int i = point_nodes_[p][a];
        if (i < 0) continue;
        const int rank = static_cast<int>(std::lower_bound(rows[j].begin(), rows[j].end(), i) - rows[j].begin());
        block_start_[static_cast<std::size_t>(r) * 27 + a] = column_value_begin[j] + 3 * rank;
      }
    }
  }
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
  // K per pair of neighbouring points, then G_p = Σ_q K_pq W_q and the blocks W_p(i) G_p(j).
  std::vector<Matrix3> pair_blocks(neighbor_points_.size(), Matrix3::Zero());
  for (int e = 0; e < count; ++e) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 4; ++l) {
        const int slot = element_slots_[e][4 * k + l];
        if (slot >= 0) pair_blocks[slot] += blocks[e].block<3, 3>(3 * k, 3 * l);
      }
    }
  }
  linear_algebra::SparseMatrix stiffness = stiffness_pattern_;
  double* values = stiffness.valuePtr();
  std::vector<Matrix3> reached;
  for (int p = 0; p < num_points_; ++p) {
    const int reach_begin = reach_begin_[p];
    reached.assign(reach_begin_[p + 1] - reach_begin, Matrix3::Zero());
    for (int s = neighbor_begin_[p]; s < neighbor_begin_[p + 1]; ++s) {
      const int q = neighbor_points_[s];
      for (int c = 0; c < 27; ++c) {
        if (point_nodes_[q][c] < 0) continue;
        reached[reach_position_[static_cast<std::size_t>(s) * 27 + c]] += point_weights_[q][c] * pair_blocks[s];
      }
    }
    for (int b = 0; b < static_cast<int>(reached.size()); ++b) {
      const int stride = column_stride_[reach_nodes_[reach_begin + b]];
      const int* starts = &block_start_[static_cast<std::size_t>(reach_begin + b) * 27];
      for (int a = 0; a < 27; ++a) {
        if (starts[a] < 0) continue;
        const double weight = point_weights_[p][a];
        double* block = values + starts[a];
        for (int beta = 0; beta < 3; ++beta) {
          for (int alpha = 0; alpha < 3; ++alpha) block[beta * stride + alpha] += weight * reached[b](alpha, beta);
        }
      }
    }
  }
  return stiffness;
}

}  // namespace contactlab::dynamics
