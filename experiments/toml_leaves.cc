#include "experiments/toml_leaves.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "experiments/file_safety.h"

namespace contactlab::experiments {
namespace {

// The index just past the string that opens at text[at] (a quote), or text.size() when it
// does not close: basic "…" with escapes, literal '…', and their multi-line forms.
std::size_t SkipString(std::string_view text, std::size_t at) {
  const char quote = text[at];
  const bool multi_line = text.substr(at, 3) == std::string(3, quote);
  std::size_t i = at + (multi_line ? 3 : 1);
  while (i < text.size()) {
    if (quote == '"' && text[i] == '\\') {
      i += 2;
      continue;
    }
    if (!multi_line && text[i] == '\n') return i;  // unterminated: the parser reports it
    if (multi_line ? text.substr(i, 3) == std::string(3, quote) : text[i] == quote) return i + (multi_line ? 3 : 1);
    ++i;
  }
  return text.size();
}

}  // namespace

int TomlNestingDepth(std::string_view text) {
  // One pass, no recursion: `open` holds the arrays ('[') and inline tables ('{') around the
  // current position; in key position dots separate components.
  std::string open;
  bool in_key = true, line_start = true;
  int key_components = 1, deepest = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i = SkipString(text, i);
      line_start = false;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      line_start = true;
      if (open.empty()) in_key = true, key_components = 1;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (line_start && open.empty() && c == '[') {
      // A table header, [a.b] or [[a.b]]: one level per component.
      int components = 1;
      while (i < text.size() && text[i] != '\n' && text[i] != ']') {
        if (text[i] == '"' || text[i] == '\'') {
          i = SkipString(text, i);
          continue;
        }
        components += text[i] == '.';
        ++i;
      }
      deepest = std::max(deepest, components);
      line_start = false;
      continue;
    }
    line_start = false;
    if (in_key) {
      if (c == '.') ++key_components;
      if (c == '=') in_key = false;
      deepest = std::max(deepest, static_cast<int>(open.size()) + key_components);
    } else if (c == '[' || c == '{') {
      open.push_back(c);
      deepest = std::max(deepest, static_cast<int>(open.size()));
      if (c == '{') in_key = true, key_components = 1;
    } else if (c == ']' || c == '}') {
      if (!open.empty()) open.pop_back();
    } else if (c == ',' && !open.empty() && open.back() == '{') {
      in_key = true, key_components = 1;
    }
    ++i;
  }
  return deepest;
}

toml::table ParseTomlFile(const std::filesystem::path& path, const std::string& what) {
  RequireReadableFile(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open " + what);
  std::string text;
  text.resize(kMaxTomlFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxTomlFileBytes) {
    throw InputError(path.string() + ": the " + what + " is larger than " + std::to_string(kMaxTomlFileBytes) +
                     " bytes");
  }
  if (const int depth = TomlNestingDepth(text); depth > kMaxTomlNesting) {
    throw InputError(path.string() + ": the " + what + " nests keys, tables or arrays " + std::to_string(depth) +
                     " deep, more than " + std::to_string(kMaxTomlNesting));
  }
  try {
    return toml::parse(text, path.string());
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << path.string() << ":" << error.source().begin.line << ":" << error.source().begin.column << ": "
            << error.description();
    throw InputError(message.str());
  }
}

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
