// The `penalty` formulation ([ding_schroeder_penalty], spec-penalty-hybrid §2): the backward Euler Jacobian
// H of the weighted residual against central differences of the residual itself, over
// MPM-particle, rigid-sample, static and dynamic-object pairs, static and sliding, and over
// MPM particles sliding on a box's face and on its rounded edge; a rigid
// block resting on a plane carrying its weight; a block on a 6° incline sticking (μ = 0.3)
// or sliding at g(sin θ − μ cos θ) (μ = 0.05) with every contact force inside the cone; and
// identical results with one and two threads.
#include <cmath>
#include <memory>
#include <random>

#include <omp.h>

#include <gtest/gtest.h>

#include "formulations/penalty/penalty_formulation.h"
#include "formulations/penalty/penalty_step_system.h"
#include "mpm/transfers.h"
#include "test_worlds.h"

namespace contactlab::penalty {
namespace {

using mpm::Vector3;

constexpr double kGravity = 9.81;

// Ground, an MPM cube pushed into it and sliding, a free sphere pressing into the cube, and a
// free box sunk slightly into the ground and sliding: every pair kind of the formulation.
World MixedContactWorld() {
  World world;
  world.grid_spacing = 0.02;
  world.bodies.push_back(
      rigid::MakeStaticBody("ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, 0.3}}, rigid::Pose{}));
  test_worlds::AddCube(world, Vector3(0.0, 0.0, -0.009), 0.04, 1000.0, 1.0e5, Vector3(0.05, 0.0, 0.0));
  rigid::Pose sphere_pose;
  sphere_pose.position = Vector3(0.02, 0.02, 0.026 + 0.015 - 0.003);
  world.bodies.push_back(rigid::MakeFreeBody(
      "sphere", {rigid::Geometry{rigid::Shape::Sphere(0.015), rigid::Pose{}, 0.2}}, 2000.0, sphere_pose));
  rigid::Pose box_pose;
  box_pose.position = Vector3(0.15, 0.0, 0.02 - 0.001);
  box_pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(0.01, Vector3::UnitX()));
  world.bodies.push_back(rigid::MakeFreeBody(
      "box", {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.02)), rigid::Pose{}, 0.3}}, 1000.0, box_pose));
  world.bodies.back().linear_velocity = Vector3(-0.1, 0.02, 0.0);
  world.bodies.back().angular_velocity = Vector3(0.0, 0.3, 0.5);
  world.bodies[1].angular_velocity = Vector3(1.0, 0.0, 0.0);
  return world;
}

std::vector<RigidSample> SamplesOf(const World& world, double spacing) {
  std::vector<RigidSample> samples;
  for (int b = 0; b < static_cast<int>(world.bodies.size()); ++b) {
    if (!world.bodies[b].has_finite_mass()) continue;
    for (const rigid::Geometry& geometry : world.bodies[b].geometries) {
      for (const rigid::SurfaceSample& s : geometry.shape.SampleSurface(spacing)) {
        samples.push_back({b, geometry.pose_in_body.TransformPoint(s.position), 0.0});
      }
    }
  }
  // An equal share of the body mass per sample, as PenaltyFormulation gives them (the
  // derived spring stiffness of a sample pair scales with it).
  std::vector<int> count(world.bodies.size(), 0);
  for (const RigidSample& sample : samples) ++count[sample.body];
  for (RigidSample& sample : samples) sample.mass = world.bodies[sample.body].mass / count[sample.body];
  return samples;
}

// Central differences of g̃ at x, column by column, with steps `step` [m/s].
Eigen::MatrixXd CentralDifferenceJacobian(PenaltyStepSystem& system, const Eigen::VectorXd& x, double step) {
  Eigen::MatrixXd numeric(x.size(), x.size());
  Eigen::VectorXd plus, minus;
  for (int column = 0; column < x.size(); ++column) {
    Eigen::VectorXd shifted = x;
    shifted[column] += step;
    system.Evaluate(shifted, &plus, nullptr);
    shifted[column] -= 2.0 * step;
    system.Evaluate(shifted, &minus, nullptr);
    numeric.col(column) = (plus - minus) / (2.0 * step);
  }
  return numeric;
}

// One step's system over `world` (Δt 10 ms): pairs registered at the start velocities, then
// g̃ and H evaluated there after a seeded normal perturbation of `spread` [m/s], where some
// attachments must slide and others stay.
struct PerturbedStep {
  static constexpr double kDt = 0.01;

  PerturbedStep(World& world, double spread, unsigned seed)
      : world(world), grid(world.grid_spacing), samples(SamplesOf(world, 0.01)) {
    mpm::ParticleToGrid(world.particles, world.materials, 0.0, grid);
    implicit_mpm.Setup(grid, world.particles, world.materials, world.gravity, kDt);
    rigid_dofs.Setup(world, kDt);
    system =
        std::make_unique<PenaltyStepSystem>(world, kDt, grid, implicit_mpm, rigid_dofs, samples, options, attachments);
    x = system->InitialGuess();
    system->BeginIteration(x);
    std::mt19937 random(seed);
    std::normal_distribution<double> normal;
    for (int k = 0; k < x.size(); ++k) x[k] += spread * normal(random);
    system->Evaluate(x, &residual, &jacobian);
  }

  // H at x of the same step without any pair: its mass and elastic blocks.
  Eigen::MatrixXd JacobianWithoutContacts() const {
    AttachmentTable empty;
    PenaltyStepSystem bare(world, kDt, grid, implicit_mpm, rigid_dofs, samples, options, empty);
    Eigen::VectorXd bare_residual;
    SparseMatrix bare_jacobian;
    bare.Evaluate(x, &bare_residual, &bare_jacobian);
    return Eigen::MatrixXd(bare_jacobian);
  }

  World& world;
  mpm::SparseGrid grid;
  dynamics::ImplicitMpm implicit_mpm;
  dynamics::RigidDofs rigid_dofs;
  std::vector<RigidSample> samples;
  AttachmentTable attachments;
  PenaltyContactOptions options;
  std::unique_ptr<PenaltyStepSystem> system;
  Eigen::VectorXd x;
  Eigen::VectorXd residual;
  SparseMatrix jacobian;
};

TEST(PenaltyStepSystem, JacobianMatchesCentralDifferencesOfTheResidual) {
  World world = MixedContactWorld();
  PerturbedStep step(world, 0.05, 3);
  PenaltyStepSystem& system = *step.system;
  const AttachmentTable& attachments = step.attachments;
  const Eigen::VectorXd& x = step.x;
  const SparseMatrix& jacobian = step.jacobian;
  {
    // Evaluate writes into the matrix's existing storage (and its own scratch): evaluating at
    // another iterate first must not leave a trace in the Jacobian at x.
    SparseMatrix reused;
    Eigen::VectorXd other_residual;
    system.Evaluate(system.InitialGuess(), &other_residual, &reused);
    system.Evaluate(x, &other_residual, &reused);
    ASSERT_EQ(reused.nonZeros(), jacobian.nonZeros());
    EXPECT_EQ((Eigen::MatrixXd(reused) - Eigen::MatrixXd(jacobian)).cwiseAbs().maxCoeff(), 0.0);
  }

  int mpm_static = 0, mpm_dynamic_object = 0, rigid_static = 0, sliding = 0, sticking = 0;
  for (int k = 0; k < attachments.size(); ++k) {
    const ContactPair& pair = attachments.pair(k);
    const PairForce& force = system.pair_forces()[k];
    if (!force.active) continue;
    const bool dynamic_object = world.bodies[pair.body].has_finite_mass();
    if (pair.particle_kind == ParticleKind::kMpm) {
      (dynamic_object ? mpm_dynamic_object : mpm_static)++;
    } else {
      ++rigid_static;
    }
    (force.sliding ? sliding : sticking)++;
  }
  ASSERT_GT(mpm_static, 0);
  ASSERT_GT(mpm_dynamic_object, 0);
  ASSERT_GT(rigid_static, 0);
  ASSERT_GT(sliding, 0);
  ASSERT_GT(sticking, 0);

  // Central differences of g̃, column by column. A column whose difference crosses a
  // static/sliding or active switch would show a jump; the steps are 1e-7 m/s (1e-9 m of
  // motion), far below the distances of this random state to any switch.
  const Eigen::MatrixXd analytic = Eigen::MatrixXd(jacobian);
  const Eigen::MatrixXd numeric = CentralDifferenceJacobian(system, x, 1e-7);
  const double error = (numeric - analytic).norm() / analytic.norm();
  EXPECT_LT(error, 1e-6) << "pairs: mpm/static " << mpm_static << ", mpm/sphere " << mpm_dynamic_object
                         << ", rigid/static " << rigid_static << ", sliding " << sliding;
  // The contact part alone (H minus its mass and elastic blocks) must also match: it is
  // small next to the mass blocks, so check it on its own scale.
  const Eigen::MatrixXd no_contact_jacobian = step.JacobianWithoutContacts();
  const Eigen::MatrixXd contact_analytic = analytic - no_contact_jacobian;
  const Eigen::MatrixXd contact_numeric = numeric - no_contact_jacobian;
  EXPECT_LT((contact_numeric - contact_analytic).norm() / contact_analytic.norm(), 1e-5);
  // H is not symmetric (spec §2.8): friction couples normal and tangential directions.
  EXPECT_GT((contact_analytic - contact_analytic.transpose()).norm(), 1e-3 * contact_analytic.norm());
}

TEST(PenaltyStepSystem, JacobianMatchesCentralDifferencesOnARoundedBoxEdge) {
  // An MPM cube pressed 3 mm into the top face of a free box (half size 20 mm, μ 0.05) and
  // sliding over its edge at x = 20 mm: one particle column on the flat face (x = 8 mm), one where the
  // relaxation sees the edge rounded by h/4 = 5 mm (x = 18 mm: outside the core in x and z,
  // where the distance's Hessian is that of the rounded edge), the others beyond the box.
  World world;
  world.grid_spacing = 0.02;
  world.bodies.push_back(
      rigid::MakeFreeBody("box", {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.02)), rigid::Pose{}, 0.05}},
                          1000.0, rigid::Pose{}));
  test_worlds::AddCube(world, Vector3(0.003, -0.02, 0.012), 0.04, 1000.0, 1.0e5, Vector3(0.2, 0.05, 0.0));
  PerturbedStep step(world, 0.02, 7);
  PenaltyStepSystem& system = *step.system;
  const Eigen::VectorXd& x = step.x;

  // Active pairs on the rounded edge: the particle's end-of-step point lies beyond the core
  // (the box shrunk by the radius) along both x and z.
  const double radius = DerivedEdgeRadius(world.grid_spacing);
  int on_edge = 0, on_face = 0, sliding = 0;
  for (int k = 0; k < step.attachments.size(); ++k) {
    const ContactPair& pair = step.attachments.pair(k);
    const PairForce& force = system.pair_forces()[k];
    if (!force.active || pair.particle_kind != ParticleKind::kMpm) continue;
    const Vector3 point = system.MpmParticlePosition(pair.particle, x);
    const bool beyond_core_x = std::abs(point.x()) > 0.02 - radius;
    const bool beyond_core_z = std::abs(point.z()) > 0.02 - radius;
    (beyond_core_x && beyond_core_z ? on_edge : on_face)++;
    if (force.sliding) ++sliding;
  }
  ASSERT_GT(on_edge, 0);
  ASSERT_GT(on_face, 0);
  ASSERT_GT(sliding, 0);

  const Eigen::MatrixXd analytic = Eigen::MatrixXd(step.jacobian);
  const Eigen::MatrixXd numeric = CentralDifferenceJacobian(system, x, 1e-7);
  EXPECT_LT((numeric - analytic).norm() / analytic.norm(), 1e-6);
  const Eigen::MatrixXd no_contact_jacobian = step.JacobianWithoutContacts();
  const Eigen::MatrixXd contact_analytic = analytic - no_contact_jacobian;
  const Eigen::MatrixXd contact_numeric = numeric - no_contact_jacobian;
  EXPECT_LT((contact_numeric - contact_analytic).norm() / contact_analytic.norm(), 1e-5)
      << "pairs on the rounded edge " << on_edge << ", on the face " << on_face << ", sliding " << sliding;
}

PenaltyOptions DefaultOptions() {
  ParameterSet parameters;
  parameters.Declare(PenaltyOptions::Specs());
  parameters.Validate();
  PenaltyOptions options = PenaltyOptions::FromParameters(parameters);
  options.newton_tolerance = 1e-8;
  return options;
}

// A free rigid box of side 0.1 m and 1000 kg/m³ resting on a static plane tilted by θ.
World BoxOnIncline(double angle_deg, double mu) {
  World world;
  world.grid_spacing = 0.02;
  const double angle = angle_deg * M_PI / 180.0;
  rigid::Pose incline;
  incline.orientation = rigid::Quaternion(Eigen::AngleAxisd(angle, Vector3::UnitY()));
  world.bodies.push_back(
      rigid::MakeStaticBody("incline", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, mu}}, incline));
  rigid::Pose box_pose;
  box_pose.orientation = incline.orientation;
  box_pose.position = incline.orientation * Vector3(0.0, 0.0, 0.05);
  world.bodies.push_back(rigid::MakeFreeBody(
      "box", {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(0.05)), rigid::Pose{}, mu}}, 1000.0, box_pose));
  return world;
}

TEST(PenaltyFormulation, RigidBlockOnInclineSticksOrSlidesInsideTheCone) {
  const double angle_deg = 6.0;
  const double angle = angle_deg * M_PI / 180.0;
  for (const double mu : {0.3, 0.05}) {
    World world = BoxOnIncline(angle_deg, mu);
    PenaltyFormulation penalty(DefaultOptions());
    const Vector3 downslope = rigid::Quaternion(Eigen::AngleAxisd(angle, Vector3::UnitY())) * Vector3::UnitX();
    const Vector3 normal = rigid::Quaternion(Eigen::AngleAxisd(angle, Vector3::UnitY())) * Vector3::UnitZ();
    const double dt = 0.005;
    double worst_margin = -1.0;
    Vector3 normal_force_sum = Vector3::Zero();
    const int steps = 100;
    const Vector3 start = world.bodies[1].pose.position;
    double speed_at_half = 0.0;
    for (int step = 0; step < steps; ++step) {
      const StepReport report = penalty.Step(world, dt);
      ASSERT_TRUE(report.converged) << penalty.last_step().newton.BriefReport();
      Vector3 total = Vector3::Zero();
      for (const ContactForce& contact : report.contact_forces) {
        const double normal_part = contact.force.dot(contact.normal);
        const double tangential = (contact.force - normal_part * contact.normal).norm();
        worst_margin = std::max(worst_margin, (tangential - mu * normal_part) / (contact.force.norm() + 1e-300));
        total += contact.force;
      }
      if (step >= steps / 2) normal_force_sum += total;
      if (step == steps / 2 - 1) speed_at_half = world.bodies[1].linear_velocity.dot(downslope);
    }
    const double mass = world.bodies[1].mass;
    // [ding_schroeder_penalty] Fig. 13: the cone is never violated, up to round-off.
    EXPECT_LE(worst_margin, 1e-9) << "mu = " << mu;
    // The plane carries the weight: mean normal force m g cos θ over the second half.
    const Vector3 mean_force = normal_force_sum / (steps / 2);
    EXPECT_NEAR(mean_force.dot(normal), mass * kGravity * std::cos(angle), 0.01 * mass * kGravity);
    const double travelled = (world.bodies[1].pose.position - start).dot(downslope);
    if (mu > std::tan(angle)) {
      // Sticking: tangential load m g sin θ, no creep beyond the spring's elastic offset.
      EXPECT_NEAR(mean_force.dot(downslope), -mass * kGravity * std::sin(angle), 0.01 * mass * kGravity);
      EXPECT_LT(std::abs(travelled), 1e-3);
    } else {
      // Sliding: a = g (sin θ − μ cos θ) once the springs have loaded (measured over the
      // second half of the run).
      const double expected = kGravity * (std::sin(angle) - mu * std::cos(angle));
      const double speed_at_end = world.bodies[1].linear_velocity.dot(downslope);
      const double measured = (speed_at_end - speed_at_half) / (0.5 * steps * dt);
      EXPECT_NEAR(measured, expected, 0.02 * expected);
    }
  }
}

TEST(PenaltyFormulation, SameResultWithOneAndTwoThreads) {
  auto run = [](int threads) {
    omp_set_num_threads(threads);
    World world = MixedContactWorld();
    PenaltyFormulation penalty(DefaultOptions());
    for (int step = 0; step < 5; ++step) penalty.Step(world, 0.005);
    omp_set_num_threads(2);
    return world;
  };
  const World one = run(1);
  const World two = run(2);
  for (int p = 0; p < static_cast<int>(one.particles.size()); ++p) {
    ASSERT_EQ(one.particles.position[p], two.particles.position[p]) << "particle " << p;
  }
  for (std::size_t b = 0; b < one.bodies.size(); ++b) {
    EXPECT_EQ(one.bodies[b].pose.position, two.bodies[b].pose.position);
    EXPECT_EQ(one.bodies[b].linear_velocity, two.bodies[b].linear_velocity);
  }
}

TEST(PenaltyFormulation, BadOptionsNameTheKey) {
  ParameterSet parameters;
  parameters.Declare(PenaltyOptions::Specs());
  parameters.SetFromText("penalty.gmres_tolerance", "2", "test");
  try {
    parameters.Validate();
    PenaltyOptions::FromParameters(parameters);
    FAIL() << "accepted gmres_tolerance = 2";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("penalty.gmres_tolerance"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace contactlab::penalty
