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

class BoxBagging final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double side = parameters.GetDouble("cloth_size");
    const int vertices_per_side = static_cast<int>(parameters.GetInt("vertices_per_side"));
    const double height = parameters.GetDouble("cloth_height");
    box_size_ = parameters.GetDouble("box_size");
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

    // The floor, and two free boxes above the cloth's centre, their bottoms drop_height above it.
    world.bodies.push_back(rigid::MakeStaticBody(
        "floor", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, parameters.GetDouble("floor_mu")}},
        rigid::Pose{Vector3(0.0, 0.0, floor_z_), Eigen::Quaterniond::Identity()}));
    const double box_mu = parameters.GetDouble("box_mu");
    const double gap = parameters.GetDouble("box_gap");
    for (int b = 0; b < 2; ++b) {
      rigid::Pose pose;
      pose.position = Vector3((b == 0 ? -1.0 : 1.0) * 0.5 * (box_size_ + gap), 0.0,
                              height + parameters.GetDouble("drop_height") + 0.5 * box_size_);
      boxes_[b] = static_cast<int>(world.bodies.size());
      world.bodies.push_back(rigid::MakeFreeBody(
          "box" + std::to_string(b),
          {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.5 * box_size_)), rigid::Pose{}, box_mu}},
          parameters.GetDouble("box_density"), pose));
    }

    // The cloth, flat at `height`, centred on the z axis.
    try {
      world.materials.push_back(
          mpm::MakeClothMaterial("cloth", parameters.GetDouble("density"), parameters.GetDouble("youngs_modulus"),
                                 parameters.GetDouble("poisson_ratio"), parameters.GetDouble("normal_stiffness"),
                                 parameters.GetDouble("shear_stiffness"), parameters.GetDouble("layer_friction")));
    } catch (const std::invalid_argument& error) {
      throw InputError(std::string("keys 'density', 'youngs_modulus', 'poisson_ratio', 'normal_stiffness', "
                                   "'shear_stiffness', 'layer_friction': ") +
                       error.what());
    }
    const int n = vertices_per_side;
    const mpm::ClothMesh mesh = mpm::RectangleCloth(side, side, n, n, Vector3(-0.5 * side, -0.5 * side, height),
                                                    Vector3::UnitX(), Vector3::UnitY());
    const mpm::ClothRange range =
        mpm::AddCloth(mesh, parameters.GetDouble("thickness"), 0, world.materials, Vector3::Zero(), world.particles);
    first_vertex_ = range.first_vertex_particle;
    vertex_count_ = n * n;
    first_face_ = range.first_face_particle;
    face_count_ = static_cast<int>(mesh.triangles.size());

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
    for (int b = 0; b < 2; ++b) {
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
    // The square the pinned corners span (all four pins, held or not).
    double reach = 0.0;
    for (const mpm::ClothPin& pin : particles.cloth_pins) {
      for (const int p : pin.particles) {
        reach = std::max({reach, std::abs(particles.position[p].x()), std::abs(particles.position[p].y())});
      }
    }
    std::array<bool, 2> held{};
    double penetration = 0.0;
    for (int b = 0; b < 2; ++b) {
      const rigid::RigidBody& box = world.bodies[boxes_[b]];
      const Vector3& centre = box.pose.position;
      held[b] = centre.z() > lowest && std::abs(centre.x()) < reach && std::abs(centre.y()) < reach;
      const rigid::Pose pose = box.GeometryPose(0);
      for (int p = first_vertex_; p < first_face_ + face_count_; ++p) {
        const double distance =
            box.geometries[0].shape.SignedDistance(pose.InverseTransformPoint(particles.position[p]));
        penetration = std::max(penetration, -distance);
      }
      recorder.AppendSeries("box" + std::to_string(b) + "_z", t, {centre.z()});
      recorder.AppendSeries("box" + std::to_string(b) + "_held", t, {held[b] ? 1.0 : 0.0});
    }
    int inverted = 0;
    for (int f = 0; f < face_count_; ++f) {
      if (mpm::FactorCloth(particles.deformation_gradient[first_face_ + f]).upper(2, 2) < 0.0) ++inverted;
    }
    recorder.AppendSeries("max_box_penetration", t, {penetration});
    recorder.AppendSeries("inverted_faces", t, {static_cast<double>(inverted)});
    recorder.AppendSeries("lowest_cloth", t, {lowest});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    if (t > 0.0) {
      largest_penetration_ = std::max(largest_penetration_, penetration);
      most_inverted_ = std::max(most_inverted_, inverted);
      contacts_.push_back(report.contacts);
      // Held from the wrap's start until the release.
      if (t >= release_time_ - 0.5 && t < release_time_)
        held_before_release_ = held_before_release_ && held[0] && held[1];
    }
    for (int b = 0; b < 2; ++b) final_z_[b] = world.bodies[boxes_[b]].pose.position.z();
  }

  void Summarize(RunRecorder& recorder) override {
    const double on_floor = floor_z_ + box_size_;  // a box lying on the floor has its centre below this
    const bool fell_out = final_z_[0] < on_floor && final_z_[1] < on_floor;
    recorder.SetSummary("held_until_release", std::int64_t{held_before_release_ ? 1 : 0});
    recorder.SetSummary("fell_out", std::int64_t{fell_out ? 1 : 0});
    recorder.SetSummary("box0_final_z", final_z_[0]);
    recorder.SetSummary("box1_final_z", final_z_[1]);
    recorder.SetSummary("max_box_penetration", largest_penetration_);
    recorder.SetSummary("max_box_penetration_over_half_h", largest_penetration_ / (0.5 * grid_spacing_));
    recorder.SetSummary("max_inverted_faces", std::int64_t{most_inverted_});
    recorder.SetSummary("mean_contacts", Mean(contacts_));
    recorder.SetSummary("particles", std::int64_t{vertex_count_ + face_count_});
  }

 private:
  std::array<int, 2> boxes_{};
  int first_vertex_ = 0, vertex_count_ = 0, first_face_ = 0, face_count_ = 0, most_inverted_ = 0;
  double box_size_ = 0.0, floor_z_ = 0.0, release_time_ = 0.0, grid_spacing_ = 0.0, largest_penetration_ = 0.0;
  std::array<double, 2> final_z_{kNaN, kNaN};
  bool held_before_release_ = true;
  std::vector<double> contacts_;
};

std::unique_ptr<Scenario> MakeBoxBagging() {
  return std::make_unique<BoxBagging>();
}

}  // namespace

ScenarioInfo BoxBaggingInfo() {
  return ScenarioInfo{
      "box_bagging",
      "two rigid boxes in a cloth cradle held by four corner pins; two corners release and the boxes fall out "
      "(seed 002, issue 21)",
      {
          {"cloth_size", 0.42, "m", "Side of the square cloth (42 cm, spec-sap-qn E7).", Positive()},
          {"vertices_per_side", std::int64_t{30}, "1",
           "Vertices along each side: 30 gives 900 vertices and 1,682 triangles, the 2,582 particles of seed 002's "
           "Table I.",
           Positive()},
          {"thickness", 0.001, "m", "Thickness of the cloth (1 mm, spec-sap-qn 2.5).", Positive()},
          {"density", 1500.0, "kg/m^3", "Density of the cloth ([yu2025async]).", Positive()},
          {"youngs_modulus", 3.2e6, "Pa", "In-plane Young's modulus ([yu2025async]).", Positive()},
          {"poisson_ratio", 0.4, "1", "In-plane Poisson's ratio ([yu2025async]).", InClosedRange(0.0, 0.49)},
          {"normal_stiffness", 4e5, "Pa",
           "Stiffness k of compression across the layer (the authors' code for bagging, spec-sap-qn 2.5).", Positive()},
          {"shear_stiffness", 0.0, "Pa", "Stiffness gamma of shear across the layer (0, spec-sap-qn 2.5).",
           NonNegative()},
          {"layer_friction", 0.0, "1", "Friction c_F between layers (0, spec-sap-qn 2.5).", NonNegative()},
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
          {"box_size", 0.08, "m", "Edge of each rigid box (8 cm, [yu2025async]).", Positive()},
          {"box_density", 1000.0, "kg/m^3", "Density of the boxes (0.512 kg each, [yu2025async]).", Positive()},
          {"box_mu", 0.2, "1", "Friction coefficient between boxes and cloth ([yu2025async]).", NonNegative()},
          {"box_gap", 0.02, "m", "Gap between the two boxes along x.", NonNegative()},
          {"drop_height", 0.03, "m", "Height of the boxes' bottoms above the flat cloth at the start (3 cm, E7).",
           Positive()},
          {"floor_height", -0.2, "m", "Height of the floor the boxes fall onto, below the hanging cloth."},
          {"floor_mu", 0.5, "1", "Friction coefficient of the floor.", NonNegative()},
          GravitySpec(),
          GridSpacingSpec(1.0 / 64.0),
          TimeStepSpec(0.005),
          DurationSpec(4.0),
      },
      &MakeBoxBagging,
      {"vertices_per_side=10", "grid_spacing=0.04", "drop_height=0.001", "duration=0.03"}};
}

}  // namespace contactlab::experiments
