#include "formulations/quasi_newton/quasi_newton_formulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>
#include <tuple>
#include <utility>

#include <Eigen/Eigenvalues>

#include "formulations/contact/grid_boundary.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/explicit_stability.h"
#include "formulations/dynamics/step_bookkeeping.h"
#include "formulations/phase_clock.h"
#include "formulations/solvers/fixed_chunk_sum.h"
#include "mpm/bspline.h"
#include "mpm/transfers.h"

#include "formulations/quasi_newton/cuda/emulated_device_solver.h"
#include "formulations/quasi_newton/cuda/emulated_explicit_substep.h"
#include "formulations/quasi_newton/cuda/explicit_substep_backend.h"

#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_explicit_substep.h"
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace contactlab::quasi_newton {

#ifdef CONTACTLAB_WITH_CUDA
class CudaSolverHandle {
 public:
  CudaQuasiNewtonSolver solver;
};
#else
class CudaSolverHandle {};
#endif

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool CudaBuilt() {
#ifdef CONTACTLAB_WITH_CUDA
  return true;
#else
  return false;
#endif
}

// What the stiffness rules read about one contact.
struct StiffnessInputs {
  bool body_moves_with_coupling = false;  // a free or articulated body (finite mass)
  double particle_mass = 0.0;             // m_p [kg]
  double lumped_mobility = 0.0;           // w_p of the grid side, Σ_i w_ip² / m_i [1/kg]
  double approach_speed = 0.0;            // max(0, −v_n0) [m/s]
  double previous_force = 0.0;            // normal force of the particle's contact in the last substep [N]
  double rigid_step_cap = kInfinity;      // [N/m], RigidStepStiffnessCaps
};

// The stiffness k_p of one contact (QuasiNewtonFormulationOptions::stiffness_rule), and the
// rule that set it: "auto" resolves per contact, by the touched body and the softest value.
std::pair<StiffnessRule, double> ContactStiffness(StiffnessRule rule, const QuasiNewtonFormulationOptions& options,
                                                  const StiffnessInputs& in, double gravity, double grid_spacing,
                                                  double substep) {
  const auto load = [&] {
    // k = max(m g, m v², f_prev) over the target depth: a resting particle, one arriving at
    // v and one loaded by f_prev settle options.penetration_fraction · h deep.
    const double depth = options.penetration_fraction * grid_spacing;
    return std::max({in.particle_mass * gravity / depth,
                     in.particle_mass * in.approach_speed * in.approach_speed / (depth * depth),
                     in.previous_force / depth});
  };
  const auto effective_mass = [&] {
    // k = 1/(w_p δt²): the contact's Hessian δt² k is its effective mass 1/w_p, so one substep's
    // impulse at a penetration x₀ and approach speed v_n is (x₀/δt − v_n)/w_p: the velocity-level
    // push-out of the grid mass the contact moves (a spring of period 2π δt, integrated implicitly).
    return 1.0 / (in.lumped_mobility * substep * substep);
  };
  const auto near_rigid = [&](double mass) {
    // Spec A1: k_p = (2π/(β δt))² m, an oscillator of period β δt on the mass m: the
    // contact's effective mass 1/w_p, or (softer) the particle's own mass m_p.
    const double angular_frequency = 2.0 * std::numbers::pi / (options.contact.near_rigid_threshold * substep);
    return angular_frequency * angular_frequency * mass;
  };
  switch (rule) {
    case StiffnessRule::kAuto: {
      const double effective = effective_mass();
      // Against a body the coupling moves, no stiffer than its rigid step resolves.
      if (in.body_moves_with_coupling && in.rigid_step_cap < effective) {
        return {StiffnessRule::kRigidStep, in.rigid_step_cap};
      }
      return {StiffnessRule::kEffectiveMass, effective};
    }
    case StiffnessRule::kEffectiveMass:
      return {rule, effective_mass()};
    case StiffnessRule::kLoad:
      return {rule, load()};
    case StiffnessRule::kNearRigid:
      return {rule, near_rigid(1.0 / in.lumped_mobility)};
    case StiffnessRule::kNearRigidParticleMass:
      return {rule, near_rigid(in.particle_mass)};
    case StiffnessRule::kRigidStep:
      if (!in.body_moves_with_coupling) return {StiffnessRule::kLoad, load()};
      // No cap (light material behind the contacts, or no inertia to bound): the substep's stiffest spring.
      if (!std::isfinite(in.rigid_step_cap))
        return {StiffnessRule::kNearRigidParticleMass, near_rigid(in.particle_mass)};
      return {rule, in.rigid_step_cap};
    case StiffnessRule::kFixed:
      break;
  }
  return {StiffnessRule::kFixed, 0.0};  // 0: the model's contact.stiffness
}

// warm_start = auto: the previous impulses where the backend takes a start (cpu), v* elsewhere.
WarmStart ResolveWarmStart(WarmStart warm_start, Backend backend) {
  if (warm_start != WarmStart::kAuto) return warm_start;
  return backend == Backend::kCpu ? WarmStart::kPreviousImpulses : WarmStart::kNone;
}

// Kinematic bodies and the prescribed joints of the multibody tree at `time` [s], the tree's
// degrees of freedom unchanged (kinematic_poses = substep).
void MovePrescribedMotion(World& world, double time) {
  for (rigid::RigidBody& body : world.bodies) {
    if (body.motion == rigid::BodyMotion::kKinematic && body.trajectory) rigid::UpdateKinematicBody(body, time);
  }
  if (world.multibody.num_links() > 0) {
    world.multibody.set_time(time);
    world.multibody.UpdateKinematics();
    SyncArticulatedBodies(world);
  }
}

// The key of a (particle, body) contact for the warm start.
std::uint64_t WarmStartKey(const contact::ParticleContact& contact) {
  return (static_cast<std::uint64_t>(contact.particle) << 24) | static_cast<std::uint64_t>(contact.body);
}

// Σ_p m_p v_B(x_p) / Σ_p m_p over a substep's contacts [m/s], v_B(x_p) = −R_CWᵀ b_p the frozen
// velocity of the touched surface at each contact particle (stopping_frame = touched_surfaces).
Vector3 TouchedSurfaceVelocity(const std::vector<contact::ParticleContact>& contacts, const mpm::Particles& particles,
                               const SubstepContactProblem& problem) {
  Vector3 momentum = Vector3::Zero();
  double mass = 0.0;
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    const double particle_mass = particles.mass[contacts[c].particle];
    const GridContact& contact = problem.contacts[c];
    momentum -= particle_mass * (contact.world_to_contact.transpose() * contact.bias);
    mass += particle_mass;
  }
  return mass > 0.0 ? Vector3(momentum / mass) : Vector3::Zero();
}

// The contact problem of one substep (eq. 8) from the registered contacts: the stencil nodes
// of contact particles become the problem's nodes, in order of first appearance.
SubstepContactProblem BuildProblem(
    const mpm::SparseGrid& grid, const mpm::Particles& particles, const std::vector<rigid::RigidBody>& bodies,
    const std::vector<contact::ParticleContact>& contacts, const contact::ContactModel& model, double substep,
    double gravity, const QuasiNewtonFormulationOptions& options, const std::vector<double>& previous_normal_force,
    const std::vector<double>& rigid_step_caps, std::vector<StiffnessRule>& rule_of_contact,
    std::vector<int>& problem_node_of_grid_node, std::vector<int>& grid_node_of_problem_node) {
  SubstepContactProblem problem;
  problem.model = &model;
  problem_node_of_grid_node.assign(grid.num_nodes(), -1);
  grid_node_of_problem_node.clear();
  problem.contacts.resize(contacts.size());
  rule_of_contact.resize(contacts.size());
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    const contact::ParticleContact& point = contacts[c];
    GridContact& grid_contact = problem.contacts[c];
    const mpm::QuadraticStencil stencil =
        mpm::ComputeQuadraticStencil(particles.position[point.particle], grid.spacing());
    double lumped_mobility = 0.0;  // Σ_i w_ip² / m_i: the Delassus scale for A = M (spec §1.3.2)
    int slot = 0;
    for (int cz = 0; cz < 3; ++cz) {
      for (int cy = 0; cy < 3; ++cy) {
        for (int cx = 0; cx < 3; ++cx, ++slot) {
          const double weight = stencil.Weight(cx, cy, cz);
          const int grid_node = grid.FindNode(stencil.base_node + mpm::NodeCoordinate(cx, cy, cz));
          grid_contact.weight[slot] = weight;
          grid_contact.node[slot] = -1;
          if (weight <= 0.0 || grid_node < 0 || !(grid.mass[grid_node] > 0.0)) continue;
          int& problem_node = problem_node_of_grid_node[grid_node];
          if (problem_node < 0) {
            problem_node = static_cast<int>(grid_node_of_problem_node.size());
            grid_node_of_problem_node.push_back(grid_node);
            problem.node_mass.push_back(grid.mass[grid_node]);
            problem.free_velocity.push_back(grid.velocity[grid_node]);
          }
          grid_contact.node[slot] = problem_node;
          lumped_mobility += weight * weight / grid.mass[grid_node];
        }
      }
    }
    grid_contact.world_to_contact = point.frame.transpose();
    // b_p = −R_CW v_B(x_p) with the rigid velocity frozen at vⁿ (spec §1.2.3).
    grid_contact.bias = -grid_contact.world_to_contact * bodies[point.body].PointVelocity(point.position);
    contact::ContactPointState state;
    state.penetration = point.penetration;
    // v_n0: particle velocity after the previous G2P minus the rigid point velocity (Y6).
    state.previous_normal_velocity = point.relative_velocity.z();
    state.friction_coefficient = point.friction_coefficient;
    state.delassus_scale = lumped_mobility;
    StiffnessInputs inputs;
    inputs.body_moves_with_coupling = bodies[point.body].has_finite_mass();
    inputs.particle_mass = particles.mass[point.particle];
    inputs.lumped_mobility = lumped_mobility;
    inputs.approach_speed = std::max(0.0, -state.previous_normal_velocity);
    inputs.previous_force = previous_normal_force[point.particle];
    inputs.rigid_step_cap = rigid_step_caps[c];
    std::tie(rule_of_contact[c], state.stiffness) =
        ContactStiffness(options.stiffness_rule, options, inputs, gravity, grid.spacing(), substep);
    grid_contact.prepared = model.Prepare(state, substep);
  }
  return problem;
}

}  // namespace

std::vector<double> RigidStepStiffnessCaps(const World& world, const dynamics::RigidDofs& rigid_dofs,
                                           const std::vector<contact::ParticleContact>& contacts,
                                           const std::vector<double>& material_mass, double ratio, double dt) {
  struct Unknowns {
    int first_column = -1;
    bool tree = false;
    Eigen::MatrixXd contact_metric;  // G
    std::vector<char> touching_material;
    int contacts = 0;
    double cap = kInfinity;
  };
  std::vector<Unknowns> groups;
  std::vector<int> group_of_contact(contacts.size(), -1);
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    const contact::ParticleContact& point = contacts[c];
    if (!rigid_dofs.HasDofs(point.body)) continue;
    int first_column = -1;
    const Eigen::Matrix<double, 3, Eigen::Dynamic> jacobian =
        rigid_dofs.PointJacobian(world, point.body, point.position, &first_column);
    if (jacobian.cols() == 0) continue;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const Unknowns& unknowns) { return unknowns.first_column == first_column; });
    if (group == groups.end()) {
      groups.push_back({first_column, world.bodies[point.body].motion == rigid::BodyMotion::kArticulated,
                        Eigen::MatrixXd::Zero(jacobian.cols(), jacobian.cols()),
                        std::vector<char>(material_mass.size(), 0), 0, kInfinity});
      group = groups.end() - 1;
    }
    const Eigen::VectorXd normal_row = jacobian.transpose() * point.frame.col(2);  // J_pᵀ n_p
    group->contact_metric.noalias() += normal_row * normal_row.transpose();
    group->touching_material[world.particles.material[point.particle]] = 1;
    ++group->contacts;
    group_of_contact[c] = static_cast<int>(group - groups.begin());
  }
  for (Unknowns& group : groups) {
    // λ_max of G x = λ M x with the inertia M alone (a free body's mass and inertia, the tree's
    // mass matrix): the cap does not count on the implicit joint damping and PD stiffness that
    // A adds (squeezed_cube's critically damped panels look 4.6 times heavier in A at 4 ms).
    const int width = static_cast<int>(group.contact_metric.rows());
    const Eigen::MatrixXd inertia =
        group.tree
            ? world.multibody.MassMatrix()
            : Eigen::MatrixXd(rigid_dofs.dynamics_matrix().block(group.first_column, group.first_column, width, width));
    if (inertia.rows() != width) continue;
    const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eigen(group.contact_metric, inertia,
                                                                          Eigen::EigenvaluesOnly);
    if (eigen.info() != Eigen::Success) continue;  // no cap where M is not positive definite
    double material_behind = 0.0;                  // M_mat
    for (std::size_t m = 0; m < material_mass.size(); ++m) {
      if (group.touching_material[m]) material_behind += material_mass[m];
    }
    const double largest = eigen.eigenvalues().maxCoeff();  // λ
    const double lump = material_behind / group.contacts;   // m = M_mat/n
    if (largest * lump > ratio) group.cap = ratio / (dt * dt * largest);
  }
  std::vector<double> caps(contacts.size(), kInfinity);
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    if (group_of_contact[c] >= 0) caps[c] = groups[group_of_contact[c]].cap;
  }
  return caps;
}

std::vector<ParameterSpec> QuasiNewtonFormulationOptions::Specs() {
  const QuasiNewtonFormulationOptions defaults;
  std::vector<ParameterSpec> specs = {
      AutoParameter(
          "quasi_newton.substeps", std::int64_t{0}, "1",
          "MPM substeps N per rigid step; auto: the smallest N with (dt/N)(c + v_max)/h <= quasi_newton.cfl at "
          "each step (c: dilatational wave speed, v_max: fastest particle or rigid surface), the rule of "
          "hybrid_impulse; [yu2025async] uses N = 10 at 10 ms.",
          Positive()),
      {"quasi_newton.cfl", defaults.cfl, "1",
       "Courant number of the automatic substep, delta t (c + v_max)/h; 0.3 as hybrid_impulse.cfl.",
       InClosedRange(1e-6, 1.0)},
      {"quasi_newton.max_substeps", std::int64_t{defaults.max_substeps}, "1",
       "Substeps allowed per step; a step that needs more is recorded as diverged.", Positive()},
      {"quasi_newton.relative_tolerance", defaults.solver.relative_tolerance, "1",
       "eps_r of the scaled stopping rule of Algorithm 1; [yu2025async] uses 5e-2 (1e-2 for the shake test).",
       NonNegative()},
      {"quasi_newton.stopping_frame", ChoiceName(defaults.stopping_frame, StoppingFrameNames()), "",
       "Frame of the momentum term |M^1/2 v| in the stopping rule (spec Y1: [yu2025async] leaves the scaling open); "
       "the "
       "problem is Galilean invariant, so the frame changes only where the solve stops. world: v as it is; "
       "touched_surfaces: the frame moving at the mean velocity of the rigid surfaces at the substep's contact "
       "particles; auto: per substep whichever of the two sees less momentum in v*, never looser than world, so a "
       "grip carried on a moving hand is solved as tightly as one at rest (README, close_lift_shake).",
       OneOf(ChoiceNames(StoppingFrameNames()))},
      {"quasi_newton.stopping_scale", ChoiceName(defaults.stopping_scale, StoppingScaleNames()), "",
       "Grid nodes whose momentum |M^1/2 v| scales the stopping rule ([yu2025async] leaves it open). contact_nodes: "
       "the problem's "
       "unknowns, the stencil nodes of the contact particles; all_nodes: every active grid node, so the tolerance "
       "grows with material that touches nothing and a large body on a few contacts is solved loosely "
       "(docs/findings/2026-11-28-quasi-newton-friction.md).",
       OneOf(ChoiceNames(StoppingScaleNames()))},
      {"quasi_newton.absolute_tolerance", defaults.solver.absolute_tolerance, "kg^0.5 m/s",
       "eps_a of the stopping rule; [yu2025async] sets it to machine epsilon.", NonNegative()},
      {"quasi_newton.max_iterations", std::int64_t{defaults.solver.max_iterations}, "1",
       "Quasi-Newton iterations per substep before it is reported unconverged (spec Y1: 2000).", Positive()},
      AutoParameter(
          "quasi_newton.contact_margin", 0.0, "1",
          "Distance, as a fraction of h, within which particles outside a rigid surface become gap contacts (0: "
          "inside only, as [yu2025async], which flickers in resting contact). auto: max(0.05, delta t (v_particle + g "
          "dt)/h), the farthest a particle closes on a surface in one substep.",
          NonNegative()),
      {"quasi_newton.stiffness_rule", ChoiceName(defaults.stiffness_rule, StiffnessRuleNames()), "",
       "Per-contact k of the lagged model. effective_mass: 1/(w delta t^2), w = sum_i w_ip^2/m_i the contact's "
       "Delassus scale, so the contact's Hessian is the grid mass it moves (a spring of period 2 pi delta t); load: "
       "max(m g, m v_approach^2, f_prev)/(penetration_fraction h), whose f_prev makes the contact integrate its "
       "penetration error (a resting particle rings); near_rigid / near_rigid_particle_mass: (2 pi/(beta delta "
       "t))^2 m with m = 1/w or m_p; rigid_step: against a body the coupling moves, kappa/(dt^2 lambda), "
       "lambda = lambda_max(M^-1 sum_p J_p^T n_p n_p^T J_p) over its n contacts (M its inertia), so its explicit "
       "rigid step sees dt^2 lambda_max(M^-1 K) <= kappa; no cap where lambda m <= kappa, m = M_mat/n the inertia "
       "of the material behind each contact (M_mat: the materials touching it), which bounds what a spring can push "
       "over a step (effective_mass against other geometry); auto (default): effective_mass, capped by rigid_step "
       "against bodies the weak coupling moves; fixed: contact.stiffness.",
       OneOf(ChoiceNames(StiffnessRuleNames()))},
      {"quasi_newton.friction_bound", ChoiceName(defaults.friction_bound, FrictionBoundNames()), "",
       "The normal impulse n0 bounding the lagged model's friction mu n0. carried (default): the normal impulse the "
       "contact carries in the substep, a fixed point of convex solves (n0 <- gamma_n between them) stopped when "
       "sum mu |n0 - gamma_n| <= friction_bound_tolerance sum mu gamma_n; penetration: n0 = dt k x0 (1 - d v_n0) "
       "from the penetration at the substep's start (the literal lagged model), which misses the load a contact "
       "carries through its velocity term.",
       OneOf(ChoiceNames(FrictionBoundNames()))},
      {"quasi_newton.friction_bound_tolerance", defaults.friction_bound_tolerance, "1",
       "Relative mismatch sum mu |n0 - gamma_n| / sum mu gamma_n at which friction_bound = carried stops.",
       InHalfOpenRange(1e-12, 1.0)},
      {"quasi_newton.max_friction_bound_passes", std::int64_t{defaults.max_friction_bound_passes}, "1",
       "Convex solves per substep under friction_bound = carried; a substep that needs more keeps the last one and "
       "is counted as unsettled.",
       Positive()},
      {"quasi_newton.penetration_fraction", defaults.penetration_fraction, "1",
       "Penetration of a contact under stiffness_rule = load, as a fraction of h.", InHalfOpenRange(1e-6, 1.0)},
      {"quasi_newton.rigid_step_stiffness_ratio", defaults.rigid_step_stiffness_ratio, "1",
       "kappa of stiffness_rule rigid_step (and auto): bound on dt^2 lambda_max(M^-1 K), K the contact springs on one "
       "coupled body's rigid unknowns, M their inertia: the explicit spring its rigid step sees (stable below 4).",
       InHalfOpenRange(1e-6, 4.0)},
      {"quasi_newton.grid_update", ChoiceName(defaults.grid_update, GridUpdateNames()), "",
       "impulse: v = v* + M^-1 J^T gamma, exact momentum exchange at any tolerance (default: with the solver's v at "
       "eps_r 5e-2 the squeezed cube's panel forces sum to 1.045 m g); solver_velocity: the grid keeps the solver's v "
       "([yu2025async]'s Algorithm 1).",
       OneOf(ChoiceNames(GridUpdateNames()))},
      {"quasi_newton.warm_start", ChoiceName(defaults.warm_start, WarmStartNames()), "",
       "Start of each substep's iteration. none: v* (Algorithm 1, [yu2025async]). previous_impulses (beyond the "
       "paper): "
       "v* + M^-1 J^T gamma_prev, the forces the same (particle, body) contacts carried in the previous substep times "
       "this substep; the same minimizer, fewer iterations in resting contact. CPU backend only. auto (default): "
       "previous_impulses on the cpu backend, none on the device ones.",
       OneOf(ChoiceNames(WarmStartNames()))},
      {"quasi_newton.kinematic_poses", ChoiceName(defaults.kinematic_poses, KinematicPosesNames()), "",
       "Poses of kinematic bodies during the substeps. step: frozen at t^n like every body ([yu2025async]), so a "
       "moving "
       "pin jumps by a whole dt at the first substep; substep (beyond the paper): kinematic bodies and prescribed "
       "joints moved along their trajectories to the start of each substep (degrees of freedom stay at t^n).",
       OneOf(ChoiceNames(KinematicPosesNames()))},
      {"quasi_newton.backend", ChoiceName(defaults.backend, BackendNames()), "",
       "cpu: OpenMP on the host; cuda: MPM substeps and the quasi-Newton solve on the GPU, particles kept on the "
       "device through each step, contact registration on the host (CUDA build and a device required); emulated: "
       "the device algorithms replayed serially on the host (tests of the cuda path; slow).",
       OneOf(ChoiceNames(BackendNames()))},
  };
  for (ParameterSpec& spec : contact::ContactModelParameters::Specs()) {
    // [yu2025async] solves problem (8) with the lagged Hunt–Crossley model.
    if (spec.key == "contact.model") {
      spec.default_value = std::string("lagged");
      spec.description = "Contact model: lagged (Hunt-Crossley, [yu2025async]'s choice) or sap_cone.";
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

QuasiNewtonFormulationOptions QuasiNewtonFormulationOptions::FromParameters(const ParameterSet& parameters) {
  QuasiNewtonFormulationOptions options;
  options.substeps = parameters.GetOptionalIntAs<int>("quasi_newton.substeps").value_or(0);
  options.cfl = parameters.GetDouble("quasi_newton.cfl");
  options.max_substeps = parameters.GetIntAs<int>("quasi_newton.max_substeps");
  options.solver.relative_tolerance = parameters.GetDouble("quasi_newton.relative_tolerance");
  options.solver.absolute_tolerance = parameters.GetDouble("quasi_newton.absolute_tolerance");
  options.stopping_frame = GetChoice(parameters, "quasi_newton.stopping_frame", StoppingFrameNames());
  options.stopping_scale = GetChoice(parameters, "quasi_newton.stopping_scale", StoppingScaleNames());
  options.solver.max_iterations = parameters.GetIntAs<int>("quasi_newton.max_iterations");
  options.contact_margin = parameters.GetOptionalDouble("quasi_newton.contact_margin").value_or(-1.0);
  options.backend = GetChoice(parameters, "quasi_newton.backend", BackendNames());
  options.stiffness_rule = GetChoice(parameters, "quasi_newton.stiffness_rule", StiffnessRuleNames());
  options.penetration_fraction = parameters.GetDouble("quasi_newton.penetration_fraction");
  options.friction_bound = GetChoice(parameters, "quasi_newton.friction_bound", FrictionBoundNames());
  options.friction_bound_tolerance = parameters.GetDouble("quasi_newton.friction_bound_tolerance");
  options.max_friction_bound_passes = parameters.GetIntAs<int>("quasi_newton.max_friction_bound_passes");
  options.rigid_step_stiffness_ratio = parameters.GetDouble("quasi_newton.rigid_step_stiffness_ratio");
  options.grid_update = GetChoice(parameters, "quasi_newton.grid_update", GridUpdateNames());
  options.warm_start = GetChoice(parameters, "quasi_newton.warm_start", WarmStartNames());
  options.kinematic_poses = GetChoice(parameters, "quasi_newton.kinematic_poses", KinematicPosesNames());
  options.contact = contact::ContactModelParameters::FromParameters(parameters);
  if (const std::string problem = options.solver.Validate(); !problem.empty()) {
    throw InputError("quasi_newton: " + problem);
  }
  if (options.backend != Backend::kCpu && options.warm_start == WarmStart::kPreviousImpulses) {
    throw InputError("quasi_newton.warm_start = " + ChoiceName(options.warm_start, WarmStartNames()) +
                     " needs quasi_newton.backend = cpu (the device iteration starts from v*)");
  }
  if (options.backend == Backend::kCuda && !CudaBuilt()) {
    throw InputError(
        "quasi_newton.backend = cuda: this build has no CUDA backend (configure with nvcc and CONTACTLAB_CUDA=ON)");
  }
  return options;
}

const ChoiceTable<StiffnessRule>& StiffnessRuleNames() {
  static const ChoiceTable<StiffnessRule> names = {{"auto", StiffnessRule::kAuto},
                                                   {"effective_mass", StiffnessRule::kEffectiveMass},
                                                   {"load", StiffnessRule::kLoad},
                                                   {"near_rigid", StiffnessRule::kNearRigid},
                                                   {"near_rigid_particle_mass", StiffnessRule::kNearRigidParticleMass},
                                                   {"rigid_step", StiffnessRule::kRigidStep},
                                                   {"fixed", StiffnessRule::kFixed}};
  return names;
}

const ChoiceTable<GridUpdate>& GridUpdateNames() {
  static const ChoiceTable<GridUpdate> names = {{"impulse", GridUpdate::kImpulse},
                                                {"solver_velocity", GridUpdate::kSolverVelocity}};
  return names;
}

const ChoiceTable<WarmStart>& WarmStartNames() {
  static const ChoiceTable<WarmStart> names = {
      {"auto", WarmStart::kAuto}, {"none", WarmStart::kNone}, {"previous_impulses", WarmStart::kPreviousImpulses}};
  return names;
}

const ChoiceTable<KinematicPoses>& KinematicPosesNames() {
  static const ChoiceTable<KinematicPoses> names = {{"step", KinematicPoses::kStep},
                                                    {"substep", KinematicPoses::kSubstep}};
  return names;
}

const ChoiceTable<StoppingFrame>& StoppingFrameNames() {
  static const ChoiceTable<StoppingFrame> names = {{"auto", StoppingFrame::kAuto},
                                                   {"touched_surfaces", StoppingFrame::kTouchedSurfaces},
                                                   {"world", StoppingFrame::kWorld}};
  return names;
}

const ChoiceTable<StoppingScale>& StoppingScaleNames() {
  static const ChoiceTable<StoppingScale> names = {{"contact_nodes", StoppingScale::kContactNodes},
                                                   {"all_nodes", StoppingScale::kAllNodes}};
  return names;
}

const ChoiceTable<FrictionBound>& FrictionBoundNames() {
  static const ChoiceTable<FrictionBound> names = {{"carried", FrictionBound::kCarried},
                                                   {"penetration", FrictionBound::kPenetration}};
  return names;
}

const ChoiceTable<Backend>& BackendNames() {
  static const ChoiceTable<Backend> names = {
      {"cpu", Backend::kCpu}, {"cuda", Backend::kCuda}, {"emulated", Backend::kEmulated}};
  return names;
}

QuasiNewtonFormulation::QuasiNewtonFormulation(QuasiNewtonFormulationOptions options)
    : options_(std::move(options)),
      contact_model_(contact::MakeContactModel(options_.contact)),
      rigid_contact_model_(contact::MakeContactModel(dynamics::RigidStepContactParameters(options_.contact))) {
  options_.warm_start = ResolveWarmStart(options_.warm_start, options_.backend);
  if (options_.backend == Backend::kCuda) {
#ifdef CONTACTLAB_WITH_CUDA
    std::string reason;
    if (!CudaDeviceAvailable(&reason)) {
      throw InputError("quasi_newton.backend = cuda: no usable GPU (" + reason + ")");
    }
    cuda_solver_ = std::make_unique<CudaSolverHandle>();
#else
    throw InputError("quasi_newton.backend = cuda: this build has no CUDA backend");
#endif
  }
}

QuasiNewtonFormulation::~QuasiNewtonFormulation() = default;

int QuasiNewtonFormulation::ChooseSubsteps(const World& world, double dt, const dynamics::ExplicitSpeeds& speeds) {
  const double speed = speeds.total();
  int substeps = options_.substeps;
  if (substeps == 0) {
    const double needed = speed > 0.0 ? std::ceil(dt * speed / (options_.cfl * world.grid_spacing)) : 1.0;
    if (!std::isfinite(needed) || needed > options_.max_substeps) {
      std::ostringstream message;
      message << "quasi_newton: the explicit limit needs " << needed << " substeps at t = " << world.time
              << " s (more than quasi_newton.max_substeps = " << options_.max_substeps << "): wave speed "
              << speeds.wave_speed << " m/s, fastest particle " << speeds.max_particle_speed
              << " m/s, fastest rigid surface " << speeds.max_body_surface_speed << " m/s";
      throw SimulationDiverged(message.str());
    }
    substeps = std::max(1, static_cast<int>(needed));
    used_substeps_.Observe(substeps);
  }
  used_courant_.Observe(dt / substeps * speed / world.grid_spacing);
  return substeps;
}

double QuasiNewtonFormulation::ContactMargin(const World& world, double dt, double substep,
                                             const dynamics::ExplicitSpeeds& speeds) {
  if (options_.contact_margin >= 0.0) return options_.contact_margin * world.grid_spacing;
  const double margin =
      std::max(0.05 * world.grid_spacing, substep * (speeds.max_particle_speed + world.gravity.norm() * dt));
  used_margin_.Observe(margin / world.grid_spacing);
  return margin;
}

void QuasiNewtonFormulation::VisitState(StateArchive& archive, const World& world) {
  archive("previous_normal_force", previous_normal_force_);
  archive("previous_contact_particles", previous_contact_particles_);
  // The warm-start map, in key order (only looked up, so its order does not matter).
  std::vector<std::uint64_t> keys;
  std::vector<Vector3> forces;
  if (archive.saving()) {
    std::map<std::uint64_t, Vector3> ordered(previous_contact_force_.begin(), previous_contact_force_.end());
    for (const auto& [key, force] : ordered) {
      keys.push_back(key);
      forces.push_back(force);
    }
  }
  archive("previous_contact_force_keys", keys);
  archive("previous_contact_forces", forces);
  used_substeps_.VisitState(archive);
  used_stiffness_.VisitState(archive);
  used_margin_.VisitState(archive);
  used_courant_.VisitState(archive);
  used_friction_bound_passes_.VisitState(archive);
  used_friction_bound_outcome_.VisitState(archive);
  used_stiffness_rule_.VisitState(archive);
  used_stopping_frame_.VisitState(archive);
  if (archive.saving()) return;
  const std::size_t particles = world.particles.size();
  if (!previous_normal_force_.empty() && previous_normal_force_.size() != particles) {
    archive.Fail("previous_normal_force", "does not have one entry per particle");
  }
  for (const int particle : previous_contact_particles_) {
    if (particle < 0 || static_cast<std::size_t>(particle) >= previous_normal_force_.size()) {
      archive.Fail("previous_contact_particles", "names a particle this world lacks");
    }
  }
  if (keys.size() != forces.size()) archive.Fail("previous_contact_forces", "has not one force per key");
  previous_contact_force_.clear();
  for (std::size_t k = 0; k < keys.size(); ++k) previous_contact_force_[keys[k]] = forces[k];
}

std::vector<UsedParameter> QuasiNewtonFormulation::UsedParameters() const {
  std::vector<UsedParameter> used;
  if (used_substeps_.observed()) used.push_back(used_substeps_.used());
  if (used_margin_.observed()) used.push_back(used_margin_.used());
  if (used_stiffness_.observed()) used.push_back(used_stiffness_.used());
  if (used_courant_.observed()) used.push_back(used_courant_.used());
  if (used_stiffness_rule_.observed()) used.push_back(used_stiffness_rule_.used());
  if (used_stopping_frame_.observed()) used.push_back(used_stopping_frame_.used());
  if (used_friction_bound_passes_.observed()) used.push_back(used_friction_bound_passes_.used());
  if (used_friction_bound_outcome_.observed()) used.push_back(used_friction_bound_outcome_.used());
  return used;
}

QuasiNewtonResults QuasiNewtonFormulation::Solve(const SubstepContactProblem& problem) {
#ifdef CONTACTLAB_WITH_CUDA
  if (cuda_solver_ != nullptr) return cuda_solver_->solver.Solve(problem, options_.solver);
#endif
  if (options_.backend == Backend::kEmulated && !problem.contacts.empty()) {
    CheckSubstepProblem(problem);
    return gpu::EmulateCudaQuasiNewton(problem, options_.solver);
  }
  return SolveQuasiNewton(problem, options_.solver);
}

namespace {

// Σ_c μ_c |n₀,c − γ_n,c| and Σ_c μ_c γ_n,c over a substep's contacts: how far the frozen
// friction bounds are from the impulses the contacts carry, and the size of those impulses.
std::pair<double, double> FrictionBoundMismatch(const SubstepContactProblem& problem,
                                                const QuasiNewtonResults& solution) {
  double mismatch = 0.0;
  double scale = 0.0;
  for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
    const contact::PreparedContact& prepared = problem.contacts[c].prepared;
    const double carried = std::max(solution.impulses[c].z(), 0.0);
    mismatch += prepared.friction_coefficient * std::abs(prepared.lagged_normal_impulse - carried);
    scale += prepared.friction_coefficient * carried;
  }
  return {mismatch, scale};
}

}  // namespace

QuasiNewtonResults QuasiNewtonFormulation::SolveWithFrictionBound(SubstepContactProblem& problem,
                                                                  const std::vector<contact::ParticleContact>& contacts,
                                                                  double substep, StepReport& report,
                                                                  int& solve_index) {
  // The step's contact solves are numbered in order: substeps, and within a substep its
  // friction-bound passes.
  const auto book = [&](const solvers::SolverSummary& summary) {
    RecordSolve(report, SolveKind::kContact, solve_index++, "quasi_newton", summary);
  };
  const bool fixed_point = options_.friction_bound == FrictionBound::kCarried &&
                           contact_model_->HasFrozenFrictionBound() && !problem.contacts.empty();
  if (fixed_point) {
    // Start from the impulse the particle carried in the previous substep, where it had one.
    for (std::size_t c = 0; c < contacts.size(); ++c) {
      const double previous_impulse = previous_normal_force_[contacts[c].particle] * substep;
      if (previous_impulse > 0.0)
        contact_model_->SetFrictionNormalImpulse(problem.contacts[c].prepared, previous_impulse);
    }
  }
  QuasiNewtonResults solution = Solve(problem);
  book(solution.summary);
  int passes = 1;
  int iterations = solution.summary.iterations;
  int line_search_evaluations = solution.summary.line_search_evaluations;
  bool settled = true;
  while (fixed_point) {
    const auto [mismatch, scale] = FrictionBoundMismatch(problem, solution);
    if (mismatch <= options_.friction_bound_tolerance * scale) break;
    if (passes >= options_.max_friction_bound_passes) {
      settled = false;
      break;
    }
    for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
      contact_model_->SetFrictionNormalImpulse(problem.contacts[c].prepared, solution.impulses[c].z());
    }
    // The next solve starts where this one ended (the device solver starts from v*).
    if (options_.backend == Backend::kCpu) problem.initial_velocity = solution.velocity;
    solution = Solve(problem);
    book(solution.summary);
    ++passes;
    iterations += solution.summary.iterations;
    line_search_evaluations += solution.summary.line_search_evaluations;
  }
  solution.summary.iterations = iterations;
  solution.summary.line_search_evaluations = line_search_evaluations;
  statistics_.friction_bound_passes_per_substep.push_back(passes);
  if (fixed_point) {
    used_friction_bound_passes_.Observe(passes);
    used_friction_bound_outcome_.Observe(settled ? 0 : 1);
  }
  return solution;
}

void QuasiNewtonFormulation::UploadToDevice(const World& world, double dt, const dynamics::ExplicitSpeeds& speeds) {
  if (device_substep_ == nullptr || device_spacing_ != world.grid_spacing) {
    device_spacing_ = world.grid_spacing;
#ifdef CONTACTLAB_WITH_CUDA
    if (options_.backend == Backend::kCuda) device_substep_ = std::make_unique<CudaExplicitSubstep>(world.grid_spacing);
#endif
    if (options_.backend == Backend::kEmulated) {
      device_substep_ = std::make_unique<gpu::EmulatedExplicitSubstep>(world.grid_spacing);
    }
  }
  // The device's grid box must hold every stencil for the whole step: the particles' and the
  // bodies' speeds at tⁿ (a body can push particles as fast as it moves) and gravity's
  // gain over the step, twice over, plus the stencil's reach.
  const double reach = 2.0 * dt *
                       (speeds.max_particle_speed + speeds.max_body_surface_speed + world.gravity.norm() * dt) /
                       world.grid_spacing;
  const int margin_cells = 2 + static_cast<int>(std::ceil(std::min(reach, 1e6)));
  try {
    device_substep_->Upload(world.particles, world.materials, margin_cells);
  } catch (const std::invalid_argument& error) {
    throw InputError("quasi_newton.backend = " + ChoiceName(options_.backend, BackendNames()) + ": " + error.what());
  }
}

StepReport QuasiNewtonFormulation::AdvanceState(World& world, double dt) {
  StepReport report;
  statistics_ = QuasiNewtonStepStatistics{};
  options_.solver.record_history = log_iterations();
  mpm::Particles& particles = world.particles;
  const double spacing = world.grid_spacing;
  if (grid_.spacing() != spacing) grid_ = mpm::SparseGrid(spacing);
  const dynamics::ExplicitSpeeds speeds = dynamics::MeasureExplicitSpeeds(world);
  const int substeps = ChooseSubsteps(world, dt, speeds);
  const double substep = dt / substeps;
  report.substeps = substeps;
  const double margin = ContactMargin(world, dt, substep, speeds);

  // 1. Freeze the rigid state at tⁿ and prepare the rigid free motion of eq. 3.
  auto start = Clock::now();
  rigid_dofs_.Setup(world, dt);
  Eigen::VectorXd generalized_impulse = Eigen::VectorXd::Zero(rigid_dofs_.size());
  report.contact_wrench = ZeroWrenches(world);
  statistics_.body_linear_impulse.assign(world.bodies.size(), mpm::Vector3::Zero());
  report.timings.rigid = SecondsSince(start);

  std::vector<int> problem_node_of_grid_node;
  std::vector<int> grid_node_of_problem_node;
  std::vector<StiffnessRule> rule_of_contact;
  std::vector<double> material_mass(world.materials.size(), 0.0);  // M per material (stiffness rule rigid_step)
  for (std::size_t p = 0; p < particles.size(); ++p) material_mass[particles.material[p]] += particles.mass[p];
  double contact_sum = 0.0;
  const bool has_walls = contact::HasGridBoundary(world.bodies);
  std::vector<contact::GridBoundaryNode> wall_nodes;
  std::vector<contact::WallImpulse> wall_impulses(world.bodies.size());
  // backend = cuda / emulated: the particles stay on the device for the whole step.
  const bool on_device = options_.backend != Backend::kCpu;
  if (on_device && particles.has_cloth()) {
    // The device kernels transfer solids, liquids and sand; the cloth's mesh forces, face
    // updates and pins live in the host transfers only (mpm/cloth_particles.h).
    throw InputError("quasi_newton.backend = " + std::string(ChoiceName(options_.backend, BackendNames())) +
                     ": the device backends have no cloth; use quasi_newton.backend = cpu");
  }
  if (on_device) {
    start = Clock::now();
    UploadToDevice(world, dt, speeds);
    report.timings.free_motion += SecondsSince(start);
  }
  int contact_solve_index = 0;  // the step's contact solves, numbered in order
  for (int k = 0; k < substeps; ++k) {
    // kinematic_poses = substep: prescribed bodies at the substep's start (the rigid step
    // below puts them at tⁿ⁺¹ as always).
    if (options_.kinematic_poses == KinematicPoses::kSubstep && k > 0) {
      MovePrescribedMotion(world, world.time + k * substep);
    }

    // 2a. Explicit MLS-MPM free motion (eq. 6): P2G with the stress impulse, then v* = v + δt g.
    // On the device the host then reads x and v for the contact registration.
    start = Clock::now();
    if (on_device) {
      device_substep_->ParticleToGrid(substep, world.gravity);
      device_substep_->DownloadMotion(particles);
    } else {
      dynamics::RecordClothPinForces(world, substep / dt, report);  // the forces this substep applies
      mpm::ParticleToGrid(particles, world.materials, substep, grid_);
      mpm::ComputeGridVelocity(world.gravity, substep, grid_);
    }
    report.timings.free_motion += SecondsSince(start);

    // 2b. Contact registration at the current particle positions and the frozen poses qⁿ.
    start = Clock::now();
    const std::vector<contact::ParticleContact> contacts =
        contact::DetectParticleContacts(particles, world.bodies, margin);
    report.timings.detection += SecondsSince(start);
    const int contact_count = static_cast<int>(contacts.size());

    // On the device, the grid comes to the host only when walls or contacts act on it.
    start = Clock::now();
    const bool grid_on_host = !on_device || has_walls || contact_count > 0;
    if (on_device && grid_on_host) device_substep_->DownloadGrid(particles.position, grid_);
    // Grid-boundary walls (contact/grid_boundary.h) hold the free motion before the contact
    // solve and the contact-updated velocities after it (2e).
    if (has_walls) {
      wall_nodes = contact::FindGridBoundaryNodes(grid_, world.bodies);
      contact::ApplyGridBoundary(wall_nodes, world.bodies, grid_, wall_impulses);
      report.grid_boundary_nodes = std::max(report.grid_boundary_nodes, static_cast<int>(wall_nodes.size()));
    }
    report.timings.free_motion += SecondsSince(start);
    statistics_.contacts_per_substep.push_back(contact_count);
    contact_sum += contact_count;

    // 2c. Problem (8) on the stencil nodes of the contact particles.
    start = Clock::now();
    if (previous_normal_force_.size() != particles.size()) previous_normal_force_.assign(particles.size(), 0.0);
    const bool caps_needed =
        options_.stiffness_rule == StiffnessRule::kAuto || options_.stiffness_rule == StiffnessRule::kRigidStep;
    const std::vector<double> rigid_step_caps =
        caps_needed ? RigidStepStiffnessCaps(world, rigid_dofs_, contacts, material_mass,
                                             options_.rigid_step_stiffness_ratio, dt)
                    : std::vector<double>(contacts.size(), kInfinity);
    SubstepContactProblem problem = BuildProblem(
        grid_, particles, world.bodies, contacts, *contact_model_, substep, world.gravity.norm(), options_,
        previous_normal_force_, rigid_step_caps, rule_of_contact, problem_node_of_grid_node, grid_node_of_problem_node);
    // stopping_frame: the problem in the frame moving at u, where the stopping rule measures
    // momentum (u = 0: the world frame).
    Vector3 frame_velocity = Vector3::Zero();
    if (contact_count > 0) {
      StoppingFrame frame = options_.stopping_frame;
      const Vector3 surface_velocity =
          frame == StoppingFrame::kWorld ? Vector3::Zero() : TouchedSurfaceVelocity(contacts, particles, problem);
      // Σ m_i ‖v*_i‖² and Σ m_i ‖v*_i − u‖² over all active nodes and over those outside the
      // problem, in one pass. auto takes the frame with less momentum over all active nodes, so
      // material carried along with a touched surface counts (over the contact nodes alone it
      // picked the moving frame for floating_box's heaving box, whose heave doubled to 1.6 mm);
      // stopping_scale = all_nodes adds the outside part to the rule's scale.
      const Eigen::Vector4d momenta =
          solvers::FixedChunkSum(grid_.num_nodes(), Eigen::Vector4d(Eigen::Vector4d::Zero()), [&](int node) {
            const double mass = grid_.mass[node];
            const Eigen::Vector2d both(mass * grid_.velocity[node].squaredNorm(),
                                       mass * (grid_.velocity[node] - surface_velocity).squaredNorm());
            const bool outside = problem_node_of_grid_node[node] < 0;
            return Eigen::Vector4d(both[0], both[1], outside ? both[0] : 0.0, outside ? both[1] : 0.0);
          });
      if (frame == StoppingFrame::kAuto) {
        frame = momenta[1] < momenta[0] ? StoppingFrame::kTouchedSurfaces : StoppingFrame::kWorld;
      }
      if (frame == StoppingFrame::kTouchedSurfaces) {
        frame_velocity = surface_velocity;
        ShiftToMovingFrame(frame_velocity, problem);
      }
      used_stopping_frame_.Observe(static_cast<int>(frame));
      if (options_.stopping_scale == StoppingScale::kAllNodes)
        problem.outside_momentum_squared = frame == StoppingFrame::kTouchedSurfaces ? momenta[3] : momenta[2];
    }
    // The warm start (an option beyond the paper): v⁰ = v* + M⁻¹ Σ_p w_ip R_WC γ_p,prev with
    // γ_p,prev the previous substep's force of the same contact times this substep.
    if (options_.warm_start == WarmStart::kPreviousImpulses) {
      problem.initial_velocity = problem.free_velocity;
      for (int c = 0; c < contact_count; ++c) {
        const auto previous = previous_contact_force_.find(WarmStartKey(contacts[c]));
        if (previous == previous_contact_force_.end()) continue;
        const GridContact& grid_contact = problem.contacts[c];
        const Vector3 impulse = substep * previous->second;
        for (int slot = 0; slot < 27; ++slot) {
          const int node = grid_contact.node[slot];
          if (node >= 0)
            problem.initial_velocity[node] += grid_contact.weight[slot] / problem.node_mass[node] * impulse;
        }
      }
    }
    report.timings.assembly += SecondsSince(start);

    // 2d. Algorithm 1.
    start = Clock::now();
    QuasiNewtonResults solution = SolveWithFrictionBound(problem, contacts, substep, report, contact_solve_index);
    for (Vector3& velocity : solution.velocity) velocity += frame_velocity;
    report.timings.solve += SecondsSince(start);
    const solvers::SolverSummary& summary = solution.summary;
    statistics_.iterations_per_substep.push_back(summary.iterations);
    statistics_.line_search_evaluations += summary.line_search_evaluations;
    statistics_.max_residual = std::max(statistics_.max_residual, summary.residual);
    if (!summary.converged()) ++statistics_.unconverged_substeps;
    for (const Vector3& velocity : solution.velocity) {
      if (!velocity.allFinite()) {
        throw SimulationDiverged("quasi_newton: non-finite contact solve at t = " + std::to_string(world.time) +
                                 " s, substep " + std::to_string(k));
      }
    }

    if (options_.warm_start == WarmStart::kPreviousImpulses) {
      previous_contact_force_.clear();
      for (int c = 0; c < contact_count; ++c) {
        previous_contact_force_[WarmStartKey(contacts[c])] =
            problem.contacts[c].world_to_contact.transpose() * solution.impulses[c] / substep;
      }
    }

    // The normal force each contact particle carried (stiffness_rule = load at the next substep).
    for (const int particle : previous_contact_particles_) previous_normal_force_[particle] = 0.0;
    previous_contact_particles_.clear();
    for (int c = 0; c < contact_count; ++c) {
      const int particle = contacts[c].particle;
      const double normal_force = std::max(0.0, solution.impulses[c].z()) / substep;
      if (previous_normal_force_[particle] == 0.0) previous_contact_particles_.push_back(particle);
      previous_normal_force_[particle] = std::max(previous_normal_force_[particle], normal_force);
      if (options_.stiffness_rule != StiffnessRule::kFixed)
        used_stiffness_.Observe(problem.contacts[c].prepared.stiffness);
      used_stiffness_rule_.Observe(static_cast<int>(rule_of_contact[c]));
    }

    // 2e. v^{k+1} on the grid; the impulses −R_WC γ_p go to the rigid bodies (eq. 3, summed).
    start = Clock::now();
    if (options_.grid_update == GridUpdate::kImpulse) {
      // v_i = v*_i + m_i⁻¹ Σ_p w_ip R_WC,p γ_p: the momentum the contacts gave each node (the
      // grid still holds v* in the world frame).
      for (int c = 0; c < contact_count; ++c) {
        const GridContact& grid_contact = problem.contacts[c];
        const Vector3 impulse_world = grid_contact.world_to_contact.transpose() * solution.impulses[c];
        for (int slot = 0; slot < 27; ++slot) {
          const int node = grid_contact.node[slot];
          if (node < 0) continue;
          grid_.velocity[grid_node_of_problem_node[node]] +=
              grid_contact.weight[slot] / problem.node_mass[node] * impulse_world;
        }
      }
    } else {
      for (std::size_t i = 0; i < grid_node_of_problem_node.size(); ++i) {
        grid_.velocity[grid_node_of_problem_node[i]] = solution.velocity[i];
      }
    }
    for (int c = 0; c < contact_count; ++c) {
      const contact::ParticleContact& point = contacts[c];
      const Vector3 impulse_on_body = -(point.frame * solution.impulses[c]);
      statistics_.body_linear_impulse[point.body] += impulse_on_body;
      // One record per contact and substep registration, divided by the rigid step Δt (not δt):
      // a record is 1/N of that substep's own force γ/δt, so the sign of the per-contact cone
      // margin ‖f_t‖ − μ f_n (spec-penalty-hybrid §4.4) is preserved, its size scaled by 1/N.
      dynamics::RecordParticleContactImpulse(world, point, -impulse_on_body, dt, report);
      if (rigid_dofs_.HasDofs(point.body)) {
        int first_column = -1;
        const Eigen::Matrix<double, 3, Eigen::Dynamic> jacobian =
            rigid_dofs_.PointJacobian(world, point.body, point.position, &first_column);
        generalized_impulse.segment(first_column, jacobian.cols()) += jacobian.transpose() * impulse_on_body;
      }
    }
    if (has_walls) contact::ApplyGridBoundary(wall_nodes, world.bodies, grid_, wall_impulses);
    report.timings.rigid += SecondsSince(start);

    // 2f. G2P (v_p, C_p, F, x_p), then plasticity and the lagged rotation R0.
    start = Clock::now();
    if (on_device) {
      if (grid_on_host) device_substep_->UploadGridVelocity(grid_);
      device_substep_->GridToParticle(substep);
    } else {
      mpm::GridToParticle(grid_, substep, particles);
      mpm::UpdateConstitutiveState(world.materials, particles);
      // Particles that drifted into a grid wall go back to its surface.
      if (has_walls) contact::ProjectParticlesOutOfGridWalls(world.bodies, particles, wall_impulses);
    }
    report.timings.g2p += SecondsSince(start);
  }
  if (on_device) {
    start = Clock::now();
    try {
      device_substep_->Download(particles);
    } catch (const std::runtime_error& error) {
      throw SimulationDiverged("quasi_newton (backend " + ChoiceName(options_.backend, BackendNames()) +
                               "): " + error.what() + " at t = " + std::to_string(world.time) + " s");
    }
    // The particles stay on the device through the substeps: those that drifted into a grid
    // wall go back to its surface once per step, here.
    if (has_walls) contact::ProjectParticlesOutOfGridWalls(world.bodies, particles, wall_impulses);
    report.timings.g2p += SecondsSince(start);
  }

  // Prescribed bodies back at tⁿ for the rigid step's contacts (kinematic_poses = substep).
  if (options_.kinematic_poses == KinematicPoses::kSubstep) MovePrescribedMotion(world, world.time);

  // 3. The rigid step of eq. 3 with the accumulated MPM impulse (Algorithm B.3). Bodies that
  // touch each other or static geometry make it a convex problem over the rigid DoFs, as
  // [yu2025async] solves it with Drake's SAP: free motion v* + A⁻¹ p_MPM, the rigid contacts at qⁿ
  // (dynamics/rigid_contact_step.h).
  start = Clock::now();
  rigid_contacts_.Detect(world, rigid_dofs_, *rigid_contact_model_,
                         dynamics::RigidContactMargin(world, rigid_dofs_, dt), dt);
  report.timings.detection += SecondsSince(start);
  start = Clock::now();
  const dynamics::RigidContactStepResult rigid_step = dynamics::SolveRigidContactStep(
      rigid_dofs_, rigid_contacts_, generalized_impulse, *rigid_contact_model_, solvers::SapSolverOptions{});
  if (!rigid_step.contact_impulse.allFinite()) {
    throw SimulationDiverged("quasi_newton: rigid contact solve failed (" + rigid_step.solver.summary.message +
                             ") at t = " + std::to_string(world.time) + " s");
  }
  statistics_.rigid_step = rigid_step.solver;
  if (!rigid_contacts_.empty()) RecordSolve(report, SolveKind::kRigidStep, 0, "sap", rigid_step.solver.summary);
  rigid_contacts_.Record(world, rigid_step.impulses, dt, report);
  report.rigid_contacts = rigid_contacts_.size();
  rigid_dofs_.Advance(world, dt, generalized_impulse + rigid_step.contact_impulse);
  report.timings.rigid += SecondsSince(start);

  // Report: contacts per registration averaged over the substeps ([yu2025async]'s count, spec X8);
  // iterations, residual and convergence come from the solves recorded above.
  report.contacts = static_cast<int>(std::lround(contact_sum / substeps));
  dynamics::RecordWallImpulses(wall_impulses, dt, report);
  start = Clock::now();
  report.max_penetration = contact::MaxPenetration(particles, world.bodies);
  report.timings.detection += SecondsSince(start);
  return report;
}

namespace {
std::unique_ptr<Formulation> MakeQuasiNewton(const ParameterSet& parameters) {
  return std::make_unique<QuasiNewtonFormulation>(QuasiNewtonFormulationOptions::FromParameters(parameters));
}
}  // namespace

FormulationInfo QuasiNewtonInfo() {
  return FormulationInfo{
      "quasi_newton",
      "explicit MPM substeps weakly coupled to rigid bodies, block-diagonal quasi-Newton contact solve ([yu2025async])",
      QuasiNewtonFormulationOptions::Specs(), &MakeQuasiNewton};
}

}  // namespace contactlab::quasi_newton
