// Device half of CudaQuasiNewtonSolver: Algorithm B.1 of spec-sap-qn §1.2.3 with the kernel
// sequence K1–K8 of Algorithm B.2, following the GPU strategies of [yu2025async] §V-B (spec §6).
//
// One quasi-Newton iteration is five kernels on one stream:
//   EvaluateContactsKernel   K1 G2P v → v_c, K2 γ, G, ℓ_c per contact, K3 scatter of
//                            w R_WC γ and w² R_WC G R_CW to the nodes (warp-segmented sums,
//                            then atomics); block partial sums of ℓ_c.
//   NodeKernel               K3 r_i, K4 partial norms, K5 Δv_i = −H_i⁻¹ r_i (3 × 3 Cholesky),
//                            partial sums of the line-search coefficients a, b.
//   DirectionKernel          K6 G2P Δv → Δv_c; partial sums of ℓ'(0), ℓ''(0) over contacts.
//   ControlKernel            one block: K4 stopping test, K7 exact line search (every
//                            evaluation a block reduction over contacts, no grid traversal).
//   UpdateKernel             K8 v ← v + α Δv.
// The per-thread work of each kernel is in device_solver_steps.h (shared with the host
// emulation of emulated_device_solver.h); this file adds the CUDA parts: launch shapes, block
// reductions, the warp-segmented scatter, buffers and the host loop.
// The convergence flag lives on the device: kernels of a finished solve return at once, so
// the host launches several iterations between two reads of the flag.
//
// Reductions other than the atomic scatter sum in a fixed order (block partials, then one
// block). The scatter's atomics make the last bits of H_i and j_i depend on scheduling.
// Precision is double, as the CPU solver; a float variant ([yu2025async]'s GPU code, spec Y14)
// would template these kernels on the scalar type.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "formulations/quasi_newton/cuda/device_solver.h"
#include "formulations/quasi_newton/cuda/device_solver_steps.h"
#include "formulations/quasi_newton/cuda/warp_segmented_sum.cuh"

namespace contactlab::quasi_newton::gpu {
namespace {

constexpr int kContactThreads = 128;  // per block, contact kernels
constexpr int kNodeThreads = 256;     // per block, node kernels
constexpr int kControlThreads = 512;  // the single control block
constexpr unsigned kFullMask = 0xffffffffu;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA quasi-Newton solver: ") + what + ": " + cudaGetErrorString(status));
  }
}

int Blocks(int count, int threads) {
  return std::max(1, (count + threads - 1) / threads);
}

// Block partial sums written by the grid-wide kernels, read by the control kernel.
struct Partials {
  double* contact;  // [contact blocks][3]: Σ ℓ_c (evaluation kernel), Σ −Δv_c·γ, Σ Δv_cᵀ G Δv_c (direction kernel)
  double* node;  // [node blocks][6]
  int contact_blocks;
  int node_blocks;
};

// Sum of K values over the block, returned to every thread in `values`. Fixed order for a
// fixed block size. `shared` holds 33 K doubles; blockDim.x is a multiple of 32.
template <int K>
__device__ void BlockSum(double (&values)[K], double* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  for (int k = 0; k < K; ++k) {
    for (int offset = 16; offset > 0; offset >>= 1) values[k] += __shfl_down_sync(kFullMask, values[k], offset);
  }
  if (lane == 0) {
    for (int k = 0; k < K; ++k) shared[warp * K + k] = values[k];
  }
  __syncthreads();
  if (warp == 0) {
    for (int k = 0; k < K; ++k) {
      double value = lane < warps ? shared[lane * K + k] : 0.0;
      for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(kFullMask, value, offset);
      if (lane == 0) shared[32 * K + k] = value;
    }
  }
  __syncthreads();
  for (int k = 0; k < K; ++k) values[k] = shared[32 * K + k];
  __syncthreads();  // `shared` may be reused right after
}

// The block reduction as the line functor's `reduce`.
struct BlockReduce3 {
  double* shared;
  __device__ void operator()(double (&sums)[3]) const { BlockSum<3>(sums, shared); }
};

// K3 scatter of one contact per lane: node(s) += w_s R_WC γ and w_s² R_WC G R_CW for every
// stencil slot s. Contacts are sorted by stencil, so neighbouring lanes often target the same
// node at the same slot: those runs are summed inside the warp and only their first lane
// issues the atomics (warp_segmented_sum.cuh). Every lane of the warp must call this
// (inactive lanes pass node −1).
__device__ void ScatterToNodes(const ProblemView& problem, const WorkView& work, int p, bool active,
                               const ContactScatter& scatter, bool warp_aggregation) {
  const int nc = problem.contact_count;
  const int n = problem.node_count;
  for (int s = 0; s < kStencilSize; ++s) {
    int node = -1;
    double weight = 0.0;
    if (active) {
      node = problem.stencil_node[s * nc + p];
      weight = problem.stencil_weight[s * nc + p];
    }
    double value[9];
    ScatterValues(scatter, weight, value);
    const bool leader = WarpSegmentedSum(node, value, warp_aggregation);
    if (leader && node >= 0) {
      for (int k = 0; k < 3; ++k) atomicAdd(&work.node_impulse[k * n + node], value[k]);
      for (int k = 0; k < 6; ++k) atomicAdd(&work.node_hessian[k * n + node], value[3 + k]);
    }
  }
}

// K1 + K2 + K3 (scatter): one thread per contact.
template <DeviceContactModel kModel>
__global__ void __launch_bounds__(kContactThreads)
    EvaluateContactsKernel(ProblemView problem, WorkView work, Partials partials, bool warp_aggregation) {
  __shared__ double shared[33];
  if (work.state->done) return;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = p < problem.contact_count;
  ContactScatter scatter;
  if (active) scatter = EvaluateContactStep<kModel>(problem, work, p);
  ScatterToNodes(problem, work, p, active, scatter, warp_aggregation);
  double cost[1] = {scatter.cost};
  BlockSum<1>(cost, shared);
  if (threadIdx.x == 0) partials.contact[blockIdx.x * kContactPartials] = cost[0];
}

// K3 (r_i), K4 (norms), K5 (Δv_i): one thread per node.
__global__ void __launch_bounds__(kNodeThreads) NodeKernel(ProblemView problem, WorkView work, Partials partials) {
  __shared__ double shared[33 * kNodePartials];
  if (work.state->done) return;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double sums[kNodePartials] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  if (i < problem.node_count) NodeStep(problem, work, i, sums);
  BlockSum<kNodePartials>(sums, shared);
  if (threadIdx.x < kNodePartials) partials.node[blockIdx.x * kNodePartials + threadIdx.x] = sums[threadIdx.x];
}

// K6: Δv_c per contact, and the contact parts of ℓ'(0), ℓ''(0).
__global__ void __launch_bounds__(kContactThreads)
    DirectionKernel(ProblemView problem, WorkView work, Partials partials) {
  __shared__ double shared[33 * kContactPartials];
  if (work.state->done) return;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  double sums[kContactPartials] = {0.0, 0.0, 0.0};
  if (p < problem.contact_count) DirectionStep(problem, work, p, sums);
  BlockSum<kContactPartials>(sums, shared);
  if (threadIdx.x >= 1 && threadIdx.x < kContactPartials) {
    partials.contact[blockIdx.x * kContactPartials + threadIdx.x] = sums[threadIdx.x];
  }
}

// K4 stopping test and K7 line search in one block (every line-search evaluation is a block
// reduction over the contacts: no grid traversal, no host round trip).
template <DeviceContactModel kModel>
__global__ void __launch_bounds__(kControlThreads)
    ControlKernel(ProblemView problem, WorkView work, Partials partials, ControlSettings settings) {
  __shared__ double shared[33 * kNodePartials];
  if (work.state->done) return;
  const int iteration = work.state->iterations;
  double node_sums[kNodePartials] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int block = threadIdx.x; block < partials.node_blocks; block += blockDim.x) {
    for (int k = 0; k < kNodePartials; ++k) node_sums[k] += partials.node[block * kNodePartials + k];
  }
  BlockSum<kNodePartials>(node_sums, shared);
  double contact_sums[kContactPartials] = {0.0, 0.0, 0.0};
  for (int block = threadIdx.x; block < partials.contact_blocks; block += blockDim.x) {
    for (int k = 0; k < kContactPartials; ++k) contact_sums[k] += partials.contact[block * kContactPartials + k];
  }
  BlockSum<kContactPartials>(contact_sums, shared);
  ContactLine<kModel, BlockReduce3> line{
      problem, work, 0.0, 0.0, 0.0, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), BlockReduce3{shared}};
  ControlStep(settings, node_sums, contact_sums, line, work, iteration, threadIdx.x == 0);
}

// K8: v ← v + α Δv, one thread per node.
__global__ void __launch_bounds__(kNodeThreads) UpdateKernel(ProblemView problem, WorkView work) {
  if (work.state->done) return;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < problem.node_count) UpdateStep(problem, work, i, work.state->step);
}

// Byte offsets of the arrays of one problem inside one allocation (8-byte aligned).
struct Layout {
  // Inputs, contiguous so that one copy uploads them.
  std::size_t node_mass, free_velocity, stencil_weight, rotation, bias, parameters, stencil_node, input_end;
  // Host-only outputs.
  std::size_t velocity, impulse, output_end;

  Layout(int n, int nc) {
    std::size_t offset = 0;
    auto take = [&offset](std::size_t bytes) {
      const std::size_t start = offset;
      offset += (bytes + 7) / 8 * 8;
      return start;
    };
    const std::size_t d = sizeof(double);
    node_mass = take(d * n);
    free_velocity = take(d * 3 * n);
    stencil_weight = take(d * kStencilSize * nc);
    rotation = take(d * 9 * nc);
    bias = take(d * 3 * nc);
    parameters = take(d * kContactParameterCount * nc);
    stencil_node = take(sizeof(int) * kStencilSize * nc);
    input_end = offset;
    velocity = take(d * 3 * n);
    impulse = take(d * 3 * nc);
    output_end = offset;
  }
};

template <typename T>
T* At(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

}  // namespace

struct DeviceSolver::Impl {
  bool initialized = false;
  cudaStream_t stream = nullptr;
  // Pinned host block: problem inputs and outputs, then the state read back per batch.
  void* host_block = nullptr;
  std::size_t host_bytes = 0;
  SolverState* host_state = nullptr;
  // Device blocks: problem inputs; iteration arrays; history.
  void* device_input = nullptr;
  std::size_t device_input_bytes = 0;
  void* device_work = nullptr;
  std::size_t device_work_bytes = 0;
  DeviceIterationRecord* device_history = nullptr;
  int device_history_capacity = 0;
  HostProblemBuffers staged;

  ~Impl() {
    // Destructors must not throw; errors while freeing are ignored.
    if (host_block != nullptr) cudaFreeHost(host_block);
    if (host_state != nullptr) cudaFreeHost(host_state);
    if (device_input != nullptr) cudaFree(device_input);
    if (device_work != nullptr) cudaFree(device_work);
    if (device_history != nullptr) cudaFree(device_history);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  void Initialize() {
    if (initialized) return;
    std::string description;
    if (!QueryDevice(&description)) throw std::runtime_error("CUDA quasi-Newton solver: " + description);
    Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    Check(cudaMallocHost(reinterpret_cast<void**>(&host_state), sizeof(SolverState)), "cudaMallocHost(state)");
    initialized = true;
  }

  // Grows `buffer` to at least `bytes` (×1.5 headroom); `pinned` selects host memory.
  static void Reserve(void*& buffer, std::size_t& capacity, std::size_t bytes, bool pinned) {
    if (bytes <= capacity) return;
    const std::size_t grown = std::max(bytes, capacity + capacity / 2);
    if (buffer != nullptr) Check(pinned ? cudaFreeHost(buffer) : cudaFree(buffer), "free");
    buffer = nullptr;
    capacity = 0;
    Check(pinned ? cudaMallocHost(&buffer, grown) : cudaMalloc(&buffer, grown),
          pinned ? "cudaMallocHost" : "cudaMalloc");
    capacity = grown;
  }
};

DeviceSolver::DeviceSolver() : impl_(std::make_unique<Impl>()) {}
DeviceSolver::~DeviceSolver() = default;

HostProblemBuffers& DeviceSolver::Stage(int node_count, int contact_count) {
  Impl& impl = *impl_;
  impl.Initialize();
  const Layout layout(node_count, contact_count);
  Impl::Reserve(impl.host_block, impl.host_bytes, layout.output_end, /*pinned=*/true);
  HostProblemBuffers& staged = impl.staged;
  staged.node_count = node_count;
  staged.contact_count = contact_count;
  void* base = impl.host_block;
  staged.node_mass = At<double>(base, layout.node_mass);
  staged.free_velocity = At<double>(base, layout.free_velocity);
  staged.stencil_node = At<int>(base, layout.stencil_node);
  staged.stencil_weight = At<double>(base, layout.stencil_weight);
  staged.rotation = At<double>(base, layout.rotation);
  staged.bias = At<double>(base, layout.bias);
  staged.parameters = At<double>(base, layout.parameters);
  staged.velocity = At<double>(base, layout.velocity);
  staged.impulse = At<double>(base, layout.impulse);
  return staged;
}

template <DeviceContactModel kModel>
static void LaunchIteration(cudaStream_t stream, const ProblemView& problem, const WorkView& work,
                            const Partials& partials, const ControlSettings& control, bool warp_aggregation) {
  EvaluateContactsKernel<kModel>
      <<<partials.contact_blocks, kContactThreads, 0, stream>>>(problem, work, partials, warp_aggregation);
  NodeKernel<<<partials.node_blocks, kNodeThreads, 0, stream>>>(problem, work, partials);
  DirectionKernel<<<partials.contact_blocks, kContactThreads, 0, stream>>>(problem, work, partials);
  ControlKernel<kModel><<<1, kControlThreads, 0, stream>>>(problem, work, partials, control);
  UpdateKernel<<<partials.node_blocks, kNodeThreads, 0, stream>>>(problem, work);
}

DeviceSolveSummary DeviceSolver::Solve(const DeviceSolveSettings& settings) {
  Impl& impl = *impl_;
  const HostProblemBuffers& staged = impl.staged;
  const int n = staged.node_count;
  const int nc = staged.contact_count;
  if (!impl.initialized || nc <= 0) throw std::logic_error("DeviceSolver::Solve: nothing staged");
  const Layout layout(n, nc);
  const int contact_blocks = Blocks(nc, kContactThreads);
  const int node_blocks = Blocks(n, kNodeThreads);

  // Device arrays: inputs as staged; then the iteration arrays.
  Impl::Reserve(impl.device_input, impl.device_input_bytes, layout.input_end, /*pinned=*/false);
  const std::size_t d = sizeof(double);
  const std::size_t work_doubles = static_cast<std::size_t>(3 + 3 + 3 + 6) * n +
                                   static_cast<std::size_t>(3 + 3 + 3 + 6) * nc +
                                   static_cast<std::size_t>(kContactPartials) * contact_blocks +
                                   static_cast<std::size_t>(kNodePartials) * node_blocks;
  Impl::Reserve(impl.device_work, impl.device_work_bytes, work_doubles * d + sizeof(SolverState) + 8,
                /*pinned=*/false);
  const int history_capacity = settings.record_history ? settings.max_iterations + 1 : 0;
  if (history_capacity > impl.device_history_capacity) {
    if (impl.device_history != nullptr) Check(cudaFree(impl.device_history), "cudaFree(history)");
    impl.device_history = nullptr;
    impl.device_history_capacity = 0;
    Check(cudaMalloc(reinterpret_cast<void**>(&impl.device_history), sizeof(DeviceIterationRecord) * history_capacity),
          "cudaMalloc(history)");
    impl.device_history_capacity = history_capacity;
  }

  ProblemView problem;
  problem.node_count = n;
  problem.contact_count = nc;
  problem.node_mass = At<double>(impl.device_input, layout.node_mass);
  problem.free_velocity = At<double>(impl.device_input, layout.free_velocity);
  problem.stencil_node = At<int>(impl.device_input, layout.stencil_node);
  problem.stencil_weight = At<double>(impl.device_input, layout.stencil_weight);
  problem.rotation = At<double>(impl.device_input, layout.rotation);
  problem.bias = At<double>(impl.device_input, layout.bias);
  problem.parameters = At<double>(impl.device_input, layout.parameters);

  WorkView work;
  double* cursor = static_cast<double*>(impl.device_work);
  auto take = [&cursor](std::size_t count) {
    double* start = cursor;
    cursor += count;
    return start;
  };
  work.velocity = take(3 * static_cast<std::size_t>(n));
  work.direction = take(3 * static_cast<std::size_t>(n));
  work.node_impulse = take(3 * static_cast<std::size_t>(n));
  work.node_hessian = take(6 * static_cast<std::size_t>(n));  // right after node_impulse: one memset clears both
  work.contact_velocity = take(3 * static_cast<std::size_t>(nc));
  work.contact_direction = take(3 * static_cast<std::size_t>(nc));
  work.impulse = take(3 * static_cast<std::size_t>(nc));
  work.hessian = take(6 * static_cast<std::size_t>(nc));
  Partials partials;
  partials.contact = take(static_cast<std::size_t>(kContactPartials) * contact_blocks);
  partials.node = take(static_cast<std::size_t>(kNodePartials) * node_blocks);
  partials.contact_blocks = contact_blocks;
  partials.node_blocks = node_blocks;
  work.state = reinterpret_cast<SolverState*>(cursor);
  work.history = impl.device_history;
  work.history_capacity = history_capacity;

  ControlSettings control;
  control.relative_tolerance = settings.relative_tolerance;
  control.absolute_tolerance = settings.absolute_tolerance;
  control.max_iterations = settings.max_iterations;
  control.outside_momentum_squared = settings.outside_momentum_squared;
  control.line_search = settings.line_search;

  cudaStream_t stream = impl.stream;
  // Upload, v ← v* (spec Y2), clear the accumulators and the state.
  Check(cudaMemcpyAsync(impl.device_input, impl.host_block, layout.input_end, cudaMemcpyHostToDevice, stream),
        "upload");
  Check(cudaMemcpyAsync(work.velocity, problem.free_velocity, 3 * d * n, cudaMemcpyDeviceToDevice, stream),
        "initial velocity");
  Check(cudaMemsetAsync(work.node_impulse, 0, 9 * d * n, stream), "clear accumulators");
  Check(cudaMemsetAsync(work.state, 0, sizeof(SolverState), stream), "clear state");

  DeviceSolveSummary summary;
  const int max_batch = std::max(1, settings.max_iterations_per_sync);
  int batch = 1;
  int launched = 0;
  for (;;) {
    for (int k = 0; k < batch; ++k) {
      if (settings.model == DeviceContactModel::kSapCone) {
        LaunchIteration<DeviceContactModel::kSapCone>(stream, problem, work, partials, control,
                                                      settings.warp_aggregation);
      } else {
        LaunchIteration<DeviceContactModel::kLagged>(stream, problem, work, partials, control,
                                                     settings.warp_aggregation);
      }
    }
    Check(cudaGetLastError(), "kernel launch");
    launched += batch;
    Check(cudaMemcpyAsync(impl.host_state, work.state, sizeof(SolverState), cudaMemcpyDeviceToHost, stream),
          "state readback");
    Check(cudaStreamSynchronize(stream), "iteration batch");
    ++summary.synchronizations;
    if (impl.host_state->done) break;
    // The control kernel stops at max_iterations at the latest; this only guards bugs.
    if (launched > settings.max_iterations + 1) throw std::logic_error("DeviceSolver: iteration loop ran away");
    batch = std::min(2 * batch, max_batch);
  }

  Check(cudaMemcpyAsync(staged.velocity, work.velocity, 3 * d * n, cudaMemcpyDeviceToHost, stream), "download v");
  Check(cudaMemcpyAsync(staged.impulse, work.impulse, 3 * d * nc, cudaMemcpyDeviceToHost, stream), "download gamma");
  const SolverState& state = *impl.host_state;
  const int records = settings.record_history ? std::min(state.iterations + 1, history_capacity) : 0;
  summary.history.resize(records);
  if (records > 0) {
    Check(cudaMemcpyAsync(summary.history.data(), impl.device_history, sizeof(DeviceIterationRecord) * records,
                          cudaMemcpyDeviceToHost, stream),
          "download history");
  }
  Check(cudaStreamSynchronize(stream), "download");
  summary.stop = static_cast<DeviceStopReason>(state.stop);
  summary.iterations = state.iterations;
  summary.line_search_evaluations = state.line_search_evaluations;
  summary.cost = state.cost;
  summary.gradient_norm = state.gradient_norm;
  summary.threshold = state.threshold;
  return summary;
}

bool QueryDevice(std::string* description) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (description != nullptr) *description = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error
    return false;
  }
  if (count == 0) {
    if (description != nullptr) *description = "no CUDA device found";
    return false;
  }
  // The fat binary must hold code this device can run (CONTACTLAB_CUDA_ARCHITECTURES).
  cudaFuncAttributes attributes;
  status = cudaFuncGetAttributes(&attributes, UpdateKernel);
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp properties;
  const cudaError_t property_status = cudaGetDeviceProperties(&properties, device);
  if (status != cudaSuccess) {
    if (description != nullptr) {
      *description = std::string("CUDA device present but this build has no code for it (") +
                     cudaGetErrorString(status) + "); rebuild with CONTACTLAB_CUDA_ARCHITECTURES covering it";
    }
    cudaGetLastError();
    return false;
  }
  if (description != nullptr) {
    if (property_status == cudaSuccess) {
      *description = std::string(properties.name) + " (compute capability " + std::to_string(properties.major) + "." +
                     std::to_string(properties.minor) + ")";
    } else {
      *description = "CUDA device " + std::to_string(device);
    }
  }
  return true;
}

}  // namespace contactlab::quasi_newton::gpu
