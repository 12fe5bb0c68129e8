#pragma once
// sap: strong (monolithic) coupling of implicit MPM and rigid bodies through one convex
// contact problem per step, solved with SAP — Zong, Jiang, Han 2024 ([zong2024convex], Alg. 2;
// spec-sap-qn §1.1). One step tⁿ → tⁿ⁺¹:
//   1. P2G of mass and APIC momentum (eq. 9);
//   2. MPM free motion: v*_MPM minimizes the implicit energy (eqs. 15–16), A_MPM its Hessian;
//   3. rigid free motion v*_rigid and A_rigid (§1.3.5);
//   4. one contact per particle inside a rigid geometry, at xⁿ with poses qⁿ (§3), and the
//      rigid–rigid contacts (dynamics/rigid_contact_step.h) as constraints on v_rigid;
//   5. the convex problem min ½‖v − v*‖²_A + Σ ℓ_c(J v + b) (eq. 7) over [v_rigid; v_MPM],
//      reduced to the grid nodes under contact particles by a Schur complement (§1.3.6) or
//      solved in full sparse form, with SAP's Newton method (§1.3.3);
//   6. rigid bodies advance with the contact impulses Jᵀγ; G2P with the solved grid
//      velocities (eq. 17); the lagged plastic projection (Alg. 1) and the new R0.
#include <memory>
#include <string>
#include <vector>

#include "formulations/contact/contact_model.h"
#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/dynamics/rigid_contact_step.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/formulation.h"
#include "formulations/linear_algebra/sparse_cholesky.h"
#include "formulations/solvers/sap_solver.h"
#include "mpm/sparse_grid.h"

namespace contactlab::sap {

// sap.linear_solver and sap.delassus_estimate (SapOptions explains each), with the names
// their keys take.
enum class LinearSolver { kAuto, kSchur, kFull };
enum class DelassusEstimate { kAuto, kExact, kBlockDiagonal, kBoundedBlockDiagonal, kLumpedMass };
enum class WarmStart { kFreeMotion, kCurrentVelocity, kLowerCost };
const ChoiceTable<LinearSolver>& LinearSolverNames();
const ChoiceTable<DelassusEstimate>& DelassusEstimateNames();
const ChoiceTable<WarmStart>& WarmStartNames();

struct SapOptions {
  // Newton solver of the contact problem (relative tolerance ε_r = 1e-6 as in [zong2024convex]).
  solvers::SapSolverOptions solver;
  // Implicit MPM free motion (relative tolerance 1e-6 as in [zong2024convex]).
  dynamics::ImplicitMpmOptions free_motion;
  // "schur": dense SAP on [v_rigid; v_P] after the Schur complement (spec §1.3.6);
  // "full": sparse SAP on every grid unknown (CHOLMOD on H each iteration);
  // "auto": per step, the Schur path where its dense factorization (n³/3 flops for n
  // reduced unknowns) costs no more than the free motion's sparse factorization of the MPM
  // Hessian (nonlinear materials, whose free motion takes Newton steps); where the free
  // motion needs no factorization (a quadratic energy), while n ≤ max_dense_unknowns.
  LinearSolver linear_solver = LinearSolver::kAuto;
  // Size above which "auto" takes the full sparse path when the step gives no factorization
  // to compare with [-]: dense Newton costs n³/3 flops per iteration, so beyond ~1,500
  // unknowns the sparse factorization of H is cheaper on the compact 3-D grids of the
  // solid scenes (close_lift_shake: 4,034 reduced unknowns, ~80 ms per sparse factorization).
  int max_dense_unknowns = 1500;
  // Contact mobility w (Delassus scale) that sets SAP's near-rigid and friction
  // regularization (spec §1.3.2): "exact" = J A⁻¹ Jᵀ on the reduced problem (Schur path
  // only), "block_diagonal" = node blocks of A_MPM (mass and stiffness), "lumped_mass" =
  // node masses only (the spec's cheap estimate, much too soft for stiff materials),
  // "bounded_block_diagonal" = block_diagonal raised to the lower bound 1/M that the exact
  // value never goes below (M the mass of the material piece under the contact);
  // "auto" = exact on the Schur path, bounded_block_diagonal on the full path (where "exact"
  // also falls back to it when linear_solver = auto picked the full path).
  DelassusEstimate delassus_estimate = DelassusEstimate::kAuto;
  // Where SAP's Newton starts: "free_motion" at v* (spec Z8's choice), "current_velocity" at
  // vⁿ (the rigid velocities and the P2G grid velocities at the start of the step, Drake's
  // guess), "lower_cost" at whichever of the two has the lower cost ℓ (two cost
  // evaluations). The problem and its minimizer are the same; only the iterations differ:
  // v* wins in free flight and light contact (the ball on slope), vⁿ in resting and
  // squeezing contact, where v* is far from the answer (README, sap speed).
  WarmStart warm_start = WarmStart::kLowerCost;
  // When a plastic material's return mapping acts (dynamics::PlasticityTiming): auto puts
  // Drucker–Prager sand inside the step and [zong2024convex]'s von Mises dough after it.
  dynamics::PlasticityTiming plasticity = dynamics::PlasticityTiming::kAuto;
  // Particles outside a rigid geometry but closer to it than the margin also become
  // contacts, with a negative penetration (a gap): such a constraint only acts if the
  // particle would cross the surface within the step. [zong2024convex] registers particles inside
  // geometry only (margin 0); then a particle pushed back to the surface leaves contact,
  // falls in again a few steps later and is pushed out with v̂ = x₀/Δt, so resting and
  // rolling bodies hop (measured on ball_on_slope: 0.7 contacts per step and a 10% error at
  // μ = 0.3, against 4.1 and 5% with a margin), and a surface that travels further than the
  // margin in one step passes particles by (close_lift_shake's closing panels at 0.05 h).
  // contact_margin < 0 is "auto": per step, max(0.05 h, Δt (v_p + v_r)) with v_p the
  // fastest particle plus g Δt and v_r the fastest rigid surface point under the step's
  // free motion, i.e. the farthest a particle and a surface can close in one step; 0.05 h
  // covers the ~g Δt² a resting particle sinks per step with a wide factor. A value ≥ 0 is
  // a fixed margin in units of h.
  double contact_margin = -1.0;
  // Chord steps in the Newton loop (solvers::SapSolverOptions::factorization_reuse_ratio):
  // the fraction of the previous residual an iteration must reach for the next direction to
  // reuse the last factorization of H. < 0 is "auto": 0.5 on the full path, where one sparse
  // factorization is nearly all of a Newton iteration and chord steps cut a step's time by
  // about a sixth (README, sap's factorizations), and 0 on the Schur path, where the dense
  // factorization is cheap and the extra chord iterations cost more than they save. A value
  // ≥ 0 applies on both paths. Replaces solver.factorization_reuse_ratio.
  double factorization_reuse_ratio = -1.0;
  contact::ContactModelParameters contact;

  static std::vector<ParameterSpec> Specs();
  static SapOptions FromParameters(const ParameterSet& parameters);
};

// What the last step did, beyond StepReport (for benchmarks and tests).
struct SapStepStatistics {
  int active_nodes = 0;  // grid nodes with mass
  int rigid_unknowns = 0;
  int participating_nodes = 0;  // nodes under contact particles
  int grid_boundary_nodes = 0;  // active nodes a grid wall constrains
  int problem_unknowns = 0;     // size of the SAP problem actually solved
  double contact_margin = 0.0;  // the margin used this step [m]
  bool used_schur = false;
  solvers::SolverSummary free_motion;  // the implicit MPM Newton (or the Schur-path solve)
  solvers::SapSolverResults solver;
  // Numeric factorizations in the step: sparse (CHOLMOD: free motion, A_NN of the Schur
  // complement, H on the full path) and dense (S, and H on the Schur path, one per Newton).
  int sparse_factorizations = 0;
  int dense_factorizations = 0;
  double factorization_seconds = 0.0;  // factorizations and solves: free motion, Schur, Newton
  double line_search_seconds = 0.0;    // inside the SAP solve
};

class SapFormulation final : public Formulation {
 public:
  explicit SapFormulation(SapOptions options);
  std::string_view name() const override { return "sap"; }
  std::vector<UsedParameter> UsedParameters() const override;
  // The trackers of the "auto" keys: each step starts from the world alone (the SAP solve
  // warm-starts from the current velocities, the factorizations from the step's patterns).
  void VisitState(StateArchive& archive, const World& world) override;
  const SapStepStatistics& last_step() const { return statistics_; }
  const linear_algebra::SparseCholesky& free_motion_factorization() const { return free_motion_cholesky_; }

 protected:
  StepReport AdvanceState(World& world, double dt) override;

 private:
  // The stages of Step, in the order they run (each times itself into the report).
  struct StepWork;
  void SetUpFreeMotion(World& world, StepWork& work, Timings& timings);
  void DetectContacts(const World& world, StepWork& work, Timings& timings);
  void CoupleContacts(const World& world, StepWork& work, Timings& timings);
  void SolveMpmFreeMotion(const World& world, StepWork& work, Timings& timings);
  void AssembleProblem(StepWork& work, Timings& timings);
  void SolveContactProblem(const World& world, StepWork& work, StepReport& report);
  void AdvanceRigidBodies(World& world, StepWork& work, StepReport& report);
  void TransferToParticles(World& world, StepWork& work, StepReport& report);
  // The Newton solver's options for the path chosen this step, with the chord-step ratio
  // resolved (SapOptions::factorization_reuse_ratio).
  solvers::SapSolverOptions SolverOptions(LinearSolver path);
  // The gap-contact margin of a step [m] (SapOptions::contact_margin).
  double ContactMargin(const World& world, double dt);
  Eigen::VectorXd InitialVelocity(const solvers::SapProblem& problem, const solvers::SapLinearSystem& system,
                                  const Eigen::VectorXd& current_velocity) const;

  SapOptions options_;
  std::unique_ptr<contact::ContactModel> contact_model_;
  mpm::SparseGrid grid_;
  dynamics::ImplicitMpm implicit_mpm_;
  dynamics::RigidDofs rigid_dofs_;
  dynamics::RigidContacts rigid_contacts_;
  // Separate factorizations keep their symbolic analyses: A_MPM (free motion), A_NN (Schur),
  // H (full path).
  linear_algebra::SparseCholesky free_motion_cholesky_;
  linear_algebra::SparseCholesky schur_cholesky_;
  linear_algebra::SparseCholesky contact_cholesky_;
  SapStepStatistics statistics_;
  UsedParameterTracker used_margin_{"sap.contact_margin",
                                    "max(0.05, dt (v_particle + g dt + v_rigid surface, free motion) / h), per step"};
  UsedChoiceTracker used_linear_solver_{
      "sap.linear_solver", ChoiceNames(LinearSolverNames()), "steps",
      "auto: schur where its n^3/3 dense flops (n = rigid + 3 x participating nodes) are at most the free motion's "
      "sparse factorization's, or, without one, while n <= sap.max_dense_unknowns; else full; per step with "
      "particle contacts"};
  UsedParameterTracker used_reuse_ratio_{"sap.factorization_reuse_ratio",
                                         "auto: 0.5 on the full path, 0 on the schur path; per step with particle "
                                         "contacts"};
  UsedChoiceTracker used_plasticity_ = dynamics::PlasticityTimingTracker("sap.plasticity");
  UsedChoiceTracker used_free_motion_tangent_ = dynamics::FreeMotionTangentTracker("sap.free_motion_tangent");
  UsedChoiceTracker used_delassus_{"sap.delassus_estimate", ChoiceNames(DelassusEstimateNames()), "steps",
                                   "auto: exact on the schur path, bounded_block_diagonal on the full path (which "
                                   "has no dense reduced matrix, so exact falls back to it too); per step with "
                                   "particle contacts"};
};

FormulationInfo SapInfo();

}  // namespace contactlab::sap
