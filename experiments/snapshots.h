#pragma once
// Particle snapshots and the static description of the rigid bodies, as plain data the
// RunRecorder writes to /snapshots and /bodies, and the XDMF sidecar that lets ParaView open
// the snapshots. Layout (README.md, "What every run writes"):
//   /bodies/<i>        attrs name, motion; one group /bodies/<i>/<j> per geometry with attrs
//                      shape, position [m] and orientation (w, x, y, z) in the body frame,
//                      and half_extents (box), radius (sphere, cylinder), half_height (cylinder)
//   /snapshots/<k>     attrs time [s], step; datasets position (N, 3) [m], optional velocity
//                      (N, 3) [m/s], deformation_gradient (N, 9) row-major F^E [-],
//                      plastic_strain (N) [-], and body_position (B, 3) [m], body_orientation
//                      (B, 4) quaternion (w, x, y, z), both of the body frame (centre of mass)
//   /xdmf/polyvertex_<n>  0, 1, ..., n-1 (int64) for each particle and body count n: the
//                      sidecar's Polyvertex connectivity (ParaView's Xdmf3 readers make no
//                      vertex cells from an implicit one)
#include <cstdint>
#include <string>
#include <vector>

#include "formulations/parameters.h"
#include "formulations/world.h"

namespace contactlab::experiments {

// The optional per-particle fields of a snapshot (output.snapshot_fields).
struct SnapshotFields {
  bool velocity = false;
  bool deformation_gradient = false;
  bool plastic_strain = false;
};

// The check of output.snapshot_fields: a comma-separated list of velocity,
// deformation_gradient, plastic_strain (blanks around names and empty items are ignored).
ParameterCheck SnapshotFieldsCheck();
// Parses a list the check accepted; throws InputError naming the key for an unknown name.
SnapshotFields ParseSnapshotFields(const std::string& text);

// One snapshot: every array is row-major and in double precision.
struct Snapshot {
  std::int64_t step = 0;
  double time = 0.0;                         // [s]
  std::size_t particles = 0;                 // N
  std::size_t bodies = 0;                    // B
  std::vector<double> position;              // N x 3 [m]
  std::vector<double> velocity;              // N x 3 [m/s], empty unless requested
  std::vector<double> deformation_gradient;  // N x 9, elastic F^E row-major, empty unless requested
  std::vector<double> plastic_strain;        // N [-], empty unless requested
  std::vector<double> body_position;         // B x 3 [m]
  std::vector<double> body_orientation;      // B x 4, quaternion (w, x, y, z)
};

// The plastic strain written to snapshots: the norm of the plastic Hencky strain,
// ‖ln V^P‖_F = sqrt(Σ_i (ln σ_i(F^P))²) with σ_i the singular values of F^P (zero for
// F^P = I; von Mises' equivalent plastic strain is sqrt(2/3) times this for isochoric F^P).
double PlasticHenckyStrainNorm(const mpm::Matrix3& plastic_deformation_gradient);

Snapshot CaptureSnapshot(std::int64_t step, double time, const World& world, const SnapshotFields& fields);

// Static description of one rigid body, enough to draw it from the snapshot poses.
struct GeometryDescription {
  std::string shape;                 // "half_space" | "box" | "sphere" | "cylinder"
  std::vector<double> half_extents;  // box: 3 [m]
  double radius = 0.0;               // sphere, cylinder [m]
  double half_height = 0.0;          // cylinder, along the geometry's z axis [m]
  std::vector<double> position;      // 3, geometry origin in the body frame [m]
  std::vector<double> orientation;   // 4, (w, x, y, z) in the body frame
};
struct BodyDescription {
  std::string name;
  std::string motion;  // "static" | "kinematic" | "free" | "articulated"
  std::vector<GeometryDescription> geometries;
};
std::vector<BodyDescription> DescribeBodies(const World& world);

// The HDF5 path of the connectivity 0..count-1 and the counts a snapshot set needs (each
// nonzero particle and body count once, ascending).
std::string PolyvertexDataset(std::size_t count);
std::vector<std::size_t> PolyvertexCounts(const std::vector<Snapshot>& snapshots);

// XDMF 3 text for `snapshots` stored in the HDF5 file `h5_file_name` (a name relative to the
// XDMF file): a temporal collection with, per snapshot, a spatial collection of a
// "particles" Polyvertex grid (when N > 0) and a "bodies" Polyvertex grid of body frame
// origins (when B > 0), each with its connectivity PolyvertexDataset(count).
std::string XdmfText(const std::vector<Snapshot>& snapshots, const std::string& h5_file_name);

}  // namespace contactlab::experiments
