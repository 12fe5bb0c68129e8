#include "experiments/scenarios/ball_on_slope.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Matrix3;
using mpm::Vector3;

// Centre of mass, its velocity, and the angular velocity of the particle cloud about it,
// counting each particle's APIC affine field (spin m h²/4 axial(C − Cᵀ), inertia m h²/2).
struct BallMotion {
  Vector3 center = Vector3::Zero();
  Vector3 velocity = Vector3::Zero();
  Vector3 angular_velocity = Vector3::Zero();
};

BallMotion MeasureBall(const mpm::Particles& particles, double grid_spacing) {
  BallMotion motion;
  const double mass = mpm::TotalMass(particles);
  motion.center = mpm::CenterOfMass(particles);
  motion.velocity = mpm::LinearMomentum(particles) / mass;
  const double kernel_scale = 0.25 * grid_spacing * grid_spacing;
  Vector3 angular_momentum = Vector3::Zero();
  Matrix3 inertia = Matrix3::Zero();
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const Vector3 arm = particles.position[p] - motion.center;
    const Matrix3& c = particles.affine_velocity[p];
    const Vector3 affine_spin(c(2, 1) - c(1, 2), c(0, 2) - c(2, 0), c(1, 0) - c(0, 1));
    angular_momentum +=
        particles.mass[p] * (arm.cross(particles.velocity[p] - motion.velocity) + kernel_scale * affine_spin);
    inertia +=
        particles.mass[p] * ((arm.squaredNorm() + 2.0 * kernel_scale) * Matrix3::Identity() - arm * arm.transpose());
  }
  motion.angular_velocity = inertia.ldlt().solve(angular_momentum);
  return motion;
}

class BallOnSlope final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    radius_ = parameters.GetDouble("radius");
    slope_angle_ = parameters.GetDouble("slope_angle_deg") * std::numbers::pi / 180.0;
    friction_ = parameters.GetDouble("mu");
    gravity_ = parameters.GetDouble("gravity");
    duration_ = parameters.GetDouble("duration");

    // Slope frame: d̂ points down the slope, n̂ is the slope's outward normal; the slope's
    // top face passes through the world origin.
    downhill_ = Vector3(std::cos(slope_angle_), 0.0, -std::sin(slope_angle_));
    normal_ = Vector3(std::sin(slope_angle_), 0.0, std::cos(slope_angle_));
    rolling_axis_ = normal_.cross(downhill_);

    // A slope long enough for a frictionless ball over the whole run.
    const double travel = 0.5 * gravity_ * duration_ * duration_ * std::sin(slope_angle_);
    const double half_length = std::max(4.0, 0.5 * (travel + 4.0 * radius_) + 1.0);
    const double half_thickness = 0.25;
    rigid::Geometry slope_geometry{rigid::Shape::Box(rigid::Vector3(half_length, 1.0 + radius_, half_thickness)),
                                   rigid::Pose{}, friction_};
    rigid::Pose slope_pose;
    slope_pose.position = -half_thickness * normal_;
    slope_pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(slope_angle_, Vector3::UnitY()));
    world.bodies.push_back(rigid::MakeStaticBody("slope", {slope_geometry}, slope_pose));

    // The ball touches the slope near its upper end.
    const Vector3 center = (-half_length + 2.0 * radius_) * downhill_ + radius_ * normal_;
    const double density = parameters.GetDouble("density");
    world.materials.push_back(mpm::MakeMaterial("ball", parameters.GetString("constitutive_model"), density,
                                                parameters.GetDouble("youngs_modulus"),
                                                parameters.GetDouble("poisson_ratio")));
    mpm::SamplingOptions sampling;
    sampling.grid_spacing = parameters.GetDouble("grid_spacing");
    sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
    sampling.jitter = parameters.GetDouble("sampling_jitter");
    sampling.seed = parameters.GetIntAs<std::uint64_t>("sampling_seed");
    const double r = radius_;
    const auto positions = mpm::SampleSolid([&](const Vector3& x) { return (x - center).norm() - r; },
                                            Eigen::AlignedBox3d(center.array() - r, center.array() + r), sampling);
    if (positions.size() < 8) {
      throw InputError("keys 'radius', 'grid_spacing', 'particles_per_cell' give only " +
                       std::to_string(positions.size()) + " particles in the ball");
    }
    mpm::AddSampledParticles(positions, sampling, density, Vector3::Zero(), 0, world.particles);
    world.grid_spacing = sampling.grid_spacing;
    world.gravity = Vector3(0.0, 0.0, -gravity_);
    grid_spacing_ = sampling.grid_spacing;
    initial_center_ = mpm::CenterOfMass(world.particles);
    particle_count_ = static_cast<int>(world.particles.size());
    mass_ = mpm::TotalMass(world.particles);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("com_displacement", "m", "centre-of-mass displacement along the slope (down is +)");
    recorder.DeclareAnalytic("com_displacement", "m",
                             "rigid ball on a rigid slope, [zong2024convex] eq. 27 with sin(theta)");
    recorder.DeclareSeries("com_velocity", "m/s", "centre-of-mass velocity along the slope");
    recorder.DeclareAnalytic("com_velocity", "m/s", "rigid ball on a rigid slope");
    recorder.DeclareSeries("spin", "rad/s", "ball angular velocity about the rolling axis n x d");
    recorder.DeclareAnalytic("spin", "rad/s", "slip: 5 mu g cos(theta) t / (2 r); roll: v / r");
    recorder.DeclareSeries("normal_offset", "m", "centre-of-mass displacement along the slope normal");
    recorder.DeclareSeries("slope_contact_force", "N", "contact force the ball exerts on the slope (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("contacts", "1", "particles inside the slope geometry");
    recorder.DeclareSeries("max_penetration", "m", "deepest particle penetration into the slope");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const BallMotion motion = MeasureBall(world.particles, grid_spacing_);
    const double displacement = (motion.center - initial_center_).dot(downhill_);
    const double velocity = motion.velocity.dot(downhill_);
    const double spin = motion.angular_velocity.dot(rolling_axis_);
    const double analytic = BallOnSlopeDisplacement(t, friction_, slope_angle_, gravity_);
    recorder.AppendSeries("com_displacement", t, {displacement});
    recorder.AppendAnalytic("com_displacement", t, {analytic});
    recorder.AppendSeries("com_velocity", t, {velocity});
    const double analytic_velocity = 2.0 * BallOnSlopeDisplacement(1.0, friction_, slope_angle_, gravity_) * t;
    recorder.AppendAnalytic("com_velocity", t, {analytic_velocity});
    recorder.AppendSeries("spin", t, {spin});
    recorder.AppendAnalytic("spin", t, {BallOnSlopeSpin(t, friction_, slope_angle_, gravity_, radius_)});
    recorder.AppendSeries("normal_offset", t, {(motion.center - initial_center_).dot(normal_)});
    const Vector3 force = report.contact_wrench.empty() ? Vector3::Zero() : report.contact_wrench[0].force;
    recorder.AppendSeries("slope_contact_force", t, {force.x(), force.y(), force.z()});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("max_penetration", t, {report.max_penetration});

    // Error window t ∈ [0.2 s, duration] (issue: early times have tiny reference values).
    if (t >= 0.2 - 1e-9 && analytic > 0.0) {
      max_relative_error_ = std::max(max_relative_error_, std::abs(displacement - analytic) / analytic);
      max_velocity_error_ = std::max(max_velocity_error_, std::abs(velocity - analytic_velocity) / analytic_velocity);
      error_samples_++;
    }
    max_normal_offset_ = std::max(max_normal_offset_, std::abs((motion.center - initial_center_).dot(normal_)));
    last_spin_ratio_ = std::abs(velocity) > 0.0 ? spin * radius_ / velocity : 0.0;
  }

  void Summarize(RunRecorder& recorder) override {
    const bool rolls = BallOnSlopeRolls(friction_, slope_angle_);
    // error_vs_analytic is the scenario-independent name of the figure of merit (DESIGN.md).
    const double error = error_samples_ > 0 ? max_relative_error_ : std::numeric_limits<double>::quiet_NaN();
    recorder.SetSummary("max_rel_error", error);
    recorder.SetSummary("error_vs_analytic", error);
    // The same window for the velocity along the slope. A scheme that updates positions with
    // the new velocity (x⁺ = x + Δt v⁺) reproduces v = a t exactly under constant
    // acceleration but leads u = ½ a t² by ½ a Δt t, a relative error Δt/t (5% at t = 0.2 s
    // for Δt = 0.01 s) that says nothing about contact; the velocity error is free of it.
    recorder.SetSummary("max_rel_error_velocity",
                        error_samples_ > 0 ? max_velocity_error_ : std::numeric_limits<double>::quiet_NaN());
    recorder.SetSummary("regime", std::string(rolls ? "roll" : "slip"));
    recorder.SetSummary("final_spin_ratio", last_spin_ratio_);
    recorder.SetSummary("expected_spin_ratio", rolls
                                                   ? 1.0
                                                   : 2.5 * friction_ * std::cos(slope_angle_) /
                                                         (std::sin(slope_angle_) - friction_ * std::cos(slope_angle_)));
    recorder.SetSummary("max_normal_offset", max_normal_offset_);
    recorder.SetSummary("particles", std::int64_t{particle_count_});
    recorder.SetSummary("ball_mass", mass_);
  }

  void VisitState(StateArchive& archive) override {
    archive("max_relative_error", max_relative_error_);
    archive("max_velocity_error", max_velocity_error_);
    archive("max_normal_offset", max_normal_offset_);
    archive("last_spin_ratio", last_spin_ratio_);
    archive("error_samples", error_samples_);
  }

 private:
  double radius_ = 0.0, slope_angle_ = 0.0, friction_ = 0.0, gravity_ = 0.0, duration_ = 0.0;
  double grid_spacing_ = 0.0, mass_ = 0.0;
  int particle_count_ = 0;
  Vector3 downhill_, normal_, rolling_axis_, initial_center_;
  double max_relative_error_ = 0.0, max_velocity_error_ = 0.0, max_normal_offset_ = 0.0, last_spin_ratio_ = 0.0;
  int error_samples_ = 0;
};

std::unique_ptr<Scenario> MakeBallOnSlope() {
  return std::make_unique<BallOnSlope>();
}

}  // namespace

bool BallOnSlopeRolls(double friction_coefficient, double slope_angle_rad) {
  return friction_coefficient > 2.0 / 7.0 * std::tan(slope_angle_rad);
}

double BallOnSlopeDisplacement(double time_s, double friction_coefficient, double slope_angle_rad, double gravity) {
  const double t2 = time_s * time_s;
  if (BallOnSlopeRolls(friction_coefficient, slope_angle_rad)) {
    return 5.0 / 14.0 * gravity * t2 * std::sin(slope_angle_rad);
  }
  return 0.5 * gravity * t2 * (std::sin(slope_angle_rad) - friction_coefficient * std::cos(slope_angle_rad));
}

double BallOnSlopeSpin(double time_s, double friction_coefficient, double slope_angle_rad, double gravity,
                       double radius) {
  if (BallOnSlopeRolls(friction_coefficient, slope_angle_rad)) {
    return 5.0 / 7.0 * gravity * std::sin(slope_angle_rad) * time_s / radius;
  }
  return 2.5 * friction_coefficient * gravity * std::cos(slope_angle_rad) * time_s / radius;
}

ScenarioInfo BallOnSlopeInfo() {
  return ScenarioInfo{
      "ball_on_slope",
      "elastic MPM ball rolling or slipping down a rigid slope ([zong2024convex] Fig. 3)",
      {
          {"radius", 0.5, "m", "Ball radius ([zong2024convex] §VII-A).", Positive()},
          {"density", 1000.0, "kg/m^3", "Ball density.", Positive()},
          {"youngs_modulus", 1e8, "Pa", "Stiff enough that the ball moves like a rigid one.", Positive()},
          {"poisson_ratio", 0.2, "1", "Poisson's ratio of the ball.", InHalfOpenRange(0.0, 0.5)},
          {"constitutive_model", std::string("linear_corotated"), "",
           "Elastic model of the ball ([zong2024convex] uses linear corotated).",
           OneOf(mpm::ConstitutiveModelNames(mpm::MaterialKind::kSolid))},
          {"slope_angle_deg", 45.0, "deg", "Slope inclination theta.", InClosedRange(0.0, 80.0)},
          {"mu", 0.0, "1", "Friction coefficient between ball and slope; rolls when mu > 2/7 tan(theta).",
           NonNegative()},
          GravitySpec(),
          GridSpacingSpec(0.2),
          ParticlesPerCellSpec(103.55),
          SamplingJitterSpec(),
          SamplingSeedSpec(),
          TimeStepSpec(0.01),
          DurationSpec(1.0),
      },
      &MakeBallOnSlope,
      {"duration=0.05"}};
}

}  // namespace contactlab::experiments
