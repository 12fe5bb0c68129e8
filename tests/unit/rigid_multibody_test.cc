// Tests of the articulated rigid-body layer: the mass matrix (CRBA) against link Jacobians
// and the Hessian of the kinetic energy, inverse/forward dynamics round trips, Jacobians
// against finite differences of positions, bias forces (RNEA) against Lagrange's equations
// and the momentum balance of a free-floating tree, and analytic motions under Step: a
// prismatic link under constant effort, a small-angle pendulum's period, a spinning free
// body, PD set-point tracking (overshoot, stiff gains), prescribed carriers, and impulses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "rigid/multibody.h"

namespace contactlab::rigid {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
const Vector3 kGravity(0.0, 0.0, -9.81);  // [m/s²]

Quaternion Rotation(double angle, const Vector3& axis) {
  return Quaternion(Eigen::AngleAxisd(angle, axis.normalized()));
}

// Inertia about the centre of mass with the given principal moments [kg m²] along rotated
// axes, so that it is not diagonal in the link frame.
Matrix3 RotatedInertia(const Vector3& principal_moments, const Quaternion& axes) {
  const Matrix3 rotation = axes.toRotationMatrix();
  return rotation * principal_moments.asDiagonal() * rotation.transpose();
}

JointSpec Joint(const std::string& name, JointType type, int parent, const Pose& frame_on_parent,
                const Pose& frame_on_child, const Vector3& axis = Vector3::UnitZ()) {
  JointSpec joint;
  joint.name = name;
  joint.type = type;
  joint.parent = parent;
  joint.frame_on_parent = frame_on_parent;
  joint.frame_on_child = frame_on_child;
  joint.axis = axis;
  return joint;
}

// A free base (F and M both offset from the world and the centre of mass) carrying a
// revolute arm with a welded payload, a prismatic slider on the arm and a revolute tip on
// the slider. Every inertia is non-diagonal in its link frame. nv = 6 + 1 + 1 + 1 = 9.
MultibodyTree FreeBaseTree() {
  MultibodyTree tree;
  tree.AddLink("base", 2.0, RotatedInertia({0.05, 0.07, 0.09}, Rotation(0.4, {1, 2, 0})),
               Joint("base_free", JointType::kFree, -1, Pose{Vector3(0.1, -0.2, 0.3), Rotation(0.3, {1, 2, 3})},
                     Pose{Vector3(0.05, -0.1, 0.02), Rotation(-0.4, {0, 1, 1})}));
  tree.AddLink("arm", 1.2, RotatedInertia({0.02, 0.03, 0.04}, Rotation(-0.7, {0, 1, 2})),
               Joint("arm_revolute", JointType::kRevolute, 0, Pose{Vector3(0.4, 0.1, -0.2), Rotation(0.5, {1, 0, 1})},
                     Pose{Vector3(-0.3, 0.05, 0.1), Rotation(-0.2, {0, 0, 1})}, Vector3(0.3, 1.0, 0.2)));
  tree.AddLink(
      "slider", 0.7, RotatedInertia({0.01, 0.015, 0.012}, Rotation(1.1, {1, 1, 1})),
      Joint("slider_prismatic", JointType::kPrismatic, 1, Pose{Vector3(0.2, 0.3, 0.0), Rotation(0.7, {1, 1, 0})},
            Pose{Vector3(0.1, 0.0, -0.15), Rotation(0.3, {1, 0, 0})}, Vector3(1.0, -0.2, 0.5)));
  tree.AddLink("tip", 0.4, RotatedInertia({0.004, 0.006, 0.005}, Rotation(0.9, {2, 0, 1})),
               Joint("tip_revolute", JointType::kRevolute, 2, Pose{Vector3(0.0, 0.25, 0.1), Rotation(-0.6, {0, 1, 0})},
                     Pose{Vector3(0.0, -0.12, 0.0), Rotation(0.2, {1, 0, 0})}, Vector3(0.0, 0.4, 1.0)));
  tree.AddLink("payload", 0.5, RotatedInertia({0.003, 0.002, 0.004}, Rotation(0.2, {0, 1, 1})),
               Joint("payload_weld", JointType::kWeld, 1, Pose{Vector3(0.0, -0.3, 0.2), Rotation(0.1, {0, 1, 0})},
                     Pose{Vector3(0.02, 0.0, 0.0), Quaternion::Identity()}));
  return tree;
}

// Revolute – prismatic – revolute chain fixed to the world; q̇ = v, so Lagrange's equations
// apply coordinate by coordinate.
MultibodyTree FixedChain() {
  MultibodyTree tree;
  tree.AddLink(
      "shoulder", 1.5, RotatedInertia({0.03, 0.05, 0.04}, Rotation(0.3, {1, 0, 1})),
      Joint("shoulder_revolute", JointType::kRevolute, -1, Pose{Vector3(0.0, 0.0, 1.0), Rotation(0.2, {1, 0, 0})},
            Pose{Vector3(-0.2, 0.05, 0.1), Rotation(0.4, {0, 1, 0})}, Vector3(0.2, 1.0, 0.1)));
  tree.AddLink(
      "forearm", 0.9, RotatedInertia({0.02, 0.01, 0.015}, Rotation(-0.5, {1, 1, 0})),
      Joint("forearm_prismatic", JointType::kPrismatic, 0, Pose{Vector3(0.3, 0.0, -0.1), Rotation(0.6, {0, 0, 1})},
            Pose{Vector3(-0.1, 0.02, 0.0), Rotation(0.1, {1, 0, 0})}, Vector3(1.0, 0.0, 0.3)));
  tree.AddLink("hand", 0.5, RotatedInertia({0.005, 0.004, 0.006}, Rotation(0.8, {0, 1, 1})),
               Joint("hand_revolute", JointType::kRevolute, 1, Pose{Vector3(0.15, 0.1, 0.0), Rotation(-0.3, {1, 1, 1})},
                     Pose{Vector3(0.0, -0.1, 0.05), Rotation(0.5, {0, 0, 1})}, Vector3(1.0, 0.5, 0.0)));
  return tree;
}

// Random positions (unit quaternion for free joints) and velocities in [−1, 1].
void RandomizeState(MultibodyTree& tree, std::mt19937& generator) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& value : tree.positions()) value = uniform(generator);
  for (double& value : tree.velocities()) value = uniform(generator);
  for (int link = 0; link < tree.num_links(); ++link) {
    if (tree.joint(link).type != JointType::kFree) continue;
    auto quaternion = tree.positions().segment<4>(tree.position_start(link) + 3);
    quaternion.normalize();
  }
  tree.UpdateKinematics();
}

// q + ε N(q) v, written from the header's definition of N (free joints: ṗ_FM = R_FW v_M with
// v_M = v_com + ω × (p_WM − p_WC), q̇_quat = ½ [0, R_FW ω] ⊗ q_quat, then renormalized).
VectorX AdvancedPositions(const MultibodyTree& tree, double epsilon) {
  VectorX positions = tree.positions();
  const VectorX& velocities = tree.velocities();
  for (int link = 0; link < tree.num_links(); ++link) {
    const JointSpec& joint = tree.joint(link);
    const int p = tree.position_start(link);
    const int v = tree.velocity_start(link);
    if (joint.type == JointType::kRevolute || joint.type == JointType::kPrismatic) {
      positions[p] += epsilon * velocities[v];
    } else if (joint.type == JointType::kFree) {
      const Pose& pose = tree.link_pose(link);
      const Vector3 joint_origin = pose.TransformPoint(joint.frame_on_child.position);
      const Vector3 angular = velocities.segment<3>(v);
      const Vector3 origin_velocity = velocities.segment<3>(v + 3) + angular.cross(joint_origin - pose.position);
      const Quaternion world_to_joint = joint.frame_on_parent.orientation.conjugate();
      positions.segment<3>(p) += epsilon * (world_to_joint * origin_velocity);
      const Vector3 angular_in_joint = world_to_joint * angular;
      const Quaternion orientation(positions[p + 3], positions[p + 4], positions[p + 5], positions[p + 6]);
      const Quaternion rate =
          Quaternion(0.0, angular_in_joint.x(), angular_in_joint.y(), angular_in_joint.z()) * orientation;
      Eigen::Vector4d updated(orientation.w(), orientation.x(), orientation.y(), orientation.z());
      updated += 0.5 * epsilon * Eigen::Vector4d(rate.w(), rate.x(), rate.y(), rate.z());
      positions.segment<4>(p + 3) = updated.normalized();
    }
  }
  return positions;
}

void SetPositions(MultibodyTree& tree, const VectorX& positions) {
  tree.positions() = positions;
  tree.UpdateKinematics();
}

// Sum of link velocity magnitudes: each time derivative of a position along the motion
// brings at most this factor [1/s for lengths of order 1 m], used to bound Taylor remainders.
double RateScale(const MultibodyTree& tree) {
  return tree.velocities().lpNorm<1>();
}

// Largest distance of a link centre from the world origin, plus one [m].
double LengthScale(const MultibodyTree& tree) {
  double length = 1.0;
  for (int link = 0; link < tree.num_links(); ++link) {
    length = std::max(length, 1.0 + tree.link_pose(link).position.norm());
  }
  return length;
}

double TotalMass(const MultibodyTree& tree) {
  double mass = 0.0;
  for (int link = 0; link < tree.num_links(); ++link) mass += tree.link_mass(link);
  return mass;
}

Matrix3 WorldInertia(const MultibodyTree& tree, int link) {
  const Matrix3 rotation = tree.link_pose(link).rotation();
  return rotation * tree.link_inertia(link) * rotation.transpose();
}

// ---- Construction ----------------------------------------------------------------------

TEST(MultibodyTree, CountsOffsetsAndInitialState) {
  MultibodyTree tree = FreeBaseTree();
  EXPECT_EQ(tree.num_links(), 5);
  EXPECT_EQ(tree.num_positions(), 10);
  EXPECT_EQ(tree.num_velocities(), 9);
  EXPECT_EQ(tree.position_start(0), 0);
  EXPECT_EQ(tree.velocity_start(0), 0);
  EXPECT_EQ(tree.position_start(1), 7);
  EXPECT_EQ(tree.velocity_start(1), 6);
  EXPECT_EQ(tree.velocity_start(3), 8);
  EXPECT_EQ(tree.position_start(4), -1);
  EXPECT_EQ(tree.velocity_start(4), -1);
  EXPECT_EQ(tree.link_name(2), "slider");
  EXPECT_DOUBLE_EQ(tree.link_mass(3), 0.4);
  EXPECT_NEAR(tree.joint(1).axis.norm(), 1.0, 4 * kEpsilon);  // stored normalized
  // At q = 0 every joint is at its reference: X_WC = X_WP X_PF X_CM⁻¹.
  const Pose expected_base = tree.joint(0).frame_on_parent * tree.joint(0).frame_on_child.Inverse();
  EXPECT_LT((tree.link_pose(0).position - expected_base.position).norm(), 8 * kEpsilon);
  const Pose expected_arm = tree.link_pose(0) * tree.joint(1).frame_on_parent * tree.joint(1).frame_on_child.Inverse();
  EXPECT_LT((tree.link_pose(1).position - expected_arm.position).norm(), 8 * kEpsilon);
  EXPECT_DOUBLE_EQ(tree.positions()[3], 1.0);  // identity quaternion w
}

TEST(MultibodyTree, InitialPositionAndVelocityOfOneDofJoints) {
  MultibodyTree tree;
  JointSpec joint = Joint("hinge", JointType::kRevolute, -1, Pose{}, Pose{Vector3(0, 0, 0.5), Quaternion::Identity()},
                          Vector3::UnitY());
  joint.initial_position = 0.3;
  joint.initial_velocity = -1.2;
  tree.AddLink("bob", 1.0, Matrix3::Identity() * 0.01, joint);
  EXPECT_DOUBLE_EQ(tree.positions()[0], 0.3);
  EXPECT_DOUBLE_EQ(tree.velocities()[0], -1.2);
  // Centre 0.5 m below the pivot, turned by 0.3 rad about y: (−0.5 sin 0.3, 0, −0.5 cos 0.3).
  EXPECT_LT((tree.link_pose(0).position - Vector3(-0.5 * std::sin(0.3), 0, -0.5 * std::cos(0.3))).norm(), 8 * kEpsilon);
}

TEST(MultibodyTree, AddLinkRejectsInvalidLinks) {
  const Matrix3 inertia = Matrix3::Identity() * 0.01;
  MultibodyTree tree;
  tree.AddLink("first", 1.0, inertia, Joint("first_free", JointType::kFree, -1, {}, {}));
  const auto message_of = [&](const std::string& name, double mass, const JointSpec& joint) {
    MultibodyTree copy = tree;
    try {
      copy.AddLink(name, mass, inertia, joint);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("no exception");
  };
  const std::string later_parent = message_of("orphan", 1.0, Joint("orphan_joint", JointType::kRevolute, 1, {}, {}));
  EXPECT_NE(later_parent.find("orphan"), std::string::npos) << later_parent;
  EXPECT_NE(later_parent.find("orphan_joint"), std::string::npos) << later_parent;
  EXPECT_NE(message_of("x", 1.0, Joint("x_joint", JointType::kRevolute, -2, {}, {})).find("parent"), std::string::npos);
  EXPECT_NE(message_of("floater", 1.0, Joint("floater_free", JointType::kFree, 0, {}, {})).find("floater_free"),
            std::string::npos);
  EXPECT_NE(message_of("ghost", 0.0, Joint("ghost_hinge", JointType::kRevolute, 0, {}, {})).find("ghost"),
            std::string::npos);
  // A massless link welded to a moving link moves too.
  EXPECT_NE(message_of("sticker", 0.0, Joint("sticker_weld", JointType::kWeld, 0, {}, {})).find("positive mass"),
            std::string::npos);
  EXPECT_NE(
      message_of("spinner", 1.0, Joint("spinner_hinge", JointType::kRevolute, 0, {}, {}, Vector3::Zero())).find("axis"),
      std::string::npos);
  JointSpec prescribed = Joint("carrier_prescribed", JointType::kPrescribed, -1, {}, {}, Vector3::UnitX());
  EXPECT_NE(message_of("carrier", 1.0, prescribed).find("prescribed"), std::string::npos);
  JointSpec pd_on_free = Joint("pd_free", JointType::kFree, -1, {}, {});
  pd_on_free.pd.enabled = true;
  pd_on_free.pd.target = TimeFunction::Constant(0.0);
  EXPECT_NE(message_of("pd", 1.0, pd_on_free).find("PD"), std::string::npos);
  // A massless link welded to the world does not move and is accepted.
  EXPECT_NO_THROW(tree.AddLink("ground", 0.0, Matrix3::Zero(), Joint("ground_weld", JointType::kWeld, -1, {}, {})));
}

TEST(MultibodyTree, IsCopyableAndCopiesAreIndependent) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(7);
  RandomizeState(tree, generator);
  MultibodyTree copy = tree;
  copy.Step(1e-3, kGravity, VectorX::Zero(copy.num_velocities()));
  EXPECT_NE(copy.positions(), tree.positions());
  EXPECT_DOUBLE_EQ(tree.time(), 0.0);
  MultibodyTree moved = std::move(copy);
  EXPECT_DOUBLE_EQ(moved.time(), 1e-3);
}

TEST(MultibodyTree, SetFreeJointStateRoundTrips) {
  MultibodyTree tree = FreeBaseTree();
  const Pose pose{Vector3(0.3, -0.7, 1.1), Rotation(1.3, {0.2, -1.0, 0.4})};
  const Vector3 angular(0.4, -0.9, 1.7);
  const Vector3 linear(-0.2, 0.6, 0.3);
  tree.SetFreeJointState(0, pose, angular, linear);
  EXPECT_LT((tree.link_pose(0).position - pose.position).norm(), 16 * kEpsilon);
  EXPECT_LT(tree.link_pose(0).orientation.angularDistance(pose.orientation), 16 * kEpsilon);
  const SpatialVector velocity = tree.link_spatial_velocity(0);
  EXPECT_LT((velocity.head<3>() - angular).norm(), 16 * kEpsilon);
  EXPECT_LT((velocity.tail<3>() - linear).norm(), 16 * kEpsilon);
  EXPECT_THROW(tree.SetFreeJointState(1, pose, angular, linear), std::invalid_argument);
}

// ---- Mass matrix -----------------------------------------------------------------------

TEST(MultibodyTree, MassMatrixIsSymmetricPositiveDefiniteAndMatchesLinkJacobians) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(11);
  for (int trial = 0; trial < 5; ++trial) {
    RandomizeState(tree, generator);
    const MatrixX mass_matrix = tree.MassMatrix();
    // Round-off of CRBA: a few dozen operations per entry on quantities of size ‖M‖.
    const double tolerance = 64 * kEpsilon * mass_matrix.norm();
    EXPECT_LT((mass_matrix - mass_matrix.transpose()).norm(), tolerance);
    EXPECT_EQ(mass_matrix.llt().info(), Eigen::Success);  // Cholesky exists: SPD

    // M = Σ_links J_lᵀ diag(I_W, m 1) J_l.
    MatrixX from_jacobians = MatrixX::Zero(tree.num_velocities(), tree.num_velocities());
    for (int link = 0; link < tree.num_links(); ++link) {
      Eigen::Matrix<double, 6, 6> inertia = Eigen::Matrix<double, 6, 6>::Zero();
      inertia.topLeftCorner<3, 3>() = WorldInertia(tree, link);
      inertia.bottomRightCorner<3, 3>() = tree.link_mass(link) * Matrix3::Identity();
      const SpatialJacobian jacobian = tree.LinkJacobian(link);
      from_jacobians += jacobian.transpose() * inertia * jacobian;
    }
    EXPECT_LT((mass_matrix - from_jacobians).norm(), tolerance);

    // J_l v is the link's spatial velocity [ω; v of the centre].
    for (int link = 0; link < tree.num_links(); ++link) {
      const SpatialVector from_jacobian = tree.LinkJacobian(link) * tree.velocities();
      EXPECT_LT((from_jacobian - tree.link_spatial_velocity(link)).norm(),
                64 * kEpsilon * (1.0 + tree.link_spatial_velocity(link).norm()));
    }
  }
}

TEST(MultibodyTree, FreeBodyMassMatrixIsBlockDiagonal) {
  MultibodyTree tree;
  const Matrix3 inertia = RotatedInertia({0.1, 0.2, 0.25}, Rotation(0.5, {1, 1, 0}));
  tree.AddLink("box", 3.0, inertia,
               Joint("box_free", JointType::kFree, -1, {}, Pose{Vector3(0.3, -0.2, 0.1), Rotation(0.7, {0, 0, 1})}));
  tree.SetFreeJointState(0, Pose{Vector3(1, 2, 3), Rotation(0.9, {1, -1, 2})}, {0.1, 0.2, 0.3}, {1, 0, 0});
  Eigen::Matrix<double, 6, 6> expected = Eigen::Matrix<double, 6, 6>::Zero();
  expected.topLeftCorner<3, 3>() = WorldInertia(tree, 0);
  expected.bottomRightCorner<3, 3>() = 3.0 * Matrix3::Identity();
  EXPECT_LT((tree.MassMatrix() - expected).norm(), 64 * kEpsilon * expected.norm());
}

// T(v) = ½ vᵀ M v is exactly quadratic in v, so the central second difference
// [T(v+h eᵢ+h eⱼ) − T(v+h eᵢ−h eⱼ) − T(v−h eᵢ+h eⱼ) + T(v−h eᵢ−h eⱼ)] / (4h²) has no truncation
// error; h = 1 leaves only round-off, ≈ 4 · 64 ε T_max / (4h²).
TEST(MultibodyTree, MassMatrixIsHessianOfKineticEnergy) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(5);
  RandomizeState(tree, generator);
  const MatrixX mass_matrix = tree.MassMatrix();
  const VectorX velocities = tree.velocities();
  const int nv = tree.num_velocities();
  const double step = 1.0;
  const auto energy_at = [&](const VectorX& v) {
    tree.velocities() = v;
    tree.UpdateKinematics();
    return tree.KineticEnergy();
  };
  const double energy_bound = 0.5 * mass_matrix.norm() * std::pow(velocities.norm() + 2 * step, 2);
  const double tolerance = 64 * kEpsilon * energy_bound / (step * step);
  double worst = 0.0;
  for (int i = 0; i < nv; ++i) {
    for (int j = 0; j < nv; ++j) {
      VectorX pp = velocities, pm = velocities, mp = velocities, mm = velocities;
      pp[i] += step;
      pp[j] += step;
      pm[i] += step;
      pm[j] -= step;
      mp[i] -= step;
      mp[j] += step;
      mm[i] -= step;
      mm[j] -= step;
      const double hessian = (energy_at(pp) - energy_at(pm) - energy_at(mp) + energy_at(mm)) / (4 * step * step);
      worst = std::max(worst, std::abs(hessian - mass_matrix(i, j)));
    }
  }
  EXPECT_LT(worst, tolerance);
  std::printf("[ info ] Hessian of T vs M: max |difference| %.2e (tolerance %.2e)\n", worst, tolerance);
}

// ---- Dynamics --------------------------------------------------------------------------

// LDLᵀ is backward stable: the solved v̇ satisfies M v̇ = τ − C up to a residual of about
// n ε (‖M‖ ‖v̇‖ + ‖τ‖ + ‖C‖), and RNEA evaluates M v̇ + C with a similar round-off, so the
// round trip returns τ within 64 n ε times that size (≈ 1e-13 relative here).
TEST(MultibodyTree, InverseDynamicsUndoesForwardDynamics) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(3);
  std::uniform_real_distribution<double> uniform(-5.0, 5.0);
  for (int trial = 0; trial < 5; ++trial) {
    RandomizeState(tree, generator);
    VectorX forces(tree.num_velocities());
    for (double& value : forces) value = uniform(generator);
    const VectorX acceleration = tree.ForwardDynamics(forces, kGravity);
    const VectorX recovered = tree.InverseDynamics(acceleration, kGravity);
    const double scale =
        tree.MassMatrix().norm() * acceleration.norm() + forces.norm() + tree.BiasForces(kGravity).norm();
    const double tolerance = 64 * tree.num_velocities() * kEpsilon * scale;
    EXPECT_LT((recovered - forces).norm(), tolerance);
    EXPECT_LT((recovered - forces).norm(), 1e-10 * forces.norm());
    if (trial == 0) {
      std::printf("[ info ] ID(FD(τ)) - τ: %.2e relative (tolerance %.2e)\n",
                  (recovered - forces).norm() / forces.norm(), tolerance / forces.norm());
    }
    // InverseDynamics(0) is the bias.
    EXPECT_LT((tree.InverseDynamics(VectorX::Zero(tree.num_velocities()), kGravity) - tree.BiasForces(kGravity)).norm(),
              kEpsilon * scale);
  }
}

// Central differences of the world position of material points along q ± ε N(q) v:
// truncation ≤ ε² r³ L / 6 (r the rate scale, L the length scale) and round-off
// ≈ 8 ε_machine L / ε; the tolerance takes the sum with a factor 2.
TEST(MultibodyTree, PointJacobianMatchesFiniteDifferenceOfPositions) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(17);
  const double epsilon = 1e-5;
  for (int trial = 0; trial < 3; ++trial) {
    RandomizeState(tree, generator);
    const VectorX positions = tree.positions();
    const VectorX forward = AdvancedPositions(tree, epsilon);
    const VectorX backward = AdvancedPositions(tree, -epsilon);
    const double rate = RateScale(tree);
    const double length = LengthScale(tree);
    const double tolerance = 2 * (epsilon * epsilon * std::pow(rate, 3) * length / 6 + 8 * kEpsilon * length / epsilon);
    const Vector3 offset(0.07, -0.11, 0.05);  // a material point off the centre, link frame
    for (int link = 0; link < tree.num_links(); ++link) {
      const Vector3 point = tree.link_pose(link).TransformPoint(offset);
      const Vector3 velocity = tree.PointJacobian(link, point) * tree.velocities();
      // The spatial velocity moves the point as v_com + ω × (x − c).
      const SpatialVector spatial = tree.link_spatial_velocity(link);
      const Vector3 rigid_velocity = spatial.tail<3>() + spatial.head<3>().cross(point - tree.link_pose(link).position);
      EXPECT_LT((velocity - rigid_velocity).norm(), 64 * kEpsilon * (1 + rigid_velocity.norm()));
      EXPECT_LT(tree.PointBiasVelocity(link, point).norm(), kEpsilon);  // no prescribed joints

      SetPositions(tree, forward);
      const Vector3 point_forward = tree.link_pose(link).TransformPoint(offset);
      SetPositions(tree, backward);
      const Vector3 point_backward = tree.link_pose(link).TransformPoint(offset);
      SetPositions(tree, positions);
      const Vector3 difference = (point_forward - point_backward) / (2 * epsilon);
      EXPECT_LT((difference - velocity).norm(), tolerance) << "link " << link;
    }
  }
}

// At rest, RNEA leaves only gravity: C = −Σ J_comᵀ m g.
TEST(MultibodyTree, BiasAtRestIsGravityThroughCentreJacobians) {
  for (MultibodyTree tree : {FixedChain(), FreeBaseTree()}) {
    std::mt19937 generator(23);
    RandomizeState(tree, generator);
    tree.velocities().setZero();
    tree.UpdateKinematics();
    VectorX expected = VectorX::Zero(tree.num_velocities());
    for (int link = 0; link < tree.num_links(); ++link) {
      const PointJacobianMatrix jacobian = tree.PointJacobian(link, tree.link_pose(link).position);
      EXPECT_LT((jacobian - tree.LinkJacobian(link).bottomRows<3>()).norm(), 16 * kEpsilon);
      expected -= jacobian.transpose() * (tree.link_mass(link) * kGravity);
    }
    const double scale = TotalMass(tree) * kGravity.norm() * LengthScale(tree);
    EXPECT_LT((tree.BiasForces(kGravity) - expected).norm(), 64 * kEpsilon * scale);
  }
}

// Lagrange's equations for q̇ = v: C(q, v) = Ṁ v − ∂T/∂q + ∂U/∂q with U = −Σ m gᵀ c, every
// term by central differences (step ε: truncation ~ε² S, round-off ~ε_machine S / ε with
// S = ‖M‖ ‖v‖² + Σ m |g| L the size of the terms; factor 4 margin on each).
TEST(MultibodyTree, BiasForcesSatisfyLagrangesEquations) {
  MultibodyTree tree = FixedChain();
  std::mt19937 generator(29);
  const double epsilon = 1e-5;
  for (int trial = 0; trial < 3; ++trial) {
    RandomizeState(tree, generator);
    const VectorX positions = tree.positions();
    const VectorX velocities = tree.velocities();
    const int n = tree.num_velocities();
    const auto potential = [&tree]() {
      double energy = 0.0;
      for (int link = 0; link < tree.num_links(); ++link) {
        energy -= tree.link_mass(link) * kGravity.dot(tree.link_pose(link).position);
      }
      return energy;
    };
    SetPositions(tree, positions + epsilon * velocities);
    const MatrixX mass_forward = tree.MassMatrix();
    SetPositions(tree, positions - epsilon * velocities);
    const MatrixX mass_backward = tree.MassMatrix();
    VectorX expected = (mass_forward - mass_backward) / (2 * epsilon) * velocities;
    for (int i = 0; i < n; ++i) {
      VectorX shifted = positions;
      shifted[i] += epsilon;
      SetPositions(tree, shifted);
      const double kinetic_forward = tree.KineticEnergy();
      const double potential_forward = potential();
      shifted[i] -= 2 * epsilon;
      SetPositions(tree, shifted);
      const double kinetic_backward = tree.KineticEnergy();
      const double potential_backward = potential();
      expected[i] += -(kinetic_forward - kinetic_backward) / (2 * epsilon) +
                     (potential_forward - potential_backward) / (2 * epsilon);
    }
    SetPositions(tree, positions);
    const double size =
        tree.MassMatrix().norm() * velocities.squaredNorm() + TotalMass(tree) * kGravity.norm() * LengthScale(tree);
    const double tolerance = 4 * (epsilon * epsilon + 16 * kEpsilon / epsilon) * size;
    const VectorX bias = tree.BiasForces(kGravity);
    EXPECT_LT((bias - expected).norm(), tolerance);
    std::printf("[ info ] RNEA vs Lagrange: |difference| %.2e (tolerance %.2e, |C| %.2e)\n", (bias - expected).norm(),
                tolerance, bias.norm());
  }
}

// A free-floating tree: the joint torques are internal, so the total momentum changes only by
// gravity and the wrench on the free joint. Link accelerations come from ForwardDynamics and
// the time derivative of LinkJacobian·v: a_l = J_l v̇ + (J_l(q+εNv) − J_l(q−εNv)) v / 2ε.
//   Σ m a = Σ m g + f_base,   Σ (I_W α + ω × I_W ω + c × m a) = Σ c × m g + τ_base + c_base × f_base
// (the free joint's generalized force is [torque about the base centre; force at it]).
TEST(MultibodyTree, ForwardDynamicsConservesMomentumOfFreeFloatingTree) {
  MultibodyTree tree = FreeBaseTree();
  std::mt19937 generator(31);
  std::uniform_real_distribution<double> uniform(-3.0, 3.0);
  const double epsilon = 1e-5;
  for (int trial = 0; trial < 3; ++trial) {
    RandomizeState(tree, generator);
    VectorX forces(tree.num_velocities());
    for (double& value : forces) value = uniform(generator);
    const VectorX acceleration = tree.ForwardDynamics(forces, kGravity);
    const VectorX positions = tree.positions();
    const VectorX forward = AdvancedPositions(tree, epsilon);
    const VectorX backward = AdvancedPositions(tree, -epsilon);
    std::vector<SpatialVector> link_acceleration(tree.num_links());
    for (int link = 0; link < tree.num_links(); ++link) {
      SetPositions(tree, forward);
      const SpatialVector velocity_forward = tree.LinkJacobian(link) * tree.velocities();
      SetPositions(tree, backward);
      const SpatialVector velocity_backward = tree.LinkJacobian(link) * tree.velocities();
      SetPositions(tree, positions);
      link_acceleration[link] =
          tree.LinkJacobian(link) * acceleration + (velocity_forward - velocity_backward) / (2 * epsilon);
    }
    const Vector3 base_torque = forces.head<3>();
    const Vector3 base_force = forces.segment<3>(3);
    Vector3 force_residual = -base_force;
    Vector3 torque_residual = -base_torque - tree.link_pose(0).position.cross(base_force);
    double size = forces.norm();
    for (int link = 0; link < tree.num_links(); ++link) {
      const double mass = tree.link_mass(link);
      const Vector3 centre = tree.link_pose(link).position;
      const Vector3 angular = tree.link_spatial_velocity(link).head<3>();
      const Matrix3 inertia = WorldInertia(tree, link);
      const Vector3 linear_acceleration = link_acceleration[link].tail<3>();
      force_residual += mass * (linear_acceleration - kGravity);
      torque_residual += inertia * link_acceleration[link].head<3>() + angular.cross(inertia * angular) +
                         centre.cross(mass * (linear_acceleration - kGravity));
      size += mass * (linear_acceleration.norm() + kGravity.norm()) * (1 + centre.norm());
    }
    // Central difference of J v: truncation ε² · (d³/dt³ of J v) / 6, each derivative adding
    // a factor of the rate scale r to accelerations of the order of `size`.
    const double rate = RateScale(tree);
    const double tolerance = 4 * (epsilon * epsilon * rate * rate + 16 * kEpsilon / epsilon) * size;
    EXPECT_LT(force_residual.norm(), tolerance);
    EXPECT_LT(torque_residual.norm(), tolerance);
    std::printf("[ info ] momentum balance residuals: force %.2e, torque %.2e (tolerance %.2e)\n",
                force_residual.norm(), torque_residual.norm(), tolerance);
  }
}

// ---- Analytic motions ------------------------------------------------------------------

// Constant effort F on a vertical prismatic joint with gravity along the axis: a = F/m − g.
// Semi-implicit Euler is exact for v (v_N = a N dt) and gives q_N = a dt² N(N+1)/2.
TEST(MultibodyTree, PrismaticJointUnderConstantEffort) {
  const double mass = 2.5;     // [kg]
  const double effort = 40.0;  // [N]
  for (const bool with_gravity : {false, true}) {
    MultibodyTree tree;
    JointSpec joint = Joint("lift", JointType::kPrismatic, -1, {}, {}, Vector3(0, 0, 3.0));
    joint.constant_effort = effort;
    tree.AddLink("carriage", mass, RotatedInertia({0.1, 0.2, 0.3}, Rotation(0.3, {1, 0, 0})), joint);
    const Vector3 gravity = with_gravity ? kGravity : Vector3::Zero();
    const double expected = effort / mass + gravity.z();
    const VectorX acceleration = tree.ForwardDynamics(tree.ActuationForces(), gravity);
    EXPECT_NEAR(acceleration[0], expected, 8 * kEpsilon * std::abs(expected));
    const double dt = 1e-3;
    const int steps = 1000;
    for (int step = 0; step < steps; ++step) tree.Step(dt, gravity, VectorX::Zero(1));
    EXPECT_NEAR(tree.velocities()[0], expected * steps * dt, 8 * steps * kEpsilon * expected);
    EXPECT_NEAR(tree.positions()[0], expected * dt * dt * steps * (steps + 1) / 2, 8 * steps * kEpsilon * expected);
    EXPECT_NEAR(tree.time(), steps * dt, steps * kEpsilon);
  }
}

// Small-angle pendulum: pivot on a revolute joint, centre d below it. Period
// T₀ = 2π √(I/(m g d)) with I = I_com + m d²; at amplitude θ₀ the exact period is
// T₀ (1 + θ₀²/16 + 11 θ₀⁴/3072 + …) and symplectic Euler shortens it by (ω dt)²/24. The
// tolerance is twice the sum of the first neglected amplitude term and the integrator term;
// zero crossings are interpolated linearly (error O(dt³) where θ'' = 0).
TEST(MultibodyTree, PendulumPeriodMatchesSmallAngleTheory) {
  const double mass = 1.5;              // [kg]
  const double distance = 0.4;          // pivot to centre [m]
  const double inertia_about_y = 0.03;  // about the centre [kg m²]
  const double amplitude = 0.05;        // [rad]
  const double dt = 1e-4;               // [s]
  MultibodyTree tree;
  JointSpec joint = Joint("pivot", JointType::kRevolute, -1, {}, Pose{Vector3(0, 0, distance), Quaternion::Identity()},
                          Vector3::UnitY());
  joint.initial_position = amplitude;
  tree.AddLink("bob", mass, Vector3(0.02, inertia_about_y, 0.04).asDiagonal(), joint);
  const double inertia = inertia_about_y + mass * distance * distance;
  const double frequency = std::sqrt(mass * 9.81 * distance / inertia);  // [rad/s]
  const double small_angle_period = 2 * kPi / frequency;
  const double expected_period = small_angle_period * (1 + amplitude * amplitude / 16);

  std::vector<double> upward_crossings;  // θ passing zero with θ̇ > 0
  double previous = tree.positions()[0];
  const int periods = 10;
  while (static_cast<int>(upward_crossings.size()) < periods + 1) {
    tree.Step(dt, kGravity, VectorX::Zero(1));
    const double current = tree.positions()[0];
    if (previous < 0.0 && current >= 0.0) {
      upward_crossings.push_back(tree.time() - dt * current / (current - previous));
    }
    previous = current;
  }
  const double period = (upward_crossings.back() - upward_crossings.front()) / periods;
  const double tolerance = 2 * (std::pow(frequency * dt, 2) / 24 + 11 * std::pow(amplitude, 4) / 3072);
  const double error = period / expected_period - 1;
  EXPECT_LT(std::abs(error), tolerance);
  EXPECT_LT(std::abs(period / small_angle_period - 1), amplitude * amplitude / 16 + tolerance);
  std::printf(
      "[ info ] pendulum period %.9f s, T0 %.9f s, T0(1+θ²/16) %.9f s: relative error "
      "%.2e vs T0(1+θ²/16) (tolerance %.2e), %.2e vs T0\n",
      period, small_angle_period, expected_period, error, tolerance, period / small_angle_period - 1);
}

// A free body spinning about its major principal axis: the gyroscopic term vanishes and the
// quaternion update rotates exactly about ω, so I_W ω stays ω-aligned and energy and momentum
// are constant in exact arithmetic. Round-off accumulates at most ~16 ε per step:
// relative drift ≤ 16 ε N. The joint frames F and M are offset from the world and the centre,
// so the position update moves M's origin by dt (v + ω × (p_M − c)); its rotation is first
// order, which makes the centre wander by at most |p_M − c| |ω| dt about c₀ + v t.
TEST(MultibodyTree, FreeBodySpinningAboutPrincipalAxisConservesEnergyAndMomentum) {
  MultibodyTree tree;
  const Quaternion axes = Rotation(0.8, {1, -2, 0.5});
  tree.AddLink("top", 1.3, RotatedInertia({0.1, 0.2, 0.3}, axes),
               Joint("top_free", JointType::kFree, -1, Pose{Vector3(0.2, -0.1, 0.3), Rotation(0.5, {1, 1, 1})},
                     Pose{Vector3(0.05, 0.08, -0.04), Rotation(-0.3, {0, 1, 0})}));
  const Quaternion orientation = Rotation(0.4, {0.3, 1, -1});
  const Vector3 major_axis = orientation * (axes * Vector3::UnitZ());
  tree.SetFreeJointState(0, Pose{Vector3(0.1, 0.2, 0.3), orientation}, 6.0 * major_axis, Vector3(0.5, -0.2, 0.1));
  const double energy = tree.KineticEnergy();
  const Vector3 angular_momentum = WorldInertia(tree, 0) * tree.link_spatial_velocity(0).head<3>();
  const Vector3 linear_momentum = 1.3 * tree.link_spatial_velocity(0).tail<3>();
  const int steps = 20000;
  const double dt = 1e-3;
  for (int step = 0; step < steps; ++step) tree.Step(dt, Vector3::Zero(), VectorX::Zero(6));
  const double energy_drift = std::abs(tree.KineticEnergy() / energy - 1);
  const Vector3 angular_after = WorldInertia(tree, 0) * tree.link_spatial_velocity(0).head<3>();
  const double momentum_drift = (angular_after - angular_momentum).norm() / angular_momentum.norm();
  const double bound = 16 * kEpsilon * steps;
  EXPECT_LT(energy_drift, bound);
  EXPECT_LT(momentum_drift, bound);
  EXPECT_LT((1.3 * tree.link_spatial_velocity(0).tail<3>() - linear_momentum).norm(), bound * linear_momentum.norm());
  // The centre moves uniformly, up to the first-order wander of the offset joint origin.
  const double offset = tree.joint(0).frame_on_child.position.norm();
  const double wander_bound = offset * 6.0 * dt;
  const double wander =
      (tree.link_pose(0).position - (Vector3(0.1, 0.2, 0.3) + steps * dt * Vector3(0.5, -0.2, 0.1))).norm();
  EXPECT_LT(wander, wander_bound);
  std::printf(
      "[ info ] spinning body over %d steps: energy drift %.2e, angular momentum "
      "drift %.2e (bound %.2e); centre off c0 + v t by %.2e m (bound %.2e m)\n",
      steps, energy_drift, momentum_drift, bound, wander, wander_bound);
}

// A prismatic link tracking a unit set-point with implicit PD, ζ = Kd / (2 √(Kp m)) = 0.2.
// The step is exactly backward Euler, whose numerical damping lowers the logarithm of the
// overshoot by π ω dt / (2 √(1 − ζ²)) to first order; the tolerance is twice that.
MultibodyTree PdSlider(double mass, double stiffness, double damping, bool implicit) {
  MultibodyTree tree;
  JointSpec joint = Joint("rail", JointType::kPrismatic, -1, {}, {}, Vector3::UnitX());
  joint.pd.enabled = true;
  joint.pd.stiffness = stiffness;
  joint.pd.damping = damping;
  joint.pd.target = TimeFunction::Constant(1.0);
  joint.pd.implicit = implicit;
  tree.AddLink("slider", mass, Matrix3::Identity() * 0.01, joint);
  return tree;
}

TEST(MultibodyTree, ImplicitPdSetPointOvershootMatchesDampingRatio) {
  const double mass = 2.0;         // [kg]
  const double stiffness = 200.0;  // [N/m]
  const double damping_ratio = 0.2;
  const double damping = 2 * damping_ratio * std::sqrt(stiffness * mass);  // [N s/m]
  const double frequency = std::sqrt(stiffness / mass);                    // [rad/s]
  const double dt = 1e-4;
  MultibodyTree tree = PdSlider(mass, stiffness, damping, true);
  const double root = std::sqrt(1 - damping_ratio * damping_ratio);
  const double expected = std::exp(-damping_ratio * kPi / root);
  double peak = 0.0;
  const double duration = 3.0;  // [s]: envelope e^{−ζωt} = e^{−6}
  const int steps = static_cast<int>(std::round(duration / dt));
  for (int step = 0; step < steps; ++step) {
    tree.Step(dt, kGravity, VectorX::Zero(1));
    peak = std::max(peak, tree.positions()[0]);
  }
  const double overshoot = peak - 1.0;
  const double tolerance = 2 * kPi * frequency * dt / (2 * root);
  EXPECT_LT(std::abs(overshoot / expected - 1), tolerance);
  EXPECT_LE(overshoot, expected);  // backward Euler only adds damping
  const double envelope = std::exp(-damping_ratio * frequency * duration) / root;
  EXPECT_LT(std::abs(tree.positions()[0] - 1.0), envelope);
  std::printf(
      "[ info ] PD overshoot %.6f, exp(-ζπ/√(1-ζ²)) %.6f, relative error %.2e "
      "(tolerance %.2e); |q - q_d| after %.1f s: %.2e\n",
      overshoot, expected, overshoot / expected - 1, tolerance, duration, std::abs(tree.positions()[0] - 1.0));
}

// Kp dt² / m = 10⁴: the explicit PD force makes semi-implicit Euler unstable (ω dt = 100 > 2),
// while the implicit step (backward Euler) multiplies the error by z = 1/(1 − dt λ),
// |z| ≈ 1/(ω dt) = 0.01 per step: the overshoot stays below 1/(ω dt) and 20 steps leave
// round-off only (64 ε relative to the set-point).
TEST(MultibodyTree, StiffImplicitPdIsStableWhereExplicitBlowsUp) {
  const double mass = 1.0;
  const double dt = 1e-2;
  const double stiffness = 1e4 * mass / (dt * dt);
  const double damping = 2 * 0.2 * std::sqrt(stiffness * mass);
  MultibodyTree implicit_tree = PdSlider(mass, stiffness, damping, true);
  MultibodyTree explicit_tree = PdSlider(mass, stiffness, damping, false);
  double largest = 0.0;
  for (int step = 0; step < 20; ++step) {
    implicit_tree.Step(dt, Vector3::Zero(), VectorX::Zero(1));
    explicit_tree.Step(dt, Vector3::Zero(), VectorX::Zero(1));
    largest = std::max(largest, std::abs(implicit_tree.positions()[0]));
  }
  const double frequency_step = std::sqrt(stiffness / mass) * dt;
  EXPECT_LE(largest, 1.0 + 1.0 / frequency_step);
  EXPECT_LT(std::abs(implicit_tree.positions()[0] - 1.0), 64 * kEpsilon);
  std::printf(
      "[ info ] stiff PD (Kp dt²/m = 1e4) after 20 steps: implicit |q - q_d| %.2e, "
      "peak %.6f; explicit q %.3e\n",
      std::abs(implicit_tree.positions()[0] - 1.0), largest, explicit_tree.positions()[0]);
  const double explicit_position = explicit_tree.positions()[0];
  EXPECT_TRUE(!std::isfinite(explicit_position) || std::abs(explicit_position) > 1e6) << explicit_position;
  // The explicit PD force shows in ActuationForces; the implicit one does not.
  EXPECT_DOUBLE_EQ(implicit_tree.ActuationForces()[0], 0.0);
}

// ---- Prescribed motion -----------------------------------------------------------------

// A carrier on a prescribed prismatic joint along x, x(t) = x₀ + u t + ½ a t², with a
// pendulum (revolute about y, centre d below the pivot) hanging from it. The carrier follows
// x(t) exactly; in its frame gravity is (−a, 0, −g), so
//   I θ̈ = m d (a cos θ − g sin θ),
// zero at θ = atan(a/g).
TEST(MultibodyTree, PrescribedCarrierMovesExactlyAndDrivesPendulum) {
  const double start = 0.2, speed = 0.5, accel = 3.0;  // [m], [m/s], [m/s²]
  const double mass = 0.8, distance = 0.3, inertia_about_y = 0.01;
  MultibodyTree tree;
  JointSpec carrier = Joint("track", JointType::kPrescribed, -1, {}, {}, Vector3::UnitX());
  carrier.prescribed_motion = JointType::kPrismatic;
  carrier.prescribed = TimeFunction{[=](double t) { return start + speed * t + 0.5 * accel * t * t; },
                                    [=](double t) { return speed + accel * t; }, [=](double) { return accel; }};
  tree.AddLink("carrier", 4.0, Matrix3::Identity() * 0.1, carrier);
  tree.AddLink("bob", mass, Vector3(0.02, inertia_about_y, 0.02).asDiagonal(),
               Joint("pivot", JointType::kRevolute, 0, {}, Pose{Vector3(0, 0, distance), Quaternion::Identity()},
                     Vector3::UnitY()));
  ASSERT_EQ(tree.num_velocities(), 1);
  EXPECT_EQ(tree.velocity_start(0), -1);
  const double inertia = inertia_about_y + mass * distance * distance;

  // The bias carries the carrier's acceleration: θ̈ from ForwardDynamics at a few angles.
  for (const double angle : {0.0, 0.3, std::atan2(accel, 9.81), -0.4}) {
    tree.positions()[0] = angle;
    tree.velocities()[0] = 0.0;
    tree.UpdateKinematics();
    const double expected = mass * distance * (accel * std::cos(angle) - 9.81 * std::sin(angle)) / inertia;
    const double acceleration = tree.ForwardDynamics(VectorX::Zero(1), kGravity)[0];
    EXPECT_NEAR(acceleration, expected, 64 * kEpsilon * mass * distance * 9.81 / inertia) << "angle " << angle;
  }

  // Stepping: the carrier is exactly where and as fast as prescribed, and that velocity
  // shows as the bias velocity of points on both links.
  tree.positions()[0] = 0.0;
  tree.UpdateKinematics();
  const double dt = 1e-3;
  for (int step = 0; step < 500; ++step) tree.Step(dt, kGravity, VectorX::Zero(1));
  const double t = tree.time();
  const double expected_x = start + speed * t + 0.5 * accel * t * t;
  EXPECT_NEAR(tree.link_pose(0).position.x(), expected_x, 8 * kEpsilon);
  EXPECT_NEAR(tree.link_pose(0).position.z(), 0.0, 8 * kEpsilon);
  EXPECT_NEAR(tree.link_spatial_velocity(0)[3], speed + accel * t, 8 * kEpsilon);
  EXPECT_LT(tree.LinkJacobian(0).norm(), kEpsilon);  // no degrees of freedom
  const Vector3 point = tree.link_pose(1).TransformPoint(Vector3(0.05, 0, 0));
  EXPECT_LT((tree.PointBiasVelocity(1, point) - Vector3(speed + accel * t, 0, 0)).norm(), 8 * kEpsilon);
  // Point velocity = J v + bias, the rigid velocity of the bob.
  const SpatialVector bob = tree.link_spatial_velocity(1);
  const Vector3 rigid = bob.tail<3>() + bob.head<3>().cross(point - tree.link_pose(1).position);
  EXPECT_LT((tree.PointJacobian(1, point) * tree.velocities() + tree.PointBiasVelocity(1, point) - rigid).norm(),
            16 * kEpsilon * (1 + rigid.norm()));
}

// A slider on a turntable spinning at the prescribed rate Ω: the radial coordinate r feels
// the centrifugal acceleration Ω² r; the prescribed angular acceleration and the Coriolis
// force act across the rail and do not enter.
TEST(MultibodyTree, PrescribedTurntableGivesCentrifugalBias) {
  const double rate = 2.0, angular_acceleration = 1.5, radius = 0.7;
  MultibodyTree tree;
  JointSpec table = Joint("spindle", JointType::kPrescribed, -1, {}, {}, Vector3::UnitZ());
  table.prescribed_motion = JointType::kRevolute;
  table.prescribed = TimeFunction{[=](double t) { return rate * t + 0.5 * angular_acceleration * t * t; },
                                  [=](double t) { return rate + angular_acceleration * t; },
                                  [=](double) { return angular_acceleration; }};
  tree.AddLink("table", 5.0, Matrix3::Identity(), table);
  JointSpec rail = Joint("rail", JointType::kPrismatic, 0, {}, {}, Vector3::UnitX());
  rail.initial_position = radius;
  rail.initial_velocity = 0.4;
  tree.AddLink("slider", 0.6, Matrix3::Identity() * 0.01, rail);
  const double expected = rate * rate * radius;
  EXPECT_NEAR(tree.ForwardDynamics(VectorX::Zero(1), Vector3::Zero())[0], expected, 16 * kEpsilon * expected);
  EXPECT_NEAR(tree.BiasForces(Vector3::Zero())[0], -0.6 * expected, 16 * kEpsilon * expected);
  // Turntable velocity as bias velocity: Ω × r at the slider's centre.
  const Vector3 centre = tree.link_pose(1).position;
  EXPECT_LT((tree.PointBiasVelocity(1, centre) - rate * Vector3::UnitZ().cross(centre)).norm(), 8 * kEpsilon);
}

// ---- Impulses --------------------------------------------------------------------------

// Jᵀ f through Step without gravity: a resting free body gains linear momentum f and angular
// momentum (x − c) × f about its centre; a prismatic link gains the axial component of f.
TEST(MultibodyTree, GeneralizedImpulseChangesMomentum) {
  const Vector3 impulse(0.3, -1.2, 0.8);  // [N s]
  {
    MultibodyTree tree;
    const double mass = 1.7;
    tree.AddLink(
        "block", mass, RotatedInertia({0.05, 0.08, 0.1}, Rotation(0.6, {1, 1, 0})),
        Joint("block_free", JointType::kFree, -1, {}, Pose{Vector3(0.1, 0.0, -0.05), Rotation(0.2, {0, 0, 1})}));
    tree.SetFreeJointState(0, Pose{Vector3(0.4, 0.1, 0.9), Rotation(0.5, {1, 0, 1})}, Vector3::Zero(),
                           Vector3(0.2, 0.0, -0.1));
    const Vector3 centre = tree.link_pose(0).position;
    const Vector3 point = centre + Vector3(0.05, 0.1, -0.07);
    const Vector3 momentum_before = mass * tree.link_spatial_velocity(0).tail<3>();
    const Matrix3 inertia_before = WorldInertia(tree, 0);
    const VectorX generalized = tree.GeneralizedImpulse(0, impulse, point);
    EXPECT_LT((generalized.head<3>() - (point - centre).cross(impulse)).norm(), 8 * kEpsilon);
    EXPECT_LT((generalized.tail<3>() - impulse).norm(), 8 * kEpsilon);
    tree.Step(1e-3, Vector3::Zero(), generalized);
    const SpatialVector velocity = tree.link_spatial_velocity(0);
    EXPECT_LT((mass * velocity.tail<3>() - momentum_before - impulse).norm(), 16 * kEpsilon * impulse.norm());
    EXPECT_LT((inertia_before * velocity.head<3>() - (point - centre).cross(impulse)).norm(),
              16 * kEpsilon * impulse.norm());
  }
  {
    MultibodyTree tree;
    const double mass = 0.9;
    const Vector3 axis = Vector3(1.0, 2.0, -0.5).normalized();
    tree.AddLink(
        "shuttle", mass, Matrix3::Identity() * 0.02,
        Joint("shuttle_rail", JointType::kPrismatic, -1, Pose{Vector3(0, 0, 1), Quaternion::Identity()}, {}, axis));
    const Vector3 point = tree.link_pose(0).TransformPoint(Vector3(0.1, -0.2, 0.05));
    tree.Step(1e-3, Vector3::Zero(), tree.GeneralizedImpulse(0, impulse, point));
    const Vector3 momentum = mass * tree.link_spatial_velocity(0).tail<3>();
    EXPECT_LT((momentum - impulse.dot(axis) * axis).norm(), 16 * kEpsilon * impulse.norm());
  }
}

// LinearizeStep exposes exactly the linear system Step solves: with any generalized impulse,
// Step reaches v* + A⁻¹ impulse, and A is symmetric positive definite (implicit PD included).
TEST(MultibodyTree, LinearizeStepPredictsStep) {
  for (MultibodyTree tree : {FixedChain(), PdSlider(2.0, 5.0e4, 300.0, true)}) {
    tree.velocities().setLinSpaced(0.3, -0.7);
    tree.UpdateKinematics();
    const double dt = 0.01;
    const Vector3 gravity(0.0, 0.0, -9.81);
    const MultibodyTree::LinearizedStep linear = tree.LinearizeStep(dt, gravity);
    ASSERT_EQ(linear.matrix.rows(), tree.num_velocities());
    EXPECT_LT((linear.matrix - linear.matrix.transpose()).norm(), 1e-12 * linear.matrix.norm());
    EXPECT_GT(Eigen::SelfAdjointEigenSolver<MatrixX>(linear.matrix).eigenvalues().minCoeff(), 0.0);
    VectorX impulse = VectorX::LinSpaced(tree.num_velocities(), 0.5, -0.2);
    const VectorX expected = linear.free_velocity + linear.matrix.ldlt().solve(impulse);
    tree.Step(dt, gravity, impulse);
    EXPECT_LT((tree.velocities() - expected).norm(), 1e-12 * (1.0 + expected.norm()));
  }
}

}  // namespace
}  // namespace contactlab::rigid
