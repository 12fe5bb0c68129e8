#pragma once
// Rigid transform X_AB: the pose of frame B measured in frame A (position of B's origin
// and orientation of B's axes, both expressed in A).
#include "rigid/types.h"

namespace contactlab::rigid {

struct Pose {
  Vector3 position = Vector3::Zero();
  Quaternion orientation = Quaternion::Identity();

  Matrix3 rotation() const { return orientation.toRotationMatrix(); }
  // Maps a point given in B to A.
  Vector3 TransformPoint(const Vector3& point_in_b) const { return position + orientation * point_in_b; }
  // Maps a point given in A to B.
  Vector3 InverseTransformPoint(const Vector3& point_in_a) const {
    return orientation.conjugate() * (point_in_a - position);
  }
  // X_AC = X_AB * X_BC.
  Pose operator*(const Pose& pose_bc) const {
    return Pose{TransformPoint(pose_bc.position), orientation * pose_bc.orientation};
  }
  Pose Inverse() const {
    const Quaternion inverse = orientation.conjugate();
    return Pose{-(inverse * position), inverse};
  }
};

}  // namespace contactlab::rigid
