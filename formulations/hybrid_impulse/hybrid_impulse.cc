#include "formulations/hybrid_impulse/hybrid_impulse.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "formulations/contact/coulomb_collision.h"
#include "formulations/contact/geometry_query.h"
#include "formulations/contact/grid_boundary.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/explicit_stability.h"
#include "formulations/phase_clock.h"
#include "mpm/bspline.h"
#include "mpm/transfers.h"

namespace contactlab::hybrid_impulse {
namespace {

// Bodies whose contact with the material goes through their surface samples on grid 1: those
// of finite mass (free bodies, links) and kinematic ones (infinite mass).
bool ExchangesThroughSamples(const rigid::RigidBody& body) {
  return body.has_finite_mass() || body.motion == rigid::BodyMotion::kKinematic;
}

using mpm::Matrix3;
using mpm::Vector3;

// Fixed-size chunks for reductions over nodes: the summation order, and therefore the
// result, does not depend on the number of threads.
constexpr int kReductionChunk = 4096;

}  // namespace

const ChoiceTable<RigidFeedback>& RigidFeedbackNames() {
  static const ChoiceTable<RigidFeedback> names = {{"node_impulse", RigidFeedback::kNodeImpulse},
                                                   {"per_sample", RigidFeedback::kPerSample}};
  return names;
}

const ChoiceTable<NodeNormal>& NodeNormalNames() {
  static const ChoiceTable<NodeNormal> names = {{"samples", NodeNormal::kSamples}, {"geometry", NodeNormal::kGeometry}};
  return names;
}

const ChoiceTable<RigidNodeMass>& RigidNodeMassNames() {
  static const ChoiceTable<RigidNodeMass> names = {{"samples", RigidNodeMass::kSamples},
                                                   {"effective", RigidNodeMass::kEffective}};
  return names;
}

std::vector<ParameterSpec> HybridImpulseOptions::Specs() {
  const HybridImpulseOptions defaults;
  std::vector<ParameterSpec> specs = {
      {"hybrid_impulse.cfl", defaults.cfl, "1",
       "Explicit substep as a fraction of h/(c + v_max): elastic-wave and particle-speed limit.",
       InClosedRange(1e-6, 1.0)},
      {"hybrid_impulse.restitution", defaults.restitution, "1",
       "Restitution e of the node collisions; 0 (inelastic) as for rigid bodies in the thesis.",
       InClosedRange(0.0, 1.0)},
      {"hybrid_impulse.sample_spacing", defaults.sample_spacing, "1",
       "Spacing of free-body surface samples relative to h; 0.5 gives about four per cell face.", Positive()},
      {"hybrid_impulse.rigid_feedback", ChoiceName(defaults.rigid_feedback, RigidFeedbackNames()), "",
       "node_impulse: exact opposite impulse on the body (momentum conserved to round-off); per_sample: thesis eq. "
       "6.25-6.29 filter, which rejects cohesive pulls but does not conserve momentum.",
       OneOf(ChoiceNames(RigidFeedbackNames()))},
      {"hybrid_impulse.node_normal", ChoiceName(defaults.node_normal, NodeNormalNames()), "",
       "samples: weighted sample normals (thesis eq. 6.33); geometry: nearest geometry's outward normal.",
       OneOf(ChoiceNames(NodeNormalNames()))},
      {"hybrid_impulse.rigid_node_mass", ChoiceName(defaults.rigid_node_mass, RigidNodeMassNames()), "",
       "samples: grid-1 node mass from the samples (thesis); effective: the body's effective mass at the node.",
       OneOf(ChoiceNames(RigidNodeMassNames()))},
      {"hybrid_impulse.max_substeps", std::int64_t{defaults.max_substeps}, "1",
       "Substeps allowed per step before the run is declared diverged.", Positive()},
  };
  // contact.*: SAP's cone in the convex rigid step (rigid-rigid contact only).
  for (ParameterSpec& spec : contact::ContactModelParameters::SapConeSpecs()) specs.push_back(std::move(spec));
  return specs;
}

HybridImpulseOptions HybridImpulseOptions::FromParameters(const ParameterSet& parameters) {
  HybridImpulseOptions options;
  options.cfl = parameters.GetDouble("hybrid_impulse.cfl");
  options.restitution = parameters.GetDouble("hybrid_impulse.restitution");
  options.sample_spacing = parameters.GetDouble("hybrid_impulse.sample_spacing");
  options.rigid_feedback = GetChoice(parameters, "hybrid_impulse.rigid_feedback", RigidFeedbackNames());
  options.node_normal = GetChoice(parameters, "hybrid_impulse.node_normal", NodeNormalNames());
  options.rigid_node_mass = GetChoice(parameters, "hybrid_impulse.rigid_node_mass", RigidNodeMassNames());
  options.max_substeps = static_cast<int>(parameters.GetInt("hybrid_impulse.max_substeps"));
  options.contact = contact::ContactModelParameters::SapConeFromParameters(parameters);
  return options;
}

HybridImpulseFormulation::HybridImpulseFormulation(HybridImpulseOptions options)
    : options_(std::move(options)), contact_model_(contact::MakeContactModel(options_.contact)) {}

void HybridImpulseFormulation::PrepareCollisionSamples(const World& world) {
  grid_ = mpm::SparseGrid(world.grid_spacing);
  samples_.assign(world.bodies.size(), CollisionSamples{});
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    if (!ExchangesThroughSamples(body)) continue;
    CollisionSamples& samples = samples_[b];
    for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
      const rigid::Geometry& geometry = body.geometries[g];
      for (const rigid::SurfaceSample& sample :
           geometry.shape.SampleSurface(options_.sample_spacing * world.grid_spacing)) {
        const Vector3 position = geometry.pose_in_body.TransformPoint(sample.position);
        // Skip samples buried inside another geometry of the same body (internal faces).
        bool buried = false;
        for (int other = 0; other < static_cast<int>(body.geometries.size()) && !buried; ++other) {
          if (other == g) continue;
          const rigid::Geometry& neighbor = body.geometries[other];
          buried = neighbor.shape.SignedDistance(neighbor.pose_in_body.InverseTransformPoint(position)) < 0.0;
        }
        if (buried) continue;
        samples.position_in_body.push_back(position);
        samples.normal_in_body.push_back(geometry.pose_in_body.orientation * sample.outward_normal);
        samples.friction_coefficient.push_back(geometry.friction_coefficient);
      }
    }
    if (samples.position_in_body.empty()) {
      throw InputError("hybrid_impulse: body '" + body.name + "' has no surface samples");
    }
    // Each collision particle carries an equal share of the body mass (thesis §6.2). A
    // kinematic body's mass is infinite; its samples' unit weights only average the normals
    // and friction coefficients on the nodes.
    samples.sample_mass =
        body.has_finite_mass() ? body.mass / static_cast<double>(samples.position_in_body.size()) : 1.0;
  }
  samples_ready_ = true;
}

void HybridImpulseFormulation::ApplyInfiniteMassBoundaries(const World& world,
                                                           const std::vector<contact::GridBoundaryNode>& wall_nodes,
                                                           std::vector<BodyImpulse>& impulses) {
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
      for (int b = 0; b < body_count; ++b) {
        const rigid::RigidBody& body = world.bodies[b];
        if (ExchangesThroughSamples(body) || body.is_grid_boundary()) continue;
        for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
          if (!boxes[b][g].contains(node_position)) continue;
          const contact::GeometryQuery query = contact::QueryGeometry(body, g, node_position);
          if (query.signed_distance > 0.0) continue;
          // Infinite mass on the rigid side: the reduced mass is the node mass.
          const contact::CoulombCollisionResult collision = contact::ResolveCoulombCollision(
              body.PointVelocity(node_position), grid_.velocity[node], query.normal, node_mass,
              body.geometries[g].friction_coefficient, options_.restitution);
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

std::vector<HybridImpulseFormulation::PredictedMotion> HybridImpulseFormulation::PredictRigidMotion(
    const World& world) const {
  // The rigid predictor of spec §3.6 step 1 is the free motion v* of the shared integrator
  // (dynamics::RigidDofs, set up for this substep): gravity, applied loads and the
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

double HybridImpulseFormulation::NormalMobility(const World& world, const rigid::RigidBody& body, const Vector3& point,
                                                const Vector3& normal) const {
  // n̂ᵀ W n̂ with W the point mobility: 1/M + (r × n̂)ᵀ I⁻¹ (r × n̂) for a free body,
  // J_p M⁻¹ J_pᵀ for a link of the multibody tree.
  if (body.is_free()) {
    const Vector3 moment_arm = (point - body.pose.position).cross(normal);
    return 1.0 / body.mass + moment_arm.dot(body.WorldInverseInertia() * moment_arm);
  }
  const rigid::PointJacobianMatrix jacobian = world.multibody.PointJacobian(body.tree_link, point);
  const rigid::VectorX direction = jacobian.transpose() * normal;
  return direction.dot(tree_mass_factorization_.solve(direction));
}

void HybridImpulseFormulation::ExchangeWithBody(const World& world, int body_index, const PredictedMotion& motion,
                                                BodyImpulse& impulse) {
  const rigid::RigidBody& body = world.bodies[body_index];
  const CollisionSamples& samples = samples_[body_index];
  const Matrix3 rotation = body.pose.rotation();
  const Vector3& center = body.pose.position;
  const double spacing = grid_.spacing();
  const auto rigid_velocity_at = [&](const Vector3& point) {
    return Vector3(motion.linear + motion.angular.cross(point - center));
  };

  // Grid 1 (thesis eq. 6.30, 6.33): sample mass and normals on nodes shared with MPM. With
  // APIC and C_q = [ω]× (erratum E12) the grid-1 velocity is exactly the rigid velocity at
  // the node, so only mass, normal and friction need scattering.
  const int node_count = grid_.num_nodes();
  rigid_mass_.assign(node_count, 0.0);
  rigid_normal_sum_.assign(node_count, Vector3::Zero());
  rigid_friction_sum_.assign(node_count, 0.0);
  rigid_nodes_.clear();
  const int sample_count = static_cast<int>(samples.position_in_body.size());
  std::vector<std::array<int, 27>> sample_nodes(sample_count);
  std::vector<mpm::QuadraticStencil> sample_stencils(sample_count);
  for (int q = 0; q < sample_count; ++q) {
    const Vector3 position = center + rotation * samples.position_in_body[q];
    const Vector3 normal = rotation * samples.normal_in_body[q];
    sample_stencils[q] = mpm::ComputeQuadraticStencil(position, spacing);
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int node = grid_.FindNode(sample_stencils[q].base_node + mpm::NodeCoordinate(a, b, c));
          const bool shared = node >= 0 && grid_.mass[node] > 0.0;
          sample_nodes[q][a + 3 * b + 9 * c] = shared ? node : -1;
          if (!shared) continue;
          const double weight = sample_stencils[q].Weight(a, b, c);
          if (rigid_mass_[node] == 0.0) rigid_nodes_.push_back(node);
          rigid_mass_[node] += weight * samples.sample_mass;
          rigid_normal_sum_[node] += weight * normal;
          rigid_friction_sum_[node] += weight * samples.sample_mass * samples.friction_coefficient[q];
        }
      }
    }
  }

  // Node collisions (thesis eq. 6.34–6.38 with erratum E6). In per-sample mode the grid-1
  // velocity change is kept for the sample filter below.
  // A kinematic body does not respond: its impulse is only recorded, as node feedback.
  const bool kinematic = body.motion == rigid::BodyMotion::kKinematic;
  const bool node_feedback = kinematic || options_.rigid_feedback == RigidFeedback::kNodeImpulse;
  std::vector<Vector3> rigid_velocity_change;
  if (!node_feedback) rigid_velocity_change.assign(node_count, Vector3::Zero());
  for (const int node : rigid_nodes_) {
    const double rigid_mass = rigid_mass_[node];
    if (rigid_mass <= 0.0) continue;
    const double material_mass = grid_.mass[node];
    const Vector3 node_position = grid_.NodePosition(node);
    Vector3 normal = rigid_normal_sum_[node];
    if (options_.node_normal == NodeNormal::kGeometry || normal.norm() < 1e-9 * rigid_mass / samples.sample_mass) {
      // The nearest geometry's outward normal: by choice, or where the samples' normals
      // cancel (opposite faces of thin bodies, spec B7).
      double nearest = std::numeric_limits<double>::infinity();
      for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
        const contact::GeometryQuery query = contact::QueryGeometry(body, g, node_position);
        if (query.signed_distance < nearest) {
          nearest = query.signed_distance;
          normal = query.normal;
        }
      }
    }
    normal.normalize();
    // The rigid side's mass at the node: the samples' share of the body mass (thesis), or the
    // body's effective mass along the normal at the node, 1 / (n̂ᵀ W(x) n̂) (spec B3 variant);
    // infinite for a kinematic body, whose reduced mass is the node's.
    double reduced_mass = material_mass;
    if (!kinematic) {
      const double node_rigid_mass = options_.rigid_node_mass == RigidNodeMass::kEffective
                                         ? 1.0 / NormalMobility(world, body, node_position, normal)
                                         : rigid_mass;
      reduced_mass = node_rigid_mass * material_mass / (node_rigid_mass + material_mass);
    }
    const contact::CoulombCollisionResult collision =
        contact::ResolveCoulombCollision(rigid_velocity_at(node_position), grid_.velocity[node], normal, reduced_mass,
                                         rigid_friction_sum_[node] / rigid_mass, options_.restitution);
    if (!collision.approaching) continue;
    grid_.velocity[node] += collision.impulse_on_second / material_mass;
    if (node_feedback) {
      impulse.linear -= collision.impulse_on_second;
      impulse.angular += (node_position - center).cross(-collision.impulse_on_second);
    } else {
      rigid_velocity_change[node] = -collision.impulse_on_second / rigid_mass;
    }
  }
  if (node_feedback) return;

  // Per-sample filter (thesis eq. 6.25–6.29 with errata E3, E4): each sample compares the
  // grid-1 velocity after the collision with its own rigid velocity; since grid 1
  // reproduces the rigid field exactly, that difference is the interpolated change.
  for (int q = 0; q < sample_count; ++q) {
    Vector3 relative_velocity = Vector3::Zero();
    for (int k = 0; k < 27; ++k) {
      const int node = sample_nodes[q][k];
      if (node >= 0)
        relative_velocity += sample_stencils[q].Weight(k % 3, (k / 3) % 3, k / 9) * rigid_velocity_change[node];
    }
    const Vector3 normal = rotation * samples.normal_in_body[q];
    const double normal_speed = relative_velocity.dot(normal);
    if (normal_speed >= 0.0) continue;                                 // the grid sees separation: no cohesive pull
    const double normal_impulse = samples.sample_mass * normal_speed;  // negative
    Vector3 sample_impulse = normal_impulse * normal;
    const Vector3 tangential = relative_velocity - normal_speed * normal;
    const double slip = tangential.norm();
    if (slip > 0.0) {
      const double friction_speed =
          std::min(slip, -samples.friction_coefficient[q] * normal_impulse / samples.sample_mass);
      sample_impulse += samples.sample_mass * friction_speed * tangential / slip;
    }
    const Vector3 position = center + rotation * samples.position_in_body[q];
    impulse.linear += sample_impulse;
    impulse.angular += (position - center).cross(sample_impulse);
  }
}

void HybridImpulseFormulation::Substep(World& world, double dt, double step_dt, std::vector<BodyImpulse>& impulses,
                                       StepReport& rigid_report, Timings& timings) {
  mpm::Particles& particles = world.particles;
  std::vector<BodyImpulse> substep_impulses(world.bodies.size());

  // Grid 2: APIC momentum with the explicit MLS stress impulse, gravity (§3.6 step 2).
  auto start = Clock::now();
  mpm::ParticleToGrid(particles, world.materials, dt, grid_);
  mpm::ComputeGridVelocity(world.gravity, dt, grid_);
  timings.free_motion += SecondsSince(start);

  // Static bodies as Coulomb boundary conditions; impulse exchange with the bodies of finite
  // mass (free bodies, articulated links) at their predicted velocities and with kinematic
  // bodies at their prescribed ones; the boundary conditions again so the exchange cannot
  // push material through a static wall (§3.6 steps 1, 2, 4, 5).
  start = Clock::now();
  rigid_dofs_.Setup(world, dt);
  const std::vector<PredictedMotion> predicted = PredictRigidMotion(world);
  if (options_.rigid_node_mass == RigidNodeMass::kEffective && world.multibody.num_velocities() > 0) {
    tree_mass_factorization_.compute(world.multibody.MassMatrix());
  }
  // The grid-boundary nodes depend only on the grid and the static walls: found once.
  const std::vector<contact::GridBoundaryNode> wall_nodes = contact::HasGridBoundary(world.bodies)
                                                                ? contact::FindGridBoundaryNodes(grid_, world.bodies)
                                                                : std::vector<contact::GridBoundaryNode>{};
  ApplyInfiniteMassBoundaries(world, wall_nodes, substep_impulses);
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    if (ExchangesThroughSamples(world.bodies[b])) ExchangeWithBody(world, b, predicted[b], substep_impulses[b]);
  }
  ApplyInfiniteMassBoundaries(world, wall_nodes, substep_impulses);
  timings.solve += SecondsSince(start);

  // Grid 2 back to the particles, deformation update, plasticity (§3.6 step 6).
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

  start = Clock::now();
  for (std::size_t b = 0; b < world.bodies.size(); ++b) {
    impulses[b].linear += substep_impulses[b].linear;
    impulses[b].angular += substep_impulses[b].angular;
  }
  AdvanceRigidBodies(world, dt, step_dt, substep_impulses, rigid_report);
  world.time += dt;  // the substep's end, for the next substep's prescribed motion
  timings.rigid += SecondsSince(start);
}

void HybridImpulseFormulation::AdvanceRigidBodies(World& world, double dt, double step_dt,
                                                  const std::vector<BodyImpulse>& impulses, StepReport& rigid_report) {
  // The MPM impulses as a generalized impulse p on the rigid unknowns (§3.6 steps 7–8): a
  // free body's [linear; angular about the centre of mass], a link's spatial impulse
  // [angular; linear] through its Jacobian.
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
  rigid_contacts_.Detect(world, rigid_dofs_, *contact_model_, dynamics::RigidContactMargin(world, rigid_dofs_, dt), dt);
  const dynamics::RigidContactStepResult rigid_step = dynamics::SolveRigidContactStep(
      rigid_dofs_, rigid_contacts_, generalized_impulse, *contact_model_, options_.rigid_solver);
  if (!rigid_step.contact_impulse.allFinite()) {
    throw SimulationDiverged("hybrid_impulse: rigid contact solve failed (" + rigid_step.solver.summary.message +
                             ") at t = " + std::to_string(world.time) + " s");
  }
  rigid_contacts_.Record(world, rigid_step.impulses, step_dt, rigid_report);
  rigid_report.rigid_contacts = std::max(rigid_report.rigid_contacts, rigid_contacts_.size());
  if (!rigid_contacts_.empty()) {
    RecordSolve(rigid_report, SolveKind::kRigidStep, rigid_report.substeps, "sap", rigid_step.solver.summary);
  }
  ++rigid_report.substeps;
  rigid_dofs_.Advance(world, dt, generalized_impulse + rigid_step.contact_impulse);
}

StepReport HybridImpulseFormulation::AdvanceState(World& world, double dt) {
  if (!samples_ready_) PrepareCollisionSamples(world);
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
    const double stable = std::min(dynamics::StableExplicitSubstep(world, options_.cfl), remaining);
    if (!std::isfinite(stable) || stable <= 0.0) {
      throw SimulationDiverged(
          "hybrid_impulse: non-finite particle or body velocity at t = " + std::to_string(world.time) + " s");
    }
    const double pieces = std::ceil(remaining / stable);
    if (substeps + pieces > options_.max_substeps) {
      std::ostringstream message;
      message << "hybrid_impulse: step needs more than hybrid_impulse.max_substeps = " << options_.max_substeps
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

namespace {
std::unique_ptr<Formulation> MakeHybridImpulse(const ParameterSet& parameters) {
  return std::make_unique<HybridImpulseFormulation>(HybridImpulseOptions::FromParameters(parameters));
}
}  // namespace

FormulationInfo HybridImpulseInfo() {
  return FormulationInfo{"hybrid_impulse",
                         "explicit MPM, two-grid impulse exchange with Coulomb friction (Han thesis ch. 6)",
                         HybridImpulseOptions::Specs(), &MakeHybridImpulse};
}

}  // namespace contactlab::hybrid_impulse
