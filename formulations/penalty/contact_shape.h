#pragma once
// The touched geometry as penalty's relaxation sees it: boxes and cylinders with their edges
// rounded by a radius r, φ_r(x) = φ_core(x) − r, where the core is the shape shrunk by r.
//
// The relaxation slides an attachment toward the particle's closest surface point W and the
// spring pulls along Y − Z. Inside a sharp box W jumps where a particle crosses the medial
// plane between two faces (the force turns by 90° there), and a Newton line search across
// that plane meets a merit with a jump. Outside a convex set the distance to it is C¹, so
// φ_r, its normal and W vary continuously for every particle less than r deep; only deeper
// particles meet the core's own medial planes. Spheres and half-spaces have no edges and
// stay as they are.
#include "formulations/penalty/relaxation.h"
#include "rigid/shape.h"

namespace contactlab::penalty {

class ContactShape {
 public:
  // `edge_radius` [m] is capped at half the shape's smallest half-size, so that the core
  // keeps a positive size; 0 leaves the shape sharp.
  ContactShape(const rigid::Shape& shape, double edge_radius);

  double SignedDistance(const Vector3& point) const { return core_.SignedDistance(point) - radius_; }
  Vector3 OutwardNormal(const Vector3& point) const { return core_.OutwardNormal(point); }
  LevelSetSample Sample(const Vector3& point) const {
    return LevelSetSample{SignedDistance(point), OutwardNormal(point), core_.SignedDistanceHessian(point)};
  }
  double edge_radius() const { return radius_; }

 private:
  rigid::Shape core_;
  double radius_ = 0.0;
};

}  // namespace contactlab::penalty
