#pragma once
// Reading TOML files and the scalar leaves out of their tables, shared by scene files
// (config.cc) and sweep files (sweep.cc): nested tables flatten to dotted keys
// ([quasi_newton.contact] model is "quasi_newton.contact.model"), visited in file order.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "formulations/parameters.h"

namespace contactlab::experiments {

// Limits checked before a file reaches the TOML parser, whose recursion (and FlattenTable's)
// follows the nesting: a 150 KB file of one 50,000-level dotted key would overflow the stack.
// The deepest key of a real file has four or five levels.
inline constexpr std::size_t kMaxTomlFileBytes = std::size_t{1} << 20;
inline constexpr int kMaxTomlNesting = 32;

// Parses the TOML file `path` (`what`: "configuration file", "sweep file"). InputError naming
// the file, with line and column where there is one, for an unreadable file, a file over
// kMaxTomlFileBytes, nesting deeper than kMaxTomlNesting (table headers, dotted keys, inline
// tables and arrays together) or a syntax error.
toml::table ParseTomlFile(const std::filesystem::path& path, const std::string& what);

// The deepest nesting in TOML text: for each key, its dotted components plus the inline tables
// and arrays around it; for each value, the arrays and inline tables around it. Strings and
// comments do not count. Exposed for tests.
int TomlNestingDepth(std::string_view text);

// A TOML scalar as a parameter value; nullopt for arrays, tables and dates.
std::optional<ParameterValue> ScalarValue(const toml::node& node);

// The leaves (non-table nodes) of `table` with their dotted keys, in file order.
void FlattenTable(const toml::table& table, const std::string& prefix,
                  std::vector<std::pair<std::string, const toml::node*>>& leaves);

}  // namespace contactlab::experiments
