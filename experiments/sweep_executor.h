#pragma once
// `contactlab sweep run`: the local executor. Runs the manifest's lines as N child
// processes of this executable (`contactlab run --manifest ... --index I`), each writing its
// own log, shows progress over runs, records crashes the children could not record, and
// ends with a table of statuses and DIR/results.csv.
#include <filesystem>

#include "experiments/sweep.h"

namespace contactlab::experiments {

struct LocalExecutorOptions {
  int jobs = 1;                   // concurrent runs
  int threads_per_run = 0;        // OMP_NUM_THREADS of each run; 0: cores / jobs (at least 1),
                                  // unless OMP_NUM_THREADS is already set
  std::filesystem::path out_dir;  // manifest.jsonl, <run_id>.h5, logs/, results.csv
  // Each run's --checkpoint-every ("" for none). Runs always checkpoint when the sweep is
  // stopped by a signal, so a sweep run again resumes its unfinished runs.
  std::string checkpoint_every;
};

// Returns the number of runs that did not finish with status ok.
int RunSweepLocally(const SweepDefinition& sweep, const LocalExecutorOptions& options);

}  // namespace contactlab::experiments
