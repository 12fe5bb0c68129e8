#pragma once
// quasi_newton: asynchronous weak coupling of explicit MPM and rigid bodies with a parallel
// block-diagonal quasi-Newton contact solve (Yu, Du et al. [yu2025async].; spec-sap-qn §1.2).
//
// One step of Δt (Algorithm B, spec §1.2.4):
//   1. Rigid poses qⁿ and velocities vⁿ are frozen for the whole step; the rigid free motion
//      of eq. 3 is prepared (RigidDofs, shared with `sap`).
//   2. N substeps of δt = Δt/N, each (eq. 4–8):
//        explicit MLS-MPM free motion (P2G with the stress impulse, gravity) → v*;
//        contact registration of particles inside rigid geometry at the frozen poses;
//        problem (8) with the lagged model, solved by the quasi-Newton solver → v, γ;
//        the contact impulses accumulated per rigid body; G2P, plasticity.
//   3. The rigid step of eq. 3 with the summed impulse: v⁺ = v* + A⁻¹ Σ_k J_rᵀ γ_d^k
//      (Algorithm B.3: free bodies, the multibody tree with its implicit PD, kinematic
//      bodies that only log the reaction).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "formulations/contact/contact_model.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/explicit_stability.h"
#include "formulations/dynamics/rigid_contact_step.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/formulation.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"
#include "mpm/sparse_grid.h"

namespace contactlab::quasi_newton {

class CudaSolverHandle;        // the device solver when built with CUDA (opaque here)
class ExplicitSubstepBackend;  // cuda/explicit_substep_backend.h

// How each contact's stiffness is chosen (QuasiNewtonFormulationOptions::stiffness_rule).
enum class StiffnessRule { kAuto, kEffectiveMass, kLoad, kNearRigid, kNearRigidParticleMass, kRigidStep, kFixed };
// What the grid keeps after a contact solve, and where the solve runs
// (QuasiNewtonFormulationOptions::grid_update, ::backend).
enum class GridUpdate { kImpulse, kSolverVelocity };
enum class Backend { kCpu, kCuda, kEmulated };
enum class WarmStart { kAuto, kNone, kPreviousImpulses };
enum class KinematicPoses { kStep, kSubstep };
enum class StoppingFrame { kAuto, kTouchedSurfaces, kWorld };
enum class FrictionBound { kCarried, kPenetration };
enum class StoppingScale { kContactNodes, kAllNodes };
// The names the keys quasi_newton.stiffness_rule, .grid_update and .backend take.
const ChoiceTable<StiffnessRule>& StiffnessRuleNames();
const ChoiceTable<GridUpdate>& GridUpdateNames();
const ChoiceTable<Backend>& BackendNames();
const ChoiceTable<WarmStart>& WarmStartNames();
const ChoiceTable<KinematicPoses>& KinematicPosesNames();
const ChoiceTable<StoppingFrame>& StoppingFrameNames();
const ChoiceTable<FrictionBound>& FrictionBoundNames();
const ChoiceTable<StoppingScale>& StoppingScaleNames();

struct QuasiNewtonFormulationOptions {
  // N, MPM substeps per rigid step [-]; 0 is "auto": at the start of every step the
  // smallest N whose δt = Δt/N meets the explicit limit δt ≤ cfl · h / (c + v_max)
  // (dynamics/explicit_stability.h), the rule `hybrid_impulse` substeps by. [yu2025async] uses
  // N = 10 at Δt = 10 ms for its dough (c ≈ 5 m/s at h = 1/64 m) and N = 1 at 0.1 ms for the
  // squeezed cube; a fixed N beyond the limit diverges (spec Y3: k_d is explicit).
  int substeps = 0;
  // Courant number of the automatic substep [-]: 0.3, as `hybrid_impulse.cfl`, so both
  // explicit formulations run at the same stability margin.
  double cfl = 0.3;
  // A step that needs more substeps than this is recorded as diverged (speeds blew up).
  int max_substeps = 100000;
  // ε_r, ε_a, iteration cap and line search of Algorithm 1.
  QuasiNewtonOptions solver;
  // The frame whose velocities the momentum term ‖M^½ v‖ of the stopping rule measures (spec
  // Y1: [yu2025async] does not define the rule's scaling). Problem (8) is Galilean invariant
  // (Σ_i w_ip = 1): solved in a frame moving at u (ShiftToMovingFrame) it has the same
  // minimizer, and only the stopping rule sees the frame.
  //   "world"             v as it is (the rule read literally): the same grip carried on a
  //                       moving hand is solved more loosely the faster the hand moves;
  //   "touched_surfaces"  u = the particle-mass-weighted mean velocity of the rigid surfaces
  //                       at the substep's contact particles (0 against static geometry);
  //   "auto"              per substep, whichever of the two sees less momentum in v* (all
  //                       active grid nodes), so the rule is never looser than "world".
  // Why: in close_lift_shake at [yu2025async]'s settings (Δt 0.1 ms, N 10, ε_r 1e-2) the shake (up
  // to 0.38 m/s) made ‖M^½ v‖ the rule's scale, and the rigid cube crept out of the grip (README,
  // quasi_newton). "touched_surfaces" alone loosens the rule where a moving body touches
  // material at rest: floating_box's heave grew from 0.5 to 1.7 mm. The material's own centre
  // of mass is no reference either: against a static table it removes the block's motion
  // relative to the table, and a resting block's solve took 30 times longer.
  StoppingFrame stopping_frame = StoppingFrame::kAuto;
  // Which grid nodes the momentum term ‖M^½ v‖ of the stopping rule sums over ([yu2025async]
  // does not define the rule's scaling):
  //   "contact_nodes"  the problem's unknowns, the stencil nodes of the contact particles;
  //   "all_nodes"      every active grid node; those outside the stencils stay at v* and only
  //                    add to the scale.
  // Why "contact_nodes": with "all_nodes" the tolerance grows with the material that does not
  // touch anything, so a large body resting or rolling on a few contact particles is solved to
  // ε_r of its whole momentum, and the contact impulses are left far from the minimizer. The
  // demo ball of ball_on_slope (μ 0.3, which rolls) then turns at ω r/v ≈ 0.5 instead of 1
  // (docs/findings/2026-11-28-quasi-newton-friction.md). The rule only tightens: the scale of
  // "contact_nodes" is never larger.
  StoppingScale stopping_scale = StoppingScale::kContactNodes;
  // Distance, as a fraction of h, within which particles outside a rigid surface become gap
  // contacts [-]. 0 registers only particles inside geometry, as [yu2025async] does at the start
  // of every substep (§V-B: "a contact point for each particle that is inside a rigid
  // geometry", poses frozen at tⁿ). A particle pushed out to the surface then leaves the
  // problem and re-enters a few substeps later with v̂ = x₀/δt, so resting contact flickers.
  // < 0 is "auto": max(0.05 h, δt (v_p + g Δt)), v_p the fastest particle at tⁿ: the
  // farthest a particle closes on a (frozen) surface in one substep. A gap contact only acts
  // if the particle would cross the surface within the substep (its lagged friction bound
  // is zero until it penetrates).
  double contact_margin = -1.0;
  // How each contact's stiffness k of the lagged model is chosen ([yu2025async] gives none):
  //   "effective_mass"            k_p = 1/(w_p δt²), w_p = Σ_i w_ip²/m_i the contact's
  //                               Delassus scale on the grid: the contact's Hessian δt² k
  //                               equals the grid mass it moves, 1/w_p, so a substep's normal
  //                               impulse is (x₀/δt − v_n)/w_p, the push-out of the
  //                               penetration at the velocity level (a spring of period 2π δt,
  //                               integrated implicitly, which the block-diagonal iteration
  //                               resolves in a few iterations);
  //   "load"                      k_p = max(m_p g, m_p v², f_prev)/(penetration_fraction h),
  //                               v the particle's approach speed, f_prev the normal force it
  //                               carried in the previous substep;
  //   "near_rigid"                k_p = (2π/(β δt))² / w_p: the stiffest contact one substep
  //                               resolves (period β δt);
  //   "near_rigid_particle_mass"  k_p = (2π/(β δt))² m_p;
  //   "rigid_step"                against a body the weak coupling moves, the stiffest k its
  //                               explicit rigid step resolves: Δt² λ_max(M⁻¹ K) ≤ κ
  //                               (rigid_step_stiffness_ratio), K the contact springs, M the
  //                               body's inertia (RigidStepStiffnessCaps below); no cap
  //                               where a heavy body is pressed by light material, which cannot
  //                               push it harder than its own inertia allows over a step;
  //                               against static and prescribed geometry "effective_mass";
  //   "fixed"                     contact.stiffness for every contact;
  //   "auto"                      "effective_mass", capped by "rigid_step" against bodies the
  //                               weak coupling moves; per contact.
  // Why not "load": f_prev makes k follow the force the contact carried, so the force of the
  // next substep is f_prev x₀/(penetration_fraction h): the contact integrates its
  // penetration error instead of springing back from it, and nothing damps that loop. A single
  // particle resting on a table below the friction angle rings and creeps downhill at 1.2 cm/s
  // (test QuasiNewtonCoulombTest), and incline_block's MPM block rings between 0.2 and 1.8
  // times its weight for the whole run and never stops at μ 0.125.
  // Why "rigid_step": the rigid step (eq. 3) feels the summed impulse with the body's pose
  // frozen over Δt, i.e. the contact springs explicitly; symplectic Euler is stable while
  // Δt² λ_max(M⁻¹ K) < 4 (M the body's inertia), and "rigid_step" holds it at κ. The
  // stiffest rule alone makes the 0.1 kg panels squeezing the 0.4 kg cube of squeezed_cube
  // chatter (panel force std 1.3 N of 10 N at Δt = 0.1 ms, N = 1, and at Δt = 4 ms).
  StiffnessRule stiffness_rule = StiffnessRule::kAuto;
  // The normal impulse n₀ that bounds the lagged model's friction, μ n₀ (the lagged model of
  // [castro2023irrotational] freezes n₀ so that problem (8) stays convex and separable;
  // [yu2025async] does not say how n₀ is found).
  //   "penetration"  n₀ = δt k x₀ (1 − d v_n0)₊ from the penetration at the substep's start,
  //                  the model read literally. It is the impulse the contact carries only where
  //                  the contact rests x₀ = f/k deep; a particle pushed by the material behind
  //                  it carries its load through the velocity term δt² k v_n instead (the demo
  //                  ball's contact particles carried up to 10⁵ times μ n₀ under the former
  //                  "load" stiffness).
  //   "carried"      n₀ = the normal impulse γ_n the contact carries in this substep: a fixed
  //                  point of convex solves, each lagged (n₀ frozen), n₀ ← γ_n between them,
  //                  started from the particle's previous-substep impulse and stopped when
  //                  Σ μ |n₀ − γ_n| ≤ friction_bound_tolerance · Σ μ γ_n (the lagged friction
  //                  updates of incremental potential contact [li2020ipc], per substep).
  //                  Coulomb's bound then holds for the impulses the solve returns, whatever
  //                  the stiffness.
  FrictionBound friction_bound = FrictionBound::kCarried;
  double friction_bound_tolerance = 1.0e-2;  // [-]
  int max_friction_bound_passes = 20;        // convex solves per substep at most
  double penetration_fraction = 0.01;        // [-], the target depth of "load" as a fraction of h
  double rigid_step_stiffness_ratio = 1.0;   // [-], κ of "rigid_step": Δt² λ_max(M⁻¹ K) per body
  // What the grid keeps after the solve. "solver_velocity": the solver's v ([yu2025async]'s
  // Algorithm 1 returns v and γ; γ goes to the rigid bodies). Unless the solve converged
  // exactly, M (v − v*) differs from Jᵀγ by the residual, so MPM + rigid momentum drifts by up
  // to ε_r of the momentum scale per substep. "impulse": v = v* + M⁻¹ Jᵀ γ(v), so both sides
  // receive exactly opposite impulses whatever the residual (the same v at convergence).
  // The default is "impulse": with the paper's ε_r = 5e-2 the solver velocity leaves the
  // grid a momentum change that differs from the impulses the panels of squeezed_cube
  // receive, which then sum to 1.045 m g at steady state (measured at h = 2 cm, Δt = 1 ms)
  // while the cube hangs still; with "impulse" they sum to m g to round-off.
  GridUpdate grid_update = GridUpdate::kImpulse;
  // "cpu": OpenMP on the host. "cuda": the MPM substeps (P2G, grid update, G2P, the
  // constitutive update) and the contact solve on the GPU, the particles kept on the device
  // through each step; contact registration and the problem's assembly on the host (needs a
  // CUDA build and a GPU). "emulated": the device algorithms replayed serially on the host
  // (tests of the cuda path without a GPU; slow).
  Backend backend = Backend::kCpu;
  // Where each substep's iteration starts. "none": v*, Algorithm 1 as [yu2025async] gives it.
  // "previous_impulses" (beyond the paper): v⁰ = v* + M⁻¹ Σ_p w_ip γ_p,prev, the impulses the
  // same particles received against the same bodies in the previous substep, so a resting
  // contact starts near its answer. The minimizer is the same; only the iteration count
  // changes (measured in the README's quasi_newton section). CPU backend only.
  // "auto": previous_impulses on the cpu backend, none on the device ones. With the
  // effective-mass stiffness the block-diagonal iteration needs 1.7 times as many iterations
  // from v* as from the previous impulses on dough_rolling, 2.4 times on pyramid (matrix
  // settings), which the warm start takes back.
  WarmStart warm_start = WarmStart::kAuto;
  // Where kinematic (prescribed) bodies stand during the substeps. "step": frozen at tⁿ with
  // every other body, as [yu2025async] registers contacts against the poses qⁿ, so a moving pin
  // jumps by a whole Δt before the first substep of each step. "substep" (beyond the paper):
  // kinematic bodies and the prescribed joints of the multibody tree (the dough's pin
  // carriers) moved along their trajectories to the start of each substep, as hybrid_impulse
  // moves them; the tree's degrees of freedom stay at tⁿ, as the weak coupling solves them in
  // the rigid step.
  KinematicPoses kinematic_poses = KinematicPoses::kStep;
  // Contact model constants shared with `sap` ([yu2025async] uses the lagged model).
  contact::ContactModelParameters contact;

  static std::vector<ParameterSpec> Specs();
  // Validates every key once; throws InputError naming the key.
  static QuasiNewtonFormulationOptions FromParameters(const ParameterSet& parameters);
};

// What one step did, beyond the StepReport (for tests, benchmarks and figures).
struct QuasiNewtonStepStatistics {
  std::vector<int> contacts_per_substep;
  std::vector<int> iterations_per_substep;
  int line_search_evaluations = 0;
  int unconverged_substeps = 0;
  // The convex solves of each substep (more than one under friction_bound = carried).
  std::vector<int> friction_bound_passes_per_substep;
  double max_residual = 0.0;  // largest final residual / threshold of a substep
  // Σ_k γ_d^k pushed onto the rigid bodies, as world linear impulse [N s] per world body.
  std::vector<mpm::Vector3> body_linear_impulse;
  // The convex rigid step (eq. 3 with rigid–rigid contacts): its SAP solve, empty
  // (iterations 0) when no rigid bodies touch.
  solvers::SapSolverResults rigid_step;
};

// The cap of stiffness_rule "rigid_step" for each contact (∞ on bodies without rigid
// unknowns). The n contacts on one set of rigid unknowns (a free body, or the whole multibody
// tree) with a common stiffness k act on its rigid step, which freezes the pose over Δt, as
// the explicit spring K = k G, G = Σ_p J_pᵀ n_p n_pᵀ J_p; symplectic Euler is stable while
// Δt² λ_max(M⁻¹ K) < 4, M the inertia. Over one step each contact spring pushes, in series,
// the MPM material behind it, of inertia m = M_mat/n (M_mat: the mass of the materials
// touching these unknowns, all of which can follow within a step), so the step feels at most
// k_eff = min(k, m/Δt²). With λ = λ_max(M⁻¹ G), Δt² λ k_eff ≤ κ holds
//   for any k where λ m ≤ κ, and for k ≤ κ / (Δt² λ) otherwise
// (λ m ≈ M_mat/m_body for a free body pressed along one direction: a light body squeezing
// heavy material is capped, a heavy body held by light material is not). Contacts set softer
// than the cap only lower λ_max (G is a sum of positive semi-definite terms).
// `material_mass` holds the total particle mass of each material; `ratio` is κ, `dt` the rigid
// step Δt. Public for tests.
std::vector<double> RigidStepStiffnessCaps(const World& world, const dynamics::RigidDofs& rigid_dofs,
                                           const std::vector<contact::ParticleContact>& contacts,
                                           const std::vector<double>& material_mass, double ratio, double dt);

class QuasiNewtonFormulation final : public Formulation {
 public:
  explicit QuasiNewtonFormulation(QuasiNewtonFormulationOptions options);
  ~QuasiNewtonFormulation() override;
  std::string_view name() const override { return "quasi_newton"; }
  std::vector<UsedParameter> UsedParameters() const override;
  // The lagged normal forces and contact forces of the last substep (the stiffness rule's load
  // and the warm start) and the trackers of the "auto" keys.
  void VisitState(StateArchive& archive, const World& world) override;

  const QuasiNewtonStepStatistics& last_step() const { return statistics_; }
  const QuasiNewtonFormulationOptions& options() const { return options_; }

 protected:
  StepReport AdvanceState(World& world, double dt) override;

 private:
  // N for a step of dt: quasi_newton.substeps, or the explicit limit at the step's start.
  int ChooseSubsteps(const World& world, double dt, const dynamics::ExplicitSpeeds& speeds);
  // The gap-contact margin of the step's substeps [m] (contact_margin).
  double ContactMargin(const World& world, double dt, double substep, const dynamics::ExplicitSpeeds& speeds);
  // Solves one substep's contact problem on the chosen backend.
  QuasiNewtonResults Solve(const SubstepContactProblem& problem);
  // Solves it with the friction bound of options_.friction_bound: one solve ("penetration"),
  // or the fixed point of "carried", which rebases each contact's n₀ on the impulse it
  // carries and solves again. Each solve is booked into `report` with index `solve_index`,
  // which then moves past it; returns the last one, its summary counting every solve's iterations.
  QuasiNewtonResults SolveWithFrictionBound(SubstepContactProblem& problem,
                                            const std::vector<contact::ParticleContact>& contacts, double substep,
                                            StepReport& report, int& solve_index);
  // backend = cuda or emulated: creates the device substep for the world's grid spacing and
  // uploads the particles for the step, with a grid box wide enough for the step's motion.
  void UploadToDevice(const World& world, double dt, const dynamics::ExplicitSpeeds& speeds);

  QuasiNewtonFormulationOptions options_;
  std::unique_ptr<contact::ContactModel> contact_model_;
  // The rigid step's model: SAP's regularized cone with the run's contact.* constants, as
  // Drake's SAP solves [yu2025async]'s rigid step (dynamics::RigidStepContactParameters).
  std::unique_ptr<contact::ContactModel> rigid_contact_model_;
  // Normal force [N] each particle's contact carried in the previous substep, and which
  // particles had one (stiffness_rule = load).
  std::vector<double> previous_normal_force_;
  std::vector<int> previous_contact_particles_;
  // warm_start = previous_impulses: the world force R_WC γ_p/δt each (particle, body) contact
  // carried in the previous substep, keyed by WarmStartKey.
  std::unordered_map<std::uint64_t, Vector3> previous_contact_force_;
  std::unique_ptr<CudaSolverHandle> cuda_solver_;
  // backend = cuda or emulated: the explicit MPM half of the substeps (created at the first
  // step, for the world's grid spacing).
  std::unique_ptr<ExplicitSubstepBackend> device_substep_;
  double device_spacing_ = 0.0;
  mpm::SparseGrid grid_;
  dynamics::RigidDofs rigid_dofs_;
  dynamics::RigidContacts rigid_contacts_;
  QuasiNewtonStepStatistics statistics_;
  UsedParameterTracker used_substeps_{"quasi_newton.substeps",
                                      "smallest N with (Δt/N)(c + v_max)/h <= quasi_newton.cfl, per step"};
  // Courant number (δt (c + v_max) / h) the substeps actually ran at, whether N was given or derived.
  UsedParameterTracker used_stiffness_{"quasi_newton.contact_stiffness",
                                       "k of each contact [N/m] by quasi_newton.stiffness_rule"};
  UsedParameterTracker used_margin_{"quasi_newton.contact_margin",
                                    "max(0.05, dt/N (v_particle + g dt) / h) at the start of each step"};
  UsedParameterTracker used_courant_{"quasi_newton.substep_courant_number",
                                     "δt (c + v_max) / h at the start of each step"};
  UsedParameterTracker used_friction_bound_passes_{
      "quasi_newton.friction_bound_passes",
      "convex solves per substep with contacts until sum mu |n0 - gamma_n| <= friction_bound_tolerance sum mu gamma_n"};
  // Substeps whose friction bound settled within max_friction_bound_passes, and those that did
  // not (which keep the last solve).
  UsedChoiceTracker used_friction_bound_outcome_{"quasi_newton.friction_bound_outcome",
                                                 {"settled", "unsettled"},
                                                 "substeps",
                                                 "friction_bound = carried: whether sum mu |n0 - gamma_n| <= "
                                                 "friction_bound_tolerance sum mu gamma_n was reached"};
  UsedChoiceTracker used_stiffness_rule_{
      "quasi_newton.stiffness_rule", ChoiceNames(StiffnessRuleNames()), "contact registrations",
      "auto: effective_mass, capped by rigid_step against bodies that move with the coupling (finite "
      "mass); per contact"};
  UsedChoiceTracker used_stopping_frame_{
      "quasi_newton.stopping_frame", ChoiceNames(StoppingFrameNames()), "substeps",
      "auto: world or touched_surfaces, whichever sees less momentum in v*; per substep with contacts"};
};

FormulationInfo QuasiNewtonInfo();

}  // namespace contactlab::quasi_newton
