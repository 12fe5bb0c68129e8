// Tests of rigid bodies: mass properties of a composite body, world bounds, free fall under
// symplectic Euler, torque-free rotation with the DLM splitting (momentum to round-off,
// bounded second-order energy error), constant torque, impulses, kinematic and static
// bodies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "rigid/rigid_body.h"

namespace contactlab::rigid {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

Quaternion Rotation(double angle, const Vector3& axis) {
  return Quaternion(Eigen::AngleAxisd(angle, axis.normalized()));
}

// Angle [rad] between two orientations.
double AngleBetween(const Quaternion& a, const Quaternion& b) {
  return Eigen::AngleAxisd(a.conjugate() * b).angle();
}

// A free body with given inertia in its body frame (not necessarily principal), unit mass.
RigidBody SpinningBody(const Matrix3& inertia_in_body, const Quaternion& orientation, const Vector3& angular_velocity) {
  RigidBody body;
  body.name = "spinner";
  body.motion = BodyMotion::kFree;
  body.mass = 1.0;
  body.inertia_in_body = inertia_in_body;
  body.pose = Pose{Vector3(0.2, -0.1, 0.4), orientation};
  body.angular_velocity = angular_velocity;
  return body;
}

// ---- Mass properties -------------------------------------------------------------------

// Two boxes of density 2 kg/m³ in a common frame:
//   A: full sides (1.0, 0.5, 0.2) at (1, 0, 0), axes aligned: V = 0.1 m³, m = 0.2 kg;
//   B: full sides (0.6, 0.2, 0.4) at (−0.5, 0.3, 0), turned 90° about z, so its sides along
//      the common axes are (0.2, 0.6, 0.4): V = 0.048 m³, m = 0.096 kg.
// Total m = 0.296 kg, centre of mass c = (0.2·(1,0,0) + 0.096·(−0.5,0.3,0)) / 0.296.
// Hand route for the inertia (different from the library's): sum every box's centroidal
// inertia plus m(|p|² 1 − p pᵀ) about the common origin, then move to c with
// I_c = I_o − M(|c|² 1 − c cᵀ).
struct CompositeExpectation {
  double mass;
  Vector3 centre_of_mass;  // common frame
  Matrix3 inertia;         // about the centre of mass, common axes
};

CompositeExpectation HandComputedComposite() {
  const double mass_a = 2.0 * 1.0 * 0.5 * 0.2;
  const double mass_b = 2.0 * 0.6 * 0.2 * 0.4;
  const Vector3 position_a(1.0, 0.0, 0.0);
  const Vector3 position_b(-0.5, 0.3, 0.0);
  // Box about its centroid: m/12 diag(b² + c², a² + c², a² + b²) with sides along the axes.
  const Matrix3 own_a = mass_a / 12.0 * Vector3(0.25 + 0.04, 1.0 + 0.04, 1.0 + 0.25).asDiagonal().toDenseMatrix();
  const Matrix3 own_b = mass_b / 12.0 * Vector3(0.36 + 0.16, 0.04 + 0.16, 0.04 + 0.36).asDiagonal().toDenseMatrix();
  const auto point_mass = [](double mass, const Vector3& p) -> Matrix3 {
    return mass * (p.squaredNorm() * Matrix3::Identity() - p * p.transpose());
  };
  CompositeExpectation expected;
  expected.mass = mass_a + mass_b;
  expected.centre_of_mass = (mass_a * position_a + mass_b * position_b) / expected.mass;
  const Matrix3 about_origin = own_a + point_mass(mass_a, position_a) + own_b + point_mass(mass_b, position_b);
  expected.inertia = about_origin - point_mass(expected.mass, expected.centre_of_mass);
  return expected;
}

std::vector<Geometry> CompositeGeometries() {
  return {
      Geometry{Shape::Box(Vector3(0.5, 0.25, 0.1)), Pose{Vector3(1.0, 0.0, 0.0)}, 0.3},
      Geometry{Shape::Box(Vector3(0.3, 0.1, 0.2)), Pose{Vector3(-0.5, 0.3, 0.0), Rotation(kPi / 2.0, Vector3::UnitZ())},
               0.5},
  };
}

TEST(RigidBodyTest, CompositeBodyMassPropertiesMatchHandComputation) {
  const Pose placement{Vector3(0.5, -1.0, 2.0), Rotation(0.4, Vector3(0.0, 1.0, 1.0))};
  const std::vector<Geometry> geometries = CompositeGeometries();
  const RigidBody body = MakeFreeBody("composite", geometries, 2.0, placement);
  const CompositeExpectation expected = HandComputedComposite();

  EXPECT_TRUE(body.is_free());
  EXPECT_EQ(body.name, "composite");
  EXPECT_EQ(body.velocity_offset, -1);
  EXPECT_NEAR(body.mass, 0.296, 4 * kEpsilon);
  EXPECT_NEAR(body.mass, expected.mass, 4 * kEpsilon);
  // Inertia entries are O(0.05 kg m²); both routes sum a handful of O(0.1) terms.
  EXPECT_LT((body.inertia_in_body - expected.inertia).norm(), 32 * kEpsilon);
  EXPECT_EQ(body.inertia_in_body, body.inertia_in_body.transpose());
  // The two boxes are symmetric about the z = 0 plane: no xz or yz products of inertia.
  EXPECT_EQ(body.inertia_in_body(0, 2), 0.0);
  EXPECT_EQ(body.inertia_in_body(1, 2), 0.0);

  // Body frame at the centre of mass with the placement's orientation.
  EXPECT_LT((body.pose.position - placement.TransformPoint(expected.centre_of_mass)).norm(), 8 * kEpsilon * 3.0);
  EXPECT_EQ(body.pose.orientation.coeffs(), placement.orientation.coeffs());

  // Nothing moved in world: every geometry's world pose is its placement in the common frame.
  ASSERT_EQ(body.geometries.size(), geometries.size());
  for (int i = 0; i < 2; ++i) {
    const Pose original = placement * geometries[i].pose_in_body;
    const Pose now = body.GeometryPose(i);
    EXPECT_LT((now.position - original.position).norm(), 16 * kEpsilon * 3.0);
    EXPECT_LT(AngleBetween(now.orientation, original.orientation), 16 * kEpsilon);
    EXPECT_EQ(body.geometries[i].friction_coefficient, geometries[i].friction_coefficient);
  }

  // World inertia is R I Rᵀ and its inverse is the inverse.
  const Matrix3 rotation = placement.rotation();
  EXPECT_LT((body.WorldInertia() - rotation * expected.inertia * rotation.transpose()).norm(), 64 * kEpsilon);
  EXPECT_LT((body.WorldInertia() * body.WorldInverseInertia() - Matrix3::Identity()).norm(),
            1e3 * kEpsilon);  // condition number of the inertia is ≈ 20
}

TEST(RigidBodyTest, MakeFreeBodyRejectsUnboundedGeometryAndBadDensity) {
  std::vector<Geometry> with_plane = CompositeGeometries();
  with_plane.push_back(Geometry{Shape::HalfSpace(), Pose{}, 0.0});
  try {
    MakeFreeBody("cart", with_plane, 1000.0, Pose{});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("cart"), std::string::npos) << error.what();
  }
  for (const double density : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    try {
      MakeFreeBody("brick", CompositeGeometries(), density, Pose{});
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("brick"), std::string::npos) << error.what();
    }
  }
  EXPECT_THROW(MakeFreeBody("empty", {}, 1000.0, Pose{}), std::invalid_argument);
}

TEST(RigidBodyTest, GeometryBoundsEncloseRotatedShapesTightly) {
  const Pose placement{Vector3(0.5, -1.0, 2.0), Rotation(0.4, Vector3(0.0, 1.0, 1.0))};
  const RigidBody body = MakeFreeBody("composite", CompositeGeometries(), 2.0, placement);
  for (int i = 0; i < 2; ++i) {
    // A box's world bounds: centre ± |R| a (the 8 corners' extreme coordinates).
    const Pose pose = body.GeometryPose(i);
    const Vector3 half_width = pose.rotation().cwiseAbs() * body.geometries[i].shape.half_extents;
    const AlignedBox3 bounds = body.GeometryBounds(i);
    EXPECT_LT((bounds.min() - (pose.position - half_width)).norm(), 32 * kEpsilon * 3.0);
    EXPECT_LT((bounds.max() - (pose.position + half_width)).norm(), 32 * kEpsilon * 3.0);
  }
  // Unbounded geometry stays unbounded, whatever the pose.
  const RigidBody ground = MakeStaticBody("ground", {Geometry{Shape::HalfSpace(), Pose{}, 0.5}}, placement);
  const AlignedBox3 ground_bounds = ground.GeometryBounds(0);
  EXPECT_TRUE(ground_bounds.min().array().isInf().all());
  EXPECT_TRUE(ground_bounds.max().array().isInf().all());
  EXPECT_TRUE((ground_bounds.min().array() < 0.0).all());
  EXPECT_TRUE((ground_bounds.max().array() > 0.0).all());
}

// ---- Translation ------------------------------------------------------------------------

// Symplectic Euler with constant acceleration a = g + F/m: v_n = v0 + n dt a and
// x_n = x0 + dt Σ_{k=1..n} v_k = x0 + n dt v0 + dt² a n(n+1)/2 exactly in exact arithmetic.
// Round-off: each step adds O(ε·|x|) to x, so after n steps the error is ≤ n·c·ε·|x|max.
TEST(RigidBodyTest, FreeFallMatchesDiscreteSymplecticEulerFormula) {
  RigidBody body = MakeFreeBody("ball", {Geometry{Shape::Sphere(0.1), Pose{}, 0.0}}, 1000.0,
                                Pose{Vector3(1.0, 2.0, 3.0), Rotation(0.3, Vector3(1, 1, 0))});
  const Vector3 initial_position = body.pose.position;
  const Quaternion initial_orientation = body.pose.orientation;
  const Vector3 initial_velocity(1.0, -2.0, 3.0);
  body.linear_velocity = initial_velocity;
  body.applied_force = Vector3(0.5, 0.0, 1.0) * body.mass;  // F/m = (0.5, 0, 1) m/s²
  const Vector3 gravity(0.0, 0.0, -9.81);
  const Vector3 acceleration = gravity + Vector3(0.5, 0.0, 1.0);
  const double dt = 1e-3;
  const int steps = 2000;
  double largest_position = initial_position.norm();
  for (int n = 1; n <= steps; ++n) {
    AdvanceFreeBody(body, gravity, dt);
    largest_position = std::max(largest_position, body.pose.position.norm());
    if (n % 250 == 0) {
      const Vector3 expected_velocity = initial_velocity + n * dt * acceleration;
      const Vector3 expected_position =
          initial_position + n * dt * initial_velocity + dt * dt * acceleration * (n * (n + 1.0) / 2.0);
      EXPECT_LT((body.linear_velocity - expected_velocity).norm(),
                4.0 * n * kEpsilon * (expected_velocity.norm() + 10.0))
          << "step " << n;
      EXPECT_LT((body.pose.position - expected_position).norm(), 4.0 * n * kEpsilon * largest_position) << "step " << n;
    }
  }
  // No spin: the orientation only carries round-off.
  EXPECT_EQ(body.angular_velocity.norm(), 0.0);
  EXPECT_LT(AngleBetween(body.pose.orientation, initial_orientation), 8.0 * steps * kEpsilon);
}

// ---- Rotation ----------------------------------------------------------------------------

// Steady rotation about a principal axis is an exact solution of every sub-flow: after t the
// orientation is exp(ω t) Q0 to round-off.
TEST(RigidBodyTest, SpinAboutPrincipalAxisIsExact) {
  const Quaternion principal_frame = Rotation(0.9, Vector3(1.0, -2.0, 0.5));
  const Matrix3 principal_axes = principal_frame.toRotationMatrix();
  const Matrix3 inertia = principal_axes * Vector3(1.0, 2.0, 3.0).asDiagonal() * principal_axes.transpose();
  const Quaternion initial = Rotation(0.3, Vector3(0.0, 1.0, 1.0));
  for (int axis = 0; axis < 3; ++axis) {
    // World direction of principal axis `axis` at the start.
    const Vector3 world_axis = initial * (principal_axes.col(axis));
    const double rate = 2.5;  // [rad/s]
    RigidBody body = SpinningBody(inertia, initial, rate * world_axis);
    const double dt = 1e-2;
    const int steps = 400;
    for (int n = 0; n < steps; ++n) AdvanceFreeBody(body, Vector3::Zero(), dt);
    const Quaternion expected = Rotation(rate * steps * dt, world_axis) * initial;
    EXPECT_LT(AngleBetween(body.pose.orientation, expected), 64.0 * steps * kEpsilon) << "axis " << axis;
    EXPECT_LT((body.angular_velocity - rate * world_axis).norm(), 64.0 * steps * kEpsilon * rate);
  }
}

struct RotationStatistics {
  double momentum_drift_10k = 0.0;    // max |L_n − L_0| / |L_0| over the first 10⁴ steps
  double momentum_drift = 0.0;        // the same over the whole run
  double energy_oscillation = 0.0;    // max |E_n − E_0| / E_0 over the whole run
  double first_quarter_energy = 0.0;  // max over the first quarter of the run
  double last_quarter_energy = 0.0;   // max over the last quarter of the run
  double largest_rate = 0.0;          // |Π| / I_min, the fastest sub-flow rate [rad/s]
};

RotationStatistics RunTorqueFree(const RigidBody& start, double dt, int steps) {
  RigidBody body = start;
  const Vector3 initial_momentum = body.AngularMomentum();
  const double initial_energy = body.KineticEnergy();
  RotationStatistics statistics;
  const Eigen::SelfAdjointEigenSolver<Matrix3> solver(body.inertia_in_body);
  statistics.largest_rate = initial_momentum.norm() / solver.eigenvalues().minCoeff();
  for (int n = 1; n <= steps; ++n) {
    AdvanceFreeBody(body, Vector3::Zero(), dt);
    const double momentum_error = (body.AngularMomentum() - initial_momentum).norm() / initial_momentum.norm();
    statistics.momentum_drift = std::max(statistics.momentum_drift, momentum_error);
    if (n <= 10000) statistics.momentum_drift_10k = statistics.momentum_drift;
    const double energy_error = std::abs(body.KineticEnergy() - initial_energy) / initial_energy;
    statistics.energy_oscillation = std::max(statistics.energy_oscillation, energy_error);
    if (4 * n <= steps) {
      statistics.first_quarter_energy = std::max(statistics.first_quarter_energy, energy_error);
    } else if (4 * n > 3 * steps) {
      statistics.last_quarter_energy = std::max(statistics.last_quarter_energy, energy_error);
    }
  }
  return statistics;
}

// Torque-free asymmetric body, I = diag(1, 2, 3) in a principal frame that is rotated with
// respect to the body frame (the step must diagonalize the inertia itself), dt = 1 ms,
// 40,000 steps (40 s):
//  * World angular momentum: every sub-flow rotates Π and the frame oppositely, so Q Π is
//    constant in exact arithmetic. What remains is round-off. Per step L goes through two
//    frame conversions (world → principal → world), each a rotation of a vector whose result
//    carries about one rounding per component; rounding of these products is not unbiased and
//    the same rotations recur step after step, so the errors can add up linearly. We allow
//    2 ε per conversion, 4 n ε in all (8.9e-12 after 10⁴ steps). Measured: 0.1–0.7 ε per step.
//  * Energy: the splitting is a symmetric, second-order Poisson integrator, so it exactly
//    conserves a modified energy Ẽ = E + dt² E₂ + O(dt⁴) (backward error analysis). E₂ is
//    a sum of double Poisson brackets of the T_k = Π_k²/(2 I_k) with coefficients ≤ 1/12;
//    each is bounded by |Π|⁴/I_min³ = 2 E_max ω_max², with ω_max = |Π|/I_min the fastest
//    sub-flow rate. Hence |E_n − E_0|/E_0 ≤ 2 dt² |E₂|max / E_0 ≲ (ω_max dt)²·(a few
//    brackets · 2/12 · E_max/E_0) < (ω_max dt)² for these bodies, with no growth in time.
//    The bound is loose (measured ≈ 1/600 of it); the sharp checks are second order (halving
//    dt divides the error by 4) and no drift: the motion is periodic (period 7.8 s for the
//    intermediate-axis flips, shorter for the generic case) and the error is dt² E₂(state)
//    on every pass, so the last quarter of the run (10 s, at least one full period) peaks
//    at the same level as the first; we allow 10 % for how finely the steps sample the peak.
TEST(RigidBodyTest, TorqueFreeRotationConservesMomentumAndBoundsEnergy) {
  const Quaternion principal_frame = Rotation(0.9, Vector3(1.0, -2.0, 0.5));
  const Matrix3 principal_axes = principal_frame.toRotationMatrix();
  const Matrix3 inertia = principal_axes * Vector3(1.0, 2.0, 3.0).asDiagonal() * principal_axes.transpose();
  const Quaternion initial = Rotation(0.3, Vector3(0.0, 1.0, 1.0));
  const Matrix3 world_principal = (initial * principal_frame).toRotationMatrix();

  struct Case {
    const char* name;
    Vector3 principal_rate;  // ω in the principal frame [rad/s]
  };
  // Near the unstable intermediate axis the body flips (Dzhanibekov effect) with growth
  // rate ω₂·√((I₂−I₁)(I₃−I₂)/(I₁I₃)) ≈ 1.7/s, one flip every 7.8 s; the generic case
  // tumbles through all axes.
  const Case cases[] = {{"intermediate axis", Vector3(0.01, 3.0, 0.01)}, {"generic", Vector3(1.2, -0.7, 2.0)}};
  const double dt = 1e-3;
  const int steps = 40000;
  for (const Case& spin_case : cases) {
    const RigidBody body = SpinningBody(inertia, initial, world_principal * spin_case.principal_rate);
    const RotationStatistics coarse = RunTorqueFree(body, dt, steps);
    const RotationStatistics fine = RunTorqueFree(body, dt / 2.0, 2 * steps);
    std::printf(
        "[ %s ] dt = %g: |ΔL|/|L| = %.3g after 1e4 steps, %.3g after %d; "
        "max |ΔE|/E = %.3g (first quarter %.3g, last quarter %.3g), (ω_max dt)² = %.3g; "
        "dt/2: max |ΔE|/E = %.3g, ratio %.3f\n",
        spin_case.name, dt, coarse.momentum_drift_10k, coarse.momentum_drift, steps, coarse.energy_oscillation,
        coarse.first_quarter_energy, coarse.last_quarter_energy, std::pow(coarse.largest_rate * dt, 2),
        fine.energy_oscillation, coarse.energy_oscillation / fine.energy_oscillation);
    EXPECT_LT(coarse.momentum_drift_10k, 4.0 * 10000 * kEpsilon) << spin_case.name;
    EXPECT_LT(coarse.momentum_drift, 4.0 * steps * kEpsilon) << spin_case.name;
    EXPECT_LT(fine.momentum_drift, 4.0 * 2 * steps * kEpsilon) << spin_case.name;
    EXPECT_LT(coarse.energy_oscillation, std::pow(coarse.largest_rate * dt, 2)) << spin_case.name;
    EXPECT_GT(coarse.energy_oscillation / fine.energy_oscillation, 3.5) << spin_case.name;
    EXPECT_LT(coarse.energy_oscillation / fine.energy_oscillation, 4.5) << spin_case.name;
    EXPECT_LT(coarse.last_quarter_energy, 1.1 * coarse.first_quarter_energy) << spin_case.name;
    EXPECT_GT(coarse.last_quarter_energy, 0.9 * coarse.first_quarter_energy) << spin_case.name;
  }
}

// Orientation accuracy: the splitting is second order, so the orientation error at a fixed
// time falls by ≈ 4 when dt halves. The reference is the same integrator with dt/64
// (its own error is (1/64)² of the coarse one, negligible in the ratio).
TEST(RigidBodyTest, RotationIsSecondOrderAccurate) {
  const Matrix3 inertia = Vector3(1.0, 2.0, 3.0).asDiagonal();
  const RigidBody start = SpinningBody(inertia, Rotation(0.3, Vector3(0.0, 1.0, 1.0)), Vector3(1.2, -0.7, 2.0));
  const double final_time = 2.0;
  const auto orientation_at = [&](double dt) {
    RigidBody body = start;
    const int steps = static_cast<int>(std::lround(final_time / dt));
    for (int n = 0; n < steps; ++n) AdvanceFreeBody(body, Vector3::Zero(), dt);
    return body.pose.orientation;
  };
  const Quaternion reference = orientation_at(0.01 / 64.0);
  const double error_coarse = AngleBetween(orientation_at(0.01), reference);
  const double error_fine = AngleBetween(orientation_at(0.005), reference);
  const double ratio = error_coarse / error_fine;
  EXPECT_GT(ratio, 3.5);
  EXPECT_LT(ratio, 4.5);
}

// Constant torque τ: the step adds dt τ to L and the splitting conserves it, so after n
// steps L = L0 + n dt τ (the body is at rest in translation, so the orbital part c × m v is
// zero). Round-off accumulates as in the torque-free case, 4 n ε relative to the largest |L|.
TEST(RigidBodyTest, ConstantTorqueChangesMomentumByTorqueTimesTime) {
  const Matrix3 inertia = Vector3(1.0, 2.0, 3.0).asDiagonal();
  RigidBody body = SpinningBody(inertia, Rotation(0.3, Vector3(0.0, 1.0, 1.0)), Vector3(1.2, -0.7, 2.0));
  const Vector3 torque(0.1, -0.2, 0.05);  // [N m]
  body.applied_torque = torque;
  const Vector3 initial_momentum = body.AngularMomentum();
  const double dt = 1e-3;
  const int steps = 5000;
  double largest_momentum = initial_momentum.norm();
  for (int n = 1; n <= steps; ++n) {
    AdvanceFreeBody(body, Vector3::Zero(), dt);
    largest_momentum = std::max(largest_momentum, body.AngularMomentum().norm());
  }
  const Vector3 expected = initial_momentum + steps * dt * torque;
  EXPECT_LT((body.AngularMomentum() - expected).norm(), 4.0 * steps * kEpsilon * largest_momentum);
  EXPECT_EQ(body.linear_velocity, Vector3::Zero());
}

// ---- Impulses ----------------------------------------------------------------------------

// An impulse J at a world point x changes linear momentum by J and angular momentum about
// the world origin by x × J (= c × J from the orbital part plus (x − c) × J from the spin).
// Kinetic energy changes by J·(u⁻ + u⁺)/2 with u the velocity of the material point at x.
TEST(RigidBodyTest, ApplyImpulseChangesMomentaExactly) {
  RigidBody body = MakeFreeBody("composite", CompositeGeometries(), 2.0,
                                Pose{Vector3(0.5, -1.0, 2.0), Rotation(0.4, Vector3(0, 1, 1))});
  body.linear_velocity = Vector3(0.3, -0.2, 0.1);
  body.angular_velocity = Vector3(-1.0, 0.5, 2.0);
  const Vector3 impulse(0.02, 0.05, -0.03);  // [N s]
  const Vector3 point = body.pose.position + Vector3(0.4, -0.2, 0.1);

  const Vector3 momentum_before = body.LinearMomentum();
  const Vector3 angular_before = body.AngularMomentum();
  const double energy_before = body.KineticEnergy();
  const Vector3 point_velocity_before = body.PointVelocity(point);
  body.ApplyImpulse(impulse, point);

  // Momentum magnitudes are O(0.1–1) in SI units; each quantity is a short sum of products.
  EXPECT_LT((body.LinearMomentum() - momentum_before - impulse).norm(), 16 * kEpsilon);
  EXPECT_LT((body.AngularMomentum() - angular_before - point.cross(impulse)).norm(),
            64 * kEpsilon * (angular_before.norm() + 1.0));
  const double energy_change = impulse.dot(point_velocity_before + body.PointVelocity(point)) / 2;
  EXPECT_NEAR(body.KineticEnergy() - energy_before, energy_change, 64 * kEpsilon * energy_before);

  // PointVelocity is v + ω × (x − c).
  EXPECT_LT(
      (body.PointVelocity(point) - (body.linear_velocity + body.angular_velocity.cross(point - body.pose.position)))
          .norm(),
      4 * kEpsilon * 10.0);
}

// ---- Static and kinematic bodies ---------------------------------------------------------

KinematicState HelixState(double time) {
  // Moves along a helix while turning about z at 2 rad/s.
  KinematicState state;
  state.pose.position = Vector3(std::cos(time), std::sin(time), 0.5 * time);
  state.pose.orientation = Rotation(2.0 * time, Vector3::UnitZ());
  state.linear_velocity = Vector3(-std::sin(time), std::cos(time), 0.5);
  state.angular_velocity = Vector3(0.0, 0.0, 2.0);
  return state;
}

TEST(RigidBodyTest, KinematicBodyFollowsTrajectoryAndIgnoresDynamics) {
  RigidBody body =
      MakeKinematicBody("gripper", {Geometry{Shape::Box(Vector3(0.1, 0.1, 0.1)), Pose{}, 0.4}}, HelixState);
  EXPECT_EQ(body.motion, BodyMotion::kKinematic);
  EXPECT_FALSE(body.is_free());
  EXPECT_EQ(body.pose.position, HelixState(0.0).pose.position);
  EXPECT_EQ(body.linear_velocity, HelixState(0.0).linear_velocity);

  for (const double time : {0.25, 0.7, 3.0}) {
    UpdateKinematicBody(body, time);
    const KinematicState expected = HelixState(time);
    EXPECT_EQ(body.pose.position, expected.pose.position);
    EXPECT_EQ(body.pose.orientation.coeffs(), expected.pose.orientation.coeffs());
    EXPECT_EQ(body.linear_velocity, expected.linear_velocity);
    EXPECT_EQ(body.angular_velocity, expected.angular_velocity);

    // Dynamics, impulses and gravity leave it alone; its inverse inertia is zero.
    const RigidBody before = body;
    AdvanceFreeBody(body, Vector3(0.0, 0.0, -9.81), 0.01);
    body.ApplyImpulse(Vector3(1.0, 2.0, 3.0), Vector3(0.0, 0.0, 1.0));
    EXPECT_EQ(body.pose.position, before.pose.position);
    EXPECT_EQ(body.linear_velocity, before.linear_velocity);
    EXPECT_EQ(body.angular_velocity, before.angular_velocity);
    EXPECT_EQ(body.WorldInverseInertia(), Matrix3::Zero());
  }

  // The velocity of a material point is the time derivative of its world position (central
  // difference, truncation ≈ h²/6·|x'''| ≈ 1e-11 for h = 1e-5 here; round-off ε/h ≈ 2e-11).
  const Vector3 material_point(0.1, -0.05, 0.08);  // body frame
  const double time = 0.7;
  const double step = 1e-5;
  UpdateKinematicBody(body, time);
  const Vector3 world_point = body.pose.TransformPoint(material_point);
  const Vector3 derivative = (HelixState(time + step).pose.TransformPoint(material_point) -
                              HelixState(time - step).pose.TransformPoint(material_point)) /
                             (2.0 * step);
  EXPECT_LT((body.PointVelocity(world_point) - derivative).norm(), 1e-9);
}

TEST(RigidBodyTest, StaticBodyNeverMoves) {
  const Pose pose{Vector3(0.0, 0.0, -0.1), Rotation(0.2, Vector3::UnitX())};
  RigidBody ground = MakeStaticBody("ground", {Geometry{Shape::HalfSpace(), Pose{}, 0.5}}, pose);
  EXPECT_EQ(ground.motion, BodyMotion::kStatic);
  EXPECT_EQ(ground.velocity_offset, -1);
  AdvanceFreeBody(ground, Vector3(0.0, 0.0, -9.81), 0.01);
  ground.ApplyImpulse(Vector3(0.0, 0.0, 5.0), Vector3::Zero());
  UpdateKinematicBody(ground, 1.0);
  EXPECT_EQ(ground.pose.position, pose.position);
  EXPECT_EQ(ground.pose.orientation.coeffs(), pose.orientation.coeffs());
  EXPECT_EQ(ground.linear_velocity, Vector3::Zero());
  EXPECT_EQ(ground.angular_velocity, Vector3::Zero());
  EXPECT_EQ(ground.WorldInverseInertia(), Matrix3::Zero());
  EXPECT_EQ(ground.KineticEnergy(), 0.0);
}

}  // namespace
}  // namespace contactlab::rigid
