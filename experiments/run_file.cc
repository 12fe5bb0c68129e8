#include "experiments/run_file.h"

#include <hdf5.h>

#include <stdexcept>
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

// Reads a string from an attribute or dataset of string type `type` (variable or fixed length).
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
  std::string value(size, '\0');
  if (read(type, static_cast<void*>(value.data())) < 0) throw std::runtime_error("unreadable string");
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

AttributeValue ReadAttribute(hid_t attribute) {
  Id type(H5Aget_type(attribute), H5Tclose);
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
      break;
  }
  throw std::runtime_error("unsupported attribute type");
}

// Every scalar attribute of `object`.
std::map<std::string, AttributeValue> ReadAttributes(hid_t object) {
  std::map<std::string, AttributeValue> attributes;
  const auto visit = [](hid_t location, const char* name, const H5A_info_t*, void* data) -> herr_t {
    Id attribute(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
    if (!attribute.valid()) return -1;
    try {
      (*static_cast<std::map<std::string, AttributeValue>*>(data))[name] = ReadAttribute(attribute.get());
    } catch (const std::exception&) {
      return -1;
    }
    return 0;
  };
  hsize_t position = 0;
  if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &position, visit, &attributes) < 0) {
    throw std::runtime_error("unreadable attributes");
  }
  return attributes;
}

}  // namespace

RunFileContents ReadRunFile(const std::filesystem::path& file) {
  const std::string name = file.string();
  // Silence HDF5's own error printing: a failure becomes one exception with the file name.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(name.c_str()) <= 0) throw std::runtime_error(name + ": not an HDF5 file");
  Id handle(H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!handle.valid()) throw std::runtime_error(name + ": cannot open");
  RunFileContents contents;
  try {
    for (auto& [key, value] : ReadAttributes(handle.get())) {
      if (const auto* text = std::get_if<std::string>(&value)) contents.root[key] = *text;
    }
    if (contents.root.count("run_id") == 0) throw std::runtime_error("no run_id attribute (not a contactlab run)");
    Id summary(H5Gopen2(handle.get(), "summary", H5P_DEFAULT), H5Gclose);
    if (!summary.valid()) throw std::runtime_error("no /summary group");
    contents.summary = ReadAttributes(summary.get());
    Id params(H5Gopen2(handle.get(), "params", H5P_DEFAULT), H5Gclose);
    if (!params.valid()) throw std::runtime_error("no /params group");
    const auto ends_with = [](const std::string& key, const std::string& suffix) {
      return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    for (auto& [key, value] : ReadAttributes(params.get())) {
      if (!ends_with(key, ".unit") && !ends_with(key, ".rule")) contents.params[key] = std::move(value);
    }
    Id config(H5Dopen2(handle.get(), "config", H5P_DEFAULT), H5Dclose);
    if (!config.valid()) throw std::runtime_error("no /config dataset");
    Id type(H5Dget_type(config.get()), H5Tclose);
    contents.config = ReadString(type.get(), [&config](hid_t memory_type, void* buffer) {
      return H5Dread(config.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
    });
  } catch (const std::exception& error) {
    throw std::runtime_error(name + ": " + error.what());
  }
  return contents;
}

}  // namespace contactlab::experiments
