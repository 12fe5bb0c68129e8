#pragma once
// Particle–grid transfers shared by every formulation: APIC particle-to-grid (P2G) of mass
// and momentum with the optional MLS-MPM stress impulse, the grid velocity update, APIC
// grid-to-particle (G2P) with the deformation-gradient update and advection, and the
// end-of-step constitutive update (plastic return mapping, lagged reference rotation).
// P2G scatters colour by colour (see SparseGrid) and G2P gathers in parallel; both give the
// same bits for any number of threads.
#include <vector>

#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/sparse_grid.h"

namespace contactlab::mpm {

// Rebuilds `grid` around the particles and scatters
//   m_i = Σ_p w_ip m_p,
//   (m v)_i = Σ_p w_ip [m_p v_p + (m_p C_p − stress_dt · D⁻¹ V_p⁰ P_p F_pᵀ)(x_i − x_p)]
// (APIC momentum, spec-penalty-hybrid §1.3; the stress term is the MLS-MPM force impulse of
// Hu et al. 2018, spec-penalty-hybrid §1.12, with D⁻¹ = 4/h²). stress_dt = 0 transfers
// momentum only (implicit solvers add their own forces). A cloth (mpm/cloth_particles.h) adds
// its vertex forces as impulses and its faces' stress across the layer in place of the
// stress term; pinned cloth vertices add nothing.
void ParticleToGrid(const Particles& particles, const std::vector<Material>& materials, double stress_dt,
                    SparseGrid& grid);

// v_i = (m v)_i / m_i + Δt g on nodes with mass; zero elsewhere.
void ComputeGridVelocity(const Vector3& gravity, double dt, SparseGrid& grid);

// Gathers v_p = Σ w_ip v_i and C_p = D⁻¹ Σ w_ip v_i (x_i − x_p)ᵀ (APIC,
// spec-penalty-hybrid §1.7), then F^E ← (I + Δt C_p) F^E (MLS form of §1.8) and
// x_p ← x_p + Δt v_p. The grid must still be the one built from the current positions.
// Then a cloth's particles are finished (mpm::FinishClothParticles): pins move their vertices,
// faces follow their vertices.
void GridToParticle(const SparseGrid& grid, double dt, Particles& particles);

// End-of-step update of the constitutive state: the von Mises return mapping for plastic
// linear-corotated materials ([zong2024convex] Alg. 1) with F^P ← (F̃^E)⁻¹ F^E_trial F^P, and the
// reference rotation R0 ← polar rotation of F^E for the next step ([zong2024convex] eq. 19).
void UpdateConstitutiveState(const std::vector<Material>& materials, Particles& particles);

// The per-block kernels of ParticleToGrid, GridToParticle and UpdateConstitutiveState are
// built twice: for x86-64 CPUs with AVX2 and FMA ("avx2_fma"), chosen at run time where the
// CPU has them, and for baseline x86-64 ("baseline"). The builds differ by round-off (fused
// multiply–adds); on one machine every thread count takes the same build. Which one runs:
const char* TransferKernelBuild();
// Makes every later transfer take the baseline build (true) or the automatic choice
// (false), for tests that compare the two builds.
void ForceBaselineTransferKernels(bool forced);

}  // namespace contactlab::mpm
