#include "experiments/checkpoint.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <system_error>

#include "experiments/config.h"
#include "experiments/file_safety.h"
#include "formulations/parameters.h"

namespace contactlab::experiments {
namespace {

constexpr char kMagic[8] = {'C', 'L', 'C', 'K', 'P', 'T', '1', '\n'};

void AppendWord(std::string& out, std::uint64_t word) {
  out.append(reinterpret_cast<const char*>(&word), sizeof(word));
}

// Reads the checkpoint's bytes in order, each read bounds-checked.
class CheckpointReader {
 public:
  CheckpointReader(std::string_view bytes, const std::filesystem::path& path) : bytes_(bytes), path_(path) {}
  std::string_view Take(std::size_t size, const char* what) {
    if (size > bytes_.size() - offset_) Fail(std::string("is truncated in ") + what);
    const std::string_view taken = bytes_.substr(offset_, size);
    offset_ += size;
    return taken;
  }
  std::uint64_t Word(const char* what) {
    std::uint64_t word = 0;
    std::memcpy(&word, Take(sizeof(word), what).data(), sizeof(word));
    return word;
  }
  bool at_end() const { return offset_ == bytes_.size(); }
  [[noreturn]] void Fail(const std::string& why) const {
    throw InputError(path_.string() + ": not a usable checkpoint: it " + why);
  }

 private:
  std::string_view bytes_;
  const std::filesystem::path& path_;
  std::size_t offset_ = 0;
};

std::string ReadWholeFile(const std::filesystem::path& path) {
  RequireReadableFile(path, "checkpoint");
  std::ifstream stream(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  if (stream.bad()) throw InputError(path.string() + ": cannot read the checkpoint");
  return bytes;
}

}  // namespace

std::uint64_t CheckpointDigest(std::string_view bytes) {
  return Fnv1a64(bytes);
}

std::filesystem::path CheckpointPath(const std::filesystem::path& run_file) {
  return std::filesystem::path(run_file).concat(".checkpoint");
}

std::filesystem::path PreviousCheckpointPath(const std::filesystem::path& run_file) {
  return std::filesystem::path(run_file).concat(".checkpoint.previous");
}

std::optional<std::filesystem::path> FindCheckpoint(const std::filesystem::path& run_file) {
  std::error_code error;
  for (const std::filesystem::path& path : {CheckpointPath(run_file), PreviousCheckpointPath(run_file)}) {
    if (std::filesystem::exists(std::filesystem::symlink_status(path, error))) return path;
  }
  return std::nullopt;
}

std::size_t WriteCheckpoint(const std::filesystem::path& run_file, const StateArchive::Records& records) {
  std::string bytes(kMagic, sizeof(kMagic));
  AppendWord(bytes, records.size());
  for (const auto& [name, record] : records) {
    AppendWord(bytes, name.size());
    bytes.append(name);
    AppendWord(bytes, record.size());
    bytes.append(record);
  }
  AppendWord(bytes, CheckpointDigest(bytes));
  const std::filesystem::path current = CheckpointPath(run_file);
  const std::filesystem::path partial = std::filesystem::path(current).concat(".partial");
  CheckOutputPath(current, "checkpoint");
  RemoveStaleFile(partial);
  CreateFileExclusively(partial, bytes);
  std::error_code error;
  if (std::filesystem::is_regular_file(std::filesystem::symlink_status(current, error))) {
    std::filesystem::rename(current, PreviousCheckpointPath(run_file), error);
    if (error) throw InputError(current.string() + ": cannot keep it as the previous checkpoint: " + error.message());
  }
  std::filesystem::rename(partial, current, error);
  if (error) {
    RemoveStaleFile(partial);
    throw InputError(current.string() + ": cannot write the checkpoint: " + error.message());
  }
  return bytes.size();
}

StateArchive::Records ReadCheckpoint(const std::filesystem::path& path) {
  const std::string bytes = ReadWholeFile(path);
  CheckpointReader reader(bytes, path);
  if (reader.Take(sizeof(kMagic), "its header") != std::string_view(kMagic, sizeof(kMagic))) {
    reader.Fail("does not start as a contactlab checkpoint");
  }
  if (bytes.size() < sizeof(kMagic) + 16) reader.Fail("is truncated");
  const std::string_view body(bytes.data(), bytes.size() - 8);
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body.size(), 8);
  if (stored != CheckpointDigest(body)) reader.Fail("is damaged or truncated (its digest does not match)");
  CheckpointReader records_reader(body, path);
  records_reader.Take(sizeof(kMagic), "its header");
  const std::uint64_t count = records_reader.Word("its record count");
  StateArchive::Records records;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t name_size = records_reader.Word("a record name's length");
    const std::string_view name = records_reader.Take(name_size, "a record name");
    const std::uint64_t size = records_reader.Word("a record's size");
    const std::string_view record = records_reader.Take(size, "a record");
    if (!records.emplace(std::string(name), std::string(record)).second) {
      records_reader.Fail("holds record '" + std::string(name) + "' twice");
    }
  }
  if (!records_reader.at_end()) records_reader.Fail("has bytes after its last record");
  return records;
}

void RemoveCheckpoints(const std::filesystem::path& run_file) {
  RemoveStaleFile(CheckpointPath(run_file));
  RemoveStaleFile(PreviousCheckpointPath(run_file));
  RemoveStaleFile(std::filesystem::path(CheckpointPath(run_file)).concat(".partial"));
}

CheckpointInterval ParseCheckpointInterval(const std::string& text) {
  const auto fail = [&text]() -> CheckpointInterval {
    throw InputError("--checkpoint-every '" + text +
                     "': give a number of steps (200) or a wall time with a unit (90s, 30min, 2h)");
  };
  std::size_t used = 0;
  double number = 0.0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return fail();
  }
  const std::string unit = text.substr(used);
  CheckpointInterval interval;
  if (!(number > 0.0) || !std::isfinite(number)) return fail();
  if (unit.empty()) {
    if (number != std::floor(number) || number > 1e9) return fail();
    interval.steps = static_cast<int>(number);
  } else if (unit == "s") {
    interval.seconds = number;
  } else if (unit == "min") {
    interval.seconds = 60.0 * number;
  } else if (unit == "h") {
    interval.seconds = 3600.0 * number;
  } else {
    return fail();
  }
  return interval;
}

}  // namespace contactlab::experiments
