#pragma once
// What a sweep leaves in its output folder, one record per run, named by run_id:
//   <run_id>.h5           the run file (complete: RunRecorder renames it only when done)
//   <run_id>.failed.json  a run that could not produce a file (bad configuration, internal
//                         error, a crash noticed by the executor), with its message
// and how one manifest line is run into that folder, skipping runs already complete.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "experiments/run_driver.h"
#include "experiments/run_recorder.h"
#include "experiments/sweep.h"

namespace contactlab::experiments {

std::filesystem::path RunFilePath(const std::filesystem::path& out_dir, const std::string& run_id);
std::filesystem::path FailureRecordPath(const std::filesystem::path& out_dir, const std::string& run_id);

// Records that `entry` failed without a run file; replaces any earlier record.
void WriteFailureRecord(const std::filesystem::path& out_dir, const ManifestEntry& entry, const std::string& message,
                        int exit_code);

// The state of one run in an output folder.
struct RunRecord {
  std::string status;                             // ok | diverged | failed | missing
  std::string message;                            // the run's message, the failure, or why it is missing
  std::map<std::string, AttributeValue> summary;  // /summary of a run file (steps, wall_s, ...)
  std::map<std::string, AttributeValue> params;   // /params of a run file
};
RunRecord LookupRecord(const std::filesystem::path& out_dir, const ManifestEntry& entry);

// The manifest line's parameters resolved as `contactlab run` resolves them (validated).
// Throws InputError when the line does not resolve to its recorded run_id (a manifest from
// another version of contactlab) or a value is invalid.
ResolvedRun ResolveManifestEntry(const ManifestEntry& entry);

// True when <out_dir>/<run_id>.h5 is a complete run of exactly this configuration.
bool IsRunComplete(const std::filesystem::path& out_dir, const ResolvedRun& run);

struct ManifestRunResult {
  bool skipped = false;  // already complete; nothing was run
  std::string status;    // ok | diverged (of the file, also when skipped)
  std::string message;
  std::filesystem::path file;
};

// `contactlab run --manifest M --index I --out-dir DIR`: resolves line I, skips it when
// complete, else runs it into DIR/<run_id>.h5. A failure before the run file exists writes
// DIR/<run_id>.failed.json and rethrows (InputError for bad input).
// A run that was stopped with a checkpoint resumes from it (ExecuteResolvedRun).
ManifestRunResult RunManifestEntry(const std::filesystem::path& manifest, int index,
                                   const std::filesystem::path& out_dir, bool quiet,
                                   const CheckpointOptions& checkpoint = {});

}  // namespace contactlab::experiments
