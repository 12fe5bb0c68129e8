#include "experiments/scenarios/dough_tearing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Matrix3;
using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The two carrier links of a PD finger (x, then z) have no geometry. MultibodyTree wants a
// positive mass on every moving link; 1% of the finger's keeps the drives' loads those of
// the finger itself.
constexpr double kCarrierMassFraction = 0.01;

// Connected components of the particle cloud: particles i, j are joined when
// ‖x_i − x_j‖ < radius. Returns the mass of every component, largest first.
std::vector<double> ComponentMasses(const mpm::Particles& particles, double radius) {
  const int count = static_cast<int>(particles.size());
  std::vector<int> parent(count);
  std::iota(parent.begin(), parent.end(), 0);
  const std::function<int(int)> root = [&](int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  // Cells of edge `radius`: joined particles lie in the same or a neighbouring cell.
  const auto cell_of = [&](const Vector3& x) {
    return std::array<std::int64_t, 3>{static_cast<std::int64_t>(std::floor(x.x() / radius)),
                                       static_cast<std::int64_t>(std::floor(x.y() / radius)),
                                       static_cast<std::int64_t>(std::floor(x.z() / radius))};
  };
  const auto key_of = [](std::int64_t i, std::int64_t j, std::int64_t k) {
    // 21 bits per axis: ±10⁶ cells, far beyond any scene's extent in cells of ≥ 1 mm.
    constexpr std::int64_t kMask = (std::int64_t{1} << 21) - 1;
    return ((i & kMask) << 42) | ((j & kMask) << 21) | (k & kMask);
  };
  std::unordered_map<std::int64_t, std::vector<int>> cells;
  cells.reserve(static_cast<std::size_t>(count));
  for (int p = 0; p < count; ++p) {
    const auto c = cell_of(particles.position[p]);
    cells[key_of(c[0], c[1], c[2])].push_back(p);
  }
  const double radius_squared = radius * radius;
  for (int p = 0; p < count; ++p) {
    const auto c = cell_of(particles.position[p]);
    for (std::int64_t di = -1; di <= 1; ++di) {
      for (std::int64_t dj = -1; dj <= 1; ++dj) {
        for (std::int64_t dk = -1; dk <= 1; ++dk) {
          const auto found = cells.find(key_of(c[0] + di, c[1] + dj, c[2] + dk));
          if (found == cells.end()) continue;
          for (const int q : found->second) {
            if (q <= p || (particles.position[p] - particles.position[q]).squaredNorm() >= radius_squared) continue;
            const int a = root(p), b = root(q);
            if (a != b) parent[std::max(a, b)] = std::min(a, b);
          }
        }
      }
    }
  }
  std::unordered_map<int, double> mass_of_root;
  for (int p = 0; p < count; ++p) mass_of_root[root(p)] += particles.mass[p];
  std::vector<double> masses;
  masses.reserve(mass_of_root.size());
  for (const auto& [component, mass] : mass_of_root) masses.push_back(mass);
  std::sort(masses.begin(), masses.end(), std::greater<>());
  return masses;
}

// Equivalent plastic strain of a plastic deformation gradient F^P = R^P V^P: √(2/3) ‖dev
// log V^P‖, from the singular values of F^P (von Mises plasticity keeps det F^P = 1, so the
// deviator is the whole logarithm up to round-off).
double EquivalentPlasticStrain(const Matrix3& plastic_deformation_gradient) {
  // log σ_i = ½ log λ_i with λ_i the eigenvalues of (F^P)ᵀ F^P.
  const Vector3 squared_stretches =
      Eigen::SelfAdjointEigenSolver<Matrix3>(plastic_deformation_gradient.transpose() * plastic_deformation_gradient,
                                             Eigen::EigenvaluesOnly)
          .eigenvalues();
  const Vector3 logarithms = 0.5 * squared_stretches.array().log().matrix();
  const Vector3 deviator = logarithms - Vector3::Constant(logarithms.mean());
  return std::sqrt(2.0 / 3.0) * deviator.norm();
}

// One finger's prescribed path: the centre of its box in world, per axis [m].
struct FingerPath {
  rigid::TimeFunction x, y, z;
  Vector3 at(double t) const { return Vector3(x.value(t), y.value(t), z.value(t)); }
  Vector3 velocity_at(double t) const { return Vector3(x.derivative(t), y.derivative(t), z.derivative(t)); }
};

class DoughTearing final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double length = parameters.GetDouble("dough_length");
    const double width = parameters.GetDouble("dough_width");
    const double thickness = parameters.GetDouble("dough_thickness");
    const double density = parameters.GetDouble("density");
    const Vector3 finger_size(parameters.GetDouble("finger_length"), parameters.GetDouble("finger_thickness"),
                              parameters.GetDouble("finger_height"));
    const double grip_x = parameters.GetDouble("grip_position");
    const double clearance = parameters.GetDouble("finger_clearance");
    const double press_depth = parameters.GetDouble("press_depth");
    if (grip_x + 0.5 * finger_size.x() > 0.5 * length || grip_x - 0.5 * finger_size.x() <= 0.0) {
      throw InputError("keys 'grip_position', 'finger_length' must put each finger within its half of 'dough_length'");
    }
    if (press_depth >= 0.5 * width) throw InputError("key 'press_depth' must be less than half of 'dough_width'");
    const double waist_width = parameters.GetDouble("waist_width");
    const double waist_length = parameters.GetDouble("waist_length");
    if (waist_width > 0.0 && !(waist_width < width)) {
      throw InputError("key 'waist_width' must be less than 'dough_width' (or 0: no waist)");
    }
    if (waist_width > 0.0 && !(0.5 * waist_length < grip_x - 0.5 * finger_size.x())) {
      throw InputError("keys 'waist_length', 'grip_position', 'finger_length': the waist must lie between the fingers");
    }
    if (clearance >= thickness) throw InputError("key 'finger_clearance' must be less than 'dough_thickness'");
    if (parameters.GetDouble("table_length") <= length + 2.0 * parameters.GetDouble("pull_distance") ||
        parameters.GetDouble("table_width") <= width) {
      throw InputError(
          "keys 'table_length', 'table_width' must exceed the pulled dough ('dough_length' + 2 'pull_distance') "
          "and 'dough_width'");
    }
    piece_min_fraction_ = parameters.GetDouble("piece_min_fraction");
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    world.gravity = Vector3(0.0, 0.0, -parameters.GetDouble("gravity"));

    // Table: a static box whose top face is the plane z = 0.
    const rigid::Vector3 table_half(0.5 * parameters.GetDouble("table_length"),
                                    0.5 * parameters.GetDouble("table_width"),
                                    0.5 * parameters.GetDouble("table_thickness"));
    rigid::Pose table_pose;
    table_pose.position = rigid::Vector3(0.0, 0.0, -table_half.z());
    table_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(rigid::MakeStaticBody(
        "table", {rigid::Geometry{rigid::Shape::Box(table_half), rigid::Pose{}, parameters.GetDouble("table_mu")}},
        table_pose));
    ApplyTableModel(parameters, world.bodies.back());

    // Dough: linear corotated with von Mises plasticity ([zong2024convex] §VII-B), sampled as in
    // dough_rolling: the box [0, L] × [0, W] × [0, H] on the lattice s(k + ½), centred over
    // the origin, its lowest layer s/2 above the table.
    world.materials.push_back(
        mpm::MakeMaterial("dough", "linear_corotated", density, parameters.GetDouble("youngs_modulus"),
                          parameters.GetDouble("poisson_ratio"), parameters.GetDouble("yield_stress")));
    mpm::SamplingOptions sampling;
    sampling.grid_spacing = world.grid_spacing;
    sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
    const Vector3 size(length, width, thickness);
    const Vector3 half_size = 0.5 * size;
    std::vector<Vector3> positions =
        mpm::SampleSolid([&](const Vector3& x) { return ((x - half_size).cwiseAbs() - half_size).maxCoeff(); },
                         Eigen::AlignedBox3d(Vector3::Zero(), size), sampling);
    if (positions.size() < 8) {
      throw InputError(
          "keys 'dough_length', 'dough_width', 'dough_thickness', 'grid_spacing', "
          "'particles_per_cell' give only " +
          std::to_string(positions.size()) + " particles");
    }
    for (Vector3& x : positions) x -= Vector3(half_size.x(), half_size.y(), 0.0);
    // A waist (a tensile test's dog-bone specimen): the middle waist_length of the dough only
    // waist_width wide, so that its narrowest section lies between the grips, not under them.
    if (waist_width > 0.0) {
      std::erase_if(positions, [&](const Vector3& x) {
        return std::abs(x.x()) < 0.5 * waist_length && std::abs(x.y()) > 0.5 * waist_width;
      });
    }
    mpm::AddSampledParticles(positions, sampling, density, Vector3::Zero(), 0, world.particles);
    particle_spacing_ = mpm::ParticleSpacing(sampling);
    particle_count_ = static_cast<std::int64_t>(world.particles.size());
    dough_mass_ = mpm::TotalMass(world.particles);

    // Phase ends [s]: close, lift, pull apart, lower, open.
    const double t1 = parameters.GetDouble("close_time");
    const double t2 = t1 + parameters.GetDouble("lift_time");
    const double t3 = t2 + parameters.GetDouble("pull_time");
    const double t4 = t3 + parameters.GetDouble("lower_time");
    const double t5 = t4 + parameters.GetDouble("open_time");
    pull_start_ = t2;
    const double lift = parameters.GetDouble("lift_height");
    const double pull = parameters.GetDouble("pull_distance");
    const double z0 = clearance + 0.5 * finger_size.z();
    const double y_open = 0.5 * width + parameters.GetDouble("open_gap") + 0.5 * finger_size.y();
    const double y_closed = 0.5 * width - press_depth + 0.5 * finger_size.y();

    const std::string drive = parameters.GetString("finger_drive");
    pd_fingers_ = drive == "pd";
    const double finger_mass = parameters.GetDouble("finger_mass");
    const double finger_density = finger_mass / finger_size.prod();
    const double friction = parameters.GetDouble("mu");
    const rigid::Geometry finger_geometry{rigid::Shape::Box(0.5 * finger_size), rigid::Pose{}, friction};
    for (const int gripper : {-1, +1}) {
      for (const int side : {-1, +1}) {
        FingerPath path{
            KeyframeTrajectory({{0.0, gripper * grip_x}, {t2, gripper * grip_x}, {t3, gripper * (grip_x + pull)}}),
            KeyframeTrajectory(
                {{0.0, side * y_open}, {t1, side * y_closed}, {t4, side * y_closed}, {t5, side * y_open}}),
            KeyframeTrajectory({{0.0, z0}, {t1, z0}, {t2, z0 + lift}, {t3, z0 + lift}, {t4, z0}})};
        const std::string name =
            std::string(gripper < 0 ? "left" : "right") + "_gripper_" + (side < 0 ? "front" : "back") + "_finger";
        if (pd_fingers_) {
          fingers_.push_back(AddPdFinger(parameters, world, name, finger_geometry, finger_density, finger_mass, path));
        } else {
          fingers_.push_back(static_cast<int>(world.bodies.size()));
          world.bodies.push_back(rigid::MakeKinematicBody(name, {finger_geometry}, [path](double t) {
            rigid::KinematicState state;
            state.pose.position = path.at(t);
            state.linear_velocity = path.velocity_at(t);
            return state;
          }));
        }
        paths_.push_back(path);
      }
    }
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("pieces", "1",
                           "connected components holding at least piece_min_fraction of the dough's mass (particles "
                           "joined within 1.5 particle spacings)");
    recorder.DeclareSeries("components", "1", "all connected components of the dough's particles");
    recorder.DeclareSeries("piece_mass_fractions", "1", "mass fractions of the two largest components",
                           {"largest", "second"});
    recorder.DeclareSeries("plastic_strain", "1", "equivalent plastic strain sqrt(2/3) |dev log V^P| over the dough",
                           {"mean", "max"});
    recorder.DeclareSeries("gripper_separation", "m",
                           "distance along x between the two grippers' finger centres (mean of each gripper's pair)");
    recorder.DeclareSeries("dough_center_height", "m", "height of the dough's centre of mass above the table");
    recorder.DeclareSeries("finger_tracking_error", "m",
                           "largest distance of a finger's centre from its prescribed path (0 when kinematic)");
    recorder.DeclareSeries("finger_force", "N", "contact force the dough exerts on the fingers, summed per gripper",
                           {"left_x", "left_y", "left_z", "right_x", "right_y", "right_z"});
    recorder.DeclareSeries(
        "grip_force", "N",
        "squeeze of each gripper: mean over its two fingers of |y component| of their contact forces",
        {"left", "right"});
    recorder.DeclareSeries("contacts", "1", "contact points of the step (StepReport.contacts)");
    recorder.DeclareSeries("outer_iterations", "1", "Newton / quasi-Newton iterations of the step");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const std::vector<double> masses = ComponentMasses(world.particles, 1.5 * particle_spacing_);
    int pieces = 0;
    for (const double mass : masses) pieces += mass >= piece_min_fraction_ * dough_mass_ ? 1 : 0;
    const double largest = masses.empty() ? 0.0 : masses[0] / dough_mass_;
    const double second = masses.size() < 2 ? 0.0 : masses[1] / dough_mass_;
    recorder.AppendSeries("pieces", t, {static_cast<double>(pieces)});
    recorder.AppendSeries("components", t, {static_cast<double>(masses.size())});
    recorder.AppendSeries("piece_mass_fractions", t, {largest, second});
    if (pieces >= 2 && std::isnan(separation_time_)) separation_time_ = t;

    double strain_sum = 0.0, strain_max = 0.0, height = 0.0;
    const int count = static_cast<int>(world.particles.size());
    for (int p = 0; p < count; ++p) {
      const double strain = EquivalentPlasticStrain(world.particles.plastic_deformation_gradient[p]);
      strain_sum += strain;
      strain_max = std::max(strain_max, strain);
      height += world.particles.mass[p] * world.particles.position[p].z();
    }
    const double strain_mean = strain_sum / std::max(1, count);
    recorder.AppendSeries("plastic_strain", t, {strain_mean, strain_max});
    recorder.AppendSeries("dough_center_height", t, {height / dough_mass_});
    if (t == 0.0) initial_height_ = height / dough_mass_;
    if (t <= pull_start_ + 1e-9) lift_rise_ = height / dough_mass_ - initial_height_;

    double left_x = 0.0, right_x = 0.0, tracking = 0.0, left_grip = 0.0, right_grip = 0.0;
    Vector3 left_force = Vector3::Zero(), right_force = Vector3::Zero();
    for (std::size_t f = 0; f < fingers_.size(); ++f) {
      const rigid::RigidBody& finger = world.bodies[fingers_[f]];
      (f < 2 ? left_x : right_x) += 0.5 * finger.pose.position.x();
      tracking = std::max(tracking, (finger.pose.position - paths_[f].at(t)).norm());
      if (report.contact_wrench.empty()) continue;
      const Vector3& force = report.contact_wrench[fingers_[f]].force;
      (f < 2 ? left_force : right_force) += force;
      (f < 2 ? left_grip : right_grip) += 0.5 * std::abs(force.y());
    }
    recorder.AppendSeries("gripper_separation", t, {right_x - left_x});
    recorder.AppendSeries("finger_tracking_error", t, {tracking});
    recorder.AppendSeries(
        "finger_force", t,
        {left_force.x(), left_force.y(), left_force.z(), right_force.x(), right_force.y(), right_force.z()});
    recorder.AppendSeries("grip_force", t, {left_grip, right_grip});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("outer_iterations", t, {static_cast<double>(report.outer_iterations)});

    final_pieces_ = pieces;
    final_components_ = static_cast<int>(masses.size());
    final_largest_ = largest;
    final_second_ = second;
    final_strain_mean_ = strain_mean;
    final_strain_max_ = strain_max;
    if (t <= 0.0) return;  // the initial sample precedes every step
    max_tracking_ = std::max(max_tracking_, tracking);
    contacts_sum_ += static_cast<double>(report.contacts);
    iterations_sum_ += static_cast<double>(report.outer_iterations);
    max_contacts_ = std::max<std::int64_t>(max_contacts_, report.contacts);
    ++steps_;
  }

  std::vector<UsedParameter> UsedParameters() const override {
    if (!pd_fingers_) return {};
    // Largest: the x drive (finger and both carriers); smallest: the y drive (the finger).
    return {UsedParameter{"finger_pd_damping",
                          largest_finger_damping_,
                          finger_damping_,
                          "critical damping 2 sqrt(Kp m) of each drive, m = the mass it moves",
                          {}}};
  }

  void Summarize(RunRecorder& recorder) override {
    recorder.SetSummary("particles", particle_count_);
    recorder.SetSummary("dough_mass", dough_mass_);
    recorder.SetSummary("finger_drive", std::string(pd_fingers_ ? "pd" : "kinematic"));
    recorder.SetSummary("lift_rise", lift_rise_);
    recorder.SetSummary("separated", !std::isnan(separation_time_));
    recorder.SetSummary("separation_time", separation_time_);
    recorder.SetSummary("separation_after_pull_start", separation_time_ - pull_start_);
    recorder.SetSummary("final_pieces", static_cast<std::int64_t>(final_pieces_));
    recorder.SetSummary("final_components", static_cast<std::int64_t>(final_components_));
    recorder.SetSummary("final_largest_fraction", final_largest_);
    recorder.SetSummary("final_second_fraction", final_second_);
    recorder.SetSummary("final_plastic_strain_mean", final_strain_mean_);
    recorder.SetSummary("final_plastic_strain_max", final_strain_max_);
    recorder.SetSummary("max_finger_tracking_error", max_tracking_);
    recorder.SetSummary("contacts_mean", steps_ > 0 ? contacts_sum_ / steps_ : kNaN);
    recorder.SetSummary("contacts_max", max_contacts_);
    recorder.SetSummary("mean_outer_iterations", steps_ > 0 ? iterations_sum_ / steps_ : kNaN);
  }

  void VisitState(StateArchive& archive) override {
    archive("separation_time", separation_time_);
    archive("initial_height", initial_height_);
    archive("lift_rise", lift_rise_);
    archive("final_pieces", final_pieces_);
    archive("final_components", final_components_);
    archive("final_largest", final_largest_);
    archive("final_second", final_second_);
    archive("final_strain_mean", final_strain_mean_);
    archive("final_strain_max", final_strain_max_);
    archive("max_tracking", max_tracking_);
    archive("contacts_sum", contacts_sum_);
    archive("iterations_sum", iterations_sum_);
    archive("max_contacts", max_contacts_);
    archive("steps", steps_);
  }

 private:
  // A finger on three PD-driven prismatic joints in series (x, z, y) whose targets are the
  // path's coordinates; returns its body index.
  int AddPdFinger(const ParameterSet& parameters, World& world, const std::string& name,
                  const rigid::Geometry& geometry, double density, double finger_mass, const FingerPath& path) {
    const double stiffness = parameters.GetDouble("finger_pd_stiffness");
    const double carrier_mass = kCarrierMassFraction * finger_mass;
    const rigid::Matrix3 carrier_inertia = rigid::Matrix3::Identity() * carrier_mass * 1e-4;
    const std::optional<double> given_damping = parameters.GetOptionalDouble("finger_pd_damping");
    // The joint coordinates are offsets from the path's start; each drive's critical
    // damping uses the mass it moves (the finger and the carriers beyond it).
    const Vector3 start = path.at(0.0);
    const auto offset = [](const rigid::TimeFunction& f, double origin) {
      return rigid::TimeFunction{[=](double t) { return f.value(t) - origin; }, f.derivative, f.second_derivative};
    };
    const auto drive = [&](const std::string& joint_name, int parent, const Vector3& axis,
                           const rigid::TimeFunction& target, double moved_mass) {
      rigid::JointSpec joint;
      joint.name = joint_name;
      joint.type = rigid::JointType::kPrismatic;
      joint.parent = parent;
      joint.axis = axis;
      joint.pd.enabled = true;
      joint.pd.stiffness = stiffness;
      joint.pd.damping = given_damping ? *given_damping : 2.0 * std::sqrt(stiffness * moved_mass);
      joint.pd.target = target;
      return joint;
    };
    rigid::JointSpec slide_x =
        drive(name + "_x", -1, Vector3::UnitX(), offset(path.x, start.x()), finger_mass + 2.0 * carrier_mass);
    slide_x.frame_on_parent.position = start;
    largest_finger_damping_ = slide_x.pd.damping;
    const int x_link = world.multibody.AddLink(name + "_carrier_x", carrier_mass, carrier_inertia, slide_x);
    rigid::JointSpec slide_z =
        drive(name + "_z", x_link, Vector3::UnitZ(), offset(path.z, start.z()), finger_mass + carrier_mass);
    // The z drive also carries the weight of what it lifts (the arm's gravity compensation).
    slide_z.constant_effort = (finger_mass + carrier_mass) * parameters.GetDouble("gravity");
    const int z_link = world.multibody.AddLink(name + "_carrier_z", carrier_mass, carrier_inertia, slide_z);
    const rigid::JointSpec slide_y =
        drive(name + "_y", z_link, Vector3::UnitY(), offset(path.y, start.y()), finger_mass);
    finger_damping_ = slide_y.pd.damping;
    return AddArticulatedBody(world, name, {geometry}, density, slide_y);
  }

  bool pd_fingers_ = false;
  int table_ = -1;
  std::vector<int> fingers_;  // left front, left back, right front, right back
  std::vector<FingerPath> paths_;
  double particle_spacing_ = 0.0, dough_mass_ = 0.0, piece_min_fraction_ = 0.0, pull_start_ = 0.0;
  double finger_damping_ = 0.0, largest_finger_damping_ = 0.0;
  std::int64_t particle_count_ = 0;
  double separation_time_ = kNaN, initial_height_ = kNaN, lift_rise_ = kNaN;
  int final_pieces_ = 0, final_components_ = 0;
  double final_largest_ = kNaN, final_second_ = kNaN, final_strain_mean_ = kNaN, final_strain_max_ = kNaN;
  double max_tracking_ = 0.0, contacts_sum_ = 0.0, iterations_sum_ = 0.0;
  std::int64_t max_contacts_ = 0, steps_ = 0;
};

std::unique_ptr<Scenario> MakeDoughTearing() {
  return std::make_unique<DoughTearing>();
}

}  // namespace

ScenarioInfo DoughTearingInfo() {
  return ScenarioInfo{
      "dough_tearing",
      "two grippers close on an elastoplastic dough, lift it and pull it apart ([zong2024convex] §VII-B)",
      {
          {"dough_length", 0.18, "m", "Dough size along x, the pulling direction (spec E2 reduced).", Positive()},
          {"dough_width", 0.06, "m",
           "Dough size along y, across which the fingers close. Spec E2 proposes 0.10 m; there the grip's friction "
           "(each finger's squeeze is bounded by the dough yielding under it) stays below the force that yields the "
           "dough's cross-section, and the dough slides out of a gripper whole (README, dough_tearing).",
           Positive()},
          {"dough_thickness", 0.09, "m", "Dough thickness (spec E2 reduced).", Positive()},
          {"waist_width", 0.0, "m",
           "Width of a waist in the dough's middle (a dog-bone specimen, as in tensile tests); 0, the default, is the "
           "seed's plain slab. The fingers' press makes the section under them the slab's narrowest, where under "
           "refinement every formulation yields (README, dough_tearing); a waist narrower than dough_width - 2 "
           "press_depth moves the narrowest section between the grips.",
           NonNegative()},
          {"waist_length", 0.04, "m", "Length along x of the waist (waist_width > 0), centred between the grips.",
           Positive()},
          {"density", 1000.0, "kg/m^3", "Dough density ([zong2024convex] §VII-B).", Positive()},
          {"youngs_modulus", 1e5, "Pa", "Dough Young's modulus ([zong2024convex] §VII-B).", Positive()},
          {"poisson_ratio", 0.4, "1", "Dough Poisson's ratio ([zong2024convex] §VII-B).", InHalfOpenRange(0.0, 0.5)},
          {"yield_stress", 6e3, "Pa",
           "Von Mises yield stress eta of the dough ([zong2024convex] §VII-B); 0 is elastic.", NonNegative()},
          {"mu", 1.0, "1", "Friction coefficient between fingers and dough (spec E2).", NonNegative()},
          {"table_mu", 0.5, "1", "Friction coefficient between dough and table (spec E2).", NonNegative()},
          {"table_length", 0.6, "m", "Table size along x, beyond the pulled dough.", Positive()},
          {"table_width", 0.3, "m", "Table size along y.", Positive()},
          {"table_thickness", 0.05, "m", "Table thickness below its top face at z = 0.", Positive()},
          TableModelSpec(),
          {"finger_drive", std::string("kinematic"), "",
           "How the fingers move: kinematic (they follow their paths exactly, spec E2 variant K) or pd (free 0.2 kg "
           "bodies whose joint drives track the paths, variant PD).",
           OneOf({"kinematic", "pd"})},
          {"finger_length", 0.03, "m", "Finger box size along x (spec E2).", Positive()},
          {"finger_thickness", 0.02, "m", "Finger box size along y, the closing direction (spec E2).", Positive()},
          {"finger_height", 0.06, "m", "Finger box size along z (spec E2).", Positive()},
          {"finger_mass", 0.2, "kg", "Mass of each finger (finger_drive = pd; spec E2).", Positive()},
          {"finger_pd_stiffness", 2000.0, "N/m", "Stiffness Kp of each finger drive (finger_drive = pd; spec E2).",
           Positive()},
          AutoParameter("finger_pd_damping", 0.0, "N s/m",
                        "Damping Kd of each finger drive (finger_drive = pd). auto: critical, 2 sqrt(Kp m) with m the "
                        "mass the drive moves (spec E2).",
                        NonNegative()),
          {"grip_position", 0.07, "m",
           "Distance along x of each gripper's fingers from the dough's centre at the grasp.", Positive()},
          {"finger_clearance", 0.01, "m", "Height of the fingers' lower faces above the table while grasping.",
           Positive()},
          {"open_gap", 0.005, "m", "Gap between an open finger's inner face and the dough's side.", Positive()},
          {"press_depth", 0.01, "m", "How far each closed finger's inner face lies inside the dough's side (spec E2).",
           NonNegative()},
          {"close_time", 0.5, "s", "Duration of the closing (spec E2).", Positive()},
          {"lift_height", 0.05, "m", "Height the grippers lift the dough (spec E2).", NonNegative()},
          {"lift_time", 1.0, "s", "Duration of the lift (spec E2).", Positive()},
          {"pull_distance", 0.08, "m", "Distance each gripper moves outward along x (spec E2: ±0.08 m).",
           NonNegative()},
          {"pull_time", 1.5, "s", "Duration of the pull (spec E2).", Positive()},
          {"lower_time", 1.0, "s", "Duration of the lowering back to the grasp height (spec E2).", Positive()},
          {"open_time", 0.5, "s", "Duration of the opening (spec E2).", Positive()},
          {"piece_min_fraction", 0.1, "1",
           "Smallest mass fraction of the dough a connected component needs to count as a piece: stray particles and "
           "the one-particle-thick slivers a parting neck leaves (6% each at the defaults) do not.",
           InHalfOpenRange(0.0, 0.5)},
          GravitySpec(),
          GridSpacingSpec(0.02),
          ParticlesPerCellSpec(8.0),
          TimeStepSpec(0.01),
          DurationSpec(4.5),
      },
      &MakeDoughTearing,
      {"close_time=0.02", "duration=0.03"}};
}

}  // namespace contactlab::experiments
