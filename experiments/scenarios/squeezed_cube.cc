#include "experiments/scenarios/squeezed_cube.h"

#include <cmath>
#include <cstdint>

#include "experiments/scenarios/squeeze_panels.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

// Mean and standard deviation of samples.
struct Statistics {
  double mean = 0.0;
  double standard_deviation = 0.0;
};

Statistics ComputeStatistics(const std::vector<double>& samples) {
  Statistics statistics;
  if (samples.empty()) return statistics;
  for (const double x : samples) statistics.mean += x;
  statistics.mean /= static_cast<double>(samples.size());
  double variance = 0.0;
  for (const double x : samples) variance += (x - statistics.mean) * (x - statistics.mean);
  statistics.standard_deviation = std::sqrt(variance / static_cast<double>(samples.size()));
  return statistics;
}

class SqueezedCube final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    squeeze_force_ = parameters.GetDouble("squeeze_force");
    const double friction = parameters.GetDouble("mu");
    const double side = parameters.GetDouble("cube_side");
    cube_mass_ = parameters.GetDouble("cube_mass");
    gravity_ = parameters.GetDouble("gravity");
    duration_ = parameters.GetDouble("duration");
    averaging_window_ = parameters.GetDouble("averaging_window");
    if (averaging_window_ > duration_) {
      throw InputError("key 'averaging_window' must not exceed 'duration'");
    }

    // The cube, centred at the origin.
    const double density = cube_mass_ / (side * side * side);
    world.materials.push_back(mpm::MakeMaterial("cube", "linear_corotated", density,
                                                parameters.GetDouble("youngs_modulus"),
                                                parameters.GetDouble("poisson_ratio")));
    mpm::SamplingOptions sampling;
    sampling.grid_spacing = parameters.GetDouble("grid_spacing");
    sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
    const double half = 0.5 * side;
    const auto positions =
        mpm::SampleSolid([](const Vector3&) { return -1.0; },
                         Eigen::AlignedBox3d(Vector3::Constant(-half), Vector3::Constant(half)), sampling);
    if (positions.size() < 8) {
      throw InputError("keys 'cube_side', 'grid_spacing', 'particles_per_cell' give only " +
                       std::to_string(positions.size()) + " particles");
    }
    // The sampled cube's mass matches cube_mass only up to the lattice; use the density.
    mpm::AddSampledParticles(positions, sampling, density, Vector3::Zero(), 0, world.particles);
    particle_count_ = static_cast<std::int64_t>(positions.size());
    world.grid_spacing = sampling.grid_spacing;
    world.gravity = Vector3(0.0, 0.0, -gravity_);

    // Two panels touching the cube's outermost particles on ±x (half a particle spacing inside
    // the faces: a panel placed at the face would first fall through that gap while the cube
    // falls freely), each on a damped prismatic joint along x from the world, pushed toward
    // the cube by the squeeze force.
    double outermost = 0.0;
    for (const Vector3& position : positions) outermost = std::max(outermost, std::abs(position.x()));
    panel_damping_ = PanelDamping(parameters, parameters.GetDouble("youngs_modulus"), side);
    const PanelPair panels =
        AddSqueezePanels(world, parameters, -1, outermost, squeeze_force_, friction, panel_damping_);
    left_panel_ = panels.left;
    right_panel_ = panels.right;
    initial_center_ = mpm::CenterOfMass(world.particles);
    sampled_mass_ = mpm::TotalMass(world.particles);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    const std::string convention =
        " in the panel's load frame: x from the cube toward the panel, z down (-world z), "
        "y completing a right-handed frame";
    for (const char* panel : {"left_panel_force", "right_panel_force"}) {
      recorder.DeclareSeries(panel, "N", std::string("contact force the cube exerts on the panel") + convention,
                             {"x", "y", "z"});
      recorder.DeclareAnalytic(panel, "N", "steady state: (squeeze_force, 0, m g / 2)", {"x", "y", "z"});
    }
    recorder.DeclareSeries("cube_com_height", "m", "vertical position of the cube's centre of mass");
    recorder.DeclareSeries("panel_gap", "m", "distance between the panels' inner faces");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const double half_weight = 0.5 * sampled_mass_ * gravity_;
    for (const int body : {left_panel_, right_panel_}) {
      const bool left = body == left_panel_;
      const Vector3 world_force = report.contact_wrench.empty() ? Vector3::Zero() : report.contact_wrench[body].force;
      // Load frame: x_s = outward (−x for the left panel), z_s = −z, y_s = z_s × x_s.
      const double sign = left ? -1.0 : 1.0;
      const Vector3 load(sign * world_force.x(), sign * world_force.y(), -world_force.z());
      const char* name = left ? "left_panel_force" : "right_panel_force";
      recorder.AppendSeries(name, t, {load.x(), load.y(), load.z()});
      recorder.AppendAnalytic(name, t, {squeeze_force_, 0.0, half_weight});
      if (t > duration_ - averaging_window_ + 1e-12) {
        for (int axis = 0; axis < 3; ++axis) window_[left ? 0 : 1][axis].push_back(load[axis]);
      }
    }
    const double height = mpm::CenterOfMass(world.particles).z();
    recorder.AppendSeries("cube_com_height", t, {height});
    const double gap = (world.bodies[right_panel_].pose.position.x() - world.bodies[left_panel_].pose.position.x()) -
                       2.0 * world.bodies[left_panel_].geometries[0].shape.half_extents.x();
    recorder.AppendSeries("panel_gap", t, {gap});
    final_height_ = height;
  }

  std::vector<UsedParameter> UsedParameters() const override { return {PanelDampingUsed(panel_damping_)}; }

  void Summarize(RunRecorder& recorder) override {
    const char* axes = "xyz";
    const double half_weight = 0.5 * sampled_mass_ * gravity_;
    const double expected[3] = {squeeze_force_, 0.0, half_weight};
    double worst_mean_error = 0.0;
    for (int panel = 0; panel < 2; ++panel) {
      for (int axis = 0; axis < 3; ++axis) {
        const Statistics statistics = ComputeStatistics(window_[panel][axis]);
        const std::string prefix = std::string(panel == 0 ? "left" : "right") + "_f" + axes[axis];
        recorder.SetSummary(prefix + "_mean", statistics.mean);
        recorder.SetSummary(prefix + "_std", statistics.standard_deviation);
        worst_mean_error = std::max(worst_mean_error, std::abs(statistics.mean - expected[axis]));
      }
    }
    // Largest deviation of a mean force component from the steady state, relative to the
    // squeeze force.
    recorder.SetSummary("error_vs_analytic", worst_mean_error / squeeze_force_);
    recorder.SetSummary("cube_vertical_drift", final_height_ - initial_center_.z());
    recorder.SetSummary("cube_mass_sampled", sampled_mass_);
    recorder.SetSummary("averaging_window", averaging_window_);
    recorder.SetSummary("particles", particle_count_);
  }

  void VisitState(StateArchive& archive) override {
    for (int panel = 0; panel < 2; ++panel) {
      for (int axis = 0; axis < 3; ++axis) {
        archive("window_" + std::to_string(panel) + "_" + std::to_string(axis), window_[panel][axis]);
      }
    }
    archive("final_height", final_height_);
  }

 private:
  double squeeze_force_ = 0.0, cube_mass_ = 0.0, gravity_ = 0.0, duration_ = 0.0, averaging_window_ = 0.0;
  double sampled_mass_ = 0.0, final_height_ = 0.0, panel_damping_ = 0.0;
  int left_panel_ = -1, right_panel_ = -1;
  std::int64_t particle_count_ = 0;
  Vector3 initial_center_ = Vector3::Zero();
  std::vector<double> window_[2][3];
};

std::unique_ptr<Scenario> MakeSqueezedCube() {
  return std::make_unique<SqueezedCube>();
}

}  // namespace

ScenarioInfo SqueezedCubeInfo() {
  ScenarioInfo info{"squeezed_cube",
                    "elastic MPM cube held by friction between two force-driven panels ([zong2024convex] Fig. 6)",
                    {
                        {"squeeze_force", 10.0, "N",
                         "Constant force pushing each panel toward the cube ([zong2024convex]).", Positive()},
                        {"mu", 0.8, "1", "Friction coefficient between cube and panels (spec E5).", NonNegative()},
                        {"cube_side", 0.1, "m", "Edge length of the cube.", Positive()},
                        {"cube_mass", 0.4, "kg", "Mass of the cube; sets its density.", Positive()},
                        {"youngs_modulus", 1e5, "Pa", "Young's modulus of the cube.", Positive()},
                        {"poisson_ratio", 0.4, "1", "Poisson's ratio of the cube.", InHalfOpenRange(0.0, 0.5)},
                        {"averaging_window", 0.5, "s", "Trailing window of the steady-state statistics.", Positive()},
                        GravitySpec(),
                        GridSpacingSpec(0.01),
                        ParticlesPerCellSpec(8.0),
                        TimeStepSpec(1e-3),
                        DurationSpec(2.0),
                    },
                    &MakeSqueezedCube,
                    {"grid_spacing=0.02", "dt=0.002", "averaging_window=0.004", "duration=0.01"}};
  // Panels 0.02 × 0.15 × 0.15 m (spec E5).
  const std::vector<ParameterSpec> panels = PanelParameterSpecs(0.02, 0.15);
  info.parameters.insert(info.parameters.end(), panels.begin(), panels.end());
  return info;
}

}  // namespace contactlab::experiments
