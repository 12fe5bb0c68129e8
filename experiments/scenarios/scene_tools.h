#pragma once
// Building blocks shared by the incline, rolling-sphere, pyramid and wedge scenes
// (spec-penalty-hybrid §4.4, §4.7): a centred particle lattice for MPM boxes, the motion of a
// group of particles, the parameter specs of an elastic MPM material, and the contact-force
// diagnostics of [P] Fig. 13 (total normal and tangential force, per-contact cone margin).
//
// Placement convention of these scenes: particle-based contact sees the particles, not the
// material's outer face half a particle spacing further out, so a body that starts "in
// resting contact" has its outermost particle layer on the touched surface (φ = 0). A
// lowest layer half a spacing above the surface would first fall that far: 4.5 mm at the
// default incline resolution, an impact speed of 0.3 m/s against the 0.1 m/s of the test.
#include <string>
#include <vector>

#include "formulations/formulation.h"
#include "formulations/parameters.h"
#include "mpm/material.h"
#include "rigid/pose.h"

namespace contactlab::experiments {

// A static incline: a half-space through the world origin rotated by θ about +y, so that
// its outward normal is n̂ = (sin θ, 0, cos θ) and the downslope direction ŝ = (cos θ, 0, −sin θ).
struct Incline {
  int body = -1;                                      // index in world.bodies
  mpm::Vector3 downslope = mpm::Vector3::UnitX();     // ŝ
  mpm::Vector3 normal = mpm::Vector3::UnitZ();        // n̂
  mpm::Vector3 rolling_axis = mpm::Vector3::UnitY();  // n̂ × ŝ, the axis a ball rolls about
};
Incline AddIncline(World& world, double slope_angle_rad, double friction_coefficient);

// Particles [begin, end) of one MPM body in world.particles.
struct ParticleRange {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
};

// Lattice of a box of edge lengths `size` [m] centred at the origin of `pose`: along each
// axis n = max(1, round(size / s)) particles at spacing size / n (s = h / ∛ppc), placed at
// the centres of the n equal slabs, so the box's mass is exactly ρ · volume. Returns the
// positions in world and the lattice spacing per axis (in the box frame).
struct BoxLattice {
  std::vector<mpm::Vector3> positions;
  mpm::Vector3 spacing = mpm::Vector3::Zero();
};
BoxLattice SampleBoxLattice(const rigid::Pose& pose, const mpm::Vector3& size, double grid_spacing,
                            double particles_per_cell);

// Appends particles at `positions`, each with volume `particle_volume` [m³] and mass
// ρ · volume, moving at `velocity`; returns their range.
ParticleRange AddParticles(const std::vector<mpm::Vector3>& positions, double particle_volume, double density,
                           const mpm::Vector3& velocity, int material, mpm::Particles& particles);

// The hydrostatic state of an equation-of-state liquid at rest under gravity g [m/s²] with
// its free surface at height `surface_z` [m]: a particle at depth d = surface_z − z carries
// p = ρ g d, whose volume ratio under p = κ (J^−γ − 1) is J = (1 + p/κ)^(−1/γ), and gets
// F = J^(1/3) I. Particles above the surface get F = I.
void SetHydrostaticVolumeRatio(ParticleRange range, double density, double gravity, double surface_z,
                               double bulk_modulus, double exponent, mpm::Particles& particles);

// Mass, centre of mass, velocity of the centre of mass and angular velocity about it of a
// particle group. The angular velocity is L / I about the centre of mass, each particle
// carrying its APIC affine field (spin m h²/4 · axial(C − Cᵀ), inertia m h²/2 · I) as in
// ball_on_slope, so that a rolling MPM ball's spin is not under-counted on coarse grids.
struct ParticleMotion {
  double mass = 0.0;
  mpm::Vector3 center = mpm::Vector3::Zero();
  mpm::Vector3 velocity = mpm::Vector3::Zero();
  mpm::Vector3 angular_velocity = mpm::Vector3::Zero();
};
ParticleMotion MeasureParticles(const mpm::Particles& particles, ParticleRange range, double grid_spacing,
                                bool with_angular_velocity);

// Contact-force diagnostics against one rigid body whose contact normal is `normal`
// (spec-penalty-hybrid §4.4): total normal force F_n = Σ f·n, total tangential force
// F_t = ‖Σ (f − (f·n) n)‖ and the largest per-contact cone margin ‖f_t‖ − μ f_n, from the
// report's per-contact records against that body (f = what the geometry exerts on the
// touching particle or point). Without records (grid-based formulations), the totals come
// from −contact_wrench[body].force, the opposite of what the body received, and the cone
// margin is NaN.
struct ContactForceTotals {
  double normal = 0.0;      // F_n [N]
  double tangential = 0.0;  // F_t [N]
  double max_cone_margin;   // [N], NaN without per-contact records
  int records = 0;          // per-contact records against the body
};
ContactForceTotals SumContactForces(const StepReport& report, int body, const mpm::Vector3& normal);

// The smallest value of (x_p − origin)·direction over `positions` [m].
double LowestAlong(const std::vector<mpm::Vector3>& positions, const mpm::Vector3& origin,
                   const mpm::Vector3& direction);

// density, youngs_modulus, poisson_ratio, constitutive_model for an elastic MPM body, with
// the given defaults and a one-sentence reason for the Young's modulus; a scene that needs
// another constitutive model by default names it and says why in `model_reason`.
std::vector<ParameterSpec> ElasticMaterialSpecs(const std::string& prefix, double default_density,
                                                double default_youngs_modulus, const std::string& youngs_modulus_reason,
                                                const std::string& default_model = "fixed_corotated",
                                                const std::string& model_reason = "");
// The material those keys describe.
mpm::Material MakeElasticMaterial(const ParameterSet& parameters, const std::string& prefix, const std::string& name);

// The Drucker–Prager sand ("sand") of the scene keys density, youngs_modulus, poisson_ratio and
// cohesion, with the cone's friction angle [deg] (the key friction_angle or an angle derived
// from it); InputError naming the keys when the model rejects them.
mpm::Material MakeSandMaterial(const ParameterSet& parameters, double friction_angle_degrees);

// The cloth's keys (mpm/cloth_particles.h): thickness, density, youngs_modulus, poisson_ratio,
// normal_stiffness, shear_stiffness (0) and layer_friction (0), with the given defaults and
// where each comes from (`source`, e.g. "[yu2025async]'s T-shirt").
struct ClothDefaults {
  double density, youngs_modulus, poisson_ratio, normal_stiffness;
  std::string source;                   // of density, E and ν
  std::string normal_stiffness_source;  // of k
};
std::vector<ParameterSpec> ClothMaterialSpecs(const ClothDefaults& defaults);
// The cloth material ("cloth") those keys describe; InputError naming the keys when the model
// rejects them.
mpm::Material MakeClothMaterialFromKeys(const ParameterSet& parameters);

// Least-squares slope of y(t) [unit of y per s]; NaN with fewer than two distinct times.
double FitSlope(const std::vector<double>& times, const std::vector<double>& values);

// Arithmetic mean; NaN for no values.
double Mean(const std::vector<double>& values);

// The scene's settle_time [s], from which its averages and fits take samples; InputError
// naming both keys unless it lies before the scene's duration.
double ReadSettleTime(const ParameterSet& parameters);

// A prescribed coordinate at one time: value [m or rad] at time [s].
struct Keyframe {
  double time, value;
};
// A coordinate that moves from keyframe to keyframe along the quintic smooth step
// 10u³ − 15u⁴ + 6u⁵ of the normalized time u in each span, and holds its first (last) value
// before (after) them. Position, velocity and acceleration stay continuous across keyframes
// (a prescribed joint's acceleration enters the tree's bias forces) and velocity and
// acceleration vanish at each keyframe. Keyframe times must not decrease.
rigid::TimeFunction KeyframeTrajectory(std::vector<Keyframe> keys);

// The scene key "table_model": how a scene's static support meets the MPM material, as a
// contact body ("contact_body", the default) or as a grid boundary ("sticky", "slip",
// "separating"; formulations/contact/grid_boundary.h).
ParameterSpec TableModelSpec();
// Sets body.grid_boundary from "table_model".
void ApplyTableModel(const ParameterSet& parameters, rigid::RigidBody& body);

// An open square container as five static bodies (floor, walls -x, +x, -y, +y), each taking
// "table_model": a floor with its top face at z = 0 and walls whose inner faces bound
// [−W/2, W/2]², `wall_height` high, all `thickness` thick, with friction `mu`. The y-walls
// overlap the x-walls at the edges, so no grid node sits on a wall's end face. As grid walls
// they act on the nodes inside them, so their faces must lie on node planes: InputError
// naming `width_key` and grid_spacing unless W/2 is a multiple of the grid spacing.
void AddSquareContainer(const ParameterSet& parameters, const std::string& width_key, double width, double thickness,
                        double wall_height, double mu, World& world);

}  // namespace contactlab::experiments
