#pragma once
// A sparse background grid: nodes x_i = h·i are allocated in blocks of 4×4×4 around the
// particles, and only allocated nodes store data. Rebuild() also sorts the particles by the
// block of their base node. A particle in block b writes only nodes 4b … 4b+5 per axis (the
// block's halo box). Particle-to-grid scatters run without atomics in either of two ways:
// each particle block fills a private copy of its halo box and the grid adds the boxes up
// per node (ScatterParticleBlocks); or the particle blocks are coloured with 8 colours,
// (b_x mod 2, b_y mod 2, b_z mod 2), so that two blocks of one colour never write the same
// node, and run in parallel within a colour, colour after colour (ForEachParticleColored).
// Either result is bitwise independent of the number of threads (spec-sap-qn §6.1).
#include <array>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "mpm/bspline.h"
#include "mpm/types.h"

namespace contactlab::mpm {

// Thrown by SparseGrid::Rebuild for a particle whose position is not finite or lies beyond
// the grid's coordinate range: the state has blown up. Formulation::Step reports it as a
// divergence.
class ParticleOutsideGrid : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Checks that hold by construction and guard memory (a stencil inside its halo box): on in
// Debug builds and in the sanitizer build (CONTACTLAB_SANITIZE), compiled out otherwise.
#if !defined(NDEBUG) || defined(CONTACTLAB_SANITIZE)
#define CONTACTLAB_DEBUG_CHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::contactlab::mpm::DebugCheckFailed(#condition, __FILE__, __LINE__))
#else
#define CONTACTLAB_DEBUG_CHECK(condition) static_cast<void>(0)
#endif
[[noreturn]] void DebugCheckFailed(const char* condition, const char* file, int line);

class SparseGrid {
 public:
  static constexpr int kBlockWidth = 4;
  static constexpr int kNodesPerBlock = kBlockWidth * kBlockWidth * kBlockWidth;
  static constexpr int kColors = 8;

  explicit SparseGrid(double spacing = 1.0);

  double spacing() const { return spacing_; }
  // Allocates the blocks touched by the quadratic stencils of `positions`, orders the
  // particles by block and zeroes every node field. Keeps capacity between calls. A position
  // that is not finite or lies more than kMaxNodeCoordinate cells from the origin along an
  // axis throws ParticleOutsideGrid (block keys have 21 bits per axis: beyond that, two
  // blocks would share a key and a stencil would leave its halo box).
  void Rebuild(const std::vector<Vector3>& positions);
  static constexpr double kMaxNodeCoordinate = 4.0e6;

  int num_nodes() const { return static_cast<int>(block_coordinates_.size()) * kNodesPerBlock; }
  int num_blocks() const { return static_cast<int>(block_coordinates_.size()); }
  // Index of an allocated node, or -1 when its block is not allocated.
  int FindNode(const NodeCoordinate& node) const;
  NodeCoordinate NodeCoordinateOf(int node_index) const;
  Vector3 NodePosition(int node_index) const { return spacing_ * NodeCoordinateOf(node_index).cast<double>(); }

  // Node indices of the 27 stencil nodes of a particle of `particle_block` whose stencil
  // starts at `base_node`, ordered a + 3b + 9c.
  void StencilNodes(int particle_block, const NodeCoordinate& base_node, std::array<int, 27>& nodes) const;

  // Node fields, indexed by node; sized num_nodes() and zeroed by Rebuild().
  std::vector<double> mass;       // m_i [kg]
  std::vector<Vector3> momentum;  // (m v)_i [kg m/s]
  std::vector<Vector3> velocity;  // v_i [m/s]

  // Particle blocks (blocks that contain at least one particle's base node).
  int num_particle_blocks() const { return static_cast<int>(particle_block_begin_.size()) - 1; }
  // Particles of particle block k are sorted_particles()[begin(k) .. begin(k+1)).
  const std::vector<int>& sorted_particles() const { return sorted_particles_; }
  int particle_block_begin(int block) const { return particle_block_begin_[block]; }
  const std::vector<int>& particle_blocks_of_color(int color) const { return blocks_of_color_[color]; }

  // Halo box of a particle block B: the 6×6×6 nodes 4B … 4B+5 per axis that the stencils of
  // its particles reach (base nodes 4B … 4B+3). They lie in the allocated blocks B + {0,1}³.
  static constexpr int kHaloWidth = kBlockWidth + 2;
  static constexpr int kHaloNodes = kHaloWidth * kHaloWidth * kHaloWidth;
  // First node, 4B, of the halo box of a particle block.
  NodeCoordinate HaloOrigin(int particle_block) const {
    return kBlockWidth * particle_block_coordinates_[particle_block];
  }
  // Node indices of the halo box of a particle block, ordered x + 6y + 36z.
  void HaloNodes(int particle_block, std::array<int, kHaloNodes>& nodes) const;

  // Mass and momentum a particle block scatters onto its halo box: (m, m v) per node,
  // ordered as HaloNodes.
  using HaloBox = std::array<Eigen::Vector4d, kHaloNodes>;
  // Particle-to-grid scatter in two parallel passes, without colours. First
  // `fill(particle_block, halo)` adds the block's particles into `halo` (zeroed), for all
  // particle blocks in parallel, each with a box of its own. Then each node adds to mass and
  // momentum the boxes that cover it (up to 8), in a fixed order: the result does not
  // depend on the number of threads, and the threads meet at two barriers, not eight.
  template <typename Fill>
  void ScatterParticleBlocks(Fill&& fill) {
    const int count = num_particle_blocks();
    halo_boxes_.resize(count);
#pragma omp parallel for schedule(dynamic, 1)
    for (int block = 0; block < count; ++block) {
      HaloBox& halo = halo_boxes_[block];
      for (Eigen::Vector4d& node : halo) node.setZero();
      fill(block, halo);
    }
    AddHaloBoxes();
  }
  // Visits every particle block once in parallel; `visit` may only read node fields (gather).
  template <typename BlockVisitor>
  void ForEachParticleBlock(BlockVisitor&& visit) const {
    const int count = num_particle_blocks();
#pragma omp parallel for schedule(dynamic, 1)
    for (int block = 0; block < count; ++block) visit(block);
  }

  // Visits every particle once, colour by colour, in parallel over the particle blocks of a
  // colour; `visit(particle_index, particle_block)` may write the nodes of that particle's
  // stencil (scatter).
  template <typename Visitor>
  void ForEachParticleColored(Visitor&& visit) const {
    for (int color = 0; color < kColors; ++color) {
      const std::vector<int>& blocks = blocks_of_color_[color];
      const int count = static_cast<int>(blocks.size());
#pragma omp parallel for schedule(dynamic, 4)
      for (int k = 0; k < count; ++k) VisitBlock(blocks[k], visit);
    }
  }
  // Visits every particle once in parallel; `visit` may only read node fields (gather).
  template <typename Visitor>
  void ForEachParticle(Visitor&& visit) const {
    const int count = num_particle_blocks();
#pragma omp parallel for schedule(dynamic, 4)
    for (int block = 0; block < count; ++block) VisitBlock(block, visit);
  }

 private:
  static std::uint64_t PackBlock(const NodeCoordinate& block);
  static NodeCoordinate BlockOf(const NodeCoordinate& node) {
    return NodeCoordinate(node.x() >> 2, node.y() >> 2, node.z() >> 2);
  }
  int FindBlock(const NodeCoordinate& block) const;
  // Second pass of ScatterParticleBlocks.
  void AddHaloBoxes();
  template <typename Visitor>
  void VisitBlock(int block, Visitor& visit) const {
    for (int s = particle_block_begin_[block]; s < particle_block_begin_[block + 1]; ++s) {
      visit(sorted_particles_[s], block);
    }
  }

  // Rebuild sorts the particles by counting over the bounding box of their blocks when the
  // box has at most this many blocks per particle (plus a constant); otherwise by comparison.
  static constexpr double kDenseSortBlocksPerParticle = 4.0;
  static constexpr double kDenseSortMinimumBlocks = 4096.0;

  double spacing_;
  std::vector<NodeCoordinate> block_coordinates_;             // allocated blocks, sorted by key
  std::unordered_map<std::uint64_t, int> block_index_;        // key → allocated block
  std::vector<int> sorted_particles_;                         // particles ordered by block
  std::vector<NodeCoordinate> particle_block_coordinates_;    // particle blocks, sorted by key
  std::vector<int> particle_block_begin_;                     // CSR offsets, size blocks + 1
  std::vector<std::array<int, 8>> particle_block_neighbors_;  // allocated blocks b + {0,1}³
  std::array<std::vector<int>, kColors> blocks_of_color_;     // particle blocks by colour
  // Per allocated block G and d ∈ {0,1}³ (index d_x + 2d_y + 4d_z): the particle block G − d,
  // whose halo box covers part of G, or -1.
  std::vector<std::array<int, 8>> halo_sources_;
  std::vector<HaloBox> halo_boxes_;  // ScatterParticleBlocks' boxes, kept for their capacity
  // Rebuild's scratch, kept for its capacity.
  std::vector<NodeCoordinate> particle_base_blocks_;  // block of each particle's base node
  std::vector<int> particle_box_cells_;               // its cell in the bounding box
  std::vector<int> box_particle_counts_;              // per thread and box cell: count, then slot
};

}  // namespace contactlab::mpm
