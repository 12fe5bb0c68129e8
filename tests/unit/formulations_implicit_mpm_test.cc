// The implicit MPM free motion (spec-sap-qn §1.1.3, §5 Z2–Z3): energy, gradient and
// Hessian against automatic differentiation of an independent re-implementation, the
// closed-form linear corotated tangent, PSD projection, the Newton solve, conservation of
// momentum, a velocity-independent sparsity pattern and thread-count independence.
// Eigen eigensolvers first, with the shared warning workaround.
#include "formulations/linear_algebra/eigenvalues.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include <ceres/jet.h>
#include <gtest/gtest.h>

#include "formulations/dynamics/implicit_mpm.h"
#include "formulations/linear_algebra/sparse_cholesky.h"
#include "mpm/bspline.h"
#include "mpm/constitutive/linear_corotated.h"
#include "mpm/material.h"
#include "mpm/particles.h"
#include "mpm/polar_decomposition.h"
#include "mpm/sampling.h"
#include "mpm/sparse_grid.h"
#include "mpm/transfers.h"

namespace contactlab::dynamics {
namespace {

using mpm::Matrix9;

template <typename T>
using Matrix3T = Eigen::Matrix<T, 3, 3>;
template <typename T>
using Vector3T = Eigen::Matrix<T, 3, 1>;

// ---- Scenes ----------------------------------------------------------------------------

// Particles, materials and the grid of one step, and the implicit problem built on them.
struct Scene {
  mpm::Particles particles;
  std::vector<mpm::Material> materials;
  mpm::SparseGrid grid{0.1};
  Vector3 gravity = Vector3(0.0, 0.0, -9.81);
  double dt = 1e-2;
  ImplicitMpm problem;

  // P2G without stress (masses and APIC momenta), then the implicit problem.
  void Prepare() {
    mpm::ParticleToGrid(particles, materials, /*stress_dt=*/0.0, grid);
    problem.Setup(grid, particles, materials, gravity, dt);
  }
};

Vector3 RandomVector(std::mt19937_64& generator, double scale) {
  std::uniform_real_distribution<double> uniform(-scale, scale);
  return Vector3(uniform(generator), uniform(generator), uniform(generator));
}

Matrix3 RandomRotation(std::mt19937_64& generator) {
  const Vector3 axis = RandomVector(generator, 1.0).normalized();
  std::uniform_real_distribution<double> angle(-M_PI, M_PI);
  return Eigen::AngleAxisd(angle(generator), axis).toRotationMatrix();
}

// How the random elastic deformation gradients F^E of a cloud are drawn.
enum class Deformation {
  kNone,        // F^E = I, R0 = I
  kPerturbed,   // F^E = I + random entries in [−0.2, 0.2], R0 a random rotation
  kStretched,   // F^E = R diag(σ) Qᵀ, σ ∈ [1.15, 1.25], R0 = I
  kCompressed,  // F^E = R diag(σ) Qᵀ, σ ∈ [0.5, 0.8], R0 = I
  kSqueezed,    // F^E = 0.97 I (a small confining pressure), R0 = I
};

// `count` particles with random positions in a cube of side `extent` (a few cells), random
// velocities and APIC matrices, and the given deformation. Particle p uses material
// p mod (number of materials).
void AddRandomCloud(Scene& scene, int count, double extent, Deformation deformation, std::uint64_t seed,
                    bool moving = true) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double spacing = scene.grid.spacing();
  const Vector3 corner(0.31, -0.12, 0.57);
  const int material_count = static_cast<int>(scene.materials.size());
  for (int p = 0; p < count; ++p) {
    const Vector3 position = corner + extent * Vector3(unit(generator), unit(generator), unit(generator));
    const double volume = spacing * spacing * spacing / 8.0;
    const int material = p % material_count;
    scene.particles.Add(position, moving ? RandomVector(generator, 0.5) : Vector3::Zero(),
                        scene.materials[material].density * volume, volume, material);
    if (moving) {
      scene.particles.affine_velocity.back() = Matrix3::NullaryExpr([&] { return 2.0 * unit(generator) - 1.0; });
    }
    Matrix3& elastic = scene.particles.deformation_gradient.back();
    Matrix3& rotation = scene.particles.reference_rotation.back();
    switch (deformation) {
      case Deformation::kNone:
        break;
      case Deformation::kPerturbed:
        elastic += Matrix3::NullaryExpr([&] { return 0.4 * unit(generator) - 0.2; });
        rotation = RandomRotation(generator);
        break;
      case Deformation::kStretched:
      case Deformation::kCompressed: {
        const bool stretched = deformation == Deformation::kStretched;
        const Vector3 stretches =
            stretched
                ? Vector3(1.15 + 0.1 * unit(generator), 1.15 + 0.1 * unit(generator), 1.15 + 0.1 * unit(generator))
                : Vector3(0.5 + 0.3 * unit(generator), 0.5 + 0.3 * unit(generator), 0.5 + 0.3 * unit(generator));
        elastic = RandomRotation(generator) * stretches.asDiagonal() * RandomRotation(generator).transpose();
        break;
      }
      case Deformation::kSqueezed:
        elastic = 0.97 * Matrix3::Identity();
        break;
    }
  }
}

mpm::Material LinearCorotated(double youngs_modulus = 2.5e5, double poisson_ratio = 0.3) {
  return mpm::MakeMaterial("linear", "linear_corotated", 1000.0, youngs_modulus, poisson_ratio);
}
mpm::Material FixedCorotated(double youngs_modulus = 2.5e5, double poisson_ratio = 0.3) {
  return mpm::MakeMaterial("fixed", "fixed_corotated", 1000.0, youngs_modulus, poisson_ratio);
}

// The linear corotated model behind another type, so the implicit solver treats it as a
// generic model (PSD-projected 9×9 tangent) instead of using the closed form.
class GenericLinearCorotated final : public mpm::ConstitutiveModel {
 public:
  explicit GenericLinearCorotated(mpm::LameParameters lame) : model_(lame) {}
  std::string_view name() const override { return "linear_corotated_via_generic_tangent"; }
  double EnergyDensity(const Matrix3& f, const Matrix3& r0) const override { return model_.EnergyDensity(f, r0); }
  Matrix3 FirstPiolaStress(const Matrix3& f, const Matrix3& r0) const override {
    return model_.FirstPiolaStress(f, r0);
  }
  Matrix9 FirstPiolaStressDerivative(const Matrix3& f, const Matrix3& r0) const override {
    return model_.FirstPiolaStressDerivative(f, r0);
  }
  double WaveSpeed(double density) const override { return model_.WaveSpeed(density); }

 private:
  mpm::LinearCorotatedModel model_;
};

Eigen::VectorXd RandomVelocity(const ImplicitMpm& problem, std::uint64_t seed, double scale) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(-scale, scale);
  return problem.initial_velocity() +
         Eigen::VectorXd::NullaryExpr(problem.num_dofs(), [&] { return uniform(generator); });
}

double MaxAbs(const Eigen::MatrixXd& matrix) {
  return matrix.cwiseAbs().maxCoeff();
}

// ---- Independent re-implementation of E(v) (spec §1.1.3) ---------------------------------

struct ReferenceParticle {
  std::vector<int> dofs;                  // active node of each stencil node with w > 0
  std::vector<Vector3> velocity_weights;  // a_ip = w_ip D⁻¹ (x_i − x_p)
  Matrix3 deformation_gradient;           // F_pⁿ
  Matrix3 reference_rotation;             // R0
  double volume = 0.0;                    // V⁰
  double shear_modulus = 0.0, first_lame_parameter = 0.0;
};

struct Reference {
  std::vector<ReferenceParticle> particles;
  Eigen::VectorXd masses;            // m_i per active node
  Eigen::VectorXd initial_velocity;  // vⁿ
  Vector3 gravity;
  double dt = 0.0;
};

// Rebuilds m_i, vⁿ (APIC P2G) and every a_ip from the particles, node by node through the
// grid's node lookup and the problem's active numbering only.
Reference BuildReference(const Scene& scene) {
  const ImplicitMpm& problem = scene.problem;
  const double spacing = scene.grid.spacing();
  const double inverse_inertia = 4.0 / (spacing * spacing);
  Reference reference;
  reference.gravity = scene.gravity;
  reference.dt = scene.dt;
  reference.masses = Eigen::VectorXd::Zero(problem.num_active_nodes());
  Eigen::VectorXd momentum = Eigen::VectorXd::Zero(problem.num_dofs());
  const mpm::Particles& particles = scene.particles;
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particles.position[p], spacing);
    ReferenceParticle particle;
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const double weight = stencil.Weight(a, b, c);
          if (weight == 0.0) continue;
          const int node = scene.grid.FindNode(stencil.base_node + mpm::NodeCoordinate(a, b, c));
          const int dof = problem.ActiveIndexOfGridNode(node);
          const Vector3 offset = scene.grid.NodePosition(node) - particles.position[p];
          reference.masses[dof] += weight * particles.mass[p];
          momentum.segment<3>(3 * dof) +=
              weight * particles.mass[p] * (particles.velocity[p] + particles.affine_velocity[p] * offset);
          particle.dofs.push_back(dof);
          particle.velocity_weights.push_back(weight * inverse_inertia * offset);
        }
      }
    }
    particle.deformation_gradient = particles.deformation_gradient[p];
    particle.reference_rotation = particles.reference_rotation[p];
    particle.volume = particles.initial_volume[p];
    particle.shear_modulus = scene.materials[particles.material[p]].lame.shear_modulus;
    particle.first_lame_parameter = scene.materials[particles.material[p]].lame.first_lame_parameter;
    reference.particles.push_back(particle);
  }
  reference.initial_velocity.resize(problem.num_dofs());
  for (int node = 0; node < problem.num_active_nodes(); ++node) {
    reference.initial_velocity.segment<3>(3 * node) = momentum.segment<3>(3 * node) / reference.masses[node];
  }
  return reference;
}

// F_p(v) = (I + Δt Σ_i v_i a_ipᵀ) F_pⁿ, the G2P update.
template <typename T>
Matrix3T<T> ReferenceDeformationGradient(const ReferenceParticle& particle, const std::vector<T>& velocity, double dt) {
  Matrix3T<T> velocity_gradient = Matrix3T<T>::Zero();
  for (std::size_t k = 0; k < particle.dofs.size(); ++k) {
    const int dof = particle.dofs[k];
    const Vector3T<T> node_velocity(velocity[3 * dof], velocity[3 * dof + 1], velocity[3 * dof + 2]);
    velocity_gradient += node_velocity * particle.velocity_weights[k].cast<T>().transpose();
  }
  return (Matrix3T<T>::Identity() + T(dt) * velocity_gradient) * particle.deformation_gradient.cast<T>();
}

// Ê = ½(R0ᵀF + FᵀR0) − I of spec §2.1.
template <typename T>
Matrix3T<T> CorotatedStrain(const Matrix3T<T>& deformation, const Matrix3& rotation) {
  const Matrix3T<T> unrotated = rotation.cast<T>().transpose() * deformation;
  return T(0.5) * (unrotated + unrotated.transpose()) - Matrix3T<T>::Identity();
}

// E(v) = ½ (v − vⁿ)ᵀ M (v − vⁿ) − Δt vᵀ M g + Σ_p V⁰ (μ‖Ê‖² + λ/2 tr(Ê)²).
template <typename T>
T ReferenceEnergy(const Reference& reference, const std::vector<T>& velocity) {
  T energy(0.0);
  for (int node = 0; node < reference.masses.size(); ++node) {
    for (int axis = 0; axis < 3; ++axis) {
      const T difference = velocity[3 * node + axis] - T(reference.initial_velocity[3 * node + axis]);
      energy += T(0.5 * reference.masses[node]) * difference * difference -
                T(reference.dt * reference.masses[node] * reference.gravity[axis]) * velocity[3 * node + axis];
    }
  }
  for (const ReferenceParticle& particle : reference.particles) {
    const Matrix3T<T> strain =
        CorotatedStrain(ReferenceDeformationGradient(particle, velocity, reference.dt), particle.reference_rotation);
    const T trace = strain.trace();
    energy += T(particle.volume) * (T(particle.shear_modulus) * strain.squaredNorm() +
                                    T(0.5 * particle.first_lame_parameter) * trace * trace);
  }
  return energy;
}

// ∇E = M(v − vⁿ − Δt g) + Δt Σ_p V⁰ P_p F_pⁿᵀ a_ip with P = R0(2μÊ + λ tr(Ê) I).
template <typename T>
std::vector<T> ReferenceGradient(const Reference& reference, const std::vector<T>& velocity) {
  std::vector<T> gradient(velocity.size());
  for (int node = 0; node < reference.masses.size(); ++node) {
    for (int axis = 0; axis < 3; ++axis) {
      gradient[3 * node + axis] =
          T(reference.masses[node]) * (velocity[3 * node + axis] - T(reference.initial_velocity[3 * node + axis]) -
                                       T(reference.dt * reference.gravity[axis]));
    }
  }
  for (const ReferenceParticle& particle : reference.particles) {
    const Matrix3T<T> strain =
        CorotatedStrain(ReferenceDeformationGradient(particle, velocity, reference.dt), particle.reference_rotation);
    const Matrix3T<T> stress = particle.reference_rotation.cast<T>() *
                               (T(2.0 * particle.shear_modulus) * strain +
                                T(particle.first_lame_parameter) * strain.trace() * Matrix3T<T>::Identity());
    for (std::size_t k = 0; k < particle.dofs.size(); ++k) {
      const Vector3 strain_weight = particle.deformation_gradient.transpose() * particle.velocity_weights[k];
      const Vector3T<T> force = T(reference.dt * particle.volume) * (stress * strain_weight.cast<T>());
      for (int axis = 0; axis < 3; ++axis) gradient[3 * particle.dofs[k] + axis] += force[axis];
    }
  }
  return gradient;
}

// Forward-mode AD in chunks of kChunk seeded DoFs.
constexpr int kChunk = 16;
using Jet = ceres::Jet<double, kChunk>;

std::vector<Jet> SeedChunk(const Eigen::VectorXd& velocity, int first) {
  std::vector<Jet> seeded(velocity.size());
  for (int k = 0; k < velocity.size(); ++k) {
    seeded[k] = Jet(velocity[k]);
    if (k >= first && k < first + kChunk) seeded[k].v[k - first] = 1.0;
  }
  return seeded;
}

Eigen::VectorXd AutomaticGradient(const Reference& reference, const Eigen::VectorXd& velocity) {
  Eigen::VectorXd gradient(velocity.size());
  for (int first = 0; first < velocity.size(); first += kChunk) {
    const Jet energy = ReferenceEnergy(reference, SeedChunk(velocity, first));
    for (int k = first; k < std::min<int>(first + kChunk, velocity.size()); ++k) gradient[k] = energy.v[k - first];
  }
  return gradient;
}

Eigen::MatrixXd AutomaticJacobianOfGradient(const Reference& reference, const Eigen::VectorXd& velocity) {
  Eigen::MatrixXd jacobian(velocity.size(), velocity.size());
  for (int first = 0; first < velocity.size(); first += kChunk) {
    const std::vector<Jet> gradient = ReferenceGradient(reference, SeedChunk(velocity, first));
    for (int row = 0; row < velocity.size(); ++row) {
      for (int k = first; k < std::min<int>(first + kChunk, velocity.size()); ++k) {
        jacobian(row, k) = gradient[row].v[k - first];
      }
    }
  }
  return jacobian;
}

// Central differences of the implemented gradient.
Eigen::MatrixXd FiniteDifferenceJacobian(const ImplicitMpm& problem, const Eigen::VectorXd& velocity, double step) {
  Eigen::MatrixXd jacobian(problem.num_dofs(), problem.num_dofs());
  for (int k = 0; k < problem.num_dofs(); ++k) {
    Eigen::VectorXd plus = velocity, minus = velocity;
    plus[k] += step;
    minus[k] -= step;
    jacobian.col(k) = (problem.Gradient(plus) - problem.Gradient(minus)) / (2.0 * step);
  }
  return jacobian;
}

double SmallestEigenvalue(const Eigen::MatrixXd& symmetric) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(symmetric, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
}

// ---- Setup ------------------------------------------------------------------------------

TEST(ImplicitMpmSetup, ActiveNodesMassesAndVelocitiesFollowParticleToGrid) {
  Scene scene;
  scene.materials = {LinearCorotated(), LinearCorotated(1e6, 0.2)};
  AddRandomCloud(scene, 30, 0.16, Deformation::kPerturbed, 1);
  scene.Prepare();
  // Active nodes: grid nodes with mass, in grid node order.
  int expected = 0;
  for (int node = 0; node < scene.grid.num_nodes(); ++node) {
    if (scene.grid.mass[node] > 0.0) {
      ASSERT_LT(expected, scene.problem.num_active_nodes());
      EXPECT_EQ(scene.problem.active_nodes()[expected], node);
      EXPECT_EQ(scene.problem.ActiveIndexOfGridNode(node), expected);
      ++expected;
    } else {
      EXPECT_EQ(scene.problem.ActiveIndexOfGridNode(node), -1);
    }
  }
  EXPECT_EQ(expected, scene.problem.num_active_nodes());
  const Reference reference = BuildReference(scene);
  EXPECT_LT((scene.problem.node_masses() - reference.masses).cwiseAbs().maxCoeff(),
            1e-14 * reference.masses.maxCoeff());
  EXPECT_LT((scene.problem.initial_velocity() - reference.initial_velocity).norm(),
            1e-12 * reference.initial_velocity.norm());
}

TEST(ImplicitMpmSetup, EnergyUsesTheDeformationGradientOfGridToParticle) {
  // E(v) minus inertia and gravity is the elastic energy the particles hold after the shared
  // G2P moved them with the grid velocities v.
  Scene scene;
  scene.materials = {FixedCorotated()};
  AddRandomCloud(scene, 30, 0.16, Deformation::kPerturbed, 2);
  scene.Prepare();
  const ImplicitMpm& problem = scene.problem;
  const Eigen::VectorXd velocity = RandomVelocity(problem, 3, 0.5);
  for (int node = 0; node < scene.grid.num_nodes(); ++node) scene.grid.velocity[node].setZero();
  for (int k = 0; k < problem.num_active_nodes(); ++k) {
    scene.grid.velocity[problem.active_nodes()[k]] = velocity.segment<3>(3 * k);
  }
  mpm::Particles moved = scene.particles;
  mpm::GridToParticle(scene.grid, scene.dt, moved);
  double expected = 0.0;
  for (std::size_t p = 0; p < moved.size(); ++p) {
    expected += moved.initial_volume[p] * scene.materials[0].constitutive_model->EnergyDensity(
                                              moved.deformation_gradient[p], moved.reference_rotation[p]);
  }
  for (int k = 0; k < problem.num_active_nodes(); ++k) {
    const Vector3 node_velocity = velocity.segment<3>(3 * k);
    expected +=
        problem.node_masses()[k] * (0.5 * (node_velocity - problem.initial_velocity().segment<3>(3 * k)).squaredNorm() -
                                    scene.dt * node_velocity.dot(scene.gravity));
  }
  EXPECT_NEAR(problem.Energy(velocity), expected, 1e-12 * std::abs(expected));
}

// ---- Gradient and Hessian: linear corotated against automatic differentiation -----------

TEST(ImplicitMpmLinearCorotated, EnergyAndGradientMatchAutomaticDifferentiation) {
  Scene scene;
  scene.materials = {LinearCorotated(), LinearCorotated(1e6, 0.2)};
  AddRandomCloud(scene, 30, 0.16, Deformation::kPerturbed, 4);
  scene.Prepare();
  const Reference reference = BuildReference(scene);
  for (std::uint64_t seed : {5, 6}) {
    const Eigen::VectorXd velocity = RandomVelocity(scene.problem, seed, 0.5);
    const std::vector<double> plain(velocity.data(), velocity.data() + velocity.size());
    const double expected_energy = ReferenceEnergy(reference, plain);
    EXPECT_NEAR(scene.problem.Energy(velocity), expected_energy, 1e-12 * std::abs(expected_energy));

    const Eigen::VectorXd expected = AutomaticGradient(reference, velocity);
    const Eigen::VectorXd gradient = scene.problem.Gradient(velocity);
    EXPECT_LT(MaxAbs(gradient - expected), 1e-9 * MaxAbs(expected));
    // The reference's closed-form gradient (used for the Hessian below) agrees too.
    const std::vector<double> closed_form = ReferenceGradient(reference, plain);
    EXPECT_LT(MaxAbs(Eigen::Map<const Eigen::VectorXd>(closed_form.data(), closed_form.size()) - expected),
              1e-10 * MaxAbs(expected));
    // k = −(∇E − M(v − vⁿ − Δt g)) / Δt.
    Eigen::VectorXd inertia(velocity.size());
    for (int node = 0; node < scene.problem.num_active_nodes(); ++node) {
      inertia.segment<3>(3 * node) = scene.problem.node_masses()[node] *
                                     (velocity.segment<3>(3 * node) -
                                      scene.problem.initial_velocity().segment<3>(3 * node) - scene.dt * scene.gravity);
    }
    const Eigen::VectorXd forces = scene.problem.ElasticForces(velocity);
    EXPECT_LT(MaxAbs(forces + (expected - inertia) / scene.dt), 1e-9 * MaxAbs(forces));
  }
}

TEST(ImplicitMpmLinearCorotated, HessianMatchesAutomaticDifferentiation) {
  Scene scene;
  scene.materials = {LinearCorotated(), LinearCorotated(1e6, 0.2)};
  AddRandomCloud(scene, 30, 0.16, Deformation::kPerturbed, 7);
  scene.Prepare();
  const Reference reference = BuildReference(scene);
  const Eigen::VectorXd velocity = RandomVelocity(scene.problem, 8, 0.5);
  const Eigen::MatrixXd expected = AutomaticJacobianOfGradient(reference, velocity);
  const Eigen::MatrixXd hessian = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_LT(MaxAbs(hessian - expected), 1e-9 * MaxAbs(expected));
  // Both triangles are stored, and they agree bit for bit.
  EXPECT_EQ(MaxAbs(hessian - hessian.transpose()), 0.0);
}

TEST(ImplicitMpmLinearCorotated, ClosedFormBlockEqualsTangentContraction) {
  // K(a, b)_αβ = Σ_γδ ∂P_αγ/∂F_βδ a_γ b_δ against the closed form of spec §1.1.3.
  std::mt19937_64 generator(9);
  const mpm::Material material = LinearCorotated(3e5, 0.35);
  const double mu = material.lame.shear_modulus, lambda = material.lame.first_lame_parameter;
  for (int trial = 0; trial < 20; ++trial) {
    const Matrix3 rotation = RandomRotation(generator);
    const Matrix3 deformation = Matrix3::Identity() + 0.3 * Matrix3::Random();
    const Vector3 a = RandomVector(generator, 5.0), b = RandomVector(generator, 5.0);
    const Matrix9 tangent = material.constitutive_model->FirstPiolaStressDerivative(deformation, rotation);
    Matrix3 contraction = Matrix3::Zero();
    for (int alpha = 0; alpha < 3; ++alpha) {
      for (int beta = 0; beta < 3; ++beta) {
        for (int gamma = 0; gamma < 3; ++gamma) {
          for (int delta = 0; delta < 3; ++delta) {
            contraction(alpha, beta) += tangent(alpha + 3 * gamma, beta + 3 * delta) * a[gamma] * b[delta];
          }
        }
      }
    }
    const Matrix3 closed_form = mu * a.dot(b) * Matrix3::Identity() + mu * (rotation * b) * (rotation * a).transpose() +
                                lambda * (rotation * a) * (rotation * b).transpose();
    EXPECT_LT((closed_form - contraction).norm(), 1e-12 * contraction.norm());
  }

  // The assembled Hessian through the closed form equals the one through the generic
  // (PSD-projected, here PSD already) 9×9 tangent.
  Scene closed, generic;
  closed.materials = {LinearCorotated(), LinearCorotated(1e6, 0.2)};
  generic.materials = closed.materials;
  for (mpm::Material& material : generic.materials) {
    material.constitutive_model = std::make_shared<GenericLinearCorotated>(material.lame);
  }
  AddRandomCloud(closed, 40, 0.16, Deformation::kPerturbed, 10);
  AddRandomCloud(generic, 40, 0.16, Deformation::kPerturbed, 10);
  closed.Prepare();
  generic.Prepare();
  const Eigen::VectorXd velocity = RandomVelocity(closed.problem, 11, 0.5);
  const SparseMatrix closed_hessian = closed.problem.Hessian(velocity);
  const SparseMatrix generic_hessian = generic.problem.Hessian(velocity);
  const Eigen::MatrixXd difference = Eigen::MatrixXd(closed_hessian) - Eigen::MatrixXd(generic_hessian);
  EXPECT_LT(MaxAbs(difference), 1e-11 * MaxAbs(Eigen::MatrixXd(closed_hessian)));
}

// ---- Fixed corotated: finite differences and PSD projection ------------------------------

TEST(ImplicitMpmFixedCorotated, HessianMatchesFiniteDifferencesWhereTangentIsPsd) {
  Scene scene;
  scene.materials = {FixedCorotated(2.5e5, 0.1)};
  AddRandomCloud(scene, 30, 0.16, Deformation::kStretched, 12);
  scene.Prepare();
  const Eigen::VectorXd velocity = RandomVelocity(scene.problem, 13, 0.05);
  // Precondition: every particle's tangent is positive definite at F_p(v), so the
  // projection changes nothing and the Hessian is the exact Jacobian of the gradient.
  const Reference reference = BuildReference(scene);
  const std::vector<double> plain(velocity.data(), velocity.data() + velocity.size());
  for (const ReferenceParticle& particle : reference.particles) {
    const Matrix3 deformation = ReferenceDeformationGradient(particle, plain, scene.dt);
    const Matrix9 tangent =
        scene.materials[0].constitutive_model->FirstPiolaStressDerivative(deformation, Matrix3::Identity());
    ASSERT_GT(SmallestEigenvalue(0.5 * (tangent + tangent.transpose())), 0.0);
  }
  const Eigen::MatrixXd expected = FiniteDifferenceJacobian(scene.problem, velocity, 1e-6);
  const Eigen::MatrixXd hessian = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_LT(MaxAbs(hessian - expected), 1e-6 * MaxAbs(expected));
}

TEST(ImplicitMpmFixedCorotated, HessianIsPositiveDefiniteUnderCompression) {
  Scene scene;
  scene.materials = {FixedCorotated(1e7, 0.3)};
  scene.dt = 0.05;
  AddRandomCloud(scene, 30, 0.16, Deformation::kCompressed, 14);
  scene.Prepare();
  const Eigen::VectorXd velocity = RandomVelocity(scene.problem, 15, 0.05);
  // The exact Jacobian of the gradient is indefinite here ...
  const Eigen::MatrixXd exact = FiniteDifferenceJacobian(scene.problem, velocity, 1e-6);
  EXPECT_LT(SmallestEigenvalue(0.5 * (exact + exact.transpose())), 0.0);
  // ... the assembled A = M + PSD is SPD, with λ_min(A) ≥ min_i m_i.
  const Eigen::MatrixXd hessian = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_EQ(MaxAbs(hessian - hessian.transpose()), 0.0);
  const double smallest = SmallestEigenvalue(hessian);
  const double smallest_mass = scene.problem.node_masses().minCoeff();
  EXPECT_GT(smallest, 0.0);
  EXPECT_GE(smallest, smallest_mass - 1e-12 * MaxAbs(hessian));
}

// ---- The exact tangent (penalty's Newton, spec-penalty-hybrid §2.2) ----------------------

// Where the projection changes the tangent (a compressed fixed-corotated cloud; a liquid,
// whose ψ'(J) ∂cof/∂F term is indefinite at any J ≠ 1), StressTangent::kExact assembles the
// Jacobian of the gradient, symmetric and indefinite, and the projected Hessian does not.
TEST(ImplicitMpmExactTangent, HessianIsTheJacobianOfTheGradientWhereTheProjectedOneIsNot) {
  for (const mpm::Material& material :
       {FixedCorotated(1e7, 0.3), mpm::MakeLiquidMaterial("liquid", 1000.0, 2e6, 7.0)}) {
    SCOPED_TRACE(material.name);
    Scene scene;
    scene.materials = {material};
    scene.dt = 0.05;
    AddRandomCloud(scene, 30, 0.16, Deformation::kCompressed, 14);
    scene.Prepare();
    const Eigen::VectorXd velocity = RandomVelocity(scene.problem, 15, 0.05);
    const Eigen::MatrixXd expected = FiniteDifferenceJacobian(scene.problem, velocity, 1e-7);
    ASSERT_LT(SmallestEigenvalue(0.5 * (expected + expected.transpose())), 0.0);
    const Eigen::MatrixXd exact = Eigen::MatrixXd(scene.problem.Hessian(velocity, StressTangent::kExact));
    const Eigen::MatrixXd projected = Eigen::MatrixXd(scene.problem.Hessian(velocity));
    EXPECT_LT(MaxAbs(exact - expected), 1e-6 * MaxAbs(expected));
    EXPECT_LT(MaxAbs(exact - exact.transpose()), 1e-12 * MaxAbs(exact));
    EXPECT_GT(MaxAbs(projected - expected), 1e-3 * MaxAbs(expected));
  }
}

// A liquid particle whose own motion inverts it within the step at vⁿ (APIC's C reproduces on
// the grid, so F(vⁿ) = (I + Δt C) Fⁿ with F_zz = 1 − 1.5): E(vⁿ) is +∞. The start is halved on
// the particle's 27 stencil nodes to J = 0.25, finite but below half of Jⁿ = 1, and again to
// J = 0.625, where the Newton converges.
TEST(ImplicitMpmStart, IsScaledTowardRestWhereTheLiquidsBarrierIsInfinite) {
  Scene scene;
  scene.materials = {mpm::MakeLiquidMaterial("liquid", 1000.0, 2e4, 7.0)};
  scene.gravity = Vector3::Zero();
  const double spacing = scene.grid.spacing();
  const double volume = spacing * spacing * spacing / 8.0;
  scene.particles.Add(Vector3(0.33, 0.21, 0.47), Vector3::Zero(), 1000.0 * volume, volume, 0);
  scene.particles.affine_velocity.back() = Vector3(0.0, 0.0, -150.0).asDiagonal();
  scene.Prepare();
  const Eigen::VectorXd& rest = scene.problem.initial_velocity();
  ASSERT_FALSE(std::isfinite(scene.problem.Energy(rest)));
  scene.problem.ConstrainGridBoundary(scene.grid, {});
  EXPECT_EQ(scene.problem.start_scaled_nodes(), 27);
  EXPECT_LT((scene.problem.start_velocity() - 0.25 * rest).norm(), 1e-14 * rest.norm());
  EXPECT_TRUE(std::isfinite(scene.problem.Energy(scene.problem.start_velocity())));
  linear_algebra::SparseCholesky cholesky;
  Eigen::VectorXd velocity;
  SparseMatrix hessian;
  const solvers::SolverSummary summary =
      scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, velocity, hessian);
  EXPECT_EQ(summary.termination, solvers::Termination::kConverged) << summary.message;
  EXPECT_TRUE(std::isfinite(scene.problem.Energy(velocity)));
}

// ---- Drucker–Prager with plasticity inside the step (spec-penalty-hybrid A13) ------------

// A sand cloud under a small confining pressure (F = 0.97 I, inside the cone at the start
// velocity) sheared by a velocity large enough that some particles' step strain leaves the cone
// of their start (a strongly compressed cloud inverts before it yields: there the two energies
// agreed to the last bit, and an earlier form of this test passed on round-off): with PlasticityTiming::kInStep the
// gradient is still the derivative of the energy (central differences), that energy lies below the elastic one (the
// capped shear term grows linearly, Hencky's quadratically), and the model's step state is the cone radius of each
// particle's start.
TEST(ImplicitMpmInStepPlasticity, GradientIsTheStepEnergysDerivativeAndTheEnergyIsCapped) {
  Scene in_step, after_step;
  for (Scene* scene : {&in_step, &after_step}) {
    scene->materials = {mpm::MakeGranularMaterial("sand", 1600.0, 3.5e5, 0.3, 30.0)};
    AddRandomCloud(*scene, 30, 0.16, Deformation::kSqueezed, 21);
  }
  in_step.problem.set_plasticity_timing(PlasticityTiming::kInStep);
  in_step.Prepare();
  after_step.Prepare();
  EXPECT_TRUE(in_step.problem.uses_in_step_plasticity());
  EXPECT_FALSE(after_step.problem.uses_in_step_plasticity());
  const Eigen::VectorXd velocity = RandomVelocity(in_step.problem, 22, 2.0);
  // Well below, not by round-off: the sheared particles' capped energy is 10% under Hencky's here.
  EXPECT_LT(in_step.problem.Energy(velocity), 0.95 * after_step.problem.Energy(velocity));

  const Eigen::VectorXd gradient = in_step.problem.Gradient(velocity);
  std::mt19937_64 generator(23);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::VectorXd direction =
        Eigen::VectorXd::NullaryExpr(in_step.problem.num_dofs(), [&] { return uniform(generator); });
    const double step = 1e-6;
    const double difference =
        (in_step.problem.Energy(velocity + step * direction) - in_step.problem.Energy(velocity - step * direction)) /
        (2.0 * step);
    EXPECT_NEAR(difference, gradient.dot(direction), 1e-6 * gradient.norm() * direction.norm());
  }
  // Without yielding the two energies agree: at the start velocity no particle has left its cone.
  const Eigen::VectorXd& start = in_step.problem.start_velocity();
  EXPECT_NEAR(in_step.problem.Energy(start), after_step.problem.Energy(start),
              1e-12 * std::abs(after_step.problem.Energy(start)));
}

// ---- Newton solve ----------------------------------------------------------------------

// ‖M^(-1/2) ∇E‖ / max(‖M^(1/2) v‖, ‖M^(-1/2) Δt k‖) (spec §5 Z2).
double ScaledGradient(const Scene& scene, const Eigen::VectorXd& velocity) {
  const ImplicitMpm& problem = scene.problem;
  const Eigen::VectorXd gradient = problem.Gradient(velocity);
  const Eigen::VectorXd impulse = scene.dt * problem.ElasticForces(velocity);
  double residual = 0.0, momentum = 0.0, force = 0.0;
  for (int node = 0; node < problem.num_active_nodes(); ++node) {
    const double mass = problem.node_masses()[node];
    residual += gradient.segment<3>(3 * node).squaredNorm() / mass;
    momentum += mass * velocity.segment<3>(3 * node).squaredNorm();
    force += impulse.segment<3>(3 * node).squaredNorm() / mass;
  }
  return std::sqrt(residual / std::max(momentum, force));
}

TEST(ImplicitMpmSolve, LinearCorotatedConvergesInOneNewtonStep) {
  Scene scene;
  scene.materials = {LinearCorotated(1e6, 0.3), LinearCorotated(3e6, 0.2)};
  AddRandomCloud(scene, 200, 0.3, Deformation::kPerturbed, 16);
  scene.Prepare();
  linear_algebra::SparseCholesky cholesky;
  Eigen::VectorXd velocity;
  SparseMatrix hessian;
  const solvers::SolverSummary summary =
      scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, velocity, hessian);
  EXPECT_TRUE(summary.converged());
  EXPECT_EQ(summary.iterations, 1);
  EXPECT_EQ(summary.line_search_evaluations, 0);
  // The shared history: the initial iterate and the solution, the exact step α = 1.
  ASSERT_EQ(summary.history.size(), 2u);
  EXPECT_EQ(summary.history[0].step, 1.0);
  EXPECT_LT(summary.history[1].residual, summary.history[0].residual);
  EXPECT_LT(ScaledGradient(scene, velocity), 1e-8);
  EXPECT_LT(summary.residual, 1e-2);  // relative to the 1e-6 threshold
  // The returned A is ∇²E(v*) (constant for this model).
  const Eigen::MatrixXd expected = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_EQ(MaxAbs(Eigen::MatrixXd(hessian) - expected), 0.0);
  // v* minimizes E: any perturbation raises it.
  const double minimum = scene.problem.Energy(velocity);
  EXPECT_GT(scene.problem.Energy(RandomVelocity(scene.problem, 17, 1e-3) - scene.problem.initial_velocity() + velocity),
            minimum);
}

TEST(ImplicitMpmSolve, FixedCorotatedNewtonDecreasesEnergyMonotonically) {
  Scene scene;
  scene.materials = {FixedCorotated(1e6, 0.3)};
  AddRandomCloud(scene, 200, 0.3, Deformation::kCompressed, 18);
  scene.Prepare();
  linear_algebra::SparseCholesky cholesky;
  Eigen::VectorXd velocity;
  SparseMatrix hessian;
  const solvers::SolverSummary summary =
      scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, velocity, hessian);
  EXPECT_TRUE(summary.converged());
  EXPECT_GE(summary.iterations, 2);
  EXPECT_LE(summary.residual, 1.0);
  EXPECT_LE(ScaledGradient(scene, velocity), 1e-6 * (1.0 + 1e-9));
  const Eigen::MatrixXd expected = Eigen::MatrixXd(scene.problem.Hessian(velocity));
  EXPECT_EQ(MaxAbs(Eigen::MatrixXd(hessian) - expected), 0.0);

  // The iterates v_k (stopping after k Newton steps) have decreasing energy.
  double previous = scene.problem.Energy(scene.problem.initial_velocity());
  for (int iterations = 1; iterations <= summary.iterations; ++iterations) {
    ImplicitMpmOptions options;
    options.max_newton_iterations = iterations;
    Eigen::VectorXd iterate;
    const solvers::SolverSummary partial = scene.problem.SolveFreeMotion(options, cholesky, iterate, hessian);
    EXPECT_EQ(partial.iterations, iterations);
    const double energy = scene.problem.Energy(iterate);
    EXPECT_LT(energy, previous) << "Newton iteration " << iterations;
    previous = energy;
  }
  // One history record per iterate, each accepted step lowering E, the last one final.
  ASSERT_EQ(summary.history.size(), static_cast<std::size_t>(summary.iterations + 1));
  for (int k = 0; k < summary.iterations; ++k) {
    EXPECT_GT(summary.history[k].step, 0.0);
    EXPECT_LT(summary.history[k + 1].cost, summary.history[k].cost);
  }
  EXPECT_EQ(summary.termination, solvers::Termination::kConverged) << summary.message;
  std::printf("[ fixed corotated ] %d Newton iterations, %d line-search evaluations, residual/threshold %.3g\n",
              summary.iterations, summary.line_search_evaluations, summary.residual);
}

// ---- Pattern, momentum, determinism ------------------------------------------------------

TEST(ImplicitMpmHessian, PatternDoesNotDependOnVelocity) {
  Scene scene;
  scene.materials = {FixedCorotated(), LinearCorotated()};
  AddRandomCloud(scene, 100, 0.3, Deformation::kPerturbed, 19);
  scene.Prepare();
  const SparseMatrix first = scene.problem.Hessian(RandomVelocity(scene.problem, 20, 0.5));
  const SparseMatrix second = scene.problem.Hessian(RandomVelocity(scene.problem, 21, 5.0));
  ASSERT_TRUE(first.isCompressed());
  ASSERT_TRUE(second.isCompressed());
  ASSERT_EQ(first.nonZeros(), second.nonZeros());
  EXPECT_TRUE(std::equal(first.outerIndexPtr(), first.outerIndexPtr() + first.outerSize() + 1, second.outerIndexPtr()));
  EXPECT_TRUE(std::equal(first.innerIndexPtr(), first.innerIndexPtr() + first.nonZeros(), second.innerIndexPtr()));
  EXPECT_GT(MaxAbs(Eigen::MatrixXd(first) - Eigen::MatrixXd(second)), 0.0);  // the values do change
  // Row indices are strictly increasing within each column.
  for (int column = 0; column < first.outerSize(); ++column) {
    for (int k = first.outerIndexPtr()[column] + 1; k < first.outerIndexPtr()[column + 1]; ++k) {
      EXPECT_LT(first.innerIndexPtr()[k - 1], first.innerIndexPtr()[k]);
    }
  }
}

TEST(ImplicitMpmSolve, WithoutElasticityOrGravityVelocitiesStay) {
  Scene scene;
  // A linear corotated material with μ_L = λ = 0: Ψ ≡ 0.
  mpm::Material material = LinearCorotated();
  material.lame = mpm::LameParameters{};
  material.constitutive_model = mpm::MakeConstitutiveModel("linear_corotated", mpm::MaterialConstants{material.lame});
  scene.materials = {material};
  scene.gravity = Vector3::Zero();
  AddRandomCloud(scene, 60, 0.3, Deformation::kPerturbed, 22);
  scene.Prepare();
  linear_algebra::SparseCholesky cholesky;
  Eigen::VectorXd velocity;
  SparseMatrix hessian;
  const solvers::SolverSummary summary =
      scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, velocity, hessian);
  EXPECT_TRUE(summary.converged());
  EXPECT_EQ(MaxAbs(velocity - scene.problem.initial_velocity()), 0.0);
}

TEST(ImplicitMpmSolve, UnstressedBodyFallsFreely) {
  // F = I, R0 = I at rest: v* = vⁿ + Δt g on every node, for both model families.
  for (const mpm::Material& material : {LinearCorotated(1e6, 0.3), FixedCorotated(1e6, 0.3)}) {
    Scene scene;
    scene.materials = {material};
    AddRandomCloud(scene, 60, 0.3, Deformation::kNone, 23, /*moving=*/false);
    scene.Prepare();
    linear_algebra::SparseCholesky cholesky;
    Eigen::VectorXd velocity;
    SparseMatrix hessian;
    const solvers::SolverSummary summary =
        scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, velocity, hessian);
    EXPECT_TRUE(summary.converged()) << material.name;
    for (int node = 0; node < scene.problem.num_active_nodes(); ++node) {
      const Vector3 expected = scene.problem.initial_velocity().segment<3>(3 * node) + scene.dt * scene.gravity;
      EXPECT_LT((velocity.segment<3>(3 * node) - expected).norm(), 1e-12 * expected.norm()) << material.name;
    }
  }
}

TEST(ImplicitMpmForces, ElasticForcesConserveLinearAndAngularMomentum) {
  // E_elastic depends on the deformed node positions y_i = x_i + Δt v_i through
  // F_p = (I + Σ_i (y_i − x_i) a_ipᵀ) F_pⁿ. Σ_i a_ip = 0 makes it translation invariant
  // (Σ_i k_i = 0 for any model); Σ_i x_i a_ipᵀ = I makes a rotation of all y_i rotate F_p,
  // so for the rotation-invariant fixed corotated energy Σ_i y_i × k_i = 0.
  for (const mpm::Material& material : {FixedCorotated(1e6, 0.3), LinearCorotated(1e6, 0.3)}) {
    Scene scene;
    scene.materials = {material};
    AddRandomCloud(scene, 100, 0.3, Deformation::kCompressed, 24);
    scene.Prepare();
    const ImplicitMpm& problem = scene.problem;
    for (const Eigen::VectorXd& velocity :
         {Eigen::VectorXd(Eigen::VectorXd::Zero(problem.num_dofs())), RandomVelocity(problem, 25, 0.5)}) {
      const Eigen::VectorXd forces = problem.ElasticForces(velocity);
      Vector3 force_sum = Vector3::Zero(), torque = Vector3::Zero();
      double force_scale = 0.0, torque_scale = 0.0;
      for (int node = 0; node < problem.num_active_nodes(); ++node) {
        const Vector3 force = forces.segment<3>(3 * node);
        const Vector3 deformed_position =
            scene.grid.NodePosition(problem.active_nodes()[node]) + scene.dt * velocity.segment<3>(3 * node);
        force_sum += force;
        torque += deformed_position.cross(force);
        force_scale += force.norm();
        torque_scale += deformed_position.norm() * force.norm();
      }
      EXPECT_LT(force_sum.norm(), 1e-13 * force_scale) << material.name;
      if (material.model == "fixed_corotated") {
        EXPECT_LT(torque.norm(), 1e-12 * torque_scale) << material.name;
      }
    }
  }
}

// The quadratic model of E about v* that sap's contact problem minimizes: at v* its gradient is
// ∇E(v*); at any v its rows sum, per axis, to the grid's momentum change minus gravity's
// impulse (the projected stiffness leaves translations alone), so the walls' reactions taken
// from it balance the step; it is linear in v with slope A, unlike ∇E.
TEST(ImplicitMpmModelGradient, IsTheLinearizationOfTheGradientAndBalancesMomentum) {
  Scene scene;
  scene.materials = {FixedCorotated(1e6, 0.3)};
  AddRandomCloud(scene, 100, 0.3, Deformation::kCompressed, 26);
  scene.Prepare();
  const ImplicitMpm& problem = scene.problem;
  const Eigen::VectorXd about = RandomVelocity(problem, 27, 0.3);
  const Eigen::VectorXd velocity = RandomVelocity(problem, 28, 0.3);
  const Eigen::VectorXd at_about = problem.ModelGradient(about, about);
  EXPECT_LT((at_about - problem.Gradient(about)).cwiseAbs().maxCoeff(),
            1e-14 * problem.Gradient(about).cwiseAbs().maxCoeff());
  const Eigen::VectorXd model = problem.ModelGradient(about, velocity);
  Vector3 row_sum = Vector3::Zero(), expected = Vector3::Zero();
  double scale = 0.0;
  for (int node = 0; node < problem.num_active_nodes(); ++node) {
    row_sum += model.segment<3>(3 * node);
    const double mass = problem.node_masses()[node];
    expected += mass * (velocity.segment<3>(3 * node) - problem.initial_velocity().segment<3>(3 * node) -
                        scene.dt * scene.gravity);
    scale += model.segment<3>(3 * node).norm();
  }
  EXPECT_LT((row_sum - expected).norm(), 1e-12 * scale);
  // Linear in v: the midpoint's model gradient is the mean of the ends'.
  const Eigen::VectorXd midpoint = problem.ModelGradient(about, 0.5 * (about + velocity));
  EXPECT_LT((midpoint - 0.5 * (at_about + model)).cwiseAbs().maxCoeff(), 1e-12 * model.cwiseAbs().maxCoeff());
  // And not ∇E itself: the fixed corotated energy is not quadratic.
  EXPECT_GT((model - problem.Gradient(velocity)).cwiseAbs().maxCoeff(), 1e-6 * model.cwiseAbs().maxCoeff());
}

TEST(ImplicitMpmHessian, ThreadCountDoesNotChangeBits) {
  Scene scene;
  scene.materials = {LinearCorotated(), FixedCorotated()};
  AddRandomCloud(scene, 3000, 1.2, Deformation::kPerturbed, 26);
  scene.Prepare();
  const Eigen::VectorXd velocity = RandomVelocity(scene.problem, 27, 0.5);
  const int default_threads = omp_get_max_threads();
  std::vector<SparseMatrix> hessians;
  std::vector<Eigen::VectorXd> gradients;
  std::vector<double> energies;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    hessians.push_back(scene.problem.Hessian(velocity));
    gradients.push_back(scene.problem.Gradient(velocity));
    energies.push_back(scene.problem.Energy(velocity));
  }
  omp_set_num_threads(default_threads);
  ASSERT_EQ(hessians[0].nonZeros(), hessians[1].nonZeros());
  EXPECT_TRUE(
      std::equal(hessians[0].valuePtr(), hessians[0].valuePtr() + hessians[0].nonZeros(), hessians[1].valuePtr()));
  EXPECT_TRUE(gradients[0] == gradients[1]);
  EXPECT_EQ(energies[0], energies[1]);
}

// ---- Cost on the ball-on-slope problem (printed, not asserted) ---------------------------

TEST(ImplicitMpmHessian, BallOnSlopeAssemblyTime) {
  // data/scenes/ball_on_slope.toml: r = 0.5 m, h = 0.2 m, 103.55 particles per cell,
  // E = 1e8 Pa, ν = 0.2, ρ = 1000 kg/m³, Δt = 0.01 s, linear corotated.
  Scene scene;
  scene.grid = mpm::SparseGrid(0.2);
  scene.materials = {LinearCorotated(1e8, 0.2)};
  mpm::SamplingOptions sampling;
  sampling.grid_spacing = 0.2;
  sampling.particles_per_cell = 103.55;
  const Vector3 center(-2.1, 0.0, 0.5);
  const auto positions = mpm::SampleSolid([&](const Vector3& x) { return (x - center).norm() - 0.5; },
                                          Eigen::AlignedBox3d(center.array() - 0.5, center.array() + 0.5), sampling);
  mpm::AddSampledParticles(positions, sampling, 1000.0, Vector3(0.3, 0.0, -0.2), 0, scene.particles);
  scene.Prepare();

  const int default_threads = omp_get_max_threads();
  omp_set_num_threads(1);
  using Clock = std::chrono::steady_clock;
  const auto milliseconds = [](Clock::duration duration) {
    return std::chrono::duration<double, std::milli>(duration).count();
  };
  const Eigen::VectorXd& velocity = scene.problem.initial_velocity();
  SparseMatrix hessian = scene.problem.Hessian(velocity);  // warm-up
  double best = 1e30, total = 0.0;
  constexpr int kRepetitions = 20;
  for (int repetition = 0; repetition < kRepetitions; ++repetition) {
    const auto start = Clock::now();
    hessian = scene.problem.Hessian(velocity);
    const double elapsed = milliseconds(Clock::now() - start);
    best = std::min(best, elapsed);
    total += elapsed;
  }
  auto start = Clock::now();
  scene.problem.Setup(scene.grid, scene.particles, scene.materials, scene.gravity, scene.dt);
  const double setup_time = milliseconds(Clock::now() - start);
  linear_algebra::SparseCholesky cholesky;
  Eigen::VectorXd free_motion;
  start = Clock::now();
  const solvers::SolverSummary summary =
      scene.problem.SolveFreeMotion(ImplicitMpmOptions{}, cholesky, free_motion, hessian);
  const double solve_time = milliseconds(Clock::now() - start);
  omp_set_num_threads(default_threads);

  std::printf(
      "[ ball on slope ] %zu particles, %d active nodes, %ld nonzeros: Hessian assembly %.3f ms best, "
      "%.3f ms mean (1 thread); Setup %.3f ms; SolveFreeMotion %.3f ms\n",
      scene.particles.size(), scene.problem.num_active_nodes(), static_cast<long>(hessian.nonZeros()), best,
      total / kRepetitions, setup_time, solve_time);
  EXPECT_TRUE(summary.converged());
  EXPECT_EQ(summary.iterations, 1);
}

}  // namespace
}  // namespace contactlab::dynamics
