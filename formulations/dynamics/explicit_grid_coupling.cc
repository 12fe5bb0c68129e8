#include "formulations/dynamics/explicit_grid_coupling.h"

#include "formulations/dynamics/step_bookkeeping.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "formulations/contact/coulomb_collision.h"
#include "formulations/contact/geometry_query.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/explicit_stability.h"
#include "formulations/phase_clock.h"
#include "mpm/transfers.h"

namespace contactlab::dynamics {
namespace {

using mpm::Vector3;

// Fixed-size chunks for reductions over nodes: the summation order, and therefore the
// result, does not depend on the number of threads.
constexpr int kReductionChunk = 4096;

}  // namespace

std::vector<ParameterSpec> ExplicitCouplingOptions::Specs(const std::string& prefix) {
  const ExplicitCouplingOptions defaults;
  std::vector<ParameterSpec> specs = {
      {prefix + ".cfl", defaults.cfl, "1",
       "Explicit substep as a fraction of h/(c + v_max): elastic-wave and particle-speed limit.",
       InClosedRange(1e-6, 1.0)},
      {prefix + ".max_substeps", std::int64_t{defaults.max_substeps}, "1",
       "Substeps allowed per step before the run is declared diverged.", Positive()},
  };
  // contact.*: SAP's cone in the convex rigid step (rigid-rigid contact only).
  for (ParameterSpec& spec : contact::ContactModelParameters::SapConeSpecs()) specs.push_back(std::move(spec));
  return specs;
}

ExplicitCouplingOptions ExplicitCouplingOptions::FromParameters(const ParameterSet& parameters,
                                                                const std::string& prefix) {
  ExplicitCouplingOptions options;
  options.cfl = parameters.GetDouble(prefix + ".cfl");
  options.max_substeps = parameters.GetIntAs<int>(prefix + ".max_substeps");
  options.contact = contact::ContactModelParameters::SapConeFromParameters(parameters);
  return options;
}

ExplicitGridCoupling::ExplicitGridCoupling(ExplicitCouplingOptions options)
    : options_(std::move(options)), contact_model_(contact::MakeContactModel(options_.contact)) {}

void ExplicitGridCoupling::ProjectNodesInsideBodies(const World& world, const std::vector<PredictedMotion>& predicted,
                                                    const std::vector<int>& bodies,
                                                    std::vector<BodyImpulse>& impulses) {
  if (bodies.empty()) return;
  const auto boxes = contact::GeometryBoundingBoxes(world.bodies, 0.0);
  const int node_count = grid_.num_nodes();
  const int body_count = static_cast<int>(world.bodies.size());
  const int chunk_count = (node_count + kReductionChunk - 1) / kReductionChunk;
  std::vector<std::vector<BodyImpulse>> chunk_impulses(chunk_count, std::vector<BodyImpulse>(body_count));
#pragma omp parallel for schedule(dynamic)
  for (int chunk = 0; chunk < chunk_count; ++chunk) {
    const int end = std::min(node_count, (chunk + 1) * kReductionChunk);
    for (int node = chunk * kReductionChunk; node < end; ++node) {
      const double node_mass = grid_.mass[node];
      if (node_mass <= 0.0) continue;
      const Vector3 node_position = grid_.NodePosition(node);
      for (const int b : bodies) {
        const rigid::RigidBody& body = world.bodies[b];
        for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
          if (!boxes[b][g].contains(node_position)) continue;
          const contact::GeometryQuery query = contact::QueryGeometry(body, g, node_position);
          if (query.signed_distance > 0.0) continue;
          // Infinite mass on the rigid side: the reduced mass is the node mass.
          const contact::CoulombCollisionResult collision = contact::ResolveCoulombCollision(
              predicted[b].PointVelocity(body.pose.position, node_position), grid_.velocity[node], query.normal,
              node_mass, body.geometries[g].friction_coefficient, options_.restitution);
          if (!collision.approaching) continue;
          grid_.velocity[node] += collision.impulse_on_second / node_mass;
          BodyImpulse& impulse = chunk_impulses[chunk][b];
          impulse.linear -= collision.impulse_on_second;
          impulse.angular += (node_position - body.pose.position).cross(-collision.impulse_on_second);
        }
      }
    }
  }
  for (int chunk = 0; chunk < chunk_count; ++chunk) {
    for (int b = 0; b < body_count; ++b) {
      impulses[b].linear += chunk_impulses[chunk][b].linear;
      impulses[b].angular += chunk_impulses[chunk][b].angular;
    }
  }
}

void ExplicitGridCoupling::ApplyInfiniteMassBoundaries(const World& world,
                                                       const std::vector<PredictedMotion>& predicted,
                                                       const std::vector<contact::GridBoundaryNode>& wall_nodes,
                                                       std::vector<BodyImpulse>& impulses) {
  const int body_count = static_cast<int>(world.bodies.size());
  std::vector<int> projected_bodies;
  for (int b = 0; b < body_count; ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (!body.is_grid_boundary() && !ExchangesThroughOwnPath(body)) projected_bodies.push_back(b);
  }
  ProjectNodesInsideBodies(world, predicted, projected_bodies, impulses);

  // Bodies chosen as grid boundaries (contact/grid_boundary.h): sticky, slip or separating
  // walls on the nodes inside them. A separating wall is the Coulomb condition above.
  if (wall_nodes.empty()) return;
  std::vector<contact::WallImpulse> wall_impulses(body_count);
  contact::ApplyGridBoundary(wall_nodes, world.bodies, grid_, wall_impulses);
  for (int b = 0; b < body_count; ++b) {
    impulses[b].linear += wall_impulses[b].linear;
    impulses[b].angular += wall_impulses[b].angular;
  }
  grid_boundary_nodes_ = std::max(grid_boundary_nodes_, static_cast<int>(wall_nodes.size()));
}

std::vector<ExplicitGridCoupling::PredictedMotion> ExplicitGridCoupling::PredictRigidMotion(const World& world) const {
  // The rigid predictor (spec-penalty-hybrid §3.6 step 1) is the free motion v* of the shared
  // integrator (RigidDofs, set up for this substep): gravity, applied loads and the
  // gyroscopic term for free bodies; the tree's linearized step (implicit PD) mapped to each
  // link, plus the motion of prescribed joints.
  std::vector<PredictedMotion> motions(world.bodies.size());
  const Eigen::VectorXd& free_motion = rigid_dofs_.free_motion_velocity();
  const rigid::MultibodyTree& tree = world.multibody;
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    PredictedMotion& motion = motions[b];
    if (body.motion == rigid::BodyMotion::kKinematic) {  // its prescribed velocity at the substep's start
      motion.linear = body.linear_velocity;
      motion.angular = body.angular_velocity;
      continue;
    }
    if (!rigid_dofs_.HasDofs(static_cast<int>(b))) continue;
    int first = -1;
    rigid_dofs_.PointJacobian(world, static_cast<int>(b), body.pose.position, &first);
    if (body.is_free()) {
      motion.linear = free_motion.segment<3>(first);
      motion.angular = free_motion.segment<3>(first + 3);
    } else if (body.tree_link >= 0) {
      const rigid::SpatialJacobian jacobian = tree.LinkJacobian(body.tree_link);
      const rigid::SpatialVector prescribed = tree.link_spatial_velocity(body.tree_link) - jacobian * tree.velocities();
      const rigid::SpatialVector predicted = jacobian * free_motion.segment(first, tree.num_velocities()) + prescribed;
      motion.angular = predicted.head<3>();
      motion.linear = predicted.tail<3>();
    }
  }
  return motions;
}

void ExplicitGridCoupling::Substep(World& world, double dt, double step_dt, std::vector<BodyImpulse>& impulses,
                                   StepReport& rigid_report, Timings& timings) {
  mpm::Particles& particles = world.particles;
  std::vector<BodyImpulse> substep_impulses(world.bodies.size());

  // 1. APIC momentum with the explicit MLS stress impulse, gravity.
  auto start = Clock::now();
  RecordClothPinForces(world, dt / step_dt, rigid_report);  // the forces this substep applies
  mpm::ParticleToGrid(particles, world.materials, dt, grid_);
  mpm::ComputeGridVelocity(world.gravity, dt, grid_);
  timings.free_motion += SecondsSince(start);

  // 2.–4. The rigid predictor; walls and the infinite-mass projection; the formulation's
  // exchange; walls and projection again.
  start = Clock::now();
  rigid_dofs_.Setup(world, dt);
  const std::vector<PredictedMotion> predicted = PredictRigidMotion(world);
  // The grid-boundary nodes depend only on the grid and the static walls: found once.
  const std::vector<contact::GridBoundaryNode> wall_nodes = contact::HasGridBoundary(world.bodies)
                                                                ? contact::FindGridBoundaryNodes(grid_, world.bodies)
                                                                : std::vector<contact::GridBoundaryNode>{};
  ApplyInfiniteMassBoundaries(world, predicted, wall_nodes, substep_impulses);
  ExchangeWithBodies(world, predicted, substep_impulses);
  ApplyInfiniteMassBoundaries(world, predicted, wall_nodes, substep_impulses);
  timings.solve += SecondsSince(start);

  // 5. Back to the particles, deformation update, plasticity.
  start = Clock::now();
  mpm::GridToParticle(grid_, dt, particles);
  mpm::UpdateConstitutiveState(world.materials, particles);
  if (!wall_nodes.empty()) {  // particles that drifted into a grid wall go back to its surface
    std::vector<contact::WallImpulse> wall_impulses(world.bodies.size());
    contact::ProjectParticlesOutOfGridWalls(world.bodies, particles, wall_impulses);
    for (std::size_t b = 0; b < world.bodies.size(); ++b) {
      substep_impulses[b].linear += wall_impulses[b].linear;
      substep_impulses[b].angular += wall_impulses[b].angular;
    }
  }
  timings.g2p += SecondsSince(start);

  // 6. The bodies.
  start = Clock::now();
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    impulses[b].linear += substep_impulses[b].linear;
    impulses[b].angular += substep_impulses[b].angular;
  }
  AdvanceRigidBodies(world, dt, step_dt, substep_impulses, rigid_report);
  world.time += dt;  // the substep's end, for the next substep's prescribed motion
  timings.rigid += SecondsSince(start);
}

void ExplicitGridCoupling::AdvanceRigidBodies(World& world, double dt, double step_dt,
                                              const std::vector<BodyImpulse>& impulses, StepReport& rigid_report) {
  // The MPM impulses as a generalized impulse p on the rigid unknowns: a free body's
  // [linear; angular about the centre of mass], a link's spatial impulse [angular; linear]
  // through its Jacobian.
  Eigen::VectorXd generalized_impulse = Eigen::VectorXd::Zero(rigid_dofs_.size());
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (!rigid_dofs_.HasDofs(static_cast<int>(b))) continue;
    int first = -1;
    rigid_dofs_.PointJacobian(world, static_cast<int>(b), body.pose.position, &first);
    if (body.is_free()) {
      generalized_impulse.segment<3>(first) += impulses[b].linear;
      generalized_impulse.segment<3>(first + 3) += impulses[b].angular;
    } else if (body.tree_link >= 0) {
      rigid::SpatialVector spatial_impulse;
      spatial_impulse << impulses[b].angular, impulses[b].linear;
      generalized_impulse.segment(first, world.multibody.num_velocities()) +=
          world.multibody.LinkJacobian(body.tree_link).transpose() * spatial_impulse;
    }
  }
  // Rigid–rigid contact: the convex rigid step with p as external load (no contacts: v* + A⁻¹ p).
  rigid_contacts_.Detect(world, rigid_dofs_, *contact_model_, RigidContactMargin(world, rigid_dofs_, dt), dt);
  const RigidContactStepResult rigid_step =
      SolveRigidContactStep(rigid_dofs_, rigid_contacts_, generalized_impulse, *contact_model_, options_.rigid_solver);
  if (!rigid_step.contact_impulse.allFinite()) {
    throw SimulationDiverged(std::string(name()) + ": rigid contact solve failed (" +
                             rigid_step.solver.summary.message + ") at t = " + std::to_string(world.time) + " s");
  }
  rigid_contacts_.Record(world, rigid_step.impulses, step_dt, rigid_report);
  rigid_report.rigid_contacts = std::max(rigid_report.rigid_contacts, rigid_contacts_.size());
  if (!rigid_contacts_.empty()) {
    RecordSolve(rigid_report, SolveKind::kRigidStep, rigid_report.substeps, "sap", rigid_step.solver.summary);
  }
  ++rigid_report.substeps;
  rigid_dofs_.Advance(world, dt, generalized_impulse + rigid_step.contact_impulse);
}

StepReport ExplicitGridCoupling::AdvanceState(World& world, double dt) {
  if (!prepared_) {
    grid_ = mpm::SparseGrid(world.grid_spacing);
    Prepare(world);
    prepared_ = true;
  }
  StepReport report;
  StepReport rigid_report;  // the rigid step's loads, contact forces and counts, over the substeps
  rigid_report.contact_wrench = ZeroWrenches(world);
  rigid_report.substeps = 0;  // counts the substeps, to number their rigid solves
  std::vector<BodyImpulse> impulses(world.bodies.size());
  grid_boundary_nodes_ = 0;

  // Equal substeps no longer than the current stability limit.
  double remaining = dt;
  int substeps = 0;
  while (remaining > 1e-12 * dt) {
    // A substep can leave a non-finite state (an overflow in P2G, a degenerate body) that the
    // next one would scatter: checked before each, not only at the end of the step.
    if (const std::string bad_state = FindNonFiniteState(world); !bad_state.empty()) {
      throw SimulationDiverged(std::string(name()) + ": at t = " + std::to_string(world.time) + " s, substep " +
                               std::to_string(substeps + 1) + ": " + bad_state);
    }
    const double stable = std::min(StableExplicitSubstep(world, options_.cfl), remaining);
    if (!std::isfinite(stable) || stable <= 0.0) {
      throw SimulationDiverged(std::string(name()) +
                               ": non-finite particle or body velocity at t = " + std::to_string(world.time) + " s");
    }
    const double pieces = std::ceil(remaining / stable);
    if (substeps + pieces > options_.max_substeps) {
      std::ostringstream message;
      message << name() << ": step needs more than " << name() << ".max_substeps = " << options_.max_substeps
              << " substeps at t = " << world.time << " s (stable substep " << stable << " s)";
      throw SimulationDiverged(message.str());
    }
    const double substep = remaining / pieces;
    Substep(world, substep, dt, impulses, rigid_report, report.timings);
    remaining -= substep;
    ++substeps;
  }
  report.substeps = substeps;

  // Contact loads as step averages (MPM impulses, then the rigid step's), and particle
  // contact points for the report.
  report.contact_wrench = ZeroWrenches(world);
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    report.contact_wrench[b].force = impulses[b].linear / dt + rigid_report.contact_wrench[b].force;
    report.contact_wrench[b].torque = impulses[b].angular / dt + rigid_report.contact_wrench[b].torque;
  }
  // No per-contact records: the grid exchange has no contact points, and a list of the rigid
  // ones alone would not sum to the wrenches.
  report.pin_forces = std::move(rigid_report.pin_forces);
  report.rigid_contacts = rigid_report.rigid_contacts;
  report.outer_iterations = rigid_report.outer_iterations;
  report.linear_iterations = rigid_report.linear_iterations;
  report.residual = rigid_report.residual;
  report.converged = rigid_report.converged;
  report.solves = std::move(rigid_report.solves);
  const auto start = Clock::now();
  const std::vector<contact::ParticleContact> contacts = contact::DetectParticleContacts(world.particles, world.bodies);
  report.contacts = static_cast<int>(contacts.size());
  report.max_penetration = contact::MaxPenetration(world.particles, world.bodies);  // grid walls included
  report.grid_boundary_nodes = grid_boundary_nodes_;
  report.timings.detection += SecondsSince(start);
  return report;
}

}  // namespace contactlab::dynamics
