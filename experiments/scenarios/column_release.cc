#include "experiments/scenarios/column_release.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "formulations/contact/grid_boundary.h"

namespace contactlab::experiments {

using mpm::Vector3;

ParameterSpec WallModelSpec() {
  ParameterSpec spec = TableModelSpec();
  spec.key = "wall_model";
  spec.default_value = std::string("slip");
  spec.description =
      "How the back, end and side walls meet the material: slip grid walls (default: frictionless and "
      "impermeable, the smooth walls of a channel; the side walls must let the slab move along x and z), "
      "separating, sticky (holds the whole slab: its side walls are one or two cells away) or contact_body; "
      "formulations/contact/grid_boundary.h.";
  return spec;
}

ParameterSpec SlabCellsSpec() {
  return {"slab_cells", std::int64_t{2}, "1",
          "Thickness W of the quasi-2D slab between the side walls, in grid cells: 2 leaves one free node plane "
          "between the walls, enough for a flow that has no motion along y.",
          InClosedRange(1.0, 100.0)};
}

Channel AddChannel(const ParameterSet& parameters, double min_length, double wall_height, double floor_mu,
                   World& world) {
  const double h = world.grid_spacing;
  Channel channel;
  channel.length = std::ceil(min_length / h - 1e-9) * h;
  channel.width = static_cast<double>(parameters.GetInt("slab_cells")) * h;
  const double thickness = 3.0 * h;
  const double length = channel.length, width = channel.width;
  const auto add = [&](const char* name, const Vector3& half_size, const Vector3& center, double mu,
                       const std::string& model_key) {
    rigid::Pose pose;
    pose.position = center;
    world.bodies.push_back(
        rigid::MakeStaticBody(name, {rigid::Geometry{rigid::Shape::Box(half_size), rigid::Pose{}, mu}}, pose));
    world.bodies.back().grid_boundary = GetChoice(parameters, model_key, contact::GridBoundaryNames());
  };
  // The floor and the side walls overlap the back and end walls at the edges, so no grid node
  // sits on a wall's end face.
  const double reach_x = 0.5 * length + thickness, reach_y = 0.5 * width + thickness;
  add("floor", Vector3(reach_x, reach_y, 0.5 * thickness), Vector3(0.5 * length, 0.5 * width, -0.5 * thickness),
      floor_mu, "table_model");
  const Vector3 end_half(0.5 * thickness, reach_y, 0.5 * wall_height);
  add("wall_back", end_half, Vector3(-0.5 * thickness, 0.5 * width, 0.5 * wall_height), 0.0, "wall_model");
  add("wall_end", end_half, Vector3(length + 0.5 * thickness, 0.5 * width, 0.5 * wall_height), 0.0, "wall_model");
  const Vector3 side_half(reach_x, 0.5 * thickness, 0.5 * wall_height);
  add("wall_-y", side_half, Vector3(0.5 * length, -0.5 * thickness, 0.5 * wall_height), 0.0, "wall_model");
  add("wall_+y", side_half, Vector3(0.5 * length, width + 0.5 * thickness, 0.5 * wall_height), 0.0, "wall_model");
  return channel;
}

ParticleRange AddColumn(const ParameterSet& parameters, const Channel& channel, double width, double height,
                        const mpm::Material& material, int material_index, World& world, Vector3* spacing) {
  rigid::Pose pose;
  pose.position = Vector3(0.5 * width, 0.5 * channel.width, 0.5 * height);
  const BoxLattice lattice = SampleBoxLattice(pose, Vector3(width, channel.width, height), world.grid_spacing,
                                              parameters.GetDouble("particles_per_cell"));
  *spacing = lattice.spacing;
  return AddParticles(lattice.positions, lattice.spacing.prod(), material.density, Vector3::Zero(), material_index,
                      world.particles);
}

double ConnectedFront(const mpm::Particles& particles, ParticleRange range, double spacing, int gap_bins) {
  std::vector<char> occupied;
  for (int p = range.begin; p < range.end; ++p) {
    const int bin = std::max(0, static_cast<int>(std::floor(particles.position[p].x() / spacing)));
    if (bin >= static_cast<int>(occupied.size())) occupied.resize(bin + 1, 0);
    occupied[bin] = 1;
  }
  int last = -1, empty = 0;
  for (int bin = 0; bin < static_cast<int>(occupied.size()); ++bin) {
    if (occupied[bin]) {
      last = bin;
      empty = 0;
    } else if (++empty >= gap_bins && last >= 0) {
      break;
    }
  }
  return last < 0 ? std::numeric_limits<double>::quiet_NaN() : (last + 1) * spacing;
}

double FarthestParticle(const mpm::Particles& particles, ParticleRange range, double spacing) {
  double farthest = -std::numeric_limits<double>::infinity();
  for (int p = range.begin; p < range.end; ++p) farthest = std::max(farthest, particles.position[p].x());
  return farthest + 0.5 * spacing;
}

double Interpolate(const std::vector<double>& times, const std::vector<double>& values, double t) {
  const std::size_t n = std::min(times.size(), values.size());
  if (n == 0 || t < times.front() || t > times[n - 1]) return std::numeric_limits<double>::quiet_NaN();
  const auto upper = std::lower_bound(times.begin(), times.begin() + n, t);
  const std::size_t k = static_cast<std::size_t>(upper - times.begin());
  if (k == 0) return values[0];
  const double t0 = times[k - 1], t1 = times[k];
  const double w = t1 > t0 ? (t - t0) / (t1 - t0) : 1.0;
  return (1.0 - w) * values[k - 1] + w * values[k];
}

}  // namespace contactlab::experiments
