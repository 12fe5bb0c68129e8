#include "formulations/sap/material_pieces.h"

#include <limits>
#include <numeric>

namespace contactlab::sap {

std::vector<double> MaterialPieceMasses(const linear_algebra::SparseMatrix& mpm_matrix,
                                        const dynamics::ImplicitMpm& implicit_mpm) {
  // Union–find over the node pairs A couples (its x-columns are enough: A has 3 × 3 node blocks).
  const int node_count = static_cast<int>(mpm_matrix.cols() / 3);
  std::vector<int> parent(node_count);
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](int node) {
    while (parent[node] != node) node = parent[node] = parent[parent[node]];
    return node;
  };
  for (int column = 0; column < mpm_matrix.outerSize(); column += 3) {
    for (linear_algebra::SparseMatrix::InnerIterator entry(mpm_matrix, column); entry; ++entry) {
      const int a = root(static_cast<int>(entry.row()) / 3);
      const int b = root(column / 3);
      if (a != b) parent[a] = b;
    }
  }
  std::vector<double> piece_mass(node_count, 0.0);
  const Eigen::VectorXd& node_masses = implicit_mpm.node_masses();
  for (int node = 0; node < node_count; ++node) {
    const bool held = implicit_mpm.free_components(node).minCoeff() < 1.0;
    piece_mass[root(node)] += held ? std::numeric_limits<double>::infinity() : node_masses[node];
  }
  for (int node = 0; node < node_count; ++node) piece_mass[node] = piece_mass[root(node)];
  return piece_mass;
}

}  // namespace contactlab::sap
