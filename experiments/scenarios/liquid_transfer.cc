#include "experiments/scenarios/liquid_transfer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "formulations/contact/geometry_query.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kDegree = 3.14159265358979323846 / 180.0;

// The pivot path and tilt of the mug, as functions of time.
struct MugPath {
  rigid::TimeFunction x, z, tilt;  // pivot x [m], pivot z [m], rotation about +y [rad]
};

rigid::KinematicState MugState(const MugPath& path, double t) {
  rigid::KinematicState state;
  state.pose.position = Vector3(path.x.value(t), 0.0, path.z.value(t));
  state.pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(path.tilt.value(t), Vector3::UnitY()));
  state.linear_velocity = Vector3(path.x.derivative(t), 0.0, path.z.derivative(t));
  state.angular_velocity = Vector3(0.0, path.tilt.derivative(t), 0.0);
  return state;
}

class LiquidTransfer final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    inner_width_ = parameters.GetDouble("mug_inner_width");
    inner_height_ = parameters.GetDouble("mug_inner_height");
    const double wall = parameters.GetDouble("mug_wall_thickness");
    mug_wall_ = wall;
    bin_wall_ = parameters.GetDouble("bin_wall_thickness");
    const double depth = parameters.GetDouble("liquid_depth");
    const double density = parameters.GetDouble("density");
    bin_width_ = parameters.GetDouble("bin_width");
    bin_height_ = parameters.GetDouble("bin_wall_height");
    const double lift = parameters.GetDouble("lift_height");
    const double start_x = parameters.GetDouble("mug_start_x");
    const double pour_x = parameters.GetDouble("pour_x");
    const double tilt = parameters.GetDouble("tilt_deg") * kDegree;
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    spacing_h_ = world.grid_spacing;

    const double outer_half = 0.5 * inner_width_ + wall;
    if (!(depth < inner_height_)) {
      throw InputError("keys 'liquid_depth', 'mug_inner_height': the liquid must fit in the mug");
    }
    if (!(std::abs(start_x) - outer_half > 0.5 * bin_width_ + parameters.GetDouble("bin_wall_thickness"))) {
      throw InputError("keys 'mug_start_x', 'bin_width': the mug must start beside the bin, not over it");
    }
    if (!(std::abs(pour_x) + outer_half < 0.5 * bin_width_)) {
      throw InputError("keys 'pour_x', 'bin_width', 'mug_inner_width': the mug must pour from above the bin's inside");
    }
    if (!(lift > bin_height_)) {
      throw InputError(
          "keys 'lift_height', 'bin_wall_height': the mug starts with its bottom level with the bin's floor and must "
          "clear the bin's walls when carried over them");
    }

    AddSquareContainer(parameters, "bin_width", bin_width_, parameters.GetDouble("bin_wall_thickness"), bin_height_,
                       parameters.GetDouble("bin_mu"), world);
    // The ground the bin stands on, so that what spills comes to rest beside the bin instead
    // of falling for the rest of the run.
    rigid::Pose ground_pose;
    ground_pose.position = Vector3(0.0, 0.0, -bin_wall_);
    world.bodies.push_back(rigid::MakeStaticBody(
        "ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, parameters.GetDouble("bin_mu")}},
        ground_pose));
    ApplyTableModel(parameters, world.bodies.back());
    for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) walls_.push_back(b);

    // The mug's frame: origin at the centre of its rim, the cavity below, its bottom face
    // level with the bin's floor top (z = 0) at the start.
    const double t_lift = parameters.GetDouble("lift_time");
    const double t_carry = t_lift + parameters.GetDouble("carry_time");
    const double t_tilt = t_carry + parameters.GetDouble("tilt_time");
    const double rim_z = wall + inner_height_;
    const MugPath path{KeyframeTrajectory({{0.0, start_x}, {t_lift, start_x}, {t_carry, pour_x}}),
                       KeyframeTrajectory({{0.0, rim_z}, {t_lift, rim_z + lift}}),
                       KeyframeTrajectory({{0.0, 0.0}, {t_carry, 0.0}, {t_tilt, tilt}})};
    const double mu = parameters.GetDouble("mug_mu");
    const double half_in = 0.5 * inner_width_;
    const auto box = [&](const Vector3& half_size, const Vector3& center) {
      rigid::Pose pose;
      pose.position = center;
      return rigid::Geometry{rigid::Shape::Box(half_size), pose, mu};
    };
    // The five boxes overlap along every edge of the cavity: each side spans the mug's whole
    // outer width and height. Where two boxes only abutted, a particle pressed a little into
    // one of them felt that box's normal alone and slid along the seam, out through the
    // other box's end (liquid left the mug at its bottom corners under penalty and sap).
    const double side_half_height = 0.5 * (inner_height_ + wall), side_center_z = -side_half_height;
    mug_ = static_cast<int>(world.bodies.size());
    walls_.push_back(mug_);
    world.bodies.push_back(rigid::MakeKinematicBody(
        "mug",
        {box(Vector3(outer_half, outer_half, 0.5 * wall), Vector3(0.0, 0.0, -inner_height_ - 0.5 * wall)),
         box(Vector3(0.5 * wall, outer_half, side_half_height), Vector3(-half_in - 0.5 * wall, 0.0, side_center_z)),
         box(Vector3(0.5 * wall, outer_half, side_half_height), Vector3(half_in + 0.5 * wall, 0.0, side_center_z)),
         box(Vector3(outer_half, 0.5 * wall, side_half_height), Vector3(0.0, -half_in - 0.5 * wall, side_center_z)),
         box(Vector3(outer_half, 0.5 * wall, side_half_height), Vector3(0.0, half_in + 0.5 * wall, side_center_z))},
        [path](double t) { return MugState(path, t); }));
    rigid::UpdateKinematicBody(world.bodies.back(), 0.0);
    // The tilted mug's lowest corner (rim or bottom edge, rotated about the pivot) must clear
    // the bin's walls: z' = −x sin θ + z cos θ for a corner (x, z) of the mug's frame.
    double lowest = 0.0;
    for (const double corner_x : {-outer_half, outer_half}) {
      for (const double corner_z : {0.0, -(inner_height_ + wall)}) {
        lowest = std::min(lowest, -corner_x * std::sin(tilt) + corner_z * std::cos(tilt));
      }
    }
    if (!(rim_z + lift + lowest > bin_height_)) {
      throw InputError("keys 'tilt_deg', 'lift_height': the tilted mug would reach into the bin's walls");
    }

    // The liquid fills the mug to `depth`, at hydrostatic pressure: J = (1 + p/κ)^(−1/γ).
    world.materials.push_back(mpm::MakeLiquidMaterial("liquid", density, parameters.GetDouble("bulk_modulus"),
                                                      parameters.GetDouble("eos_exponent")));
    const rigid::Pose& mug_pose = world.bodies.back().pose;
    rigid::Pose liquid_pose;
    liquid_pose.position = mug_pose.TransformPoint(Vector3(0.0, 0.0, -inner_height_ + 0.5 * depth));
    const BoxLattice lattice = SampleBoxLattice(liquid_pose, Vector3(inner_width_, inner_width_, depth),
                                                world.grid_spacing, parameters.GetDouble("particles_per_cell"));
    if (std::lround(depth / lattice.spacing.z()) < 2 || std::lround(inner_width_ / lattice.spacing.x()) < 2) {
      throw InputError(
          "keys 'liquid_depth', 'mug_inner_width', 'grid_spacing', 'particles_per_cell' give fewer than 2 particles "
          "across or up the liquid");
    }
    liquid_ = AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    const double floor_z = mug_pose.position.z() - inner_height_;
    SetHydrostaticVolumeRatio(liquid_, density, world.gravity.norm(), floor_z + depth,
                              parameters.GetDouble("bulk_modulus"), parameters.GetDouble("eos_exponent"),
                              world.particles);
    initial_volume_ratio_ = MeanVolumeRatio(world);
    liquid_volume_ = lattice.spacing.prod() * liquid_.size();
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("fraction_in_bin", "1",
                           "share of the liquid's particles inside the bin's outer hull below its rim");
    recorder.DeclareSeries("fraction_in_mug", "1",
                           "share of the liquid's particles inside the mug's outer hull below its rim");
    recorder.DeclareSeries("fraction_spilled", "1", "share of the liquid's particles in neither");
    recorder.DeclareSeries("particles_inside_walls", "1",
                           "liquid particles deeper than h/2 inside a wall of the mug or the bin (leakage)");
    recorder.DeclareSeries("deepest_wall_penetration", "m",
                           "largest depth of a liquid particle inside a wall of the mug or the bin");
    recorder.DeclareSeries("mean_volume_ratio", "1", "mean J = det F of the liquid's particles");
    recorder.DeclareSeries("mug_tilt", "deg", "rotation of the mug about +y");
    recorder.DeclareSeries("max_speed", "m/s", "largest particle speed");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const rigid::RigidBody& mug = world.bodies[mug_];
    int in_bin = 0, in_mug = 0, inside_walls = 0;
    double deepest = 0.0, speed = 0.0;
    // The mug's and the bin's outer hulls below their rims: a particle pressed a little into a
    // wall still counts as held there (particles_inside_walls counts leakage).
    const double half_bin = 0.5 * bin_width_ + bin_wall_, half_mug = 0.5 * inner_width_ + mug_wall_;
    for (int p = liquid_.begin; p < liquid_.end; ++p) {
      const Vector3& x = world.particles.position[p];
      const Vector3 local = mug.pose.InverseTransformPoint(x);
      if (std::abs(local.x()) < half_mug && std::abs(local.y()) < half_mug && local.z() > -inner_height_ - mug_wall_ &&
          local.z() < 0.0) {
        ++in_mug;
      } else if (std::abs(x.x()) < half_bin && std::abs(x.y()) < half_bin && x.z() > -bin_wall_ &&
                 x.z() < bin_height_) {
        ++in_bin;
      }
      double depth = 0.0;
      for (const int b : walls_) {
        const rigid::RigidBody& body = world.bodies[b];
        for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
          depth = std::max(depth, -contact::QueryGeometry(body, g, x).signed_distance);
        }
      }
      if (depth > 0.5 * spacing_h_) ++inside_walls;
      deepest = std::max(deepest, depth);
      speed = std::max(speed, world.particles.velocity[p].norm());
    }
    const double count = liquid_.size();
    final_in_bin_ = in_bin / count;
    final_in_mug_ = in_mug / count;
    const double volume_ratio = MeanVolumeRatio(world);
    recorder.AppendSeries("fraction_in_bin", t, {final_in_bin_});
    recorder.AppendSeries("fraction_in_mug", t, {final_in_mug_});
    recorder.AppendSeries("fraction_spilled", t, {1.0 - final_in_bin_ - final_in_mug_});
    recorder.AppendSeries("particles_inside_walls", t, {static_cast<double>(inside_walls)});
    recorder.AppendSeries("deepest_wall_penetration", t, {deepest});
    recorder.AppendSeries("mean_volume_ratio", t, {volume_ratio});
    recorder.AppendSeries("mug_tilt", t,
                          {2.0 * std::atan2(mug.pose.orientation.y(), mug.pose.orientation.w()) / kDegree});
    recorder.AppendSeries("max_speed", t, {speed});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    most_inside_walls_ = std::max(most_inside_walls_, inside_walls);
    deepest_ = std::max(deepest_, deepest);
    final_volume_ratio_ = volume_ratio;
    largest_drift_ = std::max(largest_drift_, std::abs(volume_ratio - initial_volume_ratio_));
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("final_fraction_in_bin", final_in_bin_);
    recorder.SetSummary("final_fraction_in_mug", final_in_mug_);
    recorder.SetSummary("final_fraction_spilled", 1.0 - final_in_bin_ - final_in_mug_);
    recorder.SetSummary("max_particles_inside_walls", std::int64_t{most_inside_walls_});
    recorder.SetSummary("max_wall_penetration", deepest_);
    recorder.SetSummary("max_wall_penetration_over_h", deepest_ / spacing_h_);
    recorder.SetSummary("initial_mean_volume_ratio", initial_volume_ratio_);
    recorder.SetSummary("final_mean_volume_ratio", final_volume_ratio_);
    recorder.SetSummary("max_volume_ratio_drift", largest_drift_);
    recorder.SetSummary("liquid_volume", liquid_volume_);
    recorder.SetSummary("particles", std::int64_t{liquid_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("final_in_bin", final_in_bin_);
    archive("final_in_mug", final_in_mug_);
    archive("most_inside_walls", most_inside_walls_);
    archive("deepest", deepest_);
    archive("final_volume_ratio", final_volume_ratio_);
    archive("largest_drift", largest_drift_);
  }

 private:
  double MeanVolumeRatio(const World& world) const {
    double sum = 0.0;
    for (int p = liquid_.begin; p < liquid_.end; ++p) sum += world.particles.deformation_gradient[p].determinant();
    return liquid_.size() > 0 ? sum / liquid_.size() : 1.0;
  }

  ParticleRange liquid_;
  int mug_ = -1;
  std::vector<int> walls_;  // the bin's bodies and the mug
  double inner_width_ = 0.0, inner_height_ = 0.0, bin_width_ = 0.0, bin_height_ = 0.0, spacing_h_ = 0.0;
  double mug_wall_ = 0.0, bin_wall_ = 0.0;
  double liquid_volume_ = 0.0, initial_volume_ratio_ = 1.0, final_volume_ratio_ = 1.0, largest_drift_ = 0.0;
  double final_in_bin_ = 0.0, final_in_mug_ = 1.0, deepest_ = 0.0;
  int most_inside_walls_ = 0;
};

std::unique_ptr<Scenario> MakeLiquidTransfer() {
  return std::make_unique<LiquidTransfer>();
}

}  // namespace

ScenarioInfo LiquidTransferInfo() {
  ParameterSpec bin = TableModelSpec();
  bin.default_value = std::string("sticky");
  bin.description =
      "How the bin and the ground it stands on meet the liquid: sticky grid walls (default, as hydrostatic_column and "
      "floating_box: slip and separating walls let particles creep into them), slip or separating grid walls, or "
      "contact_body. The mug moves and is always a contact body.";
  return ScenarioInfo{
      "liquid_transfer",
      "kinematic mug lifts, carries and tilts an equation-of-state liquid into an open bin: fraction poured, "
      "leakage through walls, J drift ([zong2024convex] §VII-D)",
      {
          {"mug_inner_width", 0.06, "m", "Inner width of the square mug (the spec's round mug: inner diameter 6 cm).",
           Positive()},
          {"mug_inner_height", 0.08, "m", "Inner height of the mug.", Positive()},
          {"mug_wall_thickness", 0.005, "m", "Thickness of the mug's floor and walls (the spec's 5 mm).", Positive()},
          {"liquid_depth", 0.028, "m", "Depth of the liquid in the mug at the start: 100.8 mL at the defaults.",
           Positive()},
          {"density", 1000.0, "kg/m^3", "Rest density of the liquid (water).", Positive()},
          {"bulk_modulus", 2e4, "Pa",
           "Bulk modulus kappa of the equation of state: sound speed 11.8 m/s, about five times the 2 m/s of the "
           "falling stream (as hydrostatic_column and floating_box).",
           Positive()},
          {"eos_exponent", 7.0, "1", "Exponent gamma of the equation of state (7 for water).",
           InClosedRange(1.5, 20.0)},
          {"mug_mu", 0.0, "1", "Friction coefficient between the mug and the liquid.", NonNegative()},
          {"bin_width", 0.2, "m", "Inner width of the square bin; with grid walls, twice a multiple of grid_spacing.",
           Positive()},
          {"bin_wall_height", 0.1, "m", "Height of the bin's walls above its floor.", Positive()},
          {"bin_wall_thickness", 0.01, "m", "Thickness of the bin's floor and walls.", Positive()},
          {"bin_mu", 0.0, "1", "Friction coefficient of the bin's floor and walls.", NonNegative()},
          bin,
          {"mug_start_x", -0.25, "m", "x of the mug's centre at the start, beside the bin.",
           InClosedRange(-10.0, 10.0)},
          {"lift_height", 0.12, "m", "How far the mug rises in the lift (the spec's 12 cm).", Positive()},
          {"lift_time", 1.0, "s", "Duration of the lift.", Positive()},
          {"pour_x", 0.0, "m", "x of the mug's rim centre, the pivot of the tilt, after the carry.",
           InClosedRange(-10.0, 10.0)},
          {"carry_time", 1.0, "s", "Duration of the carry over the bin.", Positive()},
          {"tilt_deg", 120.0, "deg", "Tilt of the mug about +y (the spec's 120 degrees): the rim faces +x and down.",
           InClosedRange(0.0, 180.0)},
          {"tilt_time", 2.0, "s", "Duration of the tilt; the mug then holds still.", Positive()},
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(5.0),
      },
      &MakeLiquidTransfer,
      {"grid_spacing=0.02", "liquid_depth=0.04", "duration=0.03"}};
}

}  // namespace contactlab::experiments
