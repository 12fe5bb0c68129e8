#include "experiments/scenarios/floating_box.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "formulations/contact/grid_boundary.h"

namespace contactlab::experiments {
namespace {

using mpm::Matrix3;
using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDegree = 3.14159265358979323846 / 180.0;

class FloatingBox final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double width = parameters.GetDouble("container_width");
    const double depth = parameters.GetDouble("liquid_depth");
    const double liquid_density = parameters.GetDouble("liquid_density");
    const double box_density = parameters.GetDouble("box_density");
    box_width_ = parameters.GetDouble("box_width");
    box_height_ = parameters.GetDouble("box_height");
    settle_time_ = ReadSettleTime(parameters);
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));
    world.grid_spacing = parameters.GetDouble("grid_spacing");

    analytic_draft_ = box_density / liquid_density * box_height_;
    if (!(box_density < liquid_density)) {
      throw InputError("keys 'box_density', 'liquid_density': a box as dense as the liquid does not float");
    }
    if (!(box_width_ + 2.0 * world.grid_spacing <= width)) {
      throw InputError(
          "keys 'box_width', 'container_width', 'grid_spacing': the box needs a gap of at least one grid cell to "
          "each wall");
    }
    if (!(analytic_draft_ + world.grid_spacing <= depth)) {
      throw InputError("keys 'liquid_depth', 'box_density', 'box_height': the box would touch the floor");
    }
    AddSquareContainer(parameters, "container_width", width, parameters.GetDouble("wall_thickness"),
                       depth + box_height_ + 2.0 * world.grid_spacing, parameters.GetDouble("wall_mu"), world);

    // The box at its analytic draft: its bottom d below the liquid's level D.
    rigid::Pose box_pose;
    box_pose.position = Vector3(0.0, 0.0, depth - analytic_draft_ + 0.5 * box_height_);
    const Vector3 half_size(0.5 * box_width_, 0.5 * box_width_, 0.5 * box_height_);
    box_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeFreeBody(
        "box", {rigid::Geometry{rigid::Shape::Box(half_size), rigid::Pose{}, parameters.GetDouble("box_mu")}},
        box_density, box_pose));
    start_position_ = box_pose.position;

    // The liquid fills the container to D, less what the box occupies.
    world.materials.push_back(mpm::MakeLiquidMaterial("liquid", liquid_density, parameters.GetDouble("bulk_modulus"),
                                                      parameters.GetDouble("eos_exponent")));
    rigid::Pose pose;
    pose.position = Vector3(0.0, 0.0, 0.5 * depth);
    const BoxLattice lattice = SampleBoxLattice(pose, Vector3(width, width, depth), world.grid_spacing,
                                                parameters.GetDouble("particles_per_cell"));
    spacing_ = lattice.spacing.z();
    std::vector<Vector3> liquid;
    for (const Vector3& x : lattice.positions) {
      const Vector3 local = x - box_pose.position;
      const bool in_box = std::abs(local.x()) < half_size.x() && std::abs(local.y()) < half_size.y() &&
                          std::abs(local.z()) < half_size.z();
      if (!in_box) liquid.push_back(x);
    }
    if (static_cast<int>(std::lround(depth / spacing_)) < 3) {
      throw InputError("keys 'liquid_depth', 'grid_spacing', 'particles_per_cell' give fewer than 3 particle layers");
    }
    liquid_ = AddParticles(liquid, lattice.spacing.prod(), liquid_density, Vector3::Zero(), 0, world.particles);
    // The liquid starts at hydrostatic pressure, p = ρ_l g (D − z), J = (1 + p/κ)^(−1/γ): the
    // same under the box, whose weight is what the liquid it displaces weighs. From J = 1 the
    // liquid under the box would have no pressure at first and the box would fall into it.
    if (parameters.GetString("initial_pressure") == "hydrostatic") {
      SetHydrostaticVolumeRatio(liquid_, liquid_density, world.gravity.norm(), depth,
                                parameters.GetDouble("bulk_modulus"), parameters.GetDouble("eos_exponent"),
                                world.particles);
    }
    half_width_ = 0.5 * width;
    columns_ = static_cast<int>(std::lround(width / lattice.spacing.x()));
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("draft", "m", "liquid level minus the box's bottom (along the box's axis)");
    recorder.DeclareAnalytic("draft", "m", "box_density / liquid_density x box_height");
    recorder.DeclareSeries("liquid_level", "m",
                           "mean height of the liquid's surface away from the box (highest particle per lattice "
                           "column plus half a spacing)");
    recorder.DeclareSeries("box_height", "m", "height of the box's centre");
    recorder.DeclareSeries("box_tilt", "deg", "angle between the box's axis and the vertical");
    recorder.DeclareSeries("box_drift", "m", "sideways distance of the box's centre from where it started");
    recorder.DeclareSeries("box_vertical_velocity", "m/s", "vertical velocity of the box's centre");
    recorder.DeclareSeries("max_speed", "m/s", "largest particle speed");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("particles_in_box", "1", "liquid particles inside the box's volume (leaked into it)");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const rigid::RigidBody& box = world.bodies[box_];
    // The surface away from the box: per lattice column (cells of one particle spacing) the
    // highest particle, for columns more than a spacing outside the box's footprint. The
    // particles inside the box's volume are counted as well (leaked_particles): the box
    // displaces only what stays out of it.
    std::map<std::pair<int, int>, double> columns;
    double speed = 0.0;
    int leaked = 0;
    const double clear = 0.5 * box_width_ + spacing_;
    const Matrix3 to_box = box.pose.rotation().transpose();
    for (int p = liquid_.begin; p < liquid_.end; ++p) {
      const Vector3& x = world.particles.position[p];
      speed = std::max(speed, world.particles.velocity[p].norm());
      const Vector3 offset = x - box.pose.position;
      const Vector3 local = to_box * offset;
      if (std::abs(local.x()) < 0.5 * box_width_ && std::abs(local.y()) < 0.5 * box_width_ &&
          std::abs(local.z()) < 0.5 * box_height_) {
        ++leaked;
      }
      if (std::abs(offset.x()) < clear && std::abs(offset.y()) < clear) continue;
      // Lattice columns of the container's inside; a particle on a wall's face belongs to the
      // column next to it.
      const auto column = [&](double coordinate) {
        return std::clamp(static_cast<int>(std::floor((coordinate + half_width_) / spacing_)), 0, columns_ - 1);
      };
      const std::pair<int, int> key(column(x.x()), column(x.y()));
      auto [it, inserted] = columns.emplace(key, x.z());
      if (!inserted) it->second = std::max(it->second, x.z());
    }
    double level = kNaN;
    if (!columns.empty()) {
      level = 0.0;
      for (const auto& [key, top] : columns) level += top;
      level = level / static_cast<double>(columns.size()) + 0.5 * spacing_;
    }
    const Vector3 axis = box.pose.rotation().col(2);
    const double tilt = std::acos(std::clamp(std::abs(axis.z()), 0.0, 1.0)) / kDegree;
    // The bottom face's centre, along the box's axis.
    const double bottom = box.pose.position.z() - 0.5 * box_height_ * std::abs(axis.z());
    const double draft = level - bottom;
    const double drift = (box.pose.position - start_position_).head<2>().norm();
    recorder.AppendSeries("draft", t, {draft});
    recorder.AppendAnalytic("draft", t, {analytic_draft_});
    recorder.AppendSeries("liquid_level", t, {level});
    recorder.AppendSeries("box_height", t, {box.pose.position.z()});
    recorder.AppendSeries("box_tilt", t, {tilt});
    recorder.AppendSeries("box_drift", t, {drift});
    recorder.AppendSeries("box_vertical_velocity", t, {box.linear_velocity.z()});
    recorder.AppendSeries("max_speed", t, {speed});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("particles_in_box", t, {static_cast<double>(leaked)});
    if (t > 0.0 && t >= settle_time_ - 1e-12) {
      late_drafts_.push_back(draft);
      late_tilt_ = std::max(late_tilt_, tilt);
      late_speeds_.push_back(speed);
    }
    final_drift_ = drift;
    final_leaked_ = leaked;
  }

  void Summarize(RunRecorder& recorder) override {
    const double draft = Mean(late_drafts_);
    double spread = 0.0;
    for (double value : late_drafts_) spread = std::max(spread, std::abs(value - draft));
    recorder.SetSummary("draft", draft);
    recorder.SetSummary("analytic_draft", analytic_draft_);
    // Particle contact stops the particles' centres, not the liquid's face half a spacing
    // beyond them: the liquid overlaps the box's bottom by s/2, so the box must sink that much
    // more to displace its weight.
    recorder.SetSummary("analytic_draft_particle_contact", analytic_draft_ + 0.5 * spacing_);
    recorder.SetSummary("draft_error", draft / analytic_draft_ - 1.0);
    recorder.SetSummary("error_vs_analytic", std::abs(draft / analytic_draft_ - 1.0));
    recorder.SetSummary("draft_heave_amplitude", spread);
    recorder.SetSummary("max_late_tilt", late_tilt_);
    recorder.SetSummary("final_drift", final_drift_);
    recorder.SetSummary("final_particles_in_box", std::int64_t{final_leaked_});
    recorder.SetSummary("mean_late_max_speed", Mean(late_speeds_));
    recorder.SetSummary("settle_time", settle_time_);
    recorder.SetSummary("particles", std::int64_t{liquid_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("late_drafts", late_drafts_);
    archive("late_speeds", late_speeds_);
    archive("late_tilt", late_tilt_);
    archive("final_drift", final_drift_);
    archive("final_leaked", final_leaked_);
  }

 private:
  ParticleRange liquid_;
  int box_ = -1;
  int columns_ = 0;  // lattice columns across the container
  Vector3 start_position_ = Vector3::Zero();
  std::vector<double> late_drafts_, late_speeds_;
  double box_width_ = 0.0, box_height_ = 0.0, analytic_draft_ = 0.0, settle_time_ = 0.0, spacing_ = 0.0;
  double half_width_ = 0.0, late_tilt_ = 0.0, final_drift_ = kNaN;
  int final_leaked_ = 0;
};

std::unique_ptr<Scenario> MakeFloatingBox() {
  return std::make_unique<FloatingBox>();
}

}  // namespace

ScenarioInfo FloatingBoxInfo() {
  ParameterSpec walls = TableModelSpec();
  walls.default_value = std::string("sticky");
  walls.description =
      "How the container meets the liquid: sticky grid walls (default, as hydrostatic_column: slip and separating "
      "walls let particles creep into them), slip or separating grid walls, or contact_body.";
  return ScenarioInfo{
      "floating_box",
      "rigid box floating in the equation-of-state liquid: draft against (box_density/liquid_density) x box_height "
      "(issue 19)",
      {
          {"container_width", 0.16, "m",
           "Inner width of the square container; with grid walls, twice a multiple of grid_spacing.", Positive()},
          {"liquid_depth", 0.08, "m", "Depth D of the liquid at rest (the level the box starts in).", Positive()},
          {"liquid_density", 1000.0, "kg/m^3", "Rest density of the liquid (water).", Positive()},
          {"bulk_modulus", 2e4, "Pa",
           "Bulk modulus kappa of the equation of state (as hydrostatic_column: sound speed 11.8 m/s).", Positive()},
          {"eos_exponent", 7.0, "1", "Exponent gamma of the equation of state (7 for water).",
           InClosedRange(1.5, 20.0)},
          {"box_width", 0.1, "m", "Width of the box along x and y.", Positive()},
          {"box_height", 0.05, "m",
           "Height b of the box: half its width, so that it floats upright (positive metacentric height) at the "
           "default density ratio.",
           Positive()},
          {"box_density", 500.0, "kg/m^3", "Density of the box: draft 25 mm at the defaults.", Positive()},
          {"box_mu", 0.0, "1", "Friction coefficient between the box and the liquid: 0, a liquid at rest has no shear.",
           NonNegative()},
          {"wall_thickness", 0.05, "m", "Thickness of the container's floor and walls.", Positive()},
          {"wall_mu", 0.0, "1", "Friction coefficient of the container's walls.", NonNegative()},
          walls,
          {"initial_pressure", std::string("hydrostatic"), "",
           "The liquid's state at the start: hydrostatic (J from p = rho_l g (D - z), the pressure that carries the "
           "box) or rest (J = 1 everywhere: the box falls onto liquid without pressure and the liquid rings).",
           OneOf({"hydrostatic", "rest"})},
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(2.0),
          {"settle_time", 1.0, "s",
           "Start of the draft average: the liquid rings and the box heaves (period 2 pi sqrt(d/g) = 0.3 s for "
           "d = 25 mm) before it.",
           NonNegative()},
      },
      &MakeFloatingBox,
      {"grid_spacing=0.02", "container_width=0.16", "box_width=0.1", "liquid_depth=0.08", "settle_time=0.01",
       "duration=0.03"}};
}

}  // namespace contactlab::experiments
