#include "experiments/scenarios/rolling_sphere.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "experiments/scenarios/scene_tools.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class RollingSphere final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    slope_angle_ = parameters.GetDouble("slope_angle_deg") * std::numbers::pi / 180.0;
    friction_ = parameters.GetDouble("mu");
    gravity_ = parameters.GetDouble("gravity");
    radius_ = parameters.GetDouble("radius");
    duration_ = parameters.GetDouble("duration");
    settle_time_ = ReadSettleTime(parameters);
    const double density = parameters.GetDouble("density");
    incline_ = AddIncline(world, slope_angle_, friction_);
    world.gravity = Vector3(0.0, 0.0, -gravity_);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    grid_spacing_ = world.grid_spacing;

    if (parameters.GetString("body") == "rigid") {
      rigid::Pose pose;
      pose.position = radius_ * incline_.normal;  // touching the incline at the origin
      rigid::RigidBody ball = rigid::MakeFreeBody(
          "ball", {rigid::Geometry{rigid::Shape::Sphere(radius_), rigid::Pose{}, friction_}}, density, pose);
      ball_body_ = static_cast<int>(world.bodies.size());
      world.bodies.push_back(ball);
      mass_ = ball.mass;
    } else {
      world.materials.push_back(MakeElasticMaterial(parameters, "", "ball"));
      mpm::SamplingOptions sampling;
      sampling.grid_spacing = world.grid_spacing;
      sampling.particles_per_cell = parameters.GetDouble("particles_per_cell");
      sampling.jitter = parameters.GetDouble("sampling_jitter");
      sampling.seed = parameters.GetIntAs<std::uint64_t>("sampling_seed");
      const double r = radius_;
      std::vector<Vector3> positions =
          mpm::SampleSolid([r](const Vector3& x) { return x.norm() - r; },
                           Eigen::AlignedBox3d(Vector3::Constant(-r), Vector3::Constant(r)), sampling);
      if (positions.size() < 8) {
        throw InputError("keys 'radius', 'grid_spacing', 'particles_per_cell' give only " +
                         std::to_string(positions.size()) + " particles in the ball");
      }
      // The lowest particle on the incline (scene_tools.h).
      const Vector3 shift = -LowestAlong(positions, Vector3::Zero(), incline_.normal) * incline_.normal;
      for (Vector3& x : positions) x += shift;
      const int first = mpm::AddSampledParticles(positions, sampling, density, Vector3::Zero(), 0, world.particles);
      particles_ = ParticleRange{first, static_cast<int>(world.particles.size())};
      mass_ = mpm::TotalMass(world.particles);
    }
    initial_center_ = Measure(world).center;
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("com_speed", "m/s", "centre-of-mass velocity along the slope (down is +)");
    recorder.DeclareAnalytic("com_speed", "m/s",
                             "a t: rolling 5/7 g sin(theta), slipping g (sin(theta) - mu cos(theta))");
    recorder.DeclareSeries("com_displacement", "m", "centre-of-mass displacement along the slope (down is +)");
    recorder.DeclareAnalytic("com_displacement", "m", "a t^2 / 2");
    recorder.DeclareSeries("spin", "rad/s", "angular velocity about the rolling axis n x s");
    recorder.DeclareAnalytic("spin", "rad/s", "rolling a t / R; slipping 5 mu g cos(theta) t / (2 R)");
    recorder.DeclareSeries("slip_speed", "m/s", "v - omega R at the contact (R the nominal radius)");
    recorder.DeclareAnalytic("slip_speed", "m/s", "rolling 0; slipping g (sin(theta) - 7/2 mu cos(theta)) t");
    recorder.DeclareSeries("normal_offset", "m", "centre-of-mass displacement along the incline normal");
    recorder.DeclareSeries("normal_force", "N", "total normal contact force F_n on the ball");
    recorder.DeclareAnalytic("normal_force", "N", "m g cos(theta)");
    recorder.DeclareSeries("tangential_force", "N", "total tangential contact force F_t on the ball");
    recorder.DeclareAnalytic("tangential_force", "N", "rolling 2/7 m g sin(theta); slipping mu m g cos(theta)");
    recorder.DeclareSeries("cone_margin", "N",
                           "largest per-contact |f_t| - mu f_n (NaN when the formulation gives no per-contact forces)");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const ParticleMotion motion = Measure(world);
    const double speed = motion.velocity.dot(incline_.downslope);
    const double spin = motion.angular_velocity.dot(incline_.rolling_axis);
    const double slip = speed - spin * radius_;
    const double a = RollingSphereAcceleration(friction_, slope_angle_, gravity_);
    recorder.AppendSeries("com_speed", t, {speed});
    recorder.AppendAnalytic("com_speed", t, {a * t});
    recorder.AppendSeries("com_displacement", t, {(motion.center - initial_center_).dot(incline_.downslope)});
    recorder.AppendAnalytic("com_displacement", t, {0.5 * a * t * t});
    recorder.AppendSeries("spin", t, {spin});
    recorder.AppendAnalytic("spin", t, {RollingSphereSpin(t, friction_, slope_angle_, gravity_, radius_)});
    recorder.AppendSeries("slip_speed", t, {slip});
    recorder.AppendAnalytic("slip_speed", t, {RollingSphereSlipSpeed(t, friction_, slope_angle_, gravity_)});
    recorder.AppendSeries("normal_offset", t, {(motion.center - initial_center_).dot(incline_.normal)});
    const ContactForceTotals forces = SumContactForces(report, incline_.body, incline_.normal);
    const double normal = mass_ * gravity_ * std::cos(slope_angle_);
    recorder.AppendSeries("normal_force", t, {forces.normal});
    recorder.AppendAnalytic("normal_force", t, {normal});
    recorder.AppendSeries("tangential_force", t, {forces.tangential});
    recorder.AppendAnalytic(
        "tangential_force", t,
        {RollingSphereRolls(friction_, slope_angle_) ? 2.0 / 7.0 * mass_ * gravity_ * std::sin(slope_angle_)
                                                     : friction_ * normal});
    recorder.AppendSeries("cone_margin", t, {forces.max_cone_margin});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});

    if (std::isfinite(forces.max_cone_margin)) {
      max_cone_margin_ =
          std::isnan(max_cone_margin_) ? forces.max_cone_margin : std::max(max_cone_margin_, forces.max_cone_margin);
    }
    if (t >= settle_time_ - 1e-12) {
      fit_times_.push_back(t);
      fit_speeds_.push_back(speed);
      fit_spins_.push_back(spin);
      speed_errors_.push_back(std::abs(speed - a * t));
    }
    final_time_ = t;
    final_slip_ = slip;
    final_spin_ratio_ = std::abs(speed) > 0.0 ? spin * radius_ / speed : kNaN;
  }

  void Summarize(RunRecorder& recorder) override {
    const bool rolls = RollingSphereRolls(friction_, slope_angle_);
    const double a = RollingSphereAcceleration(friction_, slope_angle_, gravity_);
    recorder.SetSummary("rolls_expected", rolls);
    recorder.SetSummary("regime", std::string(rolls ? "roll" : "slip"));
    recorder.SetSummary("acceleration", FitSlope(fit_times_, fit_speeds_));
    recorder.SetSummary("analytic_acceleration", a);
    recorder.SetSummary("spin_acceleration", FitSlope(fit_times_, fit_spins_));
    recorder.SetSummary("analytic_spin_acceleration",
                        RollingSphereSpin(1.0, friction_, slope_angle_, gravity_, radius_));
    // Speed error over t ≥ settle_time, relative to the analytic speed at the end of the
    // run (early speeds are small, so a pointwise relative error would blow up there).
    const double final_speed = a * final_time_;
    double error = kNaN;
    if (!speed_errors_.empty() && final_speed > 0.0) {
      error = *std::max_element(speed_errors_.begin(), speed_errors_.end()) / final_speed;
    }
    recorder.SetSummary("max_rel_error", error);
    recorder.SetSummary("error_vs_analytic", error);
    recorder.SetSummary("final_slip_speed", final_slip_);
    recorder.SetSummary("analytic_final_slip_speed",
                        RollingSphereSlipSpeed(final_time_, friction_, slope_angle_, gravity_));
    recorder.SetSummary("final_spin_ratio", final_spin_ratio_);
    recorder.SetSummary("max_cone_margin", max_cone_margin_);
    recorder.SetSummary("rolling_threshold_mu", 2.0 / 7.0 * std::tan(slope_angle_));
    recorder.SetSummary("ball_mass", mass_);
    recorder.SetSummary("particles", std::int64_t{particles_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("fit_times", fit_times_);
    archive("fit_speeds", fit_speeds_);
    archive("fit_spins", fit_spins_);
    archive("speed_errors", speed_errors_);
    archive("final_time", final_time_);
    archive("final_slip", final_slip_);
    archive("final_spin_ratio", final_spin_ratio_);
    archive("max_cone_margin", max_cone_margin_);
  }

 private:
  ParticleMotion Measure(const World& world) const {
    if (ball_body_ < 0) return MeasureParticles(world.particles, particles_, grid_spacing_, true);
    const rigid::RigidBody& ball = world.bodies[ball_body_];
    ParticleMotion motion;
    motion.mass = ball.mass;
    motion.center = ball.pose.position;
    motion.velocity = ball.linear_velocity;
    motion.angular_velocity = ball.angular_velocity;
    return motion;
  }

  double slope_angle_ = 0.0, friction_ = 0.0, gravity_ = 0.0, radius_ = 0.0, duration_ = 0.0, settle_time_ = 0.0;
  double grid_spacing_ = 0.0, mass_ = 0.0;
  Incline incline_;
  int ball_body_ = -1;
  ParticleRange particles_;
  Vector3 initial_center_ = Vector3::Zero();
  std::vector<double> fit_times_, fit_speeds_, fit_spins_, speed_errors_;
  double final_time_ = 0.0, final_slip_ = 0.0, final_spin_ratio_ = kNaN, max_cone_margin_ = kNaN;
};

std::unique_ptr<Scenario> MakeRollingSphere() {
  return std::make_unique<RollingSphere>();
}

}  // namespace

bool RollingSphereRolls(double friction_coefficient, double slope_angle_rad) {
  return friction_coefficient >= 2.0 / 7.0 * std::tan(slope_angle_rad);
}

double RollingSphereAcceleration(double friction_coefficient, double slope_angle_rad, double gravity) {
  if (RollingSphereRolls(friction_coefficient, slope_angle_rad)) return 5.0 / 7.0 * gravity * std::sin(slope_angle_rad);
  return gravity * (std::sin(slope_angle_rad) - friction_coefficient * std::cos(slope_angle_rad));
}

double RollingSphereSpin(double time_s, double friction_coefficient, double slope_angle_rad, double gravity,
                         double radius) {
  if (RollingSphereRolls(friction_coefficient, slope_angle_rad)) {
    return RollingSphereAcceleration(friction_coefficient, slope_angle_rad, gravity) * time_s / radius;
  }
  return 2.5 * friction_coefficient * gravity * std::cos(slope_angle_rad) * time_s / radius;
}

double RollingSphereSlipSpeed(double time_s, double friction_coefficient, double slope_angle_rad, double gravity) {
  if (RollingSphereRolls(friction_coefficient, slope_angle_rad)) return 0.0;
  return gravity * (std::sin(slope_angle_rad) - 3.5 * friction_coefficient * std::cos(slope_angle_rad)) * time_s;
}

ScenarioInfo RollingSphereInfo() {
  ScenarioInfo info{
      "rolling_sphere",
      "solid sphere released on a static incline: rolls by friction or slips ([ding_schroeder_penalty] Fig. 4)",
      {
          {"slope_angle_deg", 6.0, "deg", "Incline angle theta, the same 6 deg as incline_block (spec 4.4, A14).",
           InHalfOpenRange(0.0, 80.0)},
          {"mu", 0.3, "1",
           "Friction coefficient of the incline; [P] uses 0.3 (rolls) and 0.01 (slips), threshold 2/7 tan(theta).",
           NonNegative()},
          {"body", std::string("rigid"), "",
           "Sphere model: rigid (plane_sph: rigid-rigid contact with the incline) or mpm.", OneOf({"rigid", "mpm"})},
          {"radius", 0.05, "m", "Sphere radius ([P] gives none; half the 0.1 m block of spec A14).", Positive()},
          GravitySpec(),
          GridSpacingSpec(0.01),
          ParticlesPerCellSpec(8.0),
          {"sampling_jitter", 0.5, "1",
           "Random particle offset as a fraction of the lattice spacing; 0.5 removes the flat lattice facet an MPM "
           "ball would otherwise stand on (as in ball_on_slope).",
           InClosedRange(0.0, 0.5)},
          SamplingSeedSpec(),
          TimeStepSpec(0.005),
          DurationSpec(1.0),
          {"settle_time", 0.05, "s",
           "Start of the fit and error window: skips the first contact transient of the stress-free ball.",
           NonNegative()},
      },
      &MakeRollingSphere,
      {"settle_time=0.005", "duration=0.025"}};
  const std::vector<ParameterSpec> material = ElasticMaterialSpecs(
      "", 1000.0, 1e6,
      "Young's modulus of the MPM ball: 1e6 Pa keeps the self-weight strain rho g R / E at 5e-4 so that it rolls "
      "like a rigid ball (the 1e3 Pa of [P]'s MPM bodies, spec 4.1, would flatten it).");
  info.parameters.insert(info.parameters.end(), material.begin(), material.end());
  return info;
}

}  // namespace contactlab::experiments
