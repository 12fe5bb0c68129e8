#include "experiments/sweep.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "experiments/config.h"
#include "experiments/file_safety.h"
#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "experiments/toml_leaves.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {
namespace {

constexpr const char* kFormulationKey = "formulation";
constexpr const char* kScenarioKey = "scenario";
constexpr const char* kScenarioPlaceholder = "{scenario}";

std::string Where(const std::filesystem::path& file, const toml::node& node) {
  return file.string() + ":" + std::to_string(node.source().begin.line);
}

// The list of scalars of an axis key.
std::vector<ParameterValue> AxisValues(const std::filesystem::path& file, const std::string& section,
                                       const std::string& key, const toml::node& node) {
  const toml::array* array = node.as_array();
  if (array == nullptr || array->empty()) {
    throw InputError(Where(file, node) + ": [" + section + "] key '" + key + "' must be a non-empty list of values");
  }
  std::vector<ParameterValue> values;
  for (const toml::node& element : *array) {
    const auto value = ScalarValue(element);
    if (!value) {
      throw InputError(Where(file, element) + ": [" + section + "] key '" + key +
                       "' must list numbers, booleans or strings");
    }
    values.push_back(*value);
  }
  return values;
}

std::string RequireString(const std::filesystem::path& file, const toml::table& section, const std::string& key) {
  const toml::node* node = section.get(key);
  if (node == nullptr) return "";
  if (!node->is_string()) throw InputError(Where(file, *node) + ": [sweep] key '" + key + "' must be a string");
  return std::string(node->as_string()->get());
}

// Every key some formulation declares: a key of another formulation does not apply to a run.
const std::set<std::string>& FormulationKeys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all;
    for (const FormulationInfo& info : RegisteredFormulations()) {
      for (const ParameterSpec& spec : info.parameters) all.insert(spec.key);
    }
    return all;
  }();
  return keys;
}

bool IsScenarioName(const std::string& name) {
  for (const ScenarioInfo& info : RegisteredScenarios()) {
    if (info.name == name) return true;
  }
  return false;
}

// Whether a run of `scenario` takes `key`: false when the key belongs to a formulation other
// than the run's; InputError when it is no parameter of the scenario or of any formulation.
bool RunTakes(const ParameterSet& parameters, const std::string& key, const std::string& origin,
              const std::string& scenario) {
  if (parameters.IsDeclared(key)) return true;
  if (FormulationKeys().count(key) != 0) return false;
  throw InputError(origin + ": key '" + key + "' is not a parameter of scenario '" + scenario +
                   "' or of any formulation (see `contactlab describe " + scenario + "`)");
}

// Sets `key` for a run of `scenario` where the run takes it (RunTakes); returns whether it did.
bool ApplyToRun(ParameterSet& parameters, const std::string& key, const ParameterValue& value,
                const std::string& origin, const std::string& scenario) {
  if (!RunTakes(parameters, key, origin, scenario)) return false;
  parameters.Set(key, value, origin);
  return true;
}

// "<scenario>.<key>" ([base.<scenario>], --set <scenario>.key=value): the scenario and the
// key, or nothing when the first component of `key` is no scenario's name.
std::optional<std::pair<std::string, std::string>> ScenarioQualified(const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos || !IsScenarioName(key.substr(0, dot))) return std::nullopt;
  return std::make_pair(key.substr(0, dot), key.substr(dot + 1));
}

nlohmann::json ToJson(const ParameterValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  if (const auto* i = std::get_if<std::int64_t>(&value)) return *i;
  if (const auto* d = std::get_if<double>(&value)) return *d;
  return std::get<std::string>(value);
}

ParameterValue FromJson(const nlohmann::json& value, const std::string& origin, const std::string& key) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  throw InputError(origin + ": key '" + key + "' must be a number, boolean or string");
}

using KeyValues = std::vector<std::pair<std::string, ParameterValue>>;

nlohmann::json ToJsonObject(const KeyValues& values) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : values) object[key] = ToJson(value);
  return object;
}

KeyValues FromJsonObject(const nlohmann::json& object, const std::string& origin, const std::string& field) {
  if (!object.is_object()) throw InputError(origin + ": field '" + field + "' must be an object");
  KeyValues values;
  for (const auto& [key, value] : object.items()) values.emplace_back(key, FromJson(value, origin, key));
  return values;
}

// The values of the "scenario" axis, in file order (empty when the scenario is not swept).
std::vector<std::string> SweptScenarios(const SweepDefinition& sweep) {
  std::vector<std::string> scenarios;
  for (const SweepAxis& axis : sweep.axes) {
    for (std::size_t k = 0; k < axis.keys.size(); ++k) {
      if (axis.keys[k] != kScenarioKey) continue;
      for (const ParameterValue& value : axis.values[k]) scenarios.push_back(std::get<std::string>(value));
    }
  }
  return scenarios;
}

}  // namespace

SweepDefinition LoadSweep(const std::filesystem::path& file) {
  const toml::table root = ParseTomlFile(file, "sweep file");
  for (auto&& [name, node] : root) {
    const std::string section(name.str());
    if (section != "sweep" && section != "base" && section != "axes" && section != "zip") {
      throw InputError(Where(file, node) + ": unknown section '" + section + "' (expected sweep, base, axes, zip)");
    }
  }

  SweepDefinition sweep;
  sweep.file = file;
  // [sweep]: what is run.
  const toml::table* header = root["sweep"].as_table();
  if (header == nullptr) throw InputError(file.string() + ": missing [sweep] table with scenario = \"...\"");
  for (auto&& [name, node] : *header) {
    const std::string key(name.str());
    if (key != "name" && key != "scenario" && key != "formulation" && key != "config" && key != "description") {
      throw InputError(Where(file, node) + ": unknown key '" + key +
                       "' in [sweep] (expected name, scenario, formulation, config, description)");
    }
  }
  RequireString(file, *header, "description");  // free text, but text
  sweep.name = RequireString(file, *header, "name");
  if (sweep.name.empty()) sweep.name = file.stem().string();
  // The name becomes a folder, a Slurm job name and part of a generated script.
  const bool plain_name = std::all_of(sweep.name.begin(), sweep.name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
  });
  if (!plain_name || sweep.name.front() == '.') {
    throw InputError(file.string() + ": [sweep] key 'name' = '" + sweep.name +
                     "' may hold only letters, digits, '_', '-', '+' and '.', and must not start with '.'");
  }
  sweep.scenario = RequireString(file, *header, "scenario");
  if (!sweep.scenario.empty()) FindScenario(sweep.scenario);
  sweep.formulation = RequireString(file, *header, "formulation");
  const std::string config = RequireString(file, *header, "config");
  if (!config.empty()) {
    std::filesystem::path config_path(config);
    if (config_path.is_relative()) config_path = file.parent_path() / config_path;
    config_path = config_path.lexically_normal();
    sweep.config_file = config_path;  // checked below, for each scenario the sweep runs
  }

  // [base]: fixed overrides.
  if (const toml::node* base_node = root.get("base")) {
    const toml::table* base = base_node->as_table();
    if (base == nullptr) throw InputError(Where(file, *base_node) + ": 'base' must be a table");
    std::vector<std::pair<std::string, const toml::node*>> leaves;
    FlattenTable(*base, "", leaves);
    for (const auto& [key, node] : leaves) {
      const auto value = ScalarValue(*node);
      if (!value)
        throw InputError(Where(file, *node) + ": [base] key '" + key + "' must be a number, boolean or string");
      if (key == kFormulationKey) throw InputError(Where(file, *node) + ": set the formulation in [sweep], not [base]");
      if (key == kScenarioKey) throw InputError(Where(file, *node) + ": set the scenario in [sweep], not [base]");
      if (const auto qualified = ScenarioQualified(key)) {  // [base.<scenario>]
        const auto& [scenario, scenario_key] = *qualified;
        auto found = std::find_if(sweep.scenario_base.begin(), sweep.scenario_base.end(),
                                  [&](const auto& entry) { return entry.first == scenario; });
        if (found == sweep.scenario_base.end()) {
          sweep.scenario_base.push_back({scenario, {}});
          found = sweep.scenario_base.end() - 1;
        }
        found->second.emplace_back(scenario_key, *value);
        continue;
      }
      sweep.base.emplace_back(key, *value);
    }
  }

  // [axes] and [[zip]]: collected with their source position, then ordered by it.
  std::vector<std::pair<toml::source_position, SweepAxis>> axes;
  if (const toml::node* axes_node = root.get("axes")) {
    const toml::table* table = axes_node->as_table();
    if (table == nullptr) throw InputError(Where(file, *axes_node) + ": 'axes' must be a table");
    std::vector<std::pair<std::string, const toml::node*>> leaves;
    FlattenTable(*table, "", leaves);
    for (const auto& [key, node] : leaves) {
      axes.push_back({node->source().begin, SweepAxis{{key}, {AxisValues(file, "axes", key, *node)}}});
    }
  }
  if (const toml::node* zip_node = root.get("zip")) {
    const toml::array* groups = zip_node->as_array();
    if (groups == nullptr) throw InputError(Where(file, *zip_node) + ": write zipped axes as [[zip]] tables");
    for (const toml::node& group_node : *groups) {
      const toml::table* group = group_node.as_table();
      if (group == nullptr) throw InputError(Where(file, group_node) + ": write zipped axes as [[zip]] tables");
      std::vector<std::pair<std::string, const toml::node*>> leaves;
      FlattenTable(*group, "", leaves);
      if (leaves.empty()) throw InputError(Where(file, group_node) + ": empty [[zip]] table");
      SweepAxis axis;
      for (const auto& [key, node] : leaves) {
        axis.keys.push_back(key);
        axis.values.push_back(AxisValues(file, "zip", key, *node));
        if (axis.values.back().size() != axis.values.front().size()) {
          throw InputError(Where(file, *node) + ": [[zip]] key '" + key + "' has " +
                           std::to_string(axis.values.back().size()) + " values but '" + axis.keys.front() + "' has " +
                           std::to_string(axis.values.front().size()));
        }
      }
      axes.push_back({leaves.front().second->source().begin, std::move(axis)});
    }
  }
  std::stable_sort(axes.begin(), axes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::set<std::string> seen;
  for (auto& [position, axis] : axes) {
    for (std::size_t k = 0; k < axis.keys.size(); ++k) {
      const std::string& key = axis.keys[k];
      if (!seen.insert(key).second) throw InputError(file.string() + ": key '" + key + "' is swept twice");
      if (key == kFormulationKey) {
        for (const ParameterValue& value : axis.values[k]) {
          const auto* name = std::get_if<std::string>(&value);
          if (name == nullptr) throw InputError(file.string() + ": axis 'formulation' must list formulation names");
          FindFormulation(*name);
        }
      }
      if (key == kScenarioKey) {
        for (const ParameterValue& value : axis.values[k]) {
          const auto* name = std::get_if<std::string>(&value);
          if (name == nullptr) throw InputError(file.string() + ": axis 'scenario' must list scenario names");
          FindScenario(*name);
        }
      }
    }
    sweep.axes.push_back(std::move(axis));
  }
  if (seen.count(kFormulationKey) == 0) {
    if (sweep.formulation.empty()) {
      throw InputError(file.string() + ": name a formulation in [sweep] or sweep it in [axes]");
    }
    FindFormulation(sweep.formulation);
  } else if (!sweep.formulation.empty()) {
    throw InputError(file.string() + ": 'formulation' is both fixed in [sweep] and swept");
  }
  // The scenarios the sweep runs: fixed in [sweep] or swept.
  std::vector<std::string> scenarios;
  if (seen.count(kScenarioKey) == 0) {
    if (sweep.scenario.empty()) {
      throw InputError(file.string() + ": [sweep] key 'scenario' is required, unless the scenario is swept in [axes]");
    }
    scenarios.push_back(sweep.scenario);
  } else if (!sweep.scenario.empty()) {
    throw InputError(file.string() + ": 'scenario' is both fixed in [sweep] and swept");
  } else {
    scenarios = SweptScenarios(sweep);
  }
  for (const auto& [scenario, keys] : sweep.scenario_base) {
    if (std::find(scenarios.begin(), scenarios.end(), scenario) == scenarios.end()) {
      throw InputError(file.string() + ": [base." + scenario + "] names a scenario the sweep does not run");
    }
  }
  if (sweep.config_file) {
    const bool templated = sweep.config_file->string().find(kScenarioPlaceholder) != std::string::npos;
    if (templated && seen.count(kScenarioKey) == 0) {
      throw InputError(file.string() + ": [sweep] key 'config' holds " + kScenarioPlaceholder +
                       " but the scenario is not swept");
    }
    for (const std::string& scenario : scenarios) {
      try {
        RequireReadableFile(*ConfigFile(sweep, scenario), "scene file");
      } catch (const InputError& error) {
        throw InputError(file.string() + ": [sweep] key 'config': " + error.what());
      }
    }
  }
  return sweep;
}

std::optional<std::filesystem::path> ConfigFile(const SweepDefinition& sweep, const std::string& scenario) {
  if (!sweep.config_file) return std::nullopt;
  std::string path = sweep.config_file->string();
  for (auto at = path.find(kScenarioPlaceholder); at != std::string::npos; at = path.find(kScenarioPlaceholder)) {
    path.replace(at, std::string(kScenarioPlaceholder).size(), scenario);
  }
  return std::filesystem::path(path);
}

std::vector<std::pair<std::filesystem::path, std::string>> SweepInputs(const SweepDefinition& sweep) {
  std::vector<std::pair<std::filesystem::path, std::string>> inputs = {{sweep.file, "sweep file"}};
  const std::vector<std::string> scenarios =
      sweep.scenario.empty() ? SweptScenarios(sweep) : std::vector<std::string>{sweep.scenario};
  for (const std::string& scenario : scenarios) {
    if (const auto config = ConfigFile(sweep, scenario)) inputs.emplace_back(*config, "scene file");
  }
  return inputs;
}

std::vector<ManifestEntry> ExpandSweep(const SweepDefinition& sweep, std::vector<std::string>* warnings) {
  std::size_t total = 1;
  std::string sizes;
  for (const SweepAxis& axis : sweep.axes) sizes += (sizes.empty() ? "" : " x ") + std::to_string(axis.size());
  for (const SweepAxis& axis : sweep.axes) {
    if (axis.size() > static_cast<std::size_t>(kMaxSweepRuns) / total) {
      throw InputError(sweep.file.string() + ": the axes give " + sizes + " combinations, more than the " +
                       std::to_string(kMaxSweepRuns) + " runs a sweep may have; split it into smaller sweeps");
    }
    total *= axis.size();
  }

  std::vector<ManifestEntry> entries;
  std::set<std::string> run_ids;
  std::size_t duplicates = 0;
  std::vector<std::size_t> position(sweep.axes.size(), 0);  // mixed-radix counter, last axis fastest
  for (std::size_t combination = 0; combination < total; ++combination) {
    // The scenario and formulation of this combination decide which parameters exist.
    std::string scenario = sweep.scenario, formulation = sweep.formulation;
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      for (std::size_t k = 0; k < sweep.axes[a].keys.size(); ++k) {
        if (sweep.axes[a].keys[k] == kFormulationKey) {
          formulation = std::get<std::string>(sweep.axes[a].values[k][position[a]]);
        } else if (sweep.axes[a].keys[k] == kScenarioKey) {
          scenario = std::get<std::string>(sweep.axes[a].values[k][position[a]]);
        }
      }
    }
    ParameterSet parameters = DeclareParameters(scenario, formulation);
    if (const auto config = ConfigFile(sweep, scenario)) ApplyTomlFile(config->string(), parameters);
    const std::string base_origin = sweep.file.string() + " [base]";
    for (const auto& [key, value] : sweep.base) ApplyToRun(parameters, key, value, base_origin, scenario);
    for (const auto& [base_scenario, keys] : sweep.scenario_base) {
      if (base_scenario != scenario) continue;
      for (const auto& [key, value] : keys) {
        ApplyToRun(parameters, key, value, sweep.file.string() + " [base." + scenario + "]", scenario);
      }
    }
    for (const std::string& assignment : sweep.overrides) {
      const auto equals = assignment.find('=');
      if (equals == std::string::npos || equals == 0) {
        throw InputError("--set '" + assignment + "': expected key=value");
      }
      std::string key = assignment.substr(0, equals);
      if (const auto qualified = ScenarioQualified(key)) {  // <scenario>.<key>: its runs only
        if (qualified->first != scenario) continue;
        key = qualified->second;
      }
      if (!RunTakes(parameters, key, "--set '" + assignment + "'", scenario)) continue;
      parameters.SetFromText(key, assignment.substr(equals + 1), "--set");
    }

    ManifestEntry entry;
    entry.sweep = sweep.name;
    entry.scenario = scenario;
    entry.formulation = formulation;
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      const SweepAxis& axis = sweep.axes[a];
      for (std::size_t k = 0; k < axis.keys.size(); ++k) {
        const std::string& key = axis.keys[k];
        if (key == kFormulationKey || key == kScenarioKey) continue;
        const ParameterValue& value = axis.values[k][position[a]];
        if (ApplyToRun(parameters, key, value, sweep.file.string() + " [axes]", scenario)) {
          entry.swept.emplace_back(key, value);
        }
      }
    }
    const std::string toml = ToToml(parameters, scenario, formulation);
    entry.run_id = RunId(toml);
    for (const auto& [key, value] : parameters.values()) entry.parameters.emplace_back(key, value);

    if (!run_ids.insert(entry.run_id).second) {
      ++duplicates;
    } else {
      entry.index = static_cast<int>(entries.size());
      if (warnings != nullptr) {
        try {
          ValidateRun(parameters);
        } catch (const InputError& error) {
          warnings->push_back("run " + std::to_string(entry.index) + " (" + formulation + " " + DescribeSwept(entry) +
                              ") will fail: " + error.what());
        }
      }
      entries.push_back(std::move(entry));
    }

    for (std::size_t a = sweep.axes.size(); a-- > 0;) {
      if (++position[a] < sweep.axes[a].size()) break;
      position[a] = 0;
    }
  }
  if (warnings != nullptr && duplicates > 0) {
    warnings->push_back(std::to_string(duplicates) +
                        " combinations repeat an earlier run (a swept key does not apply to their formulation) "
                        "and are listed once");
  }
  return entries;
}

std::string ToJsonLine(const ManifestEntry& entry) {
  nlohmann::ordered_json line;
  line["index"] = entry.index;
  line["run_id"] = entry.run_id;
  line["sweep"] = entry.sweep;
  line["scenario"] = entry.scenario;
  line["formulation"] = entry.formulation;
  nlohmann::ordered_json swept = nlohmann::ordered_json::object();
  for (const auto& [key, value] : entry.swept) swept[key] = ToJson(value);
  line["swept"] = swept;
  line["parameters"] = ToJsonObject(entry.parameters);
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ManifestEntry FromJsonLine(const std::string& text, const std::string& origin) {
  nlohmann::ordered_json line;
  try {
    line = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(origin + ": not a manifest line (" + error.what() + ")");
  }
  ManifestEntry entry;
  try {
    // A whole number in [0, kMaxSweepRuns): 0.9 or 2^32 must not read as some other index.
    const auto& index = line.at("index");
    // is_number_integer() holds for unsigned values too, which get<std::int64_t> would wrap.
    const bool in_range =
        index.is_number_integer() &&
        (index.is_number_unsigned() ? index.get<std::uint64_t>() < kMaxSweepRuns
                                    : index.get<std::int64_t>() >= 0 && index.get<std::int64_t>() < kMaxSweepRuns);
    if (!in_range) {
      throw InputError(origin + ": field 'index' = " + index.dump() + " is not a whole number from 0 to " +
                       std::to_string(kMaxSweepRuns - 1));
    }
    entry.index = static_cast<int>(index.get<std::int64_t>());
    entry.run_id = line.at("run_id").get<std::string>();
    // The run_id names the run's files inside the output folder: never a path.
    if (!IsValidRunId(entry.run_id)) {
      throw InputError(origin + ": field 'run_id' = '" + entry.run_id + "' is not 12 lowercase hex digits");
    }
    entry.sweep = line.value("sweep", "");
    entry.scenario = line.at("scenario").get<std::string>();
    entry.formulation = line.at("formulation").get<std::string>();
    if (line.contains("swept")) {
      if (!line["swept"].is_object()) throw InputError(origin + ": field 'swept' must be an object");
      for (const auto& [key, value] : line["swept"].items())
        entry.swept.emplace_back(key, FromJson(value, origin, key));
    }
    entry.parameters = FromJsonObject(nlohmann::json(line.at("parameters")), origin, "parameters");
  } catch (const nlohmann::json::exception& error) {
    throw InputError(origin + ": malformed manifest line (" + error.what() + ")");
  }
  return entry;
}

void WriteManifest(const std::filesystem::path& file, const std::vector<ManifestEntry>& entries) {
  std::string text;
  for (const ManifestEntry& entry : entries) text += ToJsonLine(entry) + "\n";
  WriteFileAtomically(file, text);
}

std::vector<ManifestEntry> ReadManifest(const std::filesystem::path& file) {
  RequireReadableFile(file, "manifest");
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot open manifest");
  std::vector<ManifestEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    entries.push_back(FromJsonLine(line, file.string() + ":" + std::to_string(number)));
  }
  return entries;
}

ManifestEntry ReadManifestEntry(const std::filesystem::path& file, int index) {
  RequireReadableFile(file, "manifest");
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot open manifest");
  if (index < 0) throw InputError("--index: must be >= 0, got " + std::to_string(index));
  std::string line;
  int count = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (count++ == index) {
      ManifestEntry entry = FromJsonLine(line, file.string() + ":" + std::to_string(number));
      if (entry.index != index) {
        throw InputError(file.string() + ":" + std::to_string(number) + ": line " + std::to_string(index) +
                         " carries index " + std::to_string(entry.index) +
                         "; regenerate it with `contactlab sweep expand`");
      }
      return entry;
    }
  }
  throw InputError("--index " + std::to_string(index) + ": " + file.string() + " has only " + std::to_string(count) +
                   " runs (indices 0.." + std::to_string(count - 1) + ")");
}

std::string DescribeSwept(const ManifestEntry& entry) {
  std::string text;
  for (const auto& [key, value] : entry.swept) {
    if (!text.empty()) text += " ";
    text += key + "=" + ToString(value);
  }
  return text;
}

}  // namespace contactlab::experiments
