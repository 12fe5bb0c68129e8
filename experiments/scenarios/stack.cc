#include "experiments/scenarios/stack.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "experiments/scenarios/scene_tools.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxBlocks = 10;

double Horizontal(const Vector3& x) {
  return std::hypot(x.x(), x.y());
}

std::string CheckLayers(const ParameterValue& value) {
  const std::string* text = std::get_if<std::string>(&value);
  if (text == nullptr) return "must be text";
  if (text->empty() || text->size() > kMaxBlocks) {
    return "must name 1 to " + std::to_string(kMaxBlocks) + " blocks";
  }
  if (text->find_first_not_of("rm") != std::string::npos) {
    return "must hold only 'r' (rigid block) and 'm' (MPM block), from the ground up";
  }
  return "";
}

// One block of the stack: a free rigid body or a range of particles.
struct Block {
  bool rigid = false;
  int body = -1;
  ParticleRange particles;
  double mass = 0.0;
  Vector3 start = Vector3::Zero();
};

class Stack final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    layers_ = parameters.GetString("layers");
    const double friction = parameters.GetDouble("mu");
    block_size_ = parameters.GetDouble("block_size");
    const double density = parameters.GetDouble("density");
    const double particles_per_cell = parameters.GetDouble("particles_per_cell");
    settle_time_ = ReadSettleTime(parameters);
    stand_fraction_ = parameters.GetDouble("stand_fraction");
    const double stagger = parameters.GetDouble("stagger");
    if (stagger >= 0.5 * block_size_) {
      throw InputError(
          "key 'stagger' must be below half of 'block_size' (each block must rest on most of the one below)");
    }
    gravity_ = parameters.GetDouble("gravity");
    world.gravity = Vector3(0.0, 0.0, -gravity_);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    grid_spacing_ = world.grid_spacing;
    ground_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeStaticBody(
        "ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}}, rigid::Pose{}));
    if (layers_.find('m') != std::string::npos) {
      world.materials.push_back(MakeElasticMaterial(parameters, "", "block"));
    }

    // From the ground up. `surface` is the height a block placed next rests on: a rigid top
    // face (or the ground) or, after an MPM block, its top particle layer.
    double surface = 0.0;
    double surface_spacing = 0.0;  // lattice spacing of the MPM block below; 0 after a rigid face
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Block block;
      block.rigid = layers_[i] == 'r';
      // Alternate blocks sit ±stagger/2 along x, the bottom one at −stagger/2.
      const double x = (i % 2 == 0 ? -0.5 : 0.5) * stagger;
      rigid::Pose pose;
      if (block.rigid) {
        pose.position = Vector3(x, 0.0, surface + 0.5 * block_size_);
        rigid::RigidBody body = rigid::MakeFreeBody(
            "block" + std::to_string(i),
            {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * block_size_)), rigid::Pose{}, friction}},
            density, pose);
        block.body = static_cast<int>(world.bodies.size());
        block.mass = body.mass;
        world.bodies.push_back(body);
        surface = pose.position.z() + 0.5 * block_size_;
        surface_spacing = 0.0;
      } else {
        const BoxLattice probe =
            SampleBoxLattice(rigid::Pose{}, Vector3::Constant(block_size_), grid_spacing_, particles_per_cell);
        if (probe.positions.size() < 8) {
          throw InputError("keys 'block_size', 'grid_spacing', 'particles_per_cell' give only " +
                           std::to_string(probe.positions.size()) + " particles per block (at least 2 per axis)");
        }
        const double s = probe.spacing.z();
        // On a face the lowest layer lies on it; on an MPM block the lattice continues.
        const double lowest = surface_spacing > 0.0 ? surface + 0.5 * (surface_spacing + s) : surface;
        pose.position = Vector3(x, 0.0, lowest + 0.5 * block_size_ - 0.5 * s);
        const BoxLattice lattice =
            SampleBoxLattice(pose, Vector3::Constant(block_size_), grid_spacing_, particles_per_cell);
        block.particles =
            AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
        block.mass = MeasureParticles(world.particles, block.particles, grid_spacing_, false).mass;
        surface = pose.position.z() + 0.5 * block_size_ - 0.5 * s;
        surface_spacing = s;
      }
      blocks_.push_back(block);
    }
    for (Block& block : blocks_) block.start = Center(world, block);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    std::vector<std::string> columns;
    for (std::size_t i = 0; i < blocks_.size(); ++i) columns.push_back("block" + std::to_string(i));
    recorder.DeclareSeries("top_drift", "m", "horizontal distance of the top block's centre from its start");
    recorder.DeclareSeries("top_settling", "m", "vertical displacement of the top block's centre from its start");
    recorder.DeclareSeries("block_height", "m",
                           "height of each block's centre (rigid pose or particle mean), "
                           "bottom first",
                           columns);
    recorder.DeclareSeries("block_drift", "m", "horizontal distance of each block's centre from its start", columns);
    recorder.DeclareSeries("ground_normal_force", "N", "total normal force of the ground on the stack");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("max_penetration", "m", "deepest particle penetration into a rigid geometry");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    std::vector<double> heights, drifts;
    for (const Block& block : blocks_) {
      const Vector3 center = Center(world, block);
      const double drift = Horizontal(center - block.start);
      heights.push_back(center.z());
      drifts.push_back(drift);
      // NaN (a diverged state) counts as having moved.
      max_block_drift_ = std::isnan(drift) ? drift : std::max(max_block_drift_, drift);
    }
    const Vector3 top = Center(world, blocks_.back());
    const Vector3 top_displacement = top - blocks_.back().start;
    const double top_drift = Horizontal(top_displacement);
    if (!settled_ && t >= settle_time_ - 1e-12) {
      settled_ = true;
      settle_position_ = top;
    }
    if (settled_) max_drift_ = std::isnan(top_drift) ? top_drift : std::max(max_drift_, top_drift);
    recorder.AppendSeries("top_drift", t, {top_drift});
    recorder.AppendSeries("top_settling", t, {top_displacement.z()});
    recorder.AppendSeries("block_height", t, heights);
    recorder.AppendSeries("block_drift", t, drifts);
    const double ground_force = SumContactForces(report, ground_, Vector3::UnitZ()).normal;
    recorder.AppendSeries("ground_normal_force", t, {ground_force});
    if (settled_ && t > 0.0) {
      ground_force_sum_ += ground_force;
      ++ground_force_samples_;
    }
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("max_penetration", t, {report.max_penetration});
    final_top_ = top;
  }

  void Summarize(RunRecorder& recorder) override {
    const Vector3 final_displacement = final_top_ - blocks_.back().start;
    double total_mass = 0.0;
    int rigid_blocks = 0;
    for (const Block& block : blocks_) {
      total_mass += block.mass;
      rigid_blocks += block.rigid ? 1 : 0;
    }
    recorder.SetSummary("max_drift", settled_ ? max_drift_ : kNaN);
    recorder.SetSummary("final_drift", Horizontal(final_displacement));
    recorder.SetSummary("drift_since_settle", settled_ ? Horizontal(final_top_ - settle_position_) : kNaN);
    recorder.SetSummary("final_top_settling", final_displacement.z());
    recorder.SetSummary("max_block_drift", max_block_drift_);
    // !(x <= bound) so that a NaN drift (a diverged run) does not count as standing.
    recorder.SetSummary("stood", max_block_drift_ <= stand_fraction_ * block_size_);
    // The ground carries the whole stack once it rests: 1 up to the remaining bounce.
    recorder.SetSummary("ground_load_ratio", ground_force_samples_ > 0
                                                 ? ground_force_sum_ / ground_force_samples_ / (total_mass * gravity_)
                                                 : kNaN);
    recorder.SetSummary("stand_fraction", stand_fraction_);
    recorder.SetSummary("settle_time", settle_time_);
    recorder.SetSummary("layers", layers_);
    recorder.SetSummary("blocks", static_cast<std::int64_t>(blocks_.size()));
    recorder.SetSummary("rigid_blocks", std::int64_t{rigid_blocks});
    recorder.SetSummary("total_mass", total_mass);
    std::int64_t particles = 0;
    for (const Block& block : blocks_) particles += block.particles.size();
    recorder.SetSummary("particles", particles);
  }

  void VisitState(StateArchive& archive) override {
    archive("max_block_drift", max_block_drift_);
    archive("settled", settled_);
    archive("settle_position", settle_position_);
    archive("max_drift", max_drift_);
    archive("ground_force_sum", ground_force_sum_);
    archive("ground_force_samples", ground_force_samples_);
    archive("final_top", final_top_);
  }

 private:
  Vector3 Center(const World& world, const Block& block) const {
    if (block.rigid) return world.bodies[block.body].pose.position;
    return MeasureParticles(world.particles, block.particles, grid_spacing_, false).center;
  }

  std::string layers_;
  double block_size_ = 0.0, grid_spacing_ = 0.0, settle_time_ = 0.0, stand_fraction_ = 0.0, gravity_ = 0.0;
  int ground_ = -1;
  double ground_force_sum_ = 0.0;
  int ground_force_samples_ = 0;
  std::vector<Block> blocks_;
  bool settled_ = false;
  Vector3 settle_position_ = Vector3::Zero(), final_top_ = Vector3::Zero();
  double max_drift_ = 0.0, max_block_drift_ = 0.0;
};

std::unique_ptr<Scenario> MakeStack() {
  return std::make_unique<Stack>();
}

}  // namespace

ScenarioInfo StackInfo() {
  ScenarioInfo info{
      "stack",
      "rigid and MPM blocks stacked on a static ground stand without drift ([ding_schroeder_penalty] Fig. 3 right)",
      {
          {"layers", std::string("rmrmr"), "",
           "Blocks from the ground up, r a free rigid box and m an elastic MPM block; rmrmr mixes three rigid and two "
           "deformable blocks as [ding_schroeder_penalty] Fig. 3 right (which gives no order).",
           CheckLayers},
          {"mu", 0.2, "1",
           "Friction coefficient of the ground and the rigid blocks; the garbled stack row of [ding_schroeder_penalty] "
           "Table 1 reads "
           "0.2 (spec 4.3).",
           NonNegative()},
          {"block_size", 0.1, "m", "Edge length of every cubic block ([P] gives none; spec A14).", Positive()},
          {"stagger", 0.01, "m",
           "Horizontal offset between neighbouring blocks (alternately -stagger/2 and +stagger/2 along x): an aligned "
           "stack cannot drift by symmetry, an offset one loads its blocks off-centre so friction must hold them.",
           NonNegative()},
          GravitySpec(),
          GridSpacingSpec(0.02),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(2.0),
          {"settle_time", 0.5, "s",
           "Time after which the top block counts as settled (max_drift, drift_since_settle): about four periods of "
           "the default stack's lowest elastic mode (0.13 s, the two MPM blocks as springs under the blocks above).",
           NonNegative()},
          {"stand_fraction", 0.1, "1",
           "Horizontal displacement of any block's centre, as a fraction of block_size, beyond which the stack counts "
           "as fallen: 1 cm at the defaults, a fifth of the half block a block must shift to topple off the one below.",
           Positive()},
      },
      &MakeStack,
      {"grid_spacing=0.05", "settle_time=0.01", "duration=0.03"}};
  const std::vector<ParameterSpec> material = ElasticMaterialSpecs(
      "", 1000.0, 1e6,
      "Young's modulus of the MPM blocks: at 1e6 Pa the lower MPM block strains 0.3% under the three blocks above "
      "it; at 1e5 Pa the 0.5 m stack sways with centimetres at its top, close to buckling (not [P]'s 1e3 Pa, spec "
      "4.1).",
      "linear_corotated",
      "Elastic model of the MPM blocks: linear corotated, whose stress is linear in the stretch, so the blocks' "
      "small compressions follow linear elasticity (fixed_corotated as in [P] is available).");
  info.parameters.insert(info.parameters.end(), material.begin(), material.end());
  return info;
}

}  // namespace contactlab::experiments
