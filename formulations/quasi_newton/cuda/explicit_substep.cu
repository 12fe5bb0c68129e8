// Device half of CudaExplicitSubstep: an explicit MLS-MPM substep on the GPU ([yu2025async] §V-A;
// spec-sap-qn §1.2.4 steps 3.2–3.3 and 3.7, GPU strategies of §6), per-thread work in
// explicit_substep_steps.h.
//
//   Upload   particles to the device; one key per particle (its base node's index in the
//            dense grid box), cub::DeviceRadixSort on the low key bits, particle arrays
//            gathered into cell order. Done once per step: every substep reuses the order,
//            which drifts as particles move (more atomics, still correct; [yu2025async] §V-A).
//   Substep  clear the grid; P2G one thread per particle (APIC + MLS stress impulse of
//            linear corotated elasticity about the lagged R0), warp-segmented sums before
//            the atomics; grid velocity with gravity, one thread per node; G2P one thread
//            per particle with the F update, advection and the constitutive update
//            (device_constitutive.h: R0, von Mises plasticity). The two halves also run
//            apart (ParticleToGrid, GridToParticle) so that the host can solve the contact
//            problem on the grid in between (quasi_newton.backend = cuda).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "formulations/quasi_newton/cuda/device_constitutive.h"
#include "formulations/quasi_newton/cuda/explicit_substep_device.h"
#include "formulations/quasi_newton/cuda/explicit_substep_steps.h"
#include "formulations/quasi_newton/cuda/warp_segmented_sum.cuh"

namespace contactlab::quasi_newton::gpu {
namespace {

constexpr int kParticleThreads = 128;
constexpr int kNodeThreads = 256;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA explicit substep: ") + what + ": " + cudaGetErrorString(status));
  }
}

int Blocks(long long count, int threads) {
  return static_cast<int>(std::max(1LL, (count + threads - 1) / threads));
}

// Doubles per particle in the packed arrays (x 3, v 3, C 9, F^E 9, R0 9, F^P 9, m, V⁰) and their
// offsets; a substep changes the fields before `mass`.
constexpr int kParticleDoubles = 44;
struct ParticleOffsets {
  static constexpr int position = 0, velocity = 3, affine = 6, deformation = 15, rotation = 24, plastic = 33, mass = 42,
                       volume = 43;
};

ParticleView ViewOf(double* base, int* material, int n) {
  ParticleView view;
  view.count = n;
  view.position = base + static_cast<std::size_t>(ParticleOffsets::position) * n;
  view.velocity = base + static_cast<std::size_t>(ParticleOffsets::velocity) * n;
  view.affine_velocity = base + static_cast<std::size_t>(ParticleOffsets::affine) * n;
  view.deformation_gradient = base + static_cast<std::size_t>(ParticleOffsets::deformation) * n;
  view.reference_rotation = base + static_cast<std::size_t>(ParticleOffsets::rotation) * n;
  view.plastic_deformation_gradient = base + static_cast<std::size_t>(ParticleOffsets::plastic) * n;
  view.mass = base + static_cast<std::size_t>(ParticleOffsets::mass) * n;
  view.initial_volume = base + static_cast<std::size_t>(ParticleOffsets::volume) * n;
  view.material = material;
  return view;
}

// Sort key of particle p: the box index of its base node (out-of-box particles last, flagged).
__global__ void CellKeyKernel(ParticleView particles, DenseGridView grid, unsigned* keys, int* order, int* out_of_box) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= particles.count) return;
  const DeviceStencil stencil = ComputeStencil(LoadPoint(particles.position, particles.count, p), grid.spacing);
  const int index = grid.Index(stencil.base, 0, 0, 0);
  if (index < 0 || !grid.ContainsStencil(stencil.base)) atomicOr(out_of_box, 1);
  keys[p] = index < 0 ? 0xffffffffu : static_cast<unsigned>(index);
  order[p] = p;
}

// sorted[q] = unsorted[order[q]] for every packed double and the material index.
__global__ void GatherParticlesKernel(const double* unsorted, const int* unsorted_material, double* sorted,
                                      int* sorted_material, const int* order, int n) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const int p = order[q];
  for (int k = 0; k < kParticleDoubles; ++k)
    sorted[static_cast<std::size_t>(k) * n + q] = unsorted[static_cast<std::size_t>(k) * n + p];
  sorted_material[q] = unsorted_material[p];
}

// unsorted[order[q]] = sorted[q] for the first `fields` packed doubles (all that a substep
// changes, or x and v alone).
__global__ void ScatterParticlesKernel(const double* sorted, double* unsorted, const int* order, int n, int fields) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const int p = order[q];
  for (int k = 0; k < fields; ++k) {
    unsorted[static_cast<std::size_t>(k) * n + p] = sorted[static_cast<std::size_t>(k) * n + q];
  }
}

// P2G: one thread per particle; node runs shared by neighbouring lanes are summed in the
// warp before the atomics.
__global__ void __launch_bounds__(kParticleThreads)
    ParticleToGridKernel(ParticleView particles, MaterialView materials, DenseGridView grid, double stress_dt,
                         bool warp_aggregation, int* out_of_box) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  const int count = grid.node_count();
  ParticleScatter scatter;
  bool inside = false;
  if (p < particles.count) {
    scatter = PrepareParticleScatter(particles, materials, p, grid.spacing, stress_dt);
    inside = grid.ContainsStencil(scatter.stencil.base);
    if (!inside) atomicOr(out_of_box, 1);
  }
  for (int c = 0; c < 3; ++c) {
    for (int b = 0; b < 3; ++b) {
      for (int a = 0; a < 3; ++a) {
        double value[4] = {0.0, 0.0, 0.0, 0.0};
        int node = -1;
        if (inside) {
          node = grid.Index(scatter.stencil.base, a, b, c);
          ParticleScatterValues(scatter, a, b, c, value);
        }
        const bool leader = WarpSegmentedSum(node, value, warp_aggregation);
        if (leader && node >= 0) {
          atomicAdd(&grid.mass[node], value[0]);
          for (int k = 0; k < 3; ++k) atomicAdd(&grid.momentum[k * count + node], value[1 + k]);
        }
      }
    }
  }
}

__global__ void __launch_bounds__(kNodeThreads) GridVelocityKernel(DenseGridView grid, Vec3 gravity, double dt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < grid.node_count()) GridVelocityStep(grid, i, gravity, dt);
}

__global__ void __launch_bounds__(kParticleThreads)
    GridToParticleKernel(ParticleView particles, MaterialView materials, DenseGridView grid, double dt,
                         int* out_of_box) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= particles.count) return;
  if (!GridToParticleStep(particles, grid, p, dt)) {
    atomicOr(out_of_box, 1);
    return;
  }
  ConstitutiveUpdateStep(particles, materials, p);
}

}  // namespace

struct DeviceExplicitSubstep::Impl {
  bool initialized = false;
  cudaStream_t stream = nullptr;
  HostParticleBuffers staged;
  // Pinned staging: packed doubles, then materials; the out-of-box flag.
  void* host_block = nullptr;
  std::size_t host_bytes = 0;
  int* host_flag = nullptr;
  // Device: unsorted (upload/download) and sorted particle arrays, sort scratch, grid.
  double* unsorted = nullptr;
  double* sorted = nullptr;
  int* unsorted_material = nullptr;
  int* sorted_material = nullptr;
  unsigned* keys = nullptr;
  unsigned* sorted_keys = nullptr;
  int* identity = nullptr;
  int* order = nullptr;
  int particle_capacity = 0;
  void* sort_scratch = nullptr;
  std::size_t sort_scratch_bytes = 0;
  double* grid_block = nullptr;  // mass, momentum [3], velocity [3]
  long long grid_capacity = 0;
  double* shear_modulus = nullptr;
  double* first_lame_parameter = nullptr;
  double* yield_stress = nullptr;
  int material_capacity = 0;
  int* flag = nullptr;
  GridBox box;
  int count = 0;

  ~Impl() {
    for (void* pointer :
         {static_cast<void*>(unsorted), static_cast<void*>(sorted), static_cast<void*>(unsorted_material),
          static_cast<void*>(sorted_material), static_cast<void*>(keys), static_cast<void*>(sorted_keys),
          static_cast<void*>(identity), static_cast<void*>(order), sort_scratch, static_cast<void*>(grid_block),
          static_cast<void*>(shear_modulus), static_cast<void*>(first_lame_parameter), static_cast<void*>(yield_stress),
          static_cast<void*>(flag)}) {
      if (pointer != nullptr) cudaFree(pointer);
    }
    if (host_block != nullptr) cudaFreeHost(host_block);
    if (host_flag != nullptr) cudaFreeHost(host_flag);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  void Initialize() {
    if (initialized) return;
    int devices = 0;
    Check(cudaGetDeviceCount(&devices), "no CUDA device");
    Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    Check(cudaMallocHost(reinterpret_cast<void**>(&host_flag), sizeof(int)), "cudaMallocHost(flag)");
    Check(cudaMalloc(reinterpret_cast<void**>(&flag), sizeof(int)), "cudaMalloc(flag)");
    initialized = true;
  }

  template <typename T>
  static void Grow(T*& pointer, std::size_t count) {
    if (pointer != nullptr) Check(cudaFree(pointer), "cudaFree");
    pointer = nullptr;
    Check(cudaMalloc(reinterpret_cast<void**>(&pointer), sizeof(T) * std::max<std::size_t>(count, 1)), "cudaMalloc");
  }

  ParticleView SortedView() { return ViewOf(sorted, sorted_material, count); }
  MaterialView Materials() const { return MaterialView{shear_modulus, first_lame_parameter, yield_stress}; }

  // Copies the first `fields` packed doubles of every particle, in the caller's order, into
  // the pinned staging block; returns whether no particle has left the grid box.
  bool DownloadFields(int fields) {
    ScatterParticlesKernel<<<Blocks(count, kParticleThreads), kParticleThreads, 0, stream>>>(sorted, unsorted, order,
                                                                                             count, fields);
    Check(cudaGetLastError(), "download kernel");
    Check(cudaMemcpyAsync(host_block, unsorted, sizeof(double) * fields * static_cast<std::size_t>(count),
                          cudaMemcpyDeviceToHost, stream),
          "download particles");
    Check(cudaMemcpyAsync(host_flag, flag, sizeof(int), cudaMemcpyDeviceToHost, stream), "download flag");
    Check(cudaStreamSynchronize(stream), "download");
    return *host_flag == 0;
  }

  DenseGridView GridView() {
    DenseGridView grid;
    for (int axis = 0; axis < 3; ++axis) {
      grid.origin[axis] = box.origin[axis];
      grid.size[axis] = box.size[axis];
    }
    grid.spacing = box.spacing;
    const std::size_t nodes = static_cast<std::size_t>(grid.node_count());
    grid.mass = grid_block;
    grid.momentum = grid_block + nodes;
    grid.velocity = grid_block + 4 * nodes;
    return grid;
  }
};

DeviceExplicitSubstep::DeviceExplicitSubstep() : impl_(std::make_unique<Impl>()) {}
DeviceExplicitSubstep::~DeviceExplicitSubstep() = default;

HostParticleBuffers& DeviceExplicitSubstep::Stage(int count) {
  Impl& impl = *impl_;
  impl.Initialize();
  const std::size_t bytes = sizeof(double) * kParticleDoubles * static_cast<std::size_t>(count) + sizeof(int) * count;
  if (bytes > impl.host_bytes) {
    const std::size_t grown = std::max(bytes, impl.host_bytes + impl.host_bytes / 2);
    if (impl.host_block != nullptr) Check(cudaFreeHost(impl.host_block), "cudaFreeHost");
    impl.host_block = nullptr;
    impl.host_bytes = 0;
    Check(cudaMallocHost(&impl.host_block, grown), "cudaMallocHost(particles)");
    impl.host_bytes = grown;
  }
  const ParticleView view = ViewOf(static_cast<double*>(impl.host_block),
                                   reinterpret_cast<int*>(static_cast<double*>(impl.host_block) +
                                                          static_cast<std::size_t>(kParticleDoubles) * count),
                                   count);
  HostParticleBuffers& staged = impl.staged;
  staged.count = count;
  staged.position = view.position;
  staged.velocity = view.velocity;
  staged.affine_velocity = view.affine_velocity;
  staged.deformation_gradient = view.deformation_gradient;
  staged.reference_rotation = view.reference_rotation;
  staged.plastic_deformation_gradient = view.plastic_deformation_gradient;
  staged.mass = const_cast<double*>(view.mass);
  staged.initial_volume = const_cast<double*>(view.initial_volume);
  staged.material = const_cast<int*>(view.material);
  return staged;
}

const HostParticleBuffers& DeviceExplicitSubstep::staged() const {
  return impl_->staged;
}

void DeviceExplicitSubstep::Upload(const GridBox& box, const std::vector<double>& shear_modulus,
                                   const std::vector<double>& first_lame_parameter,
                                   const std::vector<double>& yield_stress, int sort_key_bits) {
  Impl& impl = *impl_;
  const int n = impl.staged.count;
  impl.count = n;
  impl.box = box;
  if (n > impl.particle_capacity) {
    const std::size_t capacity = std::max<std::size_t>(n, impl.particle_capacity + impl.particle_capacity / 2);
    Impl::Grow(impl.unsorted, kParticleDoubles * capacity);
    Impl::Grow(impl.sorted, kParticleDoubles * capacity);
    Impl::Grow(impl.unsorted_material, capacity);
    Impl::Grow(impl.sorted_material, capacity);
    Impl::Grow(impl.keys, capacity);
    Impl::Grow(impl.sorted_keys, capacity);
    Impl::Grow(impl.identity, capacity);
    Impl::Grow(impl.order, capacity);
    impl.particle_capacity = static_cast<int>(capacity);
  }
  const long long nodes = static_cast<long long>(box.size[0]) * box.size[1] * box.size[2];
  if (nodes > (1LL << 31) - 1) throw std::runtime_error("CUDA explicit substep: grid box over 2^31 nodes");
  if (nodes > impl.grid_capacity) {
    const long long capacity = std::max(nodes, impl.grid_capacity + impl.grid_capacity / 2);
    Impl::Grow(impl.grid_block, 7 * static_cast<std::size_t>(capacity));
    impl.grid_capacity = capacity;
  }
  const int materials = static_cast<int>(shear_modulus.size());
  if (materials > impl.material_capacity) {
    Impl::Grow(impl.shear_modulus, materials);
    Impl::Grow(impl.first_lame_parameter, materials);
    Impl::Grow(impl.yield_stress, materials);
    impl.material_capacity = materials;
  }
  cudaStream_t stream = impl.stream;
  Check(cudaMemcpyAsync(impl.unsorted, impl.host_block, sizeof(double) * kParticleDoubles * static_cast<std::size_t>(n),
                        cudaMemcpyHostToDevice, stream),
        "upload particles");
  Check(cudaMemcpyAsync(impl.unsorted_material, impl.staged.material, sizeof(int) * n, cudaMemcpyHostToDevice, stream),
        "upload materials");
  Check(cudaMemcpyAsync(impl.shear_modulus, shear_modulus.data(), sizeof(double) * materials, cudaMemcpyHostToDevice,
                        stream),
        "upload shear moduli");
  Check(cudaMemcpyAsync(impl.first_lame_parameter, first_lame_parameter.data(), sizeof(double) * materials,
                        cudaMemcpyHostToDevice, stream),
        "upload Lamé parameters");
  Check(cudaMemcpyAsync(impl.yield_stress, yield_stress.data(), sizeof(double) * materials, cudaMemcpyHostToDevice,
                        stream),
        "upload yield stresses");
  Check(cudaMemsetAsync(impl.flag, 0, sizeof(int), stream), "clear flag");

  // Cell keys and the sort (once per step).
  const ParticleView unsorted = ViewOf(impl.unsorted, impl.unsorted_material, n);
  const DenseGridView grid = impl.GridView();
  CellKeyKernel<<<Blocks(n, kParticleThreads), kParticleThreads, 0, stream>>>(unsorted, grid, impl.keys, impl.identity,
                                                                              impl.flag);
  int key_bits = 1;
  while (key_bits < 32 && (1LL << key_bits) < nodes) ++key_bits;
  const int end_bit = sort_key_bits > 0 ? std::min(sort_key_bits, key_bits) : key_bits;
  std::size_t scratch_bytes = 0;
  Check(cub::DeviceRadixSort::SortPairs(nullptr, scratch_bytes, impl.keys, impl.sorted_keys, impl.identity, impl.order,
                                        n, 0, end_bit, stream),
        "radix sort size");
  if (scratch_bytes > impl.sort_scratch_bytes) {
    if (impl.sort_scratch != nullptr) Check(cudaFree(impl.sort_scratch), "cudaFree");
    impl.sort_scratch = nullptr;
    Check(cudaMalloc(&impl.sort_scratch, scratch_bytes), "cudaMalloc(sort)");
    impl.sort_scratch_bytes = scratch_bytes;
  }
  Check(cub::DeviceRadixSort::SortPairs(impl.sort_scratch, scratch_bytes, impl.keys, impl.sorted_keys, impl.identity,
                                        impl.order, n, 0, end_bit, stream),
        "radix sort");
  GatherParticlesKernel<<<Blocks(n, kParticleThreads), kParticleThreads, 0, stream>>>(
      impl.unsorted, impl.unsorted_material, impl.sorted, impl.sorted_material, impl.order, n);
  Check(cudaGetLastError(), "upload kernels");
}

void DeviceExplicitSubstep::ParticleToGrid(double dt, const Vec3& gravity, bool warp_aggregation) {
  Impl& impl = *impl_;
  const ParticleView particles = impl.SortedView();
  const DenseGridView grid = impl.GridView();
  const long long nodes = grid.node_count();
  cudaStream_t stream = impl.stream;
  Check(cudaMemsetAsync(impl.grid_block, 0, sizeof(double) * 4 * static_cast<std::size_t>(nodes), stream),
        "clear grid");
  ParticleToGridKernel<<<Blocks(particles.count, kParticleThreads), kParticleThreads, 0, stream>>>(
      particles, impl.Materials(), grid, dt, warp_aggregation, impl.flag);
  GridVelocityKernel<<<Blocks(nodes, kNodeThreads), kNodeThreads, 0, stream>>>(grid, gravity, dt);
  Check(cudaGetLastError(), "P2G kernels");
}

void DeviceExplicitSubstep::GridToParticle(double dt) {
  Impl& impl = *impl_;
  const ParticleView particles = impl.SortedView();
  GridToParticleKernel<<<Blocks(particles.count, kParticleThreads), kParticleThreads, 0, impl.stream>>>(
      particles, impl.Materials(), impl.GridView(), dt, impl.flag);
  Check(cudaGetLastError(), "G2P kernel");
}

void DeviceExplicitSubstep::Substep(double dt, const Vec3& gravity, bool warp_aggregation) {
  ParticleToGrid(dt, gravity, warp_aggregation);
  GridToParticle(dt);
}

void DeviceExplicitSubstep::Synchronize() {
  Check(cudaStreamSynchronize(impl_->stream), "synchronize");
}

bool DeviceExplicitSubstep::Download() {
  return impl_->DownloadFields(ParticleOffsets::mass);
}

bool DeviceExplicitSubstep::DownloadMotion() {
  return impl_->DownloadFields(ParticleOffsets::affine);
}

void DeviceExplicitSubstep::UploadGridVelocity(const std::vector<double>& velocity) {
  Impl& impl = *impl_;
  const DenseGridView grid = impl.GridView();
  const std::size_t nodes = static_cast<std::size_t>(grid.node_count());
  if (velocity.size() != 3 * nodes) throw std::invalid_argument("UploadGridVelocity: wrong size");
  Check(
      cudaMemcpyAsync(grid.velocity, velocity.data(), sizeof(double) * 3 * nodes, cudaMemcpyHostToDevice, impl.stream),
      "grid velocity upload");
  // The host vector may change as soon as this returns.
  Check(cudaStreamSynchronize(impl.stream), "grid velocity upload");
}

void DeviceExplicitSubstep::DownloadGrid(std::vector<double>& mass, std::vector<double>& momentum,
                                         std::vector<double>& velocity) {
  Impl& impl = *impl_;
  const DenseGridView grid = impl.GridView();
  const std::size_t nodes = static_cast<std::size_t>(grid.node_count());
  mass.resize(nodes);
  momentum.resize(3 * nodes);
  velocity.resize(3 * nodes);
  cudaStream_t stream = impl.stream;
  Check(cudaMemcpyAsync(mass.data(), grid.mass, sizeof(double) * nodes, cudaMemcpyDeviceToHost, stream), "grid mass");
  Check(cudaMemcpyAsync(momentum.data(), grid.momentum, sizeof(double) * 3 * nodes, cudaMemcpyDeviceToHost, stream),
        "grid momentum");
  Check(cudaMemcpyAsync(velocity.data(), grid.velocity, sizeof(double) * 3 * nodes, cudaMemcpyDeviceToHost, stream),
        "grid velocity");
  Check(cudaStreamSynchronize(stream), "grid download");
}

}  // namespace contactlab::quasi_newton::gpu
