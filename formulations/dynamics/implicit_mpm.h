#pragma once
// The implicit MPM free motion of one time step ([zong2024convex] eqs. 11–16, spec-sap-qn §1.1.3):
// the grid velocities v of the active nodes minimize
//   E(v) = ½ (v − vⁿ)ᵀ M (v − vⁿ) − Δt vᵀ M g + Σ_p V_p⁰ Ψ(F_p(v)),
// with M = diag(m_i I₃) the lumped mass, vⁿ the APIC grid velocities from P2G, and the
// elastic deformation gradient of particle p after the step
//   F_p(v) = (I + Δt Σ_i v_i a_ipᵀ) F_pⁿ,   a_ip = w_ip D⁻¹ (x_i − x_p),   D⁻¹ = 4/h².
// a_ip is the MLS-MPM velocity-gradient weight (Hu et al. 2018): it is the update the shared
// G2P applies (F ← (I + Δt C_p) F with C_p = Σ_i v_i a_ipᵀ), so the energy minimized here is
// exactly the one the particles end up with. ([zong2024convex] eq. 14 writes ∇w_ip instead; with
// quadratic B-splines the two differ by O(h) and the MLS form keeps a single F update.)
// F_pⁿ is the elastic gradient F^E and Ψ uses the particle's stored reference rotation R0.
// The return mapping follows the step; where the PlasticityTiming puts a model inside the
// step (Drucker–Prager by default), its step energy stands in place of Ψ, so the step's
// stress already stays on its yield surface.
//
// Gradient and Hessian (spec §1.1.3 with g_ip = F_pⁿᵀ a_ip):
//   ∇_i E = m_i (v_i − v_iⁿ) − Δt m_i g + Δt Σ_p V_p⁰ P_p g_ip,
//   [A]_ij = m_i δ_ij I₃ + Δt² Σ_p V_p⁰ K_p(g_ip, g_jp),  K_p(a,b)_αβ = Σ_γδ ∂P_αγ/∂F_βδ a_γ b_δ.
// For the linear corotated model Ψ is quadratic in F, A is constant and one Newton step is
// exact; other models take damped Newton steps with the per-particle tangent projected to
// be positive semidefinite (spec §5 Z3), so A stays SPD. The penalty method's Newton, whose
// line search differentiates ½‖g‖² through its Jacobian, takes the exact tangent instead
// (StressTangent::kExact, spec-penalty-hybrid §2.2).
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "formulations/contact/grid_boundary.h"
#include "formulations/dynamics/implicit_cloth.h"
#include "formulations/formulation.h"
#include "formulations/linear_algebra/sparse_cholesky.h"
#include "formulations/parameters.h"
#include "formulations/solvers/solver_summary.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"

namespace contactlab::dynamics {

using linear_algebra::SparseMatrix;
using mpm::Matrix3;
using mpm::Matrix9;
using mpm::Vector3;

// When a plastic material's return mapping acts in an implicit step (spec-penalty-hybrid A13):
// after the step's solve (kAfterStep, lagged: the step is elastic, as [zong2024convex] does for the
// von Mises dough), or, for models that offer it (mpm::ConstitutiveModel::
// has_in_step_plasticity: Drucker–Prager, von Mises), inside it (kInStep): the solve
// minimizes the model's step energy, whose stress stays on the yield surface, and the return
// mapping still follows.
// kAuto: each model's own default (ConstitutiveModel::in_step_plasticity_by_default).
enum class PlasticityTiming { kAuto, kInStep, kAfterStep };
const ChoiceTable<PlasticityTiming>& PlasticityTimingNames();
// The formulation key `key` (sap.plasticity, penalty.plasticity), default auto.
ParameterSpec PlasticityTimingSpec(const std::string& key);
// "in_step" for the steps in which a material used its step energy, "after_step" for the rest.
UsedChoiceTracker PlasticityTimingTracker(const std::string& key);

// Which per-particle tangent dP/dF the Hessian assembles for models that are not quadratic:
// projected to be positive semidefinite (kProjected: A is SPD, for convex solves) or as it is
// (kExact: A is the Jacobian of the gradient, possibly indefinite).
enum class StressTangent { kProjected, kExact };

// Which tangent the free motion's Newton directions use (the A returned for the contact
// problem is always the projected one, spec §5 Z3).
// kAuto: the exact tangent where the whole Hessian M + Δt² K_exact it gives factors as
// positive definite and its direction is downhill, the projected one otherwise. Both reach
// the same minimizer under the same stopping rule; the exact one converges quadratically near
// it, while clamping the negative modes of buckling cloth or compressed particles makes
// Newton converge only linearly (box_bagging: 9–25 projected iterations a step).
// kProjected: the PSD-projected tangent at every iteration (spec §5 Z3 as written).
enum class FreeMotionTangent { kAuto, kProjected };
const ChoiceTable<FreeMotionTangent>& FreeMotionTangentNames();
// The formulation key `key` (sap.free_motion_tangent), default auto.
ParameterSpec FreeMotionTangentSpec(const std::string& key);
// Counts the Newton directions of each tangent: members "exact" and "projected".
UsedChoiceTracker FreeMotionTangentTracker(const std::string& key);

struct ImplicitMpmOptions {
  // Newton stops when ‖M^(-1/2) ∇E‖ ≤ tolerance · max(‖M^(1/2) v‖, ‖M^(-1/2) Δt k‖)
  // (spec §5 Z2, SAP-style scaling; k the elastic forces) [-]. [zong2024convex] uses 1e-6.
  double relative_tolerance = 1.0e-6;
  // Newton iterations for nonlinear models (the linear corotated model takes one).
  int max_newton_iterations = 50;
  FreeMotionTangent tangent = FreeMotionTangent::kAuto;
};

// How many of a free-motion solve's Newton directions came from each tangent.
struct FreeMotionDirections {
  int exact = 0;
  int projected = 0;
};

class ImplicitMpm {
 public:
  // Prepares the problem of one step from a grid on which mpm::ParticleToGrid(particles,
  // materials, /*stress_dt=*/0, grid) has just run (masses and APIC momenta, no stress).
  // Active nodes are those with m_i > 0, numbered in grid node order; DoFs 3k…3k+2 belong
  // to active node k. Caches each particle's stencil, a_ip and the F, R0, V⁰ it needs.
  void Setup(const mpm::SparseGrid& grid, const mpm::Particles& particles, const std::vector<mpm::Material>& materials,
             const Vector3& gravity, double dt);
  // The plasticity timing of the next Setup (default kAfterStep). Where it puts a model in the
  // step, its particles carry the step energy's state from their F^E at the step's start, and
  // Energy, Gradient and Hessian use that energy for them.
  void set_plasticity_timing(PlasticityTiming timing) { plasticity_timing_ = timing; }
  // Whether the last Setup put any particle on its model's step energy.
  bool uses_in_step_plasticity() const { return uses_in_step_plasticity_; }
  // What the last Setup did with plasticity, for a formulation's record of its timing key:
  // kInStep if a particle uses its model's step energy, else kAfterStep if some material is
  // plastic; nothing when no material is.
  std::optional<PlasticityTiming> plasticity_timing_used() const;

  int num_active_nodes() const { return static_cast<int>(active_nodes_.size()); }
  int num_dofs() const { return 3 * num_active_nodes(); }
  // True when every particle's energy is quadratic in F (linear corotated): then E is
  // quadratic in v, A is constant and the free motion is one linear solve.
  bool is_quadratic() const { return quadratic_; }
  // Grid node index of each active node, and the active index of a grid node (−1 if none).
  const std::vector<int>& active_nodes() const { return active_nodes_; }
  int ActiveIndexOfGridNode(int grid_node) const { return active_index_of_node_[grid_node]; }
  // m_i per active node [kg].
  const Eigen::VectorXd& node_masses() const { return node_masses_; }
  // vⁿ (size num_dofs) [m/s].
  const Eigen::VectorXd& initial_velocity() const { return initial_velocity_; }

  // Grid-boundary walls (contact/grid_boundary.h) as constraints of the step, set after Setup:
  // the velocity components contact::ImplicitConstraintMask fixes at zero at the active nodes
  // inside a wall. From then on Gradient is zero on them and Hessian keeps only their
  // diagonal (their rows and columns decoupled), so every Newton on E (the free motion, SAP's
  // contact problem, penalty's step) started at start_velocity() never moves them; contact
  // Jacobians drop their columns (free_components). Returns the number of wall nodes.
  int ConstrainGridBoundary(const mpm::SparseGrid& grid, const std::vector<rigid::RigidBody>& bodies);
  bool has_constraints() const { return !wall_nodes_.empty(); }
  bool IsConstrainedDof(int dof) const {
    return !constrained_mask_.empty() && ((constrained_mask_[dof / 3] >> (dof % 3)) & 1u) != 0;
  }
  // Per world axis of an active node: 1 where its velocity is free, 0 where a wall fixes it.
  Vector3 free_components(int active_node) const;
  // vⁿ with the fixed components zero: where every solve of the step starts [m/s]. Where some
  // particle's energy is not finite there (inverted under a barrier energy), or its volume
  // falls below half of its volume at the step's start, the velocities of its stencil are
  // halved until neither holds (start_scaled_nodes() counts the nodes so changed).
  const Eigen::VectorXd& start_velocity() const { return start_velocity_; }
  int start_scaled_nodes() const { return start_scaled_nodes_; }
  // After the step's solve at `velocity`: the impulse each wall node received from its wall is
  // the constraint reaction on its fixed components (momentum balance of the node): the
  // unconstrained ∇E(v) of the energy the step solved, or `model_gradient` where the step
  // solved a model of E instead (sap's contact problem: ModelGradient), less `other_impulses`,
  // what other constraints gave those components (contact impulses whose Jacobians dropped
  // them; per DoF, only the fixed components are read). A separating wall then applies Coulomb
  // friction to the tangential velocity with that normal impulse
  // (contact::SeparatingWallFriction). Changes `velocity` accordingly and returns what each
  // wall body received (one per body, the opposite of what the nodes got).
  std::vector<contact::WallImpulse> FinishGridBoundary(Eigen::VectorXd& velocity,
                                                       const std::vector<rigid::RigidBody>& bodies,
                                                       const Eigen::VectorXd* model_gradient = nullptr,
                                                       const Eigen::VectorXd* other_impulses = nullptr) const;
  // The gradient at `velocity` of the quadratic model of E about `about`,
  // ∇E(about) + A(about) (velocity − about), A the projected Hessian, walls not imposed (their
  // rows and columns kept). sap's contact problem minimizes this model about v*, not E; its
  // rows at the wall components are the reactions that balance the step it took. Translation
  // leaves the elastic part unchanged, so its rows sum to the momentum change of the grid
  // minus gravity's impulse, as ∇E's do.
  Eigen::VectorXd ModelGradient(const Eigen::VectorXd& about, const Eigen::VectorXd& velocity) const;

  double Energy(const Eigen::VectorXd& velocity) const;             // [J]
  Eigen::VectorXd Gradient(const Eigen::VectorXd& velocity) const;  // [N s]
  // Full symmetric matrix (both triangles), compressed column-major with sorted row
  // indices. Its pattern depends only on the active nodes and the particles' stencils (node
  // pairs that share a particle), never on values, so CHOLMOD's symbolic analysis can be
  // reused while they are unchanged. Assembled in parallel (colour by colour), identical
  // bits for any thread count.
  SparseMatrix Hessian(const Eigen::VectorXd& velocity,
                       StressTangent tangent = StressTangent::kProjected) const;  // [kg]
  // The same without the walls' decoupling: their components' rows and columns as E has them.
  SparseMatrix UnconstrainedHessian(const Eigen::VectorXd& velocity, StressTangent tangent) const;  // [kg]
  // Elastic forces k(v) = −Σ_p V_p⁰ P_p g_ip per DoF [N] (the Δt-scaled part of ∇E).
  Eigen::VectorXd ElasticForces(const Eigen::VectorXd& velocity) const;

  // Newton (with backtracking on E for nonlinear models) from vⁿ: returns v* and sets
  // `hessian` to A = ∇²E(v*) (projected tangent), the MPM block of the contact problem's A.
  // The summary's residual is ‖M^(-1/2) ∇E‖ against its threshold, its cost E, its
  // line-search evaluations the trial energies of the backtracking; `directions` (if given)
  // receives how many Newton directions each tangent gave (options.tangent).
  solvers::SolverSummary SolveFreeMotion(const ImplicitMpmOptions& options, linear_algebra::SparseCholesky& cholesky,
                                         Eigen::VectorXd& free_motion_velocity, SparseMatrix& hessian,
                                         FreeMotionDirections* directions = nullptr) const;

 private:
  // Stencil slots and neighbour slots: a particle's 27 stencil nodes are i₀ + (a, b, c),
  // a, b, c ∈ {0, 1, 2}, numbered a + 3b + 9c; two nodes of one stencil differ by an offset
  // in {−2…2}³, numbered (dx + 2) + 5(dy + 2) + 25(dz + 2) (125 neighbour slots).
  static constexpr int kStencilSize = 27;
  static constexpr int kNeighborSlots = 125;

  // What the step needs of each material.
  struct MaterialData {
    std::shared_ptr<const mpm::ConstitutiveModel> model;
    bool linear_corotated = false;      // closed-form tangent K_p (spec §1.1.3)
    double shear_modulus = 0.0;         // μ_L [Pa]
    double first_lame_parameter = 0.0;  // λ [Pa]
    bool in_step_plasticity = false;    // Ψ is the model's step energy (PlasticityTiming)
    // A cloth's particles: their energy is their triangles', in cloth_ (dynamics/implicit_cloth.h).
    bool cloth = false;
  };
  // Particles of one particle block that share a base node (hence a stencil) and a
  // material; the unit of the Hessian assembly (one rank update per group).
  struct CellGroup {
    std::array<int, kStencilSize> dofs;  // active index of each stencil node, −1 if none
    int first_particle = 0;              // range in the group-sorted particle arrays
    int end_particle = 0;
    int material = 0;
  };

  // Elastic deformation gradient after the step, F_p(v) = F_pⁿ + Δt Σ_i v_i g_ipᵀ.
  Matrix3 DeformationGradient(const CellGroup& group, int particle, const Eigen::VectorXd& velocity) const;
  // Ψ, P and dP/dF of particle s at F: the model's elastic ones, or its step energy's with the
  // particle's step state.
  double ParticleEnergyDensity(const MaterialData& material, int particle, const Matrix3& deformation) const;
  Matrix3 ParticleStress(const MaterialData& material, int particle, const Matrix3& deformation) const;
  Matrix9 ParticleStressDerivative(const MaterialData& material, int particle, const Matrix3& deformation) const;
  // Σ_p V_p⁰ P_p g_ip per DoF [N] (= −k).
  Eigen::VectorXd StressForces(const Eigen::VectorXd& velocity) const;
  // ∇E without the wall constraints.
  Eigen::VectorXd UnconstrainedGradient(const Eigen::VectorXd& velocity) const;
  // Runs visit(group) for every cell group, colour by colour, in parallel over the particle
  // blocks of a colour: groups that run at once never share a stencil node.
  template <typename Visitor>
  void ForEachGroupColored(Visitor&& visit) const;
  // ConstrainGridBoundary's last part: start_velocity_ halved on the stencils of particles
  // whose energy is not finite there or whose J falls below ½ Jⁿ, until none is left.
  void PullStartBackFromInversion();
  // Adds the group's Δt² Σ_p V_p⁰ K_p blocks to the compressed Hessian values.
  void AddGroupStiffness(const CellGroup& group, const Eigen::VectorXd& velocity, StressTangent tangent,
                         Eigen::MatrixXd& columns, Eigen::MatrixXd& products, Eigen::MatrixXd& negative_columns,
                         Eigen::MatrixXd& negative_products, double* values) const;

  Vector3 gravity_ = Vector3::Zero();
  double dt_ = 0.0;
  std::vector<int> active_nodes_;
  std::vector<int> active_index_of_node_;
  Eigen::VectorXd node_masses_;
  Eigen::VectorXd initial_velocity_;
  Eigen::VectorXd start_velocity_;
  int start_scaled_nodes_ = 0;
  // Grid-boundary walls: their nodes (grid node indices), and per active node a bit per
  // fixed velocity component (empty without walls).
  std::vector<contact::GridBoundaryNode> wall_nodes_;
  std::vector<std::uint8_t> wall_masks_;  // the components each record of wall_nodes_ fixes
  std::vector<std::uint8_t> constrained_mask_;
  std::vector<MaterialData> materials_;
  ImplicitCloth cloth_;    // the cloth's triangles, empty without cloth
  bool quadratic_ = true;  // every particle is linear corotated: E is quadratic in v
  PlasticityTiming plasticity_timing_ = PlasticityTiming::kAfterStep;
  bool uses_in_step_plasticity_ = false;
  bool has_plastic_material_ = false;

  // Particle data in group-sorted order (the grid's block order, then cell, then material).
  std::vector<std::array<Vector3, kStencilSize>> strain_weights_;  // g_ip = F_pⁿᵀ a_ip [1/m]
  std::vector<Matrix3> deformation_gradients_;                     // F_pⁿ = F^E [-]
  std::vector<Matrix3> reference_rotations_;                       // R0 [-]
  std::vector<double> initial_volumes_;                            // V_p⁰ [m³]
  std::vector<double> step_states_;  // the step energy's state (in-step plasticity), else 0
  // Linear corotated particles: √(Δt² V_p⁰) (R0 g_ip)_i, 81 values (zero-padded to 88)
  // each [s √m].
  std::vector<double> stiffness_columns_;
  std::vector<CellGroup> groups_;
  std::vector<int> block_group_begin_;  // groups of particle block k
  std::array<std::vector<int>, mpm::SparseGrid::kColors> blocks_of_color_;

  // Hessian pattern: node pairs that share a stencil. Column 3a + β of the compressed
  // matrix lists the neighbours b of active node a in increasing order, three rows each.
  SparseMatrix hessian_pattern_;         // all values zero
  std::vector<int> neighbor_rank_;       // [a · 125 + slot] → position of b in a's list, −1
  std::vector<int> neighbor_count_;      // neighbours of a (itself included)
  std::vector<int> column_value_begin_;  // value index where column 3a starts
};

}  // namespace contactlab::dynamics
