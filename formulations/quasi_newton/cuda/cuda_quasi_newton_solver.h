#pragma once
// CUDA backend of the quasi-Newton contact solve of one MPM substep ([yu2025async] §V-B;
// spec-sap-qn §1.2.3 Algorithm B.1, kernels K1–K8 of Algorithm B.2, GPU strategies of §6).
// Same problem, options and results as SolveQuasiNewton (quasi_newton_solver.h); the
// iterates agree with the CPU solver up to round-off (the atomic scatter reorders sums).
//
// Per Solve: the contacts are sorted by stencil (counting sort on the centre node) and packed
// into pinned host buffers, uploaded in one copy, and the whole iteration runs on the device:
// one thread per contact for G2P/evaluation/scatter (warp-segmented sums before the atomics),
// one per node for the 3 × 3 Cholesky step, and one block for the stopping test and the exact
// line search. Both contact models ("lagged", "sap_cone") run on the device
// (device_contact_models.h). Double precision.
//
// Plain C++ header (no CUDA types): include it from g++-compiled code under
// `#ifdef CONTACTLAB_WITH_CUDA` (defined, with the library, when the build found nvcc).
// A solver object keeps its device and pinned buffers between calls and allocates only when
// a problem outgrows them. One object per host thread.
#include <memory>
#include <string>

#include "formulations/quasi_newton/quasi_newton_solver.h"

namespace contactlab::quasi_newton {

// True when a CUDA device that this build's kernels run on is present; `reason` (optional)
// then gets the device's name, else why not (no driver, no device, no code for its
// architecture).
bool CudaDeviceAvailable(std::string* reason = nullptr);

struct CudaQuasiNewtonSettings {
  // Sum the scatter contributions of neighbouring contacts that hit the same node inside the
  // warp before the atomics ([yu2025async] §V-A). false: one atomic per (contact, node).
  bool warp_aggregation = true;
  // Iterations launched between two reads of the device's convergence flag; the batch
  // doubles from 1 up to this. Iterations launched after convergence return at once.
  int max_iterations_per_sync = 16;
};

// Host wall time of the parts of the last Solve [s].
struct CudaQuasiNewtonTimings {
  double pack_seconds = 0.0;    // validation, sort, packing into pinned buffers
  double device_seconds = 0.0;  // upload, iterations, download
  double unpack_seconds = 0.0;  // results back into QuasiNewtonResults
  int synchronizations = 0;     // host waits on the device
};

class CudaQuasiNewtonSolver {
 public:
  explicit CudaQuasiNewtonSolver(CudaQuasiNewtonSettings settings = {});
  ~CudaQuasiNewtonSolver();
  CudaQuasiNewtonSolver(const CudaQuasiNewtonSolver&) = delete;
  CudaQuasiNewtonSolver& operator=(const CudaQuasiNewtonSolver&) = delete;

  // Algorithm B.1 from v* on the device. Throws std::invalid_argument on invalid options or a
  // malformed problem (as SolveQuasiNewton) or an unknown contact model, and
  // std::runtime_error when CUDA fails (no device, out of memory, launch error). A problem
  // without contacts returns v* at once without touching the device.
  QuasiNewtonResults Solve(const SubstepContactProblem& problem, const QuasiNewtonOptions& options);

  const CudaQuasiNewtonTimings& last_timings() const { return timings_; }
  const CudaQuasiNewtonSettings& settings() const { return settings_; }

 private:
  struct Device;
  CudaQuasiNewtonSettings settings_;
  CudaQuasiNewtonTimings timings_;
  std::unique_ptr<Device> device_;
};

}  // namespace contactlab::quasi_newton
