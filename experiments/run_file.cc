#include "experiments/run_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace contactlab::experiments {
namespace {

// Owns an HDF5 identifier.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  Closer close_;
};

// Attribute and dataset text longer than this is not something RunRecorder wrote.
constexpr std::size_t kMaxStringBytes = 64u << 20;

// Reads a string from an attribute or dataset of string type `type` (variable or fixed
// length) whose dataspace the caller checked to be scalar.
template <typename ReadFunction>
std::string ReadString(hid_t type, ReadFunction read) {
  if (H5Tis_variable_str(type) > 0) {
    Id memory_type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory_type.get(), H5T_VARIABLE);
    H5Tset_cset(memory_type.get(), H5Tget_cset(type));
    char* text = nullptr;
    if (read(memory_type.get(), static_cast<void*>(&text)) < 0) throw std::runtime_error("unreadable string");
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  const std::size_t size = H5Tget_size(type);
  if (size == 0 || size > kMaxStringBytes) throw std::runtime_error("string of " + std::to_string(size) + " bytes");
  std::string value(size, '\0');
  if (read(type, static_cast<void*>(value.data())) < 0) throw std::runtime_error("unreadable string");
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

// Why `object`'s dataspace is not a single value ("" when it is scalar).
std::string NotScalar(hid_t space) {
  if (space < 0) return "has no readable dataspace";
  const H5S_class_t kind = H5Sget_simple_extent_type(space);
  if (kind == H5S_SCALAR) return "";
  if (kind == H5S_NULL) return "is empty (null dataspace)";
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > H5S_MAX_RANK) return "has an unreadable shape";
  hsize_t dims[H5S_MAX_RANK] = {};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  std::string shape;
  for (int d = 0; d < rank; ++d) shape += (d ? " x " : "") + std::to_string(dims[d]);
  return "is an array (" + shape + "), not a scalar";
}

// One scalar attribute, typed by its class: string, integer (1 byte: a boolean), float.
// Anything else, including arrays of any of these, is an error naming why.
AttributeValue ReadAttribute(hid_t attribute) {
  {
    Id space(H5Aget_space(attribute), H5Sclose);
    const std::string why = NotScalar(space.get());
    if (!why.empty()) throw std::runtime_error(why);
  }
  Id type(H5Aget_type(attribute), H5Tclose);
  if (!type.valid()) throw std::runtime_error("has no readable type");
  const auto read = [attribute](hid_t memory_type, void* buffer) { return H5Aread(attribute, memory_type, buffer); };
  switch (H5Tget_class(type.get())) {
    case H5T_STRING:
      return ReadString(type.get(), read);
    case H5T_INTEGER: {
      if (H5Tget_size(type.get()) == 1) {  // booleans are stored as int8
        std::int8_t flag = 0;
        if (read(H5T_NATIVE_INT8, &flag) < 0) break;
        return flag != 0;
      }
      std::int64_t integer = 0;
      if (read(H5T_NATIVE_INT64, &integer) < 0) break;
      return integer;
    }
    case H5T_FLOAT: {
      double real = 0.0;
      if (read(H5T_NATIVE_DOUBLE, &real) < 0) break;
      return real;
    }
    default:
      throw std::runtime_error("has a type that is not a string, integer or float");
  }
  throw std::runtime_error("cannot be read as its type");
}

// Every attribute of `object` (at `where`, e.g. "/summary"); the first malformed one is an
// error naming it.
std::map<std::string, AttributeValue> ReadAttributes(hid_t object, const std::string& where) {
  struct Visit {
    std::map<std::string, AttributeValue> attributes;
    std::string error;
  } visit;
  const auto callback = [](hid_t location, const char* name, const H5A_info_t*, void* data) -> herr_t {
    auto& state = *static_cast<Visit*>(data);
    Id attribute(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
    try {
      if (!attribute.valid()) throw std::runtime_error("cannot be opened");
      state.attributes[name] = ReadAttribute(attribute.get());
    } catch (const std::exception& error) {
      state.error = std::string("attribute '") + name + "' " + error.what();
      return -1;
    }
    return 0;
  };
  hsize_t position = 0;
  if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &position, callback, &visit) < 0) {
    throw std::runtime_error(where + ": " + (visit.error.empty() ? "unreadable attributes" : visit.error));
  }
  return std::move(visit.attributes);
}

// The contents of a run file as bytes, to cross from the reading child to the caller:
// per map a count, then per entry the key and a tagged value (doubles bit for bit).
class Encoder {
 public:
  void Text(const std::string& text) {
    Number(static_cast<std::uint64_t>(text.size()));
    bytes_ += text;
  }
  void Number(std::uint64_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof(value)); }
  void Value(const AttributeValue& value) {
    bytes_ += static_cast<char>(value.index());
    if (const auto* flag = std::get_if<bool>(&value)) Number(*flag ? 1 : 0);
    if (const auto* integer = std::get_if<std::int64_t>(&value)) Number(static_cast<std::uint64_t>(*integer));
    if (const auto* real = std::get_if<double>(&value)) Number(std::bit_cast<std::uint64_t>(*real));
    if (const auto* text = std::get_if<std::string>(&value)) Text(*text);
  }
  template <typename Map, typename Write>
  void Entries(const Map& map, Write write) {
    Number(map.size());
    for (const auto& [key, value] : map) {
      Text(key);
      (this->*write)(value);
    }
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Decoder {
 public:
  explicit Decoder(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t Number() {
    if (bytes_.size() < sizeof(std::uint64_t)) throw std::runtime_error("truncated contents from the reader");
    std::uint64_t value = 0;
    std::memcpy(&value, bytes_.data(), sizeof(value));
    bytes_.remove_prefix(sizeof(value));
    return value;
  }
  std::string Text() {
    const std::uint64_t size = Number();
    if (bytes_.size() < size) throw std::runtime_error("truncated contents from the reader");
    std::string text(bytes_.substr(0, size));
    bytes_.remove_prefix(size);
    return text;
  }
  AttributeValue Value() {
    if (bytes_.empty()) throw std::runtime_error("truncated contents from the reader");
    const char tag = bytes_.front();
    bytes_.remove_prefix(1);
    switch (tag) {
      case 0:
        return Number() != 0;
      case 1:
        return static_cast<std::int64_t>(Number());
      case 2:
        return std::bit_cast<double>(Number());
      case 3:
        return Text();
      default:
        throw std::runtime_error("malformed contents from the reader");
    }
  }
  template <typename Map, typename Read>
  void Entries(Map& map, Read read) {
    for (std::uint64_t count = Number(); count > 0; --count) {
      std::string key = Text();
      map[key] = (this->*read)();
    }
  }

 private:
  std::string_view bytes_;
};

// Reads `name` in this process. HDF5 1.10 is not safe on malformed files (a corrupted
// global heap makes H5Aread copy out of bounds), so ReadRunFile calls this in a child.
RunFileContents ReadRunFileHere(const std::string& name) {
  // Silence HDF5's own error printing: a failure becomes one exception with the file name.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(name.c_str()) <= 0) throw std::runtime_error(name + ": not an HDF5 file");
  Id handle(H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!handle.valid()) throw std::runtime_error(name + ": cannot open");
  RunFileContents contents;
  try {
    for (auto& [key, value] : ReadAttributes(handle.get(), "/")) {
      if (const auto* text = std::get_if<std::string>(&value)) contents.root[key] = *text;
    }
    if (contents.root.count("run_id") == 0) throw std::runtime_error("no run_id attribute (not a contactlab run)");
    Id summary(H5Gopen2(handle.get(), "summary", H5P_DEFAULT), H5Gclose);
    if (!summary.valid()) throw std::runtime_error("no /summary group");
    contents.summary = ReadAttributes(summary.get(), "/summary");
    Id params(H5Gopen2(handle.get(), "params", H5P_DEFAULT), H5Gclose);
    if (!params.valid()) throw std::runtime_error("no /params group");
    const auto ends_with = [](const std::string& key, const std::string& suffix) {
      return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    for (auto& [key, value] : ReadAttributes(params.get(), "/params")) {
      if (!ends_with(key, ".unit") && !ends_with(key, ".rule")) contents.params[key] = std::move(value);
    }
    Id config(H5Dopen2(handle.get(), "config", H5P_DEFAULT), H5Dclose);
    if (!config.valid()) throw std::runtime_error("no /config dataset");
    {
      Id space(H5Dget_space(config.get()), H5Sclose);
      const std::string why = NotScalar(space.get());
      if (!why.empty()) throw std::runtime_error("/config " + why);
    }
    Id type(H5Dget_type(config.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) throw std::runtime_error("/config is not a string");
    contents.config = ReadString(type.get(), [&config](hid_t memory_type, void* buffer) {
      return H5Dread(config.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
    });
  } catch (const std::exception& error) {
    throw std::runtime_error(name + ": " + error.what());
  }
  return contents;
}

// A failure to read `name`, as one line (the name and the file's contents may hold
// control characters).
[[noreturn]] void Fail(const std::string& name, const std::string& why) {
  throw std::runtime_error(OneLine(name + ": " + why));
}

}  // namespace

RunFileContents ReadRunFile(const std::filesystem::path& file, std::chrono::milliseconds timeout) {
  const std::string name = file.string();
  // A run file is a regular file we can read: a FIFO would block H5Fis_hdf5, and a
  // permission problem is reported as such rather than as "not an HDF5 file".
  struct stat info {};
  if (::stat(name.c_str(), &info) != 0) Fail(name, std::strerror(errno));
  if (!S_ISREG(info.st_mode)) Fail(name, "not a regular file");
  if (::access(name.c_str(), R_OK) != 0) Fail(name, std::strerror(errno));

  // The file is read by a child process: a malformed file that crashes or hangs HDF5 then
  // becomes an error naming the file, never a crash of `collect` or of a sweep.
  int channel[2];
  if (::pipe2(channel, O_CLOEXEC) != 0) Fail(name, std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(channel[0]);
    ::close(channel[1]);
    Fail(name, std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    // The reader dies with its caller: a killed `collect` must not leave it running on a file
    // that hangs HDF5. (The check after the request covers a caller that died before it.)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(channel[0]);
    Encoder encoder;
    try {
      const RunFileContents contents = ReadRunFileHere(name);
      encoder.bytes().assign(1, 'O');
      encoder.Entries(contents.root, &Encoder::Text);
      encoder.Entries(contents.summary, &Encoder::Value);
      encoder.Entries(contents.params, &Encoder::Value);
      encoder.Text(contents.config);
    } catch (const std::exception& error) {
      encoder.bytes().assign(1, 'E');
      encoder.bytes().append(error.what());
    }
    const std::string& bytes = encoder.bytes();
    for (std::size_t sent = 0; sent < bytes.size();) {
      const ssize_t count = ::write(channel[1], bytes.data() + sent, bytes.size() - sent);
      if (count < 0 && errno == EINTR) continue;
      if (count <= 0) break;
      sent += static_cast<std::size_t>(count);
    }
    ::_exit(0);  // no exit handlers: HDF5's would run on the child's copy of its state
  }
  ::close(channel[1]);
  std::string reply;
  bool timed_out = false;
  for (;;) {
    pollfd ready{channel[0], POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(timeout.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) {
      timed_out = true;
      ::kill(child, SIGKILL);
      break;
    }
    char buffer[65536];
    const ssize_t count = ::read(channel[0], buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(count));
  }
  ::close(channel[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%g s", static_cast<double>(timeout.count()) / 1000.0);
    Fail(name, std::string("reading it took more than ") + limit + " (a malformed file that hangs the HDF5 library?)");
  }
  if (WIFSIGNALED(status)) {
    Fail(name,
         std::string("malformed HDF5 file (the HDF5 library crashed reading it: ") + strsignal(WTERMSIG(status)) + ")");
  }
  if (reply.empty()) Fail(name, "the reader ended without a reply");
  if (reply.front() == 'E') throw std::runtime_error(OneLine(std::string_view(reply).substr(1)));  // names the file
  RunFileContents contents;
  Decoder decoder(std::string_view(reply).substr(1));
  decoder.Entries(contents.root, &Decoder::Text);
  decoder.Entries(contents.summary, &Decoder::Value);
  decoder.Entries(contents.params, &Decoder::Value);
  contents.config = decoder.Text();
  return contents;
}

}  // namespace contactlab::experiments
