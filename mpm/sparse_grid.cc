#include "mpm/sparse_grid.h"

#include <algorithm>
#include <cmath>

namespace contactlab::mpm {
namespace {

constexpr int kCoordinateBits = 21;
constexpr std::int64_t kCoordinateBias = std::int64_t{1} << (kCoordinateBits - 1);

int LocalIndex(const NodeCoordinate& node) {
  return (node.x() & 3) + SparseGrid::kBlockWidth * ((node.y() & 3) + SparseGrid::kBlockWidth * (node.z() & 3));
}

}  // namespace

SparseGrid::SparseGrid(double spacing) : spacing_(spacing) {}

std::uint64_t SparseGrid::PackBlock(const NodeCoordinate& block) {
  // Biased 21-bit fields, z major: sorting keys sorts blocks lexicographically by (z, y, x).
  const auto field = [](int value) {
    return static_cast<std::uint64_t>(value + kCoordinateBias) & ((std::uint64_t{1} << kCoordinateBits) - 1);
  };
  return (field(block.z()) << (2 * kCoordinateBits)) | (field(block.y()) << kCoordinateBits) | field(block.x());
}

int SparseGrid::FindBlock(const NodeCoordinate& block) const {
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

void SparseGrid::Rebuild(const std::vector<Vector3>& positions) {
  const int particle_count = static_cast<int>(positions.size());

  // 1. Block key of each particle's base node.
  std::vector<std::uint64_t> particle_keys(particle_count);
  const double inverse_spacing = 1.0 / spacing_;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < particle_count; ++p) {
    NodeCoordinate base;
    for (int axis = 0; axis < 3; ++axis) {
      base[axis] = static_cast<int>(std::floor(positions[p][axis] * inverse_spacing - 0.5));
    }
    particle_keys[p] = PackBlock(BlockOf(base));
  }

  // 2. Sort particles by block key (stable in particle index, so the order is unique).
  sorted_particles_.resize(particle_count);
  for (int p = 0; p < particle_count; ++p) sorted_particles_[p] = p;
  std::stable_sort(sorted_particles_.begin(), sorted_particles_.end(),
                   [&](int a, int b) { return particle_keys[a] < particle_keys[b]; });

  // 3. Particle blocks: runs of equal keys in the sorted order.
  std::vector<std::uint64_t> particle_block_keys;
  particle_block_begin_.clear();
  for (int s = 0; s < particle_count; ++s) {
    const std::uint64_t key = particle_keys[sorted_particles_[s]];
    if (particle_block_keys.empty() || particle_block_keys.back() != key) {
      particle_block_keys.push_back(key);
      particle_block_begin_.push_back(s);
    }
  }
  particle_block_begin_.push_back(particle_count);

  // 4. Allocated blocks: every particle block and its +1 neighbours along each axis.
  const auto unpack = [](std::uint64_t key) {
    const auto field = [&](int shift) {
      return static_cast<int>(static_cast<std::int64_t>((key >> shift) & ((std::uint64_t{1} << kCoordinateBits) - 1)) -
                              kCoordinateBias);
    };
    return NodeCoordinate(field(0), field(kCoordinateBits), field(2 * kCoordinateBits));
  };
  std::vector<std::uint64_t> allocated_keys;
  allocated_keys.reserve(particle_block_keys.size() * 8);
  for (const std::uint64_t key : particle_block_keys) {
    const NodeCoordinate block = unpack(key);
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

  // 5. Colour the particle blocks and cache their neighbouring allocated blocks.
  for (auto& blocks : blocks_of_color_) blocks.clear();
  particle_block_neighbors_.resize(particle_block_keys.size());
  for (int k = 0; k < static_cast<int>(particle_block_keys.size()); ++k) {
    const NodeCoordinate block = unpack(particle_block_keys[k]);
    for (int neighbor = 0; neighbor < 8; ++neighbor) {
      particle_block_neighbors_[k][neighbor] =
          FindBlock(block + NodeCoordinate(neighbor & 1, (neighbor >> 1) & 1, (neighbor >> 2) & 1));
    }
    const int color = (block.x() & 1) + 2 * (block.y() & 1) + 4 * (block.z() & 1);
    blocks_of_color_[color].push_back(k);
  }

  // 6. Zero the node fields.
  const int node_count = num_nodes();
  mass.assign(node_count, 0.0);
  momentum.assign(node_count, Vector3::Zero());
  velocity.assign(node_count, Vector3::Zero());
}

}  // namespace contactlab::mpm
