#pragma once
// `contactlab collect DIR`: one table of every run in a sweep's output folder. With
// DIR/manifest.jsonl each manifest line is one row (status "missing" when nothing was
// recorded); without it, every run file in DIR is a row and the swept keys are the
// parameters whose values differ between the runs.
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "experiments/sweep_records.h"

namespace contactlab::experiments {

struct CollectedRun {
  std::string run_id;
  std::optional<int> index;  // manifest index
  std::string sweep, scenario, formulation;
  std::map<std::string, ParameterValue> swept;
  RunRecord record;
};

struct CollectedTable {
  std::vector<std::string> swept_keys;  // manifest order, or sorted when inferred
  std::vector<CollectedRun> runs;
};

CollectedTable CollectRuns(const std::filesystem::path& out_dir);

// What CollectRuns reads in `out_dir`: its manifest, run files and failure records, each with
// what it is, for RequireNotAnInput (`collect -o` never replaces one).
std::vector<std::pair<std::filesystem::path, std::string>> CollectInputs(const std::filesystem::path& out_dir);

// RFC 4180 CSV: run_id, index, sweep, scenario, formulation, the swept keys, status,
// message, steps, wall_s, then every other /summary attribute by name (prefixed
// "summary." where a name collides with an earlier column).
void WriteCsv(const CollectedTable& table, std::ostream& out);

}  // namespace contactlab::experiments
