#include "experiments/sweep_records.h"

#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "experiments/config.h"
#include "experiments/file_safety.h"
#include "experiments/run_file.h"

namespace contactlab::experiments {

std::filesystem::path RunFilePath(const std::filesystem::path& out_dir, const std::string& run_id) {
  return out_dir / (run_id + ".h5");
}

std::filesystem::path FailureRecordPath(const std::filesystem::path& out_dir, const std::string& run_id) {
  return out_dir / (run_id + ".failed.json");
}

void WriteFailureRecord(const std::filesystem::path& out_dir, const ManifestEntry& entry, const std::string& message,
                        int exit_code) {
  nlohmann::ordered_json record;
  record["run_id"] = entry.run_id;
  record["index"] = entry.index;
  record["sweep"] = entry.sweep;
  record["scenario"] = entry.scenario;
  record["formulation"] = entry.formulation;
  record["status"] = "failed";
  record["message"] = message;
  record["exit_code"] = exit_code;
  WriteFileAtomically(FailureRecordPath(out_dir, entry.run_id),
                      record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

RunRecord LookupRecord(const std::filesystem::path& out_dir, const ManifestEntry& entry) {
  RunRecord record;
  const std::filesystem::path file = RunFilePath(out_dir, entry.run_id);
  std::error_code error;
  if (std::filesystem::exists(std::filesystem::symlink_status(file, error))) {
    try {
      RunFileContents contents = ReadRunFile(file);
      record.status = contents.root.count("status") ? contents.root["status"] : "ok";
      record.message = contents.root.count("message") ? contents.root["message"] : "";
      record.summary = std::move(contents.summary);
      record.params = std::move(contents.params);
      return record;
    } catch (const std::exception& error) {
      record.status = "failed";
      record.message = error.what();
      return record;
    }
  }
  const std::filesystem::path failure = FailureRecordPath(out_dir, entry.run_id);
  if (std::filesystem::exists(std::filesystem::symlink_status(failure, error))) {
    record.status = "failed";
    try {
      RequireReadableFile(failure, "failure record");
      std::ifstream in(failure);
      const nlohmann::json parsed = nlohmann::json::parse(in);
      const auto message = parsed.find("message");
      if (!parsed.is_object() || message == parsed.end() || !message->is_string()) throw InputError("no message");
      record.message = message->get<std::string>();
    } catch (const std::exception&) {
      record.message = failure.string() + ": unreadable failure record";
    }
    return record;
  }
  record.status = "missing";
  const auto partial = std::filesystem::symlink_status(file.string() + ".partial", error);
  record.message = std::filesystem::exists(partial) ? "partial file only: running or interrupted" : "not run";
  return record;
}

ResolvedRun ResolveManifestEntry(const ManifestEntry& entry) {
  ParameterSet parameters = DeclareParameters(entry.scenario, entry.formulation);
  const std::string origin = "manifest line " + std::to_string(entry.index);
  for (const auto& [key, value] : entry.parameters) parameters.Set(key, value, origin);
  const std::string run_id = RunId(ToToml(parameters, entry.scenario, entry.formulation));
  if (run_id != entry.run_id) {
    throw InputError(origin + ": resolves to run_id " + run_id + ", not its recorded " + entry.run_id +
                     " (a manifest from another contactlab version?); expand the sweep again");
  }
  return FinishResolution(entry.scenario, entry.formulation, std::move(parameters));
}

bool IsRunComplete(const std::filesystem::path& out_dir, const ResolvedRun& run) {
  const std::filesystem::path file = RunFilePath(out_dir, run.run_id);
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file, error))) return false;
  try {
    const RunFileContents contents = ReadRunFile(file);
    const auto id = contents.root.find("run_id");
    return id != contents.root.end() && id->second == run.run_id && contents.config == run.toml;
  } catch (const std::exception&) {
    return false;  // unreadable: run it again
  }
}

ManifestRunResult RunManifestEntry(const std::filesystem::path& manifest, int index,
                                   const std::filesystem::path& out_dir, bool quiet,
                                   const CheckpointOptions& checkpoint) {
  // A line that cannot be read has no run_id to record a failure under.
  const ManifestEntry entry = ReadManifestEntry(manifest, index);
  EnsureWritableFolder(out_dir, "output folder");
  ManifestRunResult result;
  result.file = RunFilePath(out_dir, entry.run_id);
  try {
    const ResolvedRun run = ResolveManifestEntry(entry);
    if (IsRunComplete(out_dir, run)) {
      const RunRecord record = LookupRecord(out_dir, entry);
      result.skipped = true;
      result.status = record.status;
      result.message = record.message;
      std::fprintf(stderr, "contactlab: %s is complete (status %s); skipped\n", result.file.string().c_str(),
                   record.status.c_str());
      return result;
    }
    const RunOutcome outcome = ExecuteResolvedRun(run, result.file.string(), quiet, checkpoint);
    if (outcome.status == RunStatus::kStopped) {
      result.status = "stopped";
      result.message = outcome.message;
      return result;  // not complete: the next attempt resumes it
    }
    result.status = outcome.status == RunStatus::kOk ? "ok" : "diverged";
    result.message = outcome.message;
  } catch (const InputError& error) {
    WriteFailureRecord(out_dir, entry, error.what(), 2);
    throw;
  } catch (const Interrupted&) {
    throw;  // not a failure of the run: it stays "missing" and runs again next time
  } catch (const std::exception& error) {
    WriteFailureRecord(out_dir, entry, std::string("internal error: ") + error.what(), 1);
    throw;
  }
  std::error_code ignored;
  std::filesystem::remove(FailureRecordPath(out_dir, entry.run_id), ignored);
  return result;
}

}  // namespace contactlab::experiments
