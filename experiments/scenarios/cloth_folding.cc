#include "experiments/scenarios/cloth_folding.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/cloth_particles.h"
#include "mpm/constitutive/cloth.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A gripper's path as pin segments: up by `lift` over `rise` s, across by `travel` over
// `carry` s, down by `lower` over `rise` s; grasped at `start`, released at its end.
mpm::ClothPin CarryPin(std::vector<int> particles, double start, double lift, double lower, const Vector3& travel,
                       double rise, double carry) {
  mpm::ClothPin pin;
  pin.particles = std::move(particles);
  pin.grasp_time = start;
  pin.segment_end = {start + rise, start + rise + carry, start + 2.0 * rise + carry};
  pin.segment_velocity = {Vector3(0.0, 0.0, lift / rise), travel / carry, Vector3(0.0, 0.0, -lower / rise)};
  pin.release_time = start + 2.0 * rise + carry;
  return pin;
}

class ClothFolding final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    length_ = parameters.GetDouble("cloth_length");
    width_ = parameters.GetDouble("cloth_width");
    const int nx = parameters.GetIntAs<int>("vertices_along_length");
    const int ny = parameters.GetIntAs<int>("vertices_along_width");
    if (nx < 4 || ny < 4) throw InputError("keys 'vertices_along_length', 'vertices_along_width' must be at least 4");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    layer_interval_ = parameters.GetDouble("layer_interval");

    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, parameters.GetDouble("table_mu")}},
        rigid::Pose{}));
    world.materials.push_back(MakeClothMaterialFromKeys(parameters));
    // Flat on the table: its particles on the surface (φ = 0), centred on the origin.
    const mpm::ClothMesh mesh = mpm::RectangleCloth(
        length_, width_, nx, ny, Vector3(-0.5 * length_, -0.5 * width_, 0.0), Vector3::UnitX(), Vector3::UnitY());
    const mpm::ClothRange range =
        mpm::AddCloth(mesh, parameters.GetDouble("thickness"), 0, world.materials, Vector3::Zero(), world.particles);
    first_vertex_ = range.first_vertex_particle;
    vertex_count_ = nx * ny;
    first_face_ = range.first_face_particle;
    face_count_ = static_cast<int>(mesh.triangles.size());
    rest_area_ = length_ * width_;
    spacing_ = std::min(length_ / (nx - 1), width_ / (ny - 1));
    triangles_ = mesh.triangles;

    // The grippers. Pads: 2 × 2 vertices at the two corners of the −x edge. Bar: the −y edge.
    const auto vertex = [&](int i, int j) { return range.first_vertex_particle + j * nx + i; };
    std::vector<int> pads, bar;
    for (int dj = 0; dj < 2; ++dj) {
      for (int di = 0; di < 2; ++di) {
        pads.push_back(vertex(di, dj));
        pads.push_back(vertex(di, ny - 1 - dj));
      }
    }
    for (int i = 0; i < nx; ++i) bar.push_back(vertex(i, 0));
    const double lift = parameters.GetDouble("lift_height");
    const double lower = parameters.GetDouble("lower_height");
    const double rise = parameters.GetDouble("rise_time");
    const double first_carry = parameters.GetDouble("first_fold_time");
    const double second_carry = parameters.GetDouble("second_fold_time");
    const double pause = parameters.GetDouble("pause_time");
    // Fold 1 and 2, then their reverse: each gripper starts `pause` after the last let go.
    double t = pause;
    std::vector<mpm::ClothPin>& pins = world.particles.cloth_pins;
    // The layers are read halfway through the pause after each fold.
    pins.push_back(CarryPin(pads, t, lift, lower, Vector3(length_, 0.0, 0.0), rise, first_carry));
    first_fold_done_ = pins.back().release_time + 0.5 * pause;
    t = pins.back().release_time + pause;
    pins.push_back(CarryPin(bar, t, lift, lower, Vector3(0.0, width_, 0.0), rise, second_carry));
    second_fold_done_ = pins.back().release_time + 0.5 * pause;
    t = pins.back().release_time + pause;
    pins.push_back(CarryPin(bar, t, lift, lower, Vector3(0.0, -width_, 0.0), rise, second_carry));
    t = pins.back().release_time + pause;
    pins.push_back(CarryPin(pads, t, lift, lower, Vector3(-length_, 0.0, 0.0), rise, first_carry));
    unfolded_ = pins.back().release_time + pause;  // a shorter run reports the phases it reached
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("mean_layers", "1", "mean number of cloth layers over the cloth (every layer_interval)");
    recorder.DeclareSeries("area_ratio", "1", "area the cloth covers over its rest area (every layer_interval)");
    recorder.DeclareSeries("inverted_faces", "1", "face particles whose layer is inverted (r33 < 0)");
    recorder.DeclareSeries("highest_cloth", "m", "height of the highest cloth vertex");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const mpm::Particles& particles = world.particles;
    int inverted = 0;
    for (int f = 0; f < face_count_; ++f) {
      if (mpm::FactorCloth(particles.deformation_gradient[first_face_ + f]).upper(2, 2) < 0.0) ++inverted;
    }
    double highest = -std::numeric_limits<double>::infinity();
    for (int v = 0; v < vertex_count_; ++v) highest = std::max(highest, particles.position[first_vertex_ + v].z());
    recorder.AppendSeries("inverted_faces", t, {static_cast<double>(inverted)});
    recorder.AppendSeries("highest_cloth", t, {highest});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    most_inverted_ = std::max(most_inverted_, inverted);
    if (t >= next_layer_time_ - 1e-9) {
      next_layer_time_ += layer_interval_;
      const auto [layers, area] = MeasureLayers(particles);
      recorder.AppendSeries("mean_layers", t, {layers});
      recorder.AppendSeries("area_ratio", t, {area});
      if (t >= first_fold_done_ - 1e-9 && std::isnan(layers_after_first_)) layers_after_first_ = layers;
      if (t >= second_fold_done_ - 1e-9 && std::isnan(layers_after_second_)) layers_after_second_ = layers;
      if (t >= unfolded_ - 1e-9) {
        final_layers_ = layers;
        final_area_ = area;
      }
    }
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("layers_after_first_fold", layers_after_first_);
    recorder.SetSummary("layers_after_second_fold", layers_after_second_);
    recorder.SetSummary("final_layers", final_layers_);
    recorder.SetSummary("final_area_ratio", final_area_);
    recorder.SetSummary("max_inverted_faces", std::int64_t{most_inverted_});
    recorder.SetSummary("first_fold_read", first_fold_done_);
    recorder.SetSummary("second_fold_read", second_fold_done_);
    recorder.SetSummary("unfolded_read", unfolded_);
    recorder.SetSummary("particles", std::int64_t{vertex_count_ + face_count_});
  }

  void VisitState(StateArchive& archive) override {
    archive("most_inverted", most_inverted_);
    archive("next_layer_time", next_layer_time_);
    archive("layers_after_first", layers_after_first_);
    archive("layers_after_second", layers_after_second_);
    archive("final_layers", final_layers_);
    archive("final_area", final_area_);
  }

 private:
  // (mean layers, covered area / rest area): at each face particle the triangles whose
  // projection onto the table covers it, found through a hash of the projected triangles'
  // bounding boxes on cells of the mesh spacing; the covered area is the projected area over
  // the mean layer count.
  std::pair<double, double> MeasureLayers(const mpm::Particles& particles) const {
    const double cell = spacing_;
    const auto key = [&](long i, long j) { return (i << 32) ^ (j & 0xffffffffL); };
    std::unordered_map<long, std::vector<int>> cells;
    double projected = 0.0;
    std::vector<std::array<Eigen::Vector2d, 3>> corners(triangles_.size());
    for (std::size_t e = 0; e < triangles_.size(); ++e) {
      for (int k = 0; k < 3; ++k) corners[e][k] = particles.position[first_vertex_ + triangles_[e][k]].head<2>();
      const Eigen::Vector2d a = corners[e][1] - corners[e][0], b = corners[e][2] - corners[e][0];
      projected += 0.5 * std::abs(a.x() * b.y() - a.y() * b.x());
      const Eigen::Vector2d low = corners[e][0].cwiseMin(corners[e][1]).cwiseMin(corners[e][2]);
      const Eigen::Vector2d high = corners[e][0].cwiseMax(corners[e][1]).cwiseMax(corners[e][2]);
      for (long i = std::lround(std::floor(low.x() / cell)); i <= std::lround(std::floor(high.x() / cell)); ++i) {
        for (long j = std::lround(std::floor(low.y() / cell)); j <= std::lround(std::floor(high.y() / cell)); ++j) {
          cells[key(i, j)].push_back(static_cast<int>(e));
        }
      }
    }
    double layers = 0.0;
    for (int f = 0; f < face_count_; ++f) {
      const Eigen::Vector2d point = particles.position[first_face_ + f].head<2>();
      const auto found =
          cells.find(key(std::lround(std::floor(point.x() / cell)), std::lround(std::floor(point.y() / cell))));
      int covering = 0;
      if (found != cells.end()) {
        for (const int e : found->second) {
          // Inside when the three edge functions share a sign (either orientation).
          double signs[3];
          for (int k = 0; k < 3; ++k) {
            const Eigen::Vector2d edge = corners[e][(k + 1) % 3] - corners[e][k], to = point - corners[e][k];
            signs[k] = edge.x() * to.y() - edge.y() * to.x();
          }
          const bool inside =
              (signs[0] >= 0 && signs[1] >= 0 && signs[2] >= 0) || (signs[0] <= 0 && signs[1] <= 0 && signs[2] <= 0);
          if (inside) ++covering;
        }
      }
      layers += std::max(covering, 1);
    }
    layers /= face_count_;
    return {layers, projected / (layers * rest_area_)};
  }

  std::vector<std::array<int, 3>> triangles_;
  int first_vertex_ = 0, vertex_count_ = 0, first_face_ = 0, face_count_ = 0, most_inverted_ = 0;
  double length_ = 0.0, width_ = 0.0, spacing_ = 0.0, rest_area_ = 0.0, layer_interval_ = 0.0;
  double next_layer_time_ = 0.0, first_fold_done_ = 0.0, second_fold_done_ = 0.0, unfolded_ = 0.0;
  double layers_after_first_ = kNaN, layers_after_second_ = kNaN, final_layers_ = kNaN, final_area_ = kNaN;
};

std::unique_ptr<Scenario> MakeClothFolding() {
  return std::make_unique<ClothFolding>();
}

}  // namespace

ScenarioInfo ClothFoldingInfo() {
  std::vector<ParameterSpec> parameters = ClothMaterialSpecs(
      {1000.0, 1e5, 0.3, 1e5, "[yu2025async]'s T-shirt", "the authors' code for the T-shirt, spec-sap-qn 2.5"});
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"cloth_length", 0.6, "m", "Length L of the cloth along x (spec-sap-qn E9: 0.6 m).", Positive()},
           {"cloth_width", 0.4, "m", "Width W of the cloth along y (E9: 0.4 m).", Positive()},
           {"vertices_along_length", std::int64_t{70}, "1", "Vertices along x (E9: 70).", Positive()},
           {"vertices_along_width", std::int64_t{60}, "1",
            "Vertices along y (E9: 60; 4,200 vertices, 8,142 triangles).", Positive()},
           {"table_mu", 0.5, "1", "Friction coefficient of the table (E9).", NonNegative()},
           {"lift_height", 0.06, "m", "How high a gripper lifts its edge before carrying it.", Positive()},
           {"lower_height", 0.05, "m", "How far a gripper lowers its edge before letting go.", Positive()},
           {"rise_time", 0.25, "s", "Duration of each lift and each lowering.", Positive()},
           {"first_fold_time", 1.5, "s", "Duration of the carry of the first fold (and of its reverse).", Positive()},
           {"second_fold_time", 1.0, "s", "Duration of the carry of the second fold (and of its reverse).", Positive()},
           {"pause_time", 0.3, "s",
            "Rest before each grasp and after the last release; the layers are read halfway through the pause after "
            "each fold.",
            Positive()},
           {"layer_interval", 0.05, "s", "Interval of the layer and area measurements.", Positive()},
           GravitySpec(),
           GridSpacingSpec(1.0 / 128.0),
           TimeStepSpec(0.002),
           DurationSpec(9.5),

       }) {
    parameters.push_back(std::move(spec));
  }
  return ScenarioInfo{
      "cloth_folding",
      "a rectangular cloth folded twice by kinematic grippers (pins) on a table and unfolded: layers, area, "
      "inverted faces (seed 002, issue 21)",
      parameters,
      &MakeClothFolding,
      {"vertices_along_length=10", "vertices_along_width=8", "grid_spacing=0.04", "pause_time=0.01", "duration=0.01",
       "dt=0.005"}};
}

}  // namespace contactlab::experiments
