#include "experiments/scenarios/draped_sphere.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/cloth_particles.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = std::numbers::pi;

// The draped path of one strip in the x–z plane of its sphere (centre c): the arc coordinate
// s runs from the short side's free end (s = 0, x = −R) up to the equator (s = L₂), over the
// top (s = L₂ + πR/2) and down the long side (x = +R) to its free end (s = L₂ + πR + L₁).
struct DrapedPath {
  Vector3 center = Vector3::Zero();
  double radius = 0.0, short_length = 0.0, long_length = 0.0;

  double length() const { return short_length + kPi * radius + long_length; }

  Vector3 PointAt(double s) const {
    if (s <= short_length) return center + Vector3(-radius, 0.0, s - short_length);
    const double arc_end = short_length + kPi * radius;
    if (s >= arc_end) return center + Vector3(radius, 0.0, arc_end - s);
    const double phi = (s - short_length) / radius - 0.5 * kPi;  // from the top, + toward the long side
    return center + radius * Vector3(std::sin(phi), 0.0, std::cos(phi));
  }

  // The arc coordinate of the path point nearest `p` (its y ignored).
  double CoordinateOf(const Vector3& p) const {
    const double dx = p.x() - center.x(), dz = p.z() - center.z();
    if (dz >= 0.0) return short_length + radius * (std::atan2(dx, dz) + 0.5 * kPi);
    if (dx < 0.0) return short_length + dz;
    return short_length + kPi * radius - dz;
  }
};

// b = 2 μ R / (1 + μ²) of the closed form (draped_sphere.h): the arc's own weight, per unit λ g.
double ArcWeightTerm(double radius, double mu) {
  return 2.0 * mu * radius / (1.0 + mu * mu);
}

// Per unit λ, the arc's normal force per length n(φ)/λ = T/(λR) + g cos φ − v²/R along the
// slipping strip is non-negative at 33 points of [−π/2, π/2].
bool StripTouchesArc(double long_length, double short_length, double speed, double acceleration, double radius,
                     double mu, double g) {
  const double b = ArcWeightTerm(radius, mu);
  const double drift = (radius * acceleration - mu * speed * speed) / mu;
  const double c = (short_length * (g + acceleration) + g * b + drift) * std::exp(0.5 * mu * kPi);
  for (int k = 0; k <= 32; ++k) {
    const double phi = -0.5 * kPi + kPi * k / 32.0;
    const double tension = c * std::exp(mu * phi) +
                           g * radius * ((1.0 - mu * mu) * std::cos(phi) + 2.0 * mu * std::sin(phi)) / (1.0 + mu * mu) -
                           drift;
    if (tension / radius + g * std::cos(phi) - speed * speed / radius < 0.0) return false;
  }
  return true;
}

// The analytic slip x(t) of a strip from rest at friction μ: zero while friction holds it,
// else RK4 of ẍ = a(L₁ + x, L₂ − x, ẋ) at a fixed step; NaN once the short side is pulled over
// the top (L₂ − x ≤ 0) or the strip would lift off the arc.
class AnalyticSlip {
 public:
  AnalyticSlip(double long_length, double short_length, double radius, double mu, double g, double duration) {
    const auto acceleration = [&](double x, double v) {
      return DrapedStripAcceleration(long_length + x, short_length - x, v, radius, mu, g);
    };
    step_ = std::min(1e-4, duration / 1000.0);
    double x = 0.0, v = 0.0;
    slip_.push_back(0.0);
    if (!(acceleration(0.0, 0.0) > 0.0)) {  // friction holds: the strip never starts
      held_ = true;
      return;
    }
    for (double t = 0.0; t < duration; t += step_) {
      const double a1 = acceleration(x, v);
      const double a2 = acceleration(x + 0.5 * step_ * v, v + 0.5 * step_ * a1);
      const double a3 = acceleration(x + 0.5 * step_ * (v + 0.5 * step_ * a1), v + 0.5 * step_ * a2);
      const double a4 = acceleration(x + step_ * (v + 0.5 * step_ * a2), v + step_ * a3);
      x += step_ * (v + step_ * (a1 + a2 + a3) / 6.0);
      v += step_ * (a1 + 2.0 * a2 + 2.0 * a3 + a4) / 6.0;
      if (!(short_length - x > 0.0) ||
          !StripTouchesArc(long_length + x, short_length - x, v, acceleration(x, v), radius, mu, g)) {
        break;
      }
      slip_.push_back(x);
    }
  }

  double At(double t) const {
    if (held_) return 0.0;
    const double u = t / step_;
    const std::size_t k = static_cast<std::size_t>(std::floor(u));
    if (k + 1 >= slip_.size()) return kNaN;
    return slip_[k] + (u - static_cast<double>(k)) * (slip_[k + 1] - slip_[k]);
  }

 private:
  std::vector<double> slip_;
  double step_ = 1e-4;
  bool held_ = false;
};

class DrapedSphere final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double radius = parameters.GetDouble("sphere_radius");
    const double long_length = parameters.GetDouble("long_length");
    const double short_length = parameters.GetDouble("short_length");
    const double width = parameters.GetDouble("strip_width");
    const double spacing = parameters.GetDouble("mesh_spacing");
    const double separation = parameters.GetDouble("sphere_separation");
    const double gravity = parameters.GetDouble("gravity");
    if (!(long_length > short_length)) {
      throw InputError("keys 'long_length', 'short_length': the long side must be longer than the short one");
    }
    if (!(width < radius)) throw InputError("keys 'strip_width', 'sphere_radius': the strip must be narrower than R");
    if (!(separation > 2.0 * radius + width)) {
      throw InputError("keys 'sphere_separation', 'sphere_radius', 'strip_width': the spheres must not touch");
    }
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    half_grid_spacing_ = 0.5 * world.grid_spacing;
    threshold_mu_ = DrapedStripThreshold(long_length, short_length, radius);
    mu_ = {parameters.GetDouble("holding_friction_ratio") * threshold_mu_,
           parameters.GetDouble("sliding_friction_ratio") * threshold_mu_};
    if (!(mu_[0] > threshold_mu_ && mu_[1] < threshold_mu_)) {
      throw InputError(
          "keys 'holding_friction_ratio', 'sliding_friction_ratio': the first must exceed 1 and the second lie below "
          "it");
    }
    world.materials.push_back(MakeClothMaterialFromKeys(parameters));
    const double thickness = parameters.GetDouble("thickness");
    const double duration = parameters.GetDouble("duration");

    // Strip 0 on the holding sphere at y = −separation/2, strip 1 on the sliding one at +.
    for (int k = 0; k < 2; ++k) {
      DrapedPath& path = paths_[k];
      path.center = Vector3(0.0, (k == 0 ? -0.5 : 0.5) * separation, 0.0);
      path.radius = radius;
      path.short_length = short_length;
      path.long_length = long_length;
      world.bodies.push_back(
          rigid::MakeStaticBody(k == 0 ? "holding_sphere" : "sliding_sphere",
                                {rigid::Geometry{rigid::Shape::Sphere(radius), rigid::Pose{}, mu_[k]}},
                                rigid::Pose{path.center, Eigen::Quaterniond::Identity()}));

      const int columns = std::max(2, static_cast<int>(std::lround(width / spacing)) + 1);
      const int rows = static_cast<int>(std::lround(path.length() / spacing)) + 1;
      // Flat in (s, y), then laid along the path: a wrap on a cylinder keeps every length.
      mpm::ClothMesh mesh =
          mpm::RectangleCloth(width, path.length(), columns, rows, Vector3(0.0, path.center.y() - 0.5 * width, 0.0),
                              Vector3::UnitY(), Vector3::UnitX());
      for (Vector3& x : mesh.rest_positions) x = path.PointAt(x.x()) + Vector3(0.0, x.y() - path.center.y(), 0.0);
      const mpm::ClothRange range =
          mpm::AddCloth(mesh, thickness, 0, world.materials, Vector3::Zero(), world.particles);
      // The row that starts at the top of the sphere.
      const double row_spacing = path.length() / (rows - 1);
      const int top_row = static_cast<int>(std::lround((short_length + 0.5 * kPi * radius) / row_spacing));
      for (int i = 0; i < columns; ++i) marked_[k].push_back(range.first_vertex_particle + top_row * columns + i);
      vertices_[k] = {range.first_vertex_particle, columns * rows};
      start_coordinate_[k] = path.CoordinateOf(MarkedRowPosition(world.particles, k));
      if (k == 0) {
        faces_per_strip_ = static_cast<int>(mesh.triangles.size());
        double mass = 0.0;
        for (int p = 0; p < columns * rows; ++p) mass += world.particles.mass[range.first_vertex_particle + p];
        for (int e = 0; e < faces_per_strip_; ++e) mass += world.particles.mass[range.first_face_particle + e];
        line_density_ = mass / path.length();
      }
    }
    analytic_ = {AnalyticSlip(long_length, short_length, radius, mu_[0], gravity, duration),
                 AnalyticSlip(long_length, short_length, radius, mu_[1], gravity, duration)};
    // Where a formulation puts the contact surface is uncertain by about h/2 (particle or node
    // contact, the cloth's layer): the sliding strip's slip over radii R ± h/2.
    band_ = {AnalyticSlip(long_length, short_length, radius + half_grid_spacing_, mu_[1], gravity, duration),
             AnalyticSlip(long_length, short_length, radius - half_grid_spacing_, mu_[1], gravity, duration)};
  }

  void DeclareObservables(RunRecorder& recorder) override {
    const std::vector<std::string> strips = {"holding", "sliding"};
    recorder.DeclareSeries("slip", "m",
                           "slip toward the long side of each strip's vertex row that started at its sphere's top "
                           "(arc coordinate along the draped path)",
                           strips);
    recorder.DeclareAnalytic("slip", "m", "the heavy capstan's slip from rest: 0 above the threshold mu*", strips);
    recorder.DeclareAnalytic("sliding_slip_band", "m",
                             "the sliding strip's capstan slip at radii R + h/2 and R - h/2 (where a formulation's "
                             "contact surface may sit)",
                             {"outer", "inner"});
    recorder.DeclareSeries("max_speed", "m/s", "largest vertex speed of each strip", strips);
    recorder.DeclareSeries("max_penetration", "m", "deepest vertex of each strip inside its sphere (R - |x - c|)",
                           strips);
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    std::array<double, 2> slip{}, speed{}, depth{};
    for (int k = 0; k < 2; ++k) {
      slip[k] = paths_[k].CoordinateOf(MarkedRowPosition(world.particles, k)) - start_coordinate_[k];
      for (int v = 0; v < vertices_[k][1]; ++v) {
        const int p = vertices_[k][0] + v;
        speed[k] = std::max(speed[k], world.particles.velocity[p].norm());
        depth[k] = std::max(depth[k], paths_[k].radius - (world.particles.position[p] - paths_[k].center).norm());
      }
      analytic_slip_[k] = analytic_[k].At(t);
    }
    recorder.AppendSeries("slip", t, {slip[0], slip[1]});
    recorder.AppendAnalytic("slip", t, {analytic_slip_[0], analytic_slip_[1]});
    recorder.AppendAnalytic("sliding_slip_band", t, {band_[0].At(t), band_[1].At(t)});
    recorder.AppendSeries("max_speed", t, {speed[0], speed[1]});
    recorder.AppendSeries("max_penetration", t, {depth[0], depth[1]});
    deepest_ = std::max({deepest_, depth[0], depth[1]});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    largest_holding_slip_ = std::max(largest_holding_slip_, std::abs(slip[0]));
    final_slip_ = slip;
    final_time_ = t;
    contacts_.push_back(static_cast<double>(report.contacts));
  }

  void Summarize(RunRecorder& recorder) override {
    const bool held = largest_holding_slip_ < half_grid_spacing_;
    const double error = final_slip_[1] / analytic_slip_[1] - 1.0;
    const double band_low = band_[0].At(final_time_), band_high = band_[1].At(final_time_);
    recorder.SetSummary("threshold_mu", threshold_mu_);
    recorder.SetSummary("holding_mu", mu_[0]);
    recorder.SetSummary("sliding_mu", mu_[1]);
    recorder.SetSummary("line_density", line_density_);
    recorder.SetSummary("holding_max_slip", largest_holding_slip_);
    recorder.SetSummary("holding_slip_over_half_h", largest_holding_slip_ / half_grid_spacing_);
    recorder.SetSummary("held", held);
    recorder.SetSummary("sliding_slip", final_slip_[1]);
    recorder.SetSummary("analytic_sliding_slip", analytic_slip_[1]);
    recorder.SetSummary("slid", final_slip_[1] > half_grid_spacing_);
    recorder.SetSummary("analytic_sliding_slip_low", band_low);
    recorder.SetSummary("analytic_sliding_slip_high", band_high);
    recorder.SetSummary("slid_as_predicted", final_slip_[1] >= band_low && final_slip_[1] <= band_high);
    recorder.SetSummary("sliding_slip_error", error);
    recorder.SetSummary("error_vs_analytic", std::abs(error));
    recorder.SetSummary("mean_contacts", Mean(contacts_));
    recorder.SetSummary("max_penetration", deepest_);
    recorder.SetSummary("faces_per_strip", std::int64_t{faces_per_strip_});
    recorder.SetSummary("vertices_per_strip", std::int64_t{vertices_[0][1]});
  }

  void VisitState(StateArchive& archive) override {
    archive("analytic_slip", analytic_slip_);
    archive("final_slip", final_slip_);
    archive("final_time", final_time_);
    archive("largest_holding_slip", largest_holding_slip_);
    archive("deepest", deepest_);
    archive("contacts", contacts_);
  }

 private:
  Vector3 MarkedRowPosition(const mpm::Particles& particles, int strip) const {
    Vector3 sum = Vector3::Zero();
    for (const int p : marked_[strip]) sum += particles.position[p];
    return sum / static_cast<double>(marked_[strip].size());
  }

  std::array<DrapedPath, 2> paths_;
  std::array<std::vector<int>, 2> marked_;
  std::array<std::array<int, 2>, 2> vertices_{};  // first vertex particle, vertex count
  std::array<double, 2> mu_{}, start_coordinate_{}, final_slip_{}, analytic_slip_{};
  std::vector<AnalyticSlip> analytic_, band_;  // band_: the sliding strip at R + h/2, R − h/2
  std::vector<double> contacts_;
  double final_time_ = 0.0, deepest_ = 0.0;
  double threshold_mu_ = 0.0, half_grid_spacing_ = 0.0, line_density_ = 0.0, largest_holding_slip_ = 0.0;
  int faces_per_strip_ = 0;
};

std::unique_ptr<Scenario> MakeDrapedSphere() {
  return std::make_unique<DrapedSphere>();
}

}  // namespace

double DrapedStripAcceleration(double long_length, double short_length, double speed, double radius, double mu,
                               double gravity) {
  const double e = std::exp(mu * kPi), b = ArcWeightTerm(radius, mu);
  return (gravity * (long_length - b - e * (short_length + b)) + (e - 1.0) * speed * speed) /
         (long_length + e * short_length + (e - 1.0) * radius / mu);
}

double DrapedStripThreshold(double long_length, double short_length, double radius) {
  // L₁ − b − E (L₂ + b) falls with μ on [0, 1] (b and E rise), from L₁ − L₂ > 0 at μ = 0.
  const auto margin = [&](double mu) {
    const double e = std::exp(mu * kPi), b = ArcWeightTerm(radius, mu);
    return long_length - b - e * (short_length + b);
  };
  double low = 0.0, high = 1.0;
  if (margin(high) > 0.0) {
    throw InputError("keys 'long_length', 'short_length', 'sphere_radius': the strip slips even at mu = 1");
  }
  for (int iteration = 0; iteration < 200 && high - low > 1e-15; ++iteration) {
    const double mid = 0.5 * (low + high);
    (margin(mid) > 0.0 ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

ScenarioInfo DrapedSphereInfo() {
  std::vector<ParameterSpec> parameters = ClothMaterialSpecs(
      {1000.0, 1e6, 0.3, 1e6,
       "as hanging_cloth: the long side strains 0.4% at the equator, nearly the inextensible strip of the closed form",
       "the strip never folds onto itself"});
  for (ParameterSpec spec : std::vector<ParameterSpec>{
           {"sphere_radius", 0.1, "m", "Radius R of both spheres.", Positive()},
           {"long_length", 0.45, "m", "Length L1 of the strip hanging below the equator on the long side.", Positive()},
           {"short_length", 0.15, "m", "Length L2 hanging below the equator on the short side.", Positive()},
           {"strip_width", 0.02, "m",
            "Width of each strip: narrow against R, so that the flat strip lies along the great circle (its edges "
            "stand 0.5 mm off the sphere at the defaults).",
            Positive()},
           {"mesh_spacing", 0.005, "m", "Vertex spacing of the strips' triangle meshes: half the grid spacing.",
            Positive()},
           {"sphere_separation", 0.3, "m", "Distance between the spheres' centres along y.", Positive()},
           {"holding_friction_ratio", 1.3, "1",
            "mu of the holding sphere over the threshold mu* (30% above it: well clear of the threshold).", Positive()},
           {"sliding_friction_ratio", 0.7, "1", "mu of the sliding sphere over mu* (30% below it).", Positive()},
           GravitySpec(),
           GridSpacingSpec(0.01),
           TimeStepSpec(0.005),
           DurationSpec(0.35),
       }) {
    parameters.push_back(std::move(spec));
  }
  return ScenarioInfo{"draped_sphere",
                      "two cloth strips hung unevenly over two static spheres, one with friction 30% above the "
                      "capstan threshold mu* (must hold) and one 30% below (must slide as the heavy capstan predicts; "
                      "issue 21)",
                      parameters,
                      &MakeDrapedSphere,
                      {"mesh_spacing=0.01", "grid_spacing=0.02", "duration=0.03"}};
}

}  // namespace contactlab::experiments
