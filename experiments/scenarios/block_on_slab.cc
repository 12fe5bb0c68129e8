#include "experiments/scenarios/block_on_slab.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "experiments/scenarios/scene_tools.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class BlockOnSlab final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double friction = parameters.GetDouble("mu");
    const double block_size = parameters.GetDouble("block_size");
    const double slab_width = parameters.GetDouble("slab_width");
    const double thickness = parameters.GetDouble("slab_thickness");
    const double density = parameters.GetDouble("density");
    const double gravity = parameters.GetDouble("gravity");
    settle_time_ = ReadSettleTime(parameters);
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    grid_spacing_ = world.grid_spacing;
    world.bodies.push_back(rigid::MakeStaticBody(
        "ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}}, rigid::Pose{}));

    // The slab, its lowest particle layer on the ground (scene_tools.h).
    world.materials.push_back(MakeElasticMaterial(parameters, "", "slab"));
    const Vector3 slab_size(slab_width, slab_width, thickness);
    const double particles_per_cell = parameters.GetDouble("particles_per_cell");
    const BoxLattice probe = SampleBoxLattice(rigid::Pose{}, slab_size, grid_spacing_, particles_per_cell);
    const double s = probe.spacing.z();
    if (probe.positions.size() < 8 || thickness / s < 1.5) {
      throw InputError(
          "keys 'slab_width', 'slab_thickness', 'grid_spacing', 'particles_per_cell' give fewer than 2 "
          "particle layers along an axis of the slab");
    }
    rigid::Pose slab_pose;
    slab_pose.position = Vector3(0.0, 0.0, 0.5 * thickness - 0.5 * s);
    const BoxLattice lattice = SampleBoxLattice(slab_pose, slab_size, grid_spacing_, particles_per_cell);
    slab_ = AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    slab_mass_ = MeasureParticles(world.particles, slab_, grid_spacing_, false).mass;

    // The top and bottom particle layers under the block's footprint: the slab's compression
    // is the change of the distance between their mean heights.
    const double span = thickness - s;
    const double footprint = 0.5 * std::min(block_size, slab_width);
    for (int p = slab_.begin; p < slab_.end; ++p) {
      const Vector3& x = world.particles.position[p];
      if (std::abs(x.x()) > footprint || std::abs(x.y()) > footprint) continue;
      if (std::abs(x.z()) < 0.25 * s) bottom_layer_.push_back(p);
      if (std::abs(x.z() - span) < 0.25 * s) top_layer_.push_back(p);
    }
    initial_span_ = LayerSpan(world);

    // The block, its bottom face on the top particle layer.
    rigid::Pose block_pose;
    block_pose.position = Vector3(0.0, 0.0, span + 0.5 * block_size);
    rigid::RigidBody block = rigid::MakeFreeBody(
        "block", {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * block_size)), rigid::Pose{}, friction}},
        parameters.GetDouble("block_density"), block_pose);
    block_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(block);
    block_mass_ = block.mass;
    half_block_ = 0.5 * block_size;
    initial_bottom_ = span;

    // The analytic compression (block_on_slab.h).
    const double area = std::pow(std::min(block_size, slab_width), 2);
    const double pressure = block_mass_ * gravity / area;
    const double youngs_modulus = parameters.GetDouble("youngs_modulus");
    const double modulus = ConstrainedModulus(youngs_modulus, parameters.GetDouble("poisson_ratio"));
    load_compression_ = SlabCompression(pressure, 0.0, gravity, thickness, span, modulus);
    analytic_compression_ = SlabCompression(pressure, density, gravity, thickness, span, modulus);
    uniaxial_stress_compression_ = SlabCompression(pressure, density, gravity, thickness, span, youngs_modulus);
    constrained_modulus_ = modulus;
    span_ = span;
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("block_height", "m", "height of the block's centre");
    recorder.DeclareSeries("block_bottom_height", "m", "height of the block's bottom face");
    recorder.DeclareAnalytic("block_bottom_height", "m",
                             "static equilibrium: the slab's top particle layer after the uniaxial-strain compression");
    recorder.DeclareSeries("slab_compression", "m",
                           "how far the slab's top and bottom particle layers under the block approached");
    recorder.DeclareAnalytic("slab_compression", "m", "uniaxial strain: (m g / A + rho g H / 2) (H - s) / M");
    recorder.DeclareSeries("block_drift", "m", "horizontal distance of the block's centre from its start");
    recorder.DeclareSeries("block_tilt", "rad", "angle between the block's axis and the vertical");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("max_penetration", "m", "deepest particle penetration into a rigid geometry");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const Vector3 center = world.bodies[block_].pose.position;
    const double bottom = center.z() - half_block_;
    const double compression = initial_span_ - LayerSpan(world);
    recorder.AppendSeries("block_height", t, {center.z()});
    recorder.AppendSeries("block_bottom_height", t, {bottom});
    recorder.AppendAnalytic("block_bottom_height", t, {initial_bottom_ - analytic_compression_});
    recorder.AppendSeries("slab_compression", t, {compression});
    recorder.AppendAnalytic("slab_compression", t, {analytic_compression_});
    recorder.AppendSeries("block_drift", t, {std::hypot(center.x(), center.y())});
    const double tilt =
        std::acos(std::clamp((world.bodies[block_].pose.orientation * Vector3::UnitZ()).z(), -1.0, 1.0));
    recorder.AppendSeries("block_tilt", t, {tilt});
    max_tilt_ = std::isnan(tilt) ? tilt : std::max(max_tilt_, tilt);
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("max_penetration", t, {report.max_penetration});
    if (t > 0.0 && t >= settle_time_ - 1e-12) {
      late_times_.push_back(t);
      late_bottoms_.push_back(bottom);
      late_compressions_.push_back(compression);
    }
    final_bottom_ = bottom;
    final_drift_ = std::hypot(center.x(), center.y());
  }

  void Summarize(RunRecorder& recorder) override {
    // Positive when the block moves down.
    const double sinking_rate = -FitSlope(late_times_, late_bottoms_);
    const double height = Mean(late_bottoms_);
    const double compression = Mean(late_compressions_);
    recorder.SetSummary("sinking_rate", sinking_rate);
    recorder.SetSummary("equilibrium_height", height);
    recorder.SetSummary("analytic_equilibrium_height", initial_bottom_ - analytic_compression_);
    recorder.SetSummary("height_error", height - (initial_bottom_ - analytic_compression_));
    recorder.SetSummary("compression", compression);
    recorder.SetSummary("analytic_compression", analytic_compression_);
    recorder.SetSummary("analytic_load_compression", load_compression_);
    recorder.SetSummary("uniaxial_stress_compression", uniaxial_stress_compression_);
    recorder.SetSummary("compression_error", compression / analytic_compression_ - 1.0);
    recorder.SetSummary("error_vs_analytic", std::abs(compression / analytic_compression_ - 1.0));
    recorder.SetSummary("final_bottom_height", final_bottom_);
    recorder.SetSummary("final_drift", final_drift_);
    recorder.SetSummary("max_tilt", max_tilt_);
    recorder.SetSummary("constrained_modulus", constrained_modulus_);
    recorder.SetSummary("layer_span", span_);
    recorder.SetSummary("settle_time", settle_time_);
    recorder.SetSummary("block_mass", block_mass_);
    recorder.SetSummary("slab_mass", slab_mass_);
    recorder.SetSummary("particles", std::int64_t{slab_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("late_times", late_times_);
    archive("late_bottoms", late_bottoms_);
    archive("late_compressions", late_compressions_);
    archive("final_bottom", final_bottom_);
    archive("final_drift", final_drift_);
    archive("max_tilt", max_tilt_);
  }

 private:
  // Mean height of the top layer minus that of the bottom layer [m].
  double LayerSpan(const World& world) const {
    double top = 0.0, bottom = 0.0;
    for (const int p : top_layer_) top += world.particles.position[p].z();
    for (const int p : bottom_layer_) bottom += world.particles.position[p].z();
    return top / static_cast<double>(top_layer_.size()) - bottom / static_cast<double>(bottom_layer_.size());
  }

  double settle_time_ = 0.0, grid_spacing_ = 0.0, half_block_ = 0.0, span_ = 0.0;
  double block_mass_ = 0.0, slab_mass_ = 0.0, initial_bottom_ = 0.0, initial_span_ = 0.0;
  double load_compression_ = 0.0, analytic_compression_ = 0.0, uniaxial_stress_compression_ = 0.0;
  double constrained_modulus_ = 0.0;
  int block_ = -1;
  ParticleRange slab_;
  std::vector<int> top_layer_, bottom_layer_;
  std::vector<double> late_times_, late_bottoms_, late_compressions_;
  double final_bottom_ = kNaN, final_drift_ = kNaN, max_tilt_ = 0.0;
};

std::unique_ptr<Scenario> MakeBlockOnSlab() {
  return std::make_unique<BlockOnSlab>();
}

}  // namespace

double ConstrainedModulus(double youngs_modulus, double poisson_ratio) {
  return youngs_modulus * (1.0 - poisson_ratio) / ((1.0 + poisson_ratio) * (1.0 - 2.0 * poisson_ratio));
}

double SlabCompression(double pressure, double slab_density, double gravity, double thickness, double span,
                       double modulus) {
  return (pressure + 0.5 * slab_density * gravity * thickness) * span / modulus;
}

ScenarioInfo BlockOnSlabInfo() {
  ScenarioInfo info{
      "block_on_slab",
      "rigid block resting on an elastic MPM slab: comes to rest at the elastic compression or sinks (spec 4.7 item 4)",
      {
          {"mu", 0.5, "1",
           "Friction coefficient of the ground and the block; 0.5 holds the slab's faces against the sideways bulge "
           "of its compression (the spec gives none).",
           NonNegative()},
          {"block_size", 0.1, "m", "Edge length of the cubic rigid block (spec A14).", Positive()},
          {"block_density", 2000.0, "kg/m^3",
           "Density of the rigid block; 2000 (2 kg) makes its pressure eight times the slab's mean self-weight stress.",
           Positive()},
          {"slab_width", 0.1, "m",
           "Edge length of the slab's square footprint; as wide as the block, so the block loads the slab's top "
           "uniformly as the analytic estimate assumes.",
           Positive()},
          {"slab_thickness", 0.05, "m", "Thickness H of the slab: 5 grid cells and 10 particle layers at the defaults.",
           Positive()},
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(2.0),
          {"settle_time", 0.5, "s",
           "Start of the window of the sinking-rate fit and the equilibrium averages: about six periods of the "
           "block bouncing on the slab (0.08 s at the defaults).",
           NonNegative()},
      },
      &MakeBlockOnSlab,
      {"grid_spacing=0.05", "settle_time=0.01", "duration=0.03"}};
  const std::vector<ParameterSpec> material = ElasticMaterialSpecs(
      "", 1000.0, 5e4,
      "Young's modulus of the slab: 5e4 Pa compresses the default slab by 3% (1.5 mm) under the block, ten times "
      "the depth a penalty contact settles at h = 0.01 m and small enough for linear elasticity.",
      "linear_corotated",
      "Elastic model of the slab: linear corotated, whose stress is linear in the stretch, so the slab's uniform "
      "compression is that of linear elasticity, as the analytic estimate assumes.");
  info.parameters.insert(info.parameters.end(), material.begin(), material.end());
  return info;
}

}  // namespace contactlab::experiments
