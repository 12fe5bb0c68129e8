#include "experiments/scenarios/sphere_into_sand.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "formulations/contact/grid_boundary.h"

namespace contactlab::experiments {

double UeharaPenetration(double diameter, double sphere_density, double bulk_density, double repose_tangent,
                         double drop_height) {
  const double c = 0.14 / repose_tangent * std::sqrt(sphere_density / bulk_density) * std::cbrt(diameter * diameter);
  // g(d) = c (h + d)^{1/3} is increasing and concave. Its positive fixed point lies at or
  // above c^{3/2}, the root for h = 0 (where d = 0 is a second, spurious fixed point), and
  // g(c^{3/2}) ≥ c^{3/2}, so iterating g from there climbs monotonically to it; near it the
  // error shrinks each time by g'(d) = d / (3 (h + d)) ≤ 1/3, so 100 iterations are far more
  // than double precision needs.
  double depth = c * std::sqrt(c);
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double next = c * std::cbrt(drop_height + depth);
    if (std::abs(next - depth) <= 1e-15 * next) return next;
    depth = next;
  }
  return depth;
}

namespace {

using mpm::Vector3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDegree = 3.14159265358979323846 / 180.0;

class SphereIntoSand final : public Scenario {
 public:
  void Build(const ParameterSet& parameters, World& world) override {
    const double width = parameters.GetDouble("bed_width");
    const double depth = parameters.GetDouble("bed_depth");
    const double density = parameters.GetDouble("density");
    const double youngs_modulus = parameters.GetDouble("youngs_modulus");
    const double gravity = parameters.GetDouble("gravity");
    const double friction_angle = parameters.GetDouble("friction_angle");
    const double sphere_density = parameters.GetDouble("sphere_density");
    diameter_ = parameters.GetDouble("sphere_diameter");
    drop_height_ = parameters.GetDouble("drop_height");
    rest_speed_ = parameters.GetDouble("rest_speed");
    world.gravity = Vector3(0.0, 0.0, -gravity);
    world.grid_spacing = parameters.GetDouble("grid_spacing");
    const double gap = world.grid_spacing;

    if (!(diameter_ + 2.0 * world.grid_spacing <= width)) {
      throw InputError(
          "keys 'sphere_diameter', 'bed_width', 'grid_spacing': the sphere needs a gap of at least one grid cell to "
          "each wall");
    }
    if (!(drop_height_ > gap)) {
      throw InputError(
          "keys 'drop_height', 'grid_spacing': the sphere starts one grid cell above the sand, so drop_height must "
          "exceed grid_spacing");
    }

    world.materials.push_back(MakeSandMaterial(parameters, friction_angle));

    // The container: floor top at z = 0, walls two cells above the bed (the sphere displaces
    // a few millimetres of sand into a rim, far below that).
    AddSquareContainer(parameters, "bed_width", width, std::max(0.05, 2.0 * world.grid_spacing),
                       depth + 2.0 * world.grid_spacing, parameters.GetDouble("wall_mu"), world);

    // The bed: the lattice of the container's inside up to bed_depth. It starts stress-free
    // (F = I); gravity then compresses it elastically by about ρ g H_b²/(2E) = 0.14 mm (H_b the bed
    // depth) at the
    // defaults (0.10 mm with the constrained modulus E(1 − ν)/((1 + ν)(1 − 2ν)) of a laterally
    // confined bed), negligible against the penetration. Switched on at once, it rings: without
    // the sphere, quasi_newton's surface swings between 0 and 0.13 mm at about 55 Hz (the
    // quarter-wave mode of the bed), mean 0.07 mm (sticky walls carry part of the weight),
    // so the sphere, arriving after 7 ms, meets a surface within 0.13 mm of its initial level.
    // The lateral stress of the confinement, ν/(1 − ν) = 0.43 of the vertical one, stays inside
    // the cone of φ = 30° (whose active limit is (1 − sin φ)/(1 + sin φ) = 0.33): no yield.
    rigid::Pose pose;
    pose.position = Vector3(0.0, 0.0, 0.5 * depth);
    const BoxLattice lattice = SampleBoxLattice(pose, Vector3(width, width, depth), world.grid_spacing,
                                                parameters.GetDouble("particles_per_cell"));
    spacing_ = lattice.spacing.z();
    if (static_cast<int>(std::lround(depth / spacing_)) < 3) {
      throw InputError("keys 'bed_depth', 'grid_spacing', 'particles_per_cell' give fewer than 3 particle layers");
    }
    sand_ = AddParticles(lattice.positions, lattice.spacing.prod(), density, Vector3::Zero(), 0, world.particles);
    // The sand's surface: the top face of the lattice, half a spacing above its top layer.
    double top = -std::numeric_limits<double>::infinity();
    for (const Vector3& x : lattice.positions) top = std::max(top, x.z());
    surface_ = top + 0.5 * spacing_;
    elastic_settlement_ = density * gravity * depth * depth / (2.0 * youngs_modulus);

    // The sphere: its bottom one grid cell above the surface, moving down at the speed of a
    // fall from drop_height. Particle contact begins only where the sphere reaches the top
    // particles' centres, s/2 below the surface, so the particle-based formulations see a free
    // fall to the surface; hybrid_impulse's two grids, whose quadratic kernels reach 1.5 cells
    // from the sphere's surface samples and from the particles, share nodes already at this
    // gap and start braking the sphere at once (its impact_speed falls short of sqrt(2 g h)).
    rigid::Pose sphere_pose;
    sphere_pose.position = Vector3(0.0, 0.0, surface_ + gap + 0.5 * diameter_);
    rigid::RigidBody sphere = rigid::MakeFreeBody(
        "sphere",
        {rigid::Geometry{rigid::Shape::Sphere(0.5 * diameter_), rigid::Pose{}, parameters.GetDouble("sphere_mu")}},
        sphere_density, sphere_pose);
    start_speed_ = std::sqrt(2.0 * gravity * (drop_height_ - gap));
    sphere.linear_velocity = Vector3(0.0, 0.0, -start_speed_);
    sphere_ = static_cast<int>(world.bodies.size());
    world.bodies.push_back(sphere);

    analytic_impact_speed_ = std::sqrt(2.0 * gravity * drop_height_);
    analytic_penetration_ =
        UeharaPenetration(diameter_, sphere_density, density, std::tan(friction_angle * kDegree), drop_height_);
  }

  void DeclareObservables(RunRecorder& recorder) override {
    recorder.DeclareSeries("penetration", "m", "surface level at t = 0 minus the sphere's lowest point");
    recorder.DeclareAnalytic("penetration", "m",
                             "final penetration of Uehara et al. (2003): (0.14/tan phi) (rho_b/rho_g)^(1/2) D^(2/3) "
                             "(h + d)^(1/3)");
    recorder.DeclareSeries("sphere_height", "m", "height of the sphere's centre");
    recorder.DeclareSeries("sphere_velocity", "m/s", "velocity of the sphere's centre (world)", {"x", "y", "z"});
    recorder.DeclareSeries("sphere_contact_force", "N", "contact force the sand exerts on the sphere (world)",
                           {"x", "y", "z"});
    recorder.DeclareSeries("sand_kinetic_energy", "J", "kinetic energy of the sand");
    recorder.DeclareSeries("contacts", "1", "contact points reported by the formulation");
    recorder.DeclareSeries("grid_boundary_nodes", "1", "grid nodes the container held as grid walls");
  }

  void Observe(const World& world, const StepReport& report, RunRecorder& recorder) override {
    const double t = world.time;
    const rigid::RigidBody& sphere = world.bodies[sphere_];
    const double height = sphere.pose.position.z();
    const double penetration = surface_ - (height - 0.5 * diameter_);
    const Vector3& velocity = sphere.linear_velocity;
    const double speed = velocity.norm();
    const Vector3 force = sphere_ < static_cast<int>(report.contact_wrench.size())
                              ? report.contact_wrench[sphere_].force
                              : Vector3::Zero();
    double kinetic = 0.0;
    for (int p = sand_.begin; p < sand_.end; ++p) {
      kinetic += 0.5 * world.particles.mass[p] * world.particles.velocity[p].squaredNorm();
    }
    recorder.AppendSeries("penetration", t, {penetration});
    recorder.AppendAnalytic("penetration", t, {analytic_penetration_});
    recorder.AppendSeries("sphere_height", t, {height});
    recorder.AppendSeries("sphere_velocity", t, {velocity.x(), velocity.y(), velocity.z()});
    recorder.AppendSeries("sphere_contact_force", t, {force.x(), force.y(), force.z()});
    recorder.AppendSeries("sand_kinetic_energy", t, {kinetic});
    recorder.AppendSeries("contacts", t, {static_cast<double>(report.contacts)});
    recorder.AppendSeries("grid_boundary_nodes", t, {static_cast<double>(report.grid_boundary_nodes)});

    // The impact speed: the speed where the sphere's bottom crosses the surface level,
    // interpolated linearly in the penetration between the samples on either side.
    if (std::isnan(impact_speed_) && penetration >= 0.0 && samples_ > 0) {
      const double fraction = last_penetration_ < 0.0 ? -last_penetration_ / (penetration - last_penetration_) : 0.0;
      impact_speed_ = last_speed_ + fraction * (speed - last_speed_);
    }
    // rest_time: the sample after the last one at or above rest_speed.
    if (speed >= rest_speed_) {
      rest_time_ = kNaN;
    } else if (std::isnan(rest_time_)) {
      rest_time_ = t;
    }
    max_penetration_ = std::max(max_penetration_, penetration);
    final_penetration_ = penetration;
    final_speed_ = speed;
    last_penetration_ = penetration;
    last_speed_ = speed;
    ++samples_;
  }

  void Summarize(RunRecorder& recorder) override {
    const double error = (final_penetration_ - analytic_penetration_) / analytic_penetration_;
    recorder.SetSummary("penetration", final_penetration_);
    recorder.SetSummary("analytic_penetration", analytic_penetration_);
    recorder.SetSummary("penetration_error", error);
    recorder.SetSummary("error_vs_analytic", std::abs(error));
    recorder.SetSummary("max_penetration", max_penetration_);
    // Particle contact holds the sphere against the particles' centres, which lie half a
    // particle spacing below the material's face: the measured penetration carries up to this
    // much of that offset (2.5 mm at the defaults).
    recorder.SetSummary("particle_contact_offset", 0.5 * spacing_);
    recorder.SetSummary("rest_time", rest_time_);
    recorder.SetSummary("rest_speed", rest_speed_);
    recorder.SetSummary("final_sphere_speed", final_speed_);
    recorder.SetSummary("impact_speed", impact_speed_);
    recorder.SetSummary("analytic_impact_speed", analytic_impact_speed_);
    recorder.SetSummary("start_speed", start_speed_);
    recorder.SetSummary("drop_height", drop_height_);
    recorder.SetSummary("surface_level", surface_);
    recorder.SetSummary("analytic_elastic_settlement", elastic_settlement_);
    recorder.SetSummary("particles", std::int64_t{sand_.size()});
  }

  void VisitState(StateArchive& archive) override {
    archive("samples", samples_);
    archive("last_penetration", last_penetration_);
    archive("last_speed", last_speed_);
    archive("impact_speed", impact_speed_);
    archive("rest_time", rest_time_);
    archive("max_penetration", max_penetration_);
    archive("final_penetration", final_penetration_);
    archive("final_speed", final_speed_);
  }

 private:
  ParticleRange sand_;
  int sphere_ = -1;
  int samples_ = 0;
  double diameter_ = 0.0, drop_height_ = 0.0, rest_speed_ = 0.0, spacing_ = 0.0, surface_ = 0.0;
  double start_speed_ = 0.0, analytic_impact_speed_ = 0.0, analytic_penetration_ = 0.0, elastic_settlement_ = 0.0;
  double last_penetration_ = kNaN, last_speed_ = kNaN, impact_speed_ = kNaN, rest_time_ = kNaN;
  double max_penetration_ = -std::numeric_limits<double>::infinity();
  double final_penetration_ = kNaN, final_speed_ = kNaN;
};

std::unique_ptr<Scenario> MakeSphereIntoSand() {
  return std::make_unique<SphereIntoSand>();
}

// A shared spec with this scene's reason for its default appended.
ParameterSpec WithReason(ParameterSpec spec, const std::string& reason) {
  spec.description += " " + reason;
  return spec;
}

}  // namespace

ScenarioInfo SphereIntoSandInfo() {
  ParameterSpec walls = TableModelSpec();
  walls.default_value = std::string("sticky");
  walls.description =
      "How the container meets the sand: sticky grid walls (default: v = 0 on the nodes inside them, a rough box as "
      "in sand_pile), slip or separating grid walls, or contact_body (particles register contacts, friction "
      "wall_mu); formulations/contact/grid_boundary.h.";
  return ScenarioInfo{
      "sphere_into_sand",
      "heavy rigid sphere dropped into a Drucker-Prager sand bed: final penetration against the impact law of "
      "Uehara et al. 2003 ([ding_schroeder_penalty] Fig. 14, sandbox_sph, without the robot)",
      {
          {"bed_width", 0.18, "m",
           "Inner width of the square container the sand fills: three sphere diameters, a reduced sandbox whose "
           "walls still confine the flow (slip walls let the sphere sink a third deeper at grid_spacing 0.02); with "
           "grid walls, twice a multiple of grid_spacing.",
           Positive()},
          {"bed_depth", 0.08, "m",
           "Depth of the sand bed: about twice Uehara's penetration at the defaults (43 mm), so that the floor "
           "stays below the sphere.",
           Positive()},
          {"density", 1600.0, "kg/m^3", "Bulk density rho_g of the sand (dry sand, 1,500-1,700).", Positive()},
          {"youngs_modulus", 3.537e5, "Pa",
           "Young's modulus of the sand's Hencky elasticity: 100 times below [ding_schroeder_penalty]'s 35.37e6 Pa "
           "(spec-penalty-hybrid 1.8), which would need 10 times the explicit substeps; unlike sand_pile's slope the "
           "penetration depends on it: a stiffer bed stops the sphere sooner (quasi_newton at grid_spacing 0.02: "
           "17.7 mm at this value, 10.7 mm at 10 times it).",
           Positive()},
          {"poisson_ratio", 0.3, "1", "Poisson's ratio of the sand ([ding_schroeder_penalty]).",
           InHalfOpenRange(-0.99, 0.5)},
          {"friction_angle", 30.0, "deg",
           "Friction angle phi of the Drucker-Prager cone (as sand_pile); tan(phi) stands for Uehara's mu_r, the "
           "tangent of the repose angle, since a cohesionless Drucker-Prager pile rests at phi.",
           InHalfOpenRange(1.0, 89.0)},
          {"cohesion", 0.0, "Pa", "Cohesion c of the Drucker-Prager cone: 0 for the dry sand of Uehara's law.",
           NonNegative()},
          {"sphere_diameter", 0.06, "m",
           "Diameter D of the sphere: six grid cells at the default spacing, a third of the bed's width.", Positive()},
          {"sphere_density", 7800.0, "kg/m^3",
           "Density rho_b of the sphere: steel, the heavy sphere of [ding_schroeder_penalty] (4.9 times the sand's "
           "density).",
           Positive()},
          {"sphere_mu", 0.9, "1",
           "Friction coefficient between the sphere and the sand ([ding_schroeder_penalty] Table 1, sandbox_sph).",
           NonNegative()},
          {"drop_height", 0.1, "m",
           "Free-fall height h from the sphere's bottom to the sand's surface (impact speed sqrt(2 g h) = 1.4 m/s); "
           "the sphere starts one grid cell above the surface at the speed of the remaining fall, so it must exceed "
           "grid_spacing.",
           Positive()},
          {"rest_speed", 0.01, "m/s",
           "Speed below which the sphere counts as at rest (summary rest_time): 0.7% of the default impact speed.",
           Positive()},
          {"wall_mu", 0.6, "1", "Friction coefficient of the container under table_model = contact_body.",
           NonNegative()},
          walls,
          GravitySpec(),
          WithReason(GridSpacingSpec(0.01),
                     "Six cells across the sphere and eight through the bed; the penetration still grows with "
                     "refinement (quasi_newton: 17.7 mm at 0.02 m with bed_width 0.2, 21.7 mm at 0.01 m, 26.1 mm "
                     "at 0.005 m)."),
          WithReason(ParticlesPerCellSpec(8.0), "Eight, as sand_pile: particle spacing h/2 = 5 mm."),
          WithReason(TimeStepSpec(0.001),
                     "1 ms as [ding_schroeder_penalty]: at the impact speed of 1.4 m/s the sphere moves 1.4 mm, under "
                     "a third of a "
                     "particle spacing, per step, and its deceleration spans about 30 steps."),
          WithReason(DurationSpec(0.25),
                     "The sphere stops within about 40 ms; the rest lets the bed's ringing under it decay (under "
                     "quasi_newton it is still at a few cm/s after 0.25 s, see rest_time)."),
      },
      &MakeSphereIntoSand,
      // 576 particles; from 0.5 m the sphere arrives at 3 m/s and the particle-based
      // formulations hold it from step 13 or 14 of 20 (hybrid_impulse's grids from step 1).
      {"grid_spacing=0.03", "bed_width=0.18", "bed_depth=0.06", "drop_height=0.5", "duration=0.02"}};
}

}  // namespace contactlab::experiments
