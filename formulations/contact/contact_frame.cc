#include "formulations/contact/contact_frame.h"

#include <cmath>

namespace contactlab::contact {

Matrix3 MakeContactFrame(const Vector3& unit_normal) {
  // The world axis least aligned with n̂ keeps the cross product well conditioned.
  int least_aligned = 0;
  for (int axis = 1; axis < 3; ++axis) {
    if (std::abs(unit_normal[axis]) < std::abs(unit_normal[least_aligned])) least_aligned = axis;
  }
  const Vector3 tangent_1 = Vector3::Unit(least_aligned).cross(unit_normal).normalized();
  const Vector3 tangent_2 = unit_normal.cross(tangent_1);
  Matrix3 frame;
  frame.col(0) = tangent_1;
  frame.col(1) = tangent_2;
  frame.col(2) = unit_normal;
  return frame;
}

}  // namespace contactlab::contact
