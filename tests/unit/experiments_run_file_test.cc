// Reading run files back (sweeps' resume check, `collect`) is safe on any file a results
// folder may hold: every attribute is checked to be a scalar of a known type before it is
// read, so an array, a compound or an oversized string is a one-line error naming the file
// and the attribute, and `collect` turns it into a "failed" row instead of crashing.
#include "experiments/run_file.h"

#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/collect.h"
#include "experiments/run_recorder.h"

namespace contactlab::experiments {
namespace {

namespace fs = std::filesystem;

class RunFileTest : public testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("contactlab_run_file_test_" + std::to_string(::getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  // A complete run file written by RunRecorder, then edited with `edit(file)`.
  fs::path MakeRun(const std::string& name, const std::function<void(hid_t)>& edit = nullptr) {
    const fs::path path = directory_ / (name + ".h5");
    {
      RunRecorder recorder(path);
      recorder.SetRootAttribute("run_id", "0123456789ab");
      recorder.SetRootAttribute("scenario", "ball_on_slope");
      recorder.SetRootAttribute("formulation", "sap");
      recorder.SetSummary("max_rel_error", 0.01);
      recorder.Finish("ok", "", 3, 0.5);
    }
    if (edit) {
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      EXPECT_GE(file, 0);
      edit(file);
      EXPECT_GE(H5Fclose(file), 0);
    }
    return path;
  }

  fs::path directory_;
};

// Adds attribute `name` of `type` and shape `dims` (empty: scalar) to the object at `where`,
// filled from `data`.
void AddAttribute(hid_t file, const char* where, const char* name, hid_t type, const std::vector<hsize_t>& dims,
                  const void* data) {
  const hid_t object = H5Oopen(file, where, H5P_DEFAULT);
  ASSERT_GE(object, 0);
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  const hid_t space =
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attribute, 0);
  if (data != nullptr) {
    EXPECT_GE(H5Awrite(attribute, type, data), 0);
  }
  H5Aclose(attribute);
  H5Sclose(space);
  H5Oclose(object);
}

TEST_F(RunFileTest, AWellFormedRunReadsBack) {
  const RunFileContents contents = ReadRunFile(MakeRun("good"));
  EXPECT_EQ(contents.root.at("run_id"), "0123456789ab");
  EXPECT_EQ(std::get<double>(contents.summary.at("max_rel_error")), 0.01);
  EXPECT_EQ(std::get<std::int64_t>(contents.summary.at("steps")), 3);
}

struct MalformedCase {
  std::string name;
  std::string expected;  // in the message, after the file name
  std::function<void(hid_t)> edit;
};

TEST_F(RunFileTest, MalformedAttributesAreOneLineErrorsNamingThem) {
  const std::vector<double> doubles(1000, 1.5);
  const std::vector<std::int64_t> integers(5000, 7);
  const char* strings[3] = {"a", "b", "c"};
  const std::vector<MalformedCase> cases = {
      {"doubles", "/summary: attribute 'wall_s' is an array (1000), not a scalar",
       [&](hid_t f) { AddAttribute(f, "summary", "wall_s", H5T_NATIVE_DOUBLE, {1000}, doubles.data()); }},
      {"integers", "/summary: attribute 'steps' is an array (5000), not a scalar",
       [&](hid_t f) { AddAttribute(f, "summary", "steps", H5T_NATIVE_INT64, {5000}, integers.data()); }},
      {"two", "/params: attribute 'mu' is an array (2), not a scalar",
       [&](hid_t f) { AddAttribute(f, "params", "mu", H5T_NATIVE_DOUBLE, {2}, doubles.data()); }},
      {"matrix", "attribute 'mu' is an array (2 x 3), not a scalar",
       [&](hid_t f) {
         AddAttribute(f, "params", "mu", H5T_NATIVE_DOUBLE, {2, 3}, doubles.data());
       }},
      {"strings", "/: attribute 'scenario' is an array (3), not a scalar",
       [&](hid_t f) {
         const hid_t type = H5Tcopy(H5T_C_S1);
         H5Tset_size(type, H5T_VARIABLE);
         AddAttribute(f, "/", "scenario", type, {3}, strings);
         H5Tclose(type);
       }},
      {"compound", "attribute 'x' has a type that is not a string, integer or float",
       [&](hid_t f) {
         const hid_t type = H5Tcreate(H5T_COMPOUND, 16);
         H5Tinsert(type, "a", 0, H5T_NATIVE_DOUBLE);
         H5Tinsert(type, "b", 8, H5T_NATIVE_DOUBLE);
         AddAttribute(f, "summary", "x", type, {}, doubles.data());
         H5Tclose(type);
       }},
      {"null", "attribute 'x' is empty (null dataspace)",
       [&](hid_t f) {
         const hid_t object = H5Gopen2(f, "summary", H5P_DEFAULT);
         const hid_t space = H5Screate(H5S_NULL);
         const hid_t attribute = H5Acreate2(object, "x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
         H5Aclose(attribute);
         H5Sclose(space);
         H5Gclose(object);
       }},
      {"no_run_id", "no run_id attribute", [](hid_t f) { H5Adelete(f, "run_id"); }},
      {"no_config", "no /config dataset", [](hid_t f) { H5Ldelete(f, "config", H5P_DEFAULT); }},
      {"config_array", "/config is an array (2), not a scalar",
       [](hid_t f) {
         H5Ldelete(f, "config", H5P_DEFAULT);
         const hsize_t two = 2;
         const hid_t space = H5Screate_simple(1, &two, nullptr);
         const hid_t dataset = H5Dcreate2(f, "config", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
         H5Dclose(dataset);
         H5Sclose(space);
       }},
  };
  for (const MalformedCase& test : cases) {
    const fs::path file = MakeRun(test.name, test.edit);
    try {
      ReadRunFile(file);
      ADD_FAILURE() << test.name << ": read without error";
    } catch (const std::runtime_error& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(file.string() + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(test.expected), std::string::npos) << test.name << ": " << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  // collect lists every file, the malformed ones as failed rows with the reason.
  const CollectedTable table = CollectRuns(directory_);
  ASSERT_EQ(table.runs.size(), cases.size());
  for (const CollectedRun& run : table.runs) {
    EXPECT_EQ(run.record.status, "failed") << run.run_id;
    EXPECT_NE(run.record.message.find(run.run_id + ".h5: "), std::string::npos) << run.record.message;
  }
}

TEST_F(RunFileTest, CollectSurvivesLinksFoldersAndNonHdf5Files) {
  MakeRun("good");
  fs::create_symlink("loop_b.h5", directory_ / "loop_a.h5");
  fs::create_symlink("loop_a.h5", directory_ / "loop_b.h5");
  fs::create_directories(directory_ / "folder.h5");
  {
    std::FILE* text = std::fopen((directory_ / "text.h5").c_str(), "w");
    ASSERT_NE(text, nullptr);
    std::fputs("not hdf5", text);
    std::fclose(text);
  }
  const CollectedTable table = CollectRuns(directory_);
  ASSERT_EQ(table.runs.size(), 5u);
  std::map<std::string, std::string> status;
  for (const CollectedRun& run : table.runs) status[run.run_id] = run.record.status + ": " + run.record.message;
  EXPECT_EQ(status.at("0123456789ab").rfind("ok", 0), 0u);
  for (const char* name : {"loop_a", "loop_b", "folder", "text"}) {
    EXPECT_EQ(status.at(name).rfind("failed: ", 0), 0u) << name << " -> " << status.at(name);
  }
  EXPECT_NE(status.at("text").find("not an HDF5 file"), std::string::npos) << status.at("text");
  EXPECT_NE(status.at("folder").find("not a regular file"), std::string::npos) << status.at("folder");
}

}  // namespace
}  // namespace contactlab::experiments
