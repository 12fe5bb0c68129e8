#pragma once
// The cloth's part of the implicit MPM step (dynamics::ImplicitMpm; mpm/cloth_particles.h).
//
// A triangle's energy V Ψ(F) depends on the step's grid velocities v through its free
// vertices' velocities u_k = Σ_i w_i(x_k) v_i and its face particle's rate of d₃,
// r = C d₃ = Σ_i v_i (w_ip D⁻¹ (x_i − x_p)·d₃), the same interpolations the shared
// grid-to-particle transfer applies, so the energy minimized is the one the cloth ends with:
//   F(v) = F_fixed + Δt (Σ_k u_k b_kᵀ + r e₃ᵀ),
// F_fixed = Fⁿ plus the pinned vertices' prescribed motion Δt Σ_pinned v_pin b_kᵀ. Stacking
// the free vertices' and faces' rates as the cloth points' velocities U = W v (W: the
// interpolation, 3 rows per point), with the directions c = (b₀, b₁, b₂, e₃) of the
// triangle's four points,
//   E_cloth = Σ_e V Ψ(F_e),   ∂E/∂v = Δt Wᵀ g,   g_point += V P c,
//   ∂²E/∂v² = Δt² Wᵀ K W,   K's block (k, l) of a triangle = V K_P(c_k, c_l),
// K_P(a, b)_αβ = Σ_γδ ∂P_αγ/∂F_βδ a_γ b_δ, with dP/dF projected to be positive
// semidefinite (or exact) as for every particle (dynamics/implicit_mpm.h).
#include <array>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "formulations/linear_algebra/sparse_cholesky.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"
#include "mpm/types.h"

namespace contactlab::dynamics {

class ImplicitCloth {
 public:
  // The step's triangles from the particles at its start, on the grid of the step with the
  // active numbering `active_index_of_node` (−1: no mass) and time step dt [s].
  void Setup(const mpm::SparseGrid& grid, const std::vector<int>& active_index_of_node, const mpm::Particles& particles,
             const std::vector<mpm::Material>& materials, double dt);
  bool empty() const { return elements_.empty(); }

  // Σ_e V Ψ(F_e(v)) [J].
  double Energy(const Eigen::VectorXd& velocity) const;
  // Adds Wᵀ g = ∂E/∂v / Δt [N] to `forces` (the same quantity as the particles' Σ_p V P g_ip).
  void AddStressForces(const Eigen::VectorXd& velocity, Eigen::VectorXd& forces) const;
  // Δt² Wᵀ K W [kg]: both triangles, compressed column-major, pattern fixed by Setup.
  linear_algebra::SparseMatrix Stiffness(const Eigen::VectorXd& velocity, bool projected) const;
  // F_e(v) of every triangle, for tests.
  std::vector<mpm::Matrix3> Deformations(const Eigen::VectorXd& velocity) const;

 private:
  struct Element {
    mpm::Matrix3 fixed_deformation;          // F_fixed
    double volume = 0.0;                     // V = A t [m³]
    std::array<int, 4> points;               // cloth point of each direction, −1 for a pinned vertex
    std::array<mpm::Vector3, 4> directions;  // b₀, b₁, b₂, e₃
    std::shared_ptr<const mpm::ConstitutiveModel> model;
  };
  mpm::Matrix3 Deformation(const Element& element, const Eigen::VectorXd& point_velocity) const;

  // The stiffness Δt² Wᵀ K W is assembled point by point into a pattern fixed by Setup:
  // G_p = Σ_q K_pq W_q (one 3×3 block per node a neighbour q of p reaches), then the blocks
  // (i, j) += W_p(i) G_p(j) for the 27 stencil nodes i of p.
  void BuildStiffnessPattern(int active_count);

  double dt_ = 0.0;
  int num_points_ = 0;
  std::vector<Element> elements_;
  linear_algebra::SparseMatrix interpolation_;  // W: 3 rows per cloth point, 3 columns per active node
  linear_algebra::SparseMatrix interpolation_transpose_;
  // Per point its 27 stencil nodes (active index, −1 if none) and W's scalar entries.
  std::vector<std::array<int, 27>> point_nodes_;
  std::vector<std::array<double, 27>> point_weights_;
  // Per point the points it shares a triangle with (itself included), sorted: CSR.
  std::vector<int> neighbor_begin_, neighbor_points_;
  // Per element and pair (k, l) of its points: the slot of point l among point k's neighbours.
  std::vector<std::array<int, 16>> element_slots_;
  // Per point the nodes its neighbours' stencils reach, sorted (CSR), and per neighbour slot
  // and stencil node the position of that node in the list.
  std::vector<int> reach_begin_, reach_nodes_;
  std::vector<int> reach_position_;  // [neighbour slot · 27 + stencil node]
  // The pattern (3×3 blocks, both triangles, sorted rows) and, per point, stencil node a and
  // reached node b, where block (stencil node a, reached node b) starts and its column stride.
  linear_algebra::SparseMatrix stiffness_pattern_;
  std::vector<int> block_start_;    // [reach index of (p, b) · 27 + a]
  std::vector<int> column_stride_;  // per active node: 3 × its neighbour count
};

}  // namespace contactlab::dynamics
