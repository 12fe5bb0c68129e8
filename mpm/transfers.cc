#include "mpm/transfers.h"

#include <algorithm>
#include <array>

#include "mpm/cloth_particles.h"
#include "mpm/constitutive/linear_corotated.h"
#include "mpm/polar_decomposition.h"

namespace contactlab::mpm {
namespace {

// Particles of a block are visited in index order, which in memory is runs of a few
// neighbours, not one contiguous stretch. Asking early for the cache lines of the particle
// kPrefetchDistance places ahead hides part of the miss latency (about 3 % of a substep
// on the benchmark block). A hint only: it changes no value.
constexpr int kPrefetchDistance = 8;

// The first node of a stencil, relative to its block's halo box, leaves the whole 3×3×3
// stencil inside the 6×6×6 box (SparseGrid::Rebuild sorts each particle into the block of
// its base node).
[[maybe_unused]] bool StencilInsideHaloBox(const NodeCoordinate& first) {
  return (first.array() >= 0).all() && (first.array() <= SparseGrid::kHaloWidth - 3).all();
}

void PrefetchMatrix(const Matrix3& matrix) {
  // 72 bytes: two cache lines at most.
  __builtin_prefetch(matrix.data());
  __builtin_prefetch(matrix.data() + 8);
}

// Four doubles handled as one value (`Pack4` below): a halo node's (m, m v), or a velocity
// padded with a zero. The AVX2 build uses a GCC vector, one 256-bit register; the baseline
// build Eigen's Vector4d, two SSE2 registers (a GCC vector of that size compiles to slower
// code there).
typedef double Avx2Pack4 __attribute__((vector_size(4 * sizeof(double))));

template <typename Pack4>
[[gnu::always_inline]] inline void SetPack(Pack4& pack, double x, double y, double z, double w) {
  pack[0] = x;
  pack[1] = y;
  pack[2] = z;
  pack[3] = w;
}
// Unaligned loads and stores of four doubles, for either Pack4 type.
template <typename Pack4>
[[gnu::always_inline]] inline void LoadPack(Pack4& pack, const double* source) {
  __builtin_memcpy(static_cast<void*>(&pack), source, sizeof(Pack4));
}
template <typename Pack4>
[[gnu::always_inline]] inline void StorePack(double* destination, const Pack4& pack) {
  __builtin_memcpy(destination, static_cast<const void*>(&pack), sizeof(Pack4));
}

// What the particle-to-grid scatter of one particle block reads.
struct ScatterInputs {
  const Particles& particles;
  const std::vector<Material>& materials;
  // Per material: the model when it is linear corotated, whose stress is then a direct,
  // inlinable call instead of the virtual one (the same function, so the same values).
  const std::vector<const LinearCorotatedModel*>& linear_corotated;
  const SparseGrid& grid;
  double stress_dt;
  // With a cloth: each particle's role, and the cloth's loads when stress_dt > 0; else null.
  const ClothRole* cloth_role;
  const ClothLoads* cloth_loads;
};

// Scatters the particles of one particle block into its halo box (see ParticleToGrid).
// Inlined into the two instruction-set builds below.
template <typename Pack4>
[[gnu::always_inline]] inline void ScatterParticleBlock(const ScatterInputs& inputs, int block,
                                                        SparseGrid::HaloBox& halo) {
  const Particles& particles = inputs.particles;
  const SparseGrid& grid = inputs.grid;
  const double stress_dt = inputs.stress_dt;
  const double spacing = grid.spacing();
  const double inverse_inertia = ApicInverseInertiaScale(spacing);
  const std::vector<int>& sorted_particles = grid.sorted_particles();
  // The block's particles scatter into a dense box of its 6×6×6 halo nodes, one (m, m v)
  // 4-vector per node, which the grid then adds up: the 27 nodes of a stencil are plain
  // offsets, and the grid sees one access per halo node instead of one per particle and
  // node. Each node sums the block's contributions first, then the blocks.
  const NodeCoordinate halo_origin = grid.HaloOrigin(block);
  const int end = grid.particle_block_begin(block + 1);
  for (int s = grid.particle_block_begin(block); s < end; ++s) {
    const int p = sorted_particles[s];
    if (s + kPrefetchDistance < end) {
      const int ahead = sorted_particles[s + kPrefetchDistance];
      PrefetchMatrix(particles.affine_velocity[ahead]);
      if (stress_dt > 0.0) {
        PrefetchMatrix(particles.deformation_gradient[ahead]);
        PrefetchMatrix(particles.reference_rotation[ahead]);
      }
    }
    // A pinned cloth vertex is moved by its pin, not the grid: it adds nothing.
    const ClothRole role = inputs.cloth_role != nullptr ? inputs.cloth_role[p] : ClothRole::kNone;
    if (role == ClothRole::kPinnedVertex) continue;
    const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
    const NodeCoordinate first = stencil.base_node - halo_origin;  // in [0, 3]³
    CONTACTLAB_DEBUG_CHECK(StencilInsideHaloBox(first));
    Eigen::Vector4d* const stencil_corner =
        &halo[first.x() + SparseGrid::kHaloWidth * (first.y() + SparseGrid::kHaloWidth * first.z())];

    // Affine momentum matrix: APIC term plus, for explicit steps, the MLS stress impulse.
    const double particle_mass = particles.mass[p];
    Matrix3 affine = particle_mass * particles.affine_velocity[p];
    Vector3 particle_momentum = particle_mass * particles.velocity[p];
    if (stress_dt > 0.0 && role != ClothRole::kNone) {
      // Cloth (mpm/cloth_particles.h): a vertex takes its in-plane force as an impulse, a face
      // its stress across the layer through the grid.
      if (role == ClothRole::kFace) {
        affine -= (stress_dt * inverse_inertia) * inputs.cloth_loads->face_stress[p];
      } else {
        particle_momentum += stress_dt * inputs.cloth_loads->vertex_force[p];
      }
    } else if (stress_dt > 0.0) {
      const int material = particles.material[p];
      const Matrix3& elastic_deformation = particles.deformation_gradient[p];
      const Matrix3& reference_rotation = particles.reference_rotation[p];
      const Matrix3 stress =
          inputs.linear_corotated[material] != nullptr
              ? inputs.linear_corotated[material]->FirstPiolaStress(elastic_deformation, reference_rotation)
              : inputs.materials[material].constitutive_model->FirstPiolaStress(elastic_deformation,
                                                                                reference_rotation);
      affine -= (stress_dt * inverse_inertia * particles.initial_volume[p]) * stress * elastic_deformation.transpose();
    }

    // Node (a, b, c) receives w·(m v + A (x_i − x_p)) with x_i − x_p = d₀ + h (a, b, c):
    // the affine term grows by h·A e_k per node along axis k, so it is built incrementally.
    // The mass rides along as the first entry, with steps of 0, so a node's 4-vector is
    // w·(m, m v + A (x_i − x_p)).
    const Matrix3 affine_step = spacing * affine;
    const Vector3 corner_momentum = particle_momentum + affine * stencil.base_offset;
    Pack4 corner, step_a, step_b, step_c;
    SetPack(corner, particle_mass, corner_momentum.x(), corner_momentum.y(), corner_momentum.z());
    SetPack(step_a, 0.0, affine_step(0, 0), affine_step(1, 0), affine_step(2, 0));
    SetPack(step_b, 0.0, affine_step(0, 1), affine_step(1, 1), affine_step(2, 1));
    SetPack(step_c, 0.0, affine_step(0, 2), affine_step(1, 2), affine_step(2, 2));
    const Pack4 double_step_a = 2.0 * step_a;
    for (int c = 0; c < 3; ++c) {
      const Pack4 momentum_c = corner + static_cast<double>(c) * step_c;
      for (int b = 0; b < 3; ++b) {
        const Pack4 momentum_bc = momentum_c + static_cast<double>(b) * step_b;
        const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
        double* const row = stencil_corner[SparseGrid::kHaloWidth * (b + SparseGrid::kHaloWidth * c)].data();
        const Pack4 node_values[3] = {momentum_bc, Pack4(momentum_bc + step_a), Pack4(momentum_bc + double_step_a)};
        for (int a = 0; a < 3; ++a) {
          Pack4 node;
          LoadPack(node, row + 4 * a);
          node += (stencil.weight[0][a] * weight_bc) * node_values[a];
          StorePack(row + 4 * a, node);
        }
      }
    }
  }
}

// Gathers the grid velocities to the particles of one particle block and advects them (see
// GridToParticle). Inlined into the two instruction-set builds below.
template <typename Pack4>
[[gnu::always_inline]] inline void GatherParticleBlock(const SparseGrid& grid, double dt, int block,
                                                       Particles& particles) {
  const ClothRole* const cloth_role = particles.cloth_role.empty() ? nullptr : particles.cloth_role.data();
  const double spacing = grid.spacing();
  const double inverse_inertia = ApicInverseInertiaScale(spacing);
  const std::vector<int>& sorted_particles = grid.sorted_particles();
  // The block's particles gather from a dense copy of the velocities of its 6×6×6 halo
  // box: the 27 nodes of a stencil are then plain offsets (same values, same sums).
  std::array<int, SparseGrid::kHaloNodes> nodes;
  grid.HaloNodes(block, nodes);
  // Velocities padded to four lanes, so that a node is one Pack4.
  alignas(32) double halo_velocity[SparseGrid::kHaloNodes][4];
  for (int k = 0; k < SparseGrid::kHaloNodes; ++k) {
    const Vector3& node_velocity = grid.velocity[nodes[k]];
    halo_velocity[k][0] = node_velocity.x();
    halo_velocity[k][1] = node_velocity.y();
    halo_velocity[k][2] = node_velocity.z();
    halo_velocity[k][3] = 0.0;
  }
  const NodeCoordinate halo_origin = grid.HaloOrigin(block);

  const int end = grid.particle_block_begin(block + 1);
  for (int s = grid.particle_block_begin(block); s < end; ++s) {
    const int p = sorted_particles[s];
    if (s + kPrefetchDistance < end) {
      const int ahead = sorted_particles[s + kPrefetchDistance];
      PrefetchMatrix(particles.deformation_gradient[ahead]);
      PrefetchMatrix(particles.affine_velocity[ahead]);
    }
    if (cloth_role != nullptr && cloth_role[p] == ClothRole::kPinnedVertex) continue;  // its pin moves it
    const QuadraticStencil stencil = ComputeQuadraticStencil(particles.position[p], spacing);
    const NodeCoordinate first = stencil.base_node - halo_origin;  // in [0, 3]³
    CONTACTLAB_DEBUG_CHECK(StencilInsideHaloBox(first));
    const double(*const stencil_corner)[4] =
        &halo_velocity[first.x() + SparseGrid::kHaloWidth * (first.y() + SparseGrid::kHaloWidth * first.z())];

    // Gather v_p = Σ w v_i and B_p = Σ w v_i (x_i − x_p)ᵀ. With x_i − x_p = d₀ + h (a, b, c),
    // B_p = v_p d₀ᵀ + h [Σ w a v_i, Σ w b v_i, Σ w c v_i], accumulated row by row along x.
    Pack4 velocity_sum, moment_a_sum, moment_b_sum, moment_c_sum;
    SetPack(velocity_sum, 0.0, 0.0, 0.0, 0.0);
    SetPack(moment_a_sum, 0.0, 0.0, 0.0, 0.0);
    SetPack(moment_b_sum, 0.0, 0.0, 0.0, 0.0);
    SetPack(moment_c_sum, 0.0, 0.0, 0.0, 0.0);
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        const double(*const row)[4] = stencil_corner + SparseGrid::kHaloWidth * (b + SparseGrid::kHaloWidth * c);
        Pack4 node_0, node_1, node_2;
        LoadPack(node_0, row[0]);
        LoadPack(node_1, row[1]);
        LoadPack(node_2, row[2]);
        const Pack4 weighted_1 = stencil.weight[0][1] * node_1;
        const Pack4 weighted_2 = stencil.weight[0][2] * node_2;
        const Pack4 row_sum = stencil.weight[0][0] * node_0 + weighted_1 + weighted_2;
        const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
        velocity_sum += weight_bc * row_sum;
        moment_a_sum += weight_bc * (weighted_1 + 2.0 * weighted_2);
        moment_b_sum += (b * weight_bc) * row_sum;
        moment_c_sum += (c * weight_bc) * row_sum;
      }
    }
    const Vector3 velocity(velocity_sum[0], velocity_sum[1], velocity_sum[2]);
    const Vector3 moment_a(moment_a_sum[0], moment_a_sum[1], moment_a_sum[2]);
    const Vector3 moment_b(moment_b_sum[0], moment_b_sum[1], moment_b_sum[2]);
    const Vector3 moment_c(moment_c_sum[0], moment_c_sum[1], moment_c_sum[2]);
    Matrix3 affine_moment = velocity * stencil.base_offset.transpose();
    affine_moment.col(0) += spacing * moment_a;
    affine_moment.col(1) += spacing * moment_b;
    affine_moment.col(2) += spacing * moment_c;
    const Matrix3 affine_velocity = inverse_inertia * affine_moment;

    // Deformation update with the MLS velocity gradient, then advection.
    particles.velocity[p] = velocity;
    particles.affine_velocity[p] = affine_velocity;
    particles.deformation_gradient[p] =
        (Matrix3::Identity() + dt * affine_velocity) * particles.deformation_gradient[p];
    particles.position[p] += dt * velocity;
  }
}

// Per material: the model when it is linear corotated (LinearCorotatedModel is final, so a
// call through this pointer is direct and inlinable into the builds below), else null.
std::vector<const LinearCorotatedModel*> LinearCorotatedModels(const std::vector<Material>& materials) {
  std::vector<const LinearCorotatedModel*> linear_corotated(materials.size());
  for (std::size_t m = 0; m < materials.size(); ++m) {
    linear_corotated[m] = dynamic_cast<const LinearCorotatedModel*>(materials[m].constitutive_model.get());
  }
  return linear_corotated;
}

// The end-of-step constitutive update of particles [begin, end) (see UpdateConstitutiveState):
// each material's model updates R0 and applies its plasticity (ConstitutiveModel::UpdateState).
// Inlined into the two instruction-set builds below.
[[gnu::always_inline]] inline void UpdateConstitutiveRange(
    const std::vector<Material>& materials, const std::vector<const LinearCorotatedModel*>& linear_corotated, int begin,
    int end, Particles& particles) {
  for (int p = begin; p < end; ++p) {
    const int material = particles.material[p];
    Matrix3& elastic = particles.deformation_gradient[p];
    Matrix3& rotation = particles.reference_rotation[p];
    Matrix3& plastic = particles.plastic_deformation_gradient[p];
    if (linear_corotated[material] != nullptr) {
      linear_corotated[material]->UpdateState(elastic, rotation, plastic);
    } else {
      materials[material].constitutive_model->UpdateState(elastic, rotation, plastic);
    }
  }
}

// Two builds of each block kernel, chosen once at run time: one for CPUs with AVX2 and FMA
// (the compiler may fuse a multiply and an add, which changes results by round-off only,
// and both thread counts take the same build), the baseline x86-64 one otherwise.
using ScatterBlockKernel = void (*)(const ScatterInputs&, int, SparseGrid::HaloBox&);
using GatherBlockKernel = void (*)(const SparseGrid&, double, int, Particles&);
using ConstitutiveUpdateKernel = void (*)(const std::vector<Material>&, const std::vector<const LinearCorotatedModel*>&,
                                          int, int, Particles&);

void ScatterParticleBlockBaseline(const ScatterInputs& inputs, int block, SparseGrid::HaloBox& halo) {
  ScatterParticleBlock<Eigen::Vector4d>(inputs, block, halo);
}
void GatherParticleBlockBaseline(const SparseGrid& grid, double dt, int block, Particles& particles) {
  GatherParticleBlock<Eigen::Vector4d>(grid, dt, block, particles);
}
void UpdateConstitutiveRangeBaseline(const std::vector<Material>& materials,
                                     const std::vector<const LinearCorotatedModel*>& linear_corotated, int begin,
                                     int end, Particles& particles) {
  UpdateConstitutiveRange(materials, linear_corotated, begin, end, particles);
}
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx2,fma"), flatten)) void ScatterParticleBlockAvx2(const ScatterInputs& inputs, int block,
                                                                           SparseGrid::HaloBox& halo) {
  ScatterParticleBlock<Avx2Pack4>(inputs, block, halo);
}
__attribute__((target("avx2,fma"), flatten)) void GatherParticleBlockAvx2(const SparseGrid& grid, double dt, int block,
                                                                          Particles& particles) {
  GatherParticleBlock<Avx2Pack4>(grid, dt, block, particles);
}
__attribute__((target("avx2,fma"), flatten)) void UpdateConstitutiveRangeAvx2(
    const std::vector<Material>& materials, const std::vector<const LinearCorotatedModel*>& linear_corotated, int begin,
    int end, Particles& particles) {
  UpdateConstitutiveRange(materials, linear_corotated, begin, end, particles);
}
#endif

bool& BaselineKernelsForced() {
  static bool forced = false;
  return forced;
}

bool UseAvx2Kernels() {
#if defined(__GNUC__) && defined(__x86_64__)
  static const bool has_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has_avx2_fma && !BaselineKernelsForced();
#else
  return false;
#endif
}

ScatterBlockKernel SelectScatterBlockKernel() {
#if defined(__GNUC__) && defined(__x86_64__)
  if (UseAvx2Kernels()) return ScatterParticleBlockAvx2;
#endif
  return ScatterParticleBlockBaseline;
}

GatherBlockKernel SelectGatherBlockKernel() {
#if defined(__GNUC__) && defined(__x86_64__)
  if (UseAvx2Kernels()) return GatherParticleBlockAvx2;
#endif
  return GatherParticleBlockBaseline;
}

ConstitutiveUpdateKernel SelectConstitutiveUpdateKernel() {
#if defined(__GNUC__) && defined(__x86_64__)
  if (UseAvx2Kernels()) return UpdateConstitutiveRangeAvx2;
#endif
  return UpdateConstitutiveRangeBaseline;
}

}  // namespace

const char* TransferKernelBuild() {
  return UseAvx2Kernels() ? "avx2_fma" : "baseline";
}

void ForceBaselineTransferKernels(bool forced) {
  BaselineKernelsForced() = forced;
}

void ParticleToGrid(const Particles& particles, const std::vector<Material>& materials, double stress_dt,
                    SparseGrid& grid) {
  grid.Rebuild(particles.position);
  const std::vector<const LinearCorotatedModel*> linear_corotated = LinearCorotatedModels(materials);
  ClothLoads cloth_loads;
  if (particles.has_cloth() && stress_dt > 0.0) ComputeClothLoads(particles, materials, cloth_loads);
  const ScatterInputs inputs{particles,
                             materials,
                             linear_corotated,
                             grid,
                             stress_dt,
                             particles.cloth_role.empty() ? nullptr : particles.cloth_role.data(),
                             particles.has_cloth() ? &cloth_loads : nullptr};
  const ScatterBlockKernel scatter = SelectScatterBlockKernel();
  grid.ScatterParticleBlocks([&](int block, SparseGrid::HaloBox& halo) { scatter(inputs, block, halo); });
}

void ComputeGridVelocity(const Vector3& gravity, double dt, SparseGrid& grid) {
  const int node_count = grid.num_nodes();
#pragma omp parallel for schedule(static)
  for (int node = 0; node < node_count; ++node) {
    grid.velocity[node] =
        grid.mass[node] > 0.0 ? Vector3(grid.momentum[node] / grid.mass[node] + dt * gravity) : Vector3::Zero();
  }
}

void GridToParticle(const SparseGrid& grid, double dt, Particles& particles) {
  const GatherBlockKernel gather = SelectGatherBlockKernel();
  grid.ForEachParticleBlock([&](int block) { gather(grid, dt, block, particles); });
  if (particles.has_cloth()) FinishClothParticles(dt, particles);
}

void UpdateConstitutiveState(const std::vector<Material>& materials, Particles& particles) {
  const int count = static_cast<int>(particles.size());
  const ConstitutiveUpdateKernel update = SelectConstitutiveUpdateKernel();
  const std::vector<const LinearCorotatedModel*> linear_corotated = LinearCorotatedModels(materials);
  constexpr int kChunk = 256;
  const int chunk_count = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int chunk = 0; chunk < chunk_count; ++chunk) {
    update(materials, linear_corotated, chunk * kChunk, std::min(count, (chunk + 1) * kChunk), particles);
  }
}

}  // namespace contactlab::mpm
