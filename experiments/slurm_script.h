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
  // Each run's --checkpoint-every: a node lost mid-run costs at most this much.
  std::string checkpoint_every = "30min";
  // Seconds before the time limit at which Slurm signals the task (--signal=B:USR1@N): the run
  // writes a checkpoint at its next step boundary, stops, and the task is requeued to resume.
  // It must exceed the longest step plus the checkpoint's write time; Slurm may signal up to a
  // minute earlier than asked.
  int signal_seconds = 300;
};

// The script text for `run_count` manifest lines.
std::string SlurmArrayScript(const SweepDefinition& sweep, int run_count, const SlurmOptions& options);

}  // namespace contactlab::experiments
