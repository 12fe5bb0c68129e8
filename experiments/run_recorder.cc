#include "experiments/run_recorder.h"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

#include "experiments/file_safety.h"

namespace contactlab::experiments {
namespace {

constexpr const char* kSchema = "contactlab-run/1";

// An HDF5 call failed. Finish adds the file name to the message and removes the partial file.
class Hdf5Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most specific message on HDF5's error stack ("unable to open file: ... errno = 2"),
// which is clearer than the API-level one; clears the stack.
std::string Hdf5Detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* error, void* data) -> herr_t {
        auto& text = *static_cast<std::string*>(data);
        if (text.empty() && error->desc != nullptr) text = error->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

// The path of an open group or file inside the file ("/" for the root), for messages.
std::string ObjectPath(hid_t object) {
  const ssize_t length = H5Iget_name(object, nullptr, 0);
  if (length <= 0) return "?";
  std::string name(static_cast<std::size_t>(length) + 1, '\0');
  H5Iget_name(object, name.data(), name.size());
  name.resize(static_cast<std::size_t>(length));
  return name;
}

// Throws Hdf5Error for a failed call on `what` (e.g. "attribute 'mu'") inside `location`.
// The error stack is read first: any further HDF5 call (H5Iget_name too) clears it.
[[noreturn]] void Fail(hid_t location, const std::string& what) {
  const std::string detail = Hdf5Detail();
  std::string message = "cannot write " + what;
  if (location >= 0) message += " in " + ObjectPath(location);
  if (!detail.empty()) message += " (HDF5: " + detail + ")";
  throw Hdf5Error(message);
}

// Passes a non-negative identifier or status through; a negative one is a failure.
template <typename Status>
Status Check(Status status, hid_t location, const std::string& what) {
  if (status < 0) Fail(location, what);
  return status;
}

// Owns one HDF5 identifier and releases it with the matching close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle& operator=(Handle&&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  // Closes now; false when HDF5 reports a failure (closing a file flushes it).
  bool Close() { return close_(std::exchange(id_, H5I_INVALID_HID)) >= 0; }

 private:
  hid_t id_;
  Closer close_;
};

// The on-disk (little-endian, as the schema fixes them) and in-memory types of T.
template <typename T>
std::pair<hid_t, hid_t> ElementTypes() {
  if constexpr (std::is_same_v<T, double>) {
    return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return {H5T_STD_I64LE, H5T_NATIVE_INT64};
  } else {
    static_assert(std::is_same_v<T, std::int8_t>);
    return {H5T_STD_I8LE, H5T_NATIVE_INT8};
  }
}

// A variable-length UTF-8 string type, which h5py reads back as str.
Handle StringType(hid_t location, const std::string& what) {
  Handle type(Check(H5Tcopy(H5T_C_S1), location, what), H5Tclose);
  Check(H5Tset_size(type.get(), H5T_VARIABLE), location, what);
  Check(H5Tset_cset(type.get(), H5T_CSET_UTF8), location, what);
  return type;
}

Handle CreateGroup(hid_t parent, const std::string& name) {
  const std::string what = "group '" + name + "'";
  return Handle(Check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), parent, what), H5Gclose);
}

// Creates a scalar attribute of `file_type` and writes `value` given as `memory_type`.
void WriteRawAttribute(hid_t location, const std::string& name, hid_t file_type, hid_t memory_type, const void* value) {
  const std::string what = "attribute '" + name + "'";
  Handle space(Check(H5Screate(H5S_SCALAR), location, what), H5Sclose);
  Handle attribute(
      Check(H5Acreate2(location, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), location, what),
      H5Aclose);
  Check(H5Awrite(attribute.get(), memory_type, value), location, what);
}

void WriteStringAttribute(hid_t location, const std::string& name, const std::string& value) {
  const Handle type = StringType(location, "attribute '" + name + "'");
  const char* text = value.c_str();
  WriteRawAttribute(location, name, type.get(), type.get(), &text);
}

template <typename T>
void WriteNumberAttribute(hid_t location, const std::string& name, T value) {
  const auto [file_type, memory_type] = ElementTypes<T>();
  WriteRawAttribute(location, name, file_type, memory_type, &value);
}

// A one-dimensional float64 attribute (a position, a quaternion).
void WriteArrayAttribute(hid_t location, const std::string& name, const std::vector<double>& values) {
  const std::string what = "attribute '" + name + "'";
  const hsize_t size = values.size();
  Handle space(Check(H5Screate_simple(1, &size, nullptr), location, what), H5Sclose);
  Handle attribute(
      Check(H5Acreate2(location, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), location, what),
      H5Aclose);
  Check(H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, values.data()), location, what);
}

// A parameter or summary value as the schema stores it: bool as int8 0/1, int64, float64,
// or string.
void WriteValueAttribute(hid_t location, const std::string& name, const AttributeValue& value) {
  if (const bool* flag = std::get_if<bool>(&value)) {
    WriteNumberAttribute(location, name, static_cast<std::int8_t>(*flag ? 1 : 0));
  } else if (const std::int64_t* integer = std::get_if<std::int64_t>(&value)) {
    WriteNumberAttribute(location, name, *integer);
  } else if (const double* real = std::get_if<double>(&value)) {
    WriteNumberAttribute(location, name, *real);
  } else {
    WriteStringAttribute(location, name, std::get<std::string>(value));
  }
}

// Writes `data` (row-major) as a dataset of the given shape; zero rows give an empty dataset.
template <typename T>
void WriteDataset(hid_t location, const std::string& name, const std::vector<T>& data,
                  const std::vector<hsize_t>& shape) {
  const std::string what = "dataset '" + name + "'";
  const auto [file_type, memory_type] = ElementTypes<T>();
  Handle space(Check(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr), location, what),
               H5Sclose);
  Handle dataset(
      Check(H5Dcreate2(location, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), location,
            what),
      H5Dclose);
  if (!data.empty()) {
    Check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), location, what);
  }
}

template <typename T>
void WriteDataset1D(hid_t location, const std::string& name, const std::vector<T>& data) {
  WriteDataset(location, name, data, {data.size()});
}

// A one-dimensional dataset of variable-length UTF-8 strings.
void WriteStringDataset1D(hid_t location, const std::string& name, const std::vector<std::string>& data) {
  const std::string what = "dataset '" + name + "'";
  const Handle type = StringType(location, what);
  const hsize_t size = data.size();
  Handle space(Check(H5Screate_simple(1, &size, nullptr), location, what), H5Sclose);
  Handle dataset(
      Check(H5Dcreate2(location, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            location, what),
      H5Dclose);
  std::vector<const char*> text;
  text.reserve(data.size());
  for (const std::string& entry : data) text.push_back(entry.c_str());
  if (!text.empty())
    Check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), location, what);
}

// "a,b,c": the names of an enum's members in code order, for the attribute beside a column
// that stores the members as integers.
template <typename Enum>
std::string EnumNames(int count) {
  std::string names;
  for (int k = 0; k < count; ++k) names += std::string(k > 0 ? "," : "") + ToString(static_cast<Enum>(k));
  return names;
}

void WriteDataset2D(hid_t location, const std::string& name, const std::vector<double>& data, std::size_t columns) {
  WriteDataset(location, name, data, {data.size() / columns, columns});
}

// Writes one group per series under a new group `group_name` (/timeseries or /analytic).
void WriteSeriesGroup(hid_t file, const std::string& group_name, const auto& table) {
  const Handle group = CreateGroup(file, group_name);
  for (const auto& [name, series] : table) {
    const Handle series_group = CreateGroup(group.get(), name);
    WriteDataset1D(series_group.get(), "time", series.times);
    if (series.columns.empty()) {
      WriteDataset1D(series_group.get(), "value", series.values);
    } else {
      WriteDataset2D(series_group.get(), "value", series.values, series.columns.size());
    }
    WriteStringAttribute(series_group.get(), "unit", series.unit);
    WriteStringAttribute(series_group.get(), "description", series.description);
    if (!series.columns.empty()) {
      std::string joined;
      for (const std::string& column : series.columns) {
        joined += (joined.empty() ? "" : ",") + column;
      }
      WriteStringAttribute(series_group.get(), "columns", joined);
    }
  }
}

// /bodies: one group per body (/bodies/<i>, i its row in the snapshots' body arrays) with one
// group per geometry (/bodies/<i>/<j>).
void WriteBodies(hid_t file, const std::vector<BodyDescription>& bodies) {
  const Handle group = CreateGroup(file, "bodies");
  WriteNumberAttribute(group.get(), "count", static_cast<std::int64_t>(bodies.size()));
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const BodyDescription& body = bodies[i];
    const Handle body_group = CreateGroup(group.get(), std::to_string(i));
    WriteStringAttribute(body_group.get(), "name", body.name);
    WriteStringAttribute(body_group.get(), "motion", body.motion);
    WriteNumberAttribute(body_group.get(), "geometry_count", static_cast<std::int64_t>(body.geometries.size()));
    for (std::size_t j = 0; j < body.geometries.size(); ++j) {
      const GeometryDescription& geometry = body.geometries[j];
      const Handle geometry_group = CreateGroup(body_group.get(), std::to_string(j));
      WriteStringAttribute(geometry_group.get(), "shape", geometry.shape);
      WriteArrayAttribute(geometry_group.get(), "position", geometry.position);
      WriteArrayAttribute(geometry_group.get(), "orientation", geometry.orientation);
      if (geometry.shape == "box") {
        WriteArrayAttribute(geometry_group.get(), "half_extents", geometry.half_extents);
      }
      if (geometry.shape == "sphere" || geometry.shape == "cylinder") {
        WriteNumberAttribute(geometry_group.get(), "radius", geometry.radius);
      }
      if (geometry.shape == "cylinder") {
        WriteNumberAttribute(geometry_group.get(), "half_height", geometry.half_height);
      }
    }
  }
}

// /snapshots: one group per snapshot (/snapshots/<k>) with its attributes and datasets.
void WriteSnapshots(hid_t file, const std::vector<Snapshot>& snapshots) {
  const Handle group = CreateGroup(file, "snapshots");
  WriteNumberAttribute(group.get(), "count", static_cast<std::int64_t>(snapshots.size()));
  for (std::size_t k = 0; k < snapshots.size(); ++k) {
    const Snapshot& snapshot = snapshots[k];
    const Handle snapshot_group = CreateGroup(group.get(), std::to_string(k));
    WriteNumberAttribute(snapshot_group.get(), "time", snapshot.time);
    WriteNumberAttribute(snapshot_group.get(), "step", snapshot.step);
    const hsize_t n = snapshot.particles;
    const hsize_t b = snapshot.bodies;
    WriteDataset(snapshot_group.get(), "position", snapshot.position, {n, 3});
    if (!snapshot.velocity.empty()) WriteDataset(snapshot_group.get(), "velocity", snapshot.velocity, {n, 3});
    if (!snapshot.deformation_gradient.empty()) {
      WriteDataset(snapshot_group.get(), "deformation_gradient", snapshot.deformation_gradient, {n, 9});
    }
    if (!snapshot.plastic_strain.empty()) {
      WriteDataset(snapshot_group.get(), "plastic_strain", snapshot.plastic_strain, {n});
    }
    WriteDataset(snapshot_group.get(), "body_position", snapshot.body_position, {b, 3});
    WriteDataset(snapshot_group.get(), "body_orientation", snapshot.body_orientation, {b, 4});
  }
  // The sidecar's Polyvertex connectivity, 0..n-1 for each particle and body count n.
  const Handle xdmf = CreateGroup(file, "xdmf");
  for (const std::size_t count : PolyvertexCounts(snapshots)) {
    std::vector<std::int64_t> indices(count);
    for (std::size_t i = 0; i < count; ++i) indices[i] = static_cast<std::int64_t>(i);
    WriteDataset1D(file, PolyvertexDataset(count), indices);
  }
}

// Adds an empty series to `table`; `kind` ("time series", "analytic series") names it in
// errors. Names become HDF5 group names and columns are stored comma-joined, so both are
// checked here rather than failing at Finish.
void DeclareIn(auto& table, const std::string& kind, const std::string& name, const std::string& unit,
               const std::string& description, const std::vector<std::string>& columns) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    throw std::logic_error("RunRecorder: invalid " + kind + " name '" + name + "'");
  }
  for (const std::string& column : columns) {
    if (column.empty() || column.find(',') != std::string::npos) {
      throw std::logic_error("RunRecorder: " + kind + " '" + name + "' has invalid column name '" + column + "'");
    }
  }
  const auto [entry, inserted] = table.try_emplace(name);
  if (!inserted) throw std::logic_error("RunRecorder: " + kind + " '" + name + "' declared twice");
  entry->second.unit = unit;
  entry->second.description = description;
  entry->second.columns = columns;
}

// True when `sidecar` is an XDMF file that points into the HDF5 file named `h5_file_name`:
// the only kind of file at "<stem>.xdmf" a run may remove (a name with XML special
// characters is escaped in the sidecar and not recognized: such a stale sidecar stays).
bool IsSidecarOf(const std::filesystem::path& sidecar, const std::string& h5_file_name) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(sidecar, error))) return false;
  std::ifstream in(sidecar);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find("<Xdmf") != std::string::npos && head.find(">" + h5_file_name + ":/") != std::string::npos;
}

}  // namespace

RunRecorder::RunRecorder(std::filesystem::path final_path) : final_path_(std::move(final_path)) {
  // The output location is checked, and the partial file reserved, before any work: an
  // unwritable folder, a folder or device named as the file, or a name too long fails now,
  // not after the simulation. Only an earlier HDF5 file (or an empty file) is replaced: a
  // scene file or anything else named by mistake is kept.
  CheckOutputPath(final_path_, "run file");
  std::error_code error;
  const auto status = std::filesystem::symlink_status(final_path_, error);
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(final_path_, error) > 0) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (H5Fis_hdf5(final_path_.c_str()) <= 0) {
      throw InputError(final_path_.string() +
                       ": refusing to replace it with a run file: it exists and is not an HDF5 file (a scene file?)");
    }
  }
  RemoveStaleFile(partial_path());
  CreateFileExclusively(partial_path(), "");
}

RunRecorder::~RunRecorder() {
  // A run that never finished must not leave a file behind.
  if (!finished_) {
    RemoveStaleFile(partial_path());
    RemoveStaleFile(std::filesystem::path(xdmf_path()).concat(".partial"));
  }
}

std::filesystem::path RunRecorder::partial_path() const {
  return std::filesystem::path(final_path_).concat(".partial");
}

std::filesystem::path RunRecorder::xdmf_path() const {
  std::filesystem::path xdmf = std::filesystem::path(final_path_).replace_extension(".xdmf");
  // Never the run file itself (a run file named "RUN.xdmf").
  return xdmf == final_path_ ? std::filesystem::path(final_path_).concat(".xdmf") : xdmf;
}

void RunRecorder::SetRootAttribute(const std::string& name, const std::string& value) {
  root_attributes_[name] = value;
}

void RunRecorder::SetConfiguration(const std::string& toml_text, const ParameterSet& parameters) {
  config_text_ = toml_text;
  parameter_values_ = parameters.values();
  parameter_units_.clear();
  for (const auto& [key, spec] : parameters.specs()) {
    if (!spec.unit.empty()) parameter_units_[key] = spec.unit;
  }
}

void RunRecorder::SetUsedParameters(const std::vector<UsedParameter>& used) {
  for (const UsedParameter& parameter : used) {
    if (!parameter.choice.empty()) {
      SetSummary(parameter.key + ".used", parameter.choice);
    } else {
      SetSummary(parameter.key + ".used", parameter.value);
      if (parameter.smallest != parameter.value) SetSummary(parameter.key + ".used_smallest", parameter.smallest);
    }
    used_rules_[parameter.key + ".rule"] = parameter.rule;
  }
}

void RunRecorder::DeclareSeries(const std::string& name, const std::string& unit, const std::string& description,
                                const std::vector<std::string>& columns) {
  DeclareIn(series_, "time series", name, unit, description, columns);
}

void RunRecorder::AppendSeries(const std::string& name, double time, const std::vector<double>& value) {
  Append(series_, "time series", name, time, value);
}

void RunRecorder::DeclareAnalytic(const std::string& name, const std::string& unit, const std::string& description,
                                  const std::vector<std::string>& columns) {
  DeclareIn(analytic_, "analytic series", name, unit, description, columns);
}

void RunRecorder::AppendAnalytic(const std::string& name, double time, const std::vector<double>& value) {
  Append(analytic_, "analytic series", name, time, value);
}

void RunRecorder::Append(std::map<std::string, Series>& table, const std::string& kind, const std::string& name,
                         double time, const std::vector<double>& value) {
  const auto found = table.find(name);
  if (found == table.end()) {
    throw std::logic_error("RunRecorder: " + kind + " '" + name + "' was not declared");
  }
  Series& series = found->second;
  const std::size_t width = std::max<std::size_t>(1, series.columns.size());
  if (value.size() != width) {
    throw std::logic_error("RunRecorder: " + kind + " '" + name + "' takes " + std::to_string(width) +
                           " components per sample, got " + std::to_string(value.size()));
  }
  series.times.push_back(time);
  series.values.insert(series.values.end(), value.begin(), value.end());
}

void RunRecorder::AppendSolverLog(double time, const StepReport& report, double wall_seconds) {
  solver_log_.push_back({time, report, wall_seconds});
  // The per-body wrenches are not part of the solver log; do not keep them for every step
  // (iteration records are, when a formulation logged them).
  solver_log_.back().report.contact_wrench = std::vector<BodyWrench>();
  solver_log_.back().report.contact_forces = std::vector<ContactForce>();
}

void RunRecorder::VisitState(StateArchive& archive) {
  const StateArchive::Scope scope(archive, "recorder");
  // Root attributes as name and value columns (a map is not plain bytes).
  std::vector<std::string> names, values;
  for (const auto& [name, value] : root_attributes_) {
    names.push_back(name);
    values.push_back(value);
  }
  archive("root_attribute_names", names);
  archive("root_attribute_values", values);
  if (archive.loading()) {
    if (names.size() != values.size()) archive.Fail("root_attribute_values", "has not one value per name");
    for (std::size_t k = 0; k < names.size(); ++k) root_attributes_[names[k]] = values[k];
  }
  VisitSeries(archive, "series", series_);
  VisitSeries(archive, "analytic", analytic_);
  VisitSolverLog(archive);
  VisitSnapshots(archive);
  // The summary: one record per attribute, its type's index first.
  std::vector<std::string> summary_names;
  for (const auto& [name, value] : summary_) summary_names.push_back(name);
  archive("summary_names", summary_names);
  const StateArchive::Scope summary_scope(archive, "summary");
  for (const std::string& name : summary_names) {
    AttributeValue& value = summary_[name];
    std::uint8_t type = static_cast<std::uint8_t>(value.index());
    archive(name + "/type", type);
    if (archive.loading()) {
      switch (type) {
        case 0:
          value = false;
          break;
        case 1:
          value = std::int64_t{0};
          break;
        case 2:
          value = 0.0;
          break;
        case 3:
          value = std::string();
          break;
        default:
          archive.Fail(name + "/type", "names no attribute type");
      }
    }
    std::visit([&](auto& held) { archive(name + "/value", held); }, value);
  }
}

void RunRecorder::VisitSeries(StateArchive& archive, const std::string& kind, std::map<std::string, Series>& table) {
  const StateArchive::Scope scope(archive, kind);
  std::vector<std::string> names;
  for (const auto& [name, series] : table) names.push_back(name);
  archive.Expect("names", names);
  for (auto& [name, series] : table) {
    const std::size_t width = std::max<std::size_t>(1, series.columns.size());
    archive(name + "/times", series.times);
    archive(name + "/values", series.values);
    if (archive.loading() && series.values.size() != series.times.size() * width) {
      archive.Fail(name + "/values", "does not hold " + std::to_string(width) + " values per time");
    }
  }
}

void RunRecorder::VisitSolverLog(StateArchive& archive) {
  const StateArchive::Scope scope(archive, "solver_log");
  // Columns: one entry per step, per solve, per kept iteration.
  std::vector<double> times, wall_seconds, max_penetration, residual;
  std::vector<std::array<int, 6>> counters;  // contacts, rigid, walls, outer, linear, substeps
  std::vector<std::uint8_t> converged;
  std::vector<Timings> timings;
  std::vector<std::uint64_t> solves_per_step, history_per_solve;
  std::vector<std::int8_t> solve_kind, termination;
  std::vector<std::array<int, 4>> solve_counters;   // index, iterations, line search, linear
  std::vector<std::array<double, 3>> solve_values;  // residual, momentum bound, cost
  std::vector<solvers::SolverTimeSplit> solve_seconds;
  std::vector<std::string> solver, message;
  std::vector<solvers::SolverIterationRecord> history;
  for (const SolverLogRow& row : solver_log_) {
    const StepReport& report = row.report;
    times.push_back(row.time);
    wall_seconds.push_back(row.wall_seconds);
    max_penetration.push_back(report.max_penetration);
    residual.push_back(report.residual);
    counters.push_back({report.contacts, report.rigid_contacts, report.grid_boundary_nodes, report.outer_iterations,
                        report.linear_iterations, report.substeps});
    converged.push_back(report.converged ? 1 : 0);
    timings.push_back(report.timings);
    solves_per_step.push_back(report.solves.size());
    for (const SolveRecord& solve : report.solves) {
      const solvers::SolverSummary& summary = solve.summary;
      solve_kind.push_back(static_cast<std::int8_t>(solve.kind));
      termination.push_back(static_cast<std::int8_t>(summary.termination));
      solve_counters.push_back(
          {solve.index, summary.iterations, summary.line_search_evaluations, summary.linear_iterations});
      solve_values.push_back({summary.residual, summary.momentum_residual_bound, summary.cost});
      solve_seconds.push_back(summary.seconds);
      solver.push_back(solve.solver);
      message.push_back(summary.message);
      history_per_solve.push_back(summary.history.size());
      history.insert(history.end(), summary.history.begin(), summary.history.end());
    }
  }
  archive("time", times);
  archive("wall_s", wall_seconds);
  archive("max_penetration", max_penetration);
  archive("residual", residual);
  archive("counters", counters);
  archive("converged", converged);
  archive("timings", timings);
  archive("solves_per_step", solves_per_step);
  archive("solve_kind", solve_kind);
  archive("solve_termination", termination);
  archive("solve_counters", solve_counters);
  archive("solve_values", solve_values);
  archive("solve_seconds", solve_seconds);
  archive("solver", solver);
  archive("message", message);
  archive("history_per_solve", history_per_solve);
  archive("history", history);
  if (archive.saving()) return;
  const std::size_t steps = times.size();
  for (const std::size_t size : {wall_seconds.size(), max_penetration.size(), residual.size(), counters.size(),
                                 converged.size(), timings.size(), solves_per_step.size()}) {
    if (size != steps) archive.Fail("time", "and the other per-step columns differ in length");
  }
  const std::size_t solves = solve_kind.size();
  for (const std::size_t size : {termination.size(), solve_counters.size(), solve_values.size(), solve_seconds.size(),
                                 solver.size(), message.size(), history_per_solve.size()}) {
    if (size != solves) archive.Fail("solve_kind", "and the other per-solve columns differ in length");
  }
  solver_log_.clear();
  std::size_t next_solve = 0, next_record = 0;
  for (std::size_t step = 0; step < steps; ++step) {
    SolverLogRow row{times[step], StepReport{}, wall_seconds[step]};
    StepReport& report = row.report;
    const std::array<int, 6>& counts = counters[step];
    report.contacts = counts[0];
    report.rigid_contacts = counts[1];
    report.grid_boundary_nodes = counts[2];
    report.outer_iterations = counts[3];
    report.linear_iterations = counts[4];
    report.substeps = counts[5];
    report.max_penetration = max_penetration[step];
    report.residual = residual[step];
    report.converged = converged[step] != 0;
    report.timings = timings[step];
    if (solves_per_step[step] > solves - next_solve) archive.Fail("solves_per_step", "counts more solves than stored");
    for (std::uint64_t k = 0; k < solves_per_step[step]; ++k, ++next_solve) {
      if (solve_kind[next_solve] < 0 || solve_kind[next_solve] >= kNumSolveKinds || termination[next_solve] < 0 ||
          termination[next_solve] >= solvers::kNumTerminations) {
        archive.Fail("solve_kind", "holds a kind or termination out of range");
      }
      SolveRecord record;
      record.kind = static_cast<SolveKind>(solve_kind[next_solve]);
      record.solver = solver[next_solve];
      solvers::SolverSummary& summary = record.summary;
      summary.termination = static_cast<solvers::Termination>(termination[next_solve]);
      summary.message = message[next_solve];
      const std::array<int, 4>& solve_counts = solve_counters[next_solve];
      record.index = solve_counts[0];
      summary.iterations = solve_counts[1];
      summary.line_search_evaluations = solve_counts[2];
      summary.linear_iterations = solve_counts[3];
      const std::array<double, 3>& values = solve_values[next_solve];
      summary.residual = values[0];
      summary.momentum_residual_bound = values[1];
      summary.cost = values[2];
      summary.seconds = solve_seconds[next_solve];
      const std::uint64_t records = history_per_solve[next_solve];
      if (records > history.size() - next_record) archive.Fail("history_per_solve", "counts more records than stored");
      summary.history.assign(history.begin() + static_cast<std::ptrdiff_t>(next_record),
                             history.begin() + static_cast<std::ptrdiff_t>(next_record + records));
      next_record += records;
      report.solves.push_back(std::move(record));
    }
    solver_log_.push_back(std::move(row));
  }
  if (next_solve != solves || next_record != history.size()) {
    archive.Fail("solves_per_step", "leaves stored solves or records unclaimed");
  }
}

void RunRecorder::VisitSnapshots(StateArchive& archive) {
  const StateArchive::Scope scope(archive, "snapshots");
  std::uint64_t count = snapshots_.size();
  archive("count", count);
  if (archive.loading()) {
    if (count > 1000000) archive.Fail("count", "is not a snapshot count");
    snapshots_.assign(count, Snapshot{});
  }
  for (std::size_t k = 0; k < snapshots_.size(); ++k) {
    Snapshot& snapshot = snapshots_[k];
    const StateArchive::Scope snapshot_scope(archive, std::to_string(k));
    archive("step", snapshot.step);
    archive("time", snapshot.time);
    archive("particles", snapshot.particles);
    archive("bodies", snapshot.bodies);
    archive("position", snapshot.position);
    archive("velocity", snapshot.velocity);
    archive("deformation_gradient", snapshot.deformation_gradient);
    archive("plastic_strain", snapshot.plastic_strain);
    archive("body_position", snapshot.body_position);
    archive("body_orientation", snapshot.body_orientation);
  }
  if (archive.saving()) return;
  // The checks AppendSnapshot makes.
  std::vector<Snapshot> loaded;
  loaded.swap(snapshots_);
  for (Snapshot& snapshot : loaded) {
    try {
      AppendSnapshot(std::move(snapshot));
    } catch (const std::logic_error& error) {
      archive.Fail("count", std::string("holds a snapshot that does not fit: ") + error.what());
    }
  }
}

void RunRecorder::SetBodies(std::vector<BodyDescription> bodies) {
  bodies_ = std::move(bodies);
  has_bodies_ = true;
}

void RunRecorder::AppendSnapshot(Snapshot snapshot) {
  const std::size_t n = snapshot.particles;
  const std::size_t b = snapshot.bodies;
  const auto sized = [](const std::vector<double>& data, std::size_t size, bool optional) {
    return data.size() == size || (optional && data.empty());
  };
  if (!sized(snapshot.position, 3 * n, false) || !sized(snapshot.velocity, 3 * n, true) ||
      !sized(snapshot.deformation_gradient, 9 * n, true) || !sized(snapshot.plastic_strain, n, true) ||
      !sized(snapshot.body_position, 3 * b, false) || !sized(snapshot.body_orientation, 4 * b, false)) {
    throw std::logic_error("RunRecorder: snapshot at step " + std::to_string(snapshot.step) +
                           " has arrays that do not match its particle and body counts");
  }
  if (!snapshots_.empty() && !(snapshot.time > snapshots_.back().time)) {
    throw std::logic_error("RunRecorder: snapshot at step " + std::to_string(snapshot.step) +
                           " is not later than the previous one");
  }
  snapshots_.push_back(std::move(snapshot));
}

void RunRecorder::SetSummary(const std::string& name, const AttributeValue& value) {
  summary_[name] = value;
}

void RunRecorder::Finish(const std::string& status, const std::string& message, int steps, double wall_seconds) {
  if (finished_) {
    throw std::logic_error("RunRecorder: Finish called twice for '" + final_path_.string() + "'");
  }
  if (status != "ok" && status != "diverged" && status != "failed") {
    throw std::logic_error("RunRecorder: unknown status '" + status + "' for '" + final_path_.string() + "'");
  }
  const std::filesystem::path partial = partial_path();
  const std::filesystem::path xdmf = xdmf_path();
  const std::filesystem::path xdmf_partial = std::filesystem::path(xdmf).concat(".partial");
  try {
    if (final_path_.has_parent_path()) {
      std::filesystem::create_directories(final_path_.parent_path());
    }
    // The file is built in memory (HDF5's core driver without a backing store) and written
    // with one checked write: a full disk or a file size limit is then an error of ours,
    // and HDF5 never holds a file it failed to flush (HDF5 1.10 crashes at exit on one).
    std::string image;
    {
      // Failures are reported through exceptions, not printed by HDF5.
      H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
      const Handle in_memory(Check(H5Pcreate(H5P_FILE_ACCESS), H5I_INVALID_HID, "file access list"), H5Pclose);
      Check(H5Pset_fapl_core(in_memory.get(), std::size_t{4} << 20, /*backing_store=*/0), H5I_INVALID_HID,
            "in-memory file driver");
      Handle file(
          Check(H5Fcreate(partial.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, in_memory.get()), H5I_INVALID_HID, "file"),
          H5Fclose);

      // Root attributes: the driver's, then the ones the recorder owns.
      std::map<std::string, std::string> root = root_attributes_;
      root["schema"] = kSchema;
      root["status"] = status;
      root["message"] = message;
      for (const auto& [name, value] : root) WriteStringAttribute(file.get(), name, value);

      // /config: the resolved TOML text as one scalar string.
      {
        const std::string what = "dataset 'config'";
        const Handle type = StringType(file.get(), what);
        const Handle space(Check(H5Screate(H5S_SCALAR), file.get(), what), H5Sclose);
        const Handle dataset(
            Check(H5Dcreate2(file.get(), "config", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  file.get(), what),
            H5Dclose);
        const char* text = config_text_.c_str();
        Check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), file.get(), what);
      }

      // /params: one attribute per parameter, plus "<key>.unit" where the unit is known.
      {
        const Handle params = CreateGroup(file.get(), "params");
        for (const auto& [key, value] : parameter_values_) {
          WriteValueAttribute(params.get(), key, value);
          const auto unit = parameter_units_.find(key);
          if (unit != parameter_units_.end()) {
            WriteStringAttribute(params.get(), key + ".unit", unit->second);
          }
        }
        for (const auto& [name, rule] : used_rules_) WriteStringAttribute(params.get(), name, rule);
      }

      // /timeseries always; /analytic only when the scenario has a reference solution.
      WriteSeriesGroup(file.get(), "timeseries", series_);
      if (!analytic_.empty()) WriteSeriesGroup(file.get(), "analytic", analytic_);

      // /solver_log: one column dataset per field, one row per step.
      {
        const Handle log = CreateGroup(file.get(), "solver_log");
        // write(name, value_of) gathers value_of(row) over all rows into one dataset.
        const auto write = [&](const char* name, auto value_of) {
          std::vector<decltype(value_of(solver_log_.front()))> column;
          column.reserve(solver_log_.size());
          for (const SolverLogRow& row : solver_log_) column.push_back(value_of(row));
          WriteDataset1D(log.get(), name, column);
        };
        const auto counter = [](int StepReport::*field) {
          return [field](const SolverLogRow& row) { return std::int64_t{row.report.*field}; };
        };
        const auto timing = [](double Timings::*phase) {
          return [phase](const SolverLogRow& row) { return row.report.timings.*phase; };
        };
        write("time", [](const SolverLogRow& row) { return row.time; });
        write("contacts", counter(&StepReport::contacts));
        write("rigid_contacts", counter(&StepReport::rigid_contacts));
        write("grid_boundary_nodes", counter(&StepReport::grid_boundary_nodes));
        write("outer_iterations", counter(&StepReport::outer_iterations));
        write("linear_iterations", counter(&StepReport::linear_iterations));
        write("substeps", counter(&StepReport::substeps));
        write("residual", [](const SolverLogRow& row) { return row.report.residual; });
        write("converged",
              [](const SolverLogRow& row) { return static_cast<std::int8_t>(row.report.converged ? 1 : 0); });
        write("wall_s", [](const SolverLogRow& row) { return row.wall_seconds; });
        write("timing_free_motion", timing(&Timings::free_motion));
        write("timing_detection", timing(&Timings::detection));
        write("timing_assembly", timing(&Timings::assembly));
        write("timing_solve", timing(&Timings::solve));
        write("timing_g2p", timing(&Timings::g2p));
        write("timing_rigid", timing(&Timings::rigid));
      }

      // /solver_log/solves: one row per solve of every step in the shared solver-summary
      // shape (solvers/solver_summary.h), keyed by the step's end time, the solve's kind and
      // its index among the step's solves of that kind.
      {
        std::vector<double> time, residual, momentum_residual_bound, cost, seconds_total, seconds_linear_solve,
            seconds_line_search;
        std::vector<std::int8_t> kind, termination, converged;
        std::vector<std::int64_t> index, iterations, line_search_evaluations, linear_iterations;
        std::vector<std::string> solver, message;
        for (const SolverLogRow& row : solver_log_) {
          for (const SolveRecord& solve : row.report.solves) {
            const solvers::SolverSummary& summary = solve.summary;
            time.push_back(row.time);
            kind.push_back(static_cast<std::int8_t>(solve.kind));
            index.push_back(solve.index);
            solver.push_back(solve.solver);
            termination.push_back(static_cast<std::int8_t>(summary.termination));
            converged.push_back(summary.converged() ? 1 : 0);
            message.push_back(summary.message);
            iterations.push_back(summary.iterations);
            line_search_evaluations.push_back(summary.line_search_evaluations);
            linear_iterations.push_back(summary.linear_iterations);
            residual.push_back(summary.residual);
            momentum_residual_bound.push_back(summary.momentum_residual_bound);
            cost.push_back(summary.cost);
            seconds_total.push_back(summary.seconds.total);
            seconds_linear_solve.push_back(summary.seconds.linear_solve);
            seconds_line_search.push_back(summary.seconds.line_search);
          }
        }
        const Handle solves = CreateGroup(file.get(), "solver_log/solves");
        WriteStringAttribute(solves.get(), "kind_names", EnumNames<SolveKind>(kNumSolveKinds));
        WriteStringAttribute(solves.get(), "termination_names",
                             EnumNames<solvers::Termination>(solvers::kNumTerminations));
        WriteDataset1D(solves.get(), "time", time);
        WriteDataset1D(solves.get(), "kind", kind);
        WriteDataset1D(solves.get(), "index", index);
        WriteStringDataset1D(solves.get(), "solver", solver);
        WriteDataset1D(solves.get(), "termination", termination);
        WriteDataset1D(solves.get(), "converged", converged);
        WriteStringDataset1D(solves.get(), "message", message);
        WriteDataset1D(solves.get(), "iterations", iterations);
        WriteDataset1D(solves.get(), "line_search_evaluations", line_search_evaluations);
        WriteDataset1D(solves.get(), "linear_iterations", linear_iterations);
        WriteDataset1D(solves.get(), "residual", residual);
        WriteDataset1D(solves.get(), "momentum_residual_bound", momentum_residual_bound);
        WriteDataset1D(solves.get(), "cost", cost);
        WriteDataset1D(solves.get(), "seconds_total", seconds_total);
        WriteDataset1D(solves.get(), "seconds_linear_solve", seconds_linear_solve);
        WriteDataset1D(solves.get(), "seconds_line_search", seconds_line_search);
      }

      // /solver_log/iterations: per-iteration records of the solves whose history was kept
      // (output.log_iterations), one row per iterate, keyed like /solver_log/solves.
      {
        std::vector<double> time, residual, threshold, cost, step;
        std::vector<std::int8_t> kind;
        std::vector<std::int64_t> solve, iteration, line_search_evaluations, linear_iterations;
        for (const SolverLogRow& row : solver_log_) {
          for (const SolveRecord& record : row.report.solves) {
            for (const solvers::SolverIterationRecord& entry : record.summary.history) {
              time.push_back(row.time);
              kind.push_back(static_cast<std::int8_t>(record.kind));
              solve.push_back(record.index);
              iteration.push_back(entry.iteration);
              residual.push_back(entry.residual);
              threshold.push_back(entry.threshold);
              cost.push_back(entry.cost);
              step.push_back(entry.step);
              line_search_evaluations.push_back(entry.line_search_evaluations);
              linear_iterations.push_back(entry.linear_iterations);
            }
          }
        }
        if (!time.empty()) {
          const Handle iterations = CreateGroup(file.get(), "solver_log/iterations");
          WriteStringAttribute(iterations.get(), "kind_names", EnumNames<SolveKind>(kNumSolveKinds));
          WriteDataset1D(iterations.get(), "time", time);
          WriteDataset1D(iterations.get(), "kind", kind);
          WriteDataset1D(iterations.get(), "solve", solve);
          WriteDataset1D(iterations.get(), "iteration", iteration);
          WriteDataset1D(iterations.get(), "residual", residual);
          WriteDataset1D(iterations.get(), "threshold", threshold);
          WriteDataset1D(iterations.get(), "cost", cost);
          WriteDataset1D(iterations.get(), "step", step);
          WriteDataset1D(iterations.get(), "line_search_evaluations", line_search_evaluations);
          WriteDataset1D(iterations.get(), "linear_iterations", linear_iterations);
        }
      }

      // /summary: the scenario's attributes, then the ones Finish owns.
      {
        std::map<std::string, AttributeValue> summary = summary_;
        summary["steps"] = static_cast<std::int64_t>(steps);
        summary["wall_s"] = wall_seconds;
        summary["status"] = status;
        summary["message"] = message;
        const Handle group = CreateGroup(file.get(), "summary");
        for (const auto& [name, value] : summary) WriteValueAttribute(group.get(), name, value);
      }

      // /bodies when the driver described them; /snapshots only when there are any.
      if (has_bodies_) WriteBodies(file.get(), bodies_);
      if (!snapshots_.empty()) WriteSnapshots(file.get(), snapshots_);

      // Every object above is closed; the image is the complete file.
      Check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), H5I_INVALID_HID, "file (flush)");
      const ssize_t size = Check(H5Fget_file_image(file.get(), nullptr, 0), H5I_INVALID_HID, "file image");
      image.resize(static_cast<std::size_t>(size));
      Check(H5Fget_file_image(file.get(), image.data(), image.size()), H5I_INVALID_HID, "file image");
      if (!file.Close()) Fail(H5I_INVALID_HID, "file (close)");
    }
    // Our reservation of the partial file is replaced by the image, created exclusively so
    // that nothing planted there in the meantime is followed.
    RemoveStaleFile(partial);
    CreateFileExclusively(partial, image);
    // The XDMF sidecar refers to the HDF5 file by its final name, relative to itself.
    if (!snapshots_.empty()) {
      RemoveStaleFile(xdmf_partial);
      CreateFileExclusively(xdmf_partial, XdmfText(snapshots_, final_path_.filename().string()));
    }
    // Only a complete file takes the final name, replacing any earlier one (or a symbolic
    // link there) atomically; the sidecar follows it, and a sidecar an earlier run of this
    // file left without snapshots goes (any other file at that name stays).
    std::filesystem::rename(partial, final_path_);
    if (!snapshots_.empty()) {
      std::filesystem::rename(xdmf_partial, xdmf);
    } else if (IsSidecarOf(xdmf, final_path_.filename().string())) {
      std::filesystem::remove(xdmf);
    }
  } catch (const Hdf5Error& error) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    std::filesystem::remove(xdmf_partial, ignored);
    throw std::runtime_error("RunRecorder: '" + partial.string() + "': " + error.what());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    std::filesystem::remove(xdmf_partial, ignored);
    throw;
  }
  finished_ = true;
}

}  // namespace contactlab::experiments
