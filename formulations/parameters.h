#pragma once
// Named, typed, unit-carrying parameters. Scenarios and formulations declare what they
// accept as ParameterSpecs (key, default, unit, one sentence of rationale, validity check);
// the experiment driver resolves defaults, scene files and command-line overrides into one
// ParameterSet that is validated once before anything runs.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace contactlab {

using ParameterValue = std::variant<bool, std::int64_t, double, std::string>;

// `text` with control characters escaped (\n, \r, \t, \xNN), so that text quoted from
// input (a key, a value, a path) cannot break a message into several lines.
std::string OneLine(std::string_view text);

// Error in user input (unknown key, malformed or invalid value); the message is one line
// that names the offending key or file: control characters in it are escaped (OneLine).
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::string_view message) : std::runtime_error(OneLine(message)) {}
};

// Returns an empty string when the value is acceptable, else the reason ("must be > 0").
using ParameterCheck = std::function<std::string(const ParameterValue&)>;

struct ParameterSpec {
  ParameterSpec() = default;
  ParameterSpec(std::string key_, ParameterValue default_value_, std::string unit_, std::string description_,
                ParameterCheck check_ = nullptr)
      : key(std::move(key_)),
        default_value(std::move(default_value_)),
        unit(std::move(unit_)),
        description(std::move(description_)),
        check(std::move(check_)) {}

  std::string key;               // dotted name, e.g. "mu" or "hybrid_impulse.cfl"
  ParameterValue default_value;  // also fixes the type
  std::string unit;              // SI unit, "1" for dimensionless, "" for text/flags
  std::string description;       // one sentence: what it is and why this default
  ParameterCheck check;          // optional; never applied to the text "auto"
  // Numeric keys whose right value depends on the scene's scale accept the text "auto":
  // the formulation derives the value from the scene and records it as used
  // (FormulationRecord). For such keys default_value is the text "auto" and this holds a
  // value of the numeric type (integer or number) that fixes the type of explicit values.
  std::optional<ParameterValue> auto_numeric_type;
};

// The text an automatic key holds until the formulation derives its value.
inline constexpr const char* kAutoValue = "auto";

// A numeric key that defaults to "auto" (see ParameterSpec::auto_numeric_type); `type`
// gives the type of explicit overrides (std::int64_t{0} or 0.0), `check` their range.
ParameterSpec AutoParameter(std::string key, ParameterValue type, std::string unit, std::string description,
                            ParameterCheck check);

// Checks for common constraints.
ParameterCheck Positive();
ParameterCheck NonNegative();
ParameterCheck InClosedRange(double low, double high);
// low ≤ value < high.
ParameterCheck InHalfOpenRange(double low, double high);
ParameterCheck OneOf(std::vector<std::string> allowed);

// A string key whose values name the members of an enum: one table gives the allowed names
// (for OneOf), the parse into the enum (once, when options are read) and the name back.
template <typename Enum>
using ChoiceTable = std::vector<std::pair<std::string, Enum>>;

template <typename Enum>
std::vector<std::string> ChoiceNames(const ChoiceTable<Enum>& table) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) names.push_back(name);
  return names;
}

// The member named `text`; InputError naming `key` otherwise.
template <typename Enum>
Enum ParseChoice(const std::string& key, const std::string& text, const ChoiceTable<Enum>& table) {
  for (const auto& [name, value] : table) {
    if (name == text) return value;
  }
  std::string allowed;
  for (const auto& [name, value] : table) allowed += (allowed.empty() ? "" : ", ") + name;
  throw InputError(key + ": '" + text + "' is not one of " + allowed);
}

template <typename Enum>
const std::string& ChoiceName(Enum member, const ChoiceTable<Enum>& table) {
  for (const auto& [name, value] : table) {
    if (value == member) return name;
  }
  throw std::logic_error("ChoiceName: a member missing from its table");
}

std::string ToString(const ParameterValue& value);
const char* TypeName(const ParameterValue& value);

// `value` of key `key` as `Integer`; InputError naming the key and the type's range when it
// does not fit.
template <typename Integer>
Integer NarrowInteger(const std::string& key, std::int64_t value) {
  if (!std::in_range<Integer>(value)) {
    throw InputError("key '" + key + "' = " + std::to_string(value) + " is out of range (at most " +
                     std::to_string(std::numeric_limits<Integer>::max()) + ", at least " +
                     std::to_string(std::numeric_limits<Integer>::min()) + ")");
  }
  return static_cast<Integer>(value);
}

class ParameterSet {
 public:
  // Declares the accepted keys with their defaults. Re-declaring a key is an error.
  void Declare(const std::vector<ParameterSpec>& specs);
  bool IsDeclared(const std::string& key) const { return specs_.count(key) != 0; }
  const ParameterSpec& Spec(const std::string& key) const;
  // Sets a declared key from a typed value (integers are accepted for real parameters).
  // Throws InputError naming the key on an unknown key or a type mismatch.
  void Set(const std::string& key, const ParameterValue& value, const std::string& origin);
  // Sets a declared key from text ("0.3", "true", "sap_cone"), as given by --set.
  void SetFromText(const std::string& key, const std::string& text, const std::string& origin);
  // Runs every check; throws InputError for the first failure.
  void Validate() const;

  double GetDouble(const std::string& key) const;
  std::int64_t GetInt(const std::string& key) const;
  // For keys declared with AutoParameter: true when the value is "auto"; the Optional
  // getters return nullopt for "auto" and the explicit value otherwise.
  bool IsAuto(const std::string& key) const;
  std::optional<double> GetOptionalDouble(const std::string& key) const;
  std::optional<std::int64_t> GetOptionalInt(const std::string& key) const;
  // An integer key (stored in 64 bits) as the narrower type the code keeps it in: InputError
  // naming the key when the value lies outside that type's range, so that 2^32 + 1 never
  // runs as 1 nor 2^31 as a negative limit.
  template <typename Integer>
  Integer GetIntAs(const std::string& key) const {
    return NarrowInteger<Integer>(key, GetInt(key));
  }
  template <typename Integer>
  std::optional<Integer> GetOptionalIntAs(const std::string& key) const {
    const std::optional<std::int64_t> value = GetOptionalInt(key);
    if (!value) return std::nullopt;
    return NarrowInteger<Integer>(key, *value);
  }
  bool GetBool(const std::string& key) const;
  const std::string& GetString(const std::string& key) const;
  const ParameterValue& Get(const std::string& key) const;

  // Keys in sorted order with their resolved values.
  const std::map<std::string, ParameterValue>& values() const { return values_; }
  const std::map<std::string, ParameterSpec>& specs() const { return specs_; }

 private:
  std::map<std::string, ParameterSpec> specs_;
  std::map<std::string, ParameterValue> values_;
};

// The enum member the string key `key` of `parameters` names (see ChoiceTable).
template <typename Enum>
Enum GetChoice(const ParameterSet& parameters, const std::string& key, const ChoiceTable<Enum>& table) {
  return ParseChoice(key, parameters.GetString(key), table);
}

}  // namespace contactlab
