#pragma once
// The state a run carries from one step to the next, as named binary records: what a
// checkpoint holds (experiments/checkpoint.h writes and reads the file).
//
// Each stateful component lists its fields once, in a VisitState(StateArchive&) function that
// serves both directions: saving copies each field into a record, loading copies each record
// back into its field. One list for both ways means saving and loading cannot drift apart.
// Records are raw bytes in the machine's layout: a checkpoint is read back by the build that
// wrote it (the checkpoint records that build and resume refuses another), which is what makes
// a resumed run bit for bit equal to an uninterrupted one.
//
// Loading is defensive: a record that is missing, too short or too long, a count larger than
// the bytes that remain, or a record no component read, fails with StateArchiveError naming
// the record, never with a crash or a half-filled field.
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

namespace contactlab {

class StateArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace state_archive_detail {

// Bytes of a record being decoded; every read is bounds-checked.
class RecordReader {
 public:
  RecordReader(std::string_view bytes, std::string_view name) : bytes_(bytes), name_(name) {}
  // The next `size` bytes, or StateArchiveError when fewer remain.
  const char* Take(std::size_t size);
  // A count of elements of at least `element_bytes` each, checked against what remains so
  // that a corrupted count cannot ask for a huge allocation.
  std::size_t TakeCount(std::size_t element_bytes);
  std::size_t remaining() const { return bytes_.size() - offset_; }
  [[noreturn]] void Fail(const std::string& why) const;

 private:
  std::string_view bytes_;
  std::string_view name_;
  std::size_t offset_ = 0;
};

template <typename T>
struct IsStdVector : std::false_type {};
template <typename T, typename A>
struct IsStdVector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct IsStdArray : std::false_type {};
template <typename T, std::size_t N>
struct IsStdArray<std::array<T, N>> : std::true_type {};
template <typename T>
struct IsStdPair : std::false_type {};
template <typename A, typename B>
struct IsStdPair<std::pair<A, B>> : std::true_type {};
template <typename T>
struct IsStdOptional : std::false_type {};
template <typename T>
struct IsStdOptional<std::optional<T>> : std::true_type {};

template <typename T>
constexpr bool kIsEigenPlain = std::is_base_of_v<Eigen::PlainObjectBase<T>, T>;

// Plain values copied as bytes: numbers, enums and structs of them (no pointers, no owned
// memory). bool is excluded: its bytes are checked on loading.
template <typename T>
constexpr bool kIsPlainBytes = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !std::is_same_v<T, bool> &&
                               !kIsEigenPlain<T> && !IsStdArray<T>::value && !IsStdPair<T>::value;

// The fewest bytes one encoded element takes (bounds the counts a reader accepts).
template <typename T>
constexpr std::size_t MinimumEncodedBytes() {
  if constexpr (kIsPlainBytes<T>) return sizeof(T);
  if constexpr (kIsEigenPlain<T>) {
    return T::SizeAtCompileTime == Eigen::Dynamic ? 16 : sizeof(typename T::Scalar) * T::SizeAtCompileTime;
  }
  return 1;
}

template <typename T>
void Encode(std::string& out, const T& value);
template <typename T>
void Decode(RecordReader& in, T& value);

template <typename T>
void Encode(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(value ? 1 : 0);
  } else if constexpr (kIsPlainBytes<T>) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(T));
  } else if constexpr (kIsEigenPlain<T>) {
    using Scalar = typename T::Scalar;
    static_assert(std::is_arithmetic_v<Scalar>, "StateArchive: Eigen objects of numbers only");
    if constexpr (T::SizeAtCompileTime == Eigen::Dynamic) {
      const std::int64_t rows = value.rows(), cols = value.cols();
      Encode(out, rows);
      Encode(out, cols);
    }
    out.append(reinterpret_cast<const char*>(value.data()), sizeof(Scalar) * static_cast<std::size_t>(value.size()));
  } else if constexpr (std::is_same_v<T, std::string>) {
    Encode(out, static_cast<std::uint64_t>(value.size()));
    out.append(value);
  } else if constexpr (IsStdVector<T>::value) {
    using Element = typename T::value_type;
    Encode(out, static_cast<std::uint64_t>(value.size()));
    if constexpr (kIsPlainBytes<Element>) {
      out.append(reinterpret_cast<const char*>(value.data()), sizeof(Element) * value.size());
    } else {
      for (const auto& element : value) Encode(out, static_cast<const Element&>(element));
    }
  } else if constexpr (IsStdArray<T>::value) {
    for (const auto& element : value) Encode(out, element);
  } else if constexpr (IsStdPair<T>::value) {
    Encode(out, value.first);
    Encode(out, value.second);
  } else if constexpr (IsStdOptional<T>::value) {
    Encode(out, value.has_value());
    if (value) Encode(out, *value);
  } else {
    static_assert(sizeof(T) == 0, "StateArchive: no encoding for this type; visit its fields instead");
  }
}

template <typename T>
void Decode(RecordReader& in, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    const char byte = *in.Take(1);
    if (byte != 0 && byte != 1) in.Fail("a flag that is neither 0 nor 1");
    value = byte == 1;
  } else if constexpr (kIsPlainBytes<T>) {
    std::memcpy(static_cast<void*>(&value), in.Take(sizeof(T)), sizeof(T));
  } else if constexpr (kIsEigenPlain<T>) {
    using Scalar = typename T::Scalar;
    if constexpr (T::SizeAtCompileTime == Eigen::Dynamic) {
      std::int64_t rows = 0, cols = 0;
      Decode(in, rows);
      Decode(in, cols);
      const bool rows_fit = T::RowsAtCompileTime == Eigen::Dynamic ? rows >= 0 : rows == T::RowsAtCompileTime;
      const bool cols_fit = T::ColsAtCompileTime == Eigen::Dynamic ? cols >= 0 : cols == T::ColsAtCompileTime;
      const bool within_max = (T::MaxRowsAtCompileTime == Eigen::Dynamic || rows <= T::MaxRowsAtCompileTime) &&
                              (T::MaxColsAtCompileTime == Eigen::Dynamic || cols <= T::MaxColsAtCompileTime);
      if (!rows_fit || !cols_fit || !within_max ||
          (cols > 0 &&
           static_cast<std::uint64_t>(rows) > in.remaining() / sizeof(Scalar) / static_cast<std::uint64_t>(cols))) {
        in.Fail("a matrix of " + std::to_string(rows) + " x " + std::to_string(cols) + " that does not fit");
      }
      value.resize(rows, cols);
    }
    const std::size_t bytes = sizeof(Scalar) * static_cast<std::size_t>(value.size());
    std::memcpy(static_cast<void*>(value.data()), in.Take(bytes), bytes);
  } else if constexpr (std::is_same_v<T, std::string>) {
    const std::size_t size = in.TakeCount(1);
    value.assign(in.Take(size), size);
  } else if constexpr (IsStdVector<T>::value) {
    using Element = typename T::value_type;
    const std::size_t count = in.TakeCount(MinimumEncodedBytes<Element>());
    value.clear();
    value.resize(count);
    if constexpr (kIsPlainBytes<Element>) {
      std::memcpy(static_cast<void*>(value.data()), in.Take(sizeof(Element) * count), sizeof(Element) * count);
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        Element element{};
        Decode(in, element);
        value[i] = std::move(element);
      }
    }
  } else if constexpr (IsStdArray<T>::value) {
    for (auto& element : value) Decode(in, element);
  } else if constexpr (IsStdPair<T>::value) {
    Decode(in, value.first);
    Decode(in, value.second);
  } else if constexpr (IsStdOptional<T>::value) {
    bool present = false;
    Decode(in, present);
    if (!present) {
      value.reset();
    } else {
      typename T::value_type inner{};
      Decode(in, inner);
      value = std::move(inner);
    }
  } else {
    static_assert(sizeof(T) == 0, "StateArchive: no encoding for this type; visit its fields instead");
  }
}

}  // namespace state_archive_detail

class StateArchive {
 public:
  // Name → bytes.
  using Records = std::map<std::string, std::string, std::less<>>;

  // An archive that collects the fields it visits.
  static StateArchive ForSaving() { return StateArchive(true, {}); }
  // An archive that hands `records` back to the fields that visit it.
  static StateArchive ForLoading(Records records) { return StateArchive(false, std::move(records)); }

  bool saving() const { return saving_; }
  bool loading() const { return !saving_; }

  // Names visited while a Scope lives are prefixed with "<name>/".
  class Scope {
   public:
    Scope(StateArchive& archive, std::string_view name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StateArchive& archive_;
    std::size_t previous_size_;
  };

  // Saves `value` under `name`, or loads it from there.
  template <typename T>
  void operator()(std::string_view name, T& value) {
    const std::string key = prefix_ + std::string(name);
    if (saving_) {
      std::string bytes;
      state_archive_detail::Encode(bytes, static_cast<const T&>(value));
      Put(key, std::move(bytes));
      return;
    }
    const std::string& bytes = Get(key);
    state_archive_detail::RecordReader reader(bytes, key);
    T loaded{};
    state_archive_detail::Decode(reader, loaded);
    if (reader.remaining() != 0) reader.Fail(std::to_string(reader.remaining()) + " bytes more than its field takes");
    value = std::move(loaded);
  }
  // A value the saving side computes and the loading side only checks: loading fails, naming
  // the record, when the stored value differs from `value` (e.g. a particle count that the
  // rebuilt world must share with the checkpoint).
  template <typename T>
  void Expect(std::string_view name, const T& value) {
    T stored = value;
    (*this)(name, stored);
    if (loading() && !(stored == value)) Fail(name, "does not match this run's");
  }

  // Loading: fails for a record that nothing read (state this build does not know).
  void CheckEverythingRead() const;
  // Saving: the records collected.
  const Records& records() const { return records_; }
  [[noreturn]] void Fail(std::string_view name, const std::string& why) const;

 private:
  StateArchive(bool saving, Records records) : saving_(saving), records_(std::move(records)) {}
  void Put(const std::string& key, std::string bytes);
  const std::string& Get(const std::string& key);

  bool saving_;
  Records records_;
  std::set<std::string, std::less<>> read_;
  std::string prefix_;
};

}  // namespace contactlab
