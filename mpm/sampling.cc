#include "mpm/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace contactlab::mpm {

double ParticleSpacing(const SamplingOptions& options) {
  return options.grid_spacing / std::cbrt(options.particles_per_cell);
}

std::vector<Vector3> SampleSolid(const std::function<double(const Vector3&)>& signed_distance,
                                 const Eigen::AlignedBox3d& bounds, const SamplingOptions& options) {
  const double spacing = ParticleSpacing(options);
  std::mt19937_64 generator(options.seed);
  std::uniform_real_distribution<double> offset(-options.jitter * spacing, options.jitter * spacing);

  // Lattice indices whose points s(k + ½) fall inside the bounds, per axis. Bounds that are
  // not finite, or hold more lattice points than a run could store, are refused before any
  // allocation (and before the indices overflow an int).
  if (!(spacing > 0.0) || !std::isfinite(spacing) || !bounds.min().allFinite() || !bounds.max().allFinite()) {
    throw std::invalid_argument("SampleSolid: the sampled region or the particle spacing is not finite");
  }
  double lattice_points = 1.0;
  for (int axis = 0; axis < 3; ++axis) {
    lattice_points *= std::max(0.0, std::floor((bounds.max()[axis] - bounds.min()[axis]) / spacing) + 1.0);
  }
  if (lattice_points > kMaxLatticePoints) {
    char message[160];
    std::snprintf(message, sizeof(message),
                  "SampleSolid: the sampled region holds %.3g lattice points at particle spacing %.3g m (at most %.3g)",
                  lattice_points, spacing, kMaxLatticePoints);
    throw std::length_error(message);
  }
  Eigen::Vector3i first, last;
  for (int axis = 0; axis < 3; ++axis) {
    first[axis] = static_cast<int>(std::ceil(bounds.min()[axis] / spacing - 0.5));
    last[axis] = static_cast<int>(std::floor(bounds.max()[axis] / spacing - 0.5));
  }
  std::vector<Vector3> positions;
  for (int k = first.z(); k <= last.z(); ++k) {
    for (int j = first.y(); j <= last.y(); ++j) {
      for (int i = first.x(); i <= last.x(); ++i) {
        Vector3 point = spacing * Vector3(i + 0.5, j + 0.5, k + 0.5);
        // Draw the offset for every lattice point so a point's jitter does not depend on
        // whether its neighbours were kept.
        if (options.jitter > 0.0) point += Vector3(offset(generator), offset(generator), offset(generator));
        if (signed_distance(point) < 0.0) positions.push_back(point);
      }
    }
  }
  return positions;
}

int AddSampledParticles(const std::vector<Vector3>& positions, const SamplingOptions& options, double density,
                        const Vector3& velocity, int material, Particles& particles) {
  const int first = static_cast<int>(particles.size());
  const double spacing = ParticleSpacing(options);
  const double volume = spacing * spacing * spacing;
  particles.Reserve(particles.size() + positions.size());
  for (const Vector3& position : positions) {
    particles.Add(position, velocity, density * volume, volume, material);
  }
  return first;
}

}  // namespace contactlab::mpm
