#include "experiments/scenario.h"

#include "experiments/scenarios/ball_on_slope.h"
#include "experiments/scenarios/block_on_slab.h"
#include "experiments/scenarios/box_bagging.h"
#include "experiments/scenarios/close_lift_shake.h"
#include "experiments/scenarios/cloth_folding.h"
#include "experiments/scenarios/column_collapse.h"
#include "experiments/scenarios/dam_break.h"
#include "experiments/scenarios/dough_rolling.h"
#include "experiments/scenarios/dough_tearing.h"
#include "experiments/scenarios/draped_sphere.h"
#include "experiments/scenarios/floating_box.h"
#include "experiments/scenarios/hanging_cloth.h"
#include "experiments/scenarios/hydrostatic_column.h"
#include "experiments/scenarios/incline_block.h"
#include "experiments/scenarios/liquid_transfer.h"
#include "experiments/scenarios/pyramid.h"
#include "experiments/scenarios/rolling_sphere.h"
#include "experiments/scenarios/sand_on_sphere.h"
#include "experiments/scenarios/sand_pile.h"
#include "experiments/scenarios/sphere_into_sand.h"
#include "experiments/scenarios/squeezed_cube.h"
#include "experiments/scenarios/stack.h"
#include "experiments/scenarios/wedge.h"

namespace contactlab::experiments {

const std::vector<ScenarioInfo>& RegisteredScenarios() {
  // Every scenario of the project, in the order `contactlab list` prints them.
  static const std::vector<ScenarioInfo> registry = {
      BallOnSlopeInfo(),       SqueezedCubeInfo(),   CloseLiftShakeInfo(), DoughRollingInfo(),   InclineBlockInfo(),
      RollingSphereInfo(),     PyramidInfo(),        WedgeInfo(),          StackInfo(),          BlockOnSlabInfo(),
      HydrostaticColumnInfo(), SandPileInfo(),       FloatingBoxInfo(),    DoughTearingInfo(),   DamBreakInfo(),
      ColumnCollapseInfo(),    LiquidTransferInfo(), SandOnSphereInfo(),   SphereIntoSandInfo(), HangingClothInfo(),
      BoxBaggingInfo(),        LaundryInfo(),        ClothFoldingInfo(),   DrapedSphereInfo(),
  };
  return registry;
}

const ScenarioInfo& FindScenario(std::string_view name) {
  for (const ScenarioInfo& info : RegisteredScenarios()) {
    if (info.name == name) return info;
  }
  std::string known;
  for (const ScenarioInfo& info : RegisteredScenarios()) known += " " + info.name;
  throw InputError("unknown scenario '" + std::string(name) + "' (known:" + known + ")");
}

ParameterSpec TimeStepSpec(double default_dt) {
  return {"dt", default_dt, "s", "Time step of the formulation (explicit ones substep inside it).", Positive()};
}
ParameterSpec DurationSpec(double default_duration) {
  return {"duration", default_duration, "s", "Simulated time.", Positive()};
}
ParameterSpec GravitySpec() {
  return {"gravity", 9.81, "m/s^2", "Magnitude of gravity along -z (Drake's default, spec-sap-qn §4).", NonNegative()};
}
ParameterSpec GridSpacingSpec(double default_spacing) {
  return {"grid_spacing", default_spacing, "m", "Background grid spacing h.", Positive()};
}
ParameterSpec ParticlesPerCellSpec(double default_count) {
  return {"particles_per_cell", default_count, "1",
          "Particles per grid cell (n^3 on a lattice of spacing h/n; real values allowed).",
          InClosedRange(1.0, 1000.0)};
}
ParameterSpec SamplingJitterSpec() {
  return {"sampling_jitter", 0.0, "1",
          "Random particle offset as a fraction of the lattice spacing (0 = regular lattice).",
          InClosedRange(0.0, 0.5)};
}
ParameterSpec SamplingSeedSpec() {
  return {"sampling_seed", std::int64_t{1}, "1", "Seed of the sampling jitter.", NonNegative()};
}

}  // namespace contactlab::experiments
