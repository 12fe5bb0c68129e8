// The scene × formulation matrix: every registered formulation runs every registered
// scenario for a few steps at its defaults (the scenario's short_run overrides: duration and
// resolution only) and keeps the StepReport contract every consumer relies on:
//   - no divergence, finite state;
//   - the formulation advances world.time by exactly Δt;
//   - one contact wrench per world body;
//   - where per-contact forces are filled, those of each body sum to minus its wrench (force
//     and torque about its centre of mass);
//   - a free body's momentum changes by gravity, its applied force and its wrench, Δt each;
//   - the material's momentum changes by gravity, minus the wrenches on all bodies and the cloth
//     pins' forces, up to the solver's own residual (the contact impulses the bodies received
//     are the material's, reversed; pinned cloth vertices belong to their pins).
// Every formulation resolves rigid–rigid contact, so every cell runs; a new scenario or
// formulation is covered here without editing this file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/config.h"
#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "matrix_cells.h"
#include "registry/registered_formulations.h"

namespace contactlab::experiments {
namespace {

using mpm::Vector3;

// A cloth vertex held by a pin belongs to the pin, not the material: it moves as prescribed,
// and the pin's force on the free cloth is booked in StepReport::pin_forces.
bool Pinned(const World& world, std::size_t p) {
  return !world.particles.cloth_role.empty() && world.particles.cloth_role[p] == mpm::ClothRole::kPinnedVertex;
}

// The material's momentum with the given particle velocities (the world's by default).
Vector3 ParticleMomentum(const World& world, const std::vector<Vector3>* velocities = nullptr) {
  const std::vector<Vector3>& velocity = velocities != nullptr ? *velocities : world.particles.velocity;
  Vector3 momentum = Vector3::Zero();
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    if (!Pinned(world, p)) momentum += world.particles.mass[p] * velocity[p];
  }
  return momentum;
}

double ParticleMass(const World& world) {
  double mass = 0.0;
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    if (!Pinned(world, p)) mass += world.particles.mass[p];
  }
  return mass;
}

class Conformance : public ::testing::TestWithParam<MatrixCell> {};

TEST_P(Conformance, ShortRunKeepsTheStepReportContract) {
  const MatrixCell& cell = GetParam();
  const ScenarioInfo& info = FindScenario(cell.scenario);
  ASSERT_FALSE(info.short_run.empty()) << cell.scenario << " declares no short_run overrides";
  ParameterSet parameters = DeclareParameters(cell.scenario, cell.formulation);
  ApplyOverrides(info.short_run, parameters);
  parameters.Validate();

  World world;
  std::unique_ptr<Scenario> scenario = info.factory();
  scenario->Build(parameters, world);

  std::unique_ptr<Formulation> formulation = MakeFormulation({cell.formulation, parameters});
  const double dt = parameters.GetDouble("dt");
  const int steps = std::max(1, static_cast<int>(std::llround(parameters.GetDouble("duration") / dt)));
  for (int step = 1; step <= steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const double time_before = world.time;
    const std::vector<Vector3> particle_velocity_before = world.particles.velocity;
    std::vector<Vector3> body_momentum_before;
    for (const rigid::RigidBody& body : world.bodies) body_momentum_before.push_back(body.mass * body.linear_velocity);

    StepReport report;
    ASSERT_NO_THROW(report = formulation->Step(world, dt)) << cell.scenario << " / " << cell.formulation;
    // The pins of the step (applied at its start) decide which particles are the material.
    const double particle_mass = ParticleMass(world);
    const Vector3 particle_momentum_before = ParticleMomentum(world, &particle_velocity_before);
    ASSERT_EQ(report.pin_forces.size(), world.particles.cloth_pins.size());
    // Time advances by Δt.
    EXPECT_NEAR(world.time - time_before, dt, 1e-9 * dt);
    // Finite state.
    for (std::size_t p = 0; p < world.particles.size(); ++p) {
      ASSERT_TRUE(world.particles.position[p].allFinite() && world.particles.velocity[p].allFinite())
          << "particle " << p;
    }
    for (const rigid::RigidBody& body : world.bodies) {
      ASSERT_TRUE(body.pose.position.allFinite() && body.linear_velocity.allFinite()) << body.name;
    }
    // One wrench per body.
    ASSERT_EQ(report.contact_wrench.size(), world.bodies.size());

    // Per-contact forces: each record is the force on what touches the geometry of
    // `record.body`; the touched body receives its opposite, a touching rigid body (when
    // `record.other_body` is one) receives it.
    if (!report.contact_forces.empty()) {
      std::vector<Vector3> force(world.bodies.size(), Vector3::Zero());
      std::vector<Vector3> torque(world.bodies.size(), Vector3::Zero());
      double scale = 0.0, torque_scale = 0.0;
      for (const ContactForce& record : report.contact_forces) {
        ASSERT_GE(record.body, 0);
        ASSERT_LT(record.body, static_cast<int>(world.bodies.size()));
        force[record.body] -= record.force;
        const Vector3& touched_center = report.contact_wrench[record.body].moment_point;
        torque[record.body] -= (record.point - touched_center).cross(record.force);
        scale += record.force.norm();
        torque_scale += (record.point - touched_center).norm() * record.force.norm();
        if (record.other_body >= 0) {
          const Vector3& touching_center = report.contact_wrench[record.other_body].moment_point;
          force[record.other_body] += record.force;
          torque[record.other_body] += (record.other_point - touching_center).cross(record.force);
          torque_scale += (record.other_point - touching_center).norm() * record.force.norm();
        }
      }
      // Sums of the same numbers in another order: round-off only. A grid-boundary wall has
      // no records: its wrench is what its grid nodes received (the momentum balance below
      // counts it).
      for (std::size_t b = 0; b < world.bodies.size(); ++b) {
        if (world.bodies[b].is_grid_boundary()) continue;
        EXPECT_LE((force[b] - report.contact_wrench[b].force).norm(), 1e-10 * scale) << world.bodies[b].name;
        EXPECT_LE((torque[b] - report.contact_wrench[b].torque).norm(), 1e-10 * torque_scale + 1e-12 * scale)
            << world.bodies[b].name;
      }
    }

    // Momentum balances up to the solvers' stopping rules: an exact exchange to round-off, an
    // iterative solve to what its final residual can leave unbalanced
    // (SolverSummary::momentum_residual_bound: |Σ g_i| ≤ √(Σ w_i⁻²) ‖W g‖ for the rule's weights,
    // spec-sap-qn Y1 and spec-penalty-hybrid A2 scalings), summed over the step's solves: twice
    // that sum, and 1e-9 of the momentum scale for round-off. sap's free-motion Newton counts
    // too: where the material's energy is not quadratic (fixed corotated, the eos liquid, cloth)
    // it is iterative.
    double all_mass = particle_mass, max_speed = 0.0, impulse_scale = 0.0;
    for (std::size_t p = 0; p < world.particles.size(); ++p)
      max_speed = std::max(max_speed, world.particles.velocity[p].norm());
    for (const rigid::RigidBody& body : world.bodies) {
      if (body.has_finite_mass()) all_mass += body.mass;
    }
    for (const BodyWrench& wrench : report.contact_wrench) impulse_scale += dt * wrench.force.norm();
    double unbalanced_bound = 0.0;
    for (const SolveRecord& solve : report.solves) {
      ASSERT_FALSE(std::isnan(solve.summary.momentum_residual_bound))
          << solve.solver << " (" << ToString(solve.kind) << ") reports no momentum_residual_bound";
      unbalanced_bound += solve.summary.momentum_residual_bound;
    }
    const double speed_scale = world.gravity.norm() * dt + max_speed;

    // A free body's momentum: gravity, applied force and the contact wrench, over Δt.
    for (std::size_t b = 0; b < world.bodies.size(); ++b) {
      const rigid::RigidBody& body = world.bodies[b];
      if (!body.is_free()) continue;
      const Vector3 expected = body_momentum_before[b] +
                               dt * (body.mass * world.gravity + body.applied_force + report.contact_wrench[b].force);
      const double scale = std::sqrt(body.mass * all_mass) * (speed_scale + body.linear_velocity.norm()) +
                           dt * report.contact_wrench[b].force.norm();
      EXPECT_LE((body.mass * body.linear_velocity - expected).norm(), 1e-9 * scale + 2.0 * unbalanced_bound)
          << body.name << "; the solves' residuals bound " << unbalanced_bound;
    }

    // The material: gravity and the reaction of every body's wrench.
    if (particle_mass > 0.0) {
      Vector3 received = Vector3::Zero();
      for (const BodyWrench& wrench : report.contact_wrench) received -= dt * wrench.force;
      for (const Vector3& pin_force : report.pin_forces) {
        received += dt * pin_force;
        impulse_scale += dt * pin_force.norm();
      }
      const Vector3 expected = particle_momentum_before + dt * particle_mass * world.gravity + received;
      const double scale = std::sqrt(particle_mass * all_mass) * speed_scale + impulse_scale;
      EXPECT_LE((ParticleMomentum(world) - expected).norm(), 1e-9 * scale + 2.0 * unbalanced_bound)
          << "material momentum imbalance; the solves' residuals bound " << unbalanced_bound;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryScenarioUnderEveryFormulation, Conformance, ::testing::ValuesIn(AllMatrixCells()),
                         MatrixCellName);

}  // namespace
}  // namespace contactlab::experiments
