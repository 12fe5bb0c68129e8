// Host half of CudaExplicitSubstep: validation, packing and unpacking of mpm::Particles, the
// grid box; the device half is explicit_substep.cu.
#include "formulations/quasi_newton/cuda/cuda_explicit_substep.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "formulations/quasi_newton/cuda/explicit_substep_device.h"
#include "formulations/quasi_newton/cuda/explicit_substep_packing.h"

namespace contactlab::quasi_newton {

struct CudaExplicitSubstep::Device {
  gpu::DeviceExplicitSubstep substep;
  gpu::GridBox box;
  int particle_count = -1;
  // The box grid of the last DownloadGrid(positions, grid) and its map to the sparse grid.
  std::vector<double> grid_mass, grid_momentum, grid_velocity;
  gpu::DenseGridExchange exchange;
};

CudaExplicitSubstep::CudaExplicitSubstep(double grid_spacing, CudaExplicitSubstepSettings settings)
    : grid_spacing_(grid_spacing), settings_(settings), device_(std::make_unique<Device>()) {
  if (!(grid_spacing > 0.0)) throw std::invalid_argument("CudaExplicitSubstep: grid spacing must be > 0");
  if (settings.margin_cells < 0) throw std::invalid_argument("CudaExplicitSubstep: margin_cells must be >= 0");
}

CudaExplicitSubstep::~CudaExplicitSubstep() = default;

void CudaExplicitSubstep::Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials) {
  Upload(particles, materials, settings_.margin_cells);
}

void CudaExplicitSubstep::Upload(const mpm::Particles& particles, const std::vector<mpm::Material>& materials,
                                 int margin_cells) {
  if (margin_cells < 0) throw std::invalid_argument("CudaExplicitSubstep: margin_cells must be >= 0");
  std::vector<double> shear_modulus, first_lame_parameter, yield_stress;
  gpu::MaterialTables(materials, shear_modulus, first_lame_parameter, yield_stress);
  const int count = static_cast<int>(particles.size());
  if (count == 0) throw std::invalid_argument("CudaExplicitSubstep: no particles");
  gpu::HostParticleBuffers& staged = device_->substep.Stage(count);
  gpu::PackParticles(particles, static_cast<int>(materials.size()), staged);
  device_->box = gpu::ComputeGridBox(particles, grid_spacing_, margin_cells);
  device_->substep.Upload(device_->box, shear_modulus, first_lame_parameter, yield_stress, settings_.sort_key_bits);
  device_->particle_count = count;
}

void CudaExplicitSubstep::Substep(double dt, const mpm::Vector3& gravity) {
  ParticleToGrid(dt, gravity);
  GridToParticle(dt);
}

void CudaExplicitSubstep::ParticleToGrid(double dt, const mpm::Vector3& gravity) {
  if (device_->particle_count < 0) throw std::logic_error("CudaExplicitSubstep::ParticleToGrid before Upload");
  device_->substep.ParticleToGrid(dt, {gravity.x(), gravity.y(), gravity.z()}, settings_.warp_aggregation);
}

void CudaExplicitSubstep::Synchronize() {
  device_->substep.Synchronize();
}

void CudaExplicitSubstep::GridToParticle(double dt) {
  if (device_->particle_count < 0) throw std::logic_error("CudaExplicitSubstep::GridToParticle before Upload");
  device_->substep.GridToParticle(dt);
}

void CudaExplicitSubstep::DownloadMotion(mpm::Particles& particles) {
  if (static_cast<int>(particles.size()) != device_->particle_count) {
    throw std::invalid_argument("CudaExplicitSubstep::DownloadMotion: " + std::to_string(particles.size()) +
                                " particles, " + std::to_string(device_->particle_count) + " uploaded");
  }
  if (!device_->substep.DownloadMotion()) {
    throw std::runtime_error("CudaExplicitSubstep: a particle left the device grid box; upload with a larger margin");
  }
  gpu::UnpackMotion(device_->substep.staged(), particles);
}

void CudaExplicitSubstep::DownloadGrid(const std::vector<mpm::Vector3>& positions, mpm::SparseGrid& grid) {
  if (device_->particle_count < 0) throw std::logic_error("CudaExplicitSubstep::DownloadGrid before Upload");
  Device& device = *device_;
  device.substep.DownloadGrid(device.grid_mass, device.grid_momentum, device.grid_velocity);
  device.exchange.ToSparse(device.box, device.grid_mass, device.grid_momentum, device.grid_velocity, positions, grid);
}

void CudaExplicitSubstep::UploadGridVelocity(const mpm::SparseGrid& grid) {
  device_->exchange.FromSparse(grid, device_->grid_velocity);
  device_->substep.UploadGridVelocity(device_->grid_velocity);
}

void CudaExplicitSubstep::Download(mpm::Particles& particles) {
  if (device_->particle_count < 0) throw std::logic_error("CudaExplicitSubstep::Download before Upload");
  if (static_cast<int>(particles.size()) != device_->particle_count) {
    throw std::invalid_argument("CudaExplicitSubstep::Download: " + std::to_string(particles.size()) + " particles, " +
                                std::to_string(device_->particle_count) + " uploaded");
  }
  if (!device_->substep.Download()) {
    throw std::runtime_error("CudaExplicitSubstep: a particle left the device grid box; upload with a larger margin");
  }
  // The staged buffers now hold the device state in the caller's order.
  gpu::UnpackParticles(device_->substep.staged(), particles);
}

CudaGridSnapshot CudaExplicitSubstep::DownloadGrid() {
  if (device_->particle_count < 0) throw std::logic_error("CudaExplicitSubstep::DownloadGrid before Upload");
  std::vector<double> mass, momentum, velocity;
  device_->substep.DownloadGrid(mass, momentum, velocity);
  return gpu::MakeGridSnapshot(device_->box, mass, momentum, velocity);
}

}  // namespace contactlab::quasi_newton
