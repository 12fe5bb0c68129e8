// Records a small run with RunRecorder and reads the file back with the HDF5 C API, checking
// every object, type, shape and attribute of the run-file schema; also checks that only
// finished runs leave a file and that misuse of series is rejected.
#include "experiments/run_recorder.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace contactlab::experiments {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class RunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("contactlab_run_recorder_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

// Read-back helpers: each opens, reads and closes one object, failing the test on errors.
std::string ReadStringAttribute(hid_t object, const std::string& name) {
  const hid_t attribute = H5Aopen(object, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(attribute, 0) << name;
  if (attribute < 0) return "<missing>";
  const hid_t file_type = H5Aget_type(attribute);
  EXPECT_EQ(H5Tget_class(file_type), H5T_STRING) << name;
  EXPECT_GT(H5Tis_variable_str(file_type), 0) << name;
  EXPECT_EQ(H5Tget_cset(file_type), H5T_CSET_UTF8) << name;
  H5Tclose(file_type);
  const hid_t memory_type = H5Tcopy(H5T_C_S1);
  H5Tset_size(memory_type, H5T_VARIABLE);
  H5Tset_cset(memory_type, H5T_CSET_UTF8);
  char* text = nullptr;
  EXPECT_GE(H5Aread(attribute, memory_type, &text), 0) << name;
  std::string value = text != nullptr ? text : "";
  H5free_memory(text);
  H5Tclose(memory_type);
  H5Aclose(attribute);
  return value;
}

// Reads a numeric scalar attribute and checks its on-disk class and size.
template <typename T>
T ReadNumberAttribute(hid_t object, const std::string& name, H5T_class_t expected_class) {
  T value{};
  const hid_t attribute = H5Aopen(object, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(attribute, 0) << name;
  if (attribute < 0) return value;
  const hid_t file_type = H5Aget_type(attribute);
  EXPECT_EQ(H5Tget_class(file_type), expected_class) << name;
  EXPECT_EQ(H5Tget_size(file_type), sizeof(T)) << name;
  H5Tclose(file_type);
  hid_t memory_type = H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) memory_type = H5T_NATIVE_INT64;
  if constexpr (std::is_same_v<T, std::int8_t>) memory_type = H5T_NATIVE_INT8;
  EXPECT_GE(H5Aread(attribute, memory_type, &value), 0) << name;
  H5Aclose(attribute);
  return value;
}

double ReadDoubleAttribute(hid_t object, const std::string& name) {
  return ReadNumberAttribute<double>(object, name, H5T_FLOAT);
}
std::int64_t ReadIntegerAttribute(hid_t object, const std::string& name) {
  return ReadNumberAttribute<std::int64_t>(object, name, H5T_INTEGER);
}
std::int8_t ReadFlagAttribute(hid_t object, const std::string& name) {
  return ReadNumberAttribute<std::int8_t>(object, name, H5T_INTEGER);
}

bool HasAttribute(hid_t object, const std::string& name) {
  return H5Aexists(object, name.c_str()) > 0;
}

// A dataset's values (row-major) and shape, checking its on-disk class and element size.
template <typename T>
struct Dataset {
  std::vector<T> values;
  std::vector<hsize_t> shape;
};

template <typename T>
Dataset<T> ReadDataset(hid_t location, const std::string& name) {
  Dataset<T> result;
  const hid_t dataset = H5Dopen2(location, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << name;
  if (dataset < 0) return result;
  const hid_t file_type = H5Dget_type(dataset);
  EXPECT_EQ(H5Tget_class(file_type), std::is_floating_point_v<T> ? H5T_FLOAT : H5T_INTEGER) << name;
  EXPECT_EQ(H5Tget_size(file_type), sizeof(T)) << name;
  H5Tclose(file_type);
  const hid_t space = H5Dget_space(dataset);
  result.shape.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, result.shape.data(), nullptr);
  result.values.resize(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Sclose(space);
  hid_t memory_type = H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) memory_type = H5T_NATIVE_INT64;
  if constexpr (std::is_same_v<T, std::int8_t>) memory_type = H5T_NATIVE_INT8;
  if (!result.values.empty()) {
    EXPECT_GE(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, result.values.data()), 0) << name;
  }
  H5Dclose(dataset);
  return result;
}

std::string ReadStringDataset(hid_t location, const std::string& name) {
  const hid_t dataset = H5Dopen2(location, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << name;
  if (dataset < 0) return "<missing>";
  const hid_t space = H5Dget_space(dataset);
  EXPECT_EQ(H5Sget_simple_extent_type(space), H5S_SCALAR) << name;
  H5Sclose(space);
  const hid_t file_type = H5Dget_type(dataset);
  EXPECT_GT(H5Tis_variable_str(file_type), 0) << name;
  EXPECT_EQ(H5Tget_cset(file_type), H5T_CSET_UTF8) << name;
  H5Tclose(file_type);
  const hid_t memory_type = H5Tcopy(H5T_C_S1);
  H5Tset_size(memory_type, H5T_VARIABLE);
  H5Tset_cset(memory_type, H5T_CSET_UTF8);
  char* text = nullptr;
  EXPECT_GE(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), 0) << name;
  std::string value = text != nullptr ? text : "";
  H5free_memory(text);
  H5Tclose(memory_type);
  H5Dclose(dataset);
  return value;
}

// One solver-log row whose fields all differ from row to row.
StepReport MakeReport(int row) {
  StepReport report;
  report.contacts = 10 + row;
  report.outer_iterations = 20 + row;
  report.linear_iterations = 30 + row;
  report.substeps = 1 + row;
  report.residual = 1e-8 * (row + 1);
  report.converged = row != 1;
  report.contact_wrench.resize(2);
  report.timings = {0.1 + row, 0.2 + row, 0.3 + row, 0.4 + row, 0.5 + row, 0.6 + row};
  return report;
}

ParameterSet MakeParameters() {
  ParameterSet parameters;
  parameters.Declare({
      {"mu", 0.3, "1", "Coulomb friction coefficient.", nullptr},
      {"hybrid_impulse.cfl", 0.5, "1", "Courant number of the impulse exchange.", nullptr},
      {"grid.cells", std::int64_t{64}, "1", "Cells along each axis.", nullptr},
      {"box.size", 0.25, "m", "Edge length of the box.", nullptr},
      {"hybrid_impulse.warm_start", true, "", "Reuse last step's impulses.", nullptr},
      {"contact.model", std::string("sap_cone"), "", "Contact model.", nullptr},
  });
  parameters.Set("mu", 0.4, "test");
  return parameters;
}

TEST_F(RunRecorderTest, WritesEveryObjectOfTheSchema) {
  const fs::path path = directory_ / "run.h5";
  {
    RunRecorder recorder(path);
    recorder.SetRootAttribute("run_id", "run-0001");
    recorder.SetRootAttribute("scenario", "sliding_box");
    recorder.SetRootAttribute("formulation", "hybrid_impulse");
    recorder.SetRootAttribute("git_commit", "abcdef123456");
    recorder.SetRootAttribute("compiler", "GNU 12.2.0");
    recorder.SetRootAttribute("started_utc", "2024-05-01T12:00:00Z");
    recorder.SetConfiguration("mu = 0.4\n[hybrid_impulse]\ncfl = 0.5\n", MakeParameters());

    // Two series (scalar and 3-component) and one analytic reference.
    recorder.DeclareSeries("energy", "J", "Total energy.");
    recorder.DeclareSeries("box_position", "m", "Box centre of mass.", {"x", "y", "z"});
    recorder.DeclareAnalytic("box_position_x", "m", "Closed-form sliding distance.");
    for (int sample = 0; sample < 4; ++sample) {
      const double time = 0.01 * sample;
      recorder.AppendSeries("energy", time, {100.0 - sample});
      recorder.AppendSeries("box_position", time, {1.0 * sample, 2.0 * sample, 3.0 * sample});
      recorder.AppendAnalytic("box_position_x", time, {0.5 * sample});
    }
    for (int row = 0; row < 3; ++row) {
      recorder.AppendSolverLog(0.01 * row, MakeReport(row), 0.7 + row);
    }

    recorder.SetSummary("settled", true);
    recorder.SetSummary("max_contacts", std::int64_t{12});
    recorder.SetSummary("final_error", 1.5e-3);
    recorder.SetSummary("note", std::string("within tolerance"));
    recorder.Finish("ok", "completed", 3, 2.5);
  }
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(fs::path(path).concat(".partial")));

  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);

  // Root attributes.
  EXPECT_EQ(ReadStringAttribute(file, "schema"), "contactlab-run/1");
  EXPECT_EQ(ReadStringAttribute(file, "run_id"), "run-0001");
  EXPECT_EQ(ReadStringAttribute(file, "scenario"), "sliding_box");
  EXPECT_EQ(ReadStringAttribute(file, "formulation"), "hybrid_impulse");
  EXPECT_EQ(ReadStringAttribute(file, "git_commit"), "abcdef123456");
  EXPECT_EQ(ReadStringAttribute(file, "compiler"), "GNU 12.2.0");
  EXPECT_EQ(ReadStringAttribute(file, "started_utc"), "2024-05-01T12:00:00Z");
  EXPECT_EQ(ReadStringAttribute(file, "status"), "ok");
  EXPECT_EQ(ReadStringAttribute(file, "message"), "completed");

  // /config and /params.
  EXPECT_EQ(ReadStringDataset(file, "config"), "mu = 0.4\n[hybrid_impulse]\ncfl = 0.5\n");
  {
    const hid_t params = H5Gopen2(file, "params", H5P_DEFAULT);
    ASSERT_GE(params, 0);
    EXPECT_DOUBLE_EQ(ReadDoubleAttribute(params, "mu"), 0.4);
    EXPECT_DOUBLE_EQ(ReadDoubleAttribute(params, "hybrid_impulse.cfl"), 0.5);
    EXPECT_EQ(ReadIntegerAttribute(params, "grid.cells"), 64);
    EXPECT_DOUBLE_EQ(ReadDoubleAttribute(params, "box.size"), 0.25);
    EXPECT_EQ(ReadFlagAttribute(params, "hybrid_impulse.warm_start"), 1);
    EXPECT_EQ(ReadStringAttribute(params, "contact.model"), "sap_cone");
    EXPECT_EQ(ReadStringAttribute(params, "mu.unit"), "1");
    EXPECT_EQ(ReadStringAttribute(params, "hybrid_impulse.cfl.unit"), "1");
    EXPECT_EQ(ReadStringAttribute(params, "grid.cells.unit"), "1");
    EXPECT_EQ(ReadStringAttribute(params, "box.size.unit"), "m");
    EXPECT_FALSE(HasAttribute(params, "hybrid_impulse.warm_start.unit"));
    EXPECT_FALSE(HasAttribute(params, "contact.model.unit"));
    H5O_info_t info;
    ASSERT_GE(H5Oget_info2(params, &info, H5O_INFO_NUM_ATTRS), 0);
    EXPECT_EQ(info.num_attrs, 10u);
    H5Gclose(params);
  }

  // /timeseries: a scalar series is (N,), a 3-component one (N,3) with columns.
  {
    const hid_t energy = H5Gopen2(file, "timeseries/energy", H5P_DEFAULT);
    ASSERT_GE(energy, 0);
    const auto time = ReadDataset<double>(energy, "time");
    EXPECT_EQ(time.shape, (std::vector<hsize_t>{4}));
    EXPECT_EQ(time.values, (std::vector<double>{0.0, 0.01, 0.02, 0.03}));
    const auto value = ReadDataset<double>(energy, "value");
    EXPECT_EQ(value.shape, (std::vector<hsize_t>{4}));
    EXPECT_EQ(value.values, (std::vector<double>{100.0, 99.0, 98.0, 97.0}));
    EXPECT_EQ(ReadStringAttribute(energy, "unit"), "J");
    EXPECT_EQ(ReadStringAttribute(energy, "description"), "Total energy.");
    EXPECT_FALSE(HasAttribute(energy, "columns"));
    H5Gclose(energy);

    const hid_t position = H5Gopen2(file, "timeseries/box_position", H5P_DEFAULT);
    ASSERT_GE(position, 0);
    EXPECT_EQ(ReadDataset<double>(position, "time").shape, (std::vector<hsize_t>{4}));
    const auto vector_value = ReadDataset<double>(position, "value");
    EXPECT_EQ(vector_value.shape, (std::vector<hsize_t>{4, 3}));
    EXPECT_EQ(vector_value.values, (std::vector<double>{0, 0, 0, 1, 2, 3, 2, 4, 6, 3, 6, 9}));
    EXPECT_EQ(ReadStringAttribute(position, "unit"), "m");
    EXPECT_EQ(ReadStringAttribute(position, "description"), "Box centre of mass.");
    EXPECT_EQ(ReadStringAttribute(position, "columns"), "x,y,z");
    H5Gclose(position);
  }

  // /analytic.
  {
    const hid_t reference = H5Gopen2(file, "analytic/box_position_x", H5P_DEFAULT);
    ASSERT_GE(reference, 0);
    EXPECT_EQ(ReadDataset<double>(reference, "time").values, (std::vector<double>{0.0, 0.01, 0.02, 0.03}));
    const auto value = ReadDataset<double>(reference, "value");
    EXPECT_EQ(value.shape, (std::vector<hsize_t>{4}));
    EXPECT_EQ(value.values, (std::vector<double>{0.0, 0.5, 1.0, 1.5}));
    EXPECT_EQ(ReadStringAttribute(reference, "unit"), "m");
    EXPECT_EQ(ReadStringAttribute(reference, "description"), "Closed-form sliding distance.");
    H5Gclose(reference);
  }

  // /solver_log: every column, three rows.
  {
    const hid_t log = H5Gopen2(file, "solver_log", H5P_DEFAULT);
    ASSERT_GE(log, 0);
    const auto time = ReadDataset<double>(log, "time");
    EXPECT_EQ(time.shape, (std::vector<hsize_t>{3}));
    EXPECT_EQ(time.values, (std::vector<double>{0.0, 0.01, 0.02}));
    EXPECT_EQ(ReadDataset<std::int64_t>(log, "contacts").values, (std::vector<std::int64_t>{10, 11, 12}));
    EXPECT_EQ(ReadDataset<std::int64_t>(log, "outer_iterations").values, (std::vector<std::int64_t>{20, 21, 22}));
    EXPECT_EQ(ReadDataset<std::int64_t>(log, "linear_iterations").values, (std::vector<std::int64_t>{30, 31, 32}));
    EXPECT_EQ(ReadDataset<std::int64_t>(log, "substeps").values, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(ReadDataset<double>(log, "residual").values,
              (std::vector<double>{MakeReport(0).residual, MakeReport(1).residual, MakeReport(2).residual}));
    EXPECT_EQ(ReadDataset<std::int8_t>(log, "converged").values, (std::vector<std::int8_t>{1, 0, 1}));
    EXPECT_EQ(ReadDataset<double>(log, "wall_s").values, (std::vector<double>{0.7, 1.7, 2.7}));
    // Each timing column holds exactly the doubles the reports carried.
    const std::pair<const char*, double Timings::*> timing_columns[] = {{"timing_free_motion", &Timings::free_motion},
                                                                        {"timing_detection", &Timings::detection},
                                                                        {"timing_assembly", &Timings::assembly},
                                                                        {"timing_solve", &Timings::solve},
                                                                        {"timing_g2p", &Timings::g2p},
                                                                        {"timing_rigid", &Timings::rigid}};
    for (const auto& [name, field] : timing_columns) {
      const auto timing = ReadDataset<double>(log, name);
      EXPECT_EQ(timing.shape, (std::vector<hsize_t>{3})) << name;
      EXPECT_EQ(timing.values, (std::vector<double>{MakeReport(0).timings.*field, MakeReport(1).timings.*field,
                                                    MakeReport(2).timings.*field}))
          << name;
    }
    H5Gclose(log);
  }

  // /summary: the scenario's values of every type plus those Finish writes.
  {
    const hid_t summary = H5Gopen2(file, "summary", H5P_DEFAULT);
    ASSERT_GE(summary, 0);
    EXPECT_EQ(ReadFlagAttribute(summary, "settled"), 1);
    EXPECT_EQ(ReadIntegerAttribute(summary, "max_contacts"), 12);
    EXPECT_DOUBLE_EQ(ReadDoubleAttribute(summary, "final_error"), 1.5e-3);
    EXPECT_EQ(ReadStringAttribute(summary, "note"), "within tolerance");
    EXPECT_EQ(ReadIntegerAttribute(summary, "steps"), 3);
    EXPECT_DOUBLE_EQ(ReadDoubleAttribute(summary, "wall_s"), 2.5);
    EXPECT_EQ(ReadStringAttribute(summary, "status"), "ok");
    EXPECT_EQ(ReadStringAttribute(summary, "message"), "completed");
    H5Gclose(summary);
  }
  EXPECT_EQ(H5Fclose(file), 0);

  // The same file as the Python analysis reads it.
  const std::string script =
      "import h5py, sys\n"
      "f = h5py.File(sys.argv[1], 'r')\n"
      "assert f.attrs['schema'] == 'contactlab-run/1'\n"
      "assert f['config'][()].decode() == 'mu = 0.4\\n[hybrid_impulse]\\ncfl = 0.5\\n'\n"
      "assert f['params'].attrs['hybrid_impulse.cfl'] == 0.5\n"
      "assert f['params'].attrs['box.size.unit'] == 'm'\n"
      "assert f['timeseries/box_position/value'].shape == (4, 3)\n"
      "assert f['timeseries/box_position'].attrs['columns'] == 'x,y,z'\n"
      "assert list(f['solver_log/converged'][:]) == [1, 0, 1]\n"
      "assert f['summary'].attrs['status'] == 'ok'\n";
  const fs::path script_path = directory_ / "check.py";
  {
    std::FILE* out = std::fopen(script_path.c_str(), "w");
    ASSERT_NE(out, nullptr);
    std::fputs(script.c_str(), out);
    std::fclose(out);
  }
  const std::string command = "/usr/bin/python3 -c 'import h5py' 2>/dev/null";
  if (std::system(command.c_str()) == 0) {
    const std::string check = "/usr/bin/python3 '" + script_path.string() + "' '" + path.string() + "'";
    EXPECT_EQ(std::system(check.c_str()), 0) << "h5py check failed";
  }
}

TEST_F(RunRecorderTest, EmptySolverLogHasZeroLengthDatasets) {
  const fs::path path = directory_ / "empty.h5";
  {
    RunRecorder recorder(path);
    recorder.DeclareSeries("force", "N", "Contact force.", {"x", "y", "z"});
    recorder.Finish("failed", "diverged before the first step", 0, 0.0);
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(ReadDataset<double>(file, "solver_log/time").shape, (std::vector<hsize_t>{0}));
  EXPECT_EQ(ReadDataset<std::int8_t>(file, "solver_log/converged").shape, (std::vector<hsize_t>{0}));
  EXPECT_EQ(ReadDataset<double>(file, "timeseries/force/value").shape, (std::vector<hsize_t>{0, 3}));
  EXPECT_EQ(H5Lexists(file, "analytic", H5P_DEFAULT), 0);
  EXPECT_EQ(ReadStringAttribute(file, "status"), "failed");
  EXPECT_EQ(H5Fclose(file), 0);
}

TEST_F(RunRecorderTest, UnfinishedRunLeavesNoFile) {
  const fs::path path = directory_ / "unfinished.h5";
  const fs::path partial = fs::path(path).concat(".partial");
  {
    RunRecorder recorder(path);
    EXPECT_EQ(recorder.partial_path(), partial);
    recorder.DeclareSeries("energy", "J", "Total energy.");
    recorder.AppendSeries("energy", 0.0, {1.0});
    // A stale partial file from a crashed run is cleaned up too.
    std::FILE* stale = std::fopen(partial.c_str(), "w");
    ASSERT_NE(stale, nullptr);
    std::fclose(stale);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(partial));
}

TEST_F(RunRecorderTest, FinishReplacesAnExistingFile) {
  const fs::path path = directory_ / "run.h5";
  for (const std::string message : {"first", "second"}) {
    RunRecorder recorder(path);
    recorder.Finish("ok", message, 0, 0.0);
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(ReadStringAttribute(file, "message"), "second");
  EXPECT_EQ(H5Fclose(file), 0);
}

TEST_F(RunRecorderTest, UnusableLocationIsRefusedBeforeAnyWork) {
  // The parent "directory" is a regular file: the recorder refuses at construction, before
  // a simulation could run, naming the blocking path.
  const fs::path blocker = directory_ / "not_a_directory";
  std::FILE* out = std::fopen(blocker.c_str(), "w");
  ASSERT_NE(out, nullptr);
  std::fputs("mu = 0.3\n", out);
  std::fclose(out);
  try {
    RunRecorder recorder(blocker / "run.h5");
    FAIL() << "the recorder should have refused";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("not_a_directory"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(fs::is_regular_file(blocker));
  // A folder, a device and a non-HDF5 file (a scene file) are never replaced.
  for (const fs::path& taken : {directory_, fs::path("/dev/null"), blocker}) {
    EXPECT_THROW(RunRecorder{taken}, InputError) << taken;
  }
  EXPECT_TRUE(fs::is_regular_file(blocker));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(RunRecorderTest, PlantedSymbolicLinksAreReplacedNeverFollowed) {
  // Links at the partial and final names point at a file outside the folder: finishing the
  // run replaces the links and leaves their target untouched.
  const fs::path target = directory_ / "victim.txt";
  { std::ofstream(target) << "keep me"; }
  const fs::path path = directory_ / "run.h5";
  fs::create_symlink(target, path);
  fs::create_symlink(target, fs::path(path).concat(".partial"));
  {
    RunRecorder recorder(path);
    recorder.Finish("ok", "", 0, 0.0);
  }
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
}

TEST_F(RunRecorderTest, ARunWithoutSnapshotsKeepsAnXdmfFileItDidNotWrite) {
  const fs::path path = directory_ / "run.h5";
  const fs::path foreign = directory_ / "run.xdmf";
  { std::ofstream(foreign) << "<Xdmf>someone else's</Xdmf>"; }
  RunRecorder recorder(path);
  recorder.Finish("ok", "", 0, 0.0);
  EXPECT_TRUE(fs::exists(foreign));
}

TEST_F(RunRecorderTest, HdfFailureThrowsNamingFileAndObject) {
  // A parameter key that collides with another's unit attribute makes HDF5 fail mid-file.
  ParameterSet parameters;
  parameters.Declare(
      {{"mu", 0.3, "1", "Friction.", nullptr}, {"mu.unit", std::string("x"), "", "Collides with mu's unit.", nullptr}});
  const fs::path path = directory_ / "run.h5";
  RunRecorder recorder(path);
  recorder.SetConfiguration("", parameters);
  try {
    recorder.Finish("ok", "", 0, 0.0);
    FAIL() << "Finish should have thrown";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("run.h5.partial"), std::string::npos) << message;
    EXPECT_NE(message.find("attribute 'mu.unit'"), std::string::npos) << message;
    EXPECT_NE(message.find("/params"), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(recorder.partial_path()));
}

TEST_F(RunRecorderTest, RejectsMisusedSeries) {
  RunRecorder recorder(directory_ / "run.h5");
  EXPECT_THROW(recorder.AppendSeries("missing", 0.0, {1.0}), std::logic_error);
  EXPECT_THROW(recorder.AppendAnalytic("missing", 0.0, {1.0}), std::logic_error);
  recorder.DeclareSeries("position", "m", "Position.", {"x", "y", "z"});
  EXPECT_THROW(recorder.DeclareSeries("position", "m", "Again."), std::logic_error);
  EXPECT_THROW(recorder.AppendSeries("position", 0.0, {1.0}), std::logic_error);
  recorder.DeclareAnalytic("energy", "J", "Energy.");
  EXPECT_THROW(recorder.AppendAnalytic("energy", 0.0, {1.0, 2.0}), std::logic_error);
  EXPECT_THROW(recorder.DeclareSeries("a/b", "m", "Slash."), std::logic_error);
  try {
    recorder.AppendSeries("velocity", 0.0, {1.0});
    FAIL() << "AppendSeries should have thrown";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("velocity"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace contactlab::experiments
