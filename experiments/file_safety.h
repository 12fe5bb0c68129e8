#pragma once
// Where contactlab reads and writes files, in one place. Results folders are shared between
// people and machines, so every input is checked to be what it claims before it is read,
// and every output is created inside the folder it was asked for, never through a planted
// symbolic link, never over something that is not an earlier output, and checked before
// any work starts. Failures are InputErrors with one line naming the file.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contactlab::experiments {

// `what` ("configuration file", "sweep file", "manifest") is a regular file we may read.
// A folder, a device (/dev/zero), a FIFO or a missing or unreadable file is an InputError.
void RequireReadableFile(const std::filesystem::path& path, const std::string& what);

// Creates `folder` (and its parents) when missing; an InputError when it cannot be created
// or exists as something other than a folder, or when it is not writable.
void EnsureWritableFolder(const std::filesystem::path& folder, const std::string& what);

// `path` may receive a new output file: it names a file (no trailing slash), its folder is
// created and writable, and anything already at `path` is a regular file or a symbolic link
// (which the output replaces, never follows). Refuses folders, devices and FIFOs.
void CheckOutputPath(const std::filesystem::path& path, const std::string& what);

// Creates `path` exclusively (O_EXCL | O_NOFOLLOW: a symbolic link or file planted there is
// an error, never followed) and writes `bytes`; a short write (full disk, file size limit)
// removes the file and throws InputError naming it and the reason.
void CreateFileExclusively(const std::filesystem::path& path, std::string_view bytes);

// Writes `text` to `path` through "<path>.partial" and a rename, so a reader never sees a
// half-written manifest, table, failure record or script, and a symbolic link at `path` is
// replaced rather than followed. Nothing is left behind on failure.
void WriteFileAtomically(const std::filesystem::path& path, std::string_view text);

// Removes `path` when it is a regular file or a symbolic link (not what it points to).
void RemoveStaleFile(const std::filesystem::path& path);

// A folder `name` inside `parent`, created when missing and held open. It is opened with
// O_NOFOLLOW | O_DIRECTORY relative to the parent's descriptor, so a symbolic link planted
// under that name (or anything else that is not a folder) is refused with an InputError, and
// files are then created relative to the held descriptor: swapping the folder for a link
// afterwards changes nothing. `what` ("log folder") names it in messages.
class Subfolder {
 public:
  Subfolder(const std::filesystem::path& parent, const std::string& name, const std::string& what);
  ~Subfolder();
  Subfolder(const Subfolder&) = delete;
  Subfolder& operator=(const Subfolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Creates file `name` (no '/') in the folder afresh for writing and returns its descriptor
  // (O_CLOEXEC; the caller closes it): a file or symbolic link already there is removed, never
  // followed or truncated. InputError naming the file when it cannot be created.
  int CreateFreshFile(const std::string& name) const;

 private:
  int descriptor_ = -1;
  std::filesystem::path path_;
};

// InputError when `output` (the file `what` will write) is the same file as one of `inputs`
// (path and what it is: "sweep file", "manifest"), by path or by inode: an output option must
// never replace what the command reads or manages.
void RequireNotAnInput(const std::filesystem::path& output, const std::string& what,
                       const std::vector<std::pair<std::filesystem::path, std::string>>& inputs);

// An exclusive advisory lock on "<folder>/.contactlab.lock", held for the object's life:
// one `sweep run` per output folder. Throws InputError when another process holds it.
class FolderLock {
 public:
  FolderLock(const std::filesystem::path& folder, const std::string& purpose);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int descriptor_ = -1;
};

// True for the 12 lowercase hex digits RunId produces: a run_id is a file name inside the
// output folder and can never name anything outside it.
bool IsValidRunId(std::string_view run_id);

// InputError unless `text` (a path or name destined for a generated script) is free of
// control characters, which no quoting can carry into a comment or directive. (InputError
// messages escape control characters themselves: see OneLine in formulations/parameters.h.)
void RequireNoControlCharacters(std::string_view text, const std::string& what);

}  // namespace contactlab::experiments
