#include "formulations/state_archive.h"

namespace contactlab {
namespace state_archive_detail {

const char* RecordReader::Take(std::size_t size) {
  if (size > remaining()) {
    Fail("ends after " + std::to_string(bytes_.size()) + " bytes, " + std::to_string(size - remaining()) +
         " short of its field");
  }
  const char* start = bytes_.data() + offset_;
  offset_ += size;
  return start;
}

std::size_t RecordReader::TakeCount(std::size_t element_bytes) {
  std::uint64_t count = 0;
  std::memcpy(&count, Take(sizeof(count)), sizeof(count));
  if (element_bytes > 0 && count > remaining() / element_bytes) {
    Fail("a count of " + std::to_string(count) + " that the remaining " + std::to_string(remaining()) +
         " bytes cannot hold");
  }
  return static_cast<std::size_t>(count);
}

void RecordReader::Fail(const std::string& why) const {
  throw StateArchiveError("record '" + std::string(name_) + "': " + why);
}

}  // namespace state_archive_detail

StateArchive::Scope::Scope(StateArchive& archive, std::string_view name)
    : archive_(archive), previous_size_(archive.prefix_.size()) {
  archive_.prefix_.append(name);
  archive_.prefix_.push_back('/');
}

StateArchive::Scope::~Scope() {
  archive_.prefix_.resize(previous_size_);
}

void StateArchive::Put(const std::string& key, std::string bytes) {
  if (!records_.emplace(key, std::move(bytes)).second) {
    throw std::logic_error("StateArchive: record '" + key + "' saved twice");
  }
}

const std::string& StateArchive::Get(const std::string& key) {
  const auto found = records_.find(key);
  if (found == records_.end()) throw StateArchiveError("record '" + key + "' is missing");
  read_.insert(key);
  return found->second;
}

void StateArchive::CheckEverythingRead() const {
  for (const auto& [key, bytes] : records_) {
    if (!read_.contains(key)) throw StateArchiveError("record '" + key + "' is not state this build reads");
  }
}

void StateArchive::Fail(std::string_view name, const std::string& why) const {
  throw StateArchiveError("record '" + prefix_ + std::string(name) + "' " + why);
}

}  // namespace contactlab
