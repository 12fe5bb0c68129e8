#include "experiments/scenarios/sand_on_sphere.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/scenarios/scene_tools.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A displacement below this fraction of the sphere's radius counts as no motion when the
// summary names the direction (`pulled_toward_sand`).
constexpr double kMotionFraction = 0.02;

class SandOnSphere final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    radius_ = parameters.GetDouble("sphere_radius");
    const double column_width = parameters.GetDouble("column_width");
    const double column_height = parameters.GetDouble("column_height");
    offset_ = parameters.GetDouble("column_offset");
    const double gap = parameters.GetDouble("column_gap");
    const double density = parameters.GetDouble("density");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));
    world.grid_spacing = parameters.GetDouble("grid_spacing");

    const double far_edge = offset_ + 0.5 * column_width;
    if (!(far_edge < radius_) || !(offset_ - 0.5 * column_width > -radius_)) {
      throw InputError(
          "keys 'column_offset', 'column_width', 'sphere_radius': the column must fall on the sphere, within its "
          "radius on both sides (|column_offset +- column_width/2| < sphere_radius)");
    }
    pull_friction_ =
        std::tan(0.5 * std::asin(std::max(std::abs(far_edge), std::abs(offset_ - 0.5 * column_width)) / radius_));

    world.materials.push_back(MakeSandMaterial(parameters, parameters.GetDouble("friction_angle")));

    // The floor: top face at z = 0 (a node plane, as grid walls need), wide enough for the
    // sand to spread and the sphere to roll.
    const double half = radius_ + column_height + 0.1;
    const double thickness = 0.05;
    rigid::Pose floor_pose;
    floor_pose.position = Vector3(0.0, 0.0, -0.5 * thickness);
    floor_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(
        rigid::MakeStaticBody("floor",
                              {rigid::Geometry{rigid::Shape::Box(Vector3(half, half, 0.5 * thickness)), rigid::Pose{},
                                               parameters.GetDouble("floor_mu")}},
                              floor_pose));
    ApplyTableModel(parameters, world.bodies.back());

    // The sphere rests on the floor.
    rigid::Pose sphere_pose;
    sphere_pose.position = Vector3(0.0, 0.0, radius_);
    sphere_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeFreeBody(
        "sphere", {rigid::Geometry{rigid::Shape::Sphere(radius_), rigid::Pose{}, parameters.GetDouble("sphere_mu")}},
        parameters.GetDouble("sphere_density"), sphere_pose));
    start_ = sphere_pose.position;
    sphere_mass_ = world.bodies.back().mass;

    // The column: a square prism of sand at rest, its lowest particle layer `column_gap`
    // above the sphere's top.
    const Vector3 size(column_width, column_width, column_height);
    rigid::Pose column_pose;
    const BoxLattice probe =
        SampleBoxLattice(column_pose, size, world.grid_spacing, parameters.GetDouble("particles_per_cell"));
    if (probe.positions.size() < 27) {
      throw InputError(
          "keys 'column_width', 'column_height', 'grid_spacing', 'particles_per_cell' give fewer than 3 particles "
          "along an axis of the column");
    }
    column_pose.position = Vector3(offset_, 0.0, 2.0 * radius_ + gap + 0.5 * column_height - 0.5 * probe.spacing.z());
    const BoxLattice lattice =
        SampleBoxLattice(column_pose, size, world.grid_spacing, parameters.GetDouble("particles_per_cell"));
    sand_ = AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    sand_mass_ = mpm::TotalMass(world.particles);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("sphere_displacement", "m", "the sphere's centre from its start (world)", {"x", "y", "z"});
    recorder.DeclareSeries("sphere_velocity", "m/s", "velocity of the sphere's centre (world)", {"x", "y", "z"});
    recorder.DeclareSeries("sphere_angular_velocity", "rad/s", "the sphere's angular velocity (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("sphere_turn", "rad",
                           "angle the sphere has turned about +y (the axis it rolls about toward +x), the time "
                           "integral of its angular velocity's y component");
    recorder.DeclareSeries("rolled_distance", "m",
                           "R times sphere_turn: the displacement along x that rolling without slip gives");
    recorder.DeclareSeries("sphere_contact_force", "N", "contact force the sand exerted on the sphere (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("sphere_contact_torque", "N m",
                           "contact torque the sand exerted on the sphere about its centre (world)", {"x", "y", "z"});
    recorder.DeclareSeries("sand_beyond_sphere", "1",
                           "fraction of the sand's mass on the far side of the sphere (x below the sphere's centre)");
    recorder.DeclareSeries("sand_kinetic_energy", "J", "kinetic energy of the sand");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("grid_boundary_nodes", "1", "grid nodes the floor held as a grid wall");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const rigid::RigidBody& sphere = world.bodies[sphere_];
    const Vector3 displacement = sphere.pose.position - start_;
    // The turn about +y by the trapezoid rule over the observed samples (one per step).
    if (has_previous_) turn_ += 0.5 * (t - previous_time_) * (previous_spin_ + sphere.angular_velocity.y());
    has_previous_ = true;
    previous_time_ = t;
    previous_spin_ = sphere.angular_velocity.y();

    double beyond = 0.0, kinetic = 0.0;
    for (int p = sand_.begin; p < sand_.end; ++p) {
      const double mass = world.particles.mass[p];
      if (world.particles.position[p].x() < sphere.pose.position.x()) beyond += mass;
      kinetic += 0.5 * mass * world.particles.velocity[p].squaredNorm();
    }
    const BodyWrench wrench =
        sphere_ < static_cast<int>(report.contact_wrench.size()) ? report.contact_wrench[sphere_] : BodyWrench{};
    recorder.AppendSeries("sphere_displacement", t, {displacement.x(), displacement.y(), displacement.z()});
    recorder.AppendSeries("sphere_velocity", t,
                          {sphere.linear_velocity.x(), sphere.linear_velocity.y(), sphere.linear_velocity.z()});
    recorder.AppendSeries("sphere_angular_velocity", t,
                          {sphere.angular_velocity.x(), sphere.angular_velocity.y(), sphere.angular_velocity.z()});
    recorder.AppendSeries("sphere_turn", t, {turn_});
    recorder.AppendSeries("rolled_distance", t, {radius_ * turn_});
    recorder.AppendSeries("sphere_contact_force", t, {wrench.force.x(), wrench.force.y(), wrench.force.z()});
    recorder.AppendSeries("sphere_contact_torque", t, {wrench.torque.x(), wrench.torque.y(), wrench.torque.z()});
    recorder.AppendSeries("sand_beyond_sphere", t, {beyond / sand_mass_});
    recorder.AppendSeries("sand_kinetic_energy", t, {kinetic});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("grid_boundary_nodes", t, {static_cast<double>(report.grid_boundary_nodes)});

    final_displacement_ = displacement;
    final_speed_ = sphere.linear_velocity.norm();
    final_beyond_ = beyond / sand_mass_;
    max_toward_ = std::max(max_toward_, displacement.x());
    max_away_ = std::min(max_away_, displacement.x());
    max_lift_ = std::max(max_lift_, displacement.z());
  }

  void Summarize(RunRecorder& recorder) override {
    const double x = final_displacement_.x();
    recorder.SetSummary("displacement", x);
    recorder.SetSummary("lateral_displacement", final_displacement_.y());
    recorder.SetSummary("max_displacement_toward_sand", max_toward_);
    recorder.SetSummary("max_displacement_away", max_away_);
    recorder.SetSummary("max_lift", max_lift_);
    recorder.SetSummary("turn", turn_);
    recorder.SetSummary("rolled_distance", radius_ * turn_);
    // 1 for rolling without slip on the floor; NaN when the sphere has not moved.
    const bool moved = std::abs(x) > kMotionFraction * radius_;
    recorder.SetSummary("rolling_ratio", moved ? radius_ * turn_ / x : kNaN);
    recorder.SetSummary("pulled_toward_sand", moved && x > 0.0 && turn_ > 0.0);
    recorder.SetSummary("pushed_away", moved && x < 0.0);
    recorder.SetSummary("analytic_pull_friction", pull_friction_);
    recorder.SetSummary("column_offset", offset_);
    recorder.SetSummary("final_sphere_speed", final_speed_);
    recorder.SetSummary("final_sand_beyond_sphere", final_beyond_);
    recorder.SetSummary("sphere_mass", sphere_mass_);
    recorder.SetSummary("sand_mass", sand_mass_);
    recorder.SetSummary("particles", std::int64_t{sand_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("has_previous", has_previous_);
    archive("previous_time", previous_time_);
    archive("previous_spin", previous_spin_);
    archive("turn", turn_);
    archive("final_displacement", final_displacement_);
    archive("final_speed", final_speed_);
    archive("final_beyond", final_beyond_);
    archive("max_toward", max_toward_);
    archive("max_away", max_away_);
    archive("max_lift", max_lift_);
  }

 private:
  ParticleRange sand_;
  int floor_ = -1, sphere_ = -1;
  Vector3 start_ = Vector3::Zero(), final_displacement_ = Vector3::Constant(kNaN);
  double radius_ = 0.0, offset_ = 0.0, pull_friction_ = kNaN, sphere_mass_ = 0.0, sand_mass_ = 0.0;
  bool has_previous_ = false;
  double previous_time_ = 0.0, previous_spin_ = 0.0, turn_ = 0.0;
  double final_speed_ = kNaN, final_beyond_ = kNaN, max_toward_ = 0.0, max_away_ = 0.0, max_lift_ = 0.0;
};

std::unique_ptr<Scenario> MakeSandOnSphere() {
  return std::make_unique<SandOnSphere>();
}

}  // namespace

ScenarioInfo SandOnSphereInfo() {
  ParameterSpec floor = TableModelSpec();
  floor.default_value = std::string("sticky");
  floor.description =
      "How the floor meets the sand: a sticky grid wall (default: a rough base), slip or separating grid walls, or "
      "contact_body (particles register contacts, friction floor_mu); formulations/contact/grid_boundary.h. The "
      "sphere always meets the floor through rigid-rigid contact.";
  return ScenarioInfo{
      "sand_on_sphere",
      "Drucker-Prager sand column falls on one side of a free rigid sphere on a rough floor: the sliding sand's "
      "friction pulls the sphere toward it ([ding_schroeder_penalty] Fig. 16)",
      {
          {"sphere_radius", 0.05, "m", "Radius R of the rigid sphere ([ding_schroeder_penalty] gives no size).",
           Positive()},
          {"sphere_density", 1000.0, "kg/m^3",
           "Density of the sphere: 0.52 kg at the defaults, two thirds of the sand column's 0.8 kg, so that the sand "
           "can move it.",
           Positive()},
          {"sphere_mu", 0.9, "1",
           "Friction coefficient between the sand and the sphere ([ding_schroeder_penalty] Table 1, sand_on_sph: 0.9). "
           "The sand "
           "pulls the sphere when it exceeds analytic_pull_friction = tan(theta_max/2).",
           NonNegative()},
          {"floor_mu", 0.9, "1",
           "Friction coefficient of the floor: against the sphere (rigid-rigid contact, so that it rolls) and "
           "against the sand under table_model = contact_body.",
           NonNegative()},
          {"column_width", 0.05, "m", "Side of the square sand column.", Positive()},
          {"column_height", 0.2, "m", "Height of the sand column at release.", Positive()},
          {"column_offset", 0.02, "m",
           "Horizontal distance along +x of the column's axis from the sphere's centre. At the defaults the column "
           "lands on the sphere at polar angles up to 64 degrees from its top (tan(32 deg) = 0.62 < sphere_mu).",
           NonNegative()},
          {"column_gap", 0.01, "m", "Height of the column's lowest particle layer above the sphere's top.", Positive()},
          {"density", 1600.0, "kg/m^3", "Bulk density of the sand, as in sand_pile.", Positive()},
          {"youngs_modulus", 3.537e5, "Pa",
           "Young's modulus of the sand's Hencky elasticity, as in sand_pile: 100 times below "
           "[ding_schroeder_penalty]'s 35.37e6 Pa, "
           "which would need 10 times the explicit substeps.",
           Positive()},
          {"poisson_ratio", 0.3, "1", "Poisson's ratio of the sand ([ding_schroeder_penalty]).",
           InHalfOpenRange(-0.99, 0.5)},
          {"friction_angle", 30.0, "deg", "Friction angle phi of the Drucker-Prager cone, as in sand_pile.",
           InHalfOpenRange(1.0, 89.0)},
          {"cohesion", 0.0, "Pa", "Cohesion c of the sand; 0 for dry sand.", NonNegative()},
          floor,
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.001),
          DurationSpec(0.6),
      },
      &MakeSandOnSphere,
      {"grid_spacing=0.02", "column_height=0.08", "column_gap=0.001", "dt=0.002", "duration=0.03"}};
}

}  // namespace contactlab::experiments
