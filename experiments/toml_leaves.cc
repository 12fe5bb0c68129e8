#include "experiments/toml_leaves.h"

#include <algorithm>

namespace contactlab::experiments {

std::optional<ParameterValue> ScalarValue(const toml::node& node) {
  if (const auto* integer = node.as_integer()) return ParameterValue(std::int64_t{integer->get()});
  if (const auto* real = node.as_floating_point()) return ParameterValue(real->get());
  if (const auto* flag = node.as_boolean()) return ParameterValue(flag->get());
  if (const auto* text = node.as_string()) return ParameterValue(std::string(text->get()));
  return std::nullopt;
}

void FlattenTable(const toml::table& table, const std::string& prefix,
                  std::vector<std::pair<std::string, const toml::node*>>& leaves) {
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (auto&& [name, node] : table) {
    entries.emplace_back(prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str()), &node);
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.second->source().begin < b.second->source().begin; });
  for (const auto& [key, node] : entries) {
    if (const toml::table* nested = node->as_table()) {
      FlattenTable(*nested, key, leaves);
    } else {
      leaves.emplace_back(key, node);
    }
  }
}

}  // namespace contactlab::experiments
