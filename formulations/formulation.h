#pragma once
// The interface every MPM–rigid coupling formulation implements, the per-step report the
// experiment driver logs, and the registry that creates formulations by name.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "formulations/parameters.h"
#include "formulations/solvers/solver_summary.h"
#include "formulations/state_archive.h"
#include "formulations/world.h"
#include "mpm/cloth_particles.h"
#include "mpm/sparse_grid.h"

namespace contactlab {

// The contact load the MPM material exerted on one rigid body during a step: the summed
// contact impulse divided by the step, as a force and a torque about the body's centre of
// mass (origin of its frame), both in world.
struct BodyWrench {
  mpm::Vector3 force = mpm::Vector3::Zero();   // [N]
  mpm::Vector3 torque = mpm::Vector3::Zero();  // [N m], about moment_point
  // The body's centre of mass the torque is taken about, world [m]: at tⁿ for formulations
  // that find contacts at the start of the step, at tⁿ⁺¹ for those that apply them there.
  mpm::Vector3 moment_point = mpm::Vector3::Zero();
};

// One zero wrench per world body, about each body's current centre of mass.
std::vector<BodyWrench> ZeroWrenches(const World& world);

// The force at one contact point between a rigid geometry and what touches it (an MPM
// particle, or a point of another rigid body), for force diagnostics such as the
// per-contact Coulomb cone margin ‖f_t‖ − μ f_n (spec-penalty-hybrid §4.4). Formulations
// that resolve contact per point fill these; grid-based ones may leave them empty.
struct ContactForce {
  int body = -1;                                // world body owning the touched geometry
  int geometry = -1;                            // geometry index within that body
  mpm::Vector3 point = mpm::Vector3::Zero();    // contact point, world [m]
  mpm::Vector3 normal = mpm::Vector3::UnitZ();  // outward unit normal of the geometry, world
  // Force the geometry exerts on the touching particle or point, world [N]: f·n > 0 pushes
  // it out. (The opposite of what the geometry's body receives.)
  mpm::Vector3 force = mpm::Vector3::Zero();
  double friction_coefficient = 0.0;  // μ of the geometry [-]
  // When the touching point belongs to another rigid body (rigid–rigid contact): that body,
  // which receives `force` at `other_point`; −1 for an MPM particle.
  int other_body = -1;
  mpm::Vector3 other_point = mpm::Vector3::Zero();
};

// Wall-clock seconds spent in each phase of a step.
struct Timings {
  double free_motion = 0.0;  // P2G, stresses, unconstrained grid update
  double detection = 0.0;    // contact detection / boundary classification
  double assembly = 0.0;     // building contact problems
  double solve = 0.0;        // contact solve or impulse exchange
  double g2p = 0.0;          // grid-to-particle transfer, F update, plasticity, advection
  double rigid = 0.0;        // rigid-body update
};

// Which of a step's solves a SolveRecord describes.
enum class SolveKind : std::int8_t {
  kFreeMotion = 0,  // the implicit MPM momentum balance without contact (sap)
  kContact = 1,     // the formulation's coupled contact problem: SAP over grid and rigid
                    // unknowns, one quasi-Newton substep, penalty's Newton on the whole step
  kRigidStep = 2,   // the convex step over the rigid unknowns alone (quasi_newton's eq. 3,
                    // hybrid_impulse after each substep)
};
inline constexpr int kNumSolveKinds = 3;
const char* ToString(SolveKind kind);  // "free_motion", "contact", "rigid_step"

// One solve of a step in the shared shape (solvers/solver_summary.h), for the run file's
// /solver_log/solves and, when iterations are logged, /solver_log/iterations.
struct SolveRecord {
  SolveKind kind = SolveKind::kContact;
  int index = 0;                   // its number among the step's solves of that kind (e.g. the substep)
  std::string solver;              // "sap", "quasi_newton", "stabilized_newton", "implicit_mpm_newton"
  solvers::SolverSummary summary;  // the history is kept only when iterations are logged
};

struct StepReport {
  // Particle–geometry contact points: the constraints of the step's contact problem for
  // implicit formulations, those found at the end of the step for explicit ones.
  int contacts = 0;
  // Contact points between rigid bodies (and between rigid bodies and static geometry) that
  // the step resolved; 0 for formulations or worlds without them.
  int rigid_contacts = 0;
  // Grid nodes held by grid-boundary walls (contact/grid_boundary.h): the nodes whose
  // velocity the walls constrained, the largest count over the step's substeps; 0 without walls.
  int grid_boundary_nodes = 0;
  double max_penetration = 0.0;  // deepest particle penetration into a rigid geometry [m]
  // The aggregates below are kept by Formulation::RecordSolve from `solves`: iterations and
  // linear (GMRES) iterations summed over the contact and rigid-step solves, the largest
  // residual / threshold among them, and whether every solve of the step converged.
  int outer_iterations = 0;   // Newton / quasi-Newton iterations (0 if none)
  int linear_iterations = 0;  // GMRES iterations, 0 for direct solves or none
  int substeps = 1;           // internal substeps taken to advance by dt
  double residual = 0.0;      // largest final residual / threshold (≤ 1 when optimal; 0 if no solve)
  bool converged = true;
  std::vector<SolveRecord> solves;           // every solve of the step, in the order run
  std::vector<BodyWrench> contact_wrench;    // one per world body, same order
  std::vector<ContactForce> contact_forces;  // per contact point; empty if not resolved
  // Per cloth pin (Particles::cloth_pins): the step-mean force it exerted on the free cloth [N]
  // (RecordClothPinForces); empty without pins.
  std::vector<mpm::Vector3> pin_forces;
  Timings timings;
};

// Thrown by a formulation that cannot continue (non-finite state, runaway substep count);
// the driver records it as run status "diverged" instead of crashing.
class SimulationDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value a formulation used for a key given as "auto" (ParameterSpec::auto_numeric_type),
// recorded in the run file beside the given value, as Ceres' Summary records given/used
// pairs. Where the value adapts to the state step by step, `value` is the largest used and
// `smallest` the smallest; otherwise both are equal.
struct UsedParameter {
  std::string key;        // e.g. "quasi_newton.substeps"
  double value = 0.0;     // largest value used over the run [unit of the key]
  double smallest = 0.0;  // smallest value used over the run
  std::string rule;       // one line: how it was derived
  // For a choice key (an enum such as sap.linear_solver): the members it resolved to, with
  // how often, e.g. "schur (812 steps), full (3 steps)"; `value` and `smallest` are unused.
  std::string choice;
};

class Formulation {
 public:
  virtual ~Formulation() = default;
  virtual std::string_view name() const = 0;
  // Advances the world by dt [s]: the cloth pins of the step's start (mpm::ApplyClothPins), the
  // formulation's AdvanceState, then world.time, which only this function sets at the end of a
  // step (to its start + dt, exactly).
  // A particle that left the grid's range (mpm::ParticleOutsideGrid) ends the step as a
  // divergence.
  StepReport Step(World& world, double dt) {
    const double start_time = world.time;
    if (!world.particles.cloth_pins.empty()) mpm::ApplyClothPins(start_time, world.particles);
    StepReport report;
    try {
      report = AdvanceState(world, dt);
    } catch (const mpm::ParticleOutsideGrid& outside) {
      throw SimulationDiverged(std::string(name()) + ": at t = " + std::to_string(world.time) + " s, " +
                               outside.what());
    }
    world.time = start_time + dt;
    return report;
  }
  // The values derived for "auto" keys so far (empty before the first step).
  virtual std::vector<UsedParameter> UsedParameters() const { return {}; }
  // Saves or loads, for a checkpoint (formulations/state_archive.h), everything a later step
  // or UsedParameters reads that the formulation carries from one step to the next: lagged
  // forces, contact pairs, adaptive choices and the trackers of its "auto" keys. Scratch that
  // every step rebuilds (grids, factorizations, statistics of the last step) is not listed.
  // Loading checks what it reads against `world`, the world the run rebuilt and loaded.
  virtual void VisitState(StateArchive& archive, const World& world) = 0;

  // Whether Step keeps each solve's per-iteration history in StepReport::solves (the run's
  // output.log_iterations key; off by default, since histories cost time and space).
  void set_log_iterations(bool on) { log_iterations_ = on; }
  bool log_iterations() const { return log_iterations_; }

 protected:
  // Advances particles and bodies by dt [s], possibly in substeps, reading world.time as the
  // step's start; leaves world.time to Step (an explicit formulation may move it through its
  // substeps, for prescribed motion, and Step sets the end value).
  virtual StepReport AdvanceState(World& world, double dt) = 0;

  // Books one solve into `report`: appends its record (with the history only when iterations
  // are logged) and folds it into outer_iterations, linear_iterations, residual and
  // converged. Every formulation reports its solves through this one function.
  void RecordSolve(StepReport& report, SolveKind kind, int index, std::string solver,
                   solvers::SolverSummary summary) const;

 private:
  bool log_iterations_ = false;
};

// Keeps the running extremes of one derived value (for UsedParameters).
class UsedParameterTracker {
 public:
  UsedParameterTracker(std::string key, std::string rule) : used_{std::move(key), 0.0, 0.0, std::move(rule), {}} {}
  void Observe(double value);
  bool observed() const { return observed_; }
  const UsedParameter& used() const { return used_; }
  // The extremes so far, under the key's name.
  void VisitState(StateArchive& archive);

 private:
  UsedParameter used_;
  bool observed_ = false;
};

// Counts the members a choice key resolved to (for UsedParameters), by index into `members`
// (the enum's names in code order): cheap enough to call per contact.
class UsedChoiceTracker {
 public:
  // `occasion` names what one Observe counts: "steps", "contacts".
  UsedChoiceTracker(std::string key, std::vector<std::string> members, std::string occasion, std::string rule);
  void Observe(int member, long long times = 1) { counts_.at(static_cast<std::size_t>(member)) += times; }
  bool observed() const;
  UsedParameter used() const;
  // The counts so far, under the key's name.
  void VisitState(StateArchive& archive);

 private:
  std::string key_;
  std::vector<std::string> members_;
  std::string occasion_;
  std::string rule_;
  std::vector<long long> counts_;
};

// What the registry knows about a formulation.
struct FormulationInfo {
  std::string name;                       // CLI name, e.g. "hybrid_impulse"
  std::string description;                // one line
  std::vector<ParameterSpec> parameters;  // keys are prefixed "<name>."
  std::unique_ptr<Formulation> (*factory)(const ParameterSet& parameters);
};

// The registry of every formulation (RegisteredFormulations, FindFormulation, MakeFormulation)
// is registry/registered_formulations.h: it is the one place that knows all four.

}  // namespace contactlab
