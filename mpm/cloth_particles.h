#pragma once
// A codimensional cloth among the MPM particles ([jiang2017cloth]; spec-sap-qn §2.5): a vertex
// particle per mesh vertex and a face particle per triangle (mpm/cloth_mesh.h), and what the
// shared transfers do with them.
//
// The energy of the cloth is Σ_triangles V Ψ(F) with V = A t (mpm/cloth_mesh.h) and F the face
// particle's deformation gradient: its in-plane columns are the mesh's, its third column the
// layer's direction d₃. Over a step of Δt, with vertex velocities u_k and the face's
// velocity gradient C (MLS, as every particle's),
//   F(u, C) = F + Δt Σ_k u_k b_kᵀ + Δt (C d₃) e₃ᵀ,   b_k = (S D_m⁻¹)ᵀ row k, padded with 0,
// S = [[−1, −1], [1, 0], [0, 1]] (the edges' incidence). So
// - an explicit step puts the force f_k = −Σ V P b_k on each vertex (its share of the in-plane
//   columns, mpm::InPlaneVertexForces) and the face's stress through the grid as an MLS
//   Kirchhoff-like stress V P e₃ d₃ᵀ in place of a solid's V P Fᵀ;
// - an implicit step differentiates the same F through u_k = Σ_i w_i(x_k) v_i and
//   C d₃ = Σ_i v_i (w_ip D⁻¹ (x_i − x_p)·d₃) (dynamics::ImplicitMpm).
// After the grid-to-particle transfer the face's in-plane columns are recomputed from the
// moved vertices, its position is its vertices' mean ([jiang2017cloth]), and the return mapping
// (mpm::ClothModel::UpdateState) acts on d₃.
#include <array>
#include <vector>

#include "mpm/cloth_mesh.h"
#include "mpm/material.h"
#include "mpm/particles.h"

namespace contactlab::mpm {

// Where a cloth's particles landed in the arrays.
struct ClothRange {
  int first_vertex_particle = 0;  // vertex v of the mesh is particle first_vertex_particle + v
  int first_face_particle = 0;    // triangle e of the mesh is particle first_face_particle + e
  int first_face = 0;             // and entry first_face + e of Particles::cloth_faces
};

// Appends the particles of `mesh` at thickness t [m] of material `material` (its density gives
// the masses), at rest positions moving with `velocity`: a quarter of each triangle's A t to its
// face particle and to each of its vertices. Throws std::invalid_argument for a material that is
// not "cloth", a thickness that is not positive or a mesh DiscretizeCloth refuses.
ClothRange AddCloth(const ClothMesh& mesh, double thickness, int material, const std::vector<Material>& materials,
                    const Vector3& velocity, Particles& particles);

// The incidence rows b_k (k = 0, 1, 2) of a triangle: F's in-plane columns are Σ_k x_k b_kᵀ
// (third entry 0).
std::array<Vector3, 3> ClothVertexDirections(const Eigen::Matrix2d& rest_inverse);

// The face deformation gradient at the current vertex positions, with the face's stored d₃.
Matrix3 ClothFaceDeformation(const Particles& particles, int face);

// What the explicit particle-to-grid transfer adds for the cloth at the particles' state:
// per particle the force on a free vertex [N] (f_k above; zero for other particles), and per
// face particle V P e₃ d₃ᵀ [N m] (zero for other particles). Both sized to the particles.
struct ClothLoads {
  std::vector<Vector3> vertex_force;
  std::vector<Matrix3> face_stress;
};
void ComputeClothLoads(const Particles& particles, const std::vector<Material>& materials, ClothLoads& loads);

// After the grid-to-particle transfer of a step of dt [s]: pinned vertices move at their
// velocity, every vertex keeps F = I, each face takes its in-plane columns from its vertices
// and its vertices' mean position. A face keeps the velocity and C it gathered from the grid
// like any particle (the authors' code, spec-sap-qn §2.5, also averages the vertices'
// velocities, which would change the cloth's momentum), so the transfer conserves momentum.
void FinishClothParticles(double dt, Particles& particles);

// Per pin: the force it exerts on the free cloth at the particles' state [N], −Σ f_k over its
// vertices (f_k: the in-plane elastic force of the vertex's triangles, −∂E/∂x_k; the forces of a
// triangle sum to zero, so the free vertices receive what the pinned ones would).
std::vector<Vector3> ClothPinForces(const Particles& particles, const std::vector<Material>& materials);

// At the start of a step at `time` [s]: each pin that holds at `time` (ClothPin::HoldsAt) sets
// its vertices' velocity to its current segment's; the vertices of the others go to the grid.
void ApplyClothPins(double time, Particles& particles);

}  // namespace contactlab::mpm
