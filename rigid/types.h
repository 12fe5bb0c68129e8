#pragma once
// Dense fixed-size linear algebra types used by the rigid-body layer.
#include <Eigen/Dense>
#include <Eigen/Geometry>

namespace contactlab::rigid {

using Vector3 = Eigen::Vector3d;
using Matrix3 = Eigen::Matrix3d;
using Quaternion = Eigen::Quaterniond;
using AlignedBox3 = Eigen::AlignedBox3d;

}  // namespace contactlab::rigid
