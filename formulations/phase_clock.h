#pragma once
// The clock every formulation times its step phases with (StepReport::timings, solver time
// splits): a monotonic wall clock and the seconds elapsed since a start point.
#include <chrono>

namespace contactlab {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace contactlab
