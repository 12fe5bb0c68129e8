#include "experiments/scenarios/pyramid.h"

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
constexpr int kBlocks = 3;

double Horizontal(const Vector3& x) {
  return std::hypot(x.x(), x.y());
}

class Pyramid final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double friction = parameters.GetDouble("mu");
    const double block_size = parameters.GetDouble("block_size");
    const double ball_radius = parameters.GetDouble("ball_radius");
    const double edge_radius = parameters.GetDouble("edge_radius");
    const double gravity = parameters.GetDouble("gravity");
    settle_time_ = ReadSettleTime(parameters);
    collapse_drop_ = parameters.GetDouble("collapse_drop");
    if (edge_radius >= ball_radius) {
      throw InputError("key 'edge_radius' must be below 'ball_radius': the ball would fall between the blocks");
    }
    // Each block spans ±a/2 across its inner face at distance r_e from the axis, so its inner
    // corners sit atan(a / (2 r_e)) from its own azimuth; the neighbours, 120° away, stay
    // clear while that half-angle is below 60°.
    if (edge_radius <= block_size / (2.0 * std::sqrt(3.0))) {
      throw InputError(
          "keys 'edge_radius' and 'block_size': the blocks overlap (need edge_radius > block_size / (2 sqrt 3))");
    }
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    grid_spacing_ = world.grid_spacing;
    ground_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeStaticBody(
        "ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}}, rigid::Pose{}));

    // Blocks at azimuths 90°, 210°, 330°, local x pointing away from the axis, lowest
    // particle layer on the ground (scene_tools.h).
    world.materials.push_back(MakeElasticMaterial(parameters, "", "block"));
    const double density = parameters.GetDouble("density");
    const double particles_per_cell = parameters.GetDouble("particles_per_cell");
    for (int b = 0; b < kBlocks; ++b) {
      const double azimuth = std::numbers::pi / 2.0 + 2.0 * std::numbers::pi * b / kBlocks;
      rigid::Pose pose;
      pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(azimuth, Vector3::UnitZ()));
      const BoxLattice probe = SampleBoxLattice(pose, Vector3::Constant(block_size), grid_spacing_, particles_per_cell);
      if (probe.positions.size() < 8) {
        throw InputError("keys 'block_size', 'grid_spacing', 'particles_per_cell' give only " +
                         std::to_string(probe.positions.size()) + " particles per block (at least 2 per axis)");
      }
      pose.position = (edge_radius + 0.5 * block_size) * (pose.orientation * Vector3::UnitX()) +
                      Vector3(0.0, 0.0, 0.5 * block_size - 0.5 * probe.spacing.z());
      const BoxLattice lattice =
          SampleBoxLattice(pose, Vector3::Constant(block_size), grid_spacing_, particles_per_cell);
      blocks_[b] =
          AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    }
    block_mass_ = mpm::TotalMass(world.particles) / kBlocks;

    // The ball rests on the particles of the inner top edges: its centre is the lowest point
    // of the axis at which no particle lies inside the ball.
    double center_height = ball_radius;
    for (const Vector3& x : world.particles.position) {
      const double horizontal = Horizontal(x);
      if (horizontal < ball_radius) {
        center_height = std::max(center_height, x.z() + std::sqrt(ball_radius * ball_radius - horizontal * horizontal));
      }
    }
    rigid::Pose ball_pose;
    ball_pose.position = Vector3(0.0, 0.0, center_height);
    rigid::RigidBody ball =
        rigid::MakeFreeBody("ball", {rigid::Geometry{rigid::Shape::Sphere(ball_radius), rigid::Pose{}, friction}},
                            parameters.GetDouble("ball_density"), ball_pose);
    ball_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(ball);
    ball_mass_ = ball.mass;
    initial_ball_height_ = center_height;
    for (int b = 0; b < kBlocks; ++b) initial_radial_[b] = Horizontal(BlockCenter(world, b));
    required_friction_ = PyramidRequiredGroundFriction(ball_mass_, block_mass_, ball_radius, edge_radius);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("ball_height", "m", "height of the ball's centre above the ground");
    recorder.DeclareSeries("ball_drift", "m",
                           "horizontal distance of the ball's centre from its position at settle_time (NaN before)");
    recorder.DeclareSeries("ball_lateral_offset", "m",
                           "horizontal distance of the ball's centre from the pyramid axis");
    recorder.DeclareSeries("block_spreading", "m", "mean outward displacement of the blocks' centres of mass");
    recorder.DeclareSeries("block_radial_offset", "m", "outward displacement of each block's centre of mass",
                           {"block0", "block1", "block2"});
    recorder.DeclareSeries("ball_contact_force", "N", "contact force the blocks exert on the ball (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("ground_normal_force", "N", "total normal force of the ground on the blocks");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const Vector3 ball = world.bodies[ball_].pose.position;
    if (!settled_ && t >= settle_time_ - 1e-12) {
      settled_ = true;
      settle_position_ = ball;
    }
    const double drift = settled_ ? Horizontal(ball - settle_position_) : kNaN;
    std::array<double, kBlocks> radial{};
    double spreading = 0.0;
    for (int b = 0; b < kBlocks; ++b) {
      radial[b] = Horizontal(BlockCenter(world, b)) - initial_radial_[b];
      spreading += radial[b] / kBlocks;
    }
    recorder.AppendSeries("ball_height", t, {ball.z()});
    recorder.AppendSeries("ball_drift", t, {drift});
    recorder.AppendSeries("ball_lateral_offset", t, {Horizontal(ball)});
    recorder.AppendSeries("block_spreading", t, {spreading});
    recorder.AppendSeries("block_radial_offset", t, {radial[0], radial[1], radial[2]});
    const Vector3 ball_force =
        ball_ < static_cast<int>(report.contact_wrench.size()) ? report.contact_wrench[ball_].force : Vector3::Zero();
    recorder.AppendSeries("ball_contact_force", t, {ball_force.x(), ball_force.y(), ball_force.z()});
    recorder.AppendSeries("ground_normal_force", t, {SumContactForces(report, ground_, Vector3::UnitZ()).normal});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    final_ball_ = ball;
    final_drift_ = drift;
    final_spreading_ = spreading;
  }

  void Summarize(RunRecorder& recorder) override {
    const double drop = initial_ball_height_ - final_ball_.z();
    recorder.SetSummary("drift", final_drift_);
    recorder.SetSummary("height_change", settled_ ? final_ball_.z() - settle_position_.z() : kNaN);
    recorder.SetSummary("ball_drop", drop);
    // collapse_drop (a quarter block by default) is 40% of the way to the ball falling between
    // the blocks and about 25× the elastic settling of the stack (pyramid.h).
    recorder.SetSummary("collapsed", !(drop <= collapse_drop_));
    recorder.SetSummary("final_block_spreading", final_spreading_);
    recorder.SetSummary("initial_ball_height", initial_ball_height_);
    recorder.SetSummary("required_ground_mu", required_friction_);
    recorder.SetSummary("settle_time", settle_time_);
    recorder.SetSummary("collapse_drop", collapse_drop_);
    recorder.SetSummary("ball_mass", ball_mass_);
    recorder.SetSummary("block_mass", block_mass_);
    recorder.SetSummary("particles", std::int64_t{blocks_[kBlocks - 1].end});
  }

  void VisitState(StateArchive& archive) override {
    archive("settled", settled_);
    archive("settle_position", settle_position_);
    archive("final_ball", final_ball_);
    archive("final_drift", final_drift_);
    archive("final_spreading", final_spreading_);
  }

 private:
  Vector3 BlockCenter(const World& world, int b) const {
    return MeasureParticles(world.particles, blocks_[b], grid_spacing_, false).center;
  }

  double settle_time_ = 0.0, collapse_drop_ = 0.0, grid_spacing_ = 0.0;
  double ball_mass_ = 0.0, block_mass_ = 0.0, initial_ball_height_ = 0.0, required_friction_ = 0.0;
  int ground_ = -1, ball_ = -1;
  std::array<ParticleRange, kBlocks> blocks_{};
  std::array<double, kBlocks> initial_radial_{};
  bool settled_ = false;
  Vector3 settle_position_ = Vector3::Zero(), final_ball_ = Vector3::Zero();
  double final_drift_ = kNaN, final_spreading_ = 0.0;
};

std::unique_ptr<Scenario> MakePyramid() {
  return std::make_unique<Pyramid>();
}

}  // namespace

double PyramidRequiredGroundFriction(double ball_mass, double block_mass, double ball_radius, double edge_radius) {
  const double tan_alpha = edge_radius / std::sqrt(ball_radius * ball_radius - edge_radius * edge_radius);
  return ball_mass / 3.0 * tan_alpha / (block_mass + ball_mass / 3.0);
}

double PyramidBallDrop(double ball_radius, double edge_radius, double spreading) {
  const double reach = edge_radius + spreading;
  const double start = std::sqrt(ball_radius * ball_radius - edge_radius * edge_radius);
  return reach >= ball_radius ? start : start - std::sqrt(ball_radius * ball_radius - reach * reach);
}

ScenarioInfo PyramidInfo() {
  ScenarioInfo info{
      "pyramid",
      "rigid ball resting on three MPM cubes: stands at mu 0.3, collapses at 0.05 ([ding_schroeder_penalty] Fig. 6)",
      {
          {"mu", 0.3, "1",
           "Friction coefficient of the ground and the ball; [P] prmd_rm uses 0.3 (stable) and 0.05 (collapse).",
           NonNegative()},
          {"block_size", 0.1, "m", "Edge length of each cubic MPM block ([P] gives none; spec A14).", Positive()},
          {"ball_radius", 0.08, "m", "Radius of the rigid ball ([P] gives none; rests 6 cm above the edges).",
           Positive()},
          {"ball_density", 500.0, "kg/m^3",
           "Density of the ball; 500 makes it about as heavy as one block, so the ground-friction demand is 0.21.",
           Positive()},
          {"edge_radius", 0.05, "m",
           "Horizontal distance from the pyramid axis to each block's inner face; 0.05 leaves 3.7 cm between "
           "neighbouring blocks.",
           Positive()},
          GravitySpec(),
          GridSpacingSpec(0.02),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(2.0),
          {"settle_time", 0.1, "s",
           "Time after which the ball counts as settled (drift reference): about 2.5 periods of a block's lowest "
           "elastic mode at the default E.",
           NonNegative()},
          {"collapse_drop", 0.025, "m",
           "Ball drop from its initial height that counts as collapse: a quarter block, 40% of the drop to falling "
           "between the blocks and about 25x the elastic settling.",
           Positive()},
      },
      &MakePyramid,
      {"grid_spacing=0.04", "settle_time=0.01", "duration=0.04"}};
  const std::vector<ParameterSpec> material = ElasticMaterialSpecs(
      "", 1000.0, 1e5,
      "Young's modulus of the MPM blocks: 1e5 Pa keeps their self-weight strain near 1% (not [P]'s 1e3 Pa, spec "
      "4.1), the default grid_spacing gives 3,000 particles (11k at 0.013 m as prmd_rm).");
  info.parameters.insert(info.parameters.end(), material.begin(), material.end());
  return info;
}

}  // namespace contactlab::experiments
