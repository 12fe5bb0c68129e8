#pragma once
// `contactlab sweep slurm`: a Slurm job-array script for a sweep's manifest. One array task
// runs one manifest line (`contactlab run --manifest M --index $SLURM_ARRAY_TASK_ID`), so a
// cluster runs the same contract as the local executor and Snakemake; resubmitting the
// script after a partial failure reruns only what is not complete.
#include <filesystem>
#include <string>

#include "experiments/sweep.h"

namespace contactlab::experiments {

struct SlurmOptions {
  std::filesystem::path out_dir;        // manifest.jsonl, run files, logs/
  std::filesystem::path executable;     // the contactlab binary the tasks call
  int max_concurrent = 16;              // the %K of --array: tasks running at once
  int cpus_per_task = 2;                // also each run's OMP_NUM_THREADS
  std::string time_limit = "02:00:00";  // per task, Slurm's D-HH:MM:SS forms
  std::string memory = "4G";            // per task
  std::string partition;                // empty: the cluster's default
};

// The script text for `run_count` manifest lines.
std::string SlurmArrayScript(const SweepDefinition& sweep, int run_count, const SlurmOptions& options);

}  // namespace contactlab::experiments
