#pragma once
// The per-thread work of the kernels of device_solver.cu, as __host__ __device__ functions on
// plain array views: a kernel is "one of these per thread + a reduction", and
// emulated_device_solver.h runs the same functions serially on the host so that tests
// without a GPU check the arithmetic, the stopping logic and the line search the kernels use.
//
// Array layout: structure of arrays, component k of item i at [k * count + i].
#include "formulations/quasi_newton/cuda/device_contact_models.h"
#include "formulations/quasi_newton/cuda/device_line_search.h"
#include "formulations/quasi_newton/cuda/device_solver.h"

namespace contactlab::quasi_newton::gpu {

// Node partial sums: Σ|r|²/m, Σ m|v|², Σ|j|²/m, ½Σ m|v − v*|², a = Σ m|Δv|², b = Σ m Δv·(v − v*).
inline constexpr int kNodePartials = 6;
// Contact partial sums: Σ ℓ_c, then Σ −Δv_c·γ, Σ Δv_cᵀ G Δv_c (ℓ'(0), ℓ''(0) of the contacts).
inline constexpr int kContactPartials = 3;

// State shared by the kernels of one solve.
struct SolverState {
  int done;
  int stop;                     // DeviceStopReason
  int iterations;               // updates taken
  int line_search_evaluations;  // summed over iterations
  double step;                  // α of the pending update
  double cost;                  // ℓ_p at the last evaluation
  double gradient_norm;         // ‖M^-½ r‖ at the last evaluation
  double threshold;             // ε_a + ε_r max(‖M^½ v‖, ‖M^-½ j‖) at the last evaluation
};

// Read-only problem arrays (layout of HostProblemBuffers).
struct ProblemView {
  int node_count;
  int contact_count;
  const double* node_mass;
  const double* free_velocity;
  const int* stencil_node;
  const double* stencil_weight;
  const double* rotation;
  const double* bias;
  const double* parameters;
};

// Iteration arrays.
struct WorkView {
  double* velocity;           // [3][n]  v
  double* direction;          // [3][n]  Δv
  double* node_impulse;       // [3][n]  j_i accumulator, zero between iterations
  double* node_hessian;       // [6][n]  Σ w² R_WC G R_CW accumulator, zero between iterations
  double* contact_velocity;   // [3][nc] v_c
  double* contact_direction;  // [3][nc] Δv_c
  double* impulse;            // [3][nc] γ
  double* hessian;            // [6][nc] G
  SolverState* state;
  DeviceIterationRecord* history;
  int history_capacity;
};

// What the control step needs besides the sums.
struct ControlSettings {
  double relative_tolerance;
  double absolute_tolerance;
  int max_iterations;
  double outside_momentum_squared;
  LineSearchParameters line_search;
};

CONTACTLAB_HOST_DEVICE inline Vec3 LoadVec3(const double* a, int count, int i) {
  return {a[i], a[count + i], a[2 * count + i]};
}
CONTACTLAB_HOST_DEVICE inline void StoreVec3(double* a, int count, int i, const Vec3& v) {
  a[i] = v.x;
  a[count + i] = v.y;
  a[2 * count + i] = v.z;
}
CONTACTLAB_HOST_DEVICE inline Sym3 LoadSym3(const double* a, int count, int i) {
  return {a[i], a[count + i], a[2 * count + i], a[3 * count + i], a[4 * count + i], a[5 * count + i]};
}
CONTACTLAB_HOST_DEVICE inline void StoreSym3(double* a, int count, int i, const Sym3& s) {
  a[i] = s.xx;
  a[count + i] = s.xy;
  a[2 * count + i] = s.xz;
  a[3 * count + i] = s.yy;
  a[4 * count + i] = s.yz;
  a[5 * count + i] = s.zz;
}
CONTACTLAB_HOST_DEVICE inline Mat3 LoadRotation(const double* r, int count, int p) {
  Mat3 m;
  for (int k = 0; k < 9; ++k) m.m[k / 3][k % 3] = r[k * count + p];
  return m;
}

// Σ_s w_s u_{node(s)} over the stencil of contact p (the G2P of K1 and K6, no affine term).
CONTACTLAB_HOST_DEVICE inline Vec3 GatherFromNodes(const ProblemView& problem, const double* field, int p) {
  const int nc = problem.contact_count;
  Vec3 sum;
  for (int s = 0; s < kStencilSize; ++s) {
    const int node = problem.stencil_node[s * nc + p];
    if (node >= 0) sum = Add(sum, Scale(problem.stencil_weight[s * nc + p], LoadVec3(field, problem.node_count, node)));
  }
  return sum;
}

// What one contact scatters to its stencil nodes: w R_WC γ and w² R_WC G R_CW per node.
struct ContactScatter {
  double cost = 0.0;
  Vec3 world_impulse;  // R_WC γ
  Sym3 world_hessian;  // R_WC G R_CW
};

// K1 + K2 for contact p: v_c = R_CW Σ_i w_ip v_i + b_p, then ℓ_c, γ, G; stores v_c, γ, G.
template <DeviceContactModel kModel>
CONTACTLAB_HOST_DEVICE inline ContactScatter EvaluateContactStep(const ProblemView& problem, const WorkView& work,
                                                                 int p) {
  const int nc = problem.contact_count;
  const Mat3 rotation = LoadRotation(problem.rotation, nc, p);
  const Vec3 contact_velocity =
      Add(Multiply(rotation, GatherFromNodes(problem, work.velocity, p)), LoadVec3(problem.bias, nc, p));
  StoreVec3(work.contact_velocity, nc, p, contact_velocity);
  const DeviceContactParameters parameters = LoadContactParameters<kModel>(problem.parameters, nc, p);
  const DeviceContactEvaluation evaluation = EvaluateContact<kModel>(parameters, contact_velocity, true);
  StoreVec3(work.impulse, nc, p, evaluation.impulse);
  StoreSym3(work.hessian, nc, p, evaluation.hessian);
  ContactScatter scatter;
  scatter.cost = evaluation.cost;
  scatter.world_impulse = MultiplyTransposed(rotation, evaluation.impulse);
  scatter.world_hessian = RotateToWorld(rotation, evaluation.hessian);
  return scatter;
}

// The nine values contact p adds to the node of stencil slot s: w R_WC γ (3), then
// w² R_WC G R_CW (6, upper triangle).
CONTACTLAB_HOST_DEVICE inline void ScatterValues(const ContactScatter& scatter, double weight, double (&value)[9]) {
  const double weight_squared = weight * weight;
  value[0] = weight * scatter.world_impulse.x;
  value[1] = weight * scatter.world_impulse.y;
  value[2] = weight * scatter.world_impulse.z;
  value[3] = weight_squared * scatter.world_hessian.xx;
  value[4] = weight_squared * scatter.world_hessian.xy;
  value[5] = weight_squared * scatter.world_hessian.xz;
  value[6] = weight_squared * scatter.world_hessian.yy;
  value[7] = weight_squared * scatter.world_hessian.yz;
  value[8] = weight_squared * scatter.world_hessian.zz;
}

// Last lane of the run of equal keys that contains `lane`, given the bit mask of run heads
// (lanes whose key differs from the previous lane's; lane 0 always heads).
CONTACTLAB_HOST_DEVICE inline int RunEnd(unsigned heads, int lane) {
  const unsigned later_heads = lane == 31 ? 0u : heads & (0xffffffffu << (lane + 1));
  if (later_heads == 0u) return 31;
  int first_later = 0;  // index of the lowest set bit (the device uses __ffs)
  while (((later_heads >> first_later) & 1u) == 0u) ++first_later;
  return first_later - 1;
}

// K3 (r_i), K4 (node norms), K5 (Δv_i = −H_i⁻¹ r_i by 3 × 3 Cholesky) for node i; clears
// the node's accumulators; adds the node's terms to `sums`.
CONTACTLAB_HOST_DEVICE inline void NodeStep(const ProblemView& problem, const WorkView& work, int i,
                                            double (&sums)[kNodePartials]) {
  const int n = problem.node_count;
  const double mass = problem.node_mass[i];
  const Vec3 velocity = LoadVec3(work.velocity, n, i);
  const Vec3 velocity_change = Subtract(velocity, LoadVec3(problem.free_velocity, n, i));  // v − v*
  const Vec3 impulse = LoadVec3(work.node_impulse, n, i);                                  // j_i
  Sym3 hessian = LoadSym3(work.node_hessian, n, i);                                        // H_i − m_i I
  hessian.xx += mass;
  hessian.yy += mass;
  hessian.zz += mass;
  // Eq. 9: r_i = m_i (v_i − v*_i) − j_i; eq. 10 block: Δv_i = −H_i⁻¹ r_i.
  const Vec3 residual = Subtract(Scale(mass, velocity_change), impulse);
  const Vec3 direction = Scale(-1.0, CholeskySolve(hessian, residual));
  StoreVec3(work.direction, n, i, direction);
  StoreVec3(work.node_impulse, n, i, Vec3{});
  StoreSym3(work.node_hessian, n, i, Sym3{});
  sums[0] += SquaredNorm(residual) / mass;
  sums[1] += mass * SquaredNorm(velocity);
  sums[2] += SquaredNorm(impulse) / mass;
  sums[3] += 0.5 * mass * SquaredNorm(velocity_change);
  sums[4] += mass * SquaredNorm(direction);
  sums[5] += mass * Dot(direction, velocity_change);
}

// K6 for contact p: Δv_c = R_CW Σ_i w_ip Δv_i; adds −Δv_c·γ and Δv_cᵀ G Δv_c to sums[1], sums[2].
CONTACTLAB_HOST_DEVICE inline void DirectionStep(const ProblemView& problem, const WorkView& work, int p,
                                                 double (&sums)[kContactPartials]) {
  const int nc = problem.contact_count;
  const Mat3 rotation = LoadRotation(problem.rotation, nc, p);
  const Vec3 direction = Multiply(rotation, GatherFromNodes(problem, work.direction, p));
  StoreVec3(work.contact_direction, nc, p, direction);
  sums[1] += -Dot(direction, LoadVec3(work.impulse, nc, p));
  sums[2] += Dot(direction, Multiply(LoadSym3(work.hessian, nc, p), direction));
}

// K7's line function ℓ_p(v + α Δv) = ½‖v − v*‖²_M + b α + ½ a α² + Σ_p ℓ_c(v_c,p + α Δv_c,p),
// with ℓ' and ℓ''. Contacts first, first + stride, ... are summed by this thread; `reduce`
// then totals the three sums over all threads (a block reduction on the device, nothing on
// the host with stride 1), so every caller gets the same sample.
template <DeviceContactModel kModel, typename Reduce>
struct ContactLine {
  ProblemView problem;
  WorkView work;
  double mass_term;  // ½‖v − v*‖²_M
  double a;          // Δvᵀ M Δv
  double b;          // Δvᵀ M (v − v*)
  int first;
  int stride;
  Reduce reduce;

  CONTACTLAB_HOST_DEVICE LineSampleValue operator()(double step) {
    const int nc = problem.contact_count;
    double sums[3] = {0.0, 0.0, 0.0};
    for (int p = first; p < nc; p += stride) {
      const Vec3 direction = LoadVec3(work.contact_direction, nc, p);
      const Vec3 velocity = Add(LoadVec3(work.contact_velocity, nc, p), Scale(step, direction));
      const DeviceContactEvaluation evaluation =
          EvaluateContact<kModel>(LoadContactParameters<kModel>(problem.parameters, nc, p), velocity, true);
      sums[0] += evaluation.cost;
      sums[1] += -Dot(direction, evaluation.impulse);
      sums[2] += Dot(direction, Multiply(evaluation.hessian, direction));
    }
    reduce(sums);
    return {mass_term + step * b + 0.5 * step * step * a + sums[0], b + step * a + sums[1], a + sums[2]};
  }
};

// K4 and K7 given the totals of the node and contact sums of this iteration: the stopping
// test, then (when not stopping) the exact line search. Every thread of the control block
// calls it with the same arguments; only `writer` updates the state and history.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <typename Line>
CONTACTLAB_HOST_DEVICE inline void ControlStep(const ControlSettings& settings,
                                               const double (&node_sums)[kNodePartials],
                                               const double (&contact_sums)[kContactPartials], Line& line,
                                               const WorkView& work, int iteration, bool writer) {
  // K4 (spec Y1): ‖M^-½ r‖ < ε_a + ε_r max(‖M^½ v‖, ‖M^-½ j‖); nodes outside the problem add
  // their momentum to ‖M^½ v‖.
  const double gradient_norm = sqrt(node_sums[0]);
  const double momentum_norm = sqrt(node_sums[1] + settings.outside_momentum_squared);
  const double impulse_norm = sqrt(node_sums[2]);
  const double scale = momentum_norm > impulse_norm ? momentum_norm : impulse_norm;
  const double threshold = settings.absolute_tolerance + settings.relative_tolerance * scale;
  const double mass_term = node_sums[3];
  const double cost = mass_term + contact_sums[0];
  DeviceIterationRecord record;
  record.cost = cost;
  record.gradient_norm = gradient_norm;
  record.threshold = threshold;

  DeviceStopReason stop = DeviceStopReason::kRunning;
  if (gradient_norm < threshold) {
    stop = DeviceStopReason::kOptimality;
  } else if (iteration >= settings.max_iterations) {
    stop = DeviceStopReason::kMaxIterations;
  }
  LineSearchOutcome search;
  if (stop == DeviceStopReason::kRunning) {
    // K7: exact line search (spec §1.3.3) from the sample at α = 0.
    const double a = node_sums[4];
    const double b = node_sums[5];
    line.mass_term = mass_term;
    line.a = a;
    line.b = b;
    const LineSampleValue initial{cost, b + contact_sums[1], a + contact_sums[2]};
    search = RunExactLineSearch(line, initial, settings.line_search);
    record.step = search.step;
    record.line_search_evaluations = search.evaluations;
    if (!search.success) stop = DeviceStopReason::kLineSearch;
  }
  if (writer) {
    SolverState* state = work.state;
    state->cost = cost;
    state->gradient_norm = gradient_norm;
    state->threshold = threshold;
    state->line_search_evaluations += record.line_search_evaluations;
    if (iteration < work.history_capacity) work.history[iteration] = record;
    if (stop != DeviceStopReason::kRunning) {
      state->done = 1;
      state->stop = static_cast<int>(stop);
    } else {
      state->step = search.step;
      state->iterations = iteration + 1;
    }
  }
}

// K8 for node i: v_i ← v_i + α Δv_i.
CONTACTLAB_HOST_DEVICE inline void UpdateStep(const ProblemView& problem, const WorkView& work, int i, double step) {
  const int n = problem.node_count;
  for (int k = 0; k < 3; ++k) work.velocity[k * n + i] += step * work.direction[k * n + i];
}

}  // namespace contactlab::quasi_newton::gpu
