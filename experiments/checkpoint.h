#pragma once
// Checkpoint files: the state of a run between two steps (formulations/state_archive.h), from
// which `contactlab run` resumes bit for bit.
//
// Layout (native byte order; read back only by the build that wrote it):
//   "CLCKPT1\n"                              8 bytes
//   record count                             u64
//   per record: name length u64, name, size u64, bytes
//   digest of everything above               u64
// The run keeps two: "<run>.h5.checkpoint" and the one before it,
// "<run>.h5.checkpoint.previous". Each is written as "<name>.partial", flushed to disk and
// renamed, so a process killed at any moment leaves at least one whole checkpoint.
//
// A checkpoint is an input like any other: a truncated, corrupted or foreign file is an
// InputError with one line naming it.
#include <filesystem>
#include <optional>
#include <string>

#include "formulations/state_archive.h"

namespace contactlab::experiments {

inline constexpr const char* kCheckpointSchema = "contactlab-checkpoint/1";

// "<run>.checkpoint" and "<run>.checkpoint.previous" beside the run file.
std::filesystem::path CheckpointPath(const std::filesystem::path& run_file);
std::filesystem::path PreviousCheckpointPath(const std::filesystem::path& run_file);

// The newest whole checkpoint of `run_file`: the current one, else the previous one (a
// process killed between the two renames of a write leaves only that); none when neither
// exists.
std::optional<std::filesystem::path> FindCheckpoint(const std::filesystem::path& run_file);

// Writes `records` as the current checkpoint of `run_file`, the current one becoming the
// previous one; returns its size in bytes. Throws InputError when the folder cannot take it
// (full disk).
std::size_t WriteCheckpoint(const std::filesystem::path& run_file, const StateArchive::Records& records);

// The records of the checkpoint file `path`; InputError naming it when it is not a whole
// checkpoint (wrong magic, truncated, digest mismatch, malformed record table).
StateArchive::Records ReadCheckpoint(const std::filesystem::path& path);

// Removes both checkpoints of `run_file` (the run has finished and written its file).
void RemoveCheckpoints(const std::filesystem::path& run_file);

// The digest stored at the end of a checkpoint: Fnv1a64 of everything before it.
std::uint64_t CheckpointDigest(std::string_view bytes);

// A wall-time or step interval for --checkpoint-every: "200" (steps), "90s", "30min", "2h".
struct CheckpointInterval {
  int steps = 0;         // 0: not by steps
  double seconds = 0.0;  // 0: not by wall time
  bool enabled() const { return steps > 0 || seconds > 0.0; }
};
// Parses the option's text; InputError naming --checkpoint-every for anything else.
CheckpointInterval ParseCheckpointInterval(const std::string& text);

}  // namespace contactlab::experiments
