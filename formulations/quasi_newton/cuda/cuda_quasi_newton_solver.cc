// Host half of CudaQuasiNewtonSolver: validation, the stencil sort, packing into the pinned
// buffers of the device half (device_solver.cu) and unpacking of the results.
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "formulations/contact/sap_friction_cone.h"
#include "formulations/phase_clock.h"
#include "formulations/quasi_newton/cuda/device_solver.h"
#include "formulations/quasi_newton/cuda/problem_packing.h"

namespace contactlab::quasi_newton {

static_assert(gpu::kDeviceSapSoftNormVelocity == contact::kSapSoftNormVelocity,
              "device and host SAP soft-norm velocities differ");
static_assert(gpu::kStencilSize == static_cast<int>(std::tuple_size_v<decltype(GridContact::node)>));

bool CudaDeviceAvailable(std::string* reason) {
  return gpu::QueryDevice(reason);
}

struct CudaQuasiNewtonSolver::Device {
  gpu::DeviceSolver solver;
};

CudaQuasiNewtonSolver::CudaQuasiNewtonSolver(CudaQuasiNewtonSettings settings)
    : settings_(settings), device_(std::make_unique<Device>()) {}

CudaQuasiNewtonSolver::~CudaQuasiNewtonSolver() = default;

QuasiNewtonResults CudaQuasiNewtonSolver::Solve(const SubstepContactProblem& problem,
                                                const QuasiNewtonOptions& options) {
  const Clock::time_point pack_start = Clock::now();
  timings_ = CudaQuasiNewtonTimings();
  if (const std::string reason = options.Validate(); !reason.empty()) {
    throw std::invalid_argument("QuasiNewtonOptions: " + reason);
  }
  CheckSubstepProblem(problem);
  if (!problem.initial_velocity.empty()) {
    // The device iteration starts from v* (its buffers hold no other start).
    throw std::invalid_argument(
        "CudaQuasiNewtonSolver: a warm start (initial_velocity) is not supported on the device");
  }
  gpu::DeviceContactModel model;
  if (!gpu::DeviceModelFor(*problem.model, &model)) {
    throw std::invalid_argument("CudaQuasiNewtonSolver: contact model '" + std::string(problem.model->name()) +
                                "' has no device implementation");
  }
  const int node_count = static_cast<int>(problem.node_mass.size());
  const int contact_count = static_cast<int>(problem.contacts.size());

  QuasiNewtonResults results;
  if (contact_count == 0) {
    results.velocity = problem.free_velocity;  // spec Y2: v* is optimal without contacts
    results.summary.Stop(solvers::Termination::kNothingToSolve, "no contacts: v = v*");
    timings_.pack_seconds = SecondsSince(pack_start);
    return results;
  }

  // Contacts in stencil order into the pinned structure-of-arrays buffers.
  gpu::HostProblemBuffers& staged = device_->solver.Stage(node_count, contact_count);
  const std::vector<int> order = gpu::StencilOrder(problem);
  gpu::PackProblem(problem, order, staged);
  gpu::DeviceSolveSettings settings = gpu::MakeDeviceSettings(problem, options, model);
  settings.warp_aggregation = settings_.warp_aggregation;
  settings.max_iterations_per_sync = settings_.max_iterations_per_sync;
  timings_.pack_seconds = SecondsSince(pack_start);

  const Clock::time_point device_start = Clock::now();
  const gpu::DeviceSolveSummary summary = device_->solver.Solve(settings);
  timings_.device_seconds = SecondsSince(device_start);
  timings_.synchronizations = summary.synchronizations;

  const Clock::time_point unpack_start = Clock::now();
  gpu::UnpackResults(summary, staged, order, results);
  timings_.unpack_seconds = SecondsSince(unpack_start);
  results.summary.seconds.total = SecondsSince(pack_start);
  return results;
}

}  // namespace contactlab::quasi_newton
