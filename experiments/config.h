#pragma once
// Resolving a run's configuration: declared defaults, then a scene TOML file, then
// `--set key=value` overrides, then one validation pass. Errors are InputErrors whose
// one-line message names the offending key or file.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formulations/parameters.h"

namespace contactlab::experiments {

// Applies a TOML file: nested tables flatten to dotted keys ([hybrid_impulse] cfl = 0.2 is
// "hybrid_impulse.cfl"). A scene file may hold one table per formulation ([sap], [penalty],
// ...): the table of the run's formulation applies, including shared keys written inside it
// ([quasi_newton.contact] model = "sap_cone" sets "contact.model" for quasi_newton runs only,
// over a top-level [contact] table); keys of other formulations are checked against those
// formulations' declarations and ignored. Unknown keys, arrays, type mismatches and
// out-of-range values of ignored keys are errors naming the file and line.
void ApplyTomlFile(const std::string& path, ParameterSet& parameters);
// Applies "key=value" assignments from the command line.
void ApplyOverrides(const std::vector<std::string>& assignments, ParameterSet& parameters);

// The resolved configuration as TOML: scenario and formulation names as comments, top-level
// keys first, then one table per dotted prefix. Reals print in their shortest exact form, so
// the text reproduces the run exactly.
std::string ToToml(const ParameterSet& parameters, const std::string& scenario, const std::string& formulation);

// The 64-bit FNV-1a hash of `bytes`: stable across machines and builds, for identifiers and
// for detecting damaged files (not forgery).
std::uint64_t Fnv1a64(std::string_view bytes);
// A stable 12-hex-digit identifier of a resolved configuration (FNV-1a of its TOML text).
std::string RunId(const std::string& resolved_toml);

}  // namespace contactlab::experiments
