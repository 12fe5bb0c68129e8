#pragma once
// Synthetic contact problems of one MPM substep (problem (8) of spec-sap-qn §1.2.2) for the
// tests and benchmarks of the quasi-Newton solvers (CPU and CUDA):
//   PressedBlockProblem   a block of particles (8 per cell) whose bottom layer sinks into a
//                         tilted, possibly moving plane: grid masses and v* from a P2G of all
//                         particles, one contact per bottom particle with its quadratic
//                         B-spline stencil, the lagged or SAP model prepared per contact;
//   RandomSubstepProblem  random masses, velocities, stencils, frames and contact states.
// Header-only, host-only.
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include <Eigen/Geometry>

#include "formulations/contact/contact_model.h"
#include "formulations/quasi_newton/quasi_newton_solver.h"
#include "mpm/bspline.h"

namespace contactlab::quasi_newton::examples {

// A problem with the contact model its contacts point to.
struct OwnedSubstepProblem {
  std::unique_ptr<contact::ContactModel> model;
  SubstepContactProblem problem;
};

struct PressedBlockParameters {
  int particles_per_side = 10;                           // the bottom layer, hence the contact count, is side²
  int particle_layers = 6;                               // layers above the surface (only the bottom one touches)
  double grid_spacing = 0.01;                            // h [m]
  int particles_per_cell_axis = 2;                       // particles sit h/this apart (2: 8 per cell)
  double density = 1000.0;                               // [kg/m³]
  double time_step = 1.0e-3;                             // δt [s]
  double penetration = 1.0e-3;                           // depth of the bottom layer below the surface [m]
  double jitter = 0.1;                                   // random particle offsets, fraction of the particle spacing
  double approach_speed = 0.3;                           // particle speed towards the surface [m/s]
  double slip_speed = 0.2;                               // particle speed along the surface (t̂₁) [m/s]
  double velocity_noise = 0.02;                          // random part of the particle velocities [m/s]
  double friction_coefficient = 0.4;                     // μ [-]
  double tilt = 0.3;                                     // angle between the surface normal and +z [rad]
  mpm::Vector3 surface_velocity = mpm::Vector3::Zero();  // kinematic surface [m/s]
  contact::ContactModelParameters contact;               // model "sap_cone" or "lagged"
  unsigned seed = 1;
};

namespace detail {

// Delassus estimate of one contact with lumped grid mass: Σ_i w_ip²/m_i [1/kg] (spec §1.3.2).
inline double LumpedDelassus(const GridContact& contact, const std::vector<double>& node_mass) {
  double sum = 0.0;
  for (int s = 0; s < 27; ++s) {
    if (contact.node[s] >= 0) sum += contact.weight[s] * contact.weight[s] / node_mass[contact.node[s]];
  }
  return sum;
}

}  // namespace detail

inline OwnedSubstepProblem PressedBlockProblem(const PressedBlockParameters& parameters) {
  using mpm::Matrix3;
  using mpm::Vector3;
  OwnedSubstepProblem owned;
  owned.model = contact::MakeContactModel(parameters.contact);
  SubstepContactProblem& problem = owned.problem;
  problem.model = owned.model.get();

  std::mt19937 random(parameters.seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double h = parameters.grid_spacing;
  const double spacing = h / parameters.particles_per_cell_axis;
  const double particle_mass = parameters.density * spacing * spacing * spacing;
  // Surface frame: rows of R_CW are t̂₁, t̂₂, n̂ (n̂ tilted from +z about y).
  const Vector3 normal(std::sin(parameters.tilt), 0.0, std::cos(parameters.tilt));
  const Vector3 tangent1(std::cos(parameters.tilt), 0.0, -std::sin(parameters.tilt));
  const Vector3 tangent2(0.0, 1.0, 0.0);
  Matrix3 world_to_contact;
  world_to_contact.row(0) = tangent1;
  world_to_contact.row(1) = tangent2;
  world_to_contact.row(2) = normal;
  const Vector3 origin(0.313, 0.271, 0.237);  // a point of the surface, off the grid lines

  // Particles in the surface frame, local z = signed distance to the surface.
  struct Particle {
    Vector3 position, velocity;
    double distance;
  };
  std::vector<Particle> particles;
  const int side = parameters.particles_per_side;
  for (int layer = 0; layer < parameters.particle_layers; ++layer) {
    for (int b = 0; b < side; ++b) {
      for (int a = 0; a < side; ++a) {
        const Vector3 local((a + 0.5 - 0.5 * side) * spacing + parameters.jitter * spacing * unit(random),
                            (b + 0.5 - 0.5 * side) * spacing + parameters.jitter * spacing * unit(random),
                            -parameters.penetration + layer * spacing + parameters.jitter * spacing * unit(random));
        Particle particle;
        particle.position = origin + world_to_contact.transpose() * local;
        particle.distance = local.z();
        particle.velocity = -parameters.approach_speed * normal + parameters.slip_speed * tangent1 +
                            parameters.velocity_noise * Vector3(unit(random), unit(random), unit(random));
        particles.push_back(particle);
      }
    }
  }

  // P2G of mass and momentum (PIC) over all particles, then v* with gravity.
  std::map<std::array<int, 3>, int> node_index;
  std::vector<double> mass;
  std::vector<Vector3> momentum;
  auto node_of = [&](const mpm::QuadraticStencil& stencil, int a, int b, int c) {
    const std::array<int, 3> key{stencil.base_node[0] + a, stencil.base_node[1] + b, stencil.base_node[2] + c};
    const auto [it, inserted] = node_index.emplace(key, static_cast<int>(mass.size()));
    if (inserted) {
      mass.push_back(0.0);
      momentum.push_back(Vector3::Zero());
    }
    return it->second;
  };
  for (const Particle& particle : particles) {
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particle.position, h);
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int i = node_of(stencil, a, b, c);
          const double w = stencil.Weight(a, b, c);
          mass[i] += w * particle_mass;
          momentum[i] += w * particle_mass * particle.velocity;
        }
      }
    }
  }
  const Vector3 gravity(0.0, 0.0, -9.81);
  std::vector<Vector3> free_velocity(mass.size());
  for (std::size_t i = 0; i < mass.size(); ++i) {
    free_velocity[i] = momentum[i] / mass[i] + parameters.time_step * gravity;
  }

  // Contacts: the penetrating particles; problem nodes: their stencil nodes.
  std::vector<int> problem_index(mass.size(), -1);
  for (const Particle& particle : particles) {
    if (particle.distance >= 0.0) continue;
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particle.position, h);
    GridContact contact;
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int slot = a + 3 * b + 9 * c;
          const int i = node_of(stencil, a, b, c);
          if (problem_index[i] < 0) {
            problem_index[i] = static_cast<int>(problem.node_mass.size());
            problem.node_mass.push_back(mass[i]);
            problem.free_velocity.push_back(free_velocity[i]);
          }
          contact.node[slot] = problem_index[i];
          contact.weight[slot] = stencil.Weight(a, b, c);
        }
      }
    }
    contact.world_to_contact = world_to_contact;
    contact.bias = -(world_to_contact * parameters.surface_velocity);
    contact::ContactPointState state;
    state.penetration = -particle.distance;
    state.previous_normal_velocity = normal.dot(particle.velocity - parameters.surface_velocity);
    state.friction_coefficient = parameters.friction_coefficient;
    state.delassus_scale = detail::LumpedDelassus(contact, problem.node_mass);
    contact.prepared = owned.model->Prepare(state, parameters.time_step);
    problem.contacts.push_back(contact);
  }
  for (std::size_t i = 0; i < mass.size(); ++i) {
    if (problem_index[i] < 0) problem.outside_momentum_squared += mass[i] * free_velocity[i].squaredNorm();
  }
  return owned;
}

// Random problem: node masses in [0.5, 1.5] m_node, v* in a box of ±speed, contacts whose 27
// stencil slots hold a run of consecutive nodes from a random start (about one in ten slots
// empty, never the centre; contacts overlap like neighbouring particles), positive weights
// summing to 1, random frames, biases and states (penetrating, grazing and separated).
inline OwnedSubstepProblem RandomSubstepProblem(int node_count, int contact_count,
                                                const contact::ContactModelParameters& model_parameters, unsigned seed,
                                                double time_step = 1.0e-3, double node_mass = 1.0e-3,
                                                double speed = 0.5) {
  using mpm::Vector3;
  OwnedSubstepProblem owned;
  owned.model = contact::MakeContactModel(model_parameters);
  SubstepContactProblem& problem = owned.problem;
  problem.model = owned.model.get();
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto symmetric = [&](double scale) { return scale * (2.0 * unit(random) - 1.0); };
  for (int i = 0; i < node_count; ++i) {
    problem.node_mass.push_back(node_mass * (0.5 + unit(random)));
    problem.free_velocity.emplace_back(symmetric(speed), symmetric(speed), symmetric(speed));
  }
  std::uniform_int_distribution<int> pick(0, node_count - 1);
  std::normal_distribution<double> gaussian;
  for (int c = 0; c < contact_count; ++c) {
    GridContact contact;
    const int start = pick(random);
    double total = 0.0;
    for (int s = 0; s < 27; ++s) {
      contact.node[s] = (start + s) % node_count;
      contact.weight[s] = 0.05 + unit(random);
      if (s != 13 && unit(random) < 0.1) contact.node[s] = -1;
      if (contact.node[s] >= 0) total += contact.weight[s];
    }
    for (int s = 0; s < 27; ++s) contact.weight[s] /= total;
    const Eigen::Quaterniond rotation =
        Eigen::Quaterniond(gaussian(random), gaussian(random), gaussian(random), gaussian(random)).normalized();
    contact.world_to_contact = rotation.toRotationMatrix();
    contact.bias = Vector3(symmetric(0.1), symmetric(0.1), symmetric(0.1));
    contact::ContactPointState state;
    state.penetration = time_step * symmetric(0.5) + 1.0e-3 * unit(random);
    state.previous_normal_velocity = symmetric(speed);
    state.friction_coefficient = unit(random);
    state.delassus_scale = detail::LumpedDelassus(contact, problem.node_mass);
    contact.prepared = owned.model->Prepare(state, time_step);
    problem.contacts.push_back(contact);
  }
  for (int i = 0; i < 10; ++i) problem.outside_momentum_squared += node_mass * speed * speed;
  return owned;
}

}  // namespace contactlab::quasi_newton::examples
