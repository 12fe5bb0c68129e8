#include "experiments/scenarios/close_lift_shake.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

#include "experiments/scenarios/scene_tools.h"
#include "experiments/scenarios/squeeze_panels.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

// 3u² − 2u³ on [0, 1] (0 before, 1 after) and its first two derivatives in u.
struct SmoothStep {
  double value, first, second;
};
SmoothStep EvaluateSmoothStep(double u) {
  if (u <= 0.0) return {0.0, 0.0, 0.0};
  if (u >= 1.0) return {1.0, 0.0, 0.0};
  return {u * u * (3.0 - 2.0 * u), 6.0 * u * (1.0 - u), 6.0 - 12.0 * u};
}

// Carrier height: rises by `lift` [m] over `duration` [s] starting at `start` [s].
rigid::TimeFunction LiftTrajectory(double start, double duration, double lift) {
  const auto at = [=](double t) { return EvaluateSmoothStep((t - start) / duration); };
  return rigid::TimeFunction{[=](double t) { return lift * at(t).value; },
                             [=](double t) { return lift * at(t).first / duration; },
                             [=](double t) { return lift * at(t).second / (duration * duration); }};
}

// Carrier sideways motion: A sin(2πf τ) for `duration` [s], τ = t − start, faded in over the
// first period and out over the last (a product of two smooth steps), so position and velocity
// are continuous where it starts and stops; holds still before and after.
// (Without the fade-out the carrier stopped dead from 2πfA = 0.38 m/s at the end.)
rigid::TimeFunction ShakeTrajectory(double start, double duration, double amplitude, double frequency) {
  const double omega = 2.0 * std::numbers::pi * frequency;
  const double ramp = 1.0 / frequency;
  struct Terms {
    double value, first, second;
  };
  const auto at = [=](double t) -> Terms {
    const double tau = t - start;
    if (tau <= 0.0 || tau >= duration) return {0.0, 0.0, 0.0};
    const SmoothStep in = EvaluateSmoothStep(tau / ramp);
    const SmoothStep out = EvaluateSmoothStep((duration - tau) / ramp);
    // fade = in(τ) out(τ) and its first two τ-derivatives (out's carry −1/ramp per derivative).
    const double fade = in.value * out.value;
    const double fade_first = (in.first * out.value - in.value * out.first) / ramp;
    const double fade_second =
        (in.second * out.value - 2.0 * in.first * out.first + in.value * out.second) / (ramp * ramp);
    const double s = std::sin(omega * tau), c = std::cos(omega * tau);
    return {amplitude * s * fade, amplitude * (omega * c * fade + s * fade_first),
            amplitude * (-omega * omega * s * fade + 2.0 * omega * c * fade_first + s * fade_second)};
  };
  return rigid::TimeFunction{[=](double t) { return at(t).value; }, [=](double t) { return at(t).first; },
                             [=](double t) { return at(t).second; }};
}

class CloseLiftShake final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double side = parameters.GetDouble("cube_side");
    const double friction = parameters.GetDouble("mu");
    const double squeeze_force = parameters.GetDouble("squeeze_force");
    close_time_ = parameters.GetDouble("close_time");
    const double lift_time = parameters.GetDouble("lift_time");
    const double shake_duration = parameters.GetDouble("shake_duration");
    const double duration = parameters.GetDouble("duration");
    if (close_time_ >= duration) throw InputError("key 'close_time' must be shorter than 'duration'");
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));

    // The stack along x: elastic | rigid | elastic, each a cube of edge `side` centred at z = 0.
    world.materials.push_back(mpm::MakeMaterial("elastic", "linear_corotated", parameters.GetDouble("elastic_density"),
                                                parameters.GetDouble("youngs_modulus"),
                                                parameters.GetDouble("poisson_ratio")));
    mpm::SamplingOptions sampling;
    sampling.grid_spacing = world.grid_spacing;
    sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
    const double half = 0.5 * side;
    for (const double center_x : {-side, side}) {
      const Vector3 center(center_x, 0.0, 0.0);
      const auto positions = mpm::SampleSolid(
          [](const Vector3&) { return -1.0; },
          Eigen::AlignedBox3d(center - Vector3::Constant(half), center + Vector3::Constant(half)), sampling);
      mpm::AddSampledParticles(positions, sampling, parameters.GetDouble("elastic_density"), Vector3::Zero(), 0,
                               world.particles);
    }
    particle_count_ = static_cast<std::int64_t>(world.particles.size());
    rigid_cube_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeFreeBody(
        "rigid_cube", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3::Constant(half)), rigid::Pose{}, friction}},
        parameters.GetDouble("rigid_density"), rigid::Pose{}));

    // Carrier: two prescribed prismatic joints (lift along z, shake along y) in series.
    rigid::JointSpec lift;
    lift.name = "lift";
    lift.type = rigid::JointType::kPrescribed;
    lift.prescribed_motion = rigid::JointType::kPrismatic;
    lift.axis = rigid::Vector3::UnitZ();
    lift.prescribed = LiftTrajectory(close_time_, lift_time, parameters.GetDouble("lift_height"));
    const int lift_link = world.multibody.AddLink("carrier_lift", 1.0, rigid::Matrix3::Identity() * 1e-3, lift);
    rigid::JointSpec shake;
    shake.name = "shake";
    shake.type = rigid::JointType::kPrescribed;
    shake.prescribed_motion = rigid::JointType::kPrismatic;
    shake.parent = lift_link;
    shake.axis = rigid::Vector3::UnitY();
    shake.prescribed = ShakeTrajectory(close_time_ + lift_time, shake_duration, parameters.GetDouble("shake_amplitude"),
                                       parameters.GetDouble("shake_frequency"));
    carrier_link_ = world.multibody.AddLink("carrier_shake", 1.0, rigid::Matrix3::Identity() * 1e-3, shake);

    // Panels on prismatic joints along x of the carrier, pushed toward the stack.
    panel_damping_ = PanelDamping(parameters, parameters.GetDouble("youngs_modulus"), side);
    const PanelPair panels =
        AddSqueezePanels(world, parameters, carrier_link_, 3.0 * half, squeeze_force, friction, panel_damping_);
    left_panel_ = panels.left;
    right_panel_ = panels.right;
    if (parameters.GetString("support") == "table") {
      AddTable(world, side, friction);
      ApplyTableModel(parameters, world.bodies[table_]);
    }
  }

  void DeclareObservables(RunRecorder& recorder) override {
    if (table_ >= 0) {
      recorder.DeclareSeries("table_normal_force", "N", "downward contact force the stack exerts on the table");
    }
    recorder.DeclareSeries("carrier_position", "m", "prescribed carrier position (lift z, shake y)", {"y", "z"});
    recorder.DeclareSeries("rigid_cube_relative_height", "m", "rigid cube height relative to the carrier");
    recorder.DeclareSeries("rigid_cube_slip", "m", "distance of the rigid cube from its grasp pose (carrier frame)");
    recorder.DeclareSeries("left_panel_force", "N", "contact force the stack exerts on the left panel (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("right_panel_force", "N", "contact force the stack exerts on the right panel (world)",
                           {"x", "y", "z"});
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const Vector3 carrier = world.multibody.link_pose(carrier_link_).position;
    const Vector3 relative = world.bodies[rigid_cube_].pose.position - carrier;
    recorder.AppendSeries("carrier_position", t, {carrier.y(), carrier.z()});
    recorder.AppendSeries("rigid_cube_relative_height", t, {relative.z()});
    // The grasp pose is the relative position when the carrier starts to lift; how far the
    // cube moved before that (while the panels close) is reported separately.
    if (t == 0.0) initial_pose_ = relative;
    if (t <= close_time_ + 1e-12) {
      grasp_pose_ = relative;
      closing_slip_ = (relative - initial_pose_).norm();
    }
    const double slip = (relative - grasp_pose_).norm();
    recorder.AppendSeries("rigid_cube_slip", t, {slip});
    max_slip_ = std::max(max_slip_, slip);
    final_slip_ = slip;
    for (const int panel : {left_panel_, right_panel_}) {
      const Vector3 force = report.contact_wrench.empty() ? Vector3::Zero() : report.contact_wrench[panel].force;
      recorder.AppendSeries(panel == left_panel_ ? "left_panel_force" : "right_panel_force", t,
                            {force.x(), force.y(), force.z()});
    }
    if (table_ >= 0) {
      const double force = report.contact_wrench.empty() ? 0.0 : -report.contact_wrench[table_].force.z();
      recorder.AppendSeries("table_normal_force", t, {force});
    }
  }

  std::vector<UsedParameter> UsedParameters() const override { return {PanelDampingUsed(panel_damping_)}; }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("held", max_slip_ <= 0.01);
    recorder.SetSummary("max_slip", max_slip_);
    recorder.SetSummary("final_slip", final_slip_);
    recorder.SetSummary("closing_slip", closing_slip_);
    recorder.SetSummary("support", std::string(table_ >= 0 ? "table" : "none"));
    recorder.SetSummary("particles", particle_count_);
  }

  void VisitState(StateArchive& archive) override {
    archive("initial_pose", initial_pose_);
    archive("grasp_pose", grasp_pose_);
    archive("closing_slip", closing_slip_);
    archive("max_slip", max_slip_);
    archive("final_slip", final_slip_);
  }

 private:
  // support = table: a static box under the stack, its top at the cubes' bottom faces
  // (z = −side/2). The rigid cube rests on it face to face; the elastic cubes move down so
  // that their lowest particle layer lies on it (scene_tools.h). Along x the table stops a
  // quarter cube short of each panel's inner face (at ±1.5 side), so the closing panels pass
  // beside it where they reach below the stack (panel_width > cube_side).
  void AddTable(World& world, double side, double friction) {
    const double top = -0.5 * side;
    double lowest = std::numeric_limits<double>::infinity();
    for (const Vector3& x : world.particles.position) lowest = std::min(lowest, x.z());
    for (Vector3& x : world.particles.position) x.z() += top - lowest;
    rigid::Pose pose;
    pose.position = Vector3(0.0, 0.0, top - 0.5 * side);
    table_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::Box(Vector3(1.25 * side, side, 0.5 * side)), rigid::Pose{}, friction}},
        pose));
  }

  int rigid_cube_ = -1, carrier_link_ = -1, left_panel_ = -1, right_panel_ = -1, table_ = -1;
  std::int64_t particle_count_ = 0;
  double close_time_ = 0.0, max_slip_ = 0.0, final_slip_ = 0.0, closing_slip_ = 0.0, panel_damping_ = 0.0;
  Vector3 initial_pose_ = Vector3::Zero(), grasp_pose_ = Vector3::Zero();
};

std::unique_ptr<Scenario> MakeCloseLiftShake() {
  return std::make_unique<CloseLiftShake>();
}

}  // namespace

ScenarioInfo CloseLiftShakeInfo() {
  ScenarioInfo info{
      "close_lift_shake",
      "panels squeeze elastic | heavy rigid | elastic cubes, lift and shake ([zong2024convex] Fig. 7)",
      {
          {"squeeze_force", 30.0, "N", "Constant force on each panel toward the stack (spec E6).", Positive()},
          {"mu", 0.8, "1", "Friction coefficient of every contact (spec E6).", NonNegative()},
          {"support", std::string("none"), "",
           "What carries the stack before the lift: none (the panels hold it from the start, as spec E6 proposes to "
           "avoid rigid-rigid contact) or table (it starts resting on a static table, the rigid cube on it through "
           "rigid-rigid contact).",
           OneOf({"none", "table"})},
          TableModelSpec(),
          {"cube_side", 0.06, "m", "Edge of each of the three cubes (spec E6: 12 particles per axis at h = 0.01).",
           Positive()},
          {"elastic_density", 100.0, "kg/m^3", "Density of the elastic cubes.", Positive()},
          {"rigid_density", 15000.0, "kg/m^3", "Density of the rigid cube (150 times the elastic ones).", Positive()},
          {"youngs_modulus", 5e5, "Pa", "Young's modulus of the elastic cubes.", Positive()},
          {"poisson_ratio", 0.4, "1", "Poisson's ratio of the elastic cubes.", InHalfOpenRange(0.0, 0.5)},
          {"close_time", 0.5, "s", "Time the panels squeeze before lifting.", Positive()},
          {"lift_height", 0.1, "m", "Height the carrier rises (spec E6).", NonNegative()},
          {"lift_time", 1.0, "s", "Duration of the lift (smooth step).", Positive()},
          {"shake_amplitude", 0.03, "m", "Amplitude of the sideways shake along y (spec E6).", NonNegative()},
          {"shake_frequency", 2.0, "Hz", "Frequency of the shake (spec E6).", Positive()},
          {"shake_duration", 2.0, "s", "Duration of the shake (spec E6).", Positive()},
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(3.5),
      },
      &MakeCloseLiftShake,
      {"grid_spacing=0.02", "close_time=0.02", "duration=0.04"}};
  // Panels 0.01 × 0.1 × 0.1 m (spec E6).
  const std::vector<ParameterSpec> panels = PanelParameterSpecs(0.01, 0.1);
  info.parameters.insert(info.parameters.end(), panels.begin(), panels.end());
  return info;
}

}  // namespace contactlab::experiments
