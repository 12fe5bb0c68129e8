#pragma once
// Host side of the device solver's data exchange: a SubstepContactProblem (Eigen, AoS) in and
// out of the structure-of-arrays buffers of device_solver.h. Used by CudaQuasiNewtonSolver
// and by the host emulation of the device solver in tests.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "formulations/contact/contact_model.h"
#include "formulations/quasi_newton/cuda/device_contact_models.h"
#include "formulations/quasi_newton/cuda/device_solver.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"

namespace contactlab::quasi_newton::gpu {

// contact::PreparedContact → DeviceContactParameters.
inline DeviceContactParameters ToDeviceParameters(const contact::PreparedContact& prepared) {
  DeviceContactParameters c;
  c.friction_coefficient = prepared.friction_coefficient;
  for (int i = 0; i < 3; ++i) {
    c.regularization[i] = prepared.regularization[i];
    c.stabilization_velocity[i] = prepared.stabilization_velocity[i];
  }
  c.mu_tilde = prepared.mu_tilde;
  c.mu_hat = prepared.mu_hat;
  c.time_step = prepared.time_step;
  c.stiffness = prepared.stiffness;
  c.dissipation = prepared.dissipation;
  c.elastic_force = prepared.elastic_force;
  c.max_normal_velocity = prepared.max_normal_velocity;
  c.lagged_normal_impulse = prepared.lagged_normal_impulse;
  c.soft_norm_tolerance = prepared.soft_norm_tolerance;
  return c;
}

// The device model implementing a ContactModel, by name; false when there is none.
inline bool DeviceModelFor(const contact::ContactModel& model, DeviceContactModel* kind) {
  if (model.name() == "lagged") {
    *kind = DeviceContactModel::kLagged;
    return true;
  }
  if (model.name() == "sap_cone") {
    *kind = DeviceContactModel::kSapCone;
    return true;
  }
  return false;
}

// Sort key of a contact: its stencil's centre node (slot 13, always weighted for a quadratic
// B-spline), else its first node, else −1.
inline int StencilKey(const GridContact& contact) {
  if (contact.node[13] >= 0) return contact.node[13];
  for (int node : contact.node) {
    if (node >= 0) return node;
  }
  return -1;
}

// Contacts in stencil order, order[q] = contact at packed position q (stable counting sort on
// StencilKey, O(contacts + nodes)). Equal stencils become neighbouring lanes of a warp, which
// the segmented scatter sums before its atomics ([yu2025async] §V-A sorts particles by cell for
// the same reason).
inline std::vector<int> StencilOrder(const SubstepContactProblem& problem) {
  const int node_count = static_cast<int>(problem.node_mass.size());
  const int contact_count = static_cast<int>(problem.contacts.size());
  std::vector<int> start(node_count + 2, 0);
  std::vector<int> key(contact_count);
  for (int c = 0; c < contact_count; ++c) {
    key[c] = StencilKey(problem.contacts[c]) + 1;
    ++start[key[c] + 1];
  }
  for (int k = 0; k <= node_count; ++k) start[k + 1] += start[k];
  std::vector<int> order(contact_count);
  for (int c = 0; c < contact_count; ++c) order[start[key[c]]++] = c;
  return order;
}

// Writes nodes and contacts (in `order`) into buffers sized for the problem.
inline void PackProblem(const SubstepContactProblem& problem, const std::vector<int>& order,
                        HostProblemBuffers& staged) {
  const int n = staged.node_count;
  const int nc = staged.contact_count;
  for (int i = 0; i < n; ++i) {
    staged.node_mass[i] = problem.node_mass[i];
    for (int k = 0; k < 3; ++k) staged.free_velocity[k * n + i] = problem.free_velocity[i][k];
  }
  for (int q = 0; q < nc; ++q) {
    const GridContact& contact = problem.contacts[order[q]];
    for (int s = 0; s < kStencilSize; ++s) {
      staged.stencil_node[s * nc + q] = contact.node[s];
      staged.stencil_weight[s * nc + q] = contact.weight[s];
    }
    for (int row = 0; row < 3; ++row) {
      for (int column = 0; column < 3; ++column) {
        staged.rotation[(3 * row + column) * nc + q] = contact.world_to_contact(row, column);
      }
    }
    for (int k = 0; k < 3; ++k) staged.bias[k * nc + q] = contact.bias[k];
    StoreContactParameters(ToDeviceParameters(contact.prepared), staged.parameters, nc, q);
  }
}

inline DeviceSolveSettings MakeDeviceSettings(const SubstepContactProblem& problem, const QuasiNewtonOptions& options,
                                              DeviceContactModel model) {
  DeviceSolveSettings settings;
  settings.model = model;
  settings.relative_tolerance = options.relative_tolerance;
  settings.absolute_tolerance = options.absolute_tolerance;
  settings.max_iterations = options.max_iterations;
  settings.record_history = options.record_history;
  settings.line_search.max_step = options.line_search.max_step;
  settings.line_search.derivative_tolerance = options.line_search.derivative_tolerance;
  settings.line_search.step_tolerance = options.line_search.step_tolerance;
  settings.line_search.max_iterations = options.line_search.max_iterations;
  settings.line_search.cost_absolute_tolerance = options.line_search.cost_absolute_tolerance;
  settings.line_search.cost_relative_tolerance = options.line_search.cost_relative_tolerance;
  settings.outside_momentum_squared = problem.outside_momentum_squared;
  return settings;
}

// The shared termination of a device stop reason, with the message the CPU solver gives.
inline void StopLikeTheCpuSolver(const DeviceSolveSummary& device, solvers::SolverSummary& summary) {
  switch (device.stop) {
    case DeviceStopReason::kOptimality:
      summary.Stop(solvers::Termination::kConverged,
                   solvers::Compare("|M^-1/2 r|", device.gradient_norm, "<", device.threshold));
      return;
    case DeviceStopReason::kMaxIterations:
      summary.Stop(solvers::Termination::kMaxIterations,
                   "no convergence in " + std::to_string(device.iterations) + " iterations; " +
                       solvers::Compare("|M^-1/2 r|", device.gradient_norm, ">=", device.threshold));
      return;
    case DeviceStopReason::kLineSearch:
      summary.Stop(solvers::Termination::kLineSearchFailed,
                   "the exact line search found no minimizer along the block-diagonal direction at iteration " +
                       std::to_string(device.iterations));
      return;
    case DeviceStopReason::kRunning:
      break;
  }
  summary.Stop(solvers::Termination::kNumericalFailure, "the device solve returned without a stop reason");
}

// Velocities, impulses (back in the problem's contact order) and statistics of a device solve.
inline void UnpackResults(const DeviceSolveSummary& summary, const HostProblemBuffers& staged,
                          const std::vector<int>& order, QuasiNewtonResults& results) {
  const int n = staged.node_count;
  const int nc = staged.contact_count;
  results.velocity.resize(n);
  for (int i = 0; i < n; ++i) {
    results.velocity[i] = Vector3(staged.velocity[i], staged.velocity[n + i], staged.velocity[2 * n + i]);
  }
  results.impulses.resize(nc);
  for (int q = 0; q < nc; ++q) {
    results.impulses[order[q]] = Vector3(staged.impulse[q], staged.impulse[nc + q], staged.impulse[2 * nc + q]);
  }
  solvers::SolverSummary& common = results.summary;
  StopLikeTheCpuSolver(summary, common);
  common.iterations = summary.iterations;
  common.line_search_evaluations = summary.line_search_evaluations;
  common.cost = summary.cost;
  common.residual = solvers::ResidualRatio(summary.gradient_norm, summary.threshold);
  double mass_sum = 0.0;
  for (int i = 0; i < n; ++i) mass_sum += staged.node_mass[i];
  common.momentum_residual_bound = std::sqrt(3.0 * mass_sum) * summary.gradient_norm;  // weights M^(-1/2)
  common.history.clear();
  common.history.reserve(summary.history.size());
  for (const DeviceIterationRecord& record : summary.history) {
    solvers::SolverIterationRecord entry;
    entry.iteration = static_cast<int>(common.history.size());
    entry.cost = record.cost;
    entry.residual = record.gradient_norm;
    entry.threshold = record.threshold;
    entry.step = record.step;
    entry.line_search_evaluations = record.line_search_evaluations;
    common.history.push_back(entry);
  }
}

}  // namespace contactlab::quasi_newton::gpu
