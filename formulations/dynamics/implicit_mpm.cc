// Eigen eigensolvers first, with the shared warning workaround.
#include "formulations/linear_algebra/eigenvalues.h"

#include "formulations/dynamics/implicit_mpm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "formulations/phase_clock.h"
#include "mpm/bspline.h"
#include "mpm/constitutive/linear_corotated.h"

namespace contactlab::dynamics {
namespace {

using mpm::Matrix9;

// Nodes lighter than this fraction of the heaviest node are no unknowns of the step (Setup).
constexpr double kActiveMassFraction = 1e-14;

// Neighbour slot of the offset (0, 0, 0): a node's own block in its row.
constexpr int kOwnSlot = 2 + 5 * 2 + 25 * 2;

// Armijo backtracking on E for nonlinear models (spec §2.3, §5 Z3): sufficient-decrease
// slope fraction, step halving, and the most halvings tried before giving up.
constexpr double kArmijoSlopeFraction = 1.0e-4;
constexpr int kMaxBacktracks = 40;

// slot[i][j]: the neighbour slot (dx + 2) + 5(dy + 2) + 25(dz + 2) of stencil node j seen
// from stencil node i of the same stencil, with (dx, dy, dz) = (a_j − a_i, b_j − b_i, c_j − c_i).
struct StencilSlotTable {
  int slot[27][27];
  constexpr StencilSlotTable() : slot{} {
    for (int i = 0; i < 27; ++i) {
      for (int j = 0; j < 27; ++j) {
        const int dx = j % 3 - i % 3, dy = (j / 3) % 3 - (i / 3) % 3, dz = j / 9 - i / 9;
        slot[i][j] = (dx + 2) + 5 * (dy + 2) + 25 * (dz + 2);
      }
    }
  }
};
constexpr StencilSlotTable kSlotTable;

// Padded length of a particle's stiffness column u (81 velocity DoFs of its stencil): a
// multiple of the widest register tile below, so that tile loads stay inside the column.
constexpr int kColumnStride = 88;
constexpr int kColumnSize = 81;

// Y = Σ_p u_p u_pᵀ for `count` columns u_p (stride kColumnStride), written column-major
// with leading dimension kColumnStride; every entry on or below the diagonal is set.
// Register tiles of (2·width) rows × 4 columns accumulate over the particles. Each entry is
// a sum in particle order of separately rounded products (no fused multiply-add), so every
// vector width gives the same bits.
template <int kWidth>
[[gnu::always_inline]] inline void ComputeOuterProductTiles(const double* __restrict columns, int count,
                                                            double* __restrict products) {
  typedef double Pack __attribute__((vector_size(8 * kWidth)));
  constexpr int kTileRows = 2 * kWidth;
  for (int first_column = 0; first_column < kColumnSize; first_column += 4) {
    for (int first_row = first_column - first_column % kTileRows; first_row < kColumnSize; first_row += kTileRows) {
      Pack low0 = {}, high0 = {}, low1 = {}, high1 = {}, low2 = {}, high2 = {}, low3 = {}, high3 = {};
      const double* column = columns;
      for (int p = 0; p < count; ++p, column += kColumnStride) {
        Pack low, high;
        __builtin_memcpy(&low, column + first_row, sizeof low);
        __builtin_memcpy(&high, column + first_row + kWidth, sizeof high);
        const double factor0 = column[first_column], factor1 = column[first_column + 1];
        const double factor2 = column[first_column + 2], factor3 = column[first_column + 3];
        low0 += low * factor0;
        high0 += high * factor0;
        low1 += low * factor1;
        high1 += high * factor1;
        low2 += low * factor2;
        high2 += high * factor2;
        low3 += low * factor3;
        high3 += high * factor3;
      }
      double* tile = products + first_column * kColumnStride + first_row;
      const Pack* results[4][2] = {{&low0, &high0}, {&low1, &high1}, {&low2, &high2}, {&low3, &high3}};
      for (int k = 0; k < 4; ++k, tile += kColumnStride) {
        __builtin_memcpy(tile, results[k][0], sizeof(Pack));
        __builtin_memcpy(tile + kWidth, results[k][1], sizeof(Pack));
      }
    }
  }
}

// Two builds of the kernel: 4-wide for CPUs with AVX, 2-wide (SSE2) otherwise.
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx"))) void ComputeOuterProductsAvx(const double* columns, int count, double* products) {
  ComputeOuterProductTiles<4>(columns, count, products);
}
#endif
void ComputeOuterProductsBaseline(const double* columns, int count, double* products) {
  ComputeOuterProductTiles<2>(columns, count, products);
}
void ComputeOuterProducts(const double* columns, int count, double* products) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const bool has_avx = __builtin_cpu_supports("avx");
  if (has_avx) {
    ComputeOuterProductsAvx(columns, count, products);
    return;
  }
#endif
  ComputeOuterProductsBaseline(columns, count, products);
}

void RequireVelocitySize(const Eigen::VectorXd& velocity, int dof_count, const char* caller) {
  if (velocity.size() != dof_count) {
    throw std::invalid_argument(std::string("ImplicitMpm::") + caller + ": velocity has " +
                                std::to_string(velocity.size()) + " entries, expected " + std::to_string(dof_count));
  }
}

// Scaled optimality of spec §5 Z2: ‖M^(-1/2) ∇E‖ and its threshold
// ε_r · max(‖M^(1/2) v‖, ‖M^(-1/2) Δt k‖), with Δt k = M(v − vⁿ − Δt g) − ∇E.
struct ScaledOptimality {
  double residual = 0.0;
  double weight_sum = 0.0;  // 3 Σ m_i: the rule's weights M^(-1/2), inverted and squared
  double threshold = 0.0;
  // residual / threshold, 0 when both vanish.
  double Ratio() const {
    if (residual == 0.0) return 0.0;
    return threshold > 0.0 ? residual / threshold : std::numeric_limits<double>::infinity();
  }
  bool Converged() const { return residual <= threshold; }
};

ScaledOptimality EvaluateOptimality(const Eigen::VectorXd& masses, const Eigen::VectorXd& velocity,
                                    const Eigen::VectorXd& initial_velocity, const Eigen::VectorXd& gradient,
                                    const Vector3& gravity, double dt, double relative_tolerance) {
  double residual_squared = 0.0, momentum_squared = 0.0, impulse_squared = 0.0;
  for (int node = 0; node < masses.size(); ++node) {
    const double mass = masses[node];
    const Vector3 node_gradient = gradient.segment<3>(3 * node);
    const Vector3 node_velocity = velocity.segment<3>(3 * node);
    const Vector3 elastic_impulse =
        mass * (node_velocity - initial_velocity.segment<3>(3 * node) - dt * gravity) - node_gradient;
    residual_squared += node_gradient.squaredNorm() / mass;
    momentum_squared += mass * node_velocity.squaredNorm();
    impulse_squared += elastic_impulse.squaredNorm() / mass;
  }
  ScaledOptimality optimality;
  optimality.residual = std::sqrt(residual_squared);
  optimality.weight_sum = 3.0 * masses.sum();
  optimality.threshold = relative_tolerance * std::sqrt(std::max(momentum_squared, impulse_squared));
  return optimality;
}

}  // namespace

const ChoiceTable<PlasticityTiming>& PlasticityTimingNames() {
  static const ChoiceTable<PlasticityTiming> names = {{"auto", PlasticityTiming::kAuto},
                                                      {"in_step", PlasticityTiming::kInStep},
                                                      {"after_step", PlasticityTiming::kAfterStep}};
  return names;
}

ParameterSpec PlasticityTimingSpec(const std::string& key) {
  return {key, std::string("auto"), "",
          "When a plastic material's return mapping acts in the implicit step (spec-penalty-hybrid A13). in_step: "
          "a model that has a step energy contributes it to the step's solve, so the step's stress stays on the "
          "yield surface (drucker_prager: Hencky elasticity with its shear capped at the cone's radius of the "
          "step's start; linear_corotated with a yield stress: its shear capped at the von Mises cylinder); the "
          "return mapping still follows the step. after_step: every return mapping after the solve, the step "
          "elastic. auto: in_step for drucker_prager (A13: sand), after_step for von Mises ([zong2024convex] lags it, "
          "eqs. 22-26).",
          OneOf(ChoiceNames(PlasticityTimingNames()))};
}

UsedChoiceTracker PlasticityTimingTracker(const std::string& key) {
  return UsedChoiceTracker(key, ChoiceNames(PlasticityTimingNames()), "steps",
                           "in_step in the steps where a material used its step energy, after_step otherwise");
}

const ChoiceTable<FreeMotionTangent>& FreeMotionTangentNames() {
  static const ChoiceTable<FreeMotionTangent> names = {{"auto", FreeMotionTangent::kAuto},
                                                       {"projected", FreeMotionTangent::kProjected}};
  return names;
}

ParameterSpec FreeMotionTangentSpec(const std::string& key) {
  return {key, std::string("auto"), "",
          "Tangent dP/dF of the free motion's Newton directions. auto: the exact tangent wherever the whole Hessian "
          "it gives is positive definite (quadratic convergence near the minimizer), the PSD-projected one (spec Z3) "
          "where not; projected: always projected. Same minimizer and stopping rule; the contact problem's A is the "
          "projected Hessian either way.",
          OneOf(ChoiceNames(FreeMotionTangentNames()))};
}

UsedChoiceTracker FreeMotionTangentTracker(const std::string& key) {
  return UsedChoiceTracker(key, {"exact", "projected"}, "Newton directions",
                           "auto: exact where M + dt^2 K_exact factors as positive definite with a downhill "
                           "direction, projected otherwise");
}

template <typename Visitor>
void ImplicitMpm::ForEachGroupColored(Visitor&& visit) const {
  // The grid's colouring: particle blocks of one colour write disjoint stencil nodes.
  for (int color = 0; color < mpm::SparseGrid::kColors; ++color) {
    const std::vector<int>& blocks = blocks_of_color_[color];
    const int block_count = static_cast<int>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < block_count; ++k) {
      const int block = blocks[k];
      for (int group = block_group_begin_[block]; group < block_group_begin_[block + 1]; ++group) {
        visit(groups_[group]);
      }
    }
  }
}

void ImplicitMpm::Setup(const mpm::SparseGrid& grid, const mpm::Particles& particles,
                        const std::vector<mpm::Material>& materials, const Vector3& gravity, double dt) {
  gravity_ = gravity;
  dt_ = dt;
  const double spacing = grid.spacing();
  const double inverse_inertia = mpm::ApicInverseInertiaScale(spacing);  // D⁻¹ = 4/h²

  // 1. Active nodes in grid node order and vⁿ_i = (m v)_i / m_i ([zong2024convex] eq. 9): the nodes
  //    with a mass above round-off of the heaviest node's. A node reached only by the vanishing
  //    edge of a stencil (a particle exactly half a cell off a node plane, as a cloth mesh on the
  //    grid's lattice puts them, has weight 0 up to round-off there, m_i ~ 1e-39 kg) carries no
  //    momentum of its own; as an unknown it would leave A singular to working precision.
  const int node_count = grid.num_nodes();
  double heaviest = 0.0;
  for (int node = 0; node < node_count; ++node) heaviest = std::max(heaviest, grid.mass[node]);
  const double lightest_active = kActiveMassFraction * heaviest;
  active_nodes_.clear();
  active_index_of_node_.assign(node_count, -1);
  for (int node = 0; node < node_count; ++node) {
    if (grid.mass[node] > lightest_active) {
      active_index_of_node_[node] = static_cast<int>(active_nodes_.size());
      active_nodes_.push_back(node);
    }
  }
  const int active_count = num_active_nodes();
  node_masses_.resize(active_count);
  initial_velocity_.resize(3 * active_count);
  for (int active = 0; active < active_count; ++active) {
    const int node = active_nodes_[active];
    node_masses_[active] = grid.mass[node];
    initial_velocity_.segment<3>(3 * active) = grid.momentum[node] / grid.mass[node];
  }
  start_velocity_ = initial_velocity_;
  start_scaled_nodes_ = 0;
  wall_nodes_.clear();
  wall_masks_.clear();
  constrained_mask_.clear();

  // 2. Materials. The linear corotated model (also the elastic part of its von Mises
  //    variant) has the closed-form tangent of spec §1.1.3 / §2.1.
  materials_.assign(materials.size(), MaterialData{});
  for (std::size_t m = 0; m < materials.size(); ++m) {
    materials_[m].model = materials[m].constitutive_model;
    const mpm::ConstitutiveModel* model = materials[m].constitutive_model.get();
    const bool offered = model != nullptr && model->has_in_step_plasticity();
    materials_[m].in_step_plasticity =
        offered && (plasticity_timing_ == PlasticityTiming::kInStep ||
                    (plasticity_timing_ == PlasticityTiming::kAuto && model->in_step_plasticity_by_default()));
    // The closed-form tangent is that of the elastic energy.
    materials_[m].linear_corotated =
        dynamic_cast<const mpm::LinearCorotatedModel*>(model) != nullptr && !materials_[m].in_step_plasticity;
    materials_[m].cloth = model != nullptr && model->name() == "cloth";
    materials_[m].shear_modulus = materials[m].lame.shear_modulus;
    materials_[m].first_lame_parameter = materials[m].lame.first_lame_parameter;
  }

  // 3. Cell groups. Inside each particle block of the grid, order the particles by base
  //    node (cell) and then material; every run shares one stencil and one material.
  const int block_count = grid.num_particle_blocks();
  const std::vector<int>& block_sorted = grid.sorted_particles();
  const int particle_count = static_cast<int>(block_sorted.size());
  const int material_count = std::max<int>(1, static_cast<int>(materials.size()));
  std::vector<int> group_key(particles.size());
  std::vector<int> group_sorted(block_sorted);
  std::vector<int> groups_in_block(block_count, 0);
  const auto cell_of = [&](int p) {
    const mpm::NodeCoordinate base = mpm::ComputeQuadraticStencil(particles.position[p], spacing).base_node;
    return (base.x() & 3) + 4 * (base.y() & 3) + 16 * (base.z() & 3);
  };
#pragma omp parallel for schedule(dynamic, 4)
  for (int block = 0; block < block_count; ++block) {
    const int begin = grid.particle_block_begin(block), end = grid.particle_block_begin(block + 1);
    for (int s = begin; s < end; ++s) {
      const int p = group_sorted[s];
      group_key[p] = cell_of(p) * material_count + particles.material[p];
    }
    std::stable_sort(group_sorted.begin() + begin, group_sorted.begin() + end,
                     [&](int a, int b) { return group_key[a] < group_key[b]; });
    for (int s = begin; s < end; ++s) {
      if (s == begin || group_key[group_sorted[s]] != group_key[group_sorted[s - 1]]) ++groups_in_block[block];
    }
  }
  block_group_begin_.assign(block_count + 1, 0);
  for (int block = 0; block < block_count; ++block) {
    block_group_begin_[block + 1] = block_group_begin_[block] + groups_in_block[block];
  }
  groups_.assign(block_group_begin_[block_count], CellGroup{});
  strain_weights_.resize(particle_count);
  deformation_gradients_.resize(particle_count);
  reference_rotations_.resize(particle_count);
  initial_volumes_.resize(particle_count);
  step_states_.assign(particle_count, 0.0);
  stiffness_columns_.assign(static_cast<std::size_t>(particle_count) * kColumnStride, 0.0);

  // 4. Per group its stencil DoFs; per particle F_pⁿ, R0, V⁰ and g_ip = F_pⁿᵀ a_ip with the
  //    MLS weight a_ip = w_ip D⁻¹ (x_i − x_p), the F update of the shared G2P (header).
#pragma omp parallel for schedule(dynamic, 4)
  for (int block = 0; block < block_count; ++block) {
    const int begin = grid.particle_block_begin(block), end = grid.particle_block_begin(block + 1);
    int group = block_group_begin_[block] - 1;
    for (int s = begin; s < end; ++s) {
      const int p = group_sorted[s];
      const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particles.position[p], spacing);
      if (s == begin || group_key[p] != group_key[group_sorted[s - 1]]) {
        if (group >= block_group_begin_[block]) groups_[group].end_particle = s;
        CellGroup& new_group = groups_[++group];
        std::array<int, 27> nodes;
        grid.StencilNodes(block, stencil.base_node, nodes);
        for (int i = 0; i < kStencilSize; ++i) new_group.dofs[i] = active_index_of_node_[nodes[i]];
        new_group.first_particle = s;
        new_group.material = particles.material[p];
      }
      const Matrix3& deformation = particles.deformation_gradient[p];
      for (int c = 0; c < 3; ++c) {
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) {
            const Vector3 velocity_gradient_weight =
                (stencil.Weight(a, b, c) * inverse_inertia) * stencil.NodeOffset(a, b, c, spacing);
            strain_weights_[s][a + 3 * b + 9 * c] = deformation.transpose() * velocity_gradient_weight;
          }
        }
      }
      deformation_gradients_[s] = deformation;
      reference_rotations_[s] = particles.reference_rotation[p];
      initial_volumes_[s] = particles.initial_volume[p];
      const MaterialData& material = materials_[particles.material[p]];
      if (material.in_step_plasticity) step_states_[s] = material.model->InStepState(deformation);
      // Linear corotated: the constant stiffness column u_p = √(Δt² V⁰) (R0 g_ip)_i.
      if (material.linear_corotated) {
        const Matrix3 scaled_rotation =
            std::sqrt(dt * dt * particles.initial_volume[p]) * particles.reference_rotation[p];
        double* column = &stiffness_columns_[static_cast<std::size_t>(s) * kColumnStride];
        for (int i = 0; i < kStencilSize; ++i) {
          Eigen::Map<Vector3>(column + 3 * i) = scaled_rotation * strain_weights_[s][i];
        }
      }
    }
    if (group >= block_group_begin_[block]) groups_[group].end_particle = end;
  }
  // 4b. The cloth's triangles (their particles' groups carry no energy of their own).
  cloth_.Setup(grid, active_index_of_node_, particles, materials, dt);
  quadratic_ = cloth_.empty() && std::all_of(groups_.begin(), groups_.end(), [&](const CellGroup& group) {
                 return materials_[group.material].linear_corotated;
               });
  has_plastic_material_ = std::any_of(materials.begin(), materials.end(),
                                      [](const mpm::Material& material) { return material.is_plastic(); });
  uses_in_step_plasticity_ = std::any_of(groups_.begin(), groups_.end(), [&](const CellGroup& group) {
    return materials_[group.material].in_step_plasticity;
  });
  for (int color = 0; color < mpm::SparseGrid::kColors; ++color) {
    blocks_of_color_[color] = grid.particle_blocks_of_color(color);
  }

  // 5. Hessian pattern: active node pairs that share a stencil (‖i − j‖_∞ ≤ 2, spec §1.1.3).
  //    First mark every touched neighbour slot with the neighbour's active index (rows of
  //    one colour are disjoint), then number each node's neighbours in increasing order.
  std::vector<int> neighbor_of_slot(static_cast<std::size_t>(active_count) * kNeighborSlots, -1);
  ForEachGroupColored([&](const CellGroup& group) {
    for (int i = 0; i < kStencilSize; ++i) {
      if (group.dofs[i] < 0) continue;
      int* row = &neighbor_of_slot[static_cast<std::size_t>(group.dofs[i]) * kNeighborSlots];
      for (int j = 0; j < kStencilSize; ++j) {
        if (group.dofs[j] >= 0) row[kSlotTable.slot[i][j]] = group.dofs[j];
      }
    }
  });
  neighbor_rank_.assign(neighbor_of_slot.size(), -1);
  neighbor_count_.assign(active_count, 0);
#pragma omp parallel for schedule(static)
  for (int active = 0; active < active_count; ++active) {
    std::array<std::pair<int, int>, kNeighborSlots> neighbors;  // (active index, slot)
    int count = 0;
    const int* row = &neighbor_of_slot[static_cast<std::size_t>(active) * kNeighborSlots];
    for (int slot = 0; slot < kNeighborSlots; ++slot) {
      if (row[slot] >= 0) neighbors[count++] = {row[slot], slot};
    }
    std::sort(neighbors.begin(), neighbors.begin() + count);
    for (int rank = 0; rank < count; ++rank) {
      neighbor_rank_[static_cast<std::size_t>(active) * kNeighborSlots + neighbors[rank].second] = rank;
    }
    neighbor_count_[active] = count;
  }

  // 6. Compressed column-major pattern, both triangles: column 3a + β holds rows 3b + α for
  //    the neighbours b of a in increasing order, so its row indices are sorted.
  column_value_begin_.assign(active_count + 1, 0);
  for (int active = 0; active < active_count; ++active) {
    column_value_begin_[active + 1] = column_value_begin_[active] + 9 * neighbor_count_[active];
  }
  const int dof_count = num_dofs();
  const int nonzero_count = column_value_begin_[active_count];
  hessian_pattern_ = SparseMatrix(dof_count, dof_count);
  hessian_pattern_.resizeNonZeros(nonzero_count);
  int* outer = hessian_pattern_.outerIndexPtr();
  int* inner = hessian_pattern_.innerIndexPtr();
  std::fill_n(hessian_pattern_.valuePtr(), nonzero_count, 0.0);
  outer[dof_count] = nonzero_count;
#pragma omp parallel for schedule(static)
  for (int active = 0; active < active_count; ++active) {
    const int stride = 3 * neighbor_count_[active];
    const int* row = &neighbor_of_slot[static_cast<std::size_t>(active) * kNeighborSlots];
    const int* ranks = &neighbor_rank_[static_cast<std::size_t>(active) * kNeighborSlots];
    for (int direction = 0; direction < 3; ++direction) {
      outer[3 * active + direction] = column_value_begin_[active] + direction * stride;
    }
    for (int slot = 0; slot < kNeighborSlots; ++slot) {
      if (ranks[slot] < 0) continue;
      for (int direction = 0; direction < 3; ++direction) {
        for (int component = 0; component < 3; ++component) {
          inner[column_value_begin_[active] + direction * stride + 3 * ranks[slot] + component] =
              3 * row[slot] + component;
        }
      }
    }
  }
}

std::optional<PlasticityTiming> ImplicitMpm::plasticity_timing_used() const {
  if (uses_in_step_plasticity_) return PlasticityTiming::kInStep;
  if (has_plastic_material_) return PlasticityTiming::kAfterStep;
  return std::nullopt;
}

double ImplicitMpm::ParticleEnergyDensity(const MaterialData& material, int particle,
                                          const Matrix3& deformation) const {
  return material.in_step_plasticity
             ? material.model->InStepEnergyDensity(deformation, reference_rotations_[particle], step_states_[particle])
             : material.model->EnergyDensity(deformation, reference_rotations_[particle]);
}

Matrix3 ImplicitMpm::ParticleStress(const MaterialData& material, int particle, const Matrix3& deformation) const {
  return material.in_step_plasticity ? material.model->InStepFirstPiolaStress(
                                           deformation, reference_rotations_[particle], step_states_[particle])
                                     : material.model->FirstPiolaStress(deformation, reference_rotations_[particle]);
}

Matrix9 ImplicitMpm::ParticleStressDerivative(const MaterialData& material, int particle,
                                              const Matrix3& deformation) const {
  return material.in_step_plasticity
             ? material.model->InStepFirstPiolaStressDerivative(deformation, reference_rotations_[particle],
                                                                step_states_[particle])
             : material.model->FirstPiolaStressDerivative(deformation, reference_rotations_[particle]);
}

Matrix3 ImplicitMpm::DeformationGradient(const CellGroup& group, int particle, const Eigen::VectorXd& velocity) const {
  // F_p(v) = (I + Δt Σ_i v_i a_ipᵀ) F_pⁿ = F_pⁿ + Δt Σ_i v_i g_ipᵀ  ([zong2024convex] eq. 14).
  Matrix3 velocity_sum = Matrix3::Zero();
  const std::array<Vector3, kStencilSize>& strain_weights = strain_weights_[particle];
  for (int i = 0; i < kStencilSize; ++i) {
    if (group.dofs[i] < 0) continue;
    velocity_sum.noalias() += velocity.segment<3>(3 * group.dofs[i]) * strain_weights[i].transpose();
  }
  return deformation_gradients_[particle] + dt_ * velocity_sum;
}

double ImplicitMpm::Energy(const Eigen::VectorXd& velocity) const {
  RequireVelocitySize(velocity, num_dofs(), "Energy");
  // Elastic part Σ_p V_p⁰ Ψ(F_p(v)), per particle in parallel, summed in a fixed order.
  std::vector<double> elastic_energy(deformation_gradients_.size(), 0.0);
  const int group_count = static_cast<int>(groups_.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (int g = 0; g < group_count; ++g) {
    const CellGroup& group = groups_[g];
    const MaterialData& material = materials_[group.material];
    if (material.cloth) continue;
    for (int s = group.first_particle; s < group.end_particle; ++s) {
      elastic_energy[s] =
          initial_volumes_[s] * ParticleEnergyDensity(material, s, DeformationGradient(group, s, velocity));
    }
  }
  // Inertia and gravity: ½ (v − vⁿ)ᵀ M (v − vⁿ) − Δt vᵀ M g  ([zong2024convex] eq. 16).
  double energy = 0.0;
  for (int active = 0; active < num_active_nodes(); ++active) {
    const Vector3 node_velocity = velocity.segment<3>(3 * active);
    energy += node_masses_[active] * (0.5 * (node_velocity - initial_velocity_.segment<3>(3 * active)).squaredNorm() -
                                      dt_ * node_velocity.dot(gravity_));
  }
  for (const double particle_energy : elastic_energy) energy += particle_energy;
  return energy + cloth_.Energy(velocity);
}

Eigen::VectorXd ImplicitMpm::StressForces(const Eigen::VectorXd& velocity) const {
  // Σ_p V_p⁰ P_p g_ip, scattered colour by colour (spec §1.1.3).
  Eigen::VectorXd forces = Eigen::VectorXd::Zero(num_dofs());
  ForEachGroupColored([&](const CellGroup& group) {
    const MaterialData& material = materials_[group.material];
    if (material.cloth) return;
    for (int s = group.first_particle; s < group.end_particle; ++s) {
      const Matrix3 stress = initial_volumes_[s] * ParticleStress(material, s, DeformationGradient(group, s, velocity));
      for (int i = 0; i < kStencilSize; ++i) {
        if (group.dofs[i] < 0) continue;
        forces.segment<3>(3 * group.dofs[i]) += stress * strain_weights_[s][i];
      }
    }
  });
  cloth_.AddStressForces(velocity, forces);
  return forces;
}

Eigen::VectorXd ImplicitMpm::ElasticForces(const Eigen::VectorXd& velocity) const {
  RequireVelocitySize(velocity, num_dofs(), "ElasticForces");
  // k_i = −Σ_p V_p⁰ P_p g_ip  (spec §1.1.3).
  return -StressForces(velocity);
}

int ImplicitMpm::ConstrainGridBoundary(const mpm::SparseGrid& grid, const std::vector<rigid::RigidBody>& bodies) {
  wall_nodes_.clear();
  wall_masks_.clear();
  constrained_mask_.clear();
  start_velocity_ = initial_velocity_;
  if (!contact::HasGridBoundary(bodies)) {
    PullStartBackFromInversion();
    return 0;
  }
  constrained_mask_.assign(num_active_nodes(), 0);
  for (contact::GridBoundaryNode wall : contact::FindGridBoundaryNodes(grid, bodies)) {
    const int active = active_index_of_node_[wall.node];
    if (active < 0) continue;
    // The separating walls' active set comes from the predictor vⁿ + Δt g.
    const Vector3 predictor = initial_velocity_.segment<3>(3 * active) + dt_ * gravity_;
    const std::uint8_t mask = contact::ImplicitConstraintMask(wall, predictor, bodies);
    if (mask == 0) continue;
    // A node in several walls (a container's edge) is held along each of them.
    constrained_mask_[active] |= mask;
    for (int axis = 0; axis < 3; ++axis) {
      if ((mask >> axis) & 1u) start_velocity_[3 * active + axis] = 0.0;
    }
    wall.node = active;  // kept by active index from here on
    wall_nodes_.push_back(wall);
    wall_masks_.push_back(mask);
  }
  if (wall_nodes_.empty()) constrained_mask_.clear();
  PullStartBackFromInversion();
  return static_cast<int>(wall_nodes_.size());
}

void ImplicitMpm::PullStartBackFromInversion() {
  // A wall that stops half of a fast particle's stencil can leave it inverted at vⁿ (a drop
  // of liquid landing on a sticky floor at 1.7 m/s with Δt 10 ms: J = 1 − 1.7 < 0), where an
  // energy with a barrier at J = 0 (the equation-of-state liquid) is +∞ and no Newton on E
  // or on ∇E can start; a start just short of J = 0 is finite but so steep that the Newton
  // crawls. At v = 0 on a particle's stencil F_p(v) = F_pⁿ, a valid state, so halving the
  // start on the stencils of such particles, round by round, finds a start that keeps every
  // energy finite and every J above ½ Jⁿ, and keeps vⁿ everywhere else; the fixed components
  // stay 0.
  start_scaled_nodes_ = 0;
  if (quadratic_ || num_dofs() == 0) return;
  constexpr double kStartVolumeFraction = 0.5;
  std::vector<std::uint8_t> scaled(num_active_nodes(), 0);
  constexpr int kRounds = 30;
  const int group_count = static_cast<int>(groups_.size());
  for (int round = 0; round < kRounds; ++round) {
    // Per cell group (in parallel): does a particle of it have no finite energy at the start,
    // or less than half of its volume at the step's start?
    std::vector<std::uint8_t> group_invalid(group_count, 0);
#pragma omp parallel for schedule(dynamic, 4)
    for (int g = 0; g < group_count; ++g) {
      const CellGroup& group = groups_[g];
      const MaterialData& material = materials_[group.material];
      if (material.cloth) continue;  // the cloth's energy is finite everywhere
      for (int s = group.first_particle; s < group.end_particle && !group_invalid[g]; ++s) {
        const Matrix3 start = DeformationGradient(group, s, start_velocity_);
        // Kept away from the barrier too (an interior point's fraction to the boundary): a
        // start that halves a particle's volume in one step is pulled back as well.
        if (!std::isfinite(ParticleEnergyDensity(material, s, start)) ||
            !(start.determinant() >= kStartVolumeFraction * deformation_gradients_[s].determinant())) {
          group_invalid[g] = 1;
        }
      }
    }
    std::vector<std::uint8_t> halve(num_active_nodes(), 0);
    bool any = false;
    for (int g = 0; g < group_count; ++g) {
      if (!group_invalid[g]) continue;
      any = true;
      for (const int active : groups_[g].dofs) {
        if (active >= 0) halve[active] = 1;
      }
    }
    if (!any) break;
    for (int active = 0; active < num_active_nodes(); ++active) {
      if (!halve[active]) continue;
      // In the last round (after 2⁻²⁹ of vⁿ) the stencil starts at rest.
      start_velocity_.segment<3>(3 * active) *= round + 1 < kRounds ? 0.5 : 0.0;
      scaled[active] = 1;
    }
  }
  for (const std::uint8_t flag : scaled) start_scaled_nodes_ += flag;
}

Vector3 ImplicitMpm::free_components(int active_node) const {
  Vector3 free = Vector3::Ones();
  if (constrained_mask_.empty()) return free;
  for (int axis = 0; axis < 3; ++axis) {
    if ((constrained_mask_[active_node] >> axis) & 1u) free[axis] = 0.0;
  }
  return free;
}

std::vector<contact::WallImpulse> ImplicitMpm::FinishGridBoundary(Eigen::VectorXd& velocity,
                                                                  const std::vector<rigid::RigidBody>& bodies,
                                                                  const Eigen::VectorXd* model_gradient,
                                                                  const Eigen::VectorXd* other_impulses) const {
  std::vector<contact::WallImpulse> impulses(bodies.size());
  if (wall_nodes_.empty()) return impulses;
  if (model_gradient != nullptr) RequireVelocitySize(*model_gradient, num_dofs(), "FinishGridBoundary");
  if (other_impulses != nullptr) RequireVelocitySize(*other_impulses, num_dofs(), "FinishGridBoundary");
  Eigen::VectorXd gradient = model_gradient != nullptr ? *model_gradient : UnconstrainedGradient(velocity);
  if (other_impulses != nullptr) gradient -= *other_impulses;
  // Each fixed component's reaction goes to the first wall record that fixes it.
  std::vector<std::uint8_t> claimed(num_active_nodes(), 0);
  for (std::size_t k = 0; k < wall_nodes_.size(); ++k) {
    const contact::GridBoundaryNode& wall = wall_nodes_[k];
    const int active = wall.node;
    const std::uint8_t own = wall_masks_[k] & static_cast<std::uint8_t>(~claimed[active]);
    claimed[active] |= own;
    // The reaction: ∇_i E = m_i (v_i − vⁿ_i − Δt g) + Δt f_i is the momentum the node needs
    // beyond its forces; the wall supplies it on the fixed components.
    Vector3 impulse_on_node = Vector3::Zero();
    for (int axis = 0; axis < 3; ++axis) {
      if ((own >> axis) & 1u) impulse_on_node[axis] = gradient[3 * active + axis];
    }
    const double mass = node_masses_[active];
    const Vector3 friction =
        contact::SeparatingWallFriction(wall, velocity.segment<3>(3 * active), mass, impulse_on_node.dot(wall.normal));
    velocity.segment<3>(3 * active) += friction;
    impulse_on_node += mass * friction;
    contact::WallImpulse& total = impulses[wall.body];
    total.linear -= impulse_on_node;
    total.angular += (wall.position - bodies[wall.body].pose.position).cross(-impulse_on_node);
  }
  return impulses;
}

Eigen::VectorXd ImplicitMpm::ModelGradient(const Eigen::VectorXd& about, const Eigen::VectorXd& velocity) const {
  RequireVelocitySize(velocity, num_dofs(), "ModelGradient");
  return UnconstrainedGradient(about) + UnconstrainedHessian(about, StressTangent::kProjected) * (velocity - about);
}

Eigen::VectorXd ImplicitMpm::Gradient(const Eigen::VectorXd& velocity) const {
  Eigen::VectorXd gradient = UnconstrainedGradient(velocity);
  if (constrained_mask_.empty()) return gradient;
  for (int dof = 0; dof < num_dofs(); ++dof) {
    if (IsConstrainedDof(dof)) gradient[dof] = 0.0;
  }
  return gradient;
}

Eigen::VectorXd ImplicitMpm::UnconstrainedGradient(const Eigen::VectorXd& velocity) const {
  RequireVelocitySize(velocity, num_dofs(), "Gradient");
  // ∇_i E = m_i (v_i − vⁿ_i − Δt g) + Δt Σ_p V_p⁰ P_p g_ip  (spec §1.1.3).
  Eigen::VectorXd gradient = dt_ * StressForces(velocity);
  for (int active = 0; active < num_active_nodes(); ++active) {
    gradient.segment<3>(3 * active) +=
        node_masses_[active] *
        (velocity.segment<3>(3 * active) - initial_velocity_.segment<3>(3 * active) - dt_ * gravity_);
  }
  return gradient;
}

void ImplicitMpm::AddGroupStiffness(const CellGroup& group, const Eigen::VectorXd& velocity, StressTangent tangent,
                                    Eigen::MatrixXd& columns, Eigen::MatrixXd& products,
                                    Eigen::MatrixXd& negative_columns, Eigen::MatrixXd& negative_products,
                                    double* values) const {
  const MaterialData& material = materials_[group.material];
  if (material.cloth) return;  // the cloth's stiffness is its triangles' (Hessian)
  const int particle_count = group.end_particle - group.first_particle;

  // 1. The group's stiffness Σ_p Δt² V_p⁰ K_p is a sum of outer products of 81-vectors
  //    (27 stencil nodes × 3), one column u per product: Y = U Uᵀ (lower triangle), with
  //    Y_ji its 3×3 block of row node j and column node i.
  if (material.linear_corotated) {
    // Linear corotated: u_p = √(Δt² V⁰) (R0 g_ip)_i, cached by Setup. With
    // g_a·g_b = (R0 g_a)·(R0 g_b), the block K_p(g_j, g_i) = μ(g_j·g_i)I + μ(R0 g_i)(R0 g_j)ᵀ
    // + λ(R0 g_j)(R0 g_i)ᵀ of spec §1.1.3 is μ tr(Y_ji) I + μ Y_jiᵀ + λ Y_ji.
    ComputeOuterProducts(&stiffness_columns_[static_cast<std::size_t>(group.first_particle) * kColumnStride],
                         particle_count, products.data());
  } else {
    // Generic model: dP/dF projected to PSD (eigenvalues clamped at 0, spec §5 Z3). Each
    // kept eigenpair (θ, vec Q) gives K_p(g_j, g_i) a term θ (Q g_j)(Q g_i)ᵀ, so
    // u = √(Δt² V⁰ θ) (Q g_ip)_i and Y_ji is the block itself. With the exact tangent the
    // negative eigenpairs are kept too, as columns √(Δt² V⁰ |θ|) (Q g_ip)_i of a second sum
    // that Y loses.
    const bool exact = tangent == StressTangent::kExact;
    if (columns.cols() < 9 * particle_count) columns.setZero(kColumnStride, 9 * particle_count);
    if (exact && negative_columns.cols() < 9 * particle_count) {
      negative_columns.setZero(kColumnStride, 9 * particle_count);
    }
    int column_count = 0, negative_count = 0;
    for (int s = group.first_particle; s < group.end_particle; ++s) {
      const Matrix9 derivative = ParticleStressDerivative(material, s, DeformationGradient(group, s, velocity));
      const Eigen::SelfAdjointEigenSolver<Matrix9> eigen(0.5 * (derivative + derivative.transpose()));
      for (int k = 0; k < 9; ++k) {
        const double eigenvalue = eigen.eigenvalues()[k];
        const bool negative = eigenvalue < 0.0;
        if (!(eigenvalue > 0.0) && !(exact && negative)) continue;
        const double scale = std::sqrt(dt_ * dt_ * initial_volumes_[s] * std::abs(eigenvalue));
        const Eigen::Map<const Matrix3> mode(eigen.eigenvectors().col(k).data());  // column-major vec⁻¹
        const Matrix3 scaled_mode = scale * mode;
        auto column = negative ? negative_columns.col(negative_count++) : columns.col(column_count++);
        for (int i = 0; i < kStencilSize; ++i) column.segment<3>(3 * i) = scaled_mode * strain_weights_[s][i];
      }
    }
    ComputeOuterProducts(columns.data(), column_count, products.data());
    if (negative_count > 0) {
      ComputeOuterProducts(negative_columns.data(), negative_count, negative_products.data());
      products.triangularView<Eigen::Lower>() -= negative_products;  // only the lower triangle is set
    }
  }

  // 2. Scatter column node by column node, so that the writes of one node stay inside its
  //    three columns: column 3a + β of active node a = dofs[i] holds entry (α, β) of block
  //    (b, a), b = dofs[j], at value 3·rank_a(b) + α.
  const double shear_modulus = material.shear_modulus;
  const double first_lame_parameter = material.first_lame_parameter;
  for (int i = 0; i < kStencilSize; ++i) {
    const int column_node = group.dofs[i];
    if (column_node < 0) continue;
    const int stride = 3 * neighbor_count_[column_node];
    double* column_values = values + column_value_begin_[column_node];
    const int* ranks = &neighbor_rank_[static_cast<std::size_t>(column_node) * kNeighborSlots];
    for (int j = 0; j < kStencilSize; ++j) {
      if (group.dofs[j] < 0) continue;
      // Y_ji from the lower triangle of Y.
      Matrix3 product;
      if (j > i) {
        product = products.block<3, 3>(3 * j, 3 * i);
      } else if (j < i) {
        product = products.block<3, 3>(3 * i, 3 * j).transpose();
      } else {
        product = products.block<3, 3>(3 * i, 3 * i).selfadjointView<Eigen::Lower>();
      }
      double* entries = column_values + 3 * ranks[kSlotTable.slot[i][j]];
      if (material.linear_corotated) {
        const double trace_term = shear_modulus * product.trace();
        for (int beta = 0; beta < 3; ++beta) {
          for (int alpha = 0; alpha < 3; ++alpha) {
            entries[beta * stride + alpha] += shear_modulus * product(beta, alpha) +
                                              first_lame_parameter * product(alpha, beta) +
                                              (alpha == beta ? trace_term : 0.0);
          }
        }
      } else {
        for (int beta = 0; beta < 3; ++beta) {
          for (int alpha = 0; alpha < 3; ++alpha) entries[beta * stride + alpha] += product(alpha, beta);
        }
      }
    }
  }
}

SparseMatrix ImplicitMpm::Hessian(const Eigen::VectorXd& velocity, StressTangent tangent) const {
  SparseMatrix hessian = UnconstrainedHessian(velocity, tangent);
  // Wall constraints: fixed components keep only their diagonal.
  if (!constrained_mask_.empty()) {
    double* values = hessian.valuePtr();
    const int* outer = hessian.outerIndexPtr();
    const int* inner = hessian.innerIndexPtr();
    for (int column = 0; column < hessian.cols(); ++column) {
      const bool column_fixed = IsConstrainedDof(column);
      for (int k = outer[column]; k < outer[column + 1]; ++k) {
        if (inner[k] != column && (column_fixed || IsConstrainedDof(inner[k]))) values[k] = 0.0;
      }
    }
  }
  return hessian;
}

SparseMatrix ImplicitMpm::UnconstrainedHessian(const Eigen::VectorXd& velocity, StressTangent tangent) const {
  RequireVelocitySize(velocity, num_dofs(), "Hessian");
  SparseMatrix hessian = hessian_pattern_;
  double* values = hessian.valuePtr();

  // 1. Lumped mass m_i I₃ on the diagonal blocks.
  for (int active = 0; active < num_active_nodes(); ++active) {
    const int stride = 3 * neighbor_count_[active];
    const int own_rank = neighbor_rank_[static_cast<std::size_t>(active) * kNeighborSlots + kOwnSlot];
    for (int direction = 0; direction < 3; ++direction) {
      values[column_value_begin_[active] + direction * stride + 3 * own_rank + direction] += node_masses_[active];
    }
  }

  // 2. Elastic stiffness Δt² Σ_p V_p⁰ K_p(g_ip, g_jp), one rank update per cell group,
  //    colour by colour with one workspace per thread.
  struct Workspace {
    Eigen::MatrixXd columns = Eigen::MatrixXd(kColumnStride, 0);  // generic models' u (rows 81… zero)
    Eigen::MatrixXd products = Eigen::MatrixXd(kColumnStride, kColumnStride);
    Eigen::MatrixXd negative_columns = Eigen::MatrixXd(kColumnStride, 0);  // kExact's negative modes
    Eigen::MatrixXd negative_products = Eigen::MatrixXd(kColumnStride, kColumnStride);
  };
  std::vector<Workspace> workspaces(omp_get_max_threads());
  ForEachGroupColored([&](const CellGroup& group) {
    Workspace& workspace = workspaces[omp_get_thread_num()];
    AddGroupStiffness(group, velocity, tangent, workspace.columns, workspace.products, workspace.negative_columns,
                      workspace.negative_products, values);
  });

  // 2b. The cloth's triangles: their pattern joins the stencils' (a sum of two column-major
  //     matrices with sorted rows keeps its rows sorted).
  if (!cloth_.empty()) {
    hessian = SparseMatrix(hessian + cloth_.Stiffness(velocity, tangent == StressTangent::kProjected));
  }
  return hessian;
}

solvers::SolverSummary ImplicitMpm::SolveFreeMotion(const ImplicitMpmOptions& options,
                                                    linear_algebra::SparseCholesky& cholesky,
                                                    Eigen::VectorXd& free_motion_velocity, SparseMatrix& hessian,
                                                    FreeMotionDirections* directions) const {
  const Clock::time_point solve_start = Clock::now();
  solvers::SolverSummary summary;
  Eigen::VectorXd velocity = start_velocity_;
  if (num_dofs() == 0) {  // no particles: nothing to solve
    free_motion_velocity = velocity;
    hessian = hessian_pattern_;
    summary.Stop(solvers::Termination::kNothingToSolve, "no active grid nodes");
    return summary;
  }
  const auto optimality_at = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& gradient) {
    return EvaluateOptimality(node_masses_, at, initial_velocity_, gradient, gravity_, dt_, options.relative_tolerance);
  };
  // Books the optimality of the iterate into the summary and its history.
  const auto record_iterate = [&](const ScaledOptimality& optimality, double energy) {
    summary.residual = optimality.Ratio();
    summary.momentum_residual_bound = std::sqrt(optimality.weight_sum) * optimality.residual;
    summary.cost = energy;
    solvers::SolverIterationRecord record;
    record.iteration = summary.iterations;
    record.cost = energy;
    record.residual = optimality.residual;
    record.threshold = optimality.threshold;
    summary.history.push_back(record);
  };
  const auto stop_on_optimality = [&](const ScaledOptimality& optimality) {
    summary.Stop(solvers::Termination::kConverged,
                 solvers::Compare("|M^-1/2 grad E|", optimality.residual, "<=", optimality.threshold));
  };

  if (quadratic_) {
    // Linear corotated: E is quadratic, one Newton step v* = vⁿ − A⁻¹ ∇E(vⁿ) is exact
    // (spec §1.1.3); A does not depend on v and is returned as is.
    const Eigen::VectorXd initial_gradient = Gradient(velocity);
    record_iterate(optimality_at(velocity, initial_gradient), Energy(velocity));
    const Clock::time_point factor_start = Clock::now();
    hessian = Hessian(velocity);
    const bool factored = cholesky.Factor(hessian);
    if (factored) velocity -= cholesky.Solve(initial_gradient);
    summary.seconds.linear_solve = SecondsSince(factor_start);
    free_motion_velocity = velocity;
    if (!factored) {
      summary.Stop(solvers::Termination::kNumericalFailure, "the quadratic energy's Hessian could not be factored");
    } else {
      const ScaledOptimality optimality = optimality_at(velocity, Gradient(velocity));
      summary.history.back().step = 1.0;
      summary.iterations = 1;
      record_iterate(optimality, Energy(velocity));
      // One exact step solves the quadratic problem; the ratio is recorded, not tested.
      summary.Stop(solvers::Termination::kConverged,
                   "one Newton step solves the quadratic energy (" +
                       solvers::Compare("|M^-1/2 grad E|", optimality.residual, "vs", optimality.threshold) + ")");
    }
    summary.seconds.total = SecondsSince(solve_start);
    return summary;
  }

  // Nonlinear models: Newton with Armijo backtracking on E (spec §2.3, §5 Z2), its
  // direction from the exact Hessian where that is positive definite (options.tangent) and
  // from the PSD-projected one (§5 Z3) otherwise.
  FreeMotionDirections counts;
  double energy = Energy(velocity);
  for (;;) {
    const Eigen::VectorXd gradient = Gradient(velocity);
    const ScaledOptimality optimality = optimality_at(velocity, gradient);
    record_iterate(optimality, energy);
    if (optimality.Converged()) {
      stop_on_optimality(optimality);
      break;
    }
    if (summary.iterations >= options.max_newton_iterations) {
      summary.Stop(solvers::Termination::kMaxIterations,
                   "no convergence in " + std::to_string(summary.iterations) + " Newton iterations; " +
                       solvers::Compare("|M^-1/2 grad E|", optimality.residual, ">", optimality.threshold));
      break;
    }

    // Newton direction Δv = −A⁻¹ ∇E: the exact A if it is positive definite and gives a
    // downhill direction, else the projected A.
    const Clock::time_point factor_start = Clock::now();
    Eigen::VectorXd direction;
    bool exact_direction = false;
    if (options.tangent == FreeMotionTangent::kAuto && cholesky.Factor(Hessian(velocity, StressTangent::kExact))) {
      direction = -cholesky.Solve(gradient);
      exact_direction = gradient.dot(direction) < 0.0;
    }
    bool factored = exact_direction;
    if (!exact_direction) {
      factored = cholesky.Factor(Hessian(velocity, StressTangent::kProjected));
      if (factored) direction = -cholesky.Solve(gradient);
    }
    summary.seconds.linear_solve += SecondsSince(factor_start);
    if (!factored) {
      summary.Stop(solvers::Termination::kNumericalFailure,
                   "the projected Hessian could not be factored at iteration " + std::to_string(summary.iterations));
      break;
    }
    ++(exact_direction ? counts.exact : counts.projected);
    const double slope = gradient.dot(direction);
    if (!(slope < 0.0)) {
      summary.Stop(solvers::Termination::kLineSearchFailed,
                   "the Newton direction is not downhill at iteration " + std::to_string(summary.iterations));
      break;
    }

    // Backtracking: halve α until E(v + α Δv) ≤ E(v) + c α ∇E·Δv.
    const Clock::time_point search_start = Clock::now();
    double step = 1.0;
    bool accepted = false;
    int evaluations = 0;
    for (int backtrack = 0; backtrack <= kMaxBacktracks; ++backtrack) {
      const Eigen::VectorXd trial = velocity + step * direction;
      const double trial_energy = Energy(trial);
      ++evaluations;
      if (trial_energy <= energy + kArmijoSlopeFraction * step * slope) {
        velocity = trial;
        energy = trial_energy;
        accepted = true;
        break;
      }
      step *= 0.5;
    }
    summary.seconds.line_search += SecondsSince(search_start);
    summary.line_search_evaluations += evaluations;
    summary.history.back().step = accepted ? step : 0.0;
    summary.history.back().line_search_evaluations = evaluations;
    ++summary.iterations;
    if (!accepted) {  // no decrease left at round-off level; v and its residual stand
      summary.Stop(solvers::Termination::kLineSearchFailed,
                   "no backtracking step lowered E at iteration " + std::to_string(summary.iterations - 1));
      break;
    }
  }
  free_motion_velocity = velocity;
  hessian = Hessian(velocity);
  if (directions != nullptr) *directions = counts;
  summary.seconds.total = SecondsSince(solve_start);
  return summary;
}

}  // namespace contactlab::dynamics
