#include "experiments/scenarios/column_collapse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "experiments/scenarios/column_release.h"
#include "experiments/scenarios/scene_tools.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDegree = 3.14159265358979323846 / 180.0;
// Lube et al. 2005 [`lube2005collapses`], planar collapses: run-out (d∞ − d_i)/d_i ≈ 1.2 a
// up to a ≈ 1.8 and ≈ 1.9 a^(2/3) from a ≈ 2.8.
constexpr double kLinearCoefficient = 1.2;
constexpr double kLinearUpTo = 1.8;
constexpr double kPowerCoefficient = 1.9;
constexpr double kPowerExponent = 2.0 / 3.0;
constexpr double kPowerFrom = 2.8;
// Empty bins of one particle spacing that detach what lies beyond them from the deposit.
constexpr int kDetachGapBins = 2;

// The friction angle of Mohr–Coulomb that a Drucker–Prager cone of Klár et al.'s angle φ_c
// (matched in triaxial compression) reproduces in plane strain. Klár's cone bounds
// √J₂ ≤ A p with A = 2√3 sin φ_c/(3 − sin φ_c); its flow is deviatoric, so in plane strain
// (no plastic strain along y) the stress along y is the mean of the other two, √J₂ is half
// their difference and the bound reads sin φ_ps = A. At φ_c = 30°, φ_ps = 43.9°.
double PlaneStrainAngle(double cone_angle_degrees) {
  const double s = std::sin(cone_angle_degrees * kDegree);
  return std::asin(std::min(1.0, 2.0 * std::sqrt(3.0) * s / (3.0 - s))) / kDegree;
}
// Its inverse: the cone angle φ_c whose plane-strain angle is φ_ps, sin φ_c = 3 sin φ_ps /
// (2√3 + sin φ_ps). At φ_ps = 30°, φ_c = 22.2°.
double ConeAngleForPlaneStrain(double plane_strain_degrees) {
  const double s = std::sin(plane_strain_degrees * kDegree);
  return std::asin(3.0 * s / (2.0 * std::sqrt(3.0) + s)) / kDegree;
}

double LinearBranch(double aspect_ratio) {
  return kLinearCoefficient * aspect_ratio;
}
double PowerBranch(double aspect_ratio) {
  return kPowerCoefficient * std::pow(aspect_ratio, kPowerExponent);
}

class ColumnCollapse final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    width_ = parameters.GetDouble("column_width");
    aspect_ratio_ = parameters.GetDouble("aspect_ratio");
    height_ = aspect_ratio_ * width_;
    const double gravity = parameters.GetDouble("gravity");
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    if (!(gravity > 0.0)) throw InputError("key 'gravity': a column without gravity does not collapse");
    rest_speed_ = parameters.GetDouble("rest_speed_fraction") * std::sqrt(gravity * height_);
    time_scale_ = std::sqrt(height_ / gravity);

    // The angle the cone takes: friction_angle itself (matched in triaxial compression, as in
    // sand_pile) or the one whose plane-strain angle is friction_angle.
    const double friction_angle = parameters.GetDouble("friction_angle");
    cone_angle_ = parameters.GetString("friction_angle_match") == "plane_strain"
                      ? ConeAngleForPlaneStrain(friction_angle)
                      : friction_angle;
    world.materials.push_back(MakeSandMaterial(parameters, cone_angle_));
    // Room for half as much again as the larger branch's run-out.
    const double expected = std::max(LinearBranch(aspect_ratio_), PowerBranch(aspect_ratio_));
    channel_ = AddChannel(parameters, width_ * (1.0 + 1.5 * expected) + 2.0 * world.grid_spacing, 1.2 * height_,
                          parameters.GetDouble("floor_mu"), world);
    Vector3 spacing;
    sand_ = AddColumn(parameters, channel_, width_, height_, world.materials.back(), 0, world, &spacing);
    spacing_ = spacing.x();
    if (std::lround(width_ / spacing.x()) < 2 || std::lround(height_ / spacing.z()) < 3) {
      throw InputError(
          "keys 'column_width', 'aspect_ratio', 'grid_spacing', 'particles_per_cell' give fewer than 2 particles "
          "across or 3 layers up the column");
    }
    bins_ = static_cast<int>(std::ceil(channel_.length / spacing_));

    if (aspect_ratio_ <= kLinearUpTo) {
      branch_ = 1;
      analytic_runout_ = LinearBranch(aspect_ratio_);
    } else if (aspect_ratio_ >= kPowerFrom) {
      branch_ = 2;
      analytic_runout_ = PowerBranch(aspect_ratio_);
    }
  }

  void DeclareObservables(RunRecorder& recorder) override {
    std::vector<std::string> columns;
    for (int bin = 0; bin < bins_; ++bin) {
      char name[32];
      std::snprintf(name, sizeof(name), "x=%.4g", (bin + 0.5) * spacing_);
      columns.emplace_back(name);
    }
    recorder.DeclareSeries("surface_height", "m",
                           "height of the sand's surface per bin along the channel (highest particle + half a "
                           "spacing; 0 where no sand)",
                           columns);
    recorder.DeclareSeries("runout", "1",
                           "(d - d_i)/d_i with d the far edge of the sand attached to the deposit (grains beyond "
                           "two empty particle spacings excluded)");
    recorder.DeclareAnalytic("runout", "1",
                             "Lube et al. 2005 planar fit: 1.2 a (a <= 1.8) or 1.9 a^(2/3) (a >= 2.8); NaN between");
    recorder.DeclareSeries("runout_farthest", "1", "(d - d_i)/d_i with d the farthest particle plus half a spacing");
    recorder.DeclareSeries("height", "m", "highest particle plus half a spacing");
    recorder.DeclareSeries("kinetic_energy", "J", "kinetic energy of the sand");
    recorder.DeclareSeries("max_speed", "m/s", "largest particle speed");
    recorder.DeclareSeries("grid_boundary_nodes", "1", "grid nodes the channel's walls held");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    std::vector<double> surface(bins_, 0.0);
    double top = 0.0, kinetic = 0.0, speed = 0.0;
    for (int p = sand_.begin; p < sand_.end; ++p) {
      const Vector3& x = world.particles.position[p];
      const int bin = std::clamp(static_cast<int>(std::floor(x.x() / spacing_)), 0, bins_ - 1);
      surface[bin] = std::max(surface[bin], x.z() + 0.5 * spacing_);
      top = std::max(top, x.z() + 0.5 * spacing_);
      const double v = world.particles.velocity[p].norm();
      kinetic += 0.5 * world.particles.mass[p] * v * v;
      speed = std::max(speed, v);
    }
    const double runout = (ConnectedFront(world.particles, sand_, spacing_, kDetachGapBins) - width_) / width_;
    const double farthest = (FarthestParticle(world.particles, sand_, spacing_) - width_) / width_;
    recorder.AppendSeries("surface_height", t, surface);
    recorder.AppendSeries("runout", t, {runout});
    recorder.AppendAnalytic("runout", t, {analytic_runout_});
    recorder.AppendSeries("runout_farthest", t, {farthest});
    recorder.AppendSeries("height", t, {top});
    recorder.AppendSeries("kinetic_energy", t, {kinetic});
    recorder.AppendSeries("max_speed", t, {speed});
    recorder.AppendSeries("grid_boundary_nodes", t, {static_cast<double>(report.grid_boundary_nodes)});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    // The time to rest: the first sample after the last one faster than the rest speed.
    if (speed > rest_speed_) rest_time_ = kNaN;
    if (speed <= rest_speed_ && std::isnan(rest_time_) && t > 0.0) rest_time_ = t;
    final_runout_ = runout;
    final_farthest_ = farthest;
    final_height_ = top;
    final_speed_ = speed;
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("runout", final_runout_);
    recorder.SetSummary("runout_farthest", final_farthest_);
    recorder.SetSummary("analytic_runout", analytic_runout_);
    recorder.SetSummary("analytic_runout_linear", LinearBranch(aspect_ratio_));
    recorder.SetSummary("analytic_runout_power", PowerBranch(aspect_ratio_));
    recorder.SetSummary("analytic_branch", std::int64_t{branch_});
    recorder.SetSummary("runout_error", final_runout_ / analytic_runout_ - 1.0);
    recorder.SetSummary("error_vs_analytic", std::abs(final_runout_ / analytic_runout_ - 1.0));
    recorder.SetSummary("aspect_ratio", aspect_ratio_);
    recorder.SetSummary("column_height", height_);
    recorder.SetSummary("final_height_ratio", final_height_ / width_);
    recorder.SetSummary("time_to_rest", rest_time_);
    recorder.SetSummary("time_to_rest_scaled", rest_time_ / time_scale_);
    recorder.SetSummary("rest_speed", rest_speed_);
    recorder.SetSummary("final_max_speed", final_speed_);
    recorder.SetSummary("channel_length", channel_.length);
    recorder.SetSummary("cone_friction_angle", cone_angle_);
    recorder.SetSummary("plane_strain_friction_angle", PlaneStrainAngle(cone_angle_));
    recorder.SetSummary("particles", std::int64_t{sand_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("rest_time", rest_time_);
    archive("final_runout", final_runout_);
    archive("final_farthest", final_farthest_);
    archive("final_height", final_height_);
    archive("final_speed", final_speed_);
  }

 private:
  ParticleRange sand_;
  Channel channel_;
  int bins_ = 0;
  std::int64_t branch_ = 0;  // 1 linear, 2 power law, 0 the transition
  double width_ = 0.0, height_ = 0.0, aspect_ratio_ = 0.0, spacing_ = 0.0, rest_speed_ = 0.0, time_scale_ = 0.0;
  double cone_angle_ = 0.0, analytic_runout_ = kNaN, rest_time_ = kNaN;
  double final_runout_ = kNaN, final_farthest_ = kNaN, final_height_ = kNaN, final_speed_ = kNaN;
};

std::unique_ptr<Scenario> MakeColumnCollapse() {
  return std::make_unique<ColumnCollapse>();
}

}  // namespace

ScenarioInfo ColumnCollapseInfo() {
  ParameterSpec floor = TableModelSpec();
  floor.default_value = std::string("sticky");
  floor.description =
      "How the channel's floor meets the sand: a sticky grid wall (default: v = 0 on the nodes inside it, a rough "
      "base on which the lowest grains do not slide), slip, separating (Coulomb friction floor_mu) or contact_body "
      "(particles register contacts, friction floor_mu); formulations/contact/grid_boundary.h.";
  return ScenarioInfo{
      "column_collapse",
      "Drucker-Prager sand column collapsing along a channel: run-out against the planar scaling of Lube et al. "
      "2005 (issue 19)",
      {
          {"column_width", 0.05, "m", "Width d_i of the sand column along the channel at release.", Positive()},
          {"aspect_ratio", 1.0, "1",
           "Aspect ratio a = h_i/d_i of the column at release. Lube et al.'s run-out fit is 1.2 a up to 1.8 and "
           "1.9 a^(2/3) from 2.8; 1 lies on the first branch.",
           InClosedRange(0.1, 20.0)},
          {"density", 1600.0, "kg/m^3", "Bulk density of the sand (dry sand, 1,500-1,700).", Positive()},
          {"youngs_modulus", 3.537e5, "Pa",
           "Young's modulus of the sand's Hencky elasticity, as in sand_pile: 100 times below "
           "[ding_schroeder_penalty]'s sand; the "
           "column's weight strains it by rho g h_i / E = 0.2% at a = 1, so the run-out does not depend on it.",
           Positive()},
          {"poisson_ratio", 0.3, "1", "Poisson's ratio of the sand ([ding_schroeder_penalty]).",
           InHalfOpenRange(-0.99, 0.5)},
          {"friction_angle", 30.0, "deg",
           "Friction angle phi of the Drucker-Prager cone (spec-penalty-hybrid A14, as in sand_pile; Lube et al.'s "
           "materials had angles of repose of about 30 degrees or more).",
           InHalfOpenRange(1.0, 89.0)},
          {"friction_angle_match", std::string("plane_strain"), "",
           "What friction_angle means: plane_strain (default): the Drucker-Prager cone is narrowed so that in this "
           "planar slab it acts as Mohr-Coulomb of friction_angle (a cone of 22.2 degrees for 30; summary "
           "cone_friction_angle), the stress state of a planar collapse; triaxial_compression: friction_angle is the "
           "cone's own angle, matched to Mohr-Coulomb in triaxial compression as in the axisymmetric sand_pile, which "
           "in plane strain acts as 43.9 degrees at 30 (summary plane_strain_friction_angle) and stops the collapse "
           "short (run-out 0.70 against 1.05 at a = 1).",
           OneOf({"triaxial_compression", "plane_strain"})},
          {"cohesion", 0.0, "Pa", "Cohesion c of the cone; 0 for the dry grains of the experiments.", NonNegative()},
          {"floor_mu", 0.6, "1", "Friction coefficient of the floor under table_model = separating or contact_body.",
           NonNegative()},
          floor,
          WallModelSpec(),
          SlabCellsSpec(),
          {"rest_speed_fraction", 0.02, "1",
           "The sand is at rest once its largest particle speed stays below this fraction of sqrt(g h_i) (the "
           "scale of the collapse's speeds); summary time_to_rest.",
           InClosedRange(0.0, 1.0)},
          GravitySpec(),
          GridSpacingSpec(0.005),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.005),
          DurationSpec(1.0),
      },
      &MakeColumnCollapse,
      {"grid_spacing=0.0125", "dt=0.005", "duration=0.02"}};
}

}  // namespace contactlab::experiments
