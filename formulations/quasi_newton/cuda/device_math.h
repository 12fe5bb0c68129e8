#pragma once
// Small fixed-size double-precision algebra for the CUDA backend of the quasi-Newton solver.
// Plain C++: nvcc compiles it as __host__ __device__ code, g++ as ordinary inline host code,
// so host tests exercise exactly the arithmetic the kernels run (spec-sap-qn §6).
#include <math.h>

#if defined(__CUDACC__)
#define CONTACTLAB_HOST_DEVICE __host__ __device__
#else
#define CONTACTLAB_HOST_DEVICE
#endif

namespace contactlab::quasi_newton::gpu {

struct Vec3 {
  double x = 0.0, y = 0.0, z = 0.0;
};

// Symmetric 3 × 3 matrix, upper triangle (xx, xy, xz, yy, yz, zz).
struct Sym3 {
  double xx = 0.0, xy = 0.0, xz = 0.0, yy = 0.0, yz = 0.0, zz = 0.0;
};

// General 3 × 3 matrix, row-major: m[row][column]. Holds R_CW, whose rows are t̂₁, t̂₂, n̂.
struct Mat3 {
  double m[3][3] = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
};

CONTACTLAB_HOST_DEVICE inline Vec3 Add(const Vec3& a, const Vec3& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
CONTACTLAB_HOST_DEVICE inline Vec3 Subtract(const Vec3& a, const Vec3& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
CONTACTLAB_HOST_DEVICE inline Vec3 Scale(double s, const Vec3& a) {
  return {s * a.x, s * a.y, s * a.z};
}
CONTACTLAB_HOST_DEVICE inline double Dot(const Vec3& a, const Vec3& b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
CONTACTLAB_HOST_DEVICE inline double SquaredNorm(const Vec3& a) {
  return Dot(a, a);
}

// R u.
CONTACTLAB_HOST_DEVICE inline Vec3 Multiply(const Mat3& r, const Vec3& u) {
  return {r.m[0][0] * u.x + r.m[0][1] * u.y + r.m[0][2] * u.z, r.m[1][0] * u.x + r.m[1][1] * u.y + r.m[1][2] * u.z,
          r.m[2][0] * u.x + r.m[2][1] * u.y + r.m[2][2] * u.z};
}

// Rᵀ g: a contact-frame vector in world (R = R_CW gives R_WC g).
CONTACTLAB_HOST_DEVICE inline Vec3 MultiplyTransposed(const Mat3& r, const Vec3& g) {
  return {r.m[0][0] * g.x + r.m[1][0] * g.y + r.m[2][0] * g.z, r.m[0][1] * g.x + r.m[1][1] * g.y + r.m[2][1] * g.z,
          r.m[0][2] * g.x + r.m[1][2] * g.y + r.m[2][2] * g.z};
}

// G u for symmetric G.
CONTACTLAB_HOST_DEVICE inline Vec3 Multiply(const Sym3& g, const Vec3& u) {
  return {g.xx * u.x + g.xy * u.y + g.xz * u.z, g.xy * u.x + g.yy * u.y + g.yz * u.z,
          g.xz * u.x + g.yz * u.y + g.zz * u.z};
}

// Rᵀ G R: a contact-frame Hessian in world (eq. 10 block R_WC G R_CW for R = R_CW).
CONTACTLAB_HOST_DEVICE inline Sym3 RotateToWorld(const Mat3& r, const Sym3& g) {
  // Columns of G R, then Rᵀ (G R); only the upper triangle is formed.
  double gr[3][3];
  for (int column = 0; column < 3; ++column) {
    const Vec3 r_column{r.m[0][column], r.m[1][column], r.m[2][column]};
    const Vec3 product = Multiply(g, r_column);
    gr[0][column] = product.x;
    gr[1][column] = product.y;
    gr[2][column] = product.z;
  }
  double upper[6];
  const int rows[6] = {0, 0, 0, 1, 1, 2};
  const int columns[6] = {0, 1, 2, 1, 2, 2};
  for (int k = 0; k < 6; ++k) {
    const int i = rows[k];
    const int j = columns[k];
    upper[k] = r.m[0][i] * gr[0][j] + r.m[1][i] * gr[1][j] + r.m[2][i] * gr[2][j];
  }
  return {upper[0], upper[1], upper[2], upper[3], upper[4], upper[5]};
}

// x = H⁻¹ b by a 3 × 3 Cholesky factorization H = L Lᵀ (K5; H symmetric positive definite).
CONTACTLAB_HOST_DEVICE inline Vec3 CholeskySolve(const Sym3& h, const Vec3& b) {
  const double l00 = sqrt(h.xx);
  const double l10 = h.xy / l00;
  const double l20 = h.xz / l00;
  const double l11 = sqrt(h.yy - l10 * l10);
  const double l21 = (h.yz - l20 * l10) / l11;
  const double l22 = sqrt(h.zz - l20 * l20 - l21 * l21);
  // L y = b, then Lᵀ x = y.
  const double y0 = b.x / l00;
  const double y1 = (b.y - l10 * y0) / l11;
  const double y2 = (b.z - l20 * y0 - l21 * y1) / l22;
  const double x2 = y2 / l22;
  const double x1 = (y1 - l21 * x2) / l11;
  const double x0 = (y0 - l10 * x1 - l20 * x2) / l00;
  return {x0, x1, x2};
}

}  // namespace contactlab::quasi_newton::gpu
