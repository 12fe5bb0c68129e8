#pragma once
// Internal interface between the two halves of CudaQuasiNewtonSolver: the host half
// (cuda_quasi_newton_solver.cc, g++: validation, sorting, packing into pinned buffers) and the
// device half (device_solver.cu, nvcc: buffers, kernels K1–K8, the iteration loop). Plain
// C++ without CUDA or Eigen types.
//
// Every array is a structure of arrays: component k of item i lives at [k * count + i], with
// count the number of nodes or contacts of the current problem.
#include <memory>
#include <string>
#include <vector>

#include "formulations/quasi_newton/cuda/device_contact_models.h"
#include "formulations/quasi_newton/cuda/device_line_search.h"

namespace contactlab::quasi_newton::gpu {

inline constexpr int kStencilSize = 27;

// Pinned host arrays of one problem (filled by the host half, read back after the solve).
struct HostProblemBuffers {
  int node_count = 0;
  int contact_count = 0;
  // inputs
  double* node_mass = nullptr;       // [n]        m_i [kg]
  double* free_velocity = nullptr;   // [3][n]     v*_i [m/s]
  int* stencil_node = nullptr;       // [27][nc]   node of slot s, −1 for none
  double* stencil_weight = nullptr;  // [27][nc]   w_ip
  double* rotation = nullptr;        // [9][nc]    R_CW entry (row, column) at k = 3 row + column
  double* bias = nullptr;            // [3][nc]    b_p [m/s]
  double* parameters = nullptr;      // [16][nc]   DeviceContactParameters (StoreContactParameters)
  // outputs
  double* velocity = nullptr;  // [3][n]    v_i at return
  double* impulse = nullptr;   // [3][nc]   γ_p at the returned v
};

struct DeviceSolveSettings {
  DeviceContactModel model = DeviceContactModel::kLagged;
  double relative_tolerance = 5.0e-2;
  double absolute_tolerance = 2.220446049250313e-16;
  int max_iterations = 2000;
  bool record_history = false;
  LineSearchParameters line_search;
  double outside_momentum_squared = 0.0;
  // Segmented warp sums before the atomic scatter of K3 ([yu2025async] §V-A).
  bool warp_aggregation = true;
  // Quasi-Newton iterations launched between two reads of the convergence flag (the batch
  // doubles from 1 up to this); kernels of a finished solve return at once.
  int max_iterations_per_sync = 16;
};

enum class DeviceStopReason : int { kRunning = 0, kOptimality = 1, kMaxIterations = 2, kLineSearch = 3 };

// One QuasiNewtonIteration as the device records it.
struct DeviceIterationRecord {
  double cost = 0.0;
  double gradient_norm = 0.0;
  double threshold = 0.0;
  double step = 0.0;
  int line_search_evaluations = 0;
  int padding = 0;
};

struct DeviceSolveSummary {
  DeviceStopReason stop = DeviceStopReason::kRunning;
  int iterations = 0;
  int line_search_evaluations = 0;
  double cost = 0.0;
  double gradient_norm = 0.0;  // ‖M^-½ r‖ at the final iterate
  double threshold = 0.0;      // the stopping rule's bound there
  int synchronizations = 0;    // host waits on the device (one per batch)
  std::vector<DeviceIterationRecord> history;
};

class DeviceSolver {
 public:
  DeviceSolver();
  ~DeviceSolver();
  DeviceSolver(const DeviceSolver&) = delete;
  DeviceSolver& operator=(const DeviceSolver&) = delete;

  // Pinned buffers sized for the problem (grown, never shrunk); valid until the next call.
  // Initializes CUDA on first use; throws std::runtime_error when that fails.
  HostProblemBuffers& Stage(int node_count, int contact_count);
  // Uploads the staged problem, runs Algorithm B.1 from v*, writes velocity and impulse
  // into the staged buffers. Needs contact_count > 0.
  DeviceSolveSummary Solve(const DeviceSolveSettings& settings);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// False with the reason when no device can run this build's kernels; true with the
// device's name and compute capability.
bool QueryDevice(std::string* description);

}  // namespace contactlab::quasi_newton::gpu
