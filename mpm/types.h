#pragma once
// Dense fixed-size linear algebra types used throughout the MPM core.
#include <Eigen/Dense>

namespace contactlab::mpm {

using Vector3 = Eigen::Vector3d;
using Matrix3 = Eigen::Matrix3d;
using Vector9 = Eigen::Matrix<double, 9, 1>;
// Derivative of a 3x3 matrix function with respect to a 3x3 matrix argument, both
// flattened column-major (Eigen's storage order): entry (a, b) = d vec(P)_a / d vec(F)_b.
using Matrix9 = Eigen::Matrix<double, 9, 9>;

}  // namespace contactlab::mpm
