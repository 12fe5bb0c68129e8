#include "experiments/scenarios/scene_tools.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "formulations/contact/grid_boundary.h"
#include "mpm/sampling.h"

namespace contactlab::experiments {

using mpm::Matrix3;
using mpm::Vector3;

Incline AddIncline(World& world, double slope_angle_rad, double friction_coefficient) {
  Incline incline;
  rigid::Pose pose;
  pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(slope_angle_rad, Vector3::UnitY()));
  incline.downslope = pose.orientation * Vector3::UnitX();
  incline.normal = pose.orientation * Vector3::UnitZ();
  incline.rolling_axis = incline.normal.cross(incline.downslope);
  incline.body = static_cast<int>(world.bodies.size());
  world.bodies.push_back(rigid::MakeStaticBody(
      "incline", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction_coefficient}}, pose));
  return incline;
}

BoxLattice SampleBoxLattice(const rigid::Pose& pose, const Vector3& size, double grid_spacing,
                            double particles_per_cell) {
  const double target_spacing = grid_spacing / std::cbrt(particles_per_cell);
  // The count is checked before it becomes an int or an allocation (the same bound as
  // mpm::SampleSolid): a huge or non-finite size is refused, not overflowed.
  double points = 1.0;
  for (int axis = 0; axis < 3; ++axis) points *= std::max(1.0, std::round(size[axis] / target_spacing));
  if (!(points <= mpm::kMaxLatticePoints) || !size.allFinite()) {
    char message[200];
    std::snprintf(message, sizeof(message),
                  "SampleBoxLattice: a box of %.3g x %.3g x %.3g m at particle spacing %.3g m holds %.3g particles "
                  "(at most %.3g)",
                  size.x(), size.y(), size.z(), target_spacing, points, mpm::kMaxLatticePoints);
    throw std::length_error(message);
  }
  int count[3];
  BoxLattice lattice;
  for (int axis = 0; axis < 3; ++axis) {
    count[axis] = std::max(1, static_cast<int>(std::lround(size[axis] / target_spacing)));
    lattice.spacing[axis] = size[axis] / count[axis];
  }
  lattice.positions.reserve(static_cast<std::size_t>(count[0]) * count[1] * count[2]);
  for (int i = 0; i < count[0]; ++i) {
    for (int j = 0; j < count[1]; ++j) {
      for (int k = 0; k < count[2]; ++k) {
        const Vector3 local =
            Vector3((i + 0.5) * lattice.spacing.x(), (j + 0.5) * lattice.spacing.y(), (k + 0.5) * lattice.spacing.z()) -
            0.5 * size;
        lattice.positions.push_back(pose.TransformPoint(local));
      }
    }
  }
  return lattice;
}

ParticleRange AddParticles(const std::vector<Vector3>& positions, double particle_volume, double density,
                           const Vector3& velocity, int material, mpm::Particles& particles) {
  ParticleRange range;
  range.begin = static_cast<int>(particles.size());
  particles.Reserve(particles.size() + positions.size());
  for (const Vector3& position : positions) {
    particles.Add(position, velocity, density * particle_volume, particle_volume, material);
  }
  range.end = static_cast<int>(particles.size());
  return range;
}

void SetHydrostaticVolumeRatio(ParticleRange range, double density, double gravity, double surface_z,
                               double bulk_modulus, double exponent, mpm::Particles& particles) {
  for (int p = range.begin; p < range.end; ++p) {
    const double pressure = density * gravity * (surface_z - particles.position[p].z());
    const double volume_ratio = std::pow(1.0 + std::max(0.0, pressure) / bulk_modulus, -1.0 / exponent);
    particles.deformation_gradient[p] = std::cbrt(volume_ratio) * mpm::Matrix3::Identity();
  }
}

ParticleMotion MeasureParticles(const mpm::Particles& particles, ParticleRange range, double grid_spacing,
                                bool with_angular_velocity) {
  ParticleMotion motion;
  Vector3 weighted_position = Vector3::Zero(), momentum = Vector3::Zero();
  for (int p = range.begin; p < range.end; ++p) {
    motion.mass += particles.mass[p];
    weighted_position += particles.mass[p] * particles.position[p];
    momentum += particles.mass[p] * particles.velocity[p];
  }
  if (!(motion.mass > 0.0)) return motion;
  motion.center = weighted_position / motion.mass;
  motion.velocity = momentum / motion.mass;
  if (!with_angular_velocity) return motion;
  // Quadratic B-spline APIC: D_p = h²/4 I, so a particle's affine field carries the spin
  // m h²/4 · axial(C − Cᵀ) and adds m h²/2 to each diagonal inertia entry.
  const double kernel_scale = 0.25 * grid_spacing * grid_spacing;
  Vector3 angular_momentum = Vector3::Zero();
  Matrix3 inertia = Matrix3::Zero();
  for (int p = range.begin; p < range.end; ++p) {
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

ContactForceTotals SumContactForces(const StepReport& report, int body, const Vector3& normal) {
  ContactForceTotals totals;
  totals.max_cone_margin = std::numeric_limits<double>::quiet_NaN();
  Vector3 total = Vector3::Zero();
  for (const ContactForce& record : report.contact_forces) {
    if (record.body != body) continue;
    total += record.force;
    const double normal_part = record.force.dot(record.normal);
    const double tangential_part = (record.force - normal_part * record.normal).norm();
    const double margin = tangential_part - record.friction_coefficient * normal_part;
    totals.max_cone_margin = totals.records == 0 ? margin : std::max(totals.max_cone_margin, margin);
    ++totals.records;
  }
  if (totals.records == 0 && body >= 0 && body < static_cast<int>(report.contact_wrench.size())) {
    total = -report.contact_wrench[body].force;
  }
  totals.normal = total.dot(normal);
  totals.tangential = (total - totals.normal * normal).norm();
  return totals;
}

double LowestAlong(const std::vector<Vector3>& positions, const Vector3& origin, const Vector3& direction) {
  double lowest = std::numeric_limits<double>::infinity();
  for (const Vector3& x : positions) lowest = std::min(lowest, (x - origin).dot(direction));
  return lowest;
}

std::vector<ParameterSpec> ElasticMaterialSpecs(const std::string& prefix, double default_density,
                                                double default_youngs_modulus, const std::string& youngs_modulus_reason,
                                                const std::string& default_model, const std::string& model_reason) {
  return {
      {prefix + "density", default_density, "kg/m^3",
       "Density of the MPM material, and of the scene's rigid block if it has one ([P] gives none, spec A14).",
       Positive()},
      {prefix + "youngs_modulus", default_youngs_modulus, "Pa", youngs_modulus_reason, Positive()},
      {prefix + "poisson_ratio", 0.3, "1", "Poisson's ratio of MPM deformables in [P] (spec §4.1).",
       InHalfOpenRange(0.0, 0.5)},
      {prefix + "constitutive_model", default_model, "",
       model_reason.empty() ? "Elastic model of the MPM material; fixed corotated as in [P] and [T] (spec §1.9, §4.1)."
                            : model_reason,
       OneOf(mpm::ConstitutiveModelNames(mpm::MaterialKind::kSolid))},
  };
}

mpm::Material MakeElasticMaterial(const ParameterSet& parameters, const std::string& prefix, const std::string& name) {
  return mpm::MakeMaterial(name, parameters.GetString(prefix + "constitutive_model"),
                           parameters.GetDouble(prefix + "density"), parameters.GetDouble(prefix + "youngs_modulus"),
                           parameters.GetDouble(prefix + "poisson_ratio"));
}

std::vector<ParameterSpec> ClothMaterialSpecs(const ClothDefaults& defaults) {
  return {
      {"thickness", 0.001, "m", "Thickness t of the cloth (1 mm, spec-sap-qn 2.5).", Positive()},
      {"density", defaults.density, "kg/m^3", "Density of the cloth's material (" + defaults.source + ").", Positive()},
      {"youngs_modulus", defaults.youngs_modulus, "Pa", "In-plane Young's modulus (" + defaults.source + ").",
       Positive()},
      {"poisson_ratio", defaults.poisson_ratio, "1", "In-plane Poisson's ratio (" + defaults.source + ").",
       InClosedRange(0.0, 0.49)},
      {"normal_stiffness", defaults.normal_stiffness, "Pa",
       "Stiffness k of compression across the layer ([jiang2017cloth]; " + defaults.normal_stiffness_source + ").",
       Positive()},
      {"shear_stiffness", 0.0, "Pa", "Stiffness gamma of shear across the layer (0, spec-sap-qn 2.5).", NonNegative()},
      {"layer_friction", 0.0, "1", "Friction c_F between layers (0, spec-sap-qn 2.5).", NonNegative()},
  };
}

mpm::Material MakeClothMaterialFromKeys(const ParameterSet& parameters) {
  try {
    return mpm::MakeClothMaterial("cloth", parameters.GetDouble("density"), parameters.GetDouble("youngs_modulus"),
                                  parameters.GetDouble("poisson_ratio"), parameters.GetDouble("normal_stiffness"),
                                  parameters.GetDouble("shear_stiffness"), parameters.GetDouble("layer_friction"));
  } catch (const std::invalid_argument& error) {
    throw InputError(std::string("keys 'density', 'youngs_modulus', 'poisson_ratio', 'normal_stiffness', "
                                 "'shear_stiffness', 'layer_friction': ") +
                     error.what());
  }
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (const double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

double ReadSettleTime(const ParameterSet& parameters) {
  const double settle_time = parameters.GetDouble("settle_time");
  if (settle_time >= parameters.GetDouble("duration")) {
    throw InputError("key 'settle_time' must be shorter than 'duration' (no samples would be taken)");
  }
  return settle_time;
}

mpm::Material MakeSandMaterial(const ParameterSet& parameters, double friction_angle_degrees) {
  try {
    return mpm::MakeGranularMaterial("sand", parameters.GetDouble("density"), parameters.GetDouble("youngs_modulus"),
                                     parameters.GetDouble("poisson_ratio"), friction_angle_degrees,
                                     parameters.GetDouble("cohesion"));
  } catch (const std::invalid_argument& error) {
    throw InputError(std::string("keys 'friction_angle', 'cohesion', 'youngs_modulus', 'poisson_ratio': ") +
                     error.what());
  }
}

double FitSlope(const std::vector<double>& times, const std::vector<double>& values) {
  const std::size_t n = std::min(times.size(), values.size());
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean_t = 0.0, mean_y = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    mean_t += times[i];
    mean_y += values[i];
  }
  mean_t /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double covariance = 0.0, variance = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    covariance += (times[i] - mean_t) * (values[i] - mean_y);
    variance += (times[i] - mean_t) * (times[i] - mean_t);
  }
  return variance > 0.0 ? covariance / variance : std::numeric_limits<double>::quiet_NaN();
}

ParameterSpec TableModelSpec() {
  return {"table_model", std::string("contact_body"), "",
          "How the static support meets the MPM material: contact_body (particles register contacts against it, "
          "every formulation's own way) or a boundary condition on the grid nodes inside it: sticky (v = 0), slip "
          "(normal velocity 0, frictionless) or separating (no approach, Coulomb friction with the support's mu); "
          "formulations/contact/grid_boundary.h.",
          OneOf(ChoiceNames(contact::GridBoundaryNames()))};
}

void ApplyTableModel(const ParameterSet& parameters, rigid::RigidBody& body) {
  body.grid_boundary = GetChoice(parameters, "table_model", contact::GridBoundaryNames());
}

void AddSquareContainer(const ParameterSet& parameters, const std::string& width_key, double width, double thickness,
                        double wall_height, double mu, World& world) {
  const double half = 0.5 * width;
  const double cells = half / world.grid_spacing;
  if (GetChoice(parameters, "table_model", contact::GridBoundaryNames()) != rigid::GridBoundary::kContactBody &&
      std::abs(cells - std::round(cells)) > 1e-9 * cells) {
    throw InputError("keys '" + width_key +
                     "', 'grid_spacing': with grid walls (table_model) the container's faces must lie on grid node "
                     "planes, so " +
                     width_key + " / 2 must be a multiple of grid_spacing");
  }
  const auto add_wall = [&](const char* name, const mpm::Vector3& half_size, const mpm::Vector3& center) {
    rigid::Pose pose;
    pose.position = center;
    world.bodies.push_back(
        rigid::MakeStaticBody(name, {rigid::Geometry{rigid::Shape::Box(half_size), rigid::Pose{}, mu}}, pose));
    ApplyTableModel(parameters, world.bodies.back());
  };
  add_wall("floor", mpm::Vector3(half + thickness, half + thickness, 0.5 * thickness),
           mpm::Vector3(0.0, 0.0, -0.5 * thickness));
  const mpm::Vector3 side_x(0.5 * thickness, half + thickness, 0.5 * wall_height);
  const mpm::Vector3 side_y(half + thickness, 0.5 * thickness, 0.5 * wall_height);
  add_wall("wall_-x", side_x, mpm::Vector3(-half - 0.5 * thickness, 0.0, 0.5 * wall_height));
  add_wall("wall_+x", side_x, mpm::Vector3(half + 0.5 * thickness, 0.0, 0.5 * wall_height));
  add_wall("wall_-y", side_y, mpm::Vector3(0.0, -half - 0.5 * thickness, 0.5 * wall_height));
  add_wall("wall_+y", side_y, mpm::Vector3(0.0, half + 0.5 * thickness, 0.5 * wall_height));
}

namespace {

// 10u³ − 15u⁴ + 6u⁵ on [0, 1] (0 before, 1 after) and its first two derivatives in u.
struct Quintic {
  double value, first, second;
};
Quintic EvaluateQuintic(double u) {
  if (u <= 0.0) return {0.0, 0.0, 0.0};
  if (u >= 1.0) return {1.0, 0.0, 0.0};
  const double u2 = u * u;
  return {u2 * u * (10.0 + u * (-15.0 + 6.0 * u)), 30.0 * u2 * (1.0 - u) * (1.0 - u),
          60.0 * u * (1.0 - u) * (1.0 - 2.0 * u)};
}

}  // namespace

rigid::TimeFunction KeyframeTrajectory(std::vector<Keyframe> keys) {
  const auto at = [keys](double t) -> Quintic {
    if (t <= keys.front().time) return {keys.front().value, 0.0, 0.0};
    if (t >= keys.back().time) return {keys.back().value, 0.0, 0.0};
    std::size_t k = 0;
    while (keys[k + 1].time <= t) ++k;  // keys[k].time ≤ t < keys[k + 1].time
    const double span = keys[k + 1].time - keys[k].time;
    const double change = keys[k + 1].value - keys[k].value;
    const Quintic shape = EvaluateQuintic((t - keys[k].time) / span);
    return {keys[k].value + change * shape.value, change * shape.first / span, change * shape.second / (span * span)};
  };
  return rigid::TimeFunction{[=](double t) { return at(t).value; }, [=](double t) { return at(t).first; },
                             [=](double t) { return at(t).second; }};
}

}  // namespace contactlab::experiments
