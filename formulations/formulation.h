#pragma once
// The interface every MPM–rigid coupling formulation implements, the per-step report the
// experiment driver logs, and the registry that creates formulations by name.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "formulations/parameters.h"
#include "formulations/world.h"

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

// One iteration of an iterative contact solve, kept when a formulation is asked to log
// iterations (convergence histories, spec-sap-qn V4).
struct IterationRecord {
  int solve = 0;               // index of the solve within the step (e.g. the substep)
  int iteration = 0;           // 0 = the initial guess
  double gradient_norm = 0.0;  // the solver's scaled optimality residual
  double threshold = 0.0;      // what it is compared with by the stopping rule
  double cost = 0.0;           // the solver's objective [J]
};

struct StepReport {
  // Particle–geometry contact points: the constraints of the step's contact problem for
  // implicit formulations, those found at the end of the step for explicit ones.
  int contacts = 0;
  // Contact points between rigid bodies (and between rigid bodies and static geometry) that
  // the step resolved; 0 for formulations or worlds without them.
  int rigid_contacts = 0;
  double max_penetration = 0.0;  // deepest particle penetration into a rigid geometry [m]
  int outer_iterations = 0;      // Newton / quasi-Newton iterations (0 if none)
  int linear_iterations = 0;     // CG/GMRES iterations, 0 for direct solves or none
  int substeps = 1;              // internal substeps taken to advance by dt
  double residual = 0.0;         // final scaled optimality residual (0 if no solve)
  bool converged = true;
  std::vector<BodyWrench> contact_wrench;      // one per world body, same order
  std::vector<IterationRecord> iteration_log;  // empty unless iteration logging is on
  std::vector<ContactForce> contact_forces;    // per contact point; empty if not resolved
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
};

class Formulation {
 public:
  virtual ~Formulation() = default;
  virtual std::string_view name() const = 0;
  // Advances the world by dt [s]: the formulation's AdvanceState, then world.time, which only
  // this function sets at the end of a step (to its start + dt, exactly).
  StepReport Step(World& world, double dt) {
    const double start_time = world.time;
    StepReport report = AdvanceState(world, dt);
    world.time = start_time + dt;
    return report;
  }
  // The values derived for "auto" keys so far (empty before the first step).
  virtual std::vector<UsedParameter> UsedParameters() const { return {}; }

  // Whether Step fills StepReport::iteration_log with every iteration of its iterative
  // solves (the run's output.log_iterations key; off by default, since histories cost time
  // and space).
  void set_log_iterations(bool on) { log_iterations_ = on; }
  bool log_iterations() const { return log_iterations_; }

 protected:
  // Advances particles and bodies by dt [s], possibly in substeps, reading world.time as the
  // step's start; leaves world.time to Step (an explicit formulation may move it through its
  // substeps, for prescribed motion, and Step sets the end value).
  virtual StepReport AdvanceState(World& world, double dt) = 0;

 private:
  bool log_iterations_ = false;
};

// Keeps the running extremes of one derived value (for UsedParameters).
class UsedParameterTracker {
 public:
  UsedParameterTracker(std::string key, std::string rule) : used_{std::move(key), 0.0, 0.0, std::move(rule)} {}
  void Observe(double value);
  bool observed() const { return observed_; }
  const UsedParameter& used() const { return used_; }

 private:
  UsedParameter used_;
  bool observed_ = false;
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
