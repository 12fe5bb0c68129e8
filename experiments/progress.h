#pragma once
// Progress of a run on stderr: one line updated in place on a terminal, a plain line every
// few seconds otherwise (logs, CI), and nothing when quiet.
#include <chrono>
#include <string>

namespace contactlab::experiments {

class ProgressReporter {
 public:
  ProgressReporter(std::string label, double end_time, bool quiet);
  void Update(double time, int step, int total_steps);
  void Finish(const std::string& outcome);

 private:
  std::string label_;
  double end_time_;
  bool quiet_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace contactlab::experiments
