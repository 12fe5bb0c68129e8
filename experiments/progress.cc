#include "experiments/progress.h"

#include <unistd.h>

#include <cstdio>

namespace contactlab::experiments {

ProgressReporter::ProgressReporter(std::string label, double end_time, bool quiet)
    : label_(std::move(label)),
      end_time_(end_time),
      quiet_(quiet),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void ProgressReporter::Update(double time, int step, int total_steps) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (since_print < (terminal_ ? 0.2 : 5.0) && step != total_steps) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double fraction = total_steps > 0 ? static_cast<double>(step) / total_steps : 1.0;
  const double remaining = fraction > 0.0 ? elapsed * (1.0 - fraction) / fraction : 0.0;
  std::fprintf(stderr, "%s[%s] t = %.4g / %.4g s  step %d/%d  %.1f s elapsed, ~%.1f s left%s", terminal_ ? "\r" : "",
               label_.c_str(), time, end_time_, step, total_steps, elapsed, remaining, terminal_ ? "   " : "\n");
  std::fflush(stderr);
}

void ProgressReporter::Finish(const std::string& outcome) {
  if (quiet_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "%s[%s] %s after %.2f s\n", terminal_ ? "\r" : "", label_.c_str(), outcome.c_str(), elapsed);
}

}  // namespace contactlab::experiments
