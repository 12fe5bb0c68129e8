#include "formulations/penalty/penalty_formulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "formulations/contact/grid_boundary.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/step_bookkeeping.h"
#include "formulations/phase_clock.h"
#include "mpm/transfers.h"

namespace contactlab::penalty {
namespace {

const ChoiceTable<Preconditioner>& PreconditionerNames() {
  static const ChoiceTable<Preconditioner> names = {{"auto", Preconditioner::kAuto},
                                                    {"block_jacobi", Preconditioner::kBlockJacobi},
                                                    {"incomplete_lu", Preconditioner::kIncompleteLu},
                                                    {"sparse_lu", Preconditioner::kSparseLu},
                                                    {"none", Preconditioner::kNone},
                                                    {"cholesky", Preconditioner::kCholesky}};
  return names;
}

// penalty.box_relaxation: whether boxes relax against their triangle mesh (PenaltyContactOptions::box_as_mesh).
const ChoiceTable<bool>& BoxRelaxationNames() {
  static const ChoiceTable<bool> names = {{"level_set", false}, {"mesh", true}};
  return names;
}

}  // namespace

std::vector<ParameterSpec> PenaltyOptions::Specs() {
  const PenaltyOptions defaults;
  return {
      AutoParameter(
          "penalty.stiffness", 0.0, "N/m",
          "Spring stiffness k of MPM-particle contacts ([ding_schroeder_penalty] sets an absolute k per experiment). "
          "auto: the stiffer of m_p (2 pi/dt)^2, a spring of period dt on the particle mass, and rho c^2 V_p^(1/3), "
          "the particle's material over its own size (c its wave speed). A number sets k for every pair. Either way "
          "a pair keeps its k from creation to removal, so that no pair in contact gains energy from a change of k.",
          Positive()),
      AutoParameter("penalty.rigid_stiffness", 0.0, "N/m",
                    "Spring stiffness k of rigid-surface-sample contacts ([ding_schroeder_penalty] uses a separate k "
                    "per contact kind). "
                    "auto: the stiffer of m_s (2 pi/dt)^2, m_s = M/N the sample's share of its body mass, and rho c^2 "
                    "times the sample spacing for the stiffest material of the scene.",
                    Positive()),
      {"penalty.newton_tolerance", defaults.newton_tolerance, "1",
       "Newton stops when the mass-weighted residual falls below this fraction of sqrt(total mass) times the per-step "
       "gravity velocity change (spec A2, relative form).",
       Positive()},
      {"penalty.max_newton_iterations", std::int64_t{defaults.newton.max_iterations}, "1",
       "Newton iterations per step before the step is kept unconverged ([ding_schroeder_penalty]: 1000, never "
       "reached).",
       Positive()},
      {"penalty.gmres_iterations", std::int64_t{defaults.newton.gmres_iterations}, "1",
       "GMRES iterations in its single cycle per Newton iteration ([ding_schroeder_penalty] §5: at most 20).",
       Positive()},
      {"penalty.gmres_tolerance", defaults.newton.gmres_relative_tolerance, "1",
       "GMRES stops when the linear residual drops below this fraction of the Newton residual (inexact Newton, spec "
       "A4).",
       InHalfOpenRange(1.0e-16, 1.0)},
      {"penalty.preconditioner", std::string("auto"), "",
       "Right preconditioner of GMRES: cholesky (CHOLMOD's factor of the symmetric part S of the mass-weighted "
       "Jacobian; where S is not positive definite, S + sigma diag|S| for sigma = 0.01, 0.1, 1, then sparse_lu), "
       "block_jacobi (3x3 per grid node, one block per rigid body), incomplete_lu (Eigen IncompleteLUT of H), "
       "sparse_lu (UMFPACK's LU of H: exact "
       "Newton directions) or none. auto: cholesky ([ding_schroeder_penalty] names no preconditioner).",
       OneOf(ChoiceNames(PreconditionerNames()))},
      {"penalty.box_relaxation", std::string("level_set"), "",
       "Relax attachments on boxes against their signed distance (level_set, spec 2.4) or their 12-triangle surface "
       "mesh with the 4-state machine (mesh, spec 2.5).",
       OneOf(ChoiceNames(BoxRelaxationNames()))},
      AutoParameter("penalty.edge_radius", 0.0, "m",
                    "Radius by which the relaxation rounds the edges of boxes and cylinders, so that the closest "
                    "surface point of a particle less than this deep moves continuously across the medial plane "
                    "between two faces. auto: h/4. 0 keeps the edges sharp. Boxes relaxed as meshes stay sharp.",
                    NonNegative()),
      {"penalty.sample_spacing", defaults.sample_spacing, "m",
       "Spacing of the surface samples that act as a rigid body's contact particles; 0 uses half the grid spacing.",
       NonNegative()},
      dynamics::PlasticityTimingSpec("penalty.plasticity"),
  };
}

PenaltyOptions PenaltyOptions::FromParameters(const ParameterSet& parameters) {
  PenaltyOptions options;
  options.contact.particle_stiffness = parameters.GetOptionalDouble("penalty.stiffness").value_or(0.0);
  options.contact.rigid_stiffness = parameters.GetOptionalDouble("penalty.rigid_stiffness").value_or(0.0);
  options.contact.box_as_mesh = GetChoice(parameters, "penalty.box_relaxation", BoxRelaxationNames());
  options.contact.edge_radius = parameters.GetOptionalDouble("penalty.edge_radius").value_or(-1.0);
  options.newton_tolerance = parameters.GetDouble("penalty.newton_tolerance");
  options.newton.max_iterations = parameters.GetIntAs<int>("penalty.max_newton_iterations");
  options.newton.gmres_iterations = parameters.GetIntAs<int>("penalty.gmres_iterations");
  options.newton.gmres_relative_tolerance = parameters.GetDouble("penalty.gmres_tolerance");
  options.newton.preconditioner = GetChoice(parameters, "penalty.preconditioner", PreconditionerNames());
  options.sample_spacing = parameters.GetDouble("penalty.sample_spacing");
  options.plasticity = GetChoice(parameters, "penalty.plasticity", dynamics::PlasticityTimingNames());
  if (const std::string problem = options.newton.Validate(); !problem.empty()) {
    throw InputError("penalty: " + problem);
  }
  return options;
}

PenaltyFormulation::PenaltyFormulation(PenaltyOptions options)
    : options_(std::move(options)),
      used_preconditioner_(
          "penalty.preconditioner", ChoiceNames(PreconditionerNames()), "Newton directions",
          "auto: cholesky (shifted, or sparse_lu, in a direction whose symmetric part is not positive definite)") {}

void PenaltyFormulation::BuildRigidSamples(const World& world) {
  samples_.clear();
  const double spacing = options_.sample_spacing > 0.0 ? options_.sample_spacing : 0.5 * world.grid_spacing;
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (!body.has_finite_mass()) continue;  // static and kinematic bodies are only touched
    for (const rigid::Geometry& geometry : body.geometries) {
      if (!geometry.shape.IsBounded()) continue;
      for (const rigid::SurfaceSample& sample : geometry.shape.SampleSurface(spacing)) {
        samples_.push_back({b, geometry.pose_in_body.TransformPoint(sample.position), 0.0, spacing});
      }
    }
  }
  // Each sample carries an equal share of its body's mass (for the derived stiffness).
  std::vector<int> count(world.bodies.size(), 0);
  for (const RigidSample& sample : samples_) ++count[sample.body];
  for (RigidSample& sample : samples_) sample.mass = world.bodies[sample.body].mass / count[sample.body];
  samples_built_ = true;
}

namespace {
constexpr int kBoxMeshTriangles = 12;  // TriangleMesh::Box, the only mesh pairs attach to
}  // namespace

void PenaltyFormulation::VisitState(StateArchive& archive, const World& world) {
  attachments_.VisitState(archive);
  used_stiffness_.VisitState(archive);
  used_rigid_stiffness_.VisitState(archive);
  used_edge_radius_.VisitState(archive);
  used_plasticity_.VisitState(archive);
  used_preconditioner_.VisitState(archive);
  if (archive.saving()) return;
  // Every pair must name a particle or sample and a geometry that exist.
  if (!samples_built_) BuildRigidSamples(world);
  for (const ContactPair& pair : attachments_.pairs()) {
    const std::size_t particles = pair.particle_kind == ParticleKind::kMpm ? world.particles.size() : samples_.size();
    const bool body_exists = pair.body >= 0 && pair.body < static_cast<int>(world.bodies.size());
    if (pair.particle < 0 || static_cast<std::size_t>(pair.particle) >= particles || !body_exists ||
        pair.geometry < 0 || pair.geometry >= static_cast<int>(world.bodies[pair.body].geometries.size()) ||
        !(pair.stiffness > 0.0) || pair.mesh_attachment.triangle < -1 ||
        pair.mesh_attachment.triangle >= kBoxMeshTriangles) {
      archive.Fail("attachments/particle", "names a particle, body or geometry this world lacks");
    }
  }
}

std::vector<UsedParameter> PenaltyFormulation::UsedParameters() const {
  std::vector<UsedParameter> used;
  if (options_.contact.particle_stiffness == 0.0 && used_stiffness_.observed()) used.push_back(used_stiffness_.used());
  if (options_.contact.rigid_stiffness == 0.0 && used_rigid_stiffness_.observed()) {
    used.push_back(used_rigid_stiffness_.used());
  }
  if (used_plasticity_.observed()) used.push_back(used_plasticity_.used());
  if (options_.contact.edge_radius < 0.0 && used_edge_radius_.observed()) used.push_back(used_edge_radius_.used());
  if (options_.newton.preconditioner == Preconditioner::kAuto && used_preconditioner_.observed()) {
    used.push_back(used_preconditioner_.used());
  }
  return used;
}

StepReport PenaltyFormulation::AdvanceState(World& world, double dt) {
  StepReport report;
  statistics_ = PenaltyStepStatistics{};
  if (!samples_built_) BuildRigidSamples(world);
  statistics_.rigid_samples = static_cast<int>(samples_.size());
  mpm::Particles& particles = world.particles;
  if (grid_.spacing() != world.grid_spacing) grid_ = mpm::SparseGrid(world.grid_spacing);

  // 1–2. P2G (mass and momentum), the implicit MPM energy of the step, rigid free motion.
  auto start = Clock::now();
  mpm::ParticleToGrid(particles, world.materials, /*stress_dt=*/0.0, grid_);
  implicit_mpm_.set_plasticity_timing(options_.plasticity);
  implicit_mpm_.Setup(grid_, particles, world.materials, world.gravity, dt);
  if (const auto timing = implicit_mpm_.plasticity_timing_used()) used_plasticity_.Observe(static_cast<int>(*timing));
  report.grid_boundary_nodes = implicit_mpm_.ConstrainGridBoundary(grid_, world.bodies);
  rigid_dofs_.Setup(world, dt);
  report.timings.free_motion = SecondsSince(start);
  if (options_.contact.edge_radius < 0.0) used_edge_radius_.Observe(DerivedEdgeRadius(world.grid_spacing));

  // 3. Stabilized Newton on the weighted backward Euler residual (spec §2.10).
  start = Clock::now();
  PenaltyStepSystem system(world, dt, grid_, implicit_mpm_, rigid_dofs_, samples_, options_.contact, attachments_);
  Eigen::VectorXd x = system.InitialGuess();
  StabilizedNewtonOptions newton = options_.newton;
  const double scale = system.ResidualScale();
  newton.residual_tolerance = options_.newton_tolerance * scale;
  // A stationary point of E that is not a solution: ‖H̃ᵀg̃‖ a thousand times below what the
  // mass part alone would give at the residual tolerance (H̃ ≈ D^(1/2) for light contact).
  double smallest_weight = std::numeric_limits<double>::infinity();
  for (int node = 0; node < implicit_mpm_.num_active_nodes(); ++node) {
    smallest_weight = std::min(smallest_weight, implicit_mpm_.node_masses()[node]);
  }
  for (int k = 0; k < rigid_dofs_.size(); ++k) {
    smallest_weight = std::min(smallest_weight, rigid_dofs_.dynamics_matrix()(k, k));
  }
  if (!std::isfinite(smallest_weight)) smallest_weight = 1.0;
  newton.stationarity_tolerance = 1.0e-3 * newton.residual_tolerance * std::sqrt(smallest_weight);
  statistics_.newton = SolveStabilizedNewton(system, newton, x);
  statistics_.newton.summary.momentum_residual_bound =
      std::sqrt(system.WeightSum()) * statistics_.newton.final_residual_norm;
  const StabilizedNewtonResults& newton_results = statistics_.newton;
  for (int kind = 0; kind < kPreconditionerCount; ++kind) {
    used_preconditioner_.Observe(kind, newton_results.directions_by_preconditioner[kind]);
  }
  if (newton_results.summary.termination == solvers::Termination::kNumericalFailure || !x.allFinite()) {
    throw SimulationDiverged("penalty: the Newton iterate became non-finite at t = " + std::to_string(world.time) +
                             " s (" + newton_results.BriefReport() + ")");
  }
  // The pair forces of the accepted iterate (the last evaluation may have been a rejected
  // line-search trial).
  Eigen::VectorXd residual;
  system.Evaluate(x, &residual, nullptr);
  report.timings.solve = SecondsSince(start);

  // 4a. Rigid bodies take the solved velocities: Advance applies v = u* + A⁻¹ (A (u − u*)).
  start = Clock::now();
  const Eigen::VectorXd rigid_velocity = x.tail(rigid_dofs_.size());
  const Eigen::VectorXd rigid_impulse =
      rigid_dofs_.dynamics_matrix() * (rigid_velocity - rigid_dofs_.free_motion_velocity());
  rigid_dofs_.Advance(world, dt, rigid_impulse);
  report.timings.rigid = SecondsSince(start);

  // 4b. G2P with the solved grid velocities (after the grid walls' friction), then
  //     plasticity and R0.
  start = Clock::now();
  Eigen::VectorXd grid_velocity = x.head(implicit_mpm_.num_dofs());
  // A wall's reaction on the components it fixes: ∇E there less the contact forces the
  // residual left to it.
  std::vector<contact::WallImpulse> wall_impulses =
      implicit_mpm_.FinishGridBoundary(grid_velocity, world.bodies, nullptr, &system.grid_contact_impulses());
  std::fill(grid_.velocity.begin(), grid_.velocity.end(), Vector3::Zero());
  const std::vector<int>& active_nodes = implicit_mpm_.active_nodes();
  for (int node = 0; node < implicit_mpm_.num_active_nodes(); ++node) {
    grid_.velocity[active_nodes[node]] = grid_velocity.segment<3>(3 * node);
  }
  mpm::GridToParticle(grid_, dt, particles);
  dynamics::RecordClothPinForces(world, 1.0, report);  // the solved state's, before the return mapping
  mpm::UpdateConstitutiveState(world.materials, particles);
  // Particles that drifted into a grid wall go back to its surface.
  if (contact::HasGridBoundary(world.bodies)) {
    contact::ProjectParticlesOutOfGridWalls(world.bodies, particles, wall_impulses);
  }
  report.timings.g2p = SecondsSince(start);

  // 5. Report every pushing pair, then commit its relaxed attachment; drop the others
  //    (spec §2.12).
  const std::vector<PairForce>& forces = system.pair_forces();
  const int pair_count = attachments_.size();
  report.contact_wrench = ZeroWrenches(world);
  std::vector<bool> keep(pair_count);
  std::vector<Vector3> relaxed(pair_count);
  std::vector<MeshPoint> relaxed_mesh(pair_count);
  for (int k = 0; k < pair_count; ++k) {
    const ContactPair& pair = attachments_.pair(k);
    const PairForce& force = forces[k];
    keep[k] = force.active;
    relaxed[k] = force.relaxed_local;
    relaxed_mesh[k] = force.relaxed_mesh_point;
    if (!force.active) continue;
    (pair.particle_kind == ParticleKind::kMpm ? used_stiffness_ : used_rigid_stiffness_).Observe(pair.stiffness);
    ++statistics_.active_pairs;
    if (force.sliding) ++statistics_.sliding_pairs;
    const rigid::Geometry& geometry = world.bodies[pair.body].geometries[pair.geometry];
    ContactForce record{pair.body,    pair.geometry, force.relaxed_point,
                        force.normal, force.force,   geometry.friction_coefficient};
    // The touched body receives −f at Y; a rigid sample's body receives f at Z.
    BodyWrench& touched = report.contact_wrench[pair.body];
    touched.force -= force.force;
    touched.torque -= (force.relaxed_point - world.bodies[pair.body].pose.position).cross(force.force);
    if (pair.particle_kind == ParticleKind::kRigidSample) {
      const int owner = samples_[pair.particle].body;
      record.other_body = owner;
      record.other_point = force.particle_position;
      BodyWrench& sampled = report.contact_wrench[owner];
      sampled.force += force.force;
      sampled.torque += (force.particle_position - world.bodies[owner].pose.position).cross(force.force);
    }
    report.contact_forces.push_back(record);
  }
  dynamics::RecordWallImpulses(wall_impulses, dt, report);
  statistics_.pairs = pair_count;
  statistics_.pairs_created = system.pairs_created();
  attachments_.CommitAndPrune(keep, relaxed, relaxed_mesh);

  // Report.
  report.contacts = statistics_.active_pairs;
  RecordSolve(report, SolveKind::kContact, 0, "stabilized_newton", newton_results.summary);
  start = Clock::now();
  report.max_penetration = contact::MaxPenetration(particles, world.bodies);
  report.timings.detection = SecondsSince(start);
  return report;
}

namespace {
std::unique_ptr<Formulation> MakePenalty(const ParameterSet& parameters) {
  return std::make_unique<PenaltyFormulation>(PenaltyOptions::FromParameters(parameters));
}
}  // namespace

FormulationInfo PenaltyInfo() {
  return FormulationInfo{
      "penalty",
      "implicit MPM and rigid bodies with penalty springs to relaxing attachments, stabilized Newton "
      "with GMRES ([ding_schroeder_penalty])",
      PenaltyOptions::Specs(), &MakePenalty};
}

}  // namespace contactlab::penalty
