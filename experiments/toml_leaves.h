#pragma once
// Reading scalar leaves out of TOML tables, shared by scene files (config.cc) and sweep files
// (sweep.cc): nested tables flatten to dotted keys ([quasi_newton.contact] model is
// "quasi_newton.contact.model"), visited in file order.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "formulations/parameters.h"

namespace contactlab::experiments {

// A TOML scalar as a parameter value; nullopt for arrays, tables and dates.
std::optional<ParameterValue> ScalarValue(const toml::node& node);

// The leaves (non-table nodes) of `table` with their dotted keys, in file order.
void FlattenTable(const toml::table& table, const std::string& prefix,
                  std::vector<std::pair<std::string, const toml::node*>>& leaves);

}  // namespace contactlab::experiments
