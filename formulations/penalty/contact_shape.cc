#include "formulations/penalty/contact_shape.h"

#include <algorithm>

namespace contactlab::penalty {

ContactShape::ContactShape(const rigid::Shape& shape, double edge_radius) : core_(shape) {
  switch (shape.kind) {
    case rigid::ShapeKind::kBox:
      radius_ = std::min(edge_radius, 0.5 * shape.half_extents.minCoeff());
      core_.half_extents = shape.half_extents.array() - radius_;
      break;
    case rigid::ShapeKind::kCylinder:
      radius_ = std::min(edge_radius, 0.5 * std::min(shape.radius, shape.half_height));
      core_.radius = shape.radius - radius_;
      core_.half_height = shape.half_height - radius_;
      break;
    case rigid::ShapeKind::kHalfSpace:
    case rigid::ShapeKind::kSphere:
      break;
  }
}

}  // namespace contactlab::penalty
