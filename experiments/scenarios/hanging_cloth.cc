#include "experiments/scenarios/hanging_cloth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/cloth_particles.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class HangingCloth final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double width = parameters.GetDouble("strip_width");
    length_ = parameters.GetDouble("strip_length");
    const double spacing = parameters.GetDouble("mesh_spacing");
    const double thickness = parameters.GetDouble("thickness");
    const double density = parameters.GetDouble("density");
    gravity_ = parameters.GetDouble("gravity");
    settle_time_ = ReadSettleTime(parameters);
    world.gravity = Vector3(0.0, 0.0, -gravity_);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    const int columns = static_cast<int>(std::lround(width / spacing)) + 1;
    const int rows = static_cast<int>(std::lround(length_ / spacing)) + 1;
    if (columns < 2 || rows < 3) {
      throw InputError("keys 'strip_width', 'strip_length', 'mesh_spacing' give fewer than 2 x 3 vertices");
    }
    world.materials.push_back(MakeClothMaterialFromKeys(parameters));
    // The strip in the x–z plane, its bottom row at z = −L and its top row, pinned, at z = 0.
    const mpm::ClothMesh mesh = mpm::RectangleCloth(width, length_, columns, rows, Vector3(-0.5 * width, 0.0, -length_),
                                                    Vector3::UnitX(), Vector3::UnitZ());
    const mpm::ClothRange range = mpm::AddCloth(mesh, thickness, 0, world.materials, Vector3::Zero(), world.particles);
    mpm::ClothPin top;
    for (int i = 0; i < columns; ++i) {
      bottom_.push_back(range.first_vertex_particle + i);
      top.particles.push_back(range.first_vertex_particle + (rows - 1) * columns + i);
    }
    world.particles.cloth_pins.push_back(top);
    double pinned_mass = 0.0;
    for (const int p : top.particles) pinned_mass += world.particles.mass[p];
    free_weight_ = gravity_ * (mpm::TotalMass(world.particles) - pinned_mass);
    vertices_ = static_cast<int>(mesh.rest_positions.size());
    faces_ = static_cast<int>(mesh.triangles.size());
    first_vertex_ = range.first_vertex_particle;

    const mpm::LameParameters& lame = world.materials[0].lame;
    const double mu = lame.shear_modulus, lambda = lame.first_lame_parameter;
    uniaxial_modulus_ = 4.0 * mu * (mu + lambda) / (2.0 * mu + lambda);
    analytic_elongation_ = density * gravity_ * length_ * length_ / (2.0 * uniaxial_modulus_);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("elongation", "m", "drop of the strip's bottom row (mean of its vertices)");
    recorder.DeclareAnalytic("elongation", "m", "static elongation rho g L^2 / (2 E_2) of the strip under its weight");
    recorder.DeclareSeries("pin_force", "N", "upward force the pin exerts on the free cloth (step mean)");
    recorder.DeclareAnalytic("pin_force", "N", "weight of the cloth below the pinned row");
    recorder.DeclareSeries("max_out_of_plane", "m", "largest distance of a vertex from the strip's plane y = 0");
    recorder.DeclareSeries("max_speed", "m/s", "largest vertex speed");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const mpm::Particles& particles = world.particles;
    double bottom = 0.0;
    for (const int p : bottom_) bottom += particles.position[p].z() / static_cast<double>(bottom_.size());
    const double elongation = -length_ - bottom;
    double out_of_plane = 0.0, speed = 0.0;
    for (int v = 0; v < vertices_; ++v) {
      out_of_plane = std::max(out_of_plane, std::abs(particles.position[first_vertex_ + v].y()));
      speed = std::max(speed, particles.velocity[first_vertex_ + v].norm());
    }
    recorder.AppendSeries("elongation", t, {elongation});
    recorder.AppendAnalytic("elongation", t, {analytic_elongation_});
    const double pin_force = report.pin_forces.empty() ? kNaN : report.pin_forces[0].z();
    recorder.AppendSeries("pin_force", t, {pin_force});
    recorder.AppendAnalytic("pin_force", t, {free_weight_});
    recorder.AppendSeries("max_out_of_plane", t, {out_of_plane});
    recorder.AppendSeries("max_speed", t, {speed});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    if (t > 0.0 && t >= settle_time_ - 1e-12) {
      late_elongations_.push_back(elongation);
      late_pin_forces_.push_back(pin_force);
    }
    largest_out_of_plane_ = std::max(largest_out_of_plane_, out_of_plane);
  }

  void Summarize(RunRecorder& recorder) override {
    const double mean = Mean(late_elongations_);
    double ringing = kNaN;
    if (!late_elongations_.empty()) {
      const auto [low, high] = std::minmax_element(late_elongations_.begin(), late_elongations_.end());
      ringing = (*high - *low) / analytic_elongation_;
    }
    const double error = mean / analytic_elongation_ - 1.0;
    recorder.SetSummary("mean_elongation", mean);
    recorder.SetSummary("analytic_elongation", analytic_elongation_);
    recorder.SetSummary("elongation_error", error);
    recorder.SetSummary("error_vs_analytic", std::abs(error));
    recorder.SetSummary("late_ringing", ringing);
    const double pin_force = Mean(late_pin_forces_);
    recorder.SetSummary("mean_pin_force", pin_force);
    recorder.SetSummary("free_weight", free_weight_);
    recorder.SetSummary("pin_force_error", pin_force / free_weight_ - 1.0);
    recorder.SetSummary("uniaxial_modulus", uniaxial_modulus_);
    recorder.SetSummary("largest_out_of_plane", largest_out_of_plane_);
    recorder.SetSummary("settle_time", settle_time_);
    recorder.SetSummary("vertices", std::int64_t{vertices_});
    recorder.SetSummary("faces", std::int64_t{faces_});
    recorder.SetSummary("particles", std::int64_t{vertices_ + faces_});
  }

  void VisitState(StateArchive& archive) override {
    archive("late_elongations", late_elongations_);
    archive("late_pin_forces", late_pin_forces_);
    archive("largest_out_of_plane", largest_out_of_plane_);
  }

 private:
  std::vector<int> bottom_;
  std::vector<double> late_elongations_, late_pin_forces_;
  int vertices_ = 0, faces_ = 0, first_vertex_ = 0;
  double length_ = 0.0, gravity_ = 0.0, settle_time_ = 0.0;
  double uniaxial_modulus_ = 0.0, analytic_elongation_ = 0.0, largest_out_of_plane_ = 0.0, free_weight_ = 0.0;
};

std::unique_ptr<Scenario> MakeHangingCloth() {
  return std::make_unique<HangingCloth>();
}

}  // namespace

ScenarioInfo HangingClothInfo() {
  std::vector<ParameterSpec> parameters =
      ClothMaterialSpecs({1000.0, 1e6, 0.3, 1e6,
                          "chosen so that the default strip strains 0.36% at its top, small enough for the closed form",
                          "the strip never folds onto itself"});
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"strip_width", 0.1, "m", "Width W of the strip.", Positive()},
           {"strip_length", 0.4, "m", "Length L of the strip, from its pinned top edge down.", Positive()},
           {"mesh_spacing", 0.01, "m",
            "Vertex spacing of the strip's triangle mesh (alternating diagonals): half the grid spacing, so that a "
            "grid cell of the plane holds 4 vertices and 8 face particles.",
            Positive()},
           GravitySpec(),
           GridSpacingSpec(0.02),
           TimeStepSpec(0.005),
           DurationSpec(1.0),
           {"settle_time", 0.5, "s",
            "Start of the elongation average: about 10 periods of the strip's lowest longitudinal mode (4 L / "
            "sqrt(E_2 / rho) = 0.048 s at the defaults).",
            NonNegative()},

       }) {
    parameters.push_back(std::move(spec));
  }
  return ScenarioInfo{
      "hanging_cloth",
      "a cloth strip pinned along its top edge stretches under its own weight: elongation against rho g L^2/(2 E_2) "
      "(issue 21)",
      parameters,
      &MakeHangingCloth,
      {"strip_length=0.2", "mesh_spacing=0.02", "grid_spacing=0.04", "settle_time=0.01", "duration=0.03"}};
}

}  // namespace contactlab::experiments
