// Checkpoints: the archive's encoding, the file's defences against damaged and foreign input,
// and the bitwise resume of every scenario under every formulation.
//
// The resume test compares whole run states, not a few observables: a run stopped at step k
// (a checkpoint, then a fresh process state) and resumed writes, at step n, a checkpoint whose
// every record (world, scenario accumulators, formulation state, every recorded series and
// solver-log row) equals byte for byte the checkpoint of a run that went straight to step n.
// Only the records of wall time differ. A field a component forgot to list shows up here as a
// difference in what it feeds.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "experiments/checkpoint.h"
#include "experiments/config.h"
#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "formulations/state_archive.h"
#include "matrix_cells.h"
#include "registry/registered_formulations.h"
#ifdef CONTACTLAB_WITH_CUDA
#include "formulations/quasi_newton/cuda/cuda_quasi_newton_solver.h"
#endif

namespace contactlab::experiments {
namespace {

namespace fs = std::filesystem;

fs::path FreshFolder(const std::string& name) {
  const fs::path folder =
      fs::temp_directory_path() / ("contactlab_checkpoint_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream << bytes;
}

// ---- The archive ----

TEST(StateArchive, EveryEncodedTypeComesBackUnchanged) {
  double number = -1.25e-300;
  int count = -7;
  bool flag = true;
  mpm::Vector3 vector(1.0, -2.0, std::nextafter(3.0, 4.0));
  Eigen::VectorXd dynamic = Eigen::VectorXd::LinSpaced(5, 0.0, 1.0);
  std::string text = "a\0b";
  std::vector<mpm::Matrix3> matrices = {mpm::Matrix3::Identity(), mpm::Matrix3::Constant(0.1)};
  std::vector<std::string> texts = {"", "x", "yz"};
  std::array<double, 2> pair_of = {std::numeric_limits<double>::quiet_NaN(), -0.0};
  std::optional<double> maybe = 2.5, nothing;
  StateArchive saving = StateArchive::ForSaving();
  {
    const StateArchive::Scope scope(saving, "part");
    saving("number", number);
    saving("count", count);
    saving("flag", flag);
    saving("vector", vector);
    saving("dynamic", dynamic);
    saving("text", text);
    saving("matrices", matrices);
    saving("texts", texts);
    saving("pair_of", pair_of);
    saving("maybe", maybe);
    saving("nothing", nothing);
  }
  EXPECT_TRUE(saving.records().contains("part/number"));

  double number2 = 0.0;
  int count2 = 0;
  bool flag2 = false;
  mpm::Vector3 vector2 = mpm::Vector3::Zero();
  Eigen::VectorXd dynamic2;
  std::string text2;
  std::vector<mpm::Matrix3> matrices2;
  std::vector<std::string> texts2;
  std::array<double, 2> pair_of2{};
  std::optional<double> maybe2, nothing2 = 1.0;
  StateArchive loading = StateArchive::ForLoading(saving.records());
  {
    const StateArchive::Scope scope(loading, "part");
    loading("number", number2);
    loading("count", count2);
    loading("flag", flag2);
    loading("vector", vector2);
    loading("dynamic", dynamic2);
    loading("text", text2);
    loading("matrices", matrices2);
    loading("texts", texts2);
    loading("pair_of", pair_of2);
    loading("maybe", maybe2);
    loading("nothing", nothing2);
  }
  EXPECT_NO_THROW(loading.CheckEverythingRead());
  EXPECT_EQ(number2, number);
  EXPECT_EQ(count2, count);
  EXPECT_EQ(flag2, flag);
  EXPECT_EQ(vector2, vector);
  EXPECT_EQ(dynamic2, dynamic);
  EXPECT_EQ(text2, text);
  ASSERT_EQ(matrices2.size(), 2u);
  EXPECT_EQ(matrices2[1], matrices[1]);
  EXPECT_EQ(texts2, texts);
  EXPECT_TRUE(std::isnan(pair_of2[0]));
  EXPECT_TRUE(std::signbit(pair_of2[1]));
  EXPECT_EQ(maybe2, maybe);
  EXPECT_FALSE(nothing2.has_value());
}

TEST(StateArchive, LoadingRefusesMissingShortLongAndUnreadRecords) {
  std::vector<double> values = {1.0, 2.0, 3.0};
  StateArchive saving = StateArchive::ForSaving();
  saving("values", values);
  const StateArchive::Records records = saving.records();

  const auto load_as = [](StateArchive::Records changed, auto& into, const char* name) {
    StateArchive loading = StateArchive::ForLoading(std::move(changed));
    loading(name, into);
  };
  std::vector<double> into;
  EXPECT_THROW(load_as(records, into, "other"), StateArchiveError);  // missing
  StateArchive::Records shorter = records;
  shorter["values"].pop_back();
  EXPECT_THROW(load_as(shorter, into, "values"), StateArchiveError);  // truncated
  StateArchive::Records longer = records;
  longer["values"].push_back('x');
  EXPECT_THROW(load_as(longer, into, "values"), StateArchiveError);  // trailing bytes
  StateArchive::Records huge = records;
  huge["values"].replace(0, 8, std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));
  EXPECT_THROW(load_as(huge, into, "values"), StateArchiveError);  // a count the bytes cannot hold
  bool flag = false;
  StateArchive::Records not_a_flag = {{"flag", std::string(1, '\x02')}};
  EXPECT_THROW(load_as(not_a_flag, flag, "flag"), StateArchiveError);
  Eigen::Matrix<double, 6, Eigen::Dynamic> six_rows;
  StateArchive saving_matrix = StateArchive::ForSaving();
  Eigen::MatrixXd five_rows = Eigen::MatrixXd::Zero(5, 2);
  saving_matrix("m", five_rows);
  EXPECT_THROW(load_as(saving_matrix.records(), six_rows, "m"), StateArchiveError);  // wrong shape

  StateArchive loading = StateArchive::ForLoading(records);
  EXPECT_THROW(loading.CheckEverythingRead(), StateArchiveError);  // "values" unread
}

TEST(StateArchive, ExpectComparesInsteadOfLoading) {
  StateArchive saving = StateArchive::ForSaving();
  saving.Expect("count", std::uint64_t{12});
  StateArchive same = StateArchive::ForLoading(saving.records());
  EXPECT_NO_THROW(same.Expect("count", std::uint64_t{12}));
  StateArchive other = StateArchive::ForLoading(saving.records());
  EXPECT_THROW(other.Expect("count", std::uint64_t{13}), StateArchiveError);
}

// ---- The file ----

StateArchive::Records SmallRecords() {
  StateArchive saving = StateArchive::ForSaving();
  std::vector<double> values = {1.0, 2.0};
  std::string name = "run";
  saving("values", values);
  saving("name", name);
  return saving.records();
}

TEST(CheckpointFile, RoundTripsAndKeepsThePreviousOne) {
  const fs::path folder = FreshFolder("round_trip");
  const fs::path run = folder / "run.h5";
  EXPECT_FALSE(FindCheckpoint(run).has_value());
  WriteCheckpoint(run, SmallRecords());
  ASSERT_EQ(FindCheckpoint(run), CheckpointPath(run));
  EXPECT_EQ(ReadCheckpoint(CheckpointPath(run)), SmallRecords());
  WriteCheckpoint(run, {});
  EXPECT_EQ(ReadCheckpoint(PreviousCheckpointPath(run)), SmallRecords());
  EXPECT_TRUE(ReadCheckpoint(CheckpointPath(run)).empty());
  // A process killed between the two renames leaves only the previous one.
  fs::remove(CheckpointPath(run));
  EXPECT_EQ(FindCheckpoint(run), PreviousCheckpointPath(run));
  RemoveCheckpoints(run);
  EXPECT_FALSE(FindCheckpoint(run).has_value());
  fs::remove_all(folder);
}

TEST(CheckpointFile, EveryTruncationAndEveryFlippedByteIsOneInputError) {
  const fs::path folder = FreshFolder("damage");
  const fs::path run = folder / "run.h5";
  WriteCheckpoint(run, SmallRecords());
  const std::string bytes = ReadBytes(CheckpointPath(run));
  const fs::path damaged = folder / "damaged.checkpoint";
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    WriteBytes(damaged, bytes.substr(0, length));
    EXPECT_THROW(ReadCheckpoint(damaged), InputError) << "truncated to " << length << " bytes";
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    WriteBytes(damaged, flipped);
    EXPECT_THROW(ReadCheckpoint(damaged), InputError) << "byte " << at << " flipped";
  }
  try {
    WriteBytes(damaged, "not a checkpoint at all");
    ReadCheckpoint(damaged);
    FAIL() << "read a text file as a checkpoint";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(damaged.string()), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_THROW(ReadCheckpoint(folder), InputError);  // a folder
  fs::remove_all(folder);
}

// A record table whose digest is right but whose table lies (a hostile file): names and sizes
// that run past the end are refused, never read.
TEST(CheckpointFile, AForgedTableWithAValidDigestIsRefused) {
  const fs::path folder = FreshFolder("forged");
  const fs::path path = folder / "forged.checkpoint";
  const auto with_digest = [](std::string body) {
    const std::uint64_t digest = CheckpointDigest(body);
    body.append(reinterpret_cast<const char*>(&digest), 8);
    return body;
  };
  const auto word = [](std::uint64_t value) { return std::string(reinterpret_cast<const char*>(&value), 8); };
  const std::string magic = "CLCKPT1\n";
  for (const std::string& body :
       {magic + word(1) + word(1ull << 60), magic + word(1) + word(1) + "a" + word(1ull << 62),
        magic + word(2) + word(1) + "a" + word(0) + word(1) + "a" + word(0), magic + word(0) + "x"}) {
    WriteBytes(path, with_digest(body));
    EXPECT_THROW(ReadCheckpoint(path), InputError);
  }
  fs::remove_all(folder);
}

TEST(CheckpointInterval, ParsesStepsAndWallTimes) {
  EXPECT_EQ(ParseCheckpointInterval("200").steps, 200);
  EXPECT_DOUBLE_EQ(ParseCheckpointInterval("90s").seconds, 90.0);
  EXPECT_DOUBLE_EQ(ParseCheckpointInterval("30min").seconds, 1800.0);
  EXPECT_DOUBLE_EQ(ParseCheckpointInterval("1.5h").seconds, 5400.0);
  for (const char* bad : {"", "0", "-3", "2.5", "10 min", "5d", "min", "nan", "1e300"}) {
    EXPECT_THROW(ParseCheckpointInterval(bad), InputError) << bad;
  }
}

// ---- Resume ----

// The root attributes' names but "resumed", which only a resumed run has.
std::vector<std::string> RootAttributeNames(const StateArchive::Records& records) {
  StateArchive archive = StateArchive::ForLoading(records);
  std::vector<std::string> names;
  archive("recorder/root_attribute_names", names);
  std::erase(names, "resumed");
  return names;
}

// The records that hold wall-clock time, which no two runs share, and the root attributes
// (compared by RootAttributeNames: their values hold start and resume times).
bool IsWallTimeRecord(const std::string& name) {
  if (name == "recorder/root_attribute_names") return true;
  for (const char* wall : {"run/wall_seconds", "recorder/solver_log/wall_s", "recorder/solver_log/timings",
                           "recorder/solver_log/solve_seconds", "recorder/root_attribute_values"}) {
    if (name == wall) return true;
  }
  return false;
}

ResolvedRun ShortRun(const std::string& scenario_name, const std::string& formulation, int extra_steps, int* steps,
                     const std::vector<std::string>& overrides = {}) {
  const ScenarioInfo& info = FindScenario(scenario_name);
  ParameterSet parameters = DeclareParameters(scenario_name, formulation);
  ApplyOverrides(info.short_run, parameters);
  ApplyOverrides(overrides, parameters);
  const double dt = parameters.GetDouble("dt");
  *steps = std::max(2, static_cast<int>(std::llround(parameters.GetDouble("duration") / dt)));
  parameters.Set("duration", ParameterValue{(*steps + extra_steps) * dt}, "test");
  return FinishResolution(scenario_name, formulation, std::move(parameters));
}

// The scenario's short run (n steps, the conformance test's), one step longer so that step n
// can end on a checkpoint: straight to n, against stopped at n/2 and resumed to n.
void ExpectBitwiseResume(const std::string& scenario, const std::string& formulation,
                         const std::vector<std::string>& overrides = {}) {
  int steps = 0;
  const ResolvedRun run = ShortRun(scenario, formulation, 1, &steps, overrides);
  const fs::path folder = FreshFolder(scenario + "_" + formulation);
  const fs::path straight = folder / "straight.h5", resumed = folder / "resumed.h5";

  CheckpointOptions options;
  options.stop_at = steps;
  ASSERT_EQ(ExecuteResolvedRun(run, straight.string(), true, options).status, RunStatus::kStopped);
  options.stop_at = steps / 2;
  ASSERT_EQ(ExecuteResolvedRun(run, resumed.string(), true, options).status, RunStatus::kStopped);
  EXPECT_FALSE(fs::exists(resumed)) << "a stopped run wrote a run file";
  options.stop_at = steps;
  ASSERT_EQ(ExecuteResolvedRun(run, resumed.string(), true, options).status, RunStatus::kStopped);

  const StateArchive::Records expected = ReadCheckpoint(CheckpointPath(straight));
  const StateArchive::Records actual = ReadCheckpoint(CheckpointPath(resumed));
  ASSERT_EQ(expected.size(), actual.size());
  int compared = 0;
  for (const auto& [name, bytes] : expected) {
    if (IsWallTimeRecord(name)) continue;
    const auto found = actual.find(name);
    ASSERT_NE(found, actual.end()) << name;
    EXPECT_TRUE(found->second == bytes) << "record '" << name << "' differs after resuming at step " << steps / 2;
    ++compared;
  }
  EXPECT_GT(compared, 20);
  EXPECT_EQ(RootAttributeNames(actual), RootAttributeNames(expected));
  fs::remove_all(folder);
}

class BitwiseResume : public ::testing::TestWithParam<MatrixCell> {};

TEST_P(BitwiseResume, StoppedAndResumedRunEndsInTheSameState) {
  ExpectBitwiseResume(GetParam().scenario, GetParam().formulation);
}

INSTANTIATE_TEST_SUITE_P(EveryScenarioUnderEveryFormulation, BitwiseResume, ::testing::ValuesIn(AllMatrixCells()),
                         MatrixCellName);

// quasi_newton's device paths: the host replay of its CUDA kernels here, the CUDA device where
// the build has one and a device is present.
class DeviceBackendResume : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceBackendResume, StoppedAndResumedRunEndsInTheSameState) {
  const std::string backend = GetParam();
  if (backend == "cuda") {
#ifdef CONTACTLAB_WITH_CUDA
    std::string reason;
    if (!quasi_newton::CudaDeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
#else
    GTEST_SKIP() << "built without CUDA";
#endif
  }
  for (const char* scenario : {"ball_on_slope", "squeezed_cube", "close_lift_shake"}) {
    SCOPED_TRACE(scenario);
    ExpectBitwiseResume(scenario, "quasi_newton", {"quasi_newton.backend=" + backend});
  }
}

INSTANTIATE_TEST_SUITE_P(QuasiNewton, DeviceBackendResume, ::testing::Values("emulated", "cuda"));

TEST(Resume, RefusesACheckpointOfAnotherConfigurationInOneLine) {
  const fs::path folder = FreshFolder("refuse");
  const fs::path out = folder / "run.h5";
  int steps = 0;
  const ResolvedRun run = ShortRun("incline_block", "sap", 2, &steps);
  CheckpointOptions options;
  options.stop_at = 1;
  ASSERT_EQ(ExecuteResolvedRun(run, out.string(), true, options).status, RunStatus::kStopped);

  ParameterSet changed = run.parameters;
  changed.Set("mu", ParameterValue{0.5}, "test");
  const ResolvedRun other = FinishResolution(run.scenario, run.formulation, changed);
  try {
    ExecuteResolvedRun(other, out.string(), true);
    FAIL() << "resumed from a checkpoint of another configuration";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("run_id"), std::string::npos) << message;
    EXPECT_NE(message.find(CheckpointPath(out).string()), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(out)) << "a refused resume wrote a run file";
  EXPECT_TRUE(fs::exists(CheckpointPath(out))) << "a refused resume removed the checkpoint";

  const ResolvedRun other_formulation = ShortRun("incline_block", "penalty", 2, &steps);
  EXPECT_THROW(ExecuteResolvedRun(other_formulation, out.string(), true), InputError);

  // The matching run resumes, finishes, and removes its checkpoints.
  ASSERT_EQ(ExecuteResolvedRun(run, out.string(), true).status, RunStatus::kOk);
  EXPECT_TRUE(fs::exists(out));
  EXPECT_FALSE(FindCheckpoint(out).has_value());
  fs::remove_all(folder);
}

}  // namespace
}  // namespace contactlab::experiments
