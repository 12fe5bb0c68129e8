#include "experiments/scenarios/sand_pile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "formulations/contact/grid_boundary.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDegree = 3.14159265358979323846 / 180.0;
// Fraction of the sand inside the footprint radius r∞.
constexpr double kFootprintFraction = 0.99;
// The flank the slope is fitted on: surface heights between these fractions of the peak.
constexpr double kFlankLow = 0.25;
constexpr double kFlankHigh = 0.75;

class SandPile final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    radius_ = parameters.GetDouble("column_radius");
    height_ = parameters.GetDouble("column_height");
    const double density = parameters.GetDouble("density");
    const double gravity = parameters.GetDouble("gravity");
    friction_angle_ = parameters.GetDouble("friction_angle");
    cohesion_ = parameters.GetDouble("cohesion");
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");

    world.materials.push_back(MakeSandMaterial(parameters, friction_angle_));

    // The floor: top face at z = 0 (a node plane, as grid walls need), wide enough for a
    // run-out of several column heights.
    const double half = radius_ + 4.0 * std::max(height_, radius_) + 2.0 * world.grid_spacing;
    const double thickness = 0.05;
    rigid::Pose floor_pose;
    floor_pose.position = Vector3(0.0, 0.0, -0.5 * thickness);
    world.bodies.push_back(
        rigid::MakeStaticBody("floor",
                              {rigid::Geometry{rigid::Shape::Box(Vector3(half, half, 0.5 * thickness)), rigid::Pose{},
                                               parameters.GetDouble("floor_mu")}},
                              floor_pose));
    ApplyTableModel(parameters, world.bodies.back());

    // The column: the lattice of its bounding box, cut to the cylinder; each particle keeps
    // the lattice cell's volume, so the mass is ρ times the sampled volume.
    rigid::Pose pose;
    pose.position = Vector3(0.0, 0.0, 0.5 * height_);
    const BoxLattice lattice = SampleBoxLattice(pose, Vector3(2.0 * radius_, 2.0 * radius_, height_),
                                                world.grid_spacing, parameters.GetDouble("particles_per_cell"));
    spacing_ = lattice.spacing.z();
    std::vector<Vector3> inside;
    for (const Vector3& x : lattice.positions) {
      if (x.head<2>().norm() <= radius_) inside.push_back(x);
    }
    const int across = static_cast<int>(std::lround(2.0 * radius_ / lattice.spacing.x()));
    const int layers = static_cast<int>(std::lround(height_ / spacing_));
    if (across < 2 || layers < 3 || inside.empty()) {
      throw InputError(
          "keys 'column_radius', 'column_height', 'grid_spacing', 'particles_per_cell' give fewer than 3 particle "
          "layers or 2 particles across the column");
    }
    sand_ = AddParticles(inside, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    volume_ = sand_.size() * lattice.spacing.prod();
    elastic_settlement_ = density * gravity * height_ * height_ / (2.0 * parameters.GetDouble("youngs_modulus"));
    critical_cohesion_ = density * gravity * height_ * (1.0 - std::sin(friction_angle_ * kDegree)) /
                         (2.0 * std::cos(friction_angle_ * kDegree));

    // The surface profile: radial bins one particle spacing wide out to the floor's edge.
    bin_width_ = spacing_;
    bins_ = static_cast<int>(std::ceil(half / bin_width_));
    // The cone of angle φ holding the same volume: V = π R² H/3 with H = R tan φ.
    const double slope = std::tan(friction_angle_ * kDegree);
    repose_radius_ = std::cbrt(3.0 * volume_ / (3.14159265358979323846 * slope));
    repose_height_ = repose_radius_ * slope;
  }

  void DeclareObservables(RunRecorder& recorder) override {
    std::vector<std::string> columns;
    for (int bin = 0; bin < bins_; ++bin) {
      char name[32];
      std::snprintf(name, sizeof(name), "r=%.4g", (bin + 0.5) * bin_width_);
      columns.emplace_back(name);
    }
    recorder.DeclareSeries("surface_height", "m",
                           "height of the sand's surface per radial bin (highest particle + half a spacing; 0 where "
                           "no sand)",
                           columns);
    recorder.DeclareAnalytic("surface_height", "m",
                             "cone of the friction angle holding the same volume (the steepest static pile)", columns);
    recorder.DeclareSeries("pile_height", "m", "highest particle plus half a particle spacing");
    recorder.DeclareSeries("footprint_radius", "m", "radius inside which 99% of the sand lies");
    recorder.DeclareSeries("slope_angle", "deg", "angle of the pile's flank, fitted between 25% and 75% of its height");
    recorder.DeclareAnalytic("slope_angle", "deg", "friction angle: the steepest static slope");
    recorder.DeclareSeries("kinetic_energy", "J", "kinetic energy of the sand");
    recorder.DeclareSeries("max_speed", "m/s", "largest particle speed");
    recorder.DeclareSeries("grid_boundary_nodes", "1", "grid nodes the floor held as a grid wall");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    std::vector<double> surface(bins_, 0.0), radii;
    radii.reserve(sand_.size());
    double top = 0.0, kinetic = 0.0, speed = 0.0;
    for (int p = sand_.begin; p < sand_.end; ++p) {
      const Vector3& x = world.particles.position[p];
      const double r = x.head<2>().norm();
      const int bin = std::min(bins_ - 1, static_cast<int>(r / bin_width_));
      surface[bin] = std::max(surface[bin], x.z() + 0.5 * spacing_);
      top = std::max(top, x.z() + 0.5 * spacing_);
      radii.push_back(r);
      const double v = world.particles.velocity[p].norm();
      kinetic += 0.5 * world.particles.mass[p] * v * v;
      speed = std::max(speed, v);
    }
    const std::size_t kept = std::min(radii.size() - 1, static_cast<std::size_t>(kFootprintFraction * radii.size()));
    std::nth_element(radii.begin(), radii.begin() + kept, radii.end());
    const double footprint = radii[kept];
    const double angle = FlankAngle(surface, top);

    std::vector<double> cone(bins_);
    for (int bin = 0; bin < bins_; ++bin) {
      const double r = (bin + 0.5) * bin_width_;
      cone[bin] = std::max(0.0, repose_height_ - r * std::tan(friction_angle_ * kDegree));
    }
    recorder.AppendSeries("surface_height", t, surface);
    recorder.AppendAnalytic("surface_height", t, cone);
    recorder.AppendSeries("pile_height", t, {top});
    recorder.AppendSeries("footprint_radius", t, {footprint});
    recorder.AppendSeries("slope_angle", t, {angle});
    recorder.AppendAnalytic("slope_angle", t, {friction_angle_});
    recorder.AppendSeries("kinetic_energy", t, {kinetic});
    recorder.AppendSeries("max_speed", t, {speed});
    recorder.AppendSeries("grid_boundary_nodes", t, {static_cast<double>(report.grid_boundary_nodes)});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    final_height_ = top;
    times_.push_back(t);
    heights_.push_back(top);
    final_footprint_ = footprint;
    final_angle_ = angle;
    final_speed_ = speed;
    final_kinetic_ = kinetic;
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("slope_angle", final_angle_);
    recorder.SetSummary("friction_angle", friction_angle_);
    recorder.SetSummary("slope_angle_error", final_angle_ - friction_angle_);
    recorder.SetSummary("error_vs_analytic", (final_angle_ - friction_angle_) / friction_angle_);
    recorder.SetSummary("final_height", final_height_);
    recorder.SetSummary("final_height_ratio", final_height_ / height_);
    recorder.SetSummary("column_height", height_);
    // The settlement from the height averaged over the last fifth of the run: an elastic
    // column still rings about its static shape.
    std::vector<double> late;
    for (std::size_t k = 0; k < times_.size(); ++k) {
      if (times_[k] >= 0.8 * times_.back()) late.push_back(heights_[k]);
    }
    recorder.SetSummary("settlement", height_ - Mean(late));
    recorder.SetSummary("analytic_elastic_settlement", elastic_settlement_);
    recorder.SetSummary("aspect_ratio", height_ / radius_);
    recorder.SetSummary("runout", (final_footprint_ - radius_) / radius_);
    recorder.SetSummary("cohesion", cohesion_);
    recorder.SetSummary("analytic_critical_cohesion", critical_cohesion_);
    recorder.SetSummary("cohesion_ratio", cohesion_ / critical_cohesion_);
    recorder.SetSummary("repose_cone_height", repose_height_);
    recorder.SetSummary("final_max_speed", final_speed_);
    recorder.SetSummary("final_kinetic_energy", final_kinetic_);
    recorder.SetSummary("particles", std::int64_t{sand_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("times", times_);
    archive("heights", heights_);
    archive("final_height", final_height_);
    archive("final_footprint", final_footprint_);
    archive("final_angle", final_angle_);
    archive("final_speed", final_speed_);
    archive("final_kinetic", final_kinetic_);
  }

 private:
  // The flank's angle [deg]: a least-squares line through the surface heights of the bins,
  // moving out from the peak, whose height lies between kFlankLow and kFlankHigh of the
  // peak's; NaN with fewer than three such bins (a column that has not spread).
  double FlankAngle(const std::vector<double>& surface, double top) const {
    const int peak = static_cast<int>(std::max_element(surface.begin(), surface.end()) - surface.begin());
    std::vector<double> r, z;
    for (int bin = peak; bin < bins_; ++bin) {
      if (surface[bin] >= kFlankLow * top && surface[bin] <= kFlankHigh * top) {
        r.push_back((bin + 0.5) * bin_width_);
        z.push_back(surface[bin]);
      }
      if (surface[bin] < kFlankLow * top) break;
    }
    if (r.size() < 3) return kNaN;
    return std::atan(-FitSlope(r, z)) / kDegree;
  }

  ParticleRange sand_;
  std::vector<double> times_, heights_;
  int bins_ = 0;
  double radius_ = 0.0, height_ = 0.0, friction_angle_ = 0.0, cohesion_ = 0.0, spacing_ = 0.0, bin_width_ = 0.0;
  double volume_ = 0.0, critical_cohesion_ = 0.0, elastic_settlement_ = 0.0, repose_radius_ = 0.0, repose_height_ = 0.0;
  double final_height_ = kNaN, final_footprint_ = kNaN, final_angle_ = kNaN, final_speed_ = kNaN, final_kinetic_ = kNaN;
};

std::unique_ptr<Scenario> MakeSandPile() {
  return std::make_unique<SandPile>();
}

}  // namespace

ScenarioInfo SandPileInfo() {
  ParameterSpec floor = TableModelSpec();
  floor.default_value = std::string("sticky");
  floor.description =
      "How the floor meets the sand: a sticky grid wall (default: v = 0 on the nodes inside it, a rough base as in "
      "column-collapse experiments), slip or separating grid walls, or contact_body (particles register contacts, "
      "friction floor_mu); formulations/contact/grid_boundary.h.";
  return ScenarioInfo{
      "sand_pile",
      "Drucker-Prager sand column released on a rough floor: pile slope against the friction angle, standing "
      "against the critical cohesion (issue 19)",
      {
          {"column_radius", 0.1, "m", "Radius R0 of the sand cylinder at release.", Positive()},
          {"column_height", 0.05, "m",
           "Height H0 of the sand cylinder at release. The default aspect ratio H0/R0 = 0.5 slumps: the edge fails "
           "and comes to rest as a flank at the friction angle while the top stays; tall columns (H0/R0 above about "
           "1) flow out and stop at lower slopes.",
           Positive()},
          {"density", 1600.0, "kg/m^3", "Bulk density of the sand (dry sand, 1,500-1,700).", Positive()},
          {"youngs_modulus", 3.537e5, "Pa",
           "Young's modulus of the sand's Hencky elasticity: 100 times below [ding_schroeder_penalty]'s 35.37e6 Pa "
           "(spec-penalty-hybrid "
           "1.8), which would need 10 times the explicit substeps; the column's weight strains it by rho g H0 / E = "
           "0.2%, "
           "so the slope does not depend on it.",
           Positive()},
          {"poisson_ratio", 0.3, "1", "Poisson's ratio of the sand ([ding_schroeder_penalty]).",
           InHalfOpenRange(-0.99, 0.5)},
          {"friction_angle", 30.0, "deg",
           "Friction angle phi of the Drucker-Prager cone (spec-penalty-hybrid A14: 30 degrees; the seeds give none).",
           InHalfOpenRange(1.0, 89.0)},
          {"cohesion", 0.0, "Pa",
           "Cohesion c: moves the cone's apex to the tensile mean stress c cot(phi); 0 for dry sand. On a slip floor "
           "the column stays elastic above c* = rho g H0 (1 - sin phi)/(2 cos phi) (summary "
           "analytic_critical_cohesion: 227 Pa at the defaults) and flows at its base below it.",
           NonNegative()},
          {"floor_mu", 0.6, "1", "Friction coefficient of the floor under table_model = contact_body.", NonNegative()},
          floor,
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(1.0),
      },
      &MakeSandPile,
      {"grid_spacing=0.025", "duration=0.03"}};
}

}  // namespace contactlab::experiments
