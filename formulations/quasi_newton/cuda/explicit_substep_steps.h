#pragma once
// Per-thread work of the device explicit MPM substep (explicit_substep.cu), as
// __host__ __device__ functions on plain array views, following mpm/transfers.cc term by term:
//   P2G     one particle: quadratic B-spline weights, the linear corotated first Piola stress
//           about the lagged rotation R0 ([zong2024convex] eq. 19–21), the APIC + MLS affine matrix
//           m C − δt (4/h²) V⁰ P Fᵀ, and its 27 node contributions w (m, m v + A (x_i − x_p));
//   grid    v_i = (m v)_i / m_i + δt g;
//   G2P     v_p = Σ w v_i, C_p = (4/h²) Σ w v_i (x_i − x_p)ᵀ, F ← (I + δt C) F, x ← x + δt v,
//           then the constitutive update of device_constitutive.h (R0, von Mises plasticity).
// The grid is a dense box of nodes ([yu2025async]'s authors' code uses a dense 128³ grid).
// emulated_explicit_substep.h runs these serially on the host for tests without a GPU.
//
// Arrays are structures of arrays: component k of item i at [k * count + i]; 3 × 3 matrices
// are stored row-major (entry (r, c) is component 3 r + c).
#include "formulations/quasi_newton/cuda/device_math.h"

namespace contactlab::quasi_newton::gpu {

// Particles in device (sorted) order.
struct ParticleView {
  int count;
  double* position;                      // [3][n] x_p [m]
  double* velocity;                      // [3][n] v_p [m/s]
  double* affine_velocity;               // [9][n] C_p [1/s]
  double* deformation_gradient;          // [9][n] F^E [-]
  double* reference_rotation;            // [9][n] R0 [-]
  double* plastic_deformation_gradient;  // [9][n] F^P [-]
  const double* mass;                    // [n] m_p [kg]
  const double* initial_volume;          // [n] V_p⁰ [m³]
  const int* material;                   // [n] index into the material tables
};

// Linear corotated constants per material.
struct MaterialView {
  const double* shear_modulus;         // μ_L [Pa]
  const double* first_lame_parameter;  // λ [Pa]
  const double* yield_stress;          // von Mises η [Pa]; 0: elastic
};

// A dense box of grid nodes x_i = h i, i = origin + (0 … size − 1) per axis; node (i, j, k)
// at index (i − o_x) + size_x ((j − o_y) + size_y (k − o_z)).
struct DenseGridView {
  int origin[3];
  int size[3];
  double spacing;    // h [m]
  double* mass;      // [N]    m_i [kg]
  double* momentum;  // [3][N] (m v)_i [kg m/s]
  double* velocity;  // [3][N] v_i [m/s]

  CONTACTLAB_HOST_DEVICE int node_count() const { return size[0] * size[1] * size[2]; }
  // Index of node base + (a, b, c), or −1 outside the box.
  CONTACTLAB_HOST_DEVICE int Index(const int (&base)[3], int a, int b, int c) const {
    const int i = base[0] + a - origin[0];
    const int j = base[1] + b - origin[1];
    const int k = base[2] + c - origin[2];
    if (i < 0 || j < 0 || k < 0 || i >= size[0] || j >= size[1] || k >= size[2]) return -1;
    return i + size[0] * (j + size[1] * k);
  }
  // Whether the whole 27-node stencil of `base` lies in the box.
  CONTACTLAB_HOST_DEVICE bool ContainsStencil(const int (&base)[3]) const {
    for (int axis = 0; axis < 3; ++axis) {
      if (base[axis] < origin[axis] || base[axis] + 2 >= origin[axis] + size[axis]) return false;
    }
    return true;
  }
};

CONTACTLAB_HOST_DEVICE inline Mat3 LoadMatrix(const double* a, int count, int i) {
  Mat3 m;
  for (int k = 0; k < 9; ++k) m.m[k / 3][k % 3] = a[k * count + i];
  return m;
}
CONTACTLAB_HOST_DEVICE inline void StoreMatrix(double* a, int count, int i, const Mat3& m) {
  for (int k = 0; k < 9; ++k) a[k * count + i] = m.m[k / 3][k % 3];
}
CONTACTLAB_HOST_DEVICE inline Vec3 LoadPoint(const double* a, int count, int i) {
  return {a[i], a[count + i], a[2 * count + i]};
}
CONTACTLAB_HOST_DEVICE inline void StorePoint(double* a, int count, int i, const Vec3& v) {
  a[i] = v.x;
  a[count + i] = v.y;
  a[2 * count + i] = v.z;
}
CONTACTLAB_HOST_DEVICE inline Mat3 MatrixProduct(const Mat3& a, const Mat3& b) {
  Mat3 c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
  }
  return c;
}
CONTACTLAB_HOST_DEVICE inline Mat3 Transposed(const Mat3& a) {
  Mat3 t;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) t.m[i][j] = a.m[j][i];
  }
  return t;
}

// Quadratic B-spline stencil of a particle (mpm/bspline.h): base node ⌊x/h − ½⌋ per axis,
// weights w[axis][offset] and x_{base} − x_p.
struct DeviceStencil {
  int base[3];
  double weight[3][3];
  double base_offset[3];
};

CONTACTLAB_HOST_DEVICE inline DeviceStencil ComputeStencil(const Vec3& position, double spacing) {
  DeviceStencil stencil;
  const double inverse_spacing = 1.0 / spacing;
  const double coordinates[3] = {position.x, position.y, position.z};
  for (int axis = 0; axis < 3; ++axis) {
    const double scaled = coordinates[axis] * inverse_spacing;
    const int base = static_cast<int>(floor(scaled - 0.5));
    const double f = scaled - base;
    stencil.base[axis] = base;
    stencil.base_offset[axis] = base * spacing - coordinates[axis];
    stencil.weight[axis][0] = 0.5 * (1.5 - f) * (1.5 - f);
    stencil.weight[axis][1] = 0.75 - (f - 1.0) * (f - 1.0);
    stencil.weight[axis][2] = 0.5 * (f - 0.5) * (f - 0.5);
  }
  return stencil;
}

// P = R0 (2 μ_L Ê + λ tr(Ê) I), Ê = ½(R0ᵀF + FᵀR0) − I ([zong2024convex] eq. 19–21; linear_corotated.cc).
CONTACTLAB_HOST_DEVICE inline Mat3 LinearCorotatedStress(const Mat3& deformation_gradient, const Mat3& rotation,
                                                         double shear_modulus, double first_lame_parameter) {
  const Mat3 unrotated = MatrixProduct(Transposed(rotation), deformation_gradient);
  Mat3 strain;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) strain.m[i][j] = 0.5 * (unrotated.m[i][j] + unrotated.m[j][i]) - (i == j ? 1.0 : 0.0);
  }
  const double trace = strain.m[0][0] + strain.m[1][1] + strain.m[2][2];
  Mat3 scaled;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      scaled.m[i][j] = 2.0 * shear_modulus * strain.m[i][j] + (i == j ? first_lame_parameter * trace : 0.0);
    }
  }
  return MatrixProduct(rotation, scaled);
}

// What one particle scatters: node base + (a, b, c) receives
//   w (m_p, m_p v_p + A (x_i − x_p)),  A = m_p C_p − δt (4/h²) V⁰ P Fᵀ,
// with x_i − x_p = d₀ + h (a, b, c), built incrementally as in mpm::ParticleToGrid.
struct ParticleScatter {
  DeviceStencil stencil;
  double mass;
  Vec3 corner_momentum;  // m v + A d₀
  Mat3 affine_step;      // h A
};

CONTACTLAB_HOST_DEVICE inline ParticleScatter PrepareParticleScatter(const ParticleView& particles,
                                                                     const MaterialView& materials, int p,
                                                                     double spacing, double stress_dt) {
  const int n = particles.count;
  ParticleScatter scatter;
  scatter.stencil = ComputeStencil(LoadPoint(particles.position, n, p), spacing);
  scatter.mass = particles.mass[p];
  const Mat3 affine_velocity = LoadMatrix(particles.affine_velocity, n, p);
  Mat3 affine;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) affine.m[i][j] = scatter.mass * affine_velocity.m[i][j];
  }
  if (stress_dt > 0.0) {
    // MLS stress impulse (Hu et al. 2018): −δt D⁻¹ V⁰ P Fᵀ with D⁻¹ = 4/h².
    const int material = particles.material[p];
    const Mat3 deformation_gradient = LoadMatrix(particles.deformation_gradient, n, p);
    const Mat3 stress =
        LinearCorotatedStress(deformation_gradient, LoadMatrix(particles.reference_rotation, n, p),
                              materials.shear_modulus[material], materials.first_lame_parameter[material]);
    const double scale = stress_dt * (4.0 / (spacing * spacing)) * particles.initial_volume[p];
    const Mat3 impulse = MatrixProduct(stress, Transposed(deformation_gradient));
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) affine.m[i][j] -= scale * impulse.m[i][j];
    }
  }
  const Vec3 momentum = Scale(scatter.mass, LoadPoint(particles.velocity, n, p));
  const Vec3 offset{scatter.stencil.base_offset[0], scatter.stencil.base_offset[1], scatter.stencil.base_offset[2]};
  scatter.corner_momentum = Add(momentum, Multiply(affine, offset));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) scatter.affine_step.m[i][j] = spacing * affine.m[i][j];
  }
  return scatter;
}

// The four values node base + (a, b, c) receives: w m, w (m v + A (x_i − x_p)).
CONTACTLAB_HOST_DEVICE inline void ParticleScatterValues(const ParticleScatter& s, int a, int b, int c,
                                                         double (&value)[4]) {
  const double weight = s.stencil.weight[0][a] * (s.stencil.weight[1][b] * s.stencil.weight[2][c]);
  const double corner[3] = {s.corner_momentum.x, s.corner_momentum.y, s.corner_momentum.z};
  double momentum[3];
  for (int i = 0; i < 3; ++i) {
    momentum[i] = ((corner[i] + c * s.affine_step.m[i][2]) + b * s.affine_step.m[i][1]) + a * s.affine_step.m[i][0];
  }
  value[0] = weight * s.mass;
  value[1] = weight * momentum[0];
  value[2] = weight * momentum[1];
  value[3] = weight * momentum[2];
}

// v_i = (m v)_i / m_i + δt g on nodes with mass, else 0 (mpm::ComputeGridVelocity).
CONTACTLAB_HOST_DEVICE inline void GridVelocityStep(const DenseGridView& grid, int i, const Vec3& gravity, double dt) {
  const int count = grid.node_count();
  const double mass = grid.mass[i];
  Vec3 velocity;
  if (mass > 0.0) velocity = Add(Scale(1.0 / mass, LoadPoint(grid.momentum, count, i)), Scale(dt, gravity));
  StorePoint(grid.velocity, count, i, velocity);
}

// G2P of particle p (mpm::GridToParticle): v_p, C_p, F ← (I + δt C) F, x ← x + δt v.
// Returns false (and changes nothing) when the stencil leaves the grid box.
CONTACTLAB_HOST_DEVICE inline bool GridToParticleStep(const ParticleView& particles, const DenseGridView& grid, int p,
                                                      double dt) {
  const int n = particles.count;
  const int count = grid.node_count();
  const double spacing = grid.spacing;
  const Vec3 position = LoadPoint(particles.position, n, p);
  const DeviceStencil stencil = ComputeStencil(position, spacing);
  if (!grid.ContainsStencil(stencil.base)) return false;
  // Gather v_p = Σ w v_i and B_p = Σ w v_i (x_i − x_p)ᵀ row by row along x (as the CPU).
  Vec3 velocity, moment_a, moment_b, moment_c;
  for (int c = 0; c < 3; ++c) {
    for (int b = 0; b < 3; ++b) {
      const int row = grid.Index(stencil.base, 0, b, c);
      const Vec3 weighted_1 = Scale(stencil.weight[0][1], LoadPoint(grid.velocity, count, row + 1));
      const Vec3 weighted_2 = Scale(stencil.weight[0][2], LoadPoint(grid.velocity, count, row + 2));
      const Vec3 row_sum =
          Add(Add(Scale(stencil.weight[0][0], LoadPoint(grid.velocity, count, row)), weighted_1), weighted_2);
      const double weight_bc = stencil.weight[1][b] * stencil.weight[2][c];
      velocity = Add(velocity, Scale(weight_bc, row_sum));
      moment_a = Add(moment_a, Scale(weight_bc, Add(weighted_1, Scale(2.0, weighted_2))));
      moment_b = Add(moment_b, Scale(b * weight_bc, row_sum));
      moment_c = Add(moment_c, Scale(c * weight_bc, row_sum));
    }
  }
  const double inverse_inertia = 4.0 / (spacing * spacing);
  const double offset[3] = {stencil.base_offset[0], stencil.base_offset[1], stencil.base_offset[2]};
  const double v[3] = {velocity.x, velocity.y, velocity.z};
  const double columns[3][3] = {
      {moment_a.x, moment_a.y, moment_a.z}, {moment_b.x, moment_b.y, moment_b.z}, {moment_c.x, moment_c.y, moment_c.z}};
  Mat3 affine_velocity;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      affine_velocity.m[i][j] = inverse_inertia * (v[i] * offset[j] + spacing * columns[j][i]);
  }
  // F ← (I + δt C) F, x ← x + δt v.
  Mat3 update = affine_velocity;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) update.m[i][j] = (i == j ? 1.0 : 0.0) + dt * affine_velocity.m[i][j];
  }
  StoreMatrix(particles.deformation_gradient, n, p,
              MatrixProduct(update, LoadMatrix(particles.deformation_gradient, n, p)));
  StoreMatrix(particles.affine_velocity, n, p, affine_velocity);
  StorePoint(particles.velocity, n, p, velocity);
  StorePoint(particles.position, n, p, Add(position, Scale(dt, velocity)));
  return true;
}

}  // namespace contactlab::quasi_newton::gpu
