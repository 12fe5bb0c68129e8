#pragma once
// Reading back the scalar parts of a run file written by RunRecorder: root attributes,
// /summary and /params attributes and the /config text. Used by sweeps to decide whether a
// run is already complete and to tabulate finished runs.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "experiments/run_recorder.h"

namespace contactlab::experiments {

struct RunFileContents {
  std::map<std::string, std::string> root;        // schema, run_id, scenario, formulation, status, ...
  std::map<std::string, AttributeValue> summary;  // /summary
  std::map<std::string, AttributeValue> params;   // /params without "<key>.unit" and "<key>.rule"
  std::string config;                             // /config: the resolved TOML text
};

// Throws std::runtime_error naming the file when it is not a readable run file: missing,
// not a regular file, unreadable, not HDF5, or malformed (an attribute that is not a
// scalar string, integer or float; a missing group). The file is read in a child process,
// so a file that crashes or hangs the HDF5 library is reported as malformed, not fatal.
// A read that gives no answer within `timeout` is stopped and reported as such.
RunFileContents ReadRunFile(const std::filesystem::path& file,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace contactlab::experiments
