#pragma once
// Particle sampling of a solid given by its signed distance (negative inside).
#include <cstdint>
#include <functional>
#include <vector>

#include <Eigen/Geometry>

#include "mpm/particles.h"

namespace contactlab::mpm {

struct SamplingOptions {
  double grid_spacing = 0.1;        // h [m]
  double particles_per_cell = 8.0;  // particles per grid cell (n³ for n per axis); real values allowed [-]
  double jitter = 0.0;              // random offset as a fraction of the lattice spacing, in [0, 0.5] [-]
  std::uint64_t seed = 0;           // random seed for the jitter
};

// Lattice spacing h / ∛(particles per cell) [m].
double ParticleSpacing(const SamplingOptions& options);

// The most lattice points SampleSolid visits (about 2.4 GB of candidate positions).
inline constexpr double kMaxLatticePoints = 1e8;

// Positions of a lattice of particle spacing s with points at s·(k + ½), kept where
// signed_distance < 0 inside `bounds`. With jitter > 0 each point moves by a seeded uniform
// offset in [−jitter·s, jitter·s]³ (and is kept only if still inside). Throws
// std::invalid_argument for non-finite bounds and std::length_error past kMaxLatticePoints.
std::vector<Vector3> SampleSolid(const std::function<double(const Vector3&)>& signed_distance,
                                 const Eigen::AlignedBox3d& bounds, const SamplingOptions& options);

// Appends particles at `positions` with volume s³ each, mass ρ s³, the given velocity and
// material. Returns the index of the first new particle.
int AddSampledParticles(const std::vector<Vector3>& positions, const SamplingOptions& options, double density,
                        const Vector3& velocity, int material, Particles& particles);

}  // namespace contactlab::mpm
