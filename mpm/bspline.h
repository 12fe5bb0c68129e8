#pragma once
// Quadratic B-spline interpolation between particles and grid nodes
// (spec-penalty-hybrid §1.2, spec-sap-qn §0). Node i sits at x_i = h·i. Per axis, a particle
// at ξ = x/h has base node i₀ = ⌊ξ − ½⌋ and fractional offset f = ξ − i₀ ∈ [½, 3/2); its
// three nodes i₀, i₀+1, i₀+2 carry the weights
//   w₀ = ½(3/2 − f)²,  w₁ = ¾ − (f − 1)²,  w₂ = ½(f − ½)²,
// whose sum is 1 and whose first moment about the particle is 0. The 3-D weight of node
// i₀ + (a, b, c) is the product of the three axis weights.
#include <cmath>

#include <Eigen/Core>

#include "mpm/types.h"

namespace contactlab::mpm {

using NodeCoordinate = Eigen::Vector3i;

struct QuadraticStencil {
  NodeCoordinate base_node;  // i₀ per axis
  double weight[3][3];       // weight[axis][offset]
  double gradient[3][3];     // d weight[axis][offset] / d x_p[axis]  [1/m]
  Vector3 base_offset;       // x_{i₀} − x_p [m]

  double Weight(int a, int b, int c) const { return weight[0][a] * weight[1][b] * weight[2][c]; }
  // ∇w_ip with respect to the particle position [1/m] (product rule).
  Vector3 WeightGradient(int a, int b, int c) const {
    return Vector3(gradient[0][a] * weight[1][b] * weight[2][c], weight[0][a] * gradient[1][b] * weight[2][c],
                   weight[0][a] * weight[1][b] * gradient[2][c]);
  }
  // x_i − x_p for node i₀ + (a, b, c) [m].
  Vector3 NodeOffset(int a, int b, int c, double spacing) const { return base_offset + spacing * Vector3(a, b, c); }
};

inline QuadraticStencil ComputeQuadraticStencil(const Vector3& position, double spacing) {
  QuadraticStencil stencil;
  const double inverse_spacing = 1.0 / spacing;
  for (int axis = 0; axis < 3; ++axis) {
    const double scaled = position[axis] * inverse_spacing;
    const int base = static_cast<int>(std::floor(scaled - 0.5));
    const double f = scaled - base;
    stencil.base_node[axis] = base;
    stencil.base_offset[axis] = base * spacing - position[axis];
    stencil.weight[axis][0] = 0.5 * (1.5 - f) * (1.5 - f);
    stencil.weight[axis][1] = 0.75 - (f - 1.0) * (f - 1.0);
    stencil.weight[axis][2] = 0.5 * (f - 0.5) * (f - 0.5);
    stencil.gradient[axis][0] = (f - 1.5) * inverse_spacing;
    stencil.gradient[axis][1] = -2.0 * (f - 1.0) * inverse_spacing;
    stencil.gradient[axis][2] = (f - 0.5) * inverse_spacing;
  }
  return stencil;
}

// D_p = Σ_i w_ip (x_i − x_p)(x_i − x_p)ᵀ = h²/4 · I for quadratic B-splines, so the APIC
// and MLS transfers use D_p⁻¹ = 4/h².
inline double ApicInverseInertiaScale(double spacing) {
  return 4.0 / (spacing * spacing);
}

}  // namespace contactlab::mpm
