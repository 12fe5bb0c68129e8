#pragma once
// Warp-level reduction before atomics ([yu2025async] §V-A, after Gao et al. 2018; spec §6): in a
// scatter where each lane adds K values to node `key`, lanes are usually sorted so that runs
// of neighbouring lanes share a key. Each run is summed by a segmented suffix scan over
// shuffles and only its first lane (the "leader") performs the atomics. CUDA only.
#include "formulations/quasi_newton/cuda/device_solver_steps.h"

namespace contactlab::quasi_newton::gpu {

// Sums `value` over the run of equal `key` containing this lane (into the run's first lane)
// and returns whether this lane leads its run. With `aggregate` false every lane leads and
// keeps its own values. All 32 lanes of the warp must call it together.
template <int K>
__device__ inline bool WarpSegmentedSum(int key, double (&value)[K], bool aggregate) {
  constexpr unsigned kFullMask = 0xffffffffu;
  if (!aggregate) return true;
  const int lane = threadIdx.x & 31;
  // A lane heads a run when its key differs from the previous lane's.
  const int previous_key = __shfl_up_sync(kFullMask, key, 1);
  const bool leader = lane == 0 || key != previous_key;
  const unsigned heads = __ballot_sync(kFullMask, leader);
  if (heads == kFullMask) return true;  // all runs of length one
  const int last = RunEnd(heads, lane);
  const unsigned longest = __reduce_max_sync(kFullMask, static_cast<unsigned>(last - lane + 1));
  // Suffix sums within runs: after the pass with offset o a lane holds the sum of the next
  // 2o lanes of its run (or up to the run's end); the leader ends with the whole run.
  for (unsigned offset = 1; offset < longest; offset <<= 1) {
    for (int k = 0; k < K; ++k) {
      const double other = __shfl_down_sync(kFullMask, value[k], offset);
      if (lane + static_cast<int>(offset) <= last) value[k] += other;
    }
  }
  return leader;
}

}  // namespace contactlab::quasi_newton::gpu
