#include "experiments/collect.h"

#include <algorithm>
#include <set>

#include "experiments/run_file.h"

namespace contactlab::experiments {
namespace {

const std::filesystem::path kManifestName = "manifest.jsonl";

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string FieldOf(const std::map<std::string, AttributeValue>& values, const std::string& key) {
  const auto found = values.find(key);
  return found == values.end() ? "" : CsvField(ToString(found->second));
}

// Rows of a folder without a manifest: every readable run file, by name.
CollectedTable CollectRunFiles(const std::filesystem::path& out_dir) {
  CollectedTable table;
  // Every "*.h5" entry is a row: one that is not a readable run file (a symbolic link loop,
  // a folder, a malformed file, no permission) is a "failed" row with the reason.
  std::vector<std::filesystem::path> files;
  std::error_code error;
  std::filesystem::directory_iterator item(out_dir, error), end;
  if (error) throw InputError(out_dir.string() + ": cannot list: " + error.message());
  for (; item != end; item.increment(error)) {
    if (error) throw InputError(out_dir.string() + ": cannot list: " + error.message());
    if (item->path().extension() == ".h5") files.push_back(item->path());
  }
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    CollectedRun run;
    try {
      RunFileContents contents = ReadRunFile(file);
      run.run_id = contents.root["run_id"];
      run.scenario = contents.root["scenario"];
      run.formulation = contents.root["formulation"];
      run.record.status = contents.root.count("status") ? contents.root["status"] : "ok";
      run.record.message = contents.root["message"];
      run.record.summary = std::move(contents.summary);
      run.record.params = std::move(contents.params);
    } catch (const std::exception& error) {
      run.run_id = file.stem().string();
      run.record.status = "failed";
      run.record.message = error.what();
    }
    table.runs.push_back(std::move(run));
  }
  // The swept keys are the parameters that differ between runs.
  std::map<std::string, std::set<std::string>> distinct;
  for (const CollectedRun& run : table.runs) {
    for (const auto& [key, value] : run.record.params) distinct[key].insert(ToString(value));
  }
  for (const auto& [key, values] : distinct) {
    std::size_t present = 0;
    for (const CollectedRun& run : table.runs) present += run.record.params.count(key);
    if (values.size() > 1 || (present > 0 && present < table.runs.size())) table.swept_keys.push_back(key);
  }
  for (CollectedRun& run : table.runs) {
    for (const std::string& key : table.swept_keys) {
      const auto found = run.record.params.find(key);
      if (found != run.record.params.end()) run.swept[key] = found->second;
    }
  }
  return table;
}

}  // namespace

CollectedTable CollectRuns(const std::filesystem::path& out_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(out_dir, error)) throw InputError(out_dir.string() + ": not a directory");
  const std::filesystem::path manifest = out_dir / kManifestName;
  if (!std::filesystem::exists(std::filesystem::symlink_status(manifest, error))) return CollectRunFiles(out_dir);

  CollectedTable table;
  for (const ManifestEntry& entry : ReadManifest(manifest)) {
    CollectedRun run;
    run.run_id = entry.run_id;
    run.index = entry.index;
    run.sweep = entry.sweep;
    run.scenario = entry.scenario;
    run.formulation = entry.formulation;
    for (const auto& [key, value] : entry.swept) {
      run.swept[key] = value;
      if (std::find(table.swept_keys.begin(), table.swept_keys.end(), key) == table.swept_keys.end()) {
        table.swept_keys.push_back(key);
      }
    }
    run.record = LookupRecord(out_dir, entry);
    table.runs.push_back(std::move(run));
  }
  return table;
}

std::vector<std::pair<std::filesystem::path, std::string>> CollectInputs(const std::filesystem::path& out_dir) {
  std::vector<std::pair<std::filesystem::path, std::string>> inputs = {{out_dir / kManifestName, "manifest"}};
  std::error_code error;
  std::filesystem::directory_iterator item(out_dir, error), end;
  for (; !error && item != end; item.increment(error)) {
    const std::string name = item->path().filename().string();
    const bool failure_record = name.size() > 12 && name.compare(name.size() - 12, 12, ".failed.json") == 0;
    if (item->path().extension() == ".h5" || failure_record) inputs.emplace_back(item->path(), "run file");
  }
  return inputs;
}

void WriteCsv(const CollectedTable& table, std::ostream& out) {
  // Columns: fixed identity, swept keys, fixed outcome, then the remaining summary names.
  std::vector<std::string> header = {"run_id", "index", "sweep", "scenario", "formulation"};
  header.insert(header.end(), table.swept_keys.begin(), table.swept_keys.end());
  for (const char* name : {"status", "message", "steps", "wall_s"}) header.push_back(name);
  std::set<std::string> taken(header.begin(), header.end());
  std::set<std::string> summary_names;
  for (const CollectedRun& run : table.runs) {
    for (const auto& [name, value] : run.record.summary) {
      if (name != "status" && name != "message" && name != "steps" && name != "wall_s") summary_names.insert(name);
    }
  }
  std::vector<std::pair<std::string, std::string>> summary_columns;  // (column, summary name)
  for (const std::string& name : summary_names) {
    summary_columns.emplace_back(taken.count(name) ? "summary." + name : name, name);
  }

  for (std::size_t c = 0; c < header.size(); ++c) out << (c ? "," : "") << CsvField(header[c]);
  for (const auto& [column, name] : summary_columns) out << "," << CsvField(column);
  out << "\n";
  for (const CollectedRun& run : table.runs) {
    out << CsvField(run.run_id) << "," << (run.index ? std::to_string(*run.index) : "") << "," << CsvField(run.sweep)
        << "," << CsvField(run.scenario) << "," << CsvField(run.formulation);
    for (const std::string& key : table.swept_keys) {
      const auto found = run.swept.find(key);
      out << "," << (found == run.swept.end() ? "" : CsvField(ToString(found->second)));
    }
    out << "," << CsvField(run.record.status) << "," << CsvField(run.record.message) << ","
        << FieldOf(run.record.summary, "steps") << "," << FieldOf(run.record.summary, "wall_s");
    for (const auto& [column, name] : summary_columns) out << "," << FieldOf(run.record.summary, name);
    out << "\n";
  }
}

}  // namespace contactlab::experiments
