#include "experiments/config.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include "experiments/file_safety.h"
#include "experiments/toml_leaves.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {
namespace {

// The formulation whose keys `parameters` declares, i.e. the formulation of the run.
const FormulationInfo* RunningFormulation(const ParameterSet& parameters) {
  for (const FormulationInfo& info : RegisteredFormulations()) {
    const bool declares_all = std::all_of(info.parameters.begin(), info.parameters.end(),
                                          [&](const ParameterSpec& spec) { return parameters.IsDeclared(spec.key); });
    if (declares_all) return &info;
  }
  return nullptr;
}

const ParameterSpec* FindSpec(const FormulationInfo& info, const std::string& key) {
  for (const ParameterSpec& spec : info.parameters) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

// Type and range of a value for a key of another formulation, which the run then ignores.
void ValidateForeign(const ParameterSpec& spec, const std::string& key, const ParameterValue& value,
                     const std::string& origin, const std::string& formulation) {
  ParameterSet single;
  single.Declare({spec});
  single.Set(spec.key, value, origin);
  try {
    single.Validate();
  } catch (const InputError& error) {
    throw InputError(origin + ": [" + formulation + "] " + error.what() +
                     (key != spec.key ? " (as '" + key + "')" : ""));
  }
}

struct Leaf {
  std::string key;     // dotted, as written in the file
  std::string origin;  // file:line
  ParameterValue value;
};

std::vector<Leaf> ScalarLeaves(const toml::table& table, const std::string& path) {
  std::vector<std::pair<std::string, const toml::node*>> nodes;
  FlattenTable(table, "", nodes);
  std::vector<Leaf> leaves;
  for (const auto& [key, node] : nodes) {
    const std::string origin = path + ":" + std::to_string(node->source().begin.line);
    const std::optional<ParameterValue> value = ScalarValue(*node);
    if (!value) throw InputError(origin + ": key '" + key + "' must be a number, boolean or string");
    leaves.push_back({key, origin, *value});
  }
  return leaves;
}

}  // namespace

void ApplyTomlFile(const std::string& path, ParameterSet& parameters) {
  const toml::table table = ParseTomlFile(path, "configuration file");
  const std::vector<Leaf> leaves = ScalarLeaves(table, path);

  // Keys the run declares apply at once; keys scoped to the run's formulation by its table
  // ([sap.contact] stiffness = ... for "contact.stiffness") apply after them, so they win over
  // a shared [contact] table; keys of other formulations are checked and ignored.
  const FormulationInfo* running = RunningFormulation(parameters);
  std::vector<std::pair<std::string, const Leaf*>> scoped;
  for (const Leaf& leaf : leaves) {
    if (parameters.IsDeclared(leaf.key)) {
      parameters.Set(leaf.key, leaf.value, leaf.origin);
      continue;
    }
    bool handled = false;
    for (const FormulationInfo& info : RegisteredFormulations()) {
      const std::string prefix = info.name + ".";
      if (leaf.key.compare(0, prefix.size(), prefix) != 0) continue;
      // A key in the table of formulation `info`: its own key, or a shared key (contact.*)
      // written inside its table.
      const std::string unscoped = leaf.key.substr(prefix.size());
      const ParameterSpec* spec = FindSpec(info, leaf.key);
      // Only a shared key may be written inside the table: [sap.sap] max_iterations is no key.
      if (spec == nullptr && unscoped.compare(0, prefix.size(), prefix) != 0) spec = FindSpec(info, unscoped);
      if (spec == nullptr) {
        throw InputError(leaf.origin + ": unknown key '" + leaf.key + "' (not a parameter of formulation '" +
                         info.name + "'; see `contactlab describe SCENARIO -f " + info.name + "`)");
      }
      if (&info == running) {
        scoped.emplace_back(spec->key, &leaf);
      } else {
        ValidateForeign(*spec, leaf.key, leaf.value, leaf.origin, info.name);
      }
      handled = true;
      break;
    }
    if (handled) continue;
    // A key some other formulation declares (contact.* for a penalty run): checked, ignored.
    for (const FormulationInfo& info : RegisteredFormulations()) {
      if (&info == running) continue;
      if (const ParameterSpec* spec = FindSpec(info, leaf.key)) {
        ValidateForeign(*spec, leaf.key, leaf.value, leaf.origin, info.name);
        handled = true;
        break;
      }
    }
    if (!handled) throw InputError(leaf.origin + ": unknown key '" + leaf.key + "'");
  }
  for (const auto& [key, leaf] : scoped) parameters.Set(key, leaf->value, leaf->origin);
}

void ApplyOverrides(const std::vector<std::string>& assignments, ParameterSet& parameters) {
  for (const std::string& assignment : assignments) {
    const auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--set '" + assignment + "': expected key=value");
    }
    parameters.SetFromText(assignment.substr(0, equals), assignment.substr(equals + 1), "--set");
  }
}

std::string ToToml(const ParameterSet& parameters, const std::string& scenario, const std::string& formulation) {
  // Group keys by their table (everything before the last dot).
  std::map<std::string, std::vector<std::pair<std::string, const ParameterValue*>>> tables;
  for (const auto& [key, value] : parameters.values()) {
    const auto dot = key.rfind('.');
    const std::string table = dot == std::string::npos ? "" : key.substr(0, dot);
    const std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
    tables[table].emplace_back(name, &value);
  }
  std::ostringstream text;
  text << "# contactlab resolved configuration\n# scenario = " << scenario << "\n# formulation = " << formulation
       << "\n";
  for (const auto& [table, entries] : tables) {
    text << "\n";
    if (!table.empty()) text << "[" << table << "]\n";
    for (const auto& [name, value] : entries) {
      text << name << " = ";
      if (const auto* string = std::get_if<std::string>(value)) {
        text << '"' << *string << '"';
      } else {
        text << ToString(*value);
      }
      const std::string& unit = parameters.Spec(table.empty() ? name : table + "." + name).unit;
      if (!unit.empty() && unit != "1") text << "  # [" << unit << "]";
      text << "\n";
    }
  }
  return text.str();
}

std::uint64_t Fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (const char byte : bytes) {
    hash ^= static_cast<unsigned char>(byte);
    hash *= 1099511628211ull;  // FNV prime
  }
  return hash;
}

std::string RunId(const std::string& resolved_toml) {
  const std::uint64_t hash = Fnv1a64(resolved_toml);
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(buffer, 12);
}

}  // namespace contactlab::experiments
