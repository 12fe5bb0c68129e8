// Contact frames, the project's sign convention, particle contact detection, and the
// Coulomb collision impulse shared by explicit formulations.
#include <omp.h>

#include <gtest/gtest.h>

#include "formulations/contact/contact_frame.h"
#include "formulations/contact/coulomb_collision.h"
#include "formulations/contact/particle_contacts.h"

namespace contactlab::contact {
namespace {

TEST(ContactFrame, RightHandedWithNormalAlongZ) {
  for (const Vector3& direction : {Vector3(0, 0, 1), Vector3(1, 2, 3), Vector3(-1, 0, 0), Vector3(0.3, -0.9, 0.1)}) {
    const Vector3 normal = direction.normalized();
    const Matrix3 frame = MakeContactFrame(normal);
    EXPECT_LT((frame.transpose() * frame - Matrix3::Identity()).norm(), 1e-14);
    EXPECT_NEAR(frame.determinant(), 1.0, 1e-14);
    EXPECT_LT((frame.col(2) - normal).norm(), 1e-15);
  }
}

rigid::RigidBody GroundPlane(double friction) {
  return rigid::MakeStaticBody("ground", {rigid::Geometry{rigid::Shape::HalfSpace(), rigid::Pose{}, friction}},
                               rigid::Pose{});
}

TEST(ParticleContacts, SignConventionForAParticleSinkingIntoTheGround) {
  mpm::Particles particles;
  particles.Add(Vector3(0.1, 0.2, -0.01), Vector3(0.5, 0.0, -2.0), 1.0, 1.0, 0);  // inside, moving down
  particles.Add(Vector3(0.0, 0.0, 0.02), Vector3::Zero(), 1.0, 1.0, 0);           // above the ground
  const auto contacts = DetectParticleContacts(particles, {GroundPlane(0.4)});
  ASSERT_EQ(contacts.size(), 1u);
  const ParticleContact& contact = contacts[0];
  EXPECT_EQ(contact.particle, 0);
  EXPECT_NEAR(contact.penetration, 0.01, 1e-15);
  EXPECT_LT((contact.frame.col(2) - Vector3::UnitZ()).norm(), 1e-15);  // outward normal of the ground
  EXPECT_NEAR(contact.relative_velocity.z(), -2.0, 1e-15);             // v_n < 0: approaching
  EXPECT_NEAR(contact.relative_velocity.head<2>().norm(), 0.5, 1e-15);
  EXPECT_EQ(contact.friction_coefficient, 0.4);
}

TEST(ParticleContacts, RelativeVelocityUsesTheRigidPointVelocity) {
  rigid::RigidBody box = rigid::MakeFreeBody(
      "box", {rigid::Geometry{rigid::Shape::Box(rigid::Vector3(0.5, 0.5, 0.5)), rigid::Pose{}, 0.0}}, 100.0,
      rigid::Pose{});
  box.linear_velocity = Vector3(1.0, 0.0, 0.0);
  box.angular_velocity = Vector3(0.0, 0.0, 2.0);
  mpm::Particles particles;
  const Vector3 x(0.45, 0.2, 0.0);  // just inside the +x face
  particles.Add(x, Vector3(1.0, 0.0, 0.0), 1.0, 1.0, 0);
  const auto contacts = DetectParticleContacts(particles, {box});
  ASSERT_EQ(contacts.size(), 1u);
  const Vector3 expected =
      contacts[0].frame.transpose() * (Vector3(1, 0, 0) - (box.linear_velocity + box.angular_velocity.cross(x)));
  EXPECT_LT((contacts[0].relative_velocity - expected).norm(), 1e-15);
  EXPECT_LT((contacts[0].frame.col(2) - Vector3::UnitX()).norm(), 1e-15);
}

TEST(ParticleContacts, OrderedByParticleForAnyThreadCount) {
  mpm::Particles particles;
  for (int p = 0; p < 2000; ++p) {
    particles.Add(Vector3(0.001 * p - 1.0, 0.0, (p % 3 == 0) ? -0.01 : 0.01), Vector3::Zero(), 1.0, 1.0, 0);
  }
  const std::vector<rigid::RigidBody> bodies = {GroundPlane(0.0), GroundPlane(0.1)};
  omp_set_num_threads(1);
  const auto serial = DetectParticleContacts(particles, bodies);
  omp_set_num_threads(2);
  const auto parallel = DetectParticleContacts(particles, bodies);
  ASSERT_EQ(serial.size(), parallel.size());
  EXPECT_EQ(serial.size(), 2u * 667u);
  for (std::size_t k = 0; k < serial.size(); ++k) {
    EXPECT_EQ(serial[k].particle, parallel[k].particle);
    EXPECT_EQ(serial[k].body, parallel[k].body);
    if (k > 0) {
      EXPECT_LE(std::make_pair(serial[k - 1].particle, serial[k - 1].body),
                std::make_pair(serial[k].particle, serial[k].body));
    }
  }
}

TEST(CoulombCollision, SeparatingVelocitiesGetNoImpulse) {
  const auto result = ResolveCoulombCollision(Vector3(0, 0, -1), Vector3(0, 0, 1), Vector3::UnitZ(), 1.0, 0.5, 0.0);
  EXPECT_FALSE(result.approaching);
  EXPECT_EQ(result.impulse_on_second, Vector3::Zero());
}

TEST(CoulombCollision, StickingRemovesAllRelativeMotionAndConservesMomentum) {
  const double first_mass = 3.0, second_mass = 1.0;
  const double reduced = first_mass * second_mass / (first_mass + second_mass);
  const Vector3 first(0.1, 0.0, 1.0), second(0.0, 0.0, -0.5), normal = Vector3::UnitZ();
  const auto result = ResolveCoulombCollision(first, second, normal, reduced, 1.0, 0.0);
  ASSERT_TRUE(result.sticking);
  const Vector3 first_after = first - result.impulse_on_second / first_mass;
  const Vector3 second_after = second + result.impulse_on_second / second_mass;
  EXPECT_LT((first_after - second_after).norm(), 1e-15);
  EXPECT_LT((first_mass * first + second_mass * second - first_mass * first_after - second_mass * second_after).norm(),
            1e-15);
}

TEST(CoulombCollision, SlidingIsCappedByTheConeAndNeverReverses) {
  const double reduced = 0.5;
  const Vector3 first(2.0, 0.0, 0.2), second(0.0, 0.0, 0.0), normal = Vector3::UnitZ();
  const double friction = 0.3;
  const auto result = ResolveCoulombCollision(first, second, normal, reduced, friction, 0.0);
  ASSERT_FALSE(result.sticking);
  const double normal_impulse = result.impulse_on_second.dot(normal);
  EXPECT_NEAR(normal_impulse, reduced * 0.2, 1e-15);
  EXPECT_NEAR(result.impulse_on_second.x(), friction * normal_impulse, 1e-15);
  // The relative slip shrinks by J_t / m̄ and keeps its direction.
  EXPECT_GT(2.0 - result.impulse_on_second.x() / reduced, 0.0);
}

TEST(CoulombCollision, RestitutionReversesTheApproach) {
  const auto result = ResolveCoulombCollision(Vector3(0, 0, 1), Vector3::Zero(), Vector3::UnitZ(), 1.0, 0.0, 1.0);
  // Infinite-mass wall moving at +1 m/s into a resting node of mass 1 (m̄ = m): the node leaves at 2 m/s.
  EXPECT_NEAR(result.impulse_on_second.z(), 2.0, 1e-15);
}

}  // namespace
}  // namespace contactlab::contact
