#pragma once
// The device explicit substep run serially on the host: the same packed arrays, dense grid
// box and per-thread steps (explicit_substep_steps.h, device_constitutive.h) as
// explicit_substep.cu, with plain sums in particle order instead of sorting and atomics.
// Tests compare it with the CPU transfers of mpm/transfers.h without a GPU, and
// quasi_newton.backend = emulated runs whole scenes through it.
#include <stdexcept>
#include <vector>

#include "formulations/quasi_newton/cuda/device_constitutive.h"
#include "formulations/quasi_newton/cuda/explicit_substep_backend.h"
#include "formulations/quasi_newton/cuda/explicit_substep_packing.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"

namespace contactlab::quasi_newton::gpu {

class EmulatedExplicitSubstep final : public ExplicitSubstepBackend {
 public:
  explicit EmulatedExplicitSubstep(double spacing) : spacing_(spacing) {}

  void Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials, int margin_cells) override {
    MaterialTables(materials, shear_modulus_, first_lame_parameter_, yield_stress_);
    const int n = static_cast<int>(particles.size());
    packed_.assign(44 * static_cast<std::size_t>(n), 0.0);
    material_.assign(n, 0);
    staged_.count = n;
    staged_.position = packed_.data();
    staged_.velocity = packed_.data() + 3 * n;
    staged_.affine_velocity = packed_.data() + 6 * n;
    staged_.deformation_gradient = packed_.data() + 15 * n;
    staged_.reference_rotation = packed_.data() + 24 * n;
    staged_.plastic_deformation_gradient = packed_.data() + 33 * n;
    staged_.mass = packed_.data() + 42 * n;
    staged_.initial_volume = packed_.data() + 43 * n;
    staged_.material = material_.data();
    PackParticles(particles, static_cast<int>(materials.size()), staged_);
    box_ = ComputeGridBox(particles, spacing_, margin_cells);
    const std::size_t nodes = static_cast<std::size_t>(box_.size[0]) * box_.size[1] * box_.size[2];
    mass_.assign(nodes, 0.0);
    momentum_.assign(3 * nodes, 0.0);
    velocity_.assign(3 * nodes, 0.0);
    left_box_ = false;
  }

  void ParticleToGrid(double dt, const mpm::Vector3& gravity) override {
    const ParticleView particles = View();
    const DenseGridView grid = Grid();
    const MaterialView materials = Materials();
    std::fill(mass_.begin(), mass_.end(), 0.0);
    std::fill(momentum_.begin(), momentum_.end(), 0.0);
    const std::size_t nodes = mass_.size();
    for (int p = 0; p < particles.count; ++p) {
      const ParticleScatter scatter = PrepareParticleScatter(particles, materials, p, spacing_, dt);
      if (!grid.ContainsStencil(scatter.stencil.base)) {
        left_box_ = true;
        continue;
      }
      for (int c = 0; c < 3; ++c) {
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) {
            double value[4];
            ParticleScatterValues(scatter, a, b, c, value);
            const int node = grid.Index(scatter.stencil.base, a, b, c);
            mass_[node] += value[0];
            for (int k = 0; k < 3; ++k) momentum_[k * nodes + node] += value[1 + k];
          }
        }
      }
    }
    const Vec3 g{gravity.x(), gravity.y(), gravity.z()};
    for (int i = 0; i < grid.node_count(); ++i) GridVelocityStep(grid, i, g, dt);
  }

  void DownloadMotion(mpm::Particles& particles) override { UnpackMotion(staged_, particles); }

  void DownloadGrid(const std::vector<mpm::Vector3>& positions, mpm::SparseGrid& grid) override {
    exchange_.ToSparse(box_, mass_, momentum_, velocity_, positions, grid);
  }

  void UploadGridVelocity(const mpm::SparseGrid& grid) override { exchange_.FromSparse(grid, velocity_); }

  void GridToParticle(double dt) override {
    const ParticleView particles = View();
    const DenseGridView grid = Grid();
    const MaterialView materials = Materials();
    for (int p = 0; p < particles.count; ++p) {
      if (!GridToParticleStep(particles, grid, p, dt)) {
        left_box_ = true;
        continue;
      }
      ConstitutiveUpdateStep(particles, materials, p);
    }
  }

  void Download(mpm::Particles& particles) override {
    if (left_box_) throw std::runtime_error("EmulatedExplicitSubstep: a particle left the grid box");
    UnpackParticles(staged_, particles);
  }

  // The grid of the last ParticleToGrid (velocities as last written): nodes with mass.
  CudaGridSnapshot Snapshot() const { return MakeGridSnapshot(box_, mass_, momentum_, velocity_); }

 private:
  ParticleView View() {
    return ParticleView{staged_.count,
                        staged_.position,
                        staged_.velocity,
                        staged_.affine_velocity,
                        staged_.deformation_gradient,
                        staged_.reference_rotation,
                        staged_.plastic_deformation_gradient,
                        staged_.mass,
                        staged_.initial_volume,
                        staged_.material};
  }
  MaterialView Materials() const {
    return MaterialView{shear_modulus_.data(), first_lame_parameter_.data(), yield_stress_.data()};
  }
  DenseGridView Grid() {
    DenseGridView grid;
    for (int axis = 0; axis < 3; ++axis) {
      grid.origin[axis] = box_.origin[axis];
      grid.size[axis] = box_.size[axis];
    }
    grid.spacing = spacing_;
    grid.mass = mass_.data();
    grid.momentum = momentum_.data();
    grid.velocity = velocity_.data();
    return grid;
  }

  double spacing_;
  std::vector<double> shear_modulus_, first_lame_parameter_, yield_stress_;
  std::vector<double> packed_;
  std::vector<int> material_;
  HostParticleBuffers staged_;
  GridBox box_;
  std::vector<double> mass_, momentum_, velocity_;
  DenseGridExchange exchange_;
  bool left_box_ = false;
};

// One whole substep (P2G with the stress impulse, grid velocity, G2P and the constitutive
// update) of δt on `particles`; returns the grid's nodes with mass.
inline CudaGridSnapshot EmulateExplicitSubstep(mpm::Particles& particles, const std::vector<mpm::Material>& materials,
                                               double spacing, double dt, const mpm::Vector3& gravity,
                                               int margin_cells = 4) {
  EmulatedExplicitSubstep substep(spacing);
  substep.Upload(particles, materials, margin_cells);
  substep.ParticleToGrid(dt, gravity);
  substep.GridToParticle(dt);
  substep.Download(particles);
  return substep.Snapshot();
}

}  // namespace contactlab::quasi_newton::gpu
