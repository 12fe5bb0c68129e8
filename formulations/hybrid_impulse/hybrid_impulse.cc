#include "formulations/hybrid_impulse/hybrid_impulse.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>

#include "formulations/contact/coulomb_collision.h"
#include "formulations/contact/geometry_query.h"
#include "mpm/bspline.h"

namespace contactlab::hybrid_impulse {
namespace {

// Bodies whose contact with the material goes through their surface samples on grid 1: those
// of finite mass (free bodies, links) and kinematic ones (infinite mass).
bool ExchangesThroughSamples(const rigid::RigidBody& body) {
  return body.has_finite_mass() || body.motion == rigid::BodyMotion::kKinematic;
}

using mpm::Matrix3;
using mpm::Vector3;

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
  // hybrid_impulse.cfl first, max_substeps and the rigid step's contact.* keys after ours.
  std::vector<ParameterSpec> specs = dynamics::ExplicitCouplingOptions::Specs("hybrid_impulse");
  std::vector<ParameterSpec> own = {
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
  };
  specs.insert(specs.begin() + 1, std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  return specs;
}

HybridImpulseOptions HybridImpulseOptions::FromParameters(const ParameterSet& parameters) {
  HybridImpulseOptions options;
  options.coupling = dynamics::ExplicitCouplingOptions::FromParameters(parameters, "hybrid_impulse");
  options.restitution = parameters.GetDouble("hybrid_impulse.restitution");
  options.coupling.restitution = options.restitution;
  options.sample_spacing = parameters.GetDouble("hybrid_impulse.sample_spacing");
  options.rigid_feedback = GetChoice(parameters, "hybrid_impulse.rigid_feedback", RigidFeedbackNames());
  options.node_normal = GetChoice(parameters, "hybrid_impulse.node_normal", NodeNormalNames());
  options.rigid_node_mass = GetChoice(parameters, "hybrid_impulse.rigid_node_mass", RigidNodeMassNames());
  return options;
}

HybridImpulseFormulation::HybridImpulseFormulation(HybridImpulseOptions options)
    : ExplicitGridCoupling(options.coupling), options_(std::move(options)) {}

bool HybridImpulseFormulation::ExchangesThroughOwnPath(const rigid::RigidBody& body) const {
  return ExchangesThroughSamples(body);
}

void HybridImpulseFormulation::Prepare(const World& world) {
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
}

void HybridImpulseFormulation::ExchangeWithBodies(const World& world, const std::vector<PredictedMotion>& predicted,
                                                  std::vector<BodyImpulse>& impulses) {
  if (options_.rigid_node_mass == RigidNodeMass::kEffective && world.multibody.num_velocities() > 0) {
    tree_mass_factorization_.compute(world.multibody.MassMatrix());
  }
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    if (ExchangesThroughSamples(world.bodies[b])) ExchangeWithBody(world, b, predicted[b], impulses[b]);
  }
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
  mpm::SparseGrid& grid = this->grid();
  const double spacing = grid.spacing();
  const auto rigid_velocity_at = [&](const Vector3& point) { return motion.PointVelocity(center, point); };

  // Grid 1 (thesis eq. 6.30, 6.33): sample mass and normals on nodes shared with MPM. With
  // APIC and C_q = [ω]× (erratum E12) the grid-1 velocity is exactly the rigid velocity at
  // the node, so only mass, normal and friction need scattering.
  const int node_count = grid.num_nodes();
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
          const int node = grid.FindNode(sample_stencils[q].base_node + mpm::NodeCoordinate(a, b, c));
          const bool shared = node >= 0 && grid.mass[node] > 0.0;
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
    const double material_mass = grid.mass[node];
    const Vector3 node_position = grid.NodePosition(node);
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
        contact::ResolveCoulombCollision(rigid_velocity_at(node_position), grid.velocity[node], normal, reduced_mass,
                                         rigid_friction_sum_[node] / rigid_mass, options_.restitution);
    if (!collision.approaching) continue;
    grid.velocity[node] += collision.impulse_on_second / material_mass;
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
