#pragma once
// The scene × formulation matrix as test parameters: one cell per registered scenario and
// formulation, so that a new scenario or formulation is covered without editing the tests
// that run every cell (the conformance and checkpoint tests).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "experiments/scenario.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {

struct MatrixCell {
  std::string scenario;
  std::string formulation;
};

inline std::vector<MatrixCell> AllMatrixCells() {
  std::vector<MatrixCell> cells;
  for (const ScenarioInfo& scenario : RegisteredScenarios()) {
    for (const FormulationInfo& formulation : RegisteredFormulations()) {
      cells.push_back({scenario.name, formulation.name});
    }
  }
  return cells;
}

inline void PrintTo(const MatrixCell& cell, std::ostream* out) {
  *out << cell.scenario << " under " << cell.formulation;
}

// "ball_on_slope__sap": the test name of a cell.
inline std::string MatrixCellName(const ::testing::TestParamInfo<MatrixCell>& info) {
  return info.param.scenario + "__" + info.param.formulation;
}

}  // namespace contactlab::experiments
