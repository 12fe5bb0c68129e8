// Rigid–rigid contact, shared by every formulation: the contact points of
// contact/rigid_contacts.h against hand-computed geometry (box corners and edges on a plane,
// a sphere's deepest point, skipped pairs), the constraints of dynamics/rigid_contact_step.h
// (Jacobian signs, exact Delassus scale), and under every registered formulation: a rigid
// box thrown at a free rigid box without gravity conserves total linear momentum, and a box
// dropped on a static plane comes to rest on it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "formulations/contact/rigid_contacts.h"
#include "formulations/dynamics/rigid_contact_step.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;

rigid::RigidBody Box(const std::string& name, double half, const Vector3& center, double friction) {
  rigid::Pose pose;
  pose.position = center;
  return rigid::MakeFreeBody(
      name, {rigid::Geometry{rigid::Shape::Box(Vector3::Constant(half)), rigid::Pose{}, friction}}, 1000.0, pose);
}

rigid::RigidBody Ground(double friction) {
  return rigid::MakeStaticBody("ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}},
                               rigid::Pose{});
}

TEST(RigidContacts, BoxOnPlaneTouchesWithItsBottomCornersAndEdges) {
  // A 0.1 m box 1 mm into the plane z ≤ 0; points every 0.025 m along its edges: the bottom
  // face has 4 corners and 4 × 3 edge points, all 1 mm deep; nothing else is within 5 mm.
  std::vector<rigid::RigidBody> bodies = {Ground(0.3), Box("box", 0.05, Vector3(0.0, 0.0, 0.049), 0.5)};
  const contact::RigidContactFeatures features(bodies, 0.025);
  EXPECT_EQ(features.num_points(), 8 + 12 * 3);
  const std::vector<contact::RigidContact> contacts = contact::DetectRigidContacts(bodies, features, 0.005);
  ASSERT_EQ(contacts.size(), 16u);
  for (const contact::RigidContact& point : contacts) {
    EXPECT_EQ(point.body, 0);
    EXPECT_EQ(point.other_body, 1);
    EXPECT_NEAR(point.penetration, 0.001, 1e-12);
    EXPECT_NEAR(point.position.z(), -0.001, 1e-12);
    EXPECT_NEAR(point.frame.col(2).z(), 1.0, 1e-12);
    EXPECT_EQ(point.friction_coefficient, 0.3);  // the touched geometry's μ
  }
}

TEST(RigidContacts, SphereTouchesAtItsDeepestPointWithTheExactGap) {
  // A sphere of radius 0.05 centred 0.06 above a box's top face, 0.01 off its centre line:
  // one point, gap 0.01, straight below the centre.
  std::vector<rigid::RigidBody> bodies = {Box("box", 0.05, Vector3::Zero(), 0.2)};
  rigid::Pose pose;
  pose.position = Vector3(0.01, 0.0, 0.05 + 0.06);
  bodies.push_back(
      rigid::MakeFreeBody("ball", {rigid::Geometry{rigid::Shape::Sphere(0.05), rigid::Pose{}, 0.4}}, 1000.0, pose));
  const contact::RigidContactFeatures features(bodies, 0.01);
  const std::vector<contact::RigidContact> contacts = contact::DetectRigidContacts(bodies, features, 0.02);
  ASSERT_EQ(contacts.size(), 1u);
  EXPECT_EQ(contacts[0].other_body, 1);
  EXPECT_NEAR(contacts[0].penetration, -0.01, 1e-12);
  EXPECT_NEAR((contacts[0].position - Vector3(0.01, 0.0, 0.06)).norm(), 0.0, 1e-12);
  // Outside the margin: nothing.
  EXPECT_TRUE(contact::DetectRigidContacts(bodies, features, 0.009).empty());
}

TEST(RigidContacts, SpheresTouchOnceAndStaticPairsNever) {
  std::vector<rigid::RigidBody> bodies;
  for (const double x : {0.0, 0.099}) {
    rigid::Pose pose;
    pose.position = Vector3(x, 0.0, 0.0);
    bodies.push_back(
        rigid::MakeFreeBody("ball", {rigid::Geometry{rigid::Shape::Sphere(0.05), rigid::Pose{}, 0.4}}, 1000.0, pose));
  }
  const contact::RigidContactFeatures features(bodies, 0.01);
  const std::vector<contact::RigidContact> contacts = contact::DetectRigidContacts(bodies, features, 0.0);
  ASSERT_EQ(contacts.size(), 1u);
  EXPECT_NEAR(contacts[0].penetration, 0.001, 1e-12);
  // Two static bodies overlapping: no contact.
  std::vector<rigid::RigidBody> fixed = {Ground(0.3), Ground(0.3)};
  fixed[1].geometries[0].shape = rigid::Shape::Box(Vector3::Constant(0.05));
  EXPECT_TRUE(contact::DetectRigidContacts(fixed, contact::RigidContactFeatures(fixed, 0.01), 0.01).empty());
}

TEST(RigidContactStep, ConstraintVelocityIsTouchingMinusTouchedAndDelassusIsExact) {
  // Box A resting on box B, both free: v_c = R_CW (v_A(x) − v_B(x)) for any rigid velocities,
  // and w = tr(J A⁻¹ Jᵀ)/3 computed here independently from the dense A.
  World world;
  world.gravity = Vector3::Zero();
  world.grid_spacing = 0.05;
  world.bodies = {Box("lower", 0.05, Vector3::Zero(), 0.5), Box("upper", 0.05, Vector3(0.0, 0.0, 0.0995), 0.5)};
  world.bodies[0].linear_velocity = Vector3(0.1, -0.2, 0.3);
  world.bodies[0].angular_velocity = Vector3(1.0, 2.0, -0.5);
  world.bodies[1].linear_velocity = Vector3(-0.3, 0.1, 0.2);
  world.bodies[1].angular_velocity = Vector3(-1.5, 0.5, 2.0);
  dynamics::RigidDofs rigid;
  rigid.Setup(world, 1e-3);
  const std::unique_ptr<contact::ContactModel> model = contact::MakeContactModel(contact::ContactModelParameters{});
  dynamics::RigidContacts contacts;
  contacts.Detect(world, rigid, *model, 0.001, 1e-3);
  ASSERT_FALSE(contacts.empty());
  Eigen::VectorXd velocity(12);
  velocity << world.bodies[0].linear_velocity, world.bodies[0].angular_velocity, world.bodies[1].linear_velocity,
      world.bodies[1].angular_velocity;
  const std::vector<Vector3> constraint_velocities = [&] {
    solvers::SapProblem problem;
    problem.constraints = contacts.constraints();
    return solvers::ContactVelocities(problem, velocity);
  }();
  const Eigen::MatrixXd inverse_dynamics = rigid.dynamics_matrix().inverse();
  for (int c = 0; c < contacts.size(); ++c) {
    const contact::RigidContact& point = contacts.contacts()[c];
    const Vector3 expected = point.frame.transpose() * (world.bodies[point.other_body].PointVelocity(point.position) -
                                                        world.bodies[point.body].PointVelocity(point.position));
    EXPECT_LE((constraint_velocities[c] - expected).norm(), 1e-12);
    Eigen::MatrixXd jacobian = Eigen::MatrixXd::Zero(3, 12);
    for (const solvers::JacobianBlock& block : contacts.constraints()[c].jacobian) {
      jacobian.middleCols(block.column, block.matrix.cols()) = block.matrix;
    }
    const double delassus = (jacobian * inverse_dynamics * jacobian.transpose()).trace() / 3.0;
    const contact::PreparedContact prepared = contacts.constraints()[c].contact;
    contact::ContactPointState state;
    state.penetration = point.penetration;
    state.previous_normal_velocity = point.relative_velocity.z();
    state.friction_coefficient = point.friction_coefficient;
    state.delassus_scale = delassus;
    const contact::PreparedContact reference = model->Prepare(state, 1e-3);
    EXPECT_NEAR(prepared.regularization.z(), reference.regularization.z(), 1e-12 * reference.regularization.z());
  }
}

ParameterSet Defaults(const FormulationInfo& info) {
  ParameterSet parameters;
  parameters.Declare(info.parameters);
  parameters.Validate();
  return parameters;
}

class EveryFormulation : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFormulation, ThrownBoxConservesLinearMomentum) {
  // No gravity: a 0.1 m box at 1 m/s hits an equal free box 5 mm away, off-centre by 2 cm
  // (so it also spins). The contact impulses are equal and opposite, so total linear
  // momentum is conserved to round-off whatever the solver's tolerance.
  World world;
  world.gravity = Vector3::Zero();
  world.grid_spacing = 0.025;
  world.bodies = {Box("thrown", 0.05, Vector3(-0.105, 0.02, 0.0), 0.3), Box("target", 0.05, Vector3::Zero(), 0.3)};
  world.bodies[0].linear_velocity = Vector3(1.0, 0.0, 0.0);
  const Vector3 initial = test_worlds::TotalMomentum(world).first;
  std::unique_ptr<Formulation> formulation = MakeFormulation({GetParam(), Defaults(FindFormulation(GetParam()))});
  int touching_steps = 0;
  for (int step = 0; step < 40; ++step) {
    const StepReport report = formulation->Step(world, 1e-3);
    if (report.rigid_contacts > 0 || !report.contact_forces.empty()) ++touching_steps;
  }
  const Vector3 final_momentum = test_worlds::TotalMomentum(world).first;
  EXPECT_LE((final_momentum - initial).norm(), 1e-10 * initial.norm()) << final_momentum.transpose();
  // The collision happened: the target moves forward, and the boxes did not pass through.
  EXPECT_GT(world.bodies[1].linear_velocity.x(), 0.3);
  EXPECT_LT(world.bodies[0].pose.position.x(), world.bodies[1].pose.position.x() - 0.09);
  EXPECT_GT(touching_steps, 0);
}

TEST_P(EveryFormulation, DroppedBoxComesToRestOnAPlane) {
  // A 0.1 m box released 1 cm above a static plane: after 0.4 s it rests on the plane, its
  // bottom within 1% of its size of z = 0, its speed below 1 cm/s.
  World world;
  world.grid_spacing = 0.025;
  world.bodies = {Ground(0.5), Box("box", 0.05, Vector3(0.0, 0.0, 0.06), 0.5)};
  std::unique_ptr<Formulation> formulation = MakeFormulation({GetParam(), Defaults(FindFormulation(GetParam()))});
  for (int step = 0; step < 200; ++step) formulation->Step(world, 2e-3);
  const rigid::RigidBody& box = world.bodies[1];
  EXPECT_NEAR(box.pose.position.z(), 0.05, 1e-3);
  EXPECT_LT(box.linear_velocity.norm(), 0.01);
}

std::vector<std::string> FormulationNames() {
  std::vector<std::string> names;
  for (const FormulationInfo& info : RegisteredFormulations()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(RigidContact, EveryFormulation, ::testing::ValuesIn(FormulationNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace contactlab
