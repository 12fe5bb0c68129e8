// draped_sphere (issue 21): the heavy capstan's closed-form acceleration against a numerical
// integration of the belt's tension along the arc, its threshold μ*, its Atwood limit at μ → 0,
// and the default scene: two strips of the right mass draped over two spheres with friction
// 1.3 μ* and 0.7 μ*, each strip's top row on its sphere's top.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "experiments/scenarios/draped_sphere.h"
#include "mpm/particles.h"
#include "scene_test_support.h"

namespace contactlab::experiments {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kGravity = 9.81;

// Per unit λ, the tension at φ = +π/2 of a belt that leaves φ = −π/2 at T₂ = L₂ (g + a), from
// dT/dφ = μ (T + g R cos φ − v²) − g R sin φ + R a by RK4 over 20,000 steps.
double TensionAtLongSide(double short_length, double speed, double acceleration, double radius, double mu) {
  const auto slope = [&](double phi, double tension) {
    return mu * (tension + kGravity * radius * std::cos(phi) - speed * speed) - kGravity * radius * std::sin(phi) +
           radius * acceleration;
  };
  const int steps = 20000;
  const double h = kPi / steps;
  double tension = short_length * (kGravity + acceleration);
  for (int k = 0; k < steps; ++k) {
    const double phi = -0.5 * kPi + k * h;
    const double k1 = slope(phi, tension), k2 = slope(phi + 0.5 * h, tension + 0.5 * h * k1);
    const double k3 = slope(phi + 0.5 * h, tension + 0.5 * h * k2), k4 = slope(phi + h, tension + h * k3);
    tension += h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0;
  }
  return tension;
}

TEST(DrapedSphere, ClosedFormAccelerationBalancesTheIntegratedBeltTension) {
  for (const double mu : {0.05, 0.2, 0.6}) {
    for (const double speed : {0.0, 0.8}) {
      const double long_length = 0.45, short_length = 0.15, radius = 0.1;
      const double a = DrapedStripAcceleration(long_length, short_length, speed, radius, mu, kGravity);
      // The long side's tension λ L₁ (g − a) is what the arc delivers there.
      EXPECT_NEAR(TensionAtLongSide(short_length, speed, a, radius, mu), long_length * (kGravity - a), 1e-9)
          << "mu " << mu << " v " << speed;
    }
  }
}

TEST(DrapedSphere, FrictionlessLimitIsTheAtwoodMachine) {
  const double long_length = 0.45, short_length = 0.15, radius = 0.1;
  const double atwood = kGravity * (long_length - short_length) / (long_length + short_length + kPi * radius);
  EXPECT_NEAR(DrapedStripAcceleration(long_length, short_length, 0.0, radius, 1e-7, kGravity), atwood, 1e-5);
}

TEST(DrapedSphere, ThresholdSeparatesHoldingFromSliding) {
  const double long_length = 0.45, short_length = 0.15, radius = 0.1;
  const double threshold = DrapedStripThreshold(long_length, short_length, radius);
  // L₁ = b + E (L₂ + b) at μ*.
  const double e = std::exp(threshold * kPi), b = 2.0 * threshold * radius / (1.0 + threshold * threshold);
  EXPECT_NEAR(b + e * (short_length + b), long_length, 1e-12);
  EXPECT_GT(DrapedStripAcceleration(long_length, short_length, 0.0, radius, 0.99 * threshold, kGravity), 0.0);
  EXPECT_LT(DrapedStripAcceleration(long_length, short_length, 0.0, radius, 1.01 * threshold, kGravity), 0.0);
  // Without the arc's own weight (R → 0) it is the light capstan's ln(L₁/L₂)/π.
  EXPECT_NEAR(DrapedStripThreshold(long_length, short_length, 1e-9), std::log(3.0) / kPi, 1e-8);
}

TEST(DrapedSphere, DefaultSceneDrapesTwoStripsOverSpheresEitherSideOfTheThreshold) {
  const World world = BuildScene("draped_sphere", SceneParameters("draped_sphere", "sap"));
  const double threshold = DrapedStripThreshold(0.45, 0.15, 0.1);
  ASSERT_EQ(world.bodies.size(), 2u);
  EXPECT_NEAR(world.bodies[0].geometries[0].friction_coefficient, 1.3 * threshold, 1e-12);
  EXPECT_NEAR(world.bodies[1].geometries[0].friction_coefficient, 0.7 * threshold, 1e-12);
  // Each strip weighs ρ t W (L₁ + L₂ + π R); the arc's chords shorten it by about (Δs/R)²/24.
  const double strip_mass = 1000.0 * 0.001 * 0.02 * (0.45 + 0.15 + kPi * 0.1);
  EXPECT_NEAR(mpm::TotalMass(world.particles), 2.0 * strip_mass, 2e-4 * strip_mass);
  // Every vertex lies on its strip's path: on the sphere (centre line) or on the vertical tangent
  // lines x = ±R below the equator.
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    if (world.particles.cloth_role[p] != mpm::ClothRole::kVertex) continue;
    const mpm::Vector3& x = world.particles.position[p];
    const mpm::Vector3 center = world.bodies[x.y() < 0.0 ? 0 : 1].pose.position;
    const double dy = x.y() - center.y();
    ASSERT_LE(std::abs(dy), 0.01 + 1e-12);
    if (x.z() >= 0.0) {
      EXPECT_NEAR(std::hypot(x.x(), x.z()), 0.1, 1e-12);
    } else {
      EXPECT_NEAR(std::abs(x.x()), 0.1, 1e-12);
    }
  }
}

}  // namespace
}  // namespace contactlab::experiments
