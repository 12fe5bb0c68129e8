#include "formulations/quasi_newton/quasi_newton_solver.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "formulations/phase_clock.h"
#include "formulations/quasi_newton/cuda/device_math.h"
#include "formulations/solvers/fixed_chunk_sum.h"

namespace contactlab::quasi_newton {
namespace {

constexpr int kStencilSize = 27;

}  // namespace

void CheckSubstepProblem(const SubstepContactProblem& problem) {
  if (problem.model == nullptr) throw std::invalid_argument("SubstepContactProblem: no contact model");
  const int node_count = static_cast<int>(problem.node_mass.size());
  if (static_cast<int>(problem.free_velocity.size()) != node_count) {
    throw std::invalid_argument("SubstepContactProblem: " + std::to_string(problem.free_velocity.size()) +
                                " free velocities for " + std::to_string(node_count) + " nodes");
  }
  if (!problem.initial_velocity.empty() && static_cast<int>(problem.initial_velocity.size()) != node_count) {
    throw std::invalid_argument("SubstepContactProblem: " + std::to_string(problem.initial_velocity.size()) +
                                " initial velocities for " + std::to_string(node_count) + " nodes");
  }
  for (int i = 0; i < node_count; ++i) {
    if (!(problem.node_mass[i] > 0.0)) {
      throw std::invalid_argument("SubstepContactProblem: node " + std::to_string(i) + " has mass " +
                                  std::to_string(problem.node_mass[i]) + " (must be > 0)");
    }
  }
  for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
    for (int node : problem.contacts[c].node) {
      if (node < -1 || node >= node_count) {
        throw std::invalid_argument("SubstepContactProblem: contact " + std::to_string(c) + " refers to node " +
                                    std::to_string(node) + " of " + std::to_string(node_count));
      }
    }
  }
}

namespace {

// For every node, the contacts whose stencil contains it and the node's weight in each,
// ordered by contact then stencil slot: K3's scatter becomes a race-free, ordered gather per
// node. The weights are copied next to the contact indices so that the gather reads two
// contiguous arrays instead of one stencil slot of each (large) GridContact.
struct TransposedStencil {
  std::vector<int> begin;      // CSR offsets, size nodes + 1
  std::vector<int> contact;    // contact index
  std::vector<double> weight;  // w_ip of the node in that contact's stencil

  explicit TransposedStencil(const SubstepContactProblem& problem) {
    const int node_count = static_cast<int>(problem.node_mass.size());
    begin.assign(node_count + 1, 0);
    for (const GridContact& grid_contact : problem.contacts) {
      for (int node : grid_contact.node) {
        if (node >= 0) ++begin[node + 1];
      }
    }
    for (int i = 0; i < node_count; ++i) begin[i + 1] += begin[i];
    contact.resize(begin[node_count]);
    weight.resize(begin[node_count]);
    std::vector<int> fill(begin.begin(), begin.end() - 1);
    for (std::size_t c = 0; c < problem.contacts.size(); ++c) {
      for (int slot = 0; slot < kStencilSize; ++slot) {
        const int node = problem.contacts[c].node[slot];
        if (node < 0) continue;
        contact[fill[node]] = static_cast<int>(c);
        weight[fill[node]++] = problem.contacts[c].weight[slot];
      }
    }
  }
};

// K1 / K6: R_CW Σ_i w_ip u_i, the G2P of a node field to the contact frame (no bias).
Vector3 GatherToContact(const GridContact& contact, const std::vector<Vector3>& node_field) {
  Vector3 sum = Vector3::Zero();
  for (int slot = 0; slot < kStencilSize; ++slot) {
    if (contact.node[slot] >= 0) sum += contact.weight[slot] * node_field[contact.node[slot]];
  }
  return contact.world_to_contact * sum;
}

// Per-iteration state of the contacts (K1–K2) and the nodes (K3).
struct Workspace {
  std::vector<Vector3> contact_velocity;  // v_c,p
  std::vector<contact::ContactEvaluation> evaluation;
  // The evaluation turned to world axes once per contact, for the 27 nodes that gather it:
  // R_WC γ_p and R_WC G_p R_CW (the latter only when the Hessian was asked for).
  std::vector<Vector3> world_impulse;
  std::vector<Matrix3> world_hessian;
  std::vector<Vector3> direction_at_contact;  // Δv_c,p
  std::vector<Vector3> residual;              // r_i
  std::vector<Vector3> impulse_on_node;       // j_i = Σ w_ip R_WC γ_p
  std::vector<Matrix3> hessian_block;         // H_i
  std::vector<Vector3> direction;             // Δv_i
};

// K1–K2: contact velocities, then cost, impulse and (optionally) Hessian of every contact.
void EvaluateContacts(const SubstepContactProblem& problem, const std::vector<Vector3>& velocity, bool with_hessian,
                      Workspace& work) {
  const int contact_count = static_cast<int>(problem.contacts.size());
#pragma omp parallel for schedule(static) if (contact_count > 64)
  for (int c = 0; c < contact_count; ++c) {
    const GridContact& contact = problem.contacts[c];
    work.contact_velocity[c] = GatherToContact(contact, velocity) + contact.bias;
    work.evaluation[c] = problem.model->Evaluate(contact.prepared, work.contact_velocity[c], with_hessian);
    const Matrix3& world_to_contact = contact.world_to_contact;
    work.world_impulse[c] = world_to_contact.transpose() * work.evaluation[c].impulse;
    if (with_hessian)
      work.world_hessian[c] = world_to_contact.transpose() * work.evaluation[c].hessian * world_to_contact;
  }
}

// K3: j_i and H_i as ordered gathers through the transposed stencil, then r_i.
void AssembleNodes(const SubstepContactProblem& problem, const TransposedStencil& transposed,
                   const std::vector<Vector3>& velocity, bool with_hessian, Workspace& work) {
  const int node_count = static_cast<int>(problem.node_mass.size());
#pragma omp parallel for schedule(static) if (node_count > 256)
  for (int i = 0; i < node_count; ++i) {
    Vector3 impulse = Vector3::Zero();
    Matrix3 hessian = problem.node_mass[i] * Matrix3::Identity();
    for (int k = transposed.begin[i]; k < transposed.begin[i + 1]; ++k) {
      const int c = transposed.contact[k];
      const double weight = transposed.weight[k];
      impulse += weight * work.world_impulse[c];
      if (with_hessian) hessian += (weight * weight) * work.world_hessian[c];
    }
    work.impulse_on_node[i] = impulse;
    if (with_hessian) work.hessian_block[i] = hessian;
    // Eq. 9: r_i = m_i (v_i − v*_i) − j_i.
    work.residual[i] = problem.node_mass[i] * (velocity[i] - problem.free_velocity[i]) - impulse;
  }
}

double MassTerm(const SubstepContactProblem& problem, const std::vector<Vector3>& velocity) {
  return solvers::FixedChunkSum(static_cast<int>(velocity.size()), 0.0, [&](int i) {
    return 0.5 * problem.node_mass[i] * (velocity[i] - problem.free_velocity[i]).squaredNorm();
  });
}

double ContactCostSum(const Workspace& work) {
  return solvers::FixedChunkSum(static_cast<int>(work.evaluation.size()), 0.0,
                                [&](int c) { return work.evaluation[c].cost; });
}

}  // namespace

std::string QuasiNewtonOptions::Validate() const {
  using solvers::CheckNonNegative;
  using solvers::CheckPositive;
  for (const std::string& problem : {CheckNonNegative("relative_tolerance", relative_tolerance),
                                     CheckNonNegative("absolute_tolerance", absolute_tolerance),
                                     CheckPositive("max_iterations", max_iterations), line_search.Validate()}) {
    if (!problem.empty()) return problem;
  }
  if (relative_tolerance == 0.0 && absolute_tolerance == 0.0) {
    return "relative_tolerance and absolute_tolerance are both 0: the solve could never stop";
  }
  return "";
}

double QuasiNewtonCost(const SubstepContactProblem& problem, const std::vector<Vector3>& velocity) {
  CheckSubstepProblem(problem);
  double cost = MassTerm(problem, velocity);
  for (const GridContact& contact : problem.contacts) {
    cost += problem.model->Cost(contact.prepared, GatherToContact(contact, velocity) + contact.bias);
  }
  return cost;
}

std::vector<Matrix3> QuasiNewtonHessianBlocks(const SubstepContactProblem& problem,
                                              const std::vector<Vector3>& velocity) {
  CheckSubstepProblem(problem);
  const int contact_count = static_cast<int>(problem.contacts.size());
  const int node_count = static_cast<int>(problem.node_mass.size());
  Workspace work;
  work.contact_velocity.resize(contact_count);
  work.evaluation.resize(contact_count);
  work.world_impulse.resize(contact_count);
  work.world_hessian.resize(contact_count);
  work.residual.resize(node_count);
  work.impulse_on_node.resize(node_count);
  work.hessian_block.resize(node_count);
  EvaluateContacts(problem, velocity, /*with_hessian=*/true, work);
  AssembleNodes(problem, TransposedStencil(problem), velocity, /*with_hessian=*/true, work);
  return work.hessian_block;
}

void ShiftToMovingFrame(const Vector3& frame_velocity, SubstepContactProblem& problem) {
  for (Vector3& velocity : problem.free_velocity) velocity -= frame_velocity;
  for (Vector3& velocity : problem.initial_velocity) velocity -= frame_velocity;
  for (GridContact& contact : problem.contacts) contact.bias += contact.world_to_contact * frame_velocity;
}

QuasiNewtonResults SolveQuasiNewton(const SubstepContactProblem& problem, const QuasiNewtonOptions& options) {
  if (const std::string reason = options.Validate(); !reason.empty()) {
    throw std::invalid_argument("QuasiNewtonOptions: " + reason);
  }
  CheckSubstepProblem(problem);
  const int contact_count = static_cast<int>(problem.contacts.size());
  const int node_count = static_cast<int>(problem.node_mass.size());
  double mass_sum = 0.0;  // Σ m_i: the weights M^(-1/2) of the stopping rule, inverted and squared, per axis
  for (const double mass : problem.node_mass) mass_sum += mass;

  const Clock::time_point solve_start = Clock::now();
  QuasiNewtonResults results;
  solvers::SolverSummary& summary = results.summary;
  // Step 1 (spec Y2): start from v*, or from the caller's guess; nodes outside every contact
  // stencil stay at v*, their optimum.
  results.velocity = problem.initial_velocity.empty() ? problem.free_velocity : problem.initial_velocity;
  std::vector<Vector3>& velocity = results.velocity;
  if (contact_count == 0) {
    results.velocity = problem.free_velocity;
    summary.Stop(solvers::Termination::kNothingToSolve, "no contacts: v = v*");
    return results;
  }

  const TransposedStencil transposed(problem);
  Workspace work;
  work.contact_velocity.resize(contact_count);
  work.evaluation.resize(contact_count);
  work.world_impulse.resize(contact_count);
  work.world_hessian.resize(contact_count);
  work.direction_at_contact.resize(contact_count);
  work.residual.resize(node_count);
  work.impulse_on_node.resize(node_count);
  work.hessian_block.resize(node_count);
  work.direction.resize(node_count);

  for (;;) {
    // K1–K3: contact velocities, impulses and Hessians, then node gradients and blocks.
    EvaluateContacts(problem, velocity, /*with_hessian=*/true, work);
    AssembleNodes(problem, transposed, velocity, /*with_hessian=*/true, work);

    // K4: the scaled stopping rule (spec Y1), D = M^-½ on gradient and impulse, M^½ on v.
    const Eigen::Vector3d norms =
        solvers::FixedChunkSum(node_count, Eigen::Vector3d(Eigen::Vector3d::Zero()), [&](int i) {
          const double mass = problem.node_mass[i];
          return Eigen::Vector3d(work.residual[i].squaredNorm() / mass, mass * velocity[i].squaredNorm(),
                                 work.impulse_on_node[i].squaredNorm() / mass);
        });
    const double gradient_norm = std::sqrt(norms[0]);
    const double scale = std::max(std::sqrt(norms[1] + problem.outside_momentum_squared), std::sqrt(norms[2]));
    const double threshold = options.absolute_tolerance + options.relative_tolerance * scale;
    const double mass_term = MassTerm(problem, velocity);
    const double cost = mass_term + ContactCostSum(work);
    summary.cost = cost;
    summary.residual = solvers::ResidualRatio(gradient_norm, threshold);
    summary.momentum_residual_bound = std::sqrt(3.0 * mass_sum) * gradient_norm;
    solvers::SolverIterationRecord statistics;
    statistics.iteration = summary.iterations;
    statistics.cost = cost;
    statistics.residual = gradient_norm;
    statistics.threshold = threshold;
    if (gradient_norm < threshold) {
      summary.Stop(solvers::Termination::kConverged, solvers::Compare("|M^-1/2 r|", gradient_norm, "<", threshold));
      if (options.record_history) summary.history.push_back(statistics);
      break;
    }
    if (summary.iterations >= options.max_iterations) {
      summary.Stop(solvers::Termination::kMaxIterations,
                   "no convergence in " + std::to_string(summary.iterations) + " iterations; " +
                       solvers::Compare("|M^-1/2 r|", gradient_norm, ">=", threshold));
      if (options.record_history) summary.history.push_back(statistics);
      break;
    }

    // K5: Δv_i = −H_i⁻¹ r_i, one 3 × 3 Cholesky factorization per node (eq. 10 blocks), the
    // closed-form one the device kernel uses.
#pragma omp parallel for schedule(static) if (node_count > 256)
    for (int i = 0; i < node_count; ++i) {
      const Matrix3& block = work.hessian_block[i];
      const gpu::Sym3 hessian{block(0, 0), block(0, 1), block(0, 2), block(1, 1), block(1, 2), block(2, 2)};
      const Vector3& residual = work.residual[i];
      const gpu::Vec3 step = gpu::CholeskySolve(hessian, {residual.x(), residual.y(), residual.z()});
      work.direction[i] = -Vector3(step.x, step.y, step.z);
    }
    // K6: the direction seen by each contact, Δv_c,p = R_CW Σ_i w_ip Δv_i.
#pragma omp parallel for schedule(static) if (contact_count > 64)
    for (int c = 0; c < contact_count; ++c) {
      work.direction_at_contact[c] = GatherToContact(problem.contacts[c], work.direction);
    }

    // K7: exact line search on ℓ_p(v + α Δv) = ½ a α² + b α + c + Σ_p ℓ_c(v_c,p + α Δv_c,p),
    // a = Δvᵀ M Δv, b = Δvᵀ M (v − v*): no grid traversal per evaluation (spec §6).
    const Eigen::Vector2d mass_coefficients =
        solvers::FixedChunkSum(node_count, Eigen::Vector2d(Eigen::Vector2d::Zero()), [&](int i) {
          const double mass = problem.node_mass[i];
          return Eigen::Vector2d(mass * work.direction[i].squaredNorm(),
                                 mass * work.direction[i].dot(velocity[i] - problem.free_velocity[i]));
        });
    const double a = mass_coefficients[0];
    const double b = mass_coefficients[1];
    auto line = [&](double step) {
      const Eigen::Vector3d contact_terms =
          solvers::FixedChunkSum(contact_count, Eigen::Vector3d(Eigen::Vector3d::Zero()), [&](int c) {
            const Vector3& direction = work.direction_at_contact[c];
            const contact::LineTerms terms = problem.model->EvaluateAlong(
                problem.contacts[c].prepared, work.contact_velocity[c] + step * direction, direction);
            return Eigen::Vector3d(terms.cost, terms.slope, terms.curvature);
          });
      return solvers::LineSample{mass_term + step * b + 0.5 * step * step * a + contact_terms[0],
                                 b + step * a + contact_terms[1], a + contact_terms[2]};
    };
    const Eigen::Vector2d initial_contact_terms =
        solvers::FixedChunkSum(contact_count, Eigen::Vector2d(Eigen::Vector2d::Zero()), [&](int c) {
          const Vector3& direction = work.direction_at_contact[c];
          return Eigen::Vector2d(-direction.dot(work.evaluation[c].impulse),
                                 direction.dot(work.evaluation[c].hessian * direction));
        });
    const solvers::LineSample initial{cost, b + initial_contact_terms[0], a + initial_contact_terms[1]};
    const solvers::LineSearchResult search = solvers::ExactLineSearch(line, initial, options.line_search);
    summary.line_search_evaluations += search.evaluations;
    statistics.step = search.step;
    statistics.line_search_evaluations = search.evaluations;
    if (options.record_history) summary.history.push_back(statistics);
    if (!search.success) {
      summary.Stop(solvers::Termination::kLineSearchFailed,
                   "the exact line search found no minimizer along the block-diagonal direction at iteration " +
                       std::to_string(summary.iterations));
      break;
    }

    // K8: v ← v + α Δv.
#pragma omp parallel for schedule(static) if (node_count > 256)
    for (int i = 0; i < node_count; ++i) velocity[i] += search.step * work.direction[i];
    ++summary.iterations;
  }

  // γ at the returned velocities (the last K2 evaluation); sign γ = −∂ℓ_c/∂v_c (spec Y4).
  results.impulses.resize(contact_count);
  for (int c = 0; c < contact_count; ++c) results.impulses[c] = work.evaluation[c].impulse;
  summary.seconds.total = SecondsSince(solve_start);
  return results;
}

}  // namespace contactlab::quasi_newton
