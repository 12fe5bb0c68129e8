#include "experiments/file_safety.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "formulations/parameters.h"

namespace contactlab::experiments {
namespace {

std::string ErrnoText(int error) {
  return std::strerror(error);
}

// What a path that is not a regular file is, for messages.
std::string Kind(const struct stat& info) {
  if (S_ISDIR(info.st_mode)) return "a folder";
  if (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode)) return "a device";
  if (S_ISFIFO(info.st_mode)) return "a FIFO";
  if (S_ISSOCK(info.st_mode)) return "a socket";
  if (S_ISREG(info.st_mode)) return "a file";
  return "not a regular file";
}

}  // namespace

void RequireReadableFile(const std::filesystem::path& path, const std::string& what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(path.string() + ": cannot open " + what + ": " + ErrnoText(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    throw InputError(path.string() + ": cannot read " + what + ": it is " + Kind(info));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw InputError(path.string() + ": cannot read " + what + ": " + ErrnoText(errno));
  }
}

void EnsureWritableFolder(const std::filesystem::path& folder, const std::string& what) {
  const std::filesystem::path target = folder.empty() ? std::filesystem::path(".") : folder;
  std::error_code error;
  std::filesystem::create_directories(target, error);
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) {
    const int code = errno;
    throw InputError(target.string() + ": cannot create " + what + ": " + (error ? error.message() : ErrnoText(code)));
  }
  if (!S_ISDIR(info.st_mode)) {
    throw InputError(target.string() + ": cannot be the " + what + ": it is " + Kind(info));
  }
  if (::access(target.c_str(), W_OK | X_OK) != 0) {
    throw InputError(target.string() + ": cannot write in the " + what + ": " + ErrnoText(errno));
  }
}

void CheckOutputPath(const std::filesystem::path& path, const std::string& what) {
  const std::string text = path.string();
  if (text.empty()) throw InputError(what + ": no file name given");
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == ".." || text.back() == '/') {
    throw InputError(text + ": the " + what + " must name a file, not a folder");
  }
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  EnsureWritableFolder(folder, "folder of the " + what);
  const long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  // "<name>.partial" must fit too.
  if (name_max > 0 && static_cast<long>(name.size() + 8) > name_max) {
    throw InputError(text + ": the " + what + "'s name is too long (" + std::to_string(name.size()) +
                     " bytes, at most " + std::to_string(name_max - 8) + " here)");
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISLNK(info.st_mode)) {
    throw InputError(text + ": refusing to replace it with the " + what + ": it is " + Kind(info));
  }
}

void CreateFileExclusively(const std::filesystem::path& path, std::string_view bytes) {
  const int descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (descriptor < 0) {
    const int code = errno;
    throw InputError(path.string() + ": cannot create: " +
                     (code == EEXIST ? "it exists (another process writing it, or a planted file)" : ErrnoText(code)));
  }
  std::size_t written = 0;
  int failure = 0;
  while (written < bytes.size()) {
    const ssize_t count = ::write(descriptor, bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      failure = count < 0 ? errno : ENOSPC;
      break;
    }
    written += static_cast<std::size_t>(count);
  }
  // On disk before the rename that publishes it: a machine that fails right after finds the
  // old file or the whole new one, never a renamed empty one.
  if (failure == 0 && ::fsync(descriptor) != 0) failure = errno;
  if (::close(descriptor) != 0 && failure == 0) failure = errno;
  if (failure != 0) {
    ::unlink(path.c_str());
    throw InputError(path.string() + ": cannot write " + std::to_string(bytes.size()) +
                     " bytes: " + ErrnoText(failure));
  }
}

void RemoveStaleFile(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && (S_ISREG(info.st_mode) || S_ISLNK(info.st_mode))) {
    ::unlink(path.c_str());
  }
}

void WriteFileAtomically(const std::filesystem::path& path, std::string_view text) {
  CheckOutputPath(path, "output file");
  const std::filesystem::path partial = std::filesystem::path(path).concat(".partial");
  RemoveStaleFile(partial);
  CreateFileExclusively(partial, text);
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    const int code = errno;
    ::unlink(partial.c_str());
    throw InputError(path.string() + ": cannot replace: " + ErrnoText(code));
  }
}

Subfolder::Subfolder(const std::filesystem::path& parent, const std::string& name, const std::string& what)
    : path_(parent / name) {
  const std::filesystem::path parent_folder = parent.empty() ? std::filesystem::path(".") : parent;
  const int parent_descriptor = ::open(parent_folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_descriptor < 0) {
    throw InputError(parent_folder.string() + ": cannot open the folder of the " + what + ": " + ErrnoText(errno));
  }
  if (::mkdirat(parent_descriptor, name.c_str(), 0755) != 0 && errno != EEXIST) {
    const int code = errno;
    ::close(parent_descriptor);
    throw InputError(path_.string() + ": cannot create the " + what + ": " + ErrnoText(code));
  }
  descriptor_ = ::openat(parent_descriptor, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int code = errno;
  struct stat info {};
  const bool described = ::fstatat(parent_descriptor, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
  ::close(parent_descriptor);
  if (descriptor_ < 0) {
    if (described && S_ISLNK(info.st_mode)) {
      throw InputError(path_.string() + ": refusing to use it as the " + what +
                       ": it is a symbolic link (remove it; the " + what + " is never written through a link)");
    }
    if (described && !S_ISDIR(info.st_mode)) {
      throw InputError(path_.string() + ": cannot be the " + what + ": it is " + Kind(info));
    }
    throw InputError(path_.string() + ": cannot open the " + what + ": " + ErrnoText(code));
  }
  if (::faccessat(descriptor_, ".", W_OK | X_OK, 0) != 0) {
    const int access_code = errno;
    ::close(descriptor_);
    descriptor_ = -1;
    throw InputError(path_.string() + ": cannot write in the " + what + ": " + ErrnoText(access_code));
  }
}

Subfolder::~Subfolder() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

int Subfolder::CreateFreshFile(const std::string& name) const {
  struct stat info {};
  if (::fstatat(descriptor_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
      (S_ISREG(info.st_mode) || S_ISLNK(info.st_mode))) {
    ::unlinkat(descriptor_, name.c_str(), 0);
  }
  const int file = ::openat(descriptor_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (file < 0) {
    const int code = errno;
    throw InputError((path_ / name).string() + ": cannot create: " +
                     (code == EEXIST ? "something that is not a file is in the way" : ErrnoText(code)));
  }
  return file;
}

void RequireNotAnInput(const std::filesystem::path& output, const std::string& what,
                       const std::vector<std::pair<std::filesystem::path, std::string>>& inputs) {
  std::error_code error;
  const std::filesystem::path output_path = std::filesystem::weakly_canonical(output, error);
  struct stat output_info {};
  const bool output_exists = ::stat(output.c_str(), &output_info) == 0;
  for (const auto& [input, input_what] : inputs) {
    std::error_code input_error;
    const std::filesystem::path input_path = std::filesystem::weakly_canonical(input, input_error);
    struct stat input_info {};
    const bool same_inode = output_exists && ::stat(input.c_str(), &input_info) == 0 &&
                            input_info.st_dev == output_info.st_dev && input_info.st_ino == output_info.st_ino;
    if (same_inode || (!error && !input_error && output_path == input_path)) {
      throw InputError(output.string() + ": refusing to write the " + what + " over the " + input_what + " (" +
                       input.string() + ")");
    }
  }
}

FolderLock::FolderLock(const std::filesystem::path& folder, const std::string& purpose) {
  const std::filesystem::path file = folder / ".contactlab.lock";
  descriptor_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (descriptor_ < 0) throw InputError(file.string() + ": cannot open the folder's lock: " + ErrnoText(errno));
  if (::flock(descriptor_, LOCK_EX | LOCK_NB) != 0) {
    const int code = errno;
    char holder[32] = {};
    const ssize_t count = ::pread(descriptor_, holder, sizeof(holder) - 1, 0);
    ::close(descriptor_);
    descriptor_ = -1;
    if (code != EWOULDBLOCK) throw InputError(file.string() + ": cannot lock: " + ErrnoText(code));
    std::string pid = count > 0 ? std::string(holder, static_cast<std::size_t>(count)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    throw InputError(folder.string() + ": another contactlab process (pid " + pid + ") is " + purpose +
                     " in this folder; wait for it or choose another --out-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(descriptor_, 0) == 0) {
    [[maybe_unused]] const ssize_t ignored = ::pwrite(descriptor_, pid.data(), pid.size(), 0);
  }
}

FolderLock::~FolderLock() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

bool IsValidRunId(std::string_view run_id) {
  if (run_id.size() != 12) return false;
  for (const char c : run_id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void RequireNoControlCharacters(std::string_view text, const std::string& what) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      throw InputError(what + " '" + std::string(text) +
                       "' contains a control character (a newline?), which a generated script cannot carry");
    }
  }
}

}  // namespace contactlab::experiments
