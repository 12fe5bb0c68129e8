#pragma once
// The `penalty` formulation ([ding_schroeder_penalty], Ding & Schroeder; spec-penalty-hybrid §2): MPM grid
// velocities and rigid generalized velocities advance together by backward Euler; contact is
// a zero-length spring f = k (P(X, Z) − Z) from each contact particle Z (MPM particle or
// rigid surface sample) to an attachment point X on the touched geometry, relaxed along the
// surface to Y = P(X, Z) so that f stays inside the Coulomb cone. The nonsymmetric backward
// Euler equations are solved by the stabilized Newton method with GMRES.
//
// One step (spec §2.13):
//   1. P2G (mass and APIC momentum) and the implicit MPM energy of the step;
//   2. rigid free motion and dynamics (dynamics::RigidDofs);
//   3. stabilized Newton on g̃(x) = 0 (penalty_step_system.h), registering pairs at every
//      iterate (spec A5);
//   4. G2P with the solved grid velocities, plasticity and R0 (lagged, spec A13); rigid
//      bodies take the solved velocities and move;
//   5. pairs still pushing commit X ← Y in their geometry's frame; the others are removed.
#include <string>
#include <vector>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/dynamics/rigid_dofs.h"
#include "formulations/formulation.h"
#include "formulations/penalty/attachment_table.h"
#include "formulations/penalty/penalty_step_system.h"
#include "formulations/penalty/stabilized_newton.h"
#include "mpm/sparse_grid.h"

namespace contactlab::penalty {

struct PenaltyOptions {
  PenaltyContactOptions contact;
  StabilizedNewtonOptions newton;
  // Newton stops when ‖g̃‖ ≤ newton_tolerance · ResidualScale() [-] (spec A2: a relative
  // tolerance, since [ding_schroeder_penalty]'s absolute τ = 1 depends on its unstated mass scale).
  double newton_tolerance = 1.0e-5;
  // Spacing of the surface samples that make rigid bodies' "particles" [m]; 0 uses half
  // the grid spacing.
  double sample_spacing = 0.0;
  // When a plastic material's return mapping acts (dynamics::PlasticityTiming). [ding_schroeder_penalty] says
  // its solver also stabilizes Drucker–Prager sand, which reads as the projection inside the
  // force evaluation (spec-penalty-hybrid A13): auto puts the sand inside the step, the von
  // Mises dough (not in [ding_schroeder_penalty]) after it, as sap does.
  dynamics::PlasticityTiming plasticity = dynamics::PlasticityTiming::kAuto;

  static std::vector<ParameterSpec> Specs();
  // Reads and validates the `penalty.*` keys; throws InputError naming the key.
  static PenaltyOptions FromParameters(const ParameterSet& parameters);
};

// What happened in the latest step beyond the StepReport (spec §2.13's statistics).
struct PenaltyStepStatistics {
  StabilizedNewtonResults newton;
  int pairs = 0;          // registered pairs at the end of the solve
  int active_pairs = 0;   // pairs applying force (committed)
  int sliding_pairs = 0;  // active pairs whose attachment slid
  int pairs_created = 0;  // new pairs registered during the step
  int rigid_samples = 0;
};

class PenaltyFormulation final : public Formulation {
 public:
  explicit PenaltyFormulation(PenaltyOptions options);
  std::string_view name() const override { return "penalty"; }
  std::vector<UsedParameter> UsedParameters() const override;
  // The attachment table (each pair's X and k) and the trackers of the "auto" keys.
  void VisitState(StateArchive& archive, const World& world) override;

  const PenaltyStepStatistics& last_step() const { return statistics_; }
  const AttachmentTable& attachments() const { return attachments_; }

 protected:
  StepReport AdvanceState(World& world, double dt) override;

 private:
  // Surface samples of every body with dynamics, made once (bodies never change shape).
  void BuildRigidSamples(const World& world);
  PenaltyOptions options_;
  mpm::SparseGrid grid_;
  dynamics::ImplicitMpm implicit_mpm_;
  dynamics::RigidDofs rigid_dofs_;
  AttachmentTable attachments_;
  std::vector<RigidSample> samples_;
  bool samples_built_ = false;
  PenaltyStepStatistics statistics_;
  UsedParameterTracker used_stiffness_{
      "penalty.stiffness", "per pair max(m_p (2 pi/dt)^2, rho c^2 V_p^(1/3)), kept from creation to removal"};
  UsedParameterTracker used_edge_radius_{"penalty.edge_radius", "h/4"};
  UsedChoiceTracker used_plasticity_ = dynamics::PlasticityTimingTracker("penalty.plasticity");
  UsedChoiceTracker used_preconditioner_;  // per Newton direction; made in the constructor
  UsedParameterTracker used_rigid_stiffness_{"penalty.rigid_stiffness",
                                             "per pair max(m_s (2 pi/dt)^2, rho c^2 s) of the stiffest material, m_s = "
                                             "M/N_samples, kept from creation to removal"};
};

FormulationInfo PenaltyInfo();

}  // namespace contactlab::penalty
