// A fuzz test of every reader of outside input: scene TOML files, sweep files, manifest
// lines, run files and checkpoints. Inputs are the repository's own files mutated at random (bytes
// flipped, inserted, deleted, duplicated, spliced with another file, or replaced by TOML and
// JSON tokens, deep nesting and extreme numbers) plus purely random bytes. Each must be
// accepted or rejected with an InputError (a runtime_error for run files) whose message is
// one line; anything else (a crash, another exception type, a multi-line message) fails.
// A hang fails through the ctest timeout. The seed is fixed so a failure reproduces;
// CONTACTLAB_FUZZ_INPUTS and CONTACTLAB_FUZZ_SEED run more or other inputs.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "experiments/checkpoint.h"
#include "experiments/config.h"
#include "experiments/run_driver.h"
#include "experiments/run_file.h"
#include "experiments/run_recorder.h"
#include "experiments/scenario.h"
#include "experiments/sweep.h"
#include "experiments/sweep_records.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {
namespace {

namespace fs = std::filesystem;

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::int64_t EnvironmentNumber(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::strtoll(text, nullptr, 10) : fallback;
}

// Mutates a corpus entry into a new input.
class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : random_(seed) {}

  std::string Mutate(const std::vector<std::string>& corpus, const std::vector<std::string>& tokens) {
    std::string input = corpus[Pick(corpus.size())];
    const int rounds = 1 + static_cast<int>(Pick(8));
    for (int round = 0; round < rounds; ++round) {
      switch (Pick(9)) {
        case 0:  // flip a byte
          if (!input.empty()) input[Pick(input.size())] = static_cast<char>(Pick(256));
          break;
        case 1:  // insert random bytes
          input.insert(Pick(input.size() + 1), RandomBytes(1 + Pick(16)));
          break;
        case 2: {  // delete a range
          if (input.empty()) break;
          const std::size_t at = Pick(input.size());
          input.erase(at, 1 + Pick(std::min<std::size_t>(64, input.size() - at)));
          break;
        }
        case 3: {  // duplicate a range
          if (input.empty()) break;
          const std::size_t at = Pick(input.size());
          const std::string range = input.substr(at, 1 + Pick(64));
          input.insert(Pick(input.size() + 1), range);
          break;
        }
        case 4: {  // splice with another entry
          const std::string& other = corpus[Pick(corpus.size())];
          input = input.substr(0, Pick(input.size() + 1)) + other.substr(Pick(other.size() + 1));
          break;
        }
        case 5:  // insert a token of the format
        case 6:
          input.insert(Pick(input.size() + 1), tokens[Pick(tokens.size())]);
          break;
        case 7:  // truncate
          input.resize(Pick(input.size() + 1));
          break;
        case 8: {  // replace a number-looking run of characters by an extreme value
          static const char* extremes[] = {"1e308",
                                           "-1e308",
                                           "nan",
                                           "inf",
                                           "-0",
                                           "9223372036854775807",
                                           "-9223372036854775808",
                                           "99999999999999999999",
                                           "1e-320",
                                           "0"};
          const std::size_t at = input.find_first_of("0123456789", Pick(input.size() + 1));
          if (at == std::string::npos) break;
          const std::size_t end = input.find_first_not_of("0123456789.e-+", at);
          input.replace(at, (end == std::string::npos ? input.size() : end) - at, extremes[Pick(10)]);
          break;
        }
      }
    }
    return input;
  }

  std::string RandomBytes(std::size_t count) {
    std::string bytes(count, '\0');
    for (char& c : bytes) c = static_cast<char>(Pick(256));
    return bytes;
  }

  std::size_t Pick(std::size_t bound) {
    return bound == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, bound - 1)(random_);
  }

 private:
  std::mt19937_64 random_;
};

// Statistics of one reader's run, printed and recorded as test properties.
struct FuzzTally {
  std::int64_t inputs = 0, accepted = 0, rejected = 0;
  double seconds = 0.0, slowest = 0.0;
};

class InputFuzz : public testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("contactlab_fuzz_" + std::to_string(::getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    inputs_ = EnvironmentNumber("CONTACTLAB_FUZZ_INPUTS", 1500);
    seed_ = static_cast<std::uint64_t>(EnvironmentNumber("CONTACTLAB_FUZZ_SEED", 20261124));
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Feeds `inputs_` inputs to `read`, which returns normally when the input was accepted.
  // `Error` is the exception type a rejection must have.
  template <typename Error, typename Read>
  FuzzTally Fuzz(const std::string& reader, const std::vector<std::string>& corpus,
                 const std::vector<std::string>& tokens, Read read) {
    Mutator mutator(seed_ ^ std::hash<std::string>{}(reader));
    FuzzTally tally;
    for (std::int64_t i = 0; i < inputs_; ++i) {
      // One input in ten is random bytes, the rest mutated files.
      const std::string input = i % 10 == 9 ? mutator.RandomBytes(mutator.Pick(512)) : mutator.Mutate(corpus, tokens);
      const auto start = std::chrono::steady_clock::now();
      try {
        read(input);
        ++tally.accepted;
      } catch (const Error& error) {
        ++tally.rejected;
        const std::string message = error.what();
        if (message.empty() || message.find('\n') != std::string::npos || message.find('\r') != std::string::npos) {
          ADD_FAILURE() << reader << " input " << i << ": the message is not one line: " << message;
        }
      } catch (const std::exception& error) {
        ADD_FAILURE() << reader << " input " << i << ": unexpected exception: " << error.what();
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      tally.seconds += seconds;
      tally.slowest = std::max(tally.slowest, seconds);
      ++tally.inputs;
    }
    std::printf("%s: %lld inputs (%lld accepted, %lld rejected) in %.2f s, slowest %.3f s\n", reader.c_str(),
                static_cast<long long>(tally.inputs), static_cast<long long>(tally.accepted),
                static_cast<long long>(tally.rejected), tally.seconds, tally.slowest);
    RecordProperty(reader + "_inputs", std::to_string(tally.inputs));
    RecordProperty(reader + "_seconds", std::to_string(tally.seconds));
    return tally;
  }

  fs::path directory_;
  std::int64_t inputs_ = 0;
  std::uint64_t seed_ = 0;
};

std::vector<std::string> FilesIn(const fs::path& folder, const std::string& extension) {
  std::vector<fs::path> paths;
  for (const auto& item : fs::directory_iterator(folder)) {
    if (item.path().extension() == extension) paths.push_back(item.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> contents;
  for (const fs::path& path : paths) contents.push_back(ReadBytes(path));
  return contents;
}

std::string Repeat(const std::string& text, int count) {
  std::string repeated;
  for (int i = 0; i < count; ++i) repeated += text;
  return repeated;
}

const std::vector<std::string> kTomlTokens = {
    "[", "]", "[[", "]]", "=", "\"", "'", "\"\"\"", "\n", "#", ".", ",", "{", "}", "\\u0000", "\\", "true", "[sap]\n",
    "[penalty.contact]\n", "[quasi_newton]\nsubsteps = \"auto\"\n", "mu = ", "dt = 0\n", "duration = 1e308\n",
    "grid_spacing = -1\n", "[base]\n", "[axes]\n", "[[zip]]\n", "[sweep]\n", "formulation = [\"sap\", \"penalty\"]\n",
    "mu = [", std::string(300, '['), std::string(300, '{'),
    "a = " + std::string(200, '[') + std::string(200, ']') + "\n", "x = 1979-05-27T07:32:00Z\n",
    // Nesting past the parser's stack: dotted keys,
    // table headers, inline tables.
    "a" + Repeat(".b", 20000) + " = 1\n", "[a" + Repeat(".\"b\"", 20000) + "]\n",
    "x = " + Repeat("{a=", 400) + "1" + Repeat("}", 400) + "\n",
    // Integers past 32 bits, reals TOML can spell
    // that no key takes, a formulation table twice.
    "max_substeps = 4294967297\n", "vertices_per_side = 2147483648\n", "sampling_seed = -1\n", "floor_height = -inf\n",
    "mu = nan\n", "[sap.sap]\n", "[hybrid_impulse.hybrid_impulse]\n", "description = 12\n", std::string("\0", 1),
    "\xff\xfe", "\xc3\x28"};

TEST_F(InputFuzz, SceneFiles) {
  const std::vector<std::string> corpus = FilesIn(fs::path(CONTACTLAB_SOURCE_DIR) / "data" / "scenes", ".toml");
  ASSERT_FALSE(corpus.empty());
  std::vector<std::pair<std::string, std::string>> pairs;  // scenario, formulation
  for (const ScenarioInfo& scenario : RegisteredScenarios()) {
    for (const FormulationInfo& formulation : RegisteredFormulations())
      pairs.emplace_back(scenario.name, formulation.name);
  }
  const fs::path file = directory_ / "scene.toml";
  std::size_t next = 0;
  const FuzzTally tally = Fuzz<InputError>("scene_toml", corpus, kTomlTokens, [&](const std::string& input) {
    WriteBytes(file, input);
    const auto& [scenario, formulation] = pairs[next++ % pairs.size()];
    ParameterSet parameters = DeclareParameters(scenario, formulation);
    ApplyTomlFile(file.string(), parameters);
    ValidateRun(parameters);
  });
  EXPECT_GT(tally.rejected, 0);
  EXPECT_GT(tally.accepted, 0);
}

TEST_F(InputFuzz, SweepFiles) {
  std::vector<std::string> corpus = FilesIn(fs::path(CONTACTLAB_SOURCE_DIR) / "data" / "sweeps", ".toml");
  ASSERT_FALSE(corpus.empty());
  // Sweep files name their scene relative to themselves: point them at the repository's.
  const std::string scenes = (fs::path(CONTACTLAB_SOURCE_DIR) / "data" / "scenes").string() + "/";
  for (std::string& text : corpus) {
    for (std::size_t at = text.find("../scenes/"); at != std::string::npos; at = text.find("../scenes/", at)) {
      text.replace(at, 10, scenes);
      at += scenes.size();
    }
  }
  const fs::path file = directory_ / "sweep.toml";
  const FuzzTally tally = Fuzz<InputError>("sweep_toml", corpus, kTomlTokens, [&](const std::string& input) {
    WriteBytes(file, input);
    const SweepDefinition sweep = LoadSweep(file);
    double runs = 1.0;
    for (const SweepAxis& axis : sweep.axes) runs *= static_cast<double>(std::max<std::size_t>(1, axis.size()));
    // A valid but large product only takes time to expand; one past the limit is refused at once.
    if (runs > 64 && runs <= static_cast<double>(kMaxSweepRuns)) return;
    std::vector<std::string> warnings;
    ExpandSweep(sweep, &warnings);
  });
  EXPECT_GT(tally.rejected, 0);
  EXPECT_GT(tally.accepted, 0);
}

TEST_F(InputFuzz, ManifestLines) {
  // The corpus: the lines of the repository's sweeps, expanded.
  std::vector<std::string> corpus;
  const std::string scenes = (fs::path(CONTACTLAB_SOURCE_DIR) / "data" / "scenes").string();
  for (const std::string name : {"ball_on_slope", "squeezed_cube"}) {
    for (const ManifestEntry& entry :
         ExpandSweep(LoadSweep(fs::path(CONTACTLAB_SOURCE_DIR) / "data" / "sweeps" / (name + ".toml")))) {
      corpus.push_back(ToJsonLine(entry));
    }
  }
  ASSERT_FALSE(corpus.empty());
  const std::vector<std::string> tokens = {"{",
                                           "}",
                                           "[",
                                           "]",
                                           ":",
                                           ",",
                                           "\"",
                                           "\\",
                                           "\\u0000",
                                           "\\ud800",
                                           "null",
                                           "true",
                                           "1e400",
                                           "-1",
                                           "\"run_id\":\"../../x\",",
                                           "\"index\":-5,",
                                           "\"index\":4294967296,",
                                           "\"index\":18446744073709551615,",
                                           "\"index\":0.9,",
                                           "\"index\":\"3\",",
                                           "\"parameters\":[],",
                                           "\"swept\":1,",
                                           std::string(600, '['),
                                           std::string(600, '{'),
                                           "\"mu\":{\"a\":1},",
                                           "\"formulation\":\"nope\",",
                                           "\xff",
                                           "\xc3\x28"};
  const fs::path out_dir = directory_ / "runs";
  const FuzzTally tally = Fuzz<InputError>("manifest_line", corpus, tokens, [&](const std::string& input) {
    const ManifestEntry entry = FromJsonLine(input, "fuzz:1");
    ResolveManifestEntry(entry);
    // Whatever a line holds, its files stay inside the output folder.
    const fs::path run_file = RunFilePath(out_dir, entry.run_id);
    if (run_file.parent_path() != out_dir) throw std::logic_error("run file outside the folder: " + run_file.string());
  });
  EXPECT_GT(tally.rejected, 0);
  EXPECT_GT(tally.accepted, 0);
}

TEST_F(InputFuzz, RunFiles) {
  // The corpus: small run files written by RunRecorder, with and without snapshots.
  std::vector<std::string> corpus;
  for (int variant = 0; variant < 2; ++variant) {
    const fs::path path = directory_ / ("seed" + std::to_string(variant) + ".h5");
    {
      RunRecorder recorder(path);
      recorder.SetRootAttribute("run_id", "0123456789ab");
      recorder.SetRootAttribute("scenario", "ball_on_slope");
      recorder.SetSummary("max_rel_error", 0.01 * variant);
      recorder.SetSummary("regime", std::string("roll"));
      recorder.DeclareSeries("x", "m", "position");
      for (int i = 0; i < 10 * (variant + 1); ++i) recorder.AppendSeries("x", 0.01 * i, {1.0 * i});
      recorder.Finish(variant == 0 ? "ok" : "diverged", variant == 0 ? "" : "blew up", 10, 0.25);
    }
    corpus.push_back(ReadBytes(path));
  }
  const std::vector<std::string> tokens = {
      std::string(8, '\0'), std::string(8, '\xff'), "\x89HDF\r\n\x1a\n", "TREE", "HEAP", "SNOD", "OHDR", "GCOL"};
  // HDF5 1.10 crashes on some of these files and loops forever on others; the reader's
  // child process turns both into errors. A read of a file this small takes milliseconds,
  // so 5 s tells a hang from a slow machine.
  const fs::path file = directory_ / "fuzzed.h5";
  int crashed = 0, hung = 0;
  const FuzzTally tally = Fuzz<std::runtime_error>("run_file", corpus, tokens, [&](const std::string& input) {
    WriteBytes(file, input);
    try {
      ReadRunFile(file, std::chrono::seconds(5));
    } catch (const std::runtime_error& error) {
      crashed += std::string(error.what()).find("library crashed") != std::string::npos;
      hung += std::string(error.what()).find("took more than") != std::string::npos;
      throw;
    }
  });
  std::printf("run_file: the HDF5 library crashed on %d inputs and hung on %d\n", crashed, hung);
  EXPECT_GT(tally.rejected, 0);
}

// Checkpoints of short runs (penalty's attachment table, quasi_newton's lagged forces), resumed
// for one step. Every other input has its digest recomputed, so that what a damaged file never
// reaches, the record table and each component's loader, meets hostile bytes too.
TEST_F(InputFuzz, Checkpoints) {
  for (const char* formulation : {"penalty", "quasi_newton"}) {
    ParameterSet parameters = DeclareParameters("rolling_sphere", formulation);
    ApplyOverrides(FindScenario("rolling_sphere").short_run, parameters);
    parameters.Set("duration", ParameterValue{3.0 * parameters.GetDouble("dt")}, "test");
    const ResolvedRun run = FinishResolution("rolling_sphere", formulation, std::move(parameters));
    const fs::path seed_run = directory_ / (std::string(formulation) + "_seed.h5");
    CheckpointOptions stop;
    stop.stop_at = 1;
    ASSERT_EQ(ExecuteResolvedRun(run, seed_run.string(), true, stop).status, RunStatus::kStopped);
    const std::vector<std::string> corpus = {ReadBytes(CheckpointPath(seed_run))};
    const std::vector<std::string> tokens = {std::string(8, '\0'),
                                             std::string(8, '\xff'),
                                             "CLCKPT1\n",
                                             "world/particles/position",
                                             "formulation/attachments/particle",
                                             std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)};
    const fs::path file = directory_ / "fuzzed.checkpoint";
    const fs::path out = directory_ / "resumed.h5";
    std::int64_t count = 0;
    const FuzzTally tally =
        Fuzz<InputError>(std::string("checkpoint_") + formulation, corpus, tokens, [&](const std::string& input) {
          std::string bytes = input;
          if (count++ % 2 == 1 && bytes.size() >= 8) {
            const std::uint64_t digest = CheckpointDigest(std::string_view(bytes).substr(0, bytes.size() - 8));
            std::memcpy(bytes.data() + bytes.size() - 8, &digest, 8);
          }
          WriteBytes(file, bytes);
          RemoveCheckpoints(out);
          CheckpointOptions resume;
          resume.resume = file.string();
          resume.stop_at = 2;
          ExecuteResolvedRun(run, out.string(), true, resume);
        });
    EXPECT_GT(tally.rejected, 0);
  }
}

}  // namespace
}  // namespace contactlab::experiments
