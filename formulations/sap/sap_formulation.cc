#include "formulations/sap/sap_formulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "formulations/contact/grid_boundary.h"
#include "formulations/contact/particle_contacts.h"
#include "formulations/dynamics/explicit_stability.h"
#include "formulations/dynamics/rigid_contact_step.h"
#include "formulations/dynamics/step_bookkeeping.h"
#include "formulations/linear_algebra/dense_cholesky.h"
#include "formulations/phase_clock.h"
#include "formulations/sap/material_pieces.h"
#include "formulations/sap/schur_complement.h"
#include "formulations/sap/sparse_sap_linear_system.h"
#include "mpm/bspline.h"
#include "mpm/transfers.h"

namespace contactlab::sap {
namespace {

// The smallest automatic contact margin, as a fraction of h (SapOptions::contact_margin).
constexpr double kMinimumContactMargin = 0.05;
// sap.factorization_reuse_ratio = auto on the full path: reuse H's factorization after an
// iteration that halved the residual (SapOptions::factorization_reuse_ratio).
constexpr double kFullPathReuseRatio = 0.5;

// One particle–geometry contact with everything the problem needs: the grid nodes under the
// particle with their weights, the rigid Jacobian and the bias velocity.
struct ContactCoupling {
  std::array<int, 27> node;                                 // active node index (−1 when absent or of zero weight)
  std::array<double, 27> weight;                            // w_ip
  Eigen::Matrix<double, 3, Eigen::Dynamic> rigid_jacobian;  // world-frame point Jacobian
  int rigid_first_column = -1;
  Vector3 bias_world = Vector3::Zero();  // prescribed rigid point velocity [m/s]
};

bool AllFinite(const Eigen::VectorXd& vector) {
  return vector.allFinite();
}

// The 3 × 3 diagonal block of every node of a full symmetric node-block matrix.
std::vector<Matrix3> NodeDiagonalBlocks(const SparseMatrix& matrix) {
  std::vector<Matrix3> blocks(matrix.cols() / 3, Matrix3::Zero());
  for (int column = 0; column < matrix.outerSize(); ++column) {
    for (SparseMatrix::InnerIterator entry(matrix, column); entry; ++entry) {
      if (entry.row() / 3 == column / 3) blocks[column / 3](entry.row() % 3, column % 3) = entry.value();
    }
  }
  return blocks;
}

// Delassus scale w = tr(W_cc)/3 of every contact, W = J A⁻¹ Jᵀ (spec §1.3.2), and the
// contact constants that depend on it. Estimates:
//   "exact"           W_cc from the dense reduced matrix [A_rigid, S] (Schur path only):
//                     the true mobility, stiffness of the material included;
//   "block_diagonal"  MPM part Σ_i w_ip² (A_MPM)_ii⁻¹ with A's 3 × 3 node blocks (mass and
//                     stiffness), plus the exact rigid part;
//   "bounded_block_diagonal"  the MPM part of block_diagonal, raised to 1/M when below it,
//                     M the mass of the contact's material piece, a bound the exact MPM
//                     part never goes below (material_pieces.h);
//   "lumped_mass"     MPM part Σ_i w_ip²/m_i I (ignores stiffness), plus the rigid part.
// A stiff material makes the lumped estimate far too large (the near-rigid regularization
// β²w/(4π²) then makes the contact soft and bouncy) and the block-diagonal one far too small
// (Σ_i w_ip² (A_ii)⁻¹ ignores that neighbouring nodes move together, which can put it
// below 1/M: contacts much stiffer than SAP's near-rigid limit and many more Newton
// iterations); the exact one is what SAP assumes.
void PrepareContacts(DelassusEstimate estimate, const contact::ContactModel& model, const dynamics::RigidDofs& rigid,
                     const dynamics::ImplicitMpm& implicit_mpm, const std::vector<contact::ParticleContact>& contacts,
                     const std::vector<ContactCoupling>& couplings, const SparseMatrix& mpm_matrix,
                     const Eigen::MatrixXd* reduced_matrix, double dt, SapProblem& problem) {
  const int contact_count = static_cast<int>(contacts.size());
  std::vector<double> delassus(contact_count, 0.0);
  if (estimate == DelassusEstimate::kExact) {
    // W_cc = tr(J_c A⁻¹ J_cᵀ)/3 = ‖L⁻¹ J_cᵀ‖²_F / 3, the half solves of many contacts at once.
    linear_algebra::DenseCholesky factor;
    if (!factor.Factor(*reduced_matrix)) {
      throw SimulationDiverged("sap: the reduced dynamics matrix [A_rigid, S] is not positive definite");
    }
    const int size = static_cast<int>(reduced_matrix->rows());
    constexpr int kContactsPerBatch = 256;  // bounds the right-hand sides' memory
    for (int batch_start = 0; batch_start < contact_count; batch_start += kContactsPerBatch) {
      const int batch_size = std::min(kContactsPerBatch, contact_count - batch_start);
      Eigen::MatrixXd jacobian_transpose = Eigen::MatrixXd::Zero(size, 3 * batch_size);
      for (int k = 0; k < batch_size; ++k) {
        for (const JacobianBlock& block : problem.constraints[batch_start + k].jacobian) {
          jacobian_transpose.block(block.column, 3 * k, block.matrix.cols(), 3) = block.matrix.transpose();
        }
      }
      const Eigen::MatrixXd half = factor.SolveLower(jacobian_transpose);
      for (int k = 0; k < batch_size; ++k) delassus[batch_start + k] = half.middleCols(3 * k, 3).squaredNorm() / 3.0;
    }
  } else {
    const bool with_stiffness = estimate != DelassusEstimate::kLumpedMass;
    const bool bounded = estimate == DelassusEstimate::kBoundedBlockDiagonal;
    const std::vector<Matrix3> node_blocks = with_stiffness ? NodeDiagonalBlocks(mpm_matrix) : std::vector<Matrix3>{};
    const std::vector<double> piece_mass =
        bounded ? MaterialPieceMasses(mpm_matrix, implicit_mpm) : std::vector<double>{};
    const Eigen::VectorXd& node_masses = implicit_mpm.node_masses();
    for (int c = 0; c < contact_count; ++c) {
      const ContactCoupling& coupling = couplings[c];
      Matrix3 material_mobility = Matrix3::Zero();
      double lower_bound = 0.0;
      for (int k = 0; k < 27; ++k) {
        const int node = coupling.node[k];
        if (node < 0) continue;
        const double weight_squared = coupling.weight[k] * coupling.weight[k];
        material_mobility += with_stiffness ? Matrix3(weight_squared * node_blocks[node].inverse())
                                            : Matrix3(weight_squared / node_masses[node] * Matrix3::Identity());
        if (bounded) lower_bound = 1.0 / piece_mass[node];  // every stencil node is in the particle's piece
      }
      const Matrix3 rigid_mobility = rigid.PointMobility(coupling.rigid_first_column, coupling.rigid_jacobian);
      delassus[c] = rigid_mobility.trace() / 3.0 + std::max(material_mobility.trace() / 3.0, lower_bound);
    }
  }
  for (int c = 0; c < contact_count; ++c) {
    contact::ContactPointState state;
    state.penetration = contacts[c].penetration;
    state.previous_normal_velocity = contacts[c].relative_velocity.z();
    state.friction_coefficient = contacts[c].friction_coefficient;
    state.delassus_scale = delassus[c];
    problem.constraints[c].contact = model.Prepare(state, dt);
  }
}

}  // namespace

const ChoiceTable<LinearSolver>& LinearSolverNames() {
  static const ChoiceTable<LinearSolver> names = {
      {"auto", LinearSolver::kAuto}, {"schur", LinearSolver::kSchur}, {"full", LinearSolver::kFull}};
  return names;
}

const ChoiceTable<DelassusEstimate>& DelassusEstimateNames() {
  static const ChoiceTable<DelassusEstimate> names = {
      {"auto", DelassusEstimate::kAuto},
      {"exact", DelassusEstimate::kExact},
      {"block_diagonal", DelassusEstimate::kBlockDiagonal},
      {"bounded_block_diagonal", DelassusEstimate::kBoundedBlockDiagonal},
      {"lumped_mass", DelassusEstimate::kLumpedMass}};
  return names;
}

const ChoiceTable<WarmStart>& WarmStartNames() {
  static const ChoiceTable<WarmStart> names = {{"free_motion", WarmStart::kFreeMotion},
                                               {"current_velocity", WarmStart::kCurrentVelocity},
                                               {"lower_cost", WarmStart::kLowerCost}};
  return names;
}

std::vector<ParameterSpec> SapOptions::Specs() {
  const SapOptions defaults;
  std::vector<ParameterSpec> specs = {
      {"sap.relative_tolerance", defaults.solver.relative_tolerance, "1",
       "SAP optimality tolerance eps_r on the scaled gradient; [zong2024convex] uses 1e-6.", Positive()},
      {"sap.absolute_tolerance", defaults.solver.absolute_tolerance, "J^0.5",
       "SAP absolute tolerance eps_a for problems with zero momentum scale (Drake default).", NonNegative()},
      {"sap.max_iterations", std::int64_t{defaults.solver.max_iterations}, "1",
       "Newton iterations allowed per step before the step is reported unconverged.", Positive()},
      AutoParameter(
          "sap.factorization_reuse_ratio", 0.0, "1",
          "Chord steps in SAP's Newton: after an iteration that cut the scaled residual to at most this fraction of "
          "the previous one, the next direction reuses the last factorization of H (a fresh one follows any reused "
          "step that does not). Same minimizer and stopping rules; 0 factors H at every iteration, as SAP does. "
          "auto: 0.5 on the full path, where the sparse factorization is nearly all of a Newton iteration, 0 on the "
          "schur path, where the dense one is cheap.",
          InHalfOpenRange(0.0, 1.0)),
      {"sap.free_motion_tolerance", defaults.free_motion.relative_tolerance, "1",
       "Relative tolerance of the implicit MPM free motion ([zong2024convex]: 1e-6).", Positive()},
      {"sap.max_free_motion_iterations", std::int64_t{defaults.free_motion.max_newton_iterations}, "1",
       "Newton iterations for nonlinear materials in the free motion (linear corotated takes one).", Positive()},
      {"sap.linear_solver", ChoiceName(defaults.linear_solver, LinearSolverNames()), "",
       "schur: dense SAP Newton after a Schur complement onto the grid nodes under contact particles; full: sparse "
       "CHOLMOD Newton on every grid node; auto: per step, schur where its dense factorization (n^3/3 flops for n "
       "reduced unknowns) costs no more than the free motion's sparse factorization of the whole MPM Hessian "
       "(nonlinear materials), and while n <= sap.max_dense_unknowns where the free motion needed no factorization "
       "(a quadratic energy).",
       OneOf(ChoiceNames(LinearSolverNames()))},
      {"sap.max_dense_unknowns", std::int64_t{defaults.max_dense_unknowns}, "1",
       "Where the free motion needs no factorization of its own (a quadratic energy), auto uses the Schur path while "
       "the reduced problem has at most this many unknowns.",
       Positive()},
      {"sap.delassus_estimate", ChoiceName(defaults.delassus_estimate, DelassusEstimateNames()), "",
       "Contact mobility w for SAP's regularization: exact (Schur path), block_diagonal, bounded_block_diagonal "
       "(block_diagonal raised to 1/M of the material piece, a bound exact never goes below), lumped_mass; auto: "
       "exact on the schur path, bounded_block_diagonal on the full path.",
       OneOf(ChoiceNames(DelassusEstimateNames()))},
      {"sap.warm_start", ChoiceName(defaults.warm_start, WarmStartNames()), "",
       "Start of SAP's Newton: free_motion (v*), current_velocity (v^n: the rigid velocities and the P2G grid "
       "velocities at the start of the step) or lower_cost (whichever of the two has the lower cost). Same problem "
       "and minimizer, different iteration counts.",
       OneOf(ChoiceNames(WarmStartNames()))},
      AutoParameter(
          "sap.contact_margin", 0.0, "1",
          "Distance, as a fraction of h, within which particles outside a rigid surface become gap contacts "
          "(0: inside only, as [zong2024convex]); it must cover how far particles and surfaces close in one step. "
          "auto: per step max(0.05, dt (v_particle + g dt + v_rigid)/h), the fastest particle and the fastest "
          "rigid surface point under the step's free motion.",
          NonNegative()),
      dynamics::PlasticityTimingSpec("sap.plasticity"),
      dynamics::FreeMotionTangentSpec("sap.free_motion_tangent"),
  };
  for (ParameterSpec& spec : contact::ContactModelParameters::Specs()) specs.push_back(std::move(spec));
  return specs;
}

SapOptions SapOptions::FromParameters(const ParameterSet& parameters) {
  SapOptions options;
  options.solver.relative_tolerance = parameters.GetDouble("sap.relative_tolerance");
  options.solver.absolute_tolerance = parameters.GetDouble("sap.absolute_tolerance");
  options.solver.max_iterations = parameters.GetIntAs<int>("sap.max_iterations");
  options.factorization_reuse_ratio = parameters.GetOptionalDouble("sap.factorization_reuse_ratio").value_or(-1.0);
  options.free_motion.relative_tolerance = parameters.GetDouble("sap.free_motion_tolerance");
  options.free_motion.max_newton_iterations = parameters.GetIntAs<int>("sap.max_free_motion_iterations");
  options.free_motion.tangent = GetChoice(parameters, "sap.free_motion_tangent", dynamics::FreeMotionTangentNames());
  options.linear_solver = GetChoice(parameters, "sap.linear_solver", LinearSolverNames());
  options.max_dense_unknowns = parameters.GetIntAs<int>("sap.max_dense_unknowns");
  options.delassus_estimate = GetChoice(parameters, "sap.delassus_estimate", DelassusEstimateNames());
  options.warm_start = GetChoice(parameters, "sap.warm_start", WarmStartNames());
  options.plasticity = GetChoice(parameters, "sap.plasticity", dynamics::PlasticityTimingNames());
  options.contact_margin = parameters.GetOptionalDouble("sap.contact_margin").value_or(-1.0);
  options.contact = contact::ContactModelParameters::FromParameters(parameters);
  if (options.delassus_estimate == DelassusEstimate::kExact && options.linear_solver == LinearSolver::kFull) {
    throw InputError("sap.delassus_estimate = exact needs the Schur path; set sap.linear_solver to schur or auto");
  }
  const std::string problem = options.solver.Validate();
  if (!problem.empty()) throw InputError("sap: " + problem);
  return options;
}

SapFormulation::SapFormulation(SapOptions options)
    : options_(std::move(options)), contact_model_(contact::MakeContactModel(options_.contact)) {}

double SapFormulation::ContactMargin(const World& world, double dt) {
  const double spacing = world.grid_spacing;
  if (options_.contact_margin >= 0.0) return options_.contact_margin * spacing;
  const dynamics::ExplicitSpeeds speeds = dynamics::MeasureExplicitSpeeds(world);
  const double closing_speed =
      speeds.max_particle_speed + world.gravity.norm() * dt + rigid_dofs_.MaxFreeMotionSurfaceSpeed(world, dt);
  const double margin = std::max(kMinimumContactMargin * spacing, dt * closing_speed);
  used_margin_.Observe(margin / spacing);
  return margin;
}

solvers::SapSolverOptions SapFormulation::SolverOptions(LinearSolver path) {
  solvers::SapSolverOptions solver = options_.solver;
  if (options_.factorization_reuse_ratio >= 0.0) {
    solver.factorization_reuse_ratio = options_.factorization_reuse_ratio;
  } else {
    solver.factorization_reuse_ratio = path == LinearSolver::kFull ? kFullPathReuseRatio : 0.0;
    used_reuse_ratio_.Observe(solver.factorization_reuse_ratio);
  }
  return solver;
}

void SapFormulation::VisitState(StateArchive& archive, const World& /*world*/) {
  used_margin_.VisitState(archive);
  used_linear_solver_.VisitState(archive);
  used_reuse_ratio_.VisitState(archive);
  used_plasticity_.VisitState(archive);
  used_free_motion_tangent_.VisitState(archive);
  used_delassus_.VisitState(archive);
}

std::vector<UsedParameter> SapFormulation::UsedParameters() const {
  std::vector<UsedParameter> used;
  if (used_margin_.observed()) used.push_back(used_margin_.used());
  if (used_linear_solver_.observed()) used.push_back(used_linear_solver_.used());
  if (used_delassus_.observed()) used.push_back(used_delassus_.used());
  if (used_reuse_ratio_.observed()) used.push_back(used_reuse_ratio_.used());
  if (used_plasticity_.observed()) used.push_back(used_plasticity_.used());
  if (used_free_motion_tangent_.observed()) used.push_back(used_free_motion_tangent_.used());
  return used;
}

// What one step carries from stage to stage.
struct SapFormulation::StepWork {
  double dt = 0.0;
  std::vector<contact::ParticleContact> contacts;  // particle–geometry contacts
  std::vector<ContactCoupling> couplings;          // one per particle contact
  std::vector<int> participating;                  // active nodes under contact particles
  int reduced_size = 0;                            // rigid + 3 |participating|
  bool use_schur = false;                          // the linear algebra chosen for the step
  Eigen::VectorXd mpm_free_velocity;               // v*_MPM
  SparseMatrix mpm_matrix;                         // A_MPM
  SchurComplement schur;
  SapProblem problem;              // particle constraints, then rigid ones
  Eigen::VectorXd rigid_velocity;  // solved v_rigid
  Eigen::VectorXd mpm_velocity;    // solved v_MPM
  std::vector<Vector3> impulses;   // γ per constraint, same order
};

StepReport SapFormulation::AdvanceState(World& world, double dt) {
  StepReport report;
  statistics_ = SapStepStatistics{};
  if (grid_.spacing() != world.grid_spacing) grid_ = mpm::SparseGrid(world.grid_spacing);
  StepWork work;
  work.dt = dt;
  const auto sparse_factorizations = [&] {
    return free_motion_cholesky_.numeric_factorizations() + schur_cholesky_.numeric_factorizations() +
           contact_cholesky_.numeric_factorizations();
  };
  const int sparse_factorizations_before = sparse_factorizations();
  SetUpFreeMotion(world, work, report.timings);
  DetectContacts(world, work, report.timings);
  CoupleContacts(world, work, report.timings);
  SolveMpmFreeMotion(world, work, report.timings);
  RecordSolve(report, SolveKind::kFreeMotion, 0, "implicit_mpm_newton", statistics_.free_motion);
  AssembleProblem(work, report.timings);
  SolveContactProblem(world, work, report);
  AdvanceRigidBodies(world, work, report);
  if (implicit_mpm_.has_constraints()) {  // grid-boundary walls: reactions and friction
    // Problem (7) minimized E's quadratic model about v* (its A_MPM); where E is not
    // quadratic the walls' reactions come from that model, so that the step's momentum
    // balances to the solvers' tolerances (∇E(v) itself differs from the model by the
    // linearization's remainder, which sits on the walls' and the free components alike).
    // A contact particle's impulse reaches the fixed components of its stencil too, though
    // its Jacobian drops them: the wall takes that share.
    const Eigen::VectorXd model_gradient = implicit_mpm_.is_quadratic()
                                               ? Eigen::VectorXd()
                                               : implicit_mpm_.ModelGradient(work.mpm_free_velocity, work.mpm_velocity);
    Eigen::VectorXd contact_impulses = Eigen::VectorXd::Zero(implicit_mpm_.num_dofs());
    for (std::size_t c = 0; c < work.contacts.size(); ++c) {
      const Vector3 impulse_on_particle = work.contacts[c].frame * work.impulses[c];  // R_WC γ
      const ContactCoupling& coupling = work.couplings[c];
      for (int k = 0; k < 27; ++k) {
        if (coupling.node[k] >= 0)
          contact_impulses.segment<3>(3 * coupling.node[k]) += coupling.weight[k] * impulse_on_particle;
      }
    }
    dynamics::RecordWallImpulses(
        implicit_mpm_.FinishGridBoundary(work.mpm_velocity, world.bodies,
                                         implicit_mpm_.is_quadratic() ? nullptr : &model_gradient, &contact_impulses),
        dt, report);
  }
  TransferToParticles(world, work, report);
  if (implicit_mpm_.has_constraints()) {  // particles that drifted into a grid wall go back to its surface
    std::vector<contact::WallImpulse> wall_impulses(world.bodies.size());
    contact::ProjectParticlesOutOfGridWalls(world.bodies, world.particles, wall_impulses);
    dynamics::RecordWallImpulses(wall_impulses, dt, report);
  }
  statistics_.sparse_factorizations = sparse_factorizations() - sparse_factorizations_before;

  // Report: the particle constraints of this step's problem, the rigid ones, and the deepest
  // particle penetration left at the end of the step.
  report.contacts = static_cast<int>(work.contacts.size());
  report.rigid_contacts = rigid_contacts_.size();
  report.grid_boundary_nodes = statistics_.grid_boundary_nodes;
  const auto start = Clock::now();
  report.max_penetration = contact::MaxPenetration(world.particles, world.bodies);
  report.timings.detection += SecondsSince(start);
  return report;
}

// 1–3. P2G of mass and APIC momentum (eq. 9), the implicit MPM energy of the step
// (eqs. 15–16, solved in stage 4 once the linear algebra is chosen), and the rigid free
// motion v*_rigid with A_rigid (§1.3.5).
void SapFormulation::SetUpFreeMotion(World& world, StepWork& work, Timings& timings) {
  const auto start = Clock::now();
  mpm::ParticleToGrid(world.particles, world.materials, /*stress_dt=*/0.0, grid_);
  implicit_mpm_.set_plasticity_timing(options_.plasticity);
  implicit_mpm_.Setup(grid_, world.particles, world.materials, world.gravity, work.dt);
  if (const auto timing = implicit_mpm_.plasticity_timing_used()) used_plasticity_.Observe(static_cast<int>(*timing));
  statistics_.grid_boundary_nodes = implicit_mpm_.ConstrainGridBoundary(grid_, world.bodies);
  statistics_.active_nodes = implicit_mpm_.num_active_nodes();
  rigid_dofs_.Setup(world, work.dt);
  statistics_.rigid_unknowns = rigid_dofs_.size();
  timings.free_motion += SecondsSince(start);
}

// 4. Contacts at xⁿ against geometry posed at qⁿ (§3), gap contacts within the margin; the
// rigid–rigid contacts as constraints over the rigid unknowns (dynamics/rigid_contact_step.h).
void SapFormulation::DetectContacts(const World& world, StepWork& work, Timings& timings) {
  const auto start = Clock::now();
  statistics_.contact_margin = ContactMargin(world, work.dt);
  work.contacts = contact::DetectParticleContacts(world.particles, world.bodies, statistics_.contact_margin);
  rigid_contacts_.Detect(world, rigid_dofs_, *contact_model_, dynamics::RigidContactMargin(world, rigid_dofs_, work.dt),
                         work.dt);
  timings.detection += SecondsSince(start);
}

// 5a. The grid stencil of each contact particle, the rigid Jacobians and bias; the linear
// algebra: rigid unknowns first, then either the participating nodes (Schur) or every active
// node (full).
void SapFormulation::CoupleContacts(const World& world, StepWork& work, Timings& timings) {
  const auto start = Clock::now();
  const double spacing = world.grid_spacing;
  const int contact_count = static_cast<int>(work.contacts.size());
  work.couplings.resize(contact_count);
  for (int c = 0; c < contact_count; ++c) {
    const contact::ParticleContact& point = work.contacts[c];
    ContactCoupling& coupling = work.couplings[c];
    const mpm::QuadraticStencil stencil =
        mpm::ComputeQuadraticStencil(world.particles.position[point.particle], spacing);
    int k = 0;
    for (int cz = 0; cz < 3; ++cz) {
      for (int cy = 0; cy < 3; ++cy) {
        for (int cx = 0; cx < 3; ++cx, ++k) {
          const double weight = stencil.Weight(cx, cy, cz);
          const int grid_node = grid_.FindNode(stencil.base_node + mpm::NodeCoordinate(cx, cy, cz));
          const int active = grid_node >= 0 ? implicit_mpm_.ActiveIndexOfGridNode(grid_node) : -1;
          coupling.node[k] = (weight > 0.0) ? active : -1;
          coupling.weight[k] = weight;
          if (coupling.node[k] >= 0) work.participating.push_back(coupling.node[k]);
        }
      }
    }
    if (rigid_dofs_.HasDofs(point.body)) {
      coupling.rigid_jacobian =
          rigid_dofs_.PointJacobian(world, point.body, point.position, &coupling.rigid_first_column);
    }
    coupling.bias_world = rigid_dofs_.PointBiasVelocity(world, point.body, point.position, work.dt);
  }
  std::sort(work.participating.begin(), work.participating.end());
  work.participating.erase(std::unique(work.participating.begin(), work.participating.end()), work.participating.end());
  statistics_.participating_nodes = static_cast<int>(work.participating.size());

  work.reduced_size = rigid_dofs_.size() + 3 * static_cast<int>(work.participating.size());
  work.use_schur = options_.linear_solver == LinearSolver::kSchur ||
                   (options_.linear_solver == LinearSolver::kAuto && work.reduced_size <= options_.max_dense_unknowns);
  statistics_.used_schur = work.use_schur && contact_count > 0;
  timings.assembly += SecondsSince(start);
}

// 5b. MPM free motion v*_MPM and A_MPM. With a quadratic energy on the Schur path one sparse
// factorization, of A_NN, serves both the free motion (by block elimination,
// A δ = −∇E(vⁿ)) and the Schur complement; otherwise Newton on E with its own
// factorization of A, and the Schur complement factors A_NN afterwards.
void SapFormulation::SolveMpmFreeMotion(const World& world, StepWork& work, Timings& timings) {
  const auto start = Clock::now();
  // A free motion or a Hessian gone bad is the run diverging (a recorded status), not an
  // internal error.
  const auto check_free_motion = [&] {
    if (!AllFinite(work.mpm_free_velocity)) {
      throw SimulationDiverged("sap: non-finite MPM free-motion velocity at t = " + std::to_string(world.time) + " s");
    }
  };
  const auto compute_schur_complement = [&] {
    if (!work.schur.Compute(work.mpm_matrix, work.participating, schur_cholesky_)) {
      throw SimulationDiverged("sap: the MPM Hessian is not positive definite at t = " + std::to_string(world.time) +
                               " s (a particle state has gone bad)");
    }
  };
  if (statistics_.used_schur && implicit_mpm_.is_quadratic()) {
    const Eigen::VectorXd& initial = implicit_mpm_.start_velocity();
    work.mpm_matrix = implicit_mpm_.Hessian(initial);
    const Eigen::VectorXd gradient = implicit_mpm_.Gradient(initial);
    compute_schur_complement();
    const Eigen::VectorXd change = -work.schur.Solve(gradient);
    work.mpm_free_velocity = initial + change;
    check_free_motion();
    // One exact Newton step on the quadratic energy; its residual is that of the linear
    // solve, ‖A δ + ∇E‖ against ‖∇E‖ (recorded, not tested). E itself is not evaluated on
    // this path, so the summary's costs are 0.
    const double gradient_norm = gradient.norm();
    const Eigen::VectorXd solve_error = work.mpm_matrix * change + gradient;
    const double solve_residual = solve_error.norm();
    solvers::SolverSummary& summary = statistics_.free_motion;
    summary = solvers::SolverSummary{};
    summary.iterations = 1;
    summary.residual = solvers::ResidualRatio(solve_residual, gradient_norm);
    Vector3 unbalanced = Vector3::Zero();  // the solve error's rows summed per axis: exact, not a bound
    for (int node = 0; node < solve_error.size() / 3; ++node) unbalanced += solve_error.segment<3>(3 * node);
    summary.momentum_residual_bound = unbalanced.norm();
    summary.history.push_back(solvers::SolverIterationRecord{0, 0.0, gradient_norm, gradient_norm, 1.0, 0, 0});
    summary.history.push_back(solvers::SolverIterationRecord{1, 0.0, solve_residual, gradient_norm, 0.0, 0, 0});
    summary.Stop(solvers::Termination::kConverged,
                 "one Newton step on the quadratic energy by block elimination (" +
                     solvers::Compare("|A d + grad E|", solve_residual, "vs |grad E|", gradient_norm) + ")");
    summary.seconds.total = summary.seconds.linear_solve = SecondsSince(start);
  } else {
    dynamics::FreeMotionDirections directions;
    statistics_.free_motion = implicit_mpm_.SolveFreeMotion(options_.free_motion, free_motion_cholesky_,
                                                            work.mpm_free_velocity, work.mpm_matrix, &directions);
    used_free_motion_tangent_.Observe(0, directions.exact);
    used_free_motion_tangent_.Observe(1, directions.projected);
    check_free_motion();
    // auto with a nonlinear energy: the free motion has just factored the whole Hessian, so
    // the cheaper linear algebra is known from the scene itself. The Schur path factors a
    // dense matrix of the reduced size n every SAP iteration, n³/3 flops; the full path a
    // sparse one with the Hessian's pattern and its own contact blocks, about the free
    // motion's factorization (CHOLMOD's count for it). The fixed max_dense_unknowns serves
    // only where no such factorization exists (a quadratic energy, solved on the Schur path
    // by the Schur factorization itself).
    if (options_.linear_solver == LinearSolver::kAuto && !work.contacts.empty() &&
        free_motion_cholesky_.numeric_factorizations() > 0) {
      const double dense_flops = std::pow(static_cast<double>(work.reduced_size), 3) / 3.0;
      work.use_schur = dense_flops <= free_motion_cholesky_.factorization_flops();
      statistics_.used_schur = work.use_schur;
    }
    if (statistics_.used_schur) compute_schur_complement();
  }
  statistics_.factorization_seconds += SecondsSince(start);
  timings.free_motion += SecondsSince(start);
}

// 5c. The constraints of problem (7): v_c = R_CW (Σ_i w_ip v_i − J_B v_rigid − b_B) per
// particle contact (MPM blocks w_ip R_CW, rigid −R_CW J_B), then the rigid–rigid ones.
void SapFormulation::AssembleProblem(StepWork& work, Timings& timings) {
  const auto start = Clock::now();
  const int rigid_size = rigid_dofs_.size();
  std::vector<int> problem_index_of_node(implicit_mpm_.num_active_nodes(), -1);
  if (work.use_schur) {
    for (std::size_t k = 0; k < work.participating.size(); ++k) {
      problem_index_of_node[work.participating[k]] = static_cast<int>(k);
    }
  } else {
    for (int node = 0; node < implicit_mpm_.num_active_nodes(); ++node) problem_index_of_node[node] = node;
  }
  SapProblem& problem = work.problem;
  problem.model = contact_model_.get();
  const int contact_count = static_cast<int>(work.contacts.size());
  problem.constraints.resize(contact_count);
  for (int c = 0; c < contact_count; ++c) {
    const ContactCoupling& coupling = work.couplings[c];
    const Matrix3 world_to_contact = work.contacts[c].frame.transpose();  // R_CW
    SapConstraint& constraint = problem.constraints[c];
    if (coupling.rigid_jacobian.cols() > 0) {
      constraint.jacobian.push_back({coupling.rigid_first_column, -world_to_contact * coupling.rigid_jacobian});
    }
    for (int k = 0; k < 27; ++k) {
      if (coupling.node[k] < 0) continue;
      // Velocity components a grid wall fixes drop out (free_components; all ones without walls).
      constraint.jacobian.push_back(
          {rigid_size + 3 * problem_index_of_node[coupling.node[k]],
           coupling.weight[k] * world_to_contact * implicit_mpm_.free_components(coupling.node[k]).asDiagonal()});
    }
    constraint.bias = -world_to_contact * coupling.bias_world;
  }
  const std::vector<SapConstraint>& rigid_constraints = rigid_contacts_.constraints();
  problem.constraints.insert(problem.constraints.end(), rigid_constraints.begin(), rigid_constraints.end());
  timings.assembly += SecondsSince(start);
}

// Where SAP's Newton starts (SapOptions::warm_start): v*, vⁿ or the one of lower cost.
Eigen::VectorXd SapFormulation::InitialVelocity(const SapProblem& problem, const SapLinearSystem& system,
                                                const Eigen::VectorXd& current_velocity) const {
  switch (options_.warm_start) {
    case WarmStart::kFreeMotion:
      return problem.free_motion_velocity;
    case WarmStart::kCurrentVelocity:
      return current_velocity;
    case WarmStart::kLowerCost:
      break;
  }
  return solvers::SapCost(problem, system, current_velocity) <
                 solvers::SapCost(problem, system, problem.free_motion_velocity)
             ? current_velocity
             : problem.free_motion_velocity;
}

// 5d. SAP's Newton method with the exact line search (§1.3.3) from the start that
// SapOptions::warm_start picks: on the dense reduced problem (Schur path), on the full
// sparse one, or, when only rigid bodies touch, on the rigid unknowns alone (the MPM
// velocities keep their free motion).
void SapFormulation::SolveContactProblem(const World& world, StepWork& work, StepReport& report) {
  const double dt = work.dt;
  const int rigid_size = rigid_dofs_.size();
  const int contact_count = static_cast<int>(work.contacts.size());
  SapProblem& problem = work.problem;
  work.rigid_velocity = rigid_dofs_.free_motion_velocity();
  work.mpm_velocity = work.mpm_free_velocity;
  work.impulses.assign(problem.constraints.size(), Vector3::Zero());
  if (problem.constraints.empty()) return;
  auto start = Clock::now();
  if (contact_count == 0) {
    const dynamics::RigidContactStepResult rigid = dynamics::SolveRigidContactStep(
        rigid_dofs_, rigid_contacts_, Eigen::VectorXd::Zero(rigid_size), *contact_model_, options_.solver);
    statistics_.solver = rigid.solver;
    report.timings.solve += SecondsSince(start);
  } else if (work.use_schur) {
    Eigen::MatrixXd reduced_matrix = Eigen::MatrixXd::Zero(work.reduced_size, work.reduced_size);
    reduced_matrix.topLeftCorner(rigid_size, rigid_size) = rigid_dofs_.dynamics_matrix();
    reduced_matrix.bottomRightCorner(work.reduced_size - rigid_size, work.reduced_size - rigid_size) =
        work.schur.matrix();
    problem.free_motion_velocity.resize(work.reduced_size);
    problem.free_motion_velocity << rigid_dofs_.free_motion_velocity(), work.schur.Restrict(work.mpm_free_velocity);
    const DelassusEstimate delassus =
        options_.delassus_estimate == DelassusEstimate::kAuto ? DelassusEstimate::kExact : options_.delassus_estimate;
    used_linear_solver_.Observe(static_cast<int>(LinearSolver::kSchur));
    used_delassus_.Observe(static_cast<int>(delassus));
    PrepareContacts(delassus, *contact_model_, rigid_dofs_, implicit_mpm_, work.contacts, work.couplings,
                    work.mpm_matrix, &reduced_matrix, dt, problem);
    DenseSapLinearSystem system(std::move(reduced_matrix));
    Eigen::VectorXd current_velocity(work.reduced_size);
    current_velocity << rigid_dofs_.current_velocity(), work.schur.Restrict(implicit_mpm_.start_velocity());
    const Eigen::VectorXd initial_velocity = InitialVelocity(problem, system, current_velocity);
    report.timings.assembly += SecondsSince(start);
    start = Clock::now();
    statistics_.solver = SolveSap(problem, system, initial_velocity, SolverOptions(LinearSolver::kSchur));
    // S once (SchurComplement::Compute), then H at every Newton iteration that factors it.
    statistics_.dense_factorizations = 1 + statistics_.solver.factorizations;
    work.mpm_velocity =
        work.schur.Recover(work.mpm_free_velocity, statistics_.solver.velocity.tail(work.reduced_size - rigid_size));
    report.timings.solve += SecondsSince(start);
  } else {
    problem.free_motion_velocity.resize(rigid_size + work.mpm_free_velocity.size());
    problem.free_motion_velocity << rigid_dofs_.free_motion_velocity(), work.mpm_free_velocity;
    // "exact" needs the dense reduced matrix; when "auto" chose this path it falls back.
    const bool needs_fallback =
        options_.delassus_estimate == DelassusEstimate::kAuto || options_.delassus_estimate == DelassusEstimate::kExact;
    const DelassusEstimate delassus =
        needs_fallback ? DelassusEstimate::kBoundedBlockDiagonal : options_.delassus_estimate;
    used_linear_solver_.Observe(static_cast<int>(LinearSolver::kFull));
    used_delassus_.Observe(static_cast<int>(delassus));
    PrepareContacts(delassus, *contact_model_, rigid_dofs_, implicit_mpm_, work.contacts, work.couplings,
                    work.mpm_matrix, nullptr, dt, problem);
    SparseSapLinearSystem system(rigid_dofs_.dynamics_matrix(), work.mpm_matrix, contact_cholesky_);
    Eigen::VectorXd current_velocity(problem.free_motion_velocity.size());
    current_velocity << rigid_dofs_.current_velocity(), implicit_mpm_.start_velocity();
    const Eigen::VectorXd initial_velocity = InitialVelocity(problem, system, current_velocity);
    statistics_.solver = SolveSap(problem, system, initial_velocity, SolverOptions(LinearSolver::kFull));
    work.mpm_velocity = statistics_.solver.velocity.tail(work.mpm_free_velocity.size());
    report.timings.solve += SecondsSince(start);
  }
  const solvers::SolverSummary& summary = statistics_.solver.summary;
  statistics_.factorization_seconds += summary.seconds.linear_solve;
  statistics_.line_search_seconds = summary.seconds.line_search;
  statistics_.problem_unknowns = static_cast<int>(statistics_.solver.velocity.size());
  if (!AllFinite(statistics_.solver.velocity) || summary.termination == solvers::Termination::kNumericalFailure) {
    throw SimulationDiverged("sap: contact solve failed (" + summary.message +
                             ") at t = " + std::to_string(world.time) + " s");
  }
  work.rigid_velocity = statistics_.solver.velocity.head(rigid_size);
  work.impulses = statistics_.solver.impulses;
  RecordSolve(report, SolveKind::kContact, 0, "sap", summary);
}

// 6a. Rigid bodies: v⁺ = v* + A⁻¹ Jᵀγ, then positions; the contact loads per body.
void SapFormulation::AdvanceRigidBodies(World& world, StepWork& work, StepReport& report) {
  const auto start = Clock::now();
  const double dt = work.dt;
  const int contact_count = static_cast<int>(work.contacts.size());
  report.contact_wrench = ZeroWrenches(world);
  Eigen::VectorXd rigid_impulse = Eigen::VectorXd::Zero(rigid_dofs_.size());
  for (int c = 0; c < contact_count; ++c) {
    const contact::ParticleContact& point = work.contacts[c];
    const ContactCoupling& coupling = work.couplings[c];
    const Vector3 impulse_on_body = -(point.frame * work.impulses[c]);  // −R_WC γ at x_p
    if (coupling.rigid_jacobian.cols() > 0) {
      rigid_impulse.segment(coupling.rigid_first_column, coupling.rigid_jacobian.cols()) +=
          coupling.rigid_jacobian.transpose() * impulse_on_body;
    }
    // One record per constraint (spec-penalty-hybrid §4.4 diagnostics); gap contacts within
    // the margin carry γ = 0 and are reported with zero force.
    dynamics::RecordParticleContactImpulse(world, point, -impulse_on_body, dt, report);
  }
  const std::vector<Vector3> rigid_impulses(work.impulses.begin() + contact_count, work.impulses.end());
  rigid_impulse += rigid_contacts_.GeneralizedImpulse(rigid_dofs_.size(), rigid_impulses);
  rigid_contacts_.Record(world, rigid_impulses, dt, report);
  rigid_dofs_.Advance(world, dt, rigid_impulse);
  report.timings.rigid += SecondsSince(start);
}

// 6b. G2P with the solved grid velocities (eq. 17), then plasticity and R0 (Alg. 1).
void SapFormulation::TransferToParticles(World& world, StepWork& work, StepReport& report) {
  Timings& timings = report.timings;
  const auto start = Clock::now();
  std::fill(grid_.velocity.begin(), grid_.velocity.end(), Vector3::Zero());
  const std::vector<int>& active_nodes = implicit_mpm_.active_nodes();
  for (int node = 0; node < implicit_mpm_.num_active_nodes(); ++node) {
    grid_.velocity[active_nodes[node]] = work.mpm_velocity.segment<3>(3 * node);
  }
  mpm::GridToParticle(grid_, work.dt, world.particles);
  dynamics::RecordClothPinForces(world, 1.0, report);  // the solved state's, before the return mapping
  mpm::UpdateConstitutiveState(world.materials, world.particles);
  timings.g2p += SecondsSince(start);
}

namespace {
std::unique_ptr<Formulation> MakeSap(const ParameterSet& parameters) {
  return std::make_unique<SapFormulation>(SapOptions::FromParameters(parameters));
}
}  // namespace

FormulationInfo SapInfo() {
  return FormulationInfo{"sap",
                         "implicit MPM and rigid bodies in one convex contact problem solved by SAP ([zong2024convex])",
                         SapOptions::Specs(), &MakeSap};
}

}  // namespace contactlab::sap
