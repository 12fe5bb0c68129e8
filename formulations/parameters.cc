#include "formulations/parameters.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace contactlab {

std::string OneLine(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      line += escaped;
    } else {
      line += c;
    }
  }
  return line;
}
namespace {

// Real-valued view of a numeric parameter; nullopt-like flag for non-numbers.
bool AsReal(const ParameterValue& value, double* real) {
  if (const auto* d = std::get_if<double>(&value)) {
    *real = *d;
    return true;
  }
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    *real = static_cast<double>(*i);
    return true;
  }
  return false;
}

std::string FormatReal(double value) {
  // Shortest text that reads back to the same double.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  // Keep reals recognizable as reals in TOML ("1" would read back as an integer).
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

ParameterCheck RealCheck(std::function<bool(double)> accept, std::string requirement) {
  return
      [accept = std::move(accept), requirement = std::move(requirement)](const ParameterValue& value) -> std::string {
        double real = 0.0;
        if (!AsReal(value, &real)) return "must be a number";
        if (!std::isfinite(real) || !accept(real)) return requirement;
        return "";
      };
}

}  // namespace

ParameterCheck Positive() {
  return RealCheck([](double x) { return x > 0.0; }, "must be > 0");
}
ParameterCheck NonNegative() {
  return RealCheck([](double x) { return x >= 0.0; }, "must be >= 0");
}
ParameterCheck InClosedRange(double low, double high) {
  std::ostringstream requirement;
  requirement << "must be in [" << low << ", " << high << "]";
  return RealCheck([low, high](double x) { return x >= low && x <= high; }, requirement.str());
}
ParameterCheck InHalfOpenRange(double low, double high) {
  std::ostringstream requirement;
  requirement << "must be >= " << low << " and < " << high;
  return RealCheck([low, high](double x) { return x >= low && x < high; }, requirement.str());
}
ParameterCheck OneOf(std::vector<std::string> allowed) {
  return [allowed = std::move(allowed)](const ParameterValue& value) -> std::string {
    const auto* text = std::get_if<std::string>(&value);
    if (text && std::find(allowed.begin(), allowed.end(), *text) != allowed.end()) return "";
    std::string requirement = "must be one of";
    for (const auto& choice : allowed) requirement += " '" + choice + "'";
    return requirement;
  };
}

ParameterSpec AutoParameter(std::string key, ParameterValue type, std::string unit, std::string description,
                            ParameterCheck check) {
  ParameterSpec spec(std::move(key), std::string(kAutoValue), std::move(unit), std::move(description),
                     std::move(check));
  spec.auto_numeric_type = std::move(type);
  return spec;
}

std::string ToString(const ParameterValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return FormatReal(*d);
  return std::get<std::string>(value);
}

const char* TypeName(const ParameterValue& value) {
  switch (value.index()) {
    case 0:
      return "boolean";
    case 1:
      return "integer";
    case 2:
      return "number";
    default:
      return "string";
  }
}

void ParameterSet::Declare(const std::vector<ParameterSpec>& specs) {
  for (const auto& spec : specs) {
    if (specs_.count(spec.key) != 0) {
      throw std::logic_error("parameter '" + spec.key + "' declared twice");
    }
    specs_[spec.key] = spec;
    values_[spec.key] = spec.default_value;
  }
}

const ParameterSpec& ParameterSet::Spec(const std::string& key) const {
  const auto found = specs_.find(key);
  if (found == specs_.end()) throw InputError("unknown key '" + key + "'");
  return found->second;
}

void ParameterSet::Set(const std::string& key, const ParameterValue& value, const std::string& origin) {
  const auto found = specs_.find(key);
  if (found == specs_.end()) {
    throw InputError(origin + ": unknown key '" + key + "'");
  }
  const ParameterSpec& spec = found->second;
  if (spec.auto_numeric_type) {
    const auto* text = std::get_if<std::string>(&value);
    if (text != nullptr && *text == kAutoValue) {
      values_[key] = value;
      return;
    }
    if (text != nullptr) {
      throw InputError(origin + ": key '" + key + "' expects a " + TypeName(*spec.auto_numeric_type) +
                       " or \"auto\", got \"" + *text + "\"");
    }
  }
  const ParameterValue& expected = spec.auto_numeric_type ? *spec.auto_numeric_type : spec.default_value;
  // Integers are accepted where reals are expected; nothing else converts implicitly.
  if (std::holds_alternative<double>(expected) && std::holds_alternative<std::int64_t>(value)) {
    values_[key] = static_cast<double>(std::get<std::int64_t>(value));
    return;
  }
  if (expected.index() != value.index()) {
    throw InputError(origin + ": key '" + key + "' expects a " + TypeName(expected) + ", got a " + TypeName(value) +
                     " (" + ToString(value) + ")");
  }
  // No key takes nan or inf (TOML can write them; --set's text parse refuses them too).
  if (const auto* real = std::get_if<double>(&value); real != nullptr && !std::isfinite(*real)) {
    throw InputError(origin + ": key '" + key + "' expects a finite number, got " + ToString(value));
  }
  values_[key] = value;
}

void ParameterSet::SetFromText(const std::string& key, const std::string& text, const std::string& origin) {
  const auto found = specs_.find(key);
  if (found == specs_.end()) throw InputError(origin + ": unknown key '" + key + "'");
  const ParameterSpec& spec = found->second;
  if (spec.auto_numeric_type && text == kAutoValue) {
    values_[key] = text;
    return;
  }
  const ParameterValue& expected = spec.auto_numeric_type ? *spec.auto_numeric_type : spec.default_value;
  const auto malformed = [&]() {
    return InputError(origin + ": key '" + key + "' expects a " + TypeName(expected) +
                      (spec.auto_numeric_type ? " or \"auto\"" : "") + ", got '" + text + "'");
  };
  if (std::holds_alternative<std::string>(expected)) {
    values_[key] = text;
  } else if (std::holds_alternative<bool>(expected)) {
    if (text == "true")
      values_[key] = true;
    else if (text == "false")
      values_[key] = false;
    else
      throw malformed();
  } else if (std::holds_alternative<std::int64_t>(expected)) {
    char* end = nullptr;
    errno = 0;
    const long long parsed = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) throw malformed();
    values_[key] = static_cast<std::int64_t>(parsed);
  } else {
    char* end = nullptr;
    errno = 0;
    const double parsed = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(parsed)) throw malformed();
    values_[key] = parsed;
  }
}

void ParameterSet::Validate() const {
  for (const auto& [key, spec] : specs_) {
    if (!spec.check) continue;
    const ParameterValue& value = values_.at(key);
    if (spec.auto_numeric_type && std::holds_alternative<std::string>(value)) continue;  // "auto"
    const std::string problem = spec.check(value);
    if (!problem.empty()) {
      throw InputError("key '" + key + "' " + problem + " (got " + ToString(value) + ")");
    }
  }
}

const ParameterValue& ParameterSet::Get(const std::string& key) const {
  const auto found = values_.find(key);
  if (found == values_.end()) throw std::logic_error("parameter '" + key + "' not declared");
  return found->second;
}

double ParameterSet::GetDouble(const std::string& key) const {
  double real = 0.0;
  if (!AsReal(Get(key), &real)) throw std::logic_error("parameter '" + key + "' is not a number");
  return real;
}
std::int64_t ParameterSet::GetInt(const std::string& key) const {
  const auto* value = std::get_if<std::int64_t>(&Get(key));
  if (value == nullptr) throw std::logic_error("parameter '" + key + "' is not an integer");
  return *value;
}
bool ParameterSet::IsAuto(const std::string& key) const {
  const auto* text = std::get_if<std::string>(&Get(key));
  return text != nullptr && *text == kAutoValue && Spec(key).auto_numeric_type.has_value();
}
std::optional<double> ParameterSet::GetOptionalDouble(const std::string& key) const {
  if (IsAuto(key)) return std::nullopt;
  return GetDouble(key);
}
std::optional<std::int64_t> ParameterSet::GetOptionalInt(const std::string& key) const {
  if (IsAuto(key)) return std::nullopt;
  return GetInt(key);
}
bool ParameterSet::GetBool(const std::string& key) const {
  return std::get<bool>(Get(key));
}
const std::string& ParameterSet::GetString(const std::string& key) const {
  return std::get<std::string>(Get(key));
}

}  // namespace contactlab
