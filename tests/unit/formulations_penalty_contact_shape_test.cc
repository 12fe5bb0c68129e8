// The geometry penalty's relaxation sees (formulations/penalty/contact_shape.h): a box with
// rounded edges is the box far from its edges, its signed distance has the core's gradient and
// Hessian, and the spring force on a particle walked across the medial plane between two faces
// is continuous, where against the sharp box it jumps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "formulations/penalty/contact_shape.h"
#include "formulations/penalty/relaxation.h"
#include "rigid/shape.h"

namespace contactlab::penalty {
namespace {

const rigid::Shape kBox = rigid::Shape::Box(Vector3(0.1, 0.1, 0.1));

TEST(ContactShape, RoundedBoxIsTheBoxAwayFromItsEdges) {
  const ContactShape rounded(kBox, 0.005);
  EXPECT_DOUBLE_EQ(rounded.edge_radius(), 0.005);
  // Face points: the same distance and normal as the sharp box.
  for (const Vector3& point : {Vector3(0.02, -0.03, 0.098), Vector3(0.0, 0.05, 0.104), Vector3(-0.097, 0.01, 0.0)}) {
    EXPECT_NEAR(rounded.SignedDistance(point), kBox.SignedDistance(point), 1e-15);
    EXPECT_NEAR((rounded.OutwardNormal(point) - kBox.OutwardNormal(point)).norm(), 0.0, 1e-15);
  }
  // At an edge the surface is a quarter cylinder of radius r about the core's edge.
  const Vector3 edge_point = Vector3(0.095, 0.0, 0.095) + 0.005 * Vector3(1.0, 0.0, 1.0).normalized();
  EXPECT_NEAR(rounded.SignedDistance(edge_point), 0.0, 1e-15);
  EXPECT_NEAR((rounded.OutwardNormal(edge_point) - Vector3(1.0, 0.0, 1.0).normalized()).norm(), 0.0, 1e-12);
  // The radius is capped at half the smallest half-size; zero leaves the box sharp.
  EXPECT_DOUBLE_EQ(ContactShape(kBox, 1.0).edge_radius(), 0.05);
  EXPECT_DOUBLE_EQ(ContactShape(kBox, 0.0).SignedDistance(edge_point), kBox.SignedDistance(edge_point));
  // Spheres and half-spaces have no edges.
  EXPECT_NEAR(ContactShape(rigid::Shape::Sphere(0.1), 0.005).SignedDistance(Vector3(0.0, 0.0, 0.09)), -0.01, 1e-15);
}

// The force on a particle 2 mm inside the top face, walked along +x from 10 mm to 1.5 mm short
// of the edge: it crosses the sharp box's medial plane between the top and the +x face at
// 2 mm. The attachment X lies on the top face. Returns the largest change of the force between
// two neighbouring positions 4 µm apart, over k times the depth.
double LargestForceStep(double edge_radius) {
  const ContactShape shape(kBox, edge_radius);
  const LevelSetFunction level_set = [&shape](const Vector3& point) { return shape.Sample(point); };
  const Vector3 attachment(0.093, 0.0, 0.1);
  const double stiffness = 1.0e4, depth = 0.002, friction = 0.5;
  const int samples = 2126;
  double largest = 0.0;
  Vector3 previous = Vector3::Zero();
  for (int i = 0; i < samples; ++i) {
    const Vector3 particle(0.090 + 0.0085 * i / (samples - 1), 0.0, 0.1 - depth);
    const Relaxation relaxation = RelaxAgainstLevelSet(attachment, particle, level_set, friction);
    EXPECT_TRUE(relaxation.active) << particle.transpose();
    const Vector3 force = SpringForce(relaxation, particle, stiffness).force;
    if (i > 0) largest = std::max(largest, (force - previous).norm());
    previous = force;
  }
  return largest / (stiffness * depth);
}

TEST(ContactShape, ForceIsContinuousAcrossTheMedialPlaneOfARoundedEdge) {
  // Rounded by h/4 of h = 0.02 m (the derived radius), more than the particle's depth: the
  // closest point and the force move continuously, by about the step over the radius.
  EXPECT_LT(LargestForceStep(0.005), 0.01);
  // The sharp box: at the medial plane the closest point jumps from the top face to the side,
  // and the force turns by about 90°.
  EXPECT_GT(LargestForceStep(0.0), 0.3);
}

}  // namespace
}  // namespace contactlab::penalty
