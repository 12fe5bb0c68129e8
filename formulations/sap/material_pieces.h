#pragma once
// The pieces of MPM material in one implicit step, for the lower bound of SAP's Delassus scale
// (sap.delassus_estimate = bounded_block_diagonal, sap_formulation.cc).
//
// A piece is a connected component of the node graph of A_MPM = M + Δt² K (two nodes are
// joined when a particle's stencil covers both). A uniform translation t of a piece changes
// no deformation gradient, so A t = M t and tᵀ A t = M_piece |t|² per axis. For any contact
// Jacobian row x on that piece the variational form xᵀ A⁻¹ x = max_y (2 xᵀy − yᵀA y), with y
// restricted to the piece's translations, gives
//   x_c A⁻¹ x_cᵀ ≥ (Σ_i w_ip)² / M_piece = 1 / M_piece,
// since the quadratic B-spline weights sum to one: the exact MPM part of the Delassus scale
// is never below 1/M_piece, however stiff the material.
#include <vector>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/linear_algebra/sparse_cholesky.h"

namespace contactlab::sap {

// Per active node of `implicit_mpm`: the mass of its piece [kg], from the pattern of
// `mpm_matrix` (A_MPM, 3 unknowns per active node, both triangles). A piece with a node that
// a grid wall holds (ImplicitMpm::free_components) is not free to translate: its mass is
// +infinity, so its bound is 0.
std::vector<double> MaterialPieceMasses(const linear_algebra::SparseMatrix& mpm_matrix,
                                        const dynamics::ImplicitMpm& implicit_mpm);

}  // namespace contactlab::sap
