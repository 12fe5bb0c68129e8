#pragma once
// The backward Euler equations of one penalty-coupled step ([ding_schroeder_penalty] §3, spec-penalty-hybrid
// §2.7–2.9) as a NonlinearSystem for the stabilized Newton solver.
//
// Unknowns x = [v; u]: the end-of-step velocities v of the active grid nodes (three each, in
// the ImplicitMpm numbering) and the rigid generalized velocities u (dynamics::RigidDofs: six per
// free body, [v_com; ω], then the multibody tree). The residual, mass-weighted so that grid
// nodes and rigid bodies count alike (spec A2 resolution, see below), is
//   g̃ = D^(-1/2) g,   g_grid  = ∇E_mpm(v) − Δt f_contact,grid          (spec §1.5, §2.8)
//                      g_rigid = A (u − u*) − Δt Σ Sᵀ [F; τ]_contact      (spec §2.7, A10)
// with E_mpm the implicit MPM energy of dynamics/implicit_mpm.h (inertia, gravity, elasticity with
// the MLS F update that G2P applies), A and u* the rigid dynamics and free motion of
// dynamics/rigid_dofs.h, and D = diag(m_i I, diag A). Weighting by D^(-1/2) makes ‖g̃‖² an energy
// (gᵀ D⁻¹ g [J]), so light grid nodes are not drowned by heavy bodies in E = ½‖g̃‖².
//
// Contact forces come from the pairs of an AttachmentTable: f = k (P(X, Z) − Z) on the
// particle Z (an MPM particle, or a surface sample of a rigid body), −f on the touched body at
// Y. Body poses at the end of the step follow the unknowns: c = cⁿ + Δt v, R = exp(Δt[ω]×) Rⁿ
// for the body's spatial velocity (v, ω) = S u + bias (spec A10); static bodies stay put and
// kinematic ones take their prescribed pose at tⁿ + Δt.
#include <array>
#include <vector>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/penalty/attachment_table.h"
#include "formulations/penalty/contact_shape.h"
#include "formulations/penalty/stabilized_newton.h"
#include "formulations/penalty/triangle_mesh.h"
#include "formulations/world.h"

namespace contactlab::penalty {

using mpm::Matrix3;
using mpm::Vector3;

struct PenaltyContactOptions {
  // Spring stiffness k of pairs whose particle is an MPM particle [N/m]; 0 derives it per
  // pair (DerivedPairStiffness below).
  double particle_stiffness = 0.0;
  // Spring stiffness k of pairs whose particle is a rigid-body surface sample [N/m]; 0
  // derives it per pair.
  double rigid_stiffness = 0.0;
  // Relax against boxes as triangle meshes (the 4-state machine, spec §2.5) instead of as
  // level sets (§2.4), whose closest-point map jumps at the box's edges and medial planes.
  bool box_as_mesh = false;
  // Radius [m] by which the relaxation rounds the edges of boxes and cylinders (ContactShape);
  // negative derives it, DerivedEdgeRadius. Boxes relaxed as meshes stay sharp.
  double edge_radius = -1.0;
};

// The derived edge radius: a quarter of the grid spacing h [m], below what the grid resolves
// and some twenty times the depth of a resting contact under the derived stiffness.
inline double DerivedEdgeRadius(double grid_spacing) {
  return 0.25 * grid_spacing;
}

// The derived stiffness of a pair ([ding_schroeder_penalty] sets an absolute k per experiment
// and leaves its scale to the user): the stiffer of
//   m (2π/Δt)²   a spring of period Δt on the particle's mass m (an MPM particle's, or a rigid
//                sample's share M/N of its body): Δt²k = 4π² m, the contact next to the mass in
//                Newton's Hessian at one fixed ratio whatever the scene's scale;
//   M_w s        the material's own stiffness over the particle's size s: M_w = ρc², c the
//                material's wave speed, s = V^(1/3) for an MPM particle; for a rigid sample
//                the stiffest material of the scene over the sample spacing. A contact in
//                series with a material (two blocks wedged between walls, a cube pinched
//                between panels) then yields no more than the material over one particle
//                spacing does, and does not set the force the material should set.
// A pair keeps the k it was created with until it is removed: a spring whose k changed while
// compressed would gain ½ Δk δ² with no work done. `mass` [kg], `dt` [s], `modulus` [Pa],
// `size` [m].
double DerivedPairStiffness(double mass, double dt, double modulus, double size);

// The end-of-step pose of one body as a function of the rigid unknowns.
struct BodyMotionAtIterate {
  Vector3 position = Vector3::Zero();           // c [m]
  Matrix3 rotation = Matrix3::Identity();       // R
  Vector3 rotation_vector = Vector3::Zero();    // θ = Δt ω (left increment from Rⁿ)
  Matrix3 left_jacobian = Matrix3::Identity();  // J_l(θ) of the exponential map (spec §2.8)
};

// One pair's force from the latest evaluation.
struct PairForce {
  bool active = false;
  bool sliding = false;
  Vector3 particle_position = Vector3::Zero();  // Z, world
  Vector3 relaxed_point = Vector3::Zero();      // Y, world
  Vector3 normal = Vector3::UnitZ();            // object normal used by the relaxation, world
  Vector3 force = Vector3::Zero();              // f on the particle, world [N]
  Vector3 relaxed_local = Vector3::Zero();      // Y in the geometry frame (committed at step end)
  MeshPoint relaxed_mesh_point;                 // Y on the mesh (box_as_mesh)
  int mesh_states = 0;                          // FSM steps of the last mesh relaxation
};

class PenaltyStepSystem final : public NonlinearSystem {
 public:
  // Everything the step needs, prepared by the formulation: `implicit_mpm` after Setup on the
  // step's grid, `rigid_dofs` after Setup, the rigid surface samples (body, body-frame
  // position) and the attachment table carried over from the previous step.
  PenaltyStepSystem(const World& world, double dt, const mpm::SparseGrid& grid,
                    const dynamics::ImplicitMpm& implicit_mpm, const dynamics::RigidDofs& rigid_dofs,
                    const std::vector<RigidSample>& samples, const PenaltyContactOptions& options,
                    AttachmentTable& attachments);

  int size() const override { return grid_size_ + rigid_size_; }
  bool BeginIteration(const Eigen::VectorXd& x) override;
  void Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) override;
  std::vector<int> PreconditionerBlocks() const override;
  // D^(1/2): D^(1/2) H̃ = ∂g/∂x, symmetric but for the relaxation's terms.
  Eigen::VectorXd SymmetrizingRowWeights() const override { return inverse_sqrt_weights_.cwiseInverse(); }

  // The starting iterate: the velocities at the start of the step, grid vⁿ (its walls'
  // components at zero) and rigid uⁿ. A resting contact starts at its solution; starting the
  // rigid unknowns at their free motion u* = uⁿ + Δt M⁻¹ f would push every resting contact
  // Δt² g deeper first, across the kinks of its force.
  Eigen::VectorXd InitialGuess() const;
  // The scale of ‖g̃‖ for relative tolerances [√J]: √(Σ m) times the larger of Δt|g| and the
  // root-mean-square start-of-step speed, so that a relative tolerance τ reads as "velocity
  // error below τ times the per-step gravity velocity change".
  double ResidualScale() const;
  // Σ_k D_kk of the residual's weights D^(-1/2) (3 Σ m over the grid, the rigid dynamics
  // matrix's diagonal): √ of it times ‖g̃‖ bounds the sum of any set of g's rows.
  double WeightSum() const { return inverse_sqrt_weights_.array().square().inverse().sum(); }

  // Pair forces of the latest Evaluate (same order as the attachment table).
  const std::vector<PairForce>& pair_forces() const { return pair_forces_; }
  // Δt times the contact forces on the grid unknowns at the latest Evaluate, the components a
  // grid wall fixes included (the residual leaves those out: the wall takes them).
  const Eigen::VectorXd& grid_contact_impulses() const { return grid_contact_impulses_; }
  // Z of every MPM particle at an iterate (x_pⁿ + Δt Σ w_ip v_i).
  Vector3 MpmParticlePosition(int particle, const Eigen::VectorXd& x) const;
  BodyMotionAtIterate BodyMotion(int body, const Eigen::VectorXd& x) const;
  int pairs_created() const { return pairs_created_; }
  // The geometry `geometry` of body `body` as the relaxation sees it (ContactShape).
  ContactShape TouchedShape(int body, int geometry) const;
  // k of a new pair, kept for its lifetime: the given stiffness of its kind, or DerivedPairStiffness.
  double InitialStiffness(ParticleKind kind, int particle) const;

 private:
  // The 27 stencil nodes (active index, −1 if inactive) and weights of one MPM particle.
  struct ParticleStencil {
    std::array<int, 27> nodes;
    std::array<double, 27> weights;
  };
  // The spatial velocity map of a body: [v; ω] = S u_segment + bias.
  struct BodySpatialMap {
    int first_column = -1;                         // first rigid unknown, −1 without unknowns
    Eigen::Matrix<double, 6, Eigen::Dynamic> map;  // 6 × width
    Eigen::Matrix<double, 6, 1> bias = Eigen::Matrix<double, 6, 1>::Zero();
  };
  // A dense contribution of one pair: generalized force rows and Jacobian columns.
  struct PairContribution {
    std::vector<int> rows;  // global unknown indices
    std::vector<int> columns;
    Eigen::VectorXd force;      // generalized contact force on `rows` [N, N m]
    Eigen::MatrixXd stiffness;  // ∂force/∂x on rows × columns; empty when `stencil_only`
    // An MPM particle against a geometry without unknowns (a table, a floor, a kinematic
    // body): rows and columns are the stencil's nodes alone and ∂force/∂x is, node block by
    // node block, Δt w_s w_t K with K = ∂f/∂Z. Only K and the weights are kept: the dense
    // 81 × 81 block of every such pair cost more to allocate and scatter than to use.
    bool stencil_only = false;
    Matrix3 force_jacobian = Matrix3::Zero();  // K
    std::array<double, 27> node_weights{};     // w of the nodes in `rows` (3 rows each)
  };
  // Adds −Δt ∂force/∂x of the stencil-only pairs to the grid block (its pattern holds every
  // node pair of a stencil; entries it lacks go to `triplets`). Threads own column ranges and
  // visit the pairs in table order, so every entry sums its terms in the same order whatever
  // the number of threads.
  void AddStencilOnlyStiffness(const std::vector<PairContribution>& contributions, SparseMatrix& grid_block,
                               std::vector<Eigen::Triplet<double>>& triplets) const;

  void EvaluatePair(int pair_index, const Eigen::VectorXd& x, const std::vector<BodyMotionAtIterate>& motions,
                    bool with_jacobian, PairContribution& contribution);
  // Registers pairs for particles that penetrate a geometry at iterate x (spec §2.6, A5).
  int DetectNewPairs(const Eigen::VectorXd& x);

  const World& world_;
  double dt_;
  const dynamics::ImplicitMpm& implicit_mpm_;
  const dynamics::RigidDofs& rigid_dofs_;
  const std::vector<RigidSample>& samples_;
  PenaltyContactOptions options_;
  AttachmentTable& attachments_;

  int grid_size_ = 0;
  int rigid_size_ = 0;
  std::vector<ParticleStencil> stencils_;
  std::vector<BodySpatialMap> spatial_maps_;
  std::vector<rigid::Pose> start_poses_;          // pose at tⁿ
  std::vector<rigid::Pose> kinematic_end_poses_;  // kinematic bodies at tⁿ + Δt
  Eigen::VectorXd inverse_sqrt_weights_;          // D^(-1/2)
  SparseMatrix mpm_hessian_;                      // cached when E_mpm is quadratic
  bool mpm_hessian_cached_ = false;
  // Scratch of Evaluate's Jacobian assembly, kept between calls so that the grid-sized
  // matrices reuse their storage instead of being allocated (and page-faulted) anew on every
  // Newton iteration and line-search trial.
  SparseMatrix grid_block_;
  SparseMatrix rigid_part_;
  std::vector<PairForce> pair_forces_;
  Eigen::VectorXd grid_contact_impulses_;
  std::vector<std::vector<TriangleMesh>> box_meshes_;  // [body][geometry]; empty unless a box relaxed as a mesh
  int pairs_created_ = 0;
  std::vector<double> material_moduli_;  // ρc² per material [Pa]
  double stiffest_modulus_ = 0.0;        // their largest [Pa]
};

}  // namespace contactlab::penalty
