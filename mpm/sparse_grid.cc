#include "mpm/sparse_grid.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace contactlab::mpm {
namespace {

constexpr int kCoordinateBits = 21;
constexpr std::int64_t kCoordinateBias = std::int64_t{1} << (kCoordinateBits - 1);
// A particle block and its +1 neighbours must have distinct keys.
static_assert(SparseGrid::kMaxNodeCoordinate / SparseGrid::kBlockWidth + 2 < kCoordinateBias);

int LocalIndex(const NodeCoordinate& node) {
  return (node.x() & 3) + SparseGrid::kBlockWidth * ((node.y() & 3) + SparseGrid::kBlockWidth * (node.z() & 3));
}

}  // namespace

void DebugCheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "contactlab: internal check failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

SparseGrid::SparseGrid(double spacing) : spacing_(spacing) {}

std::uint64_t SparseGrid::PackBlock(const NodeCoordinate& block) {
  // Biased 21-bit fields, z major: sorting keys sorts blocks lexicographically by (z, y, x).
  const auto field = [](int value) {
    return static_cast<std::uint64_t>(value + kCoordinateBias) & ((std::uint64_t{1} << kCoordinateBits) - 1);
  };
  return (field(block.z()) << (2 * kCoordinateBits)) | (field(block.y()) << kCoordinateBits) | field(block.x());
}

int SparseGrid::FindBlock(const NodeCoordinate& block) const {
  // A block beyond the key range would alias an allocated one.
  if ((block.array().abs() >= kCoordinateBias).any()) return -1;
  const auto found = block_index_.find(PackBlock(block));
  return found == block_index_.end() ? -1 : found->second;
}

int SparseGrid::FindNode(const NodeCoordinate& node) const {
  const int block = FindBlock(BlockOf(node));
  return block < 0 ? -1 : block * kNodesPerBlock + LocalIndex(node);
}

NodeCoordinate SparseGrid::NodeCoordinateOf(int node_index) const {
  const int block = node_index / kNodesPerBlock;
  const int local = node_index % kNodesPerBlock;
  return kBlockWidth * block_coordinates_[block] +
         NodeCoordinate(local % kBlockWidth, (local / kBlockWidth) % kBlockWidth, local / (kBlockWidth * kBlockWidth));
}

void SparseGrid::StencilNodes(int particle_block, const NodeCoordinate& base_node, std::array<int, 27>& nodes) const {
  // The stencil spans at most two blocks per axis, cached per particle block by Rebuild.
  const NodeCoordinate base_block = BlockOf(base_node);
  const std::array<int, 8>& neighbors = particle_block_neighbors_[particle_block];
  // Per axis and offset: which of the two blocks (0/1) and the local index inside it.
  int block_step[3][3], local[3][3];
  for (int axis = 0; axis < 3; ++axis) {
    for (int offset = 0; offset < 3; ++offset) {
      const int node = base_node[axis] + offset;
      block_step[axis][offset] = (node >> 2) - base_block[axis];
      local[axis][offset] = node & 3;
    }
  }
  for (int c = 0; c < 3; ++c) {
    for (int b = 0; b < 3; ++b) {
      for (int a = 0; a < 3; ++a) {
        const int block = neighbors[block_step[0][a] + 2 * block_step[1][b] + 4 * block_step[2][c]];
        nodes[a + 3 * b + 9 * c] =
            block * kNodesPerBlock + local[0][a] + kBlockWidth * (local[1][b] + kBlockWidth * local[2][c]);
      }
    }
  }
}

void SparseGrid::HaloNodes(int particle_block, std::array<int, kHaloNodes>& nodes) const {
  const std::array<int, 8>& neighbors = particle_block_neighbors_[particle_block];
  int node = 0;
  for (int z = 0; z < kHaloWidth; ++z) {
    for (int y = 0; y < kHaloWidth; ++y) {
      for (int x = 0; x < kHaloWidth; ++x) {
        const int block = neighbors[(x >> 2) + 2 * (y >> 2) + 4 * (z >> 2)];
        nodes[node++] = block * kNodesPerBlock + LocalIndex(NodeCoordinate(x, y, z));
      }
    }
  }
}

void SparseGrid::AddHaloBoxes() {
  const int block_count = num_blocks();
#pragma omp parallel for schedule(static)
  for (int block = 0; block < block_count; ++block) {
    // Source d, the particle block G − d, covers the nodes of G at local coordinates
    // l < 6 − 4d per axis, its box entry l + 4d. Sources are added in the order of d.
    for (int d = 0; d < 8; ++d) {
      const int source = halo_sources_[block][d];
      if (source < 0) continue;
      const NodeCoordinate shift = kBlockWidth * NodeCoordinate(d & 1, (d >> 1) & 1, d >> 2);
      const NodeCoordinate end = NodeCoordinate::Constant(kHaloWidth) - shift;
      const HaloBox& halo = halo_boxes_[source];
      for (int z = 0; z < std::min(end.z(), kBlockWidth); ++z) {
        for (int y = 0; y < std::min(end.y(), kBlockWidth); ++y) {
          for (int x = 0; x < std::min(end.x(), kBlockWidth); ++x) {
            const Eigen::Vector4d& value =
                halo[(x + shift.x()) + kHaloWidth * ((y + shift.y()) + kHaloWidth * (z + shift.z()))];
            const int node = block * kNodesPerBlock + LocalIndex(NodeCoordinate(x, y, z));
            mass[node] += value[0];
            momentum[node] += value.tail<3>();
          }
        }
      }
    }
  }
}

void SparseGrid::Rebuild(const std::vector<Vector3>& positions) {
  const int particle_count = static_cast<int>(positions.size());

  // 1. Block of each particle's base node, and the bounding box of those blocks.
  particle_base_blocks_.resize(particle_count);
  const double inverse_spacing = 1.0 / spacing_;
  int min_x = 0, min_y = 0, min_z = 0, max_x = -1, max_y = -1, max_z = -1;
  if (particle_count > 0) {
    min_x = min_y = min_z = std::numeric_limits<int>::max();
    max_x = max_y = max_z = std::numeric_limits<int>::min();
  }
  int first_outside = particle_count;  // the lowest-numbered particle outside the range
#pragma omp parallel for schedule(static) reduction(min                                   \
                                                    : min_x, min_y, min_z, first_outside) \
    reduction(max                                                                         \
              : max_x, max_y, max_z)
  for (int p = 0; p < particle_count; ++p) {
    NodeCoordinate base = NodeCoordinate::Zero();
    for (int axis = 0; axis < 3; ++axis) {
      const double scaled = positions[p][axis] * inverse_spacing - 0.5;
      // Also false for NaN; converting such a value to int would be undefined.
      if (!(std::abs(scaled) <= kMaxNodeCoordinate)) {
        first_outside = std::min(first_outside, p);
        continue;
      }
      base[axis] = static_cast<int>(std::floor(scaled));
    }
    const NodeCoordinate block = BlockOf(base);
    particle_base_blocks_[p] = block;
    min_x = std::min(min_x, block.x()), max_x = std::max(max_x, block.x());
    min_y = std::min(min_y, block.y()), max_y = std::max(max_y, block.y());
    min_z = std::min(min_z, block.z()), max_z = std::max(max_z, block.z());
  }
  if (first_outside < particle_count) {
    std::ostringstream message;
    message.precision(6);
    message << "particle " << first_outside << " at (" << positions[first_outside].transpose()
            << ") m is not finite or lies beyond the grid's range of " << kMaxNodeCoordinate << " cells of " << spacing_
            << " m from the origin";
    throw ParticleOutsideGrid(message.str());
  }

  // 2. Sort the particles by block key, stable in particle index so the order is unique;
  //    particle blocks are the runs of equal keys.
  sorted_particles_.resize(particle_count);
  particle_block_coordinates_.clear();
  particle_block_begin_.clear();
  const NodeCoordinate box_min(min_x, min_y, min_z);
  const NodeCoordinate box_extent(max_x - min_x + 1, max_y - min_y + 1, max_z - min_z + 1);
  const double box_blocks = static_cast<double>(box_extent.x()) * box_extent.y() * box_extent.z();
  if (box_blocks <= kDenseSortBlocksPerParticle * particle_count + kDenseSortMinimumBlocks) {
    // Counting sort over the dense bounding box of the particle blocks: O(particles + box)
    // instead of a comparison sort. Box cells are numbered x fastest, then y, then z, the
    // order of the block keys (PackBlock), and each cell is filled in particle order, so
    // the result is the one the stable sort below gives. Each thread counts and places the
    // particles of one contiguous range; its slots in a cell follow those of the ranges
    // before it, which keeps the particle order whatever the number of threads.
    const int cell_count = static_cast<int>(box_blocks);
    particle_box_cells_.resize(particle_count);
    // The ranges follow the team's actual size: OMP_THREAD_LIMIT below the requested count
    // (or set without OMP_NUM_THREADS) gives fewer threads than omp_get_max_threads(), and
    // ranges for threads that never start would leave their particles unsorted.
    int thread_count = 1;
#pragma omp parallel
    {
#pragma omp single
      {
        thread_count = omp_get_num_threads();
        box_particle_counts_.assign(static_cast<std::size_t>(cell_count) * thread_count, 0);
      }  // implicit barrier
      const int thread = omp_get_thread_num();
      const int range_begin = static_cast<int>(static_cast<std::int64_t>(particle_count) * thread / thread_count);
      const int range_end = static_cast<int>(static_cast<std::int64_t>(particle_count) * (thread + 1) / thread_count);
      // data() + offset: with no particles the vector is empty, and indexing it is undefined.
      int* const slots = box_particle_counts_.data() + static_cast<std::size_t>(thread) * cell_count;
      for (int p = range_begin; p < range_end; ++p) {
        const NodeCoordinate offset = particle_base_blocks_[p] - box_min;
        particle_box_cells_[p] = offset.x() + box_extent.x() * (offset.y() + box_extent.y() * offset.z());
        ++slots[particle_box_cells_[p]];
      }
#pragma omp barrier
#pragma omp single
      {
        // Counts become first slots: cell by cell, range by range.
        int next_slot = 0;
        for (int cell = 0; cell < cell_count; ++cell) {
          const int cell_begin = next_slot;
          for (int t = 0; t < thread_count; ++t) {
            int& slot = box_particle_counts_[static_cast<std::size_t>(t) * cell_count + cell];
            const int count = slot;
            slot = next_slot;
            next_slot += count;
          }
          if (next_slot == cell_begin) continue;
          const int x = cell % box_extent.x(), y = (cell / box_extent.x()) % box_extent.y();
          const int z = cell / (box_extent.x() * box_extent.y());
          particle_block_coordinates_.push_back(box_min + NodeCoordinate(x, y, z));
          particle_block_begin_.push_back(cell_begin);
        }
      }  // implicit barrier
      for (int p = range_begin; p < range_end; ++p) sorted_particles_[slots[particle_box_cells_[p]]++] = p;
    }
  } else {
    // Particles spread far apart (a box much larger than the particle count): comparison
    // sort of the block keys.
    std::vector<std::uint64_t> particle_keys(particle_count);
    for (int p = 0; p < particle_count; ++p) {
      particle_keys[p] = PackBlock(particle_base_blocks_[p]);
      sorted_particles_[p] = p;
    }
    std::stable_sort(sorted_particles_.begin(), sorted_particles_.end(),
                     [&](int a, int b) { return particle_keys[a] < particle_keys[b]; });
    for (int s = 0; s < particle_count; ++s) {
      const int p = sorted_particles_[s];
      if (s == 0 || particle_keys[p] != particle_keys[sorted_particles_[s - 1]]) {
        particle_block_coordinates_.push_back(particle_base_blocks_[p]);
        particle_block_begin_.push_back(s);
      }
    }
  }
  particle_block_begin_.push_back(particle_count);

  // 3. Allocated blocks: every particle block and its +1 neighbours along each axis.
  const auto unpack = [](std::uint64_t key) {
    const auto field = [&](int shift) {
      return static_cast<int>(static_cast<std::int64_t>((key >> shift) & ((std::uint64_t{1} << kCoordinateBits) - 1)) -
                              kCoordinateBias);
    };
    return NodeCoordinate(field(0), field(kCoordinateBits), field(2 * kCoordinateBits));
  };
  std::vector<std::uint64_t> allocated_keys;
  allocated_keys.reserve(particle_block_coordinates_.size() * 8);
  for (const NodeCoordinate& block : particle_block_coordinates_) {
    for (int dz = 0; dz < 2; ++dz)
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) allocated_keys.push_back(PackBlock(block + NodeCoordinate(dx, dy, dz)));
  }
  std::sort(allocated_keys.begin(), allocated_keys.end());
  allocated_keys.erase(std::unique(allocated_keys.begin(), allocated_keys.end()), allocated_keys.end());
  block_coordinates_.resize(allocated_keys.size());
  block_index_.clear();
  block_index_.reserve(allocated_keys.size() * 2);
  for (int k = 0; k < static_cast<int>(allocated_keys.size()); ++k) {
    block_coordinates_[k] = unpack(allocated_keys[k]);
    block_index_.emplace(allocated_keys[k], k);
  }

  // 4. Colour the particle blocks and cache their neighbouring allocated blocks.
  for (auto& blocks : blocks_of_color_) blocks.clear();
  particle_block_neighbors_.resize(particle_block_coordinates_.size());
  for (int k = 0; k < static_cast<int>(particle_block_coordinates_.size()); ++k) {
    const NodeCoordinate& block = particle_block_coordinates_[k];
    for (int neighbor = 0; neighbor < 8; ++neighbor) {
      particle_block_neighbors_[k][neighbor] =
          FindBlock(block + NodeCoordinate(neighbor & 1, (neighbor >> 1) & 1, (neighbor >> 2) & 1));
    }
    const int color = (block.x() & 1) + 2 * (block.y() & 1) + 4 * (block.z() & 1);
    blocks_of_color_[color].push_back(k);
  }
  // The same relation seen from the allocated blocks: block B + d has B as source d.
  halo_sources_.assign(block_coordinates_.size(), std::array<int, 8>{-1, -1, -1, -1, -1, -1, -1, -1});
  for (int k = 0; k < static_cast<int>(particle_block_coordinates_.size()); ++k) {
    for (int d = 0; d < 8; ++d) halo_sources_[particle_block_neighbors_[k][d]][d] = k;
  }

  // 5. Zero the node fields.
  const int node_count = num_nodes();
  mass.assign(node_count, 0.0);
  momentum.assign(node_count, Vector3::Zero());
  velocity.assign(node_count, Vector3::Zero());
}

}  // namespace contactlab::mpm
