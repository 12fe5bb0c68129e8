#pragma once
// Eigen's dense eigensolvers, included once for the whole project. Eigen 3.4's symmetric
// eigensolver trips GCC 12's -Wmaybe-uninitialized (a false positive inside Eigen), so the
// warning is silenced for Eigen's own headers only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
