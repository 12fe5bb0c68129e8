#pragma once
// Reading back the scalar parts of a run file written by RunRecorder: root attributes,
// /summary and /params attributes and the /config text. Used by sweeps to decide whether a
// run is already complete and to tabulate finished runs.
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

// Throws std::runtime_error naming the file when it is not a readable run file.
RunFileContents ReadRunFile(const std::filesystem::path& file);

}  // namespace contactlab::experiments
