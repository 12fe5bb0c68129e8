#include "experiments/scenarios/box_bagging.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/cloth_particles.h"
#include "mpm/constitutive/cloth.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What the cradle carries: two rigid boxes (box_bagging) or a second cloth (laundry).
enum class Load { kBoxes, kCloth };

class ClothCradle final : public Scenario {
 public:
  explicit ClothCradle(Load load) : load_(load) {}

  void Build(const ParameterSet& parameters, World& world) override {
    const double side = parameters.GetDouble("cloth_size");
    const int vertices_per_side = parameters.GetIntAs<int>("vertices_per_side");
    const double height = parameters.GetDouble("cloth_height");
    floor_z_ = parameters.GetDouble("floor_height");
    release_time_ = parameters.GetDouble("release_time");
    const double sag = parameters.GetDouble("sag_distance"), sag_time = parameters.GetDouble("sag_time");
    const double wrap = parameters.GetDouble("wrap_distance"), wrap_start = parameters.GetDouble("wrap_start");
    const double wrap_time = parameters.GetDouble("wrap_time");
    if (!(sag_time < wrap_start && wrap_start + wrap_time <= release_time_)) {
      throw InputError("keys 'sag_time', 'wrap_start', 'wrap_time', 'release_time' must follow one another");
    }
    if (vertices_per_side < 4) throw InputError("key 'vertices_per_side' must be at least 4");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));
    world.grid_spacing = parameters.GetDouble("grid_spacing");

    // The floor, and (box_bagging) two free boxes above the cloth's centre, their bottoms
    // drop_height above it.
    world.bodies.push_back(rigid::MakeStaticBody(
        "floor", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, parameters.GetDouble("floor_mu")}},
        rigid::Pose{Vector3(0.0, 0.0, floor_z_), Eigen::Quaterniond::Identity()}));
    if (load_ == Load::kBoxes) AddBoxes(parameters, height, world);
    // The cloth, flat at `height`, centred on the z axis.
    world.materials.push_back(MakeClothMaterialFromKeys(parameters));
    const int n = vertices_per_side;
    const mpm::ClothMesh mesh = mpm::RectangleCloth(side, side, n, n, Vector3(-0.5 * side, -0.5 * side, height),
                                                    Vector3::UnitX(), Vector3::UnitY());
    const mpm::ClothRange range =
        mpm::AddCloth(mesh, parameters.GetDouble("thickness"), 0, world.materials, Vector3::Zero(), world.particles);
    first_vertex_ = range.first_vertex_particle;
    vertex_count_ = n * n;
    first_face_ = range.first_face_particle;
    face_count_ = static_cast<int>(mesh.triangles.size());
    if (load_ == Load::kCloth) AddLaundry(parameters, world);
    particle_count_ = world.particles.size();

    // Each corner is held by a pin on its 2 × 2 vertices (a gripper's pad), which moves it
    // diagonally inward by sag_distance over [0, sag_time] and by wrap_distance over
    // [wrap_start, wrap_start + wrap_time]; the +x pins release at release_time.
    for (const int cx : {0, 1}) {
      for (const int cy : {0, 1}) {
        mpm::ClothPin pin;
        for (int di = 0; di < 2; ++di) {
          for (int dj = 0; dj < 2; ++dj) {
            const int i = cx == 0 ? di : n - 1 - di, j = cy == 0 ? dj : n - 1 - dj;
            pin.particles.push_back(range.first_vertex_particle + j * n + i);
          }
        }
        const Vector3 inward = Vector3(cx == 0 ? 1.0 : -1.0, cy == 0 ? 1.0 : -1.0, 0.0).normalized();
        pin.segment_end = {sag_time, wrap_start, wrap_start + wrap_time};
        pin.segment_velocity = {sag / sag_time * inward, Vector3::Zero(), wrap / wrap_time * inward};
        if (cx == 1) pin.release_time = release_time_;
        world.particles.cloth_pins.push_back(pin);
      }
    }
    grid_spacing_ = world.grid_spacing;
  }

  void DeclareObservables(RunRecorder& recorder) override {
    if (load_ == Load::kCloth) {
      recorder.DeclareSeries("laundry_z", "m", "height of the laundry cloth's centre of mass");
      recorder.DeclareSeries("laundry_held", "1",
                             "1 while the laundry lies in the bag (centre of mass above the bag's lowest vertex, "
                             "inside the pins' square)");
    }
    for (int b = 0; b < static_cast<int>(boxes_.size()); ++b) {
      const std::string name = "box" + std::to_string(b);
      recorder.DeclareSeries(name + "_z", "m", "height of the box's centre");
      recorder.DeclareSeries(name + "_held", "1",
                             "1 while the box lies in the cloth (centre above its lowest vertex, "
                             "inside the pins' square)");
    }
    recorder.DeclareSeries("max_box_penetration", "m", "deepest cloth particle inside a box");
    recorder.DeclareSeries("inverted_faces", "1", "face particles whose layer is inverted (r33 < 0)");
    recorder.DeclareSeries("lowest_cloth", "m", "height of the lowest cloth vertex");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const mpm::Particles& particles = world.particles;
    double lowest = std::numeric_limits<double>::infinity();
    for (int v = 0; v < vertex_count_; ++v) lowest = std::min(lowest, particles.position[first_vertex_ + v].z());
    // The square the bag's pinned corners span (its four pins, held or not).
    double reach = 0.0;
    for (int pin = 0; pin < 4; ++pin) {
      for (const int p : particles.cloth_pins[pin].particles) {
        reach = std::max({reach, std::abs(particles.position[p].x()), std::abs(particles.position[p].y())});
      }
    }
    const auto in_bag = [&](const Vector3& centre) {
      return centre.z() > lowest && std::abs(centre.x()) < reach && std::abs(centre.y()) < reach;
    };
    // The load's centres: each box's, or the laundry's centre of mass.
    std::vector<Vector3> centres;
    double penetration = 0.0;
    for (int b = 0; b < static_cast<int>(boxes_.size()); ++b) {
      const rigid::RigidBody& box = world.bodies[boxes_[b]];
      centres.push_back(box.pose.position);
      const rigid::Pose pose = box.GeometryPose(0);
      for (int p = first_vertex_; p < first_face_ + face_count_; ++p) {
        const double distance =
            box.geometries[0].shape.SignedDistance(pose.InverseTransformPoint(particles.position[p]));
        penetration = std::max(penetration, -distance);
      }
      recorder.AppendSeries("box" + std::to_string(b) + "_z", t, {centres.back().z()});
      recorder.AppendSeries("box" + std::to_string(b) + "_held", t, {in_bag(centres.back()) ? 1.0 : 0.0});
    }
    if (load_ == Load::kCloth) {
      Vector3 moment = Vector3::Zero();
      double mass = 0.0;
      for (int p = laundry_.begin; p < laundry_.end; ++p) {
        moment += particles.mass[p] * particles.position[p];
        mass += particles.mass[p];
      }
      centres.push_back(moment / mass);
      recorder.AppendSeries("laundry_z", t, {centres.back().z()});
      recorder.AppendSeries("laundry_held", t, {in_bag(centres.back()) ? 1.0 : 0.0});
    }
    int inverted = 0;
    for (const int face : particles.cloth_faces.face_particle) {
      if (mpm::FactorCloth(particles.deformation_gradient[face]).upper(2, 2) < 0.0) ++inverted;
    }
    recorder.AppendSeries("max_box_penetration", t, {penetration});
    recorder.AppendSeries("inverted_faces", t, {static_cast<double>(inverted)});
    recorder.AppendSeries("lowest_cloth", t, {lowest});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    if (t > 0.0) {
      largest_penetration_ = std::max(largest_penetration_, penetration);
      most_inverted_ = std::max(most_inverted_, inverted);
      contacts_.push_back(report.contacts);
      // Held over the last half second before the release.
      if (t >= release_time_ - 0.5 && t < release_time_) {
        for (const Vector3& centre : centres) held_before_release_ = held_before_release_ && in_bag(centre);
      }
    }
    final_z_.clear();
    for (const Vector3& centre : centres) final_z_.push_back(centre.z());
  }

  void Summarize(RunRecorder& recorder) override {
    // On the floor at the end: a box's centre within its size of the floor, the laundry's
    // centre of mass within fall_out_height of it.
    bool fell_out = !final_z_.empty();
    for (const double z : final_z_) fell_out = fell_out && z < floor_z_ + on_floor_height_;
    recorder.SetSummary("held_until_release", std::int64_t{held_before_release_ ? 1 : 0});
    recorder.SetSummary("fell_out", std::int64_t{fell_out ? 1 : 0});
    for (std::size_t k = 0; k < final_z_.size(); ++k) {
      recorder.SetSummary((load_ == Load::kBoxes ? "box" + std::to_string(k) : std::string("laundry")) + "_final_z",
                          final_z_[k]);
    }
    recorder.SetSummary("max_box_penetration", largest_penetration_);
    recorder.SetSummary("max_box_penetration_over_half_h", largest_penetration_ / (0.5 * grid_spacing_));
    recorder.SetSummary("max_inverted_faces", std::int64_t{most_inverted_});
    recorder.SetSummary("mean_contacts", Mean(contacts_));
    recorder.SetSummary("particles", std::int64_t{static_cast<std::int64_t>(particle_count_)});
  }

  void VisitState(StateArchive& archive) override {
    archive("largest_penetration", largest_penetration_);
    archive("most_inverted", most_inverted_);
    archive("contacts", contacts_);
    archive("held_before_release", held_before_release_);
    archive("final_z", final_z_);
  }

 private:
  // Two free boxes of box_size above the cloth's centre at `height`, their bottoms drop_height
  // above it, box_gap apart along x.
  void AddBoxes(const ParameterSet& parameters, double height, World& world) {
    const double box_size = parameters.GetDouble("box_size");
    const double gap = parameters.GetDouble("box_gap");
    on_floor_height_ = box_size;
    for (int b = 0; b < 2; ++b) {
      rigid::Pose pose;
      pose.position = Vector3((b == 0 ? -1.0 : 1.0) * 0.5 * (box_size + gap), 0.0,
                              height + parameters.GetDouble("drop_height") + 0.5 * box_size);
      boxes_.push_back(static_cast<int>(world.bodies.size()));
      world.bodies.push_back(rigid::MakeFreeBody("box" + std::to_string(b),
                                                 {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * box_size)),
                                                                  rigid::Pose{}, parameters.GetDouble("box_mu")}},
                                                 parameters.GetDouble("box_density"), pose));
    }
  }

  // The laundry: a square cloth of laundry_size (same material) hanging from a pin on its
  // 2 × 2 corner vertices, flat at laundry_height above the bag's centre until drop_time.
  void AddLaundry(const ParameterSet& parameters, World& world) {
    const double side = parameters.GetDouble("laundry_size");
    const int n = parameters.GetIntAs<int>("laundry_vertices_per_side");
    if (n < 4) throw InputError("key 'laundry_vertices_per_side' must be at least 4");
    const mpm::ClothMesh mesh =
        mpm::RectangleCloth(side, side, n, n, Vector3(-0.5 * side, -0.5 * side, parameters.GetDouble("laundry_height")),
                            Vector3::UnitX(), Vector3::UnitY());
    const mpm::ClothRange range =
        mpm::AddCloth(mesh, parameters.GetDouble("thickness"), 0, world.materials, Vector3::Zero(), world.particles);
    laundry_ = {range.first_vertex_particle, static_cast<int>(world.particles.size())};
    mpm::ClothPin pin;
    for (int j = 0; j < 2; ++j) {
      for (int i = 0; i < 2; ++i) pin.particles.push_back(range.first_vertex_particle + j * n + i);
    }
    pin.release_time = parameters.GetDouble("drop_time");
    if (!(pin.release_time < release_time_)) throw InputError("key 'drop_time' must come before 'release_time'");
    world.particles.cloth_pins.push_back(pin);
    on_floor_height_ = parameters.GetDouble("fall_out_height");
  }

  Load load_;
  std::vector<int> boxes_;
  ParticleRange laundry_;
  int first_vertex_ = 0, vertex_count_ = 0, first_face_ = 0, face_count_ = 0, most_inverted_ = 0;
  std::size_t particle_count_ = 0;
  double floor_z_ = 0.0, release_time_ = 0.0, grid_spacing_ = 0.0, largest_penetration_ = 0.0;
  double on_floor_height_ = 0.0;
  std::vector<double> final_z_;
  bool held_before_release_ = true;
  std::vector<double> contacts_;
};

std::unique_ptr<Scenario> MakeBoxBagging() {
  return std::make_unique<ClothCradle>(Load::kBoxes);
}

std::unique_ptr<Scenario> MakeLaundry() {
  return std::make_unique<ClothCradle>(Load::kCloth);
}

// The bag's keys, shared by box_bagging and laundry.
std::vector<ParameterSpec> CradleSpecs() {
  std::vector<ParameterSpec> parameters = ClothMaterialSpecs(
      {1500.0, 3.2e6, 0.4, 4e5, "[yu2025async]'s bag", "the authors' code for bagging, spec-sap-qn 2.5"});
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"cloth_size", 0.42, "m", "Side of the square cloth (42 cm, spec-sap-qn E7).", Positive()},
           {"vertices_per_side", std::int64_t{30}, "1",
            "Vertices along each side: 30 gives 900 vertices and 1,682 triangles, the 2,582 particles of seed 002's "
            "Table I.",
            Positive()},
           {"cloth_height", 0.3, "m", "Height of the flat cloth and its pins at the start (spec-sap-qn E7).",
            Positive()},
           {"sag_distance", 0.03 * std::sqrt(2.0), "m",
            "How far each corner moves diagonally inward over [0, sag_time]: 3 cm along each axis, so that the corners "
            "span a 0.36 m square and the cloth sags into a cradle (spec-sap-qn E7).",
            NonNegative()},
           {"sag_time", 0.5, "s", "Duration of the first inward move.", Positive()},
           {"wrap_start", 1.5, "s", "Start of the second inward move, once the boxes lie in the cradle.", Positive()},
           {"wrap_distance", 0.08, "m", "How far each corner moves diagonally inward to wrap the boxes (8 cm, E7).",
            NonNegative()},
           {"wrap_time", 1.0, "s", "Duration of the wrap (1 s, E7).", Positive()},
           {"release_time", 3.0, "s", "When the two pins on the +x side let go.", Positive()},
           {"floor_height", -0.2, "m", "Height of the floor the boxes fall onto, below the hanging cloth."},
           {"floor_mu", 0.5, "1", "Friction coefficient of the floor.", NonNegative()},

           GravitySpec(),
           GridSpacingSpec(1.0 / 64.0),
           TimeStepSpec(0.005),
           DurationSpec(4.0),
       }) {
    parameters.push_back(std::move(spec));
  }
  return parameters;
}

}  // namespace

ScenarioInfo BoxBaggingInfo() {
  std::vector<ParameterSpec> parameters = CradleSpecs();
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"box_size", 0.08, "m", "Edge of each rigid box (8 cm, [yu2025async]).", Positive()},
           {"box_density", 1000.0, "kg/m^3", "Density of the boxes (0.512 kg each, [yu2025async]).", Positive()},
           {"box_mu", 0.2, "1", "Friction coefficient between boxes and cloth ([yu2025async]).", NonNegative()},
           {"box_gap", 0.02, "m", "Gap between the two boxes along x.", NonNegative()},
           {"drop_height", 0.03, "m", "Height of the boxes' bottoms above the flat cloth at the start (3 cm, E7).",
            Positive()},

       }) {
    parameters.push_back(std::move(spec));
  }
  return ScenarioInfo{
      "box_bagging",
      "two rigid boxes in a cloth cradle held by four corner pins; two corners release and the boxes fall out "
      "(seed 002, issue 21)",
      std::move(parameters),
      &MakeBoxBagging,
      {"vertices_per_side=10", "grid_spacing=0.04", "drop_height=0.001", "duration=0.03"}};
}

ScenarioInfo LaundryInfo() {
  std::vector<ParameterSpec> parameters = CradleSpecs();
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"laundry_size", 0.3, "m", "Side of the square laundry cloth (0.3 m, spec-sap-qn E8).", Positive()},
           {"laundry_vertices_per_side", std::int64_t{21}, "1",
            "Vertices along each side of the laundry: 21 gives a 1.5 cm spacing, the bag's.", Positive()},
           {"laundry_height", 0.55, "m",
            "Height of the laundry, flat above the bag's centre and held by one corner until drop_time (the "
            "gripper's swing of E8 left out).",
            Positive()},
           {"drop_time", 0.8, "s", "When the pin on the laundry's corner lets go, after the bag has sagged.",
            Positive()},
           {"fall_out_height", 0.1, "m",
            "The laundry has fallen out when its centre of mass ends within this height of the floor.", Positive()},

       }) {
    parameters.push_back(std::move(spec));
  }
  return ScenarioInfo{
      "laundry",
      "a second cloth dropped into a cloth bag held by four corner pins; two corners release and it falls out (seed "
      "002, issue 21)",
      std::move(parameters),
      &MakeLaundry,
      {"vertices_per_side=10", "laundry_vertices_per_side=6", "grid_spacing=0.04", "laundry_height=0.32",
       "drop_time=0.005", "duration=0.03"}};
}

}  // namespace contactlab::experiments
