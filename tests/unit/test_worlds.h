#pragma once
// Small worlds shared by the formulation tests.
#include <omp.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "formulations/formulation.h"
#include "formulations/world.h"
#include "mpm/sampling.h"

namespace contactlab::test_worlds {

using mpm::Vector3;

// Adds an elastic (linear corotated, ν = 0.3) cube of MPM material with corner `low`.
inline void AddCube(World& world, const Vector3& low, double side, double density, double youngs_modulus,
                    const Vector3& velocity) {
  mpm::SamplingOptions sampling;
  sampling.grid_spacing = world.grid_spacing;
  const int material = static_cast<int>(world.materials.size());
  world.materials.push_back(mpm::MakeMaterial("cube", "linear_corotated", density, youngs_modulus, 0.3));
  const auto positions = mpm::SampleSolid([](const Vector3&) { return -1.0; },
                                          Eigen::AlignedBox3d(low, low + Vector3::Constant(side)), sampling);
  mpm::AddSampledParticles(positions, sampling, density, velocity, material, world.particles);
}

inline double LowestParticle(const World& world) {
  double lowest = std::numeric_limits<double>::infinity();
  for (const Vector3& x : world.particles.position) lowest = std::min(lowest, x.z());
  return lowest;
}

// Total linear and angular momentum (about the origin) of particles and rigid bodies.
inline std::pair<Vector3, Vector3> TotalMomentum(const World& world) {
  Vector3 linear = mpm::LinearMomentum(world.particles);
  Vector3 angular = mpm::AngularMomentum(world.particles, world.grid_spacing);
  for (const rigid::RigidBody& body : world.bodies) {
    linear += body.LinearMomentum();
    angular += body.AngularMomentum();
  }
  return {linear, angular};
}

// No gravity: a 0.1 m MPM cube at 1 m/s flies at a free rigid box of equal mass, off-centre.
inline World CubeHitsBox() {
  World world;
  world.gravity = Vector3::Zero();
  world.grid_spacing = 0.025;
  AddCube(world, Vector3(-0.16, -0.03, -0.05), 0.1, 1000.0, 1e5, Vector3(1.0, 0.0, 0.0));
  world.bodies.push_back(rigid::MakeFreeBody(
      "box", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(0.05, 0.05, 0.05)), rigid::Pose{}, 0.4}}, 1000.0,
      rigid::Pose{}));
  return world;
}

// CubeHitsBox under gravity above a static ground, ten steps with 1 and then 2 threads of
// the formulation `make` returns: particles and the box agree bit for bit (fixed-chunk
// reductions, serial exchanges).
inline void ExpectThreadCountDoesNotChangeTheResult(const std::function<std::unique_ptr<Formulation>()>& make) {
  std::vector<World> results;
  for (const int threads : {1, 2}) {
    omp_set_num_threads(threads);
    World world = CubeHitsBox();
    world.gravity = Vector3(0.0, 0.0, -9.81);
    world.bodies.push_back(rigid::MakeStaticBody("ground",
                                                 {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.5}},
                                                 rigid::Pose{Vector3(0.0, 0.0, -0.06), rigid::Quaternion::Identity()}));
    const std::unique_ptr<Formulation> formulation = make();
    for (int step = 0; step < 10; ++step) formulation->Step(world, 0.01);
    results.push_back(std::move(world));
  }
  for (std::size_t p = 0; p < results[0].particles.size(); ++p) {
    ASSERT_EQ(results[0].particles.position[p], results[1].particles.position[p]) << "particle " << p;
    ASSERT_EQ(results[0].particles.velocity[p], results[1].particles.velocity[p]) << "particle " << p;
  }
  EXPECT_EQ(results[0].bodies[0].pose.position, results[1].bodies[0].pose.position);
  EXPECT_EQ(results[0].bodies[0].angular_velocity, results[1].bodies[0].angular_velocity);
}

}  // namespace contactlab::test_worlds
