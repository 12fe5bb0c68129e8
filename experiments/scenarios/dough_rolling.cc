#include "experiments/scenarios/dough_rolling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <unordered_map>
#include <utility>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The carrier links of the pin follow prescribed joints only. MultibodyTree::AddLink wants a
// positive mass on every moving link, but as ancestors of the one DoF (the spin) with known
// motion these never enter its dynamics.
constexpr double kCarrierMass = 1.0;      // [kg]
constexpr double kCarrierInertia = 1e-3;  // [kg m²]

// The pin's prescribed motion (spec E3 reduced): offsets of the axis centre from its start
// above the dough centre along x and z [m], its yaw about z [rad], and the three passes in
// which it rolls over the dough.
struct PinTrajectory {
  std::vector<Keyframe> x, z, yaw;
  std::vector<std::pair<double, double>> rolls;  // [start, end] [s]
};

PinTrajectory MakePinTrajectory(const ParameterSet& parameters) {
  // Phase ends [s]: press, roll back, lift, return with yaw, press, roll forward, roll back.
  const double t1 = parameters.GetDouble("press_time");
  const double t2 = t1 + parameters.GetDouble("first_roll_time");
  const double t3 = t2 + parameters.GetDouble("lift_time");
  const double t4 = t3 + parameters.GetDouble("return_time");
  const double t5 = t4 + parameters.GetDouble("second_press_time");
  const double t6 = t5 + parameters.GetDouble("forward_roll_time");
  const double t7 = t6 + parameters.GetDouble("backward_roll_time");
  const double deepen_time = parameters.GetDouble("deepen_time");
  if (deepen_time > t7 - t6) throw InputError("key 'deepen_time' must not exceed 'backward_roll_time'");

  // Depths are of the pin's lowest point below the initial dough top; the axis starts
  // initial_clearance above it.
  const double clearance = parameters.GetDouble("initial_clearance");
  const double first_depth = clearance + parameters.GetDouble("press_depth");
  const double second_depth = clearance + parameters.GetDouble("second_press_depth");
  const double last_depth = second_depth + parameters.GetDouble("extra_depth");
  const double back = -parameters.GetDouble("first_roll_distance");
  const double returned = back + parameters.GetDouble("return_distance");
  const double forward = returned + parameters.GetDouble("forward_roll_distance");
  const double final_x = forward - parameters.GetDouble("backward_roll_distance");
  const double yaw = parameters.GetDouble("return_yaw_deg") * std::numbers::pi / 180.0;
  const double lifted = -first_depth + parameters.GetDouble("lift_height");

  PinTrajectory trajectory;
  trajectory.x = {{0.0, 0.0},     {t1, 0.0},      {t2, back},    {t3, back},
                  {t4, returned}, {t5, returned}, {t6, forward}, {t7, final_x}};
  // The last pass sinks by extra_depth during its first deepen_time while already rolling.
  trajectory.z = {{0.0, 0.0},       {t1, -first_depth},  {t2, -first_depth},  {t3, lifted},
                  {t4, lifted},     {t5, -second_depth}, {t6, -second_depth}, {t6 + deepen_time, -last_depth},
                  {t7, -last_depth}};
  trajectory.yaw = {{0.0, 0.0}, {t3, 0.0}, {t4, yaw}, {t7, yaw}};
  trajectory.rolls = {{t1, t2}, {t5, t6}, {t6, t7}};
  return trajectory;
}

// Running mean of samples.
struct Mean {
  double sum = 0.0;
  std::int64_t count = 0;
  void Add(double x) {
    sum += x;
    ++count;
  }
  double value() const { return count > 0 ? sum / static_cast<double>(count) : kNaN; }
};

class DoughRolling final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double length = parameters.GetDouble("dough_length");
    const double width = parameters.GetDouble("dough_width");
    const double thickness = parameters.GetDouble("dough_thickness");
    const double density = parameters.GetDouble("density");
    pin_radius_ = parameters.GetDouble("pin_radius");
    slip_speed_threshold_ = parameters.GetDouble("slip_speed_threshold");
    touch_force_threshold_ = parameters.GetDouble("touch_force_threshold");
    if (parameters.GetDouble("press_depth") >= thickness ||
        parameters.GetDouble("second_press_depth") + parameters.GetDouble("extra_depth") >= thickness) {
      // The pin must roll the dough, not the table under it.
      throw InputError("keys 'press_depth', 'second_press_depth' + 'extra_depth' must be less than 'dough_thickness'");
    }
    if (parameters.GetDouble("table_length") <= length || parameters.GetDouble("table_width") <= width) {
      throw InputError("keys 'table_length', 'table_width' must exceed 'dough_length', 'dough_width'");
    }
    const PinTrajectory trajectory = MakePinTrajectory(parameters);
    rolls_ = trajectory.rolls;
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));

    // Table: a static box whose top face is the plane z = 0.
    const rigid::Vector3 table_half(0.5 * parameters.GetDouble("table_length"),
                                    0.5 * parameters.GetDouble("table_width"),
                                    0.5 * parameters.GetDouble("table_thickness"));
    rigid::Pose table_pose;
    table_pose.position = rigid::Vector3(0.0, 0.0, -table_half.z());
    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::Box(table_half), rigid::Pose{}, parameters.GetDouble("table_mu")}},
        table_pose));
    ApplyTableModel(parameters, world.bodies.back());

    // Dough: linear corotated with von Mises plasticity ([zong2024convex] §VII-C). Sampled in the box
    // [0, L] × [0, W] × [0, H], which the lattice s(k + ½) fills with whole particles when
    // the sides are multiples of s, then centred over the origin, resting on the table.
    world.materials.push_back(
        mpm::MakeMaterial("dough", "linear_corotated", density, parameters.GetDouble("youngs_modulus"),
                          parameters.GetDouble("poisson_ratio"), parameters.GetDouble("yield_stress")));
    mpm::SamplingOptions sampling;
    sampling.grid_spacing = world.grid_spacing;
    sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
    sampling.jitter = parameters.GetDouble("sampling_jitter");
    sampling.seed = parameters.GetIntAs<std::uint64_t>("sampling_seed");
    const Vector3 size(length, width, thickness);
    const Vector3 half_size = 0.5 * size;
    std::vector<Vector3> positions =
        mpm::SampleSolid([&](const Vector3& x) { return ((x - half_size).cwiseAbs() - half_size).maxCoeff(); },
                         Eigen::AlignedBox3d(Vector3::Zero(), size), sampling);
    if (positions.size() < 8) {
      throw InputError(
          "keys 'dough_length', 'dough_width', 'dough_thickness', 'grid_spacing', "
          "'particles_per_cell' give only " +
          std::to_string(positions.size()) + " particles");
    }
    for (Vector3& x : positions) x -= Vector3(half_size.x(), half_size.y(), 0.0);
    mpm::AddSampledParticles(positions, sampling, density, Vector3::Zero(), 0, world.particles);
    particle_spacing_ = mpm::ParticleSpacing(sampling);
    column_size_ = world.grid_spacing;
    particle_count_ = static_cast<std::int64_t>(world.particles.size());
    dough_mass_ = mpm::TotalMass(world.particles);

    // Pin: a chain of prescribed joints carries its axis (slide along x, slide along z, yaw
    // about z), starting with the axis centre initial_clearance + r above the dough centre;
    // the spin about the axis is a free revolute joint. The carriers have no geometry, so
    // only the pin itself meets the dough.
    rigid::JointSpec slide_x;
    slide_x.name = "pin_slide_x";
    slide_x.type = rigid::JointType::kPrescribed;
    slide_x.prescribed_motion = rigid::JointType::kPrismatic;
    slide_x.axis = rigid::Vector3::UnitX();
    slide_x.frame_on_parent.position =
        rigid::Vector3(0.0, 0.0, thickness + pin_radius_ + parameters.GetDouble("initial_clearance"));
    slide_x.prescribed = KeyframeTrajectory(trajectory.x);
    const rigid::Matrix3 carrier_inertia = rigid::Matrix3::Identity() * kCarrierInertia;
    const int x_link = world.multibody.AddLink("pin_carrier_x", kCarrierMass, carrier_inertia, slide_x);
    rigid::JointSpec slide_z = slide_x;
    slide_z.name = "pin_slide_z";
    slide_z.parent = x_link;
    slide_z.frame_on_parent = rigid::Pose{};
    slide_z.axis = rigid::Vector3::UnitZ();
    slide_z.prescribed = KeyframeTrajectory(trajectory.z);
    const int z_link = world.multibody.AddLink("pin_carrier_z", kCarrierMass, carrier_inertia, slide_z);
    rigid::JointSpec yaw = slide_z;
    yaw.name = "pin_yaw";
    yaw.parent = z_link;
    yaw.prescribed_motion = rigid::JointType::kRevolute;
    yaw.prescribed = KeyframeTrajectory(trajectory.yaw);
    yaw_link_ = world.multibody.AddLink("pin_carrier_yaw", kCarrierMass, carrier_inertia, yaw);
    rigid::JointSpec spin;
    spin.name = "pin_spin";
    spin.type = rigid::JointType::kRevolute;
    spin.parent = yaw_link_;
    spin.axis = rigid::Vector3::UnitY();
    // The cylinder's own axis is its local z; turn it onto the spin axis y.
    const rigid::Quaternion z_to_y(Eigen::AngleAxisd(-0.5 * std::numbers::pi, rigid::Vector3::UnitX()));
    const rigid::Pose cylinder_pose{rigid::Vector3::Zero(), z_to_y};
    pin_body_ = AddArticulatedBody(
        world, "pin",
        {rigid::Geometry{rigid::Shape::Cylinder(pin_radius_, 0.5 * parameters.GetDouble("pin_length")), cylinder_pose,
                         parameters.GetDouble("mu")}},
        parameters.GetDouble("pin_density"), spin);
    pin_link_ = world.bodies[pin_body_].tree_link;
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("pin_axis_position", "m", "centre of the pin axis (prescribed)", {"x", "z"});
    recorder.DeclareSeries("pin_track_speed", "m/s",
                           "prescribed speed v of the pin axis across the axis, horizontal (direction axis x z)");
    recorder.DeclareSeries("pin_spin", "rad/s", "pin angular velocity about its axis (the free revolute joint)");
    recorder.DeclareAnalytic("pin_spin", "rad/s", "rolling without slip: v / r");
    recorder.DeclareSeries("slip_ratio", "1", "1 - omega r / v where |v| > slip_speed_threshold, NaN elsewhere");
    recorder.DeclareAnalytic("slip_ratio", "1", "rolling without slip: 0");
    recorder.DeclareSeries("pin_contact_force", "N", "contact force the dough exerts on the pin (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries(
        "contacts", "1",
        "contact points of the step (StepReport.contacts; the table's too when table_model = contact_body)");
    recorder.DeclareSeries("grid_boundary_nodes", "1",
                           "grid nodes the table held (table_model = sticky, slip, separating)");
    recorder.DeclareSeries("outer_iterations", "1", "Newton / quasi-Newton iterations of the step");
    recorder.DeclareSeries("dough_top_height", "m", "highest particle above the table top");
    recorder.DeclareSeries("dough_mean_thickness", "m",
                           "mean over occupied h x h columns of the top particle's height + s/2 (thickness map)");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const rigid::MultibodyTree& tree = world.multibody;
    // Track direction d = a × z for the axis a: rolling without slip is ω = v / r with ω
    // about a (right-handed) and v along d.
    const Vector3 axis = tree.link_pose(yaw_link_).orientation * Vector3::UnitY();
    const Vector3 track = axis.cross(Vector3::UnitZ()).normalized();
    const Vector3 center = tree.link_pose(pin_link_).position;
    const double speed = tree.link_spatial_velocity(pin_link_).tail<3>().dot(track);
    const double spin = tree.velocities()[tree.velocity_start(pin_link_)];
    const double slip = std::abs(speed) > slip_speed_threshold_ ? 1.0 - spin * pin_radius_ / speed : kNaN;
    const Vector3 force = report.contact_wrench.empty() ? Vector3::Zero() : report.contact_wrench[pin_body_].force;
    recorder.AppendSeries("pin_axis_position", t, {center.x(), center.z()});
    recorder.AppendSeries("pin_track_speed", t, {speed});
    recorder.AppendSeries("pin_spin", t, {spin});
    recorder.AppendAnalytic("pin_spin", t, {speed / pin_radius_});
    recorder.AppendSeries("slip_ratio", t, {slip});
    recorder.AppendAnalytic("slip_ratio", t, {0.0});
    recorder.AppendSeries("pin_contact_force", t, {force.x(), force.y(), force.z()});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("grid_boundary_nodes", t, {static_cast<double>(report.grid_boundary_nodes)});
    recorder.AppendSeries("outer_iterations", t, {static_cast<double>(report.outer_iterations)});

    // Height of the dough: the top particle, and the mean of the per-column thickness map.
    double top = -std::numeric_limits<double>::infinity();
    std::unordered_map<std::int64_t, double> columns;
    for (const Vector3& x : world.particles.position) {
      top = std::max(top, x.z());
      const std::int64_t i = static_cast<std::int64_t>(std::floor(x.x() / column_size_));
      const std::int64_t j = static_cast<std::int64_t>(std::floor(x.y() / column_size_));
      const auto [entry, inserted] = columns.try_emplace((i << 32) ^ (j & 0xffffffff), x.z());
      if (!inserted) entry->second = std::max(entry->second, x.z());
    }
    double thickness = 0.0;
    for (const auto& [column, column_top] : columns) thickness += column_top + 0.5 * particle_spacing_;
    thickness /= static_cast<double>(std::max<std::size_t>(1, columns.size()));
    recorder.AppendSeries("dough_top_height", t, {top});
    recorder.AppendSeries("dough_mean_thickness", t, {thickness});
    final_top_ = top;
    final_thickness_ = thickness;

    if (t <= 0.0) return;  // the initial sample precedes every step
    contacts_.Add(report.contacts);
    max_contacts_ = std::max<std::int64_t>(max_contacts_, report.contacts);
    outer_iterations_.Add(report.outer_iterations);
    // Slip statistics: rolling passes, while the pin presses on the dough and moves fast
    // enough for the ratio to mean something.
    if (std::isnan(slip) || force.norm() <= touch_force_threshold_) return;
    for (std::size_t pass = 0; pass < rolls_.size(); ++pass) {
      if (t < rolls_[pass].first || t > rolls_[pass].second) continue;
      slip_per_pass_[pass].Add(slip);
      slip_.Add(slip);
      break;
    }
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("particles", particle_count_);
    recorder.SetSummary("dough_mass", dough_mass_);
    recorder.SetSummary("slip_ratio_mean", slip_.value());
    recorder.SetSummary("slip_samples", slip_.count);
    for (std::size_t pass = 0; pass < 3; ++pass) {
      recorder.SetSummary("slip_ratio_mean_pass" + std::to_string(pass + 1), slip_per_pass_[pass].value());
    }
    recorder.SetSummary("contacts_mean", contacts_.value());
    recorder.SetSummary("contacts_max", max_contacts_);
    recorder.SetSummary("mean_outer_iterations", outer_iterations_.value());
    recorder.SetSummary("final_dough_top_height", final_top_);
    recorder.SetSummary("final_dough_mean_thickness", final_thickness_);
  }

  void VisitState(StateArchive& archive) override {
    archive("slip", slip_);
    for (std::size_t pass = 0; pass < 3; ++pass) {
      archive("slip_per_pass_" + std::to_string(pass), slip_per_pass_[pass]);
    }
    archive("contacts", contacts_);
    archive("max_contacts", max_contacts_);
    archive("outer_iterations", outer_iterations_);
    archive("final_top", final_top_);
    archive("final_thickness", final_thickness_);
  }

 private:
  int pin_body_ = -1, pin_link_ = -1, yaw_link_ = -1;
  double pin_radius_ = 0.0, slip_speed_threshold_ = 0.0, touch_force_threshold_ = 0.0;
  double particle_spacing_ = 0.0, column_size_ = 0.0, dough_mass_ = 0.0;
  std::int64_t particle_count_ = 0, max_contacts_ = 0;
  std::vector<std::pair<double, double>> rolls_;
  Mean slip_, slip_per_pass_[3], contacts_, outer_iterations_;
  double final_top_ = kNaN, final_thickness_ = kNaN;
};

std::unique_ptr<Scenario> MakeDoughRolling() {
  return std::make_unique<DoughRolling>();
}

}  // namespace

ScenarioInfo DoughRollingInfo() {
  return ScenarioInfo{
      "dough_rolling",
      "rigid rolling pin, prescribed axis and free spin, flattens an elastoplastic dough ([zong2024convex] §VII-C)",
      {
          {"dough_length", 0.35, "m", "Dough size along x, the rolling direction (spec E3 reduced).", Positive()},
          {"dough_width", 0.28, "m", "Dough size along y, the pin's axis (spec E3 reduced).", Positive()},
          {"dough_thickness", 0.06, "m", "Initial dough thickness (spec E3 reduced).", Positive()},
          {"density", 1000.0, "kg/m^3", "Dough density ([zong2024convex] §VII-C).", Positive()},
          {"youngs_modulus", 2e4, "Pa", "Dough Young's modulus ([zong2024convex] §VII-C).", Positive()},
          {"poisson_ratio", 0.4, "1", "Dough Poisson's ratio ([zong2024convex] §VII-C).", InHalfOpenRange(0.0, 0.5)},
          {"yield_stress", 1e3, "Pa",
           "Von Mises yield stress of the dough: rolling flattens it for good ([zong2024convex] §VII-C); 0 is elastic.",
           NonNegative()},
          {"mu", 1.0, "1", "Friction coefficient between pin and dough; it alone spins the pin (spec E3).",
           NonNegative()},
          {"table_mu", 1.0, "1", "Friction coefficient between dough and table (spec E3 reduced).", NonNegative()},
          {"table_length", 1.0, "m", "Table size along x, beyond the dough and the pin's travel.", Positive()},
          {"table_width", 0.8, "m", "Table size along y, beyond the dough and the pin's length.", Positive()},
          {"table_thickness", 0.05, "m", "Table thickness below its top face at z = 0.", Positive()},
          TableModelSpec(),
          {"pin_radius", 0.035, "m", "Rolling-pin radius r (spec E3 reduced).", Positive()},
          {"pin_length", 0.45, "m", "Rolling-pin length, longer than the dough is wide (spec E3 reduced).", Positive()},
          {"pin_density", 700.0, "kg/m^3", "Rolling-pin density, that of a hardwood (spec E3 reduced).", Positive()},
          {"initial_clearance", 0.005, "m", "Gap between the pin and the dough top at t = 0: no contact at the start.",
           NonNegative()},
          {"press_depth", 0.02, "m",
           "First press: the pin's lowest point this far below the initial dough top (spec E3).", NonNegative()},
          {"press_time", 1.0, "s", "Duration of the first press (spec E3: [0, 1] s).", Positive()},
          {"first_roll_distance", 0.15, "m", "First pass: distance rolled toward -x (spec E3).", NonNegative()},
          {"first_roll_time", 2.0, "s", "Duration of the first pass (spec E3: [1, 3] s).", Positive()},
          {"lift_height", 0.05, "m", "Rise of the pin after the first pass (spec E3).", NonNegative()},
          {"lift_time", 0.5, "s", "Duration of the lift (spec E3: [3, 3.5] s).", Positive()},
          {"return_distance", 0.15, "m", "Distance the lifted pin moves back toward +x (spec E3).", NonNegative()},
          {"return_yaw_deg", 10.0, "deg",
           "Yaw about z taken while returning, so that the later passes cross the first obliquely (spec E3).",
           InClosedRange(-90.0, 90.0)},
          {"return_time", 1.5, "s", "Duration of the return (spec E3: [3.5, 5] s).", Positive()},
          {"second_press_depth", 0.02, "m",
           "Second press: the pin's lowest point this far below the initial dough top (spec E3 'press 2 cm').",
           NonNegative()},
          {"second_press_time", 0.5, "s", "Duration of the second press (spec E3: [5, 5.5] s).", Positive()},
          {"forward_roll_distance", 0.12, "m", "Second pass: distance rolled toward +x (spec E3).", NonNegative()},
          {"forward_roll_time", 2.0, "s", "Duration of the second pass (spec E3: [5.5, 7.5] s).", Positive()},
          {"backward_roll_distance", 0.12, "m", "Last pass: distance rolled back toward -x (spec E3).", NonNegative()},
          {"backward_roll_time", 2.0, "s", "Duration of the last pass (spec E3: [7.5, 9.5] s).", Positive()},
          {"extra_depth", 0.01, "m", "The last pass presses this much deeper than the second (spec E3).",
           NonNegative()},
          {"deepen_time", 0.5, "s", "Start of the last pass over which the pin sinks by extra_depth while rolling.",
           Positive()},
          {"slip_speed_threshold", 0.02, "m/s",
           "Smallest |v| at which 1 - omega r / v is evaluated, a sixth of the peak rolling speed or less.",
           Positive()},
          {"touch_force_threshold", 0.1, "N",
           "Smallest pin contact force counted as touching the dough in the slip statistics, 1% of the pin's weight.",
           NonNegative()},
          GravitySpec(),
          GridSpacingSpec(0.02),
          ParticlesPerCellSpec(8.0),
          SamplingJitterSpec(),
          SamplingSeedSpec(),
          TimeStepSpec(0.01),
          DurationSpec(9.5),
      },
      &MakeDoughRolling,
      {"duration=0.03"}};
}

}  // namespace contactlab::experiments
