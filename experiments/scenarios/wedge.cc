#include "experiments/scenarios/wedge.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>

#include "experiments/scenarios/scene_tools.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kLeft = 0, kRight = 1;

class Wedge final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double friction = parameters.GetDouble("mu");
    const double size = parameters.GetDouble("block_size");
    const double overlap = parameters.GetDouble("overlap");
    const double density = parameters.GetDouble("density");
    gravity_ = parameters.GetDouble("gravity");
    duration_ = parameters.GetDouble("duration");
    jam_descent_ = parameters.GetDouble("jam_descent");
    if (overlap >= 0.25 * size) {
      throw InputError("key 'overlap' must be below a quarter of 'block_size' (it is meant as a slight squeeze)");
    }
    const std::array<bool, 2> is_mpm = {parameters.GetString("left_body") == "mpm",
                                        parameters.GetString("right_body") == "mpm"};
    configuration_ = parameters.GetString("left_body") + "+" + parameters.GetString("right_body");
    if (!is_mpm[kLeft] || !is_mpm[kRight]) {
    }
    world.gravity = Vector3(0.0, 0.0, -gravity_);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    grid_spacing_ = world.grid_spacing;
    const double particles_per_cell = parameters.GetDouble("particles_per_cell");
    if (is_mpm[kLeft] || is_mpm[kRight]) {
      world.materials.push_back(MakeElasticMaterial(parameters, "", "block"));
    }

    // Along x: the blocks meet at x = 0. Two MPM blocks continue one lattice across it (layers
    // ±s/2); an MPM layer facing a rigid block lies on its face (scene_tools.h). Each block's
    // outer reference is its outermost particle layer (MPM) or face (rigid).
    std::array<double, 2> outer{};
    for (const int side : {kLeft, kRight}) {
      const double sign = side == kLeft ? -1.0 : 1.0;
      const bool other_is_mpm = is_mpm[1 - side];
      if (is_mpm[side]) {
        const BoxLattice probe =
            SampleBoxLattice(rigid::Pose{}, Vector3::Constant(size), grid_spacing_, particles_per_cell);
        if (probe.positions.size() < 8) {
          throw InputError("keys 'block_size', 'grid_spacing', 'particles_per_cell' give only " +
                           std::to_string(probe.positions.size()) + " particles per block (at least 2 per axis)");
        }
        const double s = probe.spacing.x();
        rigid::Pose pose;
        pose.position = Vector3(sign * (0.5 * size - (other_is_mpm ? 0.0 : 0.5 * s)), 0.0, 0.0);
        const BoxLattice lattice = SampleBoxLattice(pose, Vector3::Constant(size), grid_spacing_, particles_per_cell);
        particles_[side] =
            AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
        outer[side] = pose.position.x() + sign * (0.5 * size - 0.5 * s);
        mass_[side] = MeasureParticles(world.particles, particles_[side], grid_spacing_, false).mass;
      } else {
        rigid::Pose pose;
        pose.position = Vector3(sign * 0.5 * size, 0.0, 0.0);
        rigid::RigidBody block = rigid::MakeFreeBody(
            side == kLeft ? "left_block" : "right_block",
            {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * size)), rigid::Pose{}, friction}}, density,
            pose);
        body_[side] = static_cast<int>(world.bodies.size());
        world.bodies.push_back(block);
        outer[side] = sign * size;
        mass_[side] = block.mass;
      }
    }
    // Two MPM blocks start squeezed: compressed along x by the overlap (positions and elastic
    // F = diag(λ, 1, 1), λ = 1 − overlap / (2 block_size)), their outermost layers on the
    // walls. The squeeze is then in the material's stress, the same for every formulation,
    // instead of in an initial penetration that only position-correcting contact models
    // (sap's v̂ = x₀/Δt, penalty springs) turn into force and grid-impulse exchange
    // (hybrid_impulse) never sees. A rigid block cannot be compressed: with one, the walls
    // overlap the outer references by overlap/2 each.
    const bool prestressed = is_mpm[kLeft] && is_mpm[kRight];
    if (prestressed) {
      const double stretch = 1.0 - overlap / (2.0 * size);
      for (const int side : {kLeft, kRight}) {
        for (int p = particles_[side].begin; p < particles_[side].end; ++p) {
          world.particles.position[p].x() *= stretch;
          world.particles.deformation_gradient[p](0, 0) = stretch;
        }
        outer[side] *= stretch;
      }
    }
    // The walls: half-spaces whose outward normals point into the gap, on the outermost layer
    // of a prestressed block or overlap/2 inside the outer reference of the others.
    for (const int side : {kLeft, kRight}) {
      const double sign = side == kLeft ? -1.0 : 1.0;
      rigid::Pose pose;
      pose.position = Vector3(outer[side] - (prestressed ? 0.0 : sign * 0.5 * overlap), 0.0, 0.0);
      // Rotating the half-space's +z normal by ∓90° about y turns it to ±x.
      pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(-sign * std::numbers::pi / 2.0, Vector3::UnitY()));
      wall_normal_[side] = pose.orientation * Vector3::UnitZ();
      wall_[side] = static_cast<int>(world.bodies.size());
      world.bodies.push_back(
          rigid::MakeStaticBody(side == kLeft ? "left_wall" : "right_wall",
                                {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}}, pose));
    }
    for (const int side : {kLeft, kRight}) initial_height_[side] = Height(world, side);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("block_height", "m", "height of each block's centre of mass", {"left", "right"});
    recorder.DeclareSeries("wall_normal_force", "N", "compressive normal force each wall receives", {"left", "right"});
    recorder.DeclareSeries("wall_friction_force", "N", "upward friction force each wall exerts on the blocks",
                           {"left", "right"});
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("max_penetration", "m", "deepest particle penetration into a rigid geometry");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    std::array<double, 2> height{}, normal{}, friction{};
    for (const int side : {kLeft, kRight}) {
      height[side] = Height(world, side);
      const Vector3 force = wall_[side] < static_cast<int>(report.contact_wrench.size())
                                ? report.contact_wrench[wall_[side]].force
                                : Vector3::Zero();
      // The wall receives −F_n n̂ from the block it holds back, and −F_up ẑ from friction.
      normal[side] = -force.dot(wall_normal_[side]);
      friction[side] = -force.z();
    }
    recorder.AppendSeries("block_height", t, {height[kLeft], height[kRight]});
    recorder.AppendSeries("wall_normal_force", t, {normal[kLeft], normal[kRight]});
    recorder.AppendSeries("wall_friction_force", t, {friction[kLeft], friction[kRight]});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("max_penetration", t, {report.max_penetration});
    // Heights at the start of the last half and wall forces over it (skipping t = 0, whose
    // report carries no forces).
    if (t > 0.0 && t >= 0.5 * duration_ - 1e-12) {
      if (!half_reached_) {
        half_reached_ = true;
        half_height_ = height;
      }
      for (const int side : {kLeft, kRight}) late_normal_sum_[side] += normal[side];
      ++late_samples_;
    }
    final_height_ = height;
  }

  void Summarize(RunRecorder& recorder) override {
    double descent = 0.0, late_descent = kNaN;
    for (const int side : {kLeft, kRight}) {
      descent = std::max(descent, initial_height_[side] - final_height_[side]);
      if (half_reached_) {
        const double d = half_height_[side] - final_height_[side];
        late_descent = std::isnan(late_descent) ? d : std::max(late_descent, d);
      }
    }
    recorder.SetSummary("descent", descent);
    recorder.SetSummary("late_descent", late_descent);
    // jam_descent (5 mm) is over 10× the elastic sag of a held block and under 1/20 of what a
    // block with 10% too little friction falls in half a second (wedge.h, ParameterSpec).
    recorder.SetSummary("jammed", late_descent < jam_descent_);
    std::array<double, 2> mean_normal = {kNaN, kNaN};
    if (late_samples_ > 0) {
      for (const int side : {kLeft, kRight}) mean_normal[side] = late_normal_sum_[side] / late_samples_;
    }
    recorder.SetSummary("left_wall_force", mean_normal[kLeft]);
    recorder.SetSummary("right_wall_force", mean_normal[kRight]);
    // Wall forces below a millionth of the pair's weight are round-off of a formulation that
    // produced no squeeze: μ* is then undefined.
    const double weight = (mass_[kLeft] + mass_[kRight]) * gravity_;
    const double wall_force = mean_normal[kLeft] + mean_normal[kRight];
    recorder.SetSummary("mu_star", wall_force > 1e-6 * weight
                                       ? WedgeFrictionThreshold(mass_[kLeft] + mass_[kRight], gravity_, wall_force)
                                       : kNaN);
    recorder.SetSummary("configuration", configuration_);
    recorder.SetSummary("jam_descent", jam_descent_);
    recorder.SetSummary("left_block_mass", mass_[kLeft]);
    recorder.SetSummary("right_block_mass", mass_[kRight]);
    recorder.SetSummary("particles", std::int64_t{particles_[kLeft].size() + particles_[kRight].size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("half_reached", half_reached_);
    archive("half_height", half_height_);
    archive("late_normal_sum", late_normal_sum_);
    archive("late_samples", late_samples_);
    archive("final_height", final_height_);
  }

 private:
  double Height(const World& world, int side) const {
    if (body_[side] >= 0) return world.bodies[body_[side]].pose.position.z();
    return MeasureParticles(world.particles, particles_[side], grid_spacing_, false).center.z();
  }

  double gravity_ = 0.0, duration_ = 0.0, jam_descent_ = 0.0, grid_spacing_ = 0.0;
  std::string configuration_;
  std::array<int, 2> body_ = {-1, -1}, wall_ = {-1, -1};
  std::array<ParticleRange, 2> particles_{};
  std::array<double, 2> mass_{}, initial_height_{}, final_height_{}, half_height_{}, late_normal_sum_{};
  std::array<Vector3, 2> wall_normal_ = {Vector3::UnitX(), -Vector3::UnitX()};
  bool half_reached_ = false;
  int late_samples_ = 0;
};

std::unique_ptr<Scenario> MakeWedge() {
  return std::make_unique<Wedge>();
}

}  // namespace

double WedgeFrictionThreshold(double total_mass, double gravity, double total_wall_normal_force) {
  if (!(total_wall_normal_force > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  return total_mass * gravity / total_wall_normal_force;
}

ScenarioInfo WedgeInfo() {
  ScenarioInfo info{
      "wedge",
      "two blocks squeezed between fixed vertical walls: jam by friction or slide ([ding_schroeder_penalty] Fig. 8)",
      {
          {"mu", 0.25, "1",
           "Friction coefficient of the walls and rigid blocks; [P] wdg_rm jams at 0.25 and slides at 0.1.",
           NonNegative()},
          {"left_body", std::string("rigid"), "",
           "Left block: rigid (as [P] wdg_rm; needs rigid-static contact, i.e. penalty) or mpm.",
           OneOf({"mpm", "rigid"})},
          {"right_body", std::string("mpm"), "", "Right block: mpm (as [P] wdg_rm) or rigid.", OneOf({"mpm", "rigid"})},
          {"block_size", 0.1, "m", "Edge length of each cubic block ([P] gives none; spec A14).", Positive()},
          {"overlap", 0.002, "m",
           "How much longer the two blocks are than the gap between the walls, 2% of the block size ([P]: "
           "'slightly'): two MPM blocks start compressed by it (positions and elastic F), a rigid block overlaps the "
           "walls by half of it on each side.",
           NonNegative()},
          GravitySpec(),
          GridSpacingSpec(0.018),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(1.0),
          {"jam_descent", 0.005, "m",
           "Largest descent of a block over the last half of the run that still counts as jammed: >10x the "
           "elastic sag of a held block (~0.4 mm), <1/20 of a block 10% short of friction falling 0.5 s (0.12 m).",
           Positive()},
      },
      &MakeWedge,
      {"duration=0.03"}};
  const std::vector<ParameterSpec> material = ElasticMaterialSpecs(
      "", 1000.0, 3e5,
      "Young's modulus of the MPM blocks: with the default overlap the walls' normal force is about 60 N, so "
      "mu* = m g / N = 0.16 lies between [P]'s jamming 0.25 and sliding 0.1 (not [P]'s 1e3 Pa, spec 4.1).");
  info.parameters.insert(info.parameters.end(), material.begin(), material.end());
  return info;
}

}  // namespace contactlab::experiments
