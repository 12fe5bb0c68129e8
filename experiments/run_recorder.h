#pragma once
// Writes one HDF5 file per run following the schema in README.md ("What every run
// writes"). Everything is buffered in memory and written by Finish(); the file is created
// as "<path>.partial" and renamed to <path> only when complete, so an interrupted run never
// leaves a file that looks valid. A recorder destroyed without Finish() removes its partial
// file. When the run has snapshots, Finish also writes the XDMF sidecar "<stem>.xdmf" next to
// the HDF5 file, the same way ("<stem>.xdmf.partial", renamed after the HDF5 file).
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "experiments/snapshots.h"
#include "formulations/formulation.h"
#include "formulations/parameters.h"

namespace contactlab::experiments {

// A scalar attribute value written to /summary or the root.
using AttributeValue = std::variant<bool, std::int64_t, double, std::string>;

class RunRecorder {
 public:
  explicit RunRecorder(std::filesystem::path final_path);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Root attributes (schema, run_id, scenario, formulation, git_commit, compiler,
  // started_utc are set by the driver; status and message by Finish).
  void SetRootAttribute(const std::string& name, const std::string& value);
  // A root attribute set so far; empty when it is not.
  std::string root_attribute(const std::string& name) const {
    const auto found = root_attributes_.find(name);
    return found == root_attributes_.end() ? "" : found->second;
  }
  // The resolved configuration as TOML text (/config) and its scalar parameters (/params).
  void SetConfiguration(const std::string& toml_text, const ParameterSet& parameters);

  // Declares a time series /timeseries/<name> with `columns` components per sample
  // (names given for multi-component series, e.g. {"x","y","z"}).
  void DeclareSeries(const std::string& name, const std::string& unit, const std::string& description,
                     const std::vector<std::string>& columns = {});
  // Appends one sample; value.size() must equal the declared column count (1 if none).
  void AppendSeries(const std::string& name, double time, const std::vector<double>& value);
  // The same for the reference solution /analytic/<name>.
  void DeclareAnalytic(const std::string& name, const std::string& unit, const std::string& description,
                       const std::vector<std::string>& columns = {});
  void AppendAnalytic(const std::string& name, double time, const std::vector<double>& value);

  // One row of /solver_log per step.
  void AppendSolverLog(double time, const StepReport& report, double wall_seconds);

  // The static description of the rigid bodies (/bodies), drawn with the snapshot poses.
  void SetBodies(std::vector<BodyDescription> bodies);
  // One snapshot /snapshots/<k>, k counting from 0 in call order; times must increase.
  void AppendSnapshot(Snapshot snapshot);
  std::size_t snapshot_count() const { return snapshots_.size(); }

  // What the formulation derived for its "auto" keys: /summary "<key>.used" (and
  // "<key>.used_smallest" where the value adapted during the run), /params "<key>.rule".
  void SetUsedParameters(const std::vector<UsedParameter>& used);

  // /summary attributes (steps, wall_s and status are written by Finish).
  void SetSummary(const std::string& name, const AttributeValue& value);

  // Saves or loads, for a checkpoint (formulations/state_archive.h), what the run has recorded
  // so far: the root attributes, every declared series' samples, the solver log, the
  // snapshots and the summary. The declarations themselves (series, configuration, bodies)
  // are made again by the resumed run before loading, and loading checks that the
  // checkpoint's series are the ones declared.
  void VisitState(StateArchive& archive);

  // Writes everything, closes the file and renames it to its final path.
  // status: "ok" | "diverged" | "failed".
  void Finish(const std::string& status, const std::string& message, int steps, double wall_seconds);

  const std::filesystem::path& final_path() const { return final_path_; }
  std::filesystem::path partial_path() const;
  // "<stem>.xdmf" next to the HDF5 file; written only when the run has snapshots.
  std::filesystem::path xdmf_path() const;

 private:
  struct Series {
    std::string unit, description;
    std::vector<std::string> columns;
    std::vector<double> times;
    std::vector<double> values;  // row-major, times.size() x max(1, columns.size())
  };
  struct SolverLogRow {
    double time;
    StepReport report;
    double wall_seconds;
  };
  static void VisitSeries(StateArchive& archive, const std::string& kind, std::map<std::string, Series>& table);
  void VisitSolverLog(StateArchive& archive);
  void VisitSnapshots(StateArchive& archive);
  static void Append(std::map<std::string, Series>& table, const std::string& kind, const std::string& name,
                     double time, const std::vector<double>& value);

  std::filesystem::path final_path_;
  bool finished_ = false;
  std::map<std::string, std::string> root_attributes_;
  std::string config_text_;
  std::map<std::string, ParameterValue> parameter_values_;
  std::map<std::string, std::string> parameter_units_;
  std::map<std::string, std::string> used_rules_;  // "<key>.rule" attributes of /params
  std::map<std::string, Series> series_;
  std::map<std::string, Series> analytic_;
  std::vector<SolverLogRow> solver_log_;
  std::map<std::string, AttributeValue> summary_;
  bool has_bodies_ = false;
  std::vector<BodyDescription> bodies_;
  std::vector<Snapshot> snapshots_;
};

}  // namespace contactlab::experiments
