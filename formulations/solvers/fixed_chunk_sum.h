#pragma once
// Deterministic parallel sums (spec-sap-qn §6.1 "Determinism"): the terms are summed in
// chunks of a fixed size, each chunk in order by one thread, and the chunk totals are then
// added in order. The grouping depends only on the number of terms, so the result is
// bitwise the same for any number of OpenMP threads.
#include <vector>

namespace contactlab::solvers {

inline constexpr int kSumChunkSize = 256;

// Σ_{i < count} term(i), with `zero` the additive identity of Value (double, an Eigen
// fixed-size vector, ...). Small sums (one chunk) run on the calling thread.
template <typename Value, typename Term>
Value FixedChunkSum(int count, const Value& zero, Term&& term) {
  const int chunks = (count + kSumChunkSize - 1) / kSumChunkSize;
  if (chunks <= 1) {
    Value total = zero;
    for (int i = 0; i < count; ++i) total += term(i);
    return total;
  }
  std::vector<Value> partial(chunks, zero);
#pragma omp parallel for schedule(static)
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int end = (chunk + 1) * kSumChunkSize < count ? (chunk + 1) * kSumChunkSize : count;
    Value sum = zero;
    for (int i = chunk * kSumChunkSize; i < end; ++i) sum += term(i);
    partial[chunk] = sum;
  }
  Value total = zero;
  for (const Value& sum : partial) total += sum;
  return total;
}

}  // namespace contactlab::solvers
