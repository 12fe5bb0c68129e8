// contactlab: run MPM–rigid contact scenarios under any formulation and log them to HDF5.
#include <cstdio>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "formulations/formulation.h"

namespace {

// Exit codes: 0 ok, 1 internal error, 2 bad input (nothing written), 3 the run diverged
// (its file is complete and records status "diverged").
constexpr int kExitInternalError = 1;
constexpr int kExitInputError = 2;
constexpr int kExitDiverged = 3;

void PrintList() {
  using namespace contactlab;
  std::printf("scenarios:\n");
  for (const auto& info : experiments::RegisteredScenarios()) {
    std::printf("  %-20s %s\n", info.name.c_str(), info.description.c_str());
  }
  std::printf("formulations:\n");
  for (const auto& info : RegisteredFormulations()) {
    std::printf("  %-20s %s\n", info.name.c_str(), info.description.c_str());
  }
#ifdef CONTACTLAB_HAS_CUDA
  std::printf("CUDA: built with nvcc\n");
#else
  std::printf("CUDA: not built\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"contactlab: compare MPM-rigid frictional contact formulations on analytic scenes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "contactlab 0.1.0");

  CLI::App* list = app.add_subcommand("list", "List scenarios and formulations");

  contactlab::experiments::RunRequest request;
  CLI::App* run = app.add_subcommand("run", "Run one scenario under one formulation and write RUN.h5");
  run->add_option("scenario", request.scenario, "Scenario name (see `contactlab list`)")->required();
  run->add_option("--formulation,-f", request.formulation, "Formulation name")->required();
  run->add_option("--config,-c", request.config_file, "Scene TOML file (e.g. data/scenes/ball_on_slope.toml)");
  run->add_option("--set,-s", request.overrides, "Override a parameter: key=value (repeatable)");
  run->add_option("--out,-o", request.output_path, "Output HDF5 file")->required();
  run->add_flag("--quiet,-q", request.quiet, "Print neither the resolved configuration nor progress");

  std::string describe_scenario, describe_formulation = "hybrid_impulse";
  CLI::App* describe = app.add_subcommand("describe", "List every parameter of a scenario and formulation");
  describe->add_option("scenario", describe_scenario, "Scenario name")->required();
  describe->add_option("--formulation,-f", describe_formulation, "Formulation name");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

  try {
    if (list->parsed()) {
      PrintList();
    } else if (describe->parsed()) {
      contactlab::experiments::DescribeParameters(describe_scenario, describe_formulation);
    } else if (run->parsed()) {
      const auto outcome = contactlab::experiments::ExecuteRun(request);
      if (outcome.status == contactlab::experiments::RunStatus::kDiverged) {
        std::fprintf(stderr, "contactlab: run diverged (%s); status recorded in %s\n", outcome.message.c_str(),
                     request.output_path.c_str());
        return kExitDiverged;
      }
    }
  } catch (const contactlab::InputError& error) {
    std::fprintf(stderr, "contactlab: error: %s\n", error.what());
    return kExitInputError;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "contactlab: internal error: %s\n", error.what());
    return kExitInternalError;
  }
  return 0;
}
