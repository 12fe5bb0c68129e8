#include "experiments/config.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>

#include <toml++/toml.h>

namespace contactlab::experiments {
namespace {

void ApplyTable(const toml::table& table, const std::string& prefix, const std::string& path,
                ParameterSet& parameters) {
  for (auto&& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    const std::string origin = path + ":" + std::to_string(node.source().begin.line);
    if (const toml::table* nested = node.as_table()) {
      ApplyTable(*nested, key, path, parameters);
    } else if (const auto* integer = node.as_integer()) {
      parameters.Set(key, ParameterValue(std::int64_t{integer->get()}), origin);
    } else if (const auto* real = node.as_floating_point()) {
      parameters.Set(key, ParameterValue(real->get()), origin);
    } else if (const auto* flag = node.as_boolean()) {
      parameters.Set(key, ParameterValue(flag->get()), origin);
    } else if (const auto* text = node.as_string()) {
      parameters.Set(key, ParameterValue(std::string(text->get())), origin);
    } else {
      throw InputError(origin + ": key '" + key + "' must be a number, boolean or string");
    }
  }
}

}  // namespace

void ApplyTomlFile(const std::string& path, ParameterSet& parameters) {
  if (std::FILE* file = std::fopen(path.c_str(), "r")) {
    std::fclose(file);
  } else {
    throw InputError(path + ": cannot open configuration file");
  }
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << path << ":" << error.source().begin.line << ":" << error.source().begin.column << ": "
            << error.description();
    throw InputError(message.str());
  }
  ApplyTable(table, "", path, parameters);
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

std::string ToToml(const ParameterSet& parameters, const std::string& scenario,
                   const std::string& formulation) {
  // Group keys by their table (everything before the last dot).
  std::map<std::string, std::vector<std::pair<std::string, const ParameterValue*>>> tables;
  for (const auto& [key, value] : parameters.values()) {
    const auto dot = key.rfind('.');
    const std::string table = dot == std::string::npos ? "" : key.substr(0, dot);
    const std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
    tables[table].emplace_back(name, &value);
  }
  std::ostringstream text;
  text << "# contactlab resolved configuration\n# scenario = " << scenario << "\n# formulation = "
       << formulation << "\n";
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

std::string RunId(const std::string& resolved_toml) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (const unsigned char byte : resolved_toml) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(buffer, 12);
}

}  // namespace contactlab::experiments
