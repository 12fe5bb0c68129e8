#pragma once
// The device solver run serially on the host: the same packed arrays and the same per-thread
// steps (device_solver_steps.h) as the kernels of device_solver.cu, one "thread" at a time,
// with the scatter as plain sums in contact order. It has no CUDA parts (block reductions,
// warp-segmented atomics, launch batching), so it runs without a GPU; tests compare it with
// SolveQuasiNewton to check the device arithmetic, stopping logic and line search, and with
// the real device solver where a GPU exists.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "formulations/quasi_newton/cuda/device_solver_steps.h"
#include "formulations/quasi_newton/cuda/problem_packing.h"

namespace contactlab::quasi_newton::gpu {

// HostProblemBuffers backed by std::vector.
struct HostProblemStorage {
  std::vector<double> node_mass, free_velocity, stencil_weight, rotation, bias, parameters, velocity, impulse;
  std::vector<int> stencil_node;
  HostProblemBuffers buffers;

  HostProblemStorage(int n, int nc)
      : node_mass(n),
        free_velocity(3 * n),
        stencil_weight(kStencilSize * nc),
        rotation(9 * nc),
        bias(3 * nc),
        parameters(kContactParameterCount * nc),
        velocity(3 * n),
        impulse(3 * nc),
        stencil_node(kStencilSize * nc) {
    buffers = {n,
               nc,
               node_mass.data(),
               free_velocity.data(),
               stencil_node.data(),
               stencil_weight.data(),
               rotation.data(),
               bias.data(),
               parameters.data(),
               velocity.data(),
               impulse.data()};
  }
};

namespace detail {
struct NoReduce {
  void operator()(double (&)[3]) const {}
};

template <DeviceContactModel kModel>
DeviceSolveSummary EmulateDeviceSolve(const HostProblemBuffers& staged, const DeviceSolveSettings& settings) {
  const int n = staged.node_count;
  const int nc = staged.contact_count;
  const ProblemView problem{n,
                            nc,
                            staged.node_mass,
                            staged.free_velocity,
                            staged.stencil_node,
                            staged.stencil_weight,
                            staged.rotation,
                            staged.bias,
                            staged.parameters};
  std::vector<double> velocity(staged.free_velocity, staged.free_velocity + 3 * n);  // spec Y2: v ← v*
  std::vector<double> direction(3 * n), node_impulse(3 * n, 0.0), node_hessian(6 * n, 0.0);
  std::vector<double> contact_velocity(3 * nc), contact_direction(3 * nc), impulse(3 * nc), hessian(6 * nc);
  SolverState state{};
  const int history_capacity = settings.record_history ? settings.max_iterations + 1 : 0;
  std::vector<DeviceIterationRecord> history(history_capacity);
  const WorkView work{velocity.data(),     direction.data(),        node_impulse.data(),
                      node_hessian.data(), contact_velocity.data(), contact_direction.data(),
                      impulse.data(),      hessian.data(),          &state,
                      history.data(),      history_capacity};
  ControlSettings control{settings.relative_tolerance, settings.absolute_tolerance, settings.max_iterations,
                          settings.outside_momentum_squared, settings.line_search};

  while (!state.done) {
    // K1–K3.
    double contact_sums[kContactPartials] = {0.0, 0.0, 0.0};
    for (int p = 0; p < nc; ++p) {
      const ContactScatter scatter = EvaluateContactStep<kModel>(problem, work, p);
      contact_sums[0] += scatter.cost;
      for (int s = 0; s < kStencilSize; ++s) {
        const int node = problem.stencil_node[s * nc + p];
        if (node < 0) continue;
        double value[9];
        ScatterValues(scatter, problem.stencil_weight[s * nc + p], value);
        for (int k = 0; k < 3; ++k) node_impulse[k * n + node] += value[k];
        for (int k = 0; k < 6; ++k) node_hessian[k * n + node] += value[3 + k];
      }
    }
    // K3–K5.
    double node_sums[kNodePartials] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int i = 0; i < n; ++i) NodeStep(problem, work, i, node_sums);
    // K6.
    for (int p = 0; p < nc; ++p) DirectionStep(problem, work, p, contact_sums);
    // K4, K7.
    ContactLine<kModel, NoReduce> line{problem, work, 0.0, 0.0, 0.0, 0, 1, NoReduce{}};
    ControlStep(control, node_sums, contact_sums, line, work, state.iterations, true);
    // K8.
    if (!state.done) {
      for (int i = 0; i < n; ++i) UpdateStep(problem, work, i, state.step);
    }
  }

  std::copy(velocity.begin(), velocity.end(), staged.velocity);
  std::copy(impulse.begin(), impulse.end(), staged.impulse);
  DeviceSolveSummary summary;
  summary.stop = static_cast<DeviceStopReason>(state.stop);
  summary.iterations = state.iterations;
  summary.line_search_evaluations = state.line_search_evaluations;
  summary.cost = state.cost;
  summary.gradient_norm = state.gradient_norm;
  summary.threshold = state.threshold;
  if (settings.record_history)
    history.resize(state.iterations + 1);
  else
    history.clear();
  summary.history = std::move(history);
  return summary;
}
}  // namespace detail

// Algorithm B.1 as the device solver runs it, serially on the host. Expects a valid problem
// (SolveQuasiNewton's checks) with a model that has a device version and at least one contact.
inline QuasiNewtonResults EmulateCudaQuasiNewton(const SubstepContactProblem& problem,
                                                 const QuasiNewtonOptions& options) {
  DeviceContactModel model;
  if (problem.model == nullptr || !DeviceModelFor(*problem.model, &model) || problem.contacts.empty()) {
    throw std::invalid_argument("EmulateCudaQuasiNewton: needs contacts and a lagged or sap_cone model");
  }
  HostProblemStorage storage(static_cast<int>(problem.node_mass.size()), static_cast<int>(problem.contacts.size()));
  const std::vector<int> order = StencilOrder(problem);
  PackProblem(problem, order, storage.buffers);
  const DeviceSolveSettings settings = MakeDeviceSettings(problem, options, model);
  const DeviceSolveSummary summary =
      model == DeviceContactModel::kSapCone
          ? detail::EmulateDeviceSolve<DeviceContactModel::kSapCone>(storage.buffers, settings)
          : detail::EmulateDeviceSolve<DeviceContactModel::kLagged>(storage.buffers, settings);
  QuasiNewtonResults results;
  UnpackResults(summary, storage.buffers, order, results);
  return results;
}

}  // namespace contactlab::quasi_newton::gpu
