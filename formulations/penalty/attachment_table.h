#pragma once
// The contact pairs of the penalty method ([ding_schroeder_penalty] §2.2, spec-penalty-hybrid §2.6, §2.12):
// one per (particle, touched geometry), each holding the committed attachment point X in the
// geometry's own frame, so that a sticking contact on a moving body never drifts. Pairs are
// created on first penetration, keep X fixed during a step, and at the end of the step
// either commit the relaxed point (X ← Y) or, when they no longer push, are removed.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "formulations/penalty/triangle_mesh.h"
#include "formulations/state_archive.h"
#include "mpm/types.h"

namespace contactlab::penalty {

// A point on the surface of a rigid body that can touch other bodies' geometry: the
// "particles" of rigid bodies (spec §2.7, rigid vertex).
struct RigidSample {
  int body = -1;
  mpm::Vector3 position_in_body = mpm::Vector3::Zero();  // [m], body frame (origin at the COM)
  double mass = 0.0;     // the sample's share of its body's mass, M / (samples of the body) [kg]
  double spacing = 0.0;  // distance to the neighbouring samples [m]
};

enum class ParticleKind : std::uint8_t { kMpm, kRigidSample };

struct ContactPair {
  ParticleKind particle_kind = ParticleKind::kMpm;
  int particle = -1;                               // MPM particle index, or index into the rigid samples
  int body = -1;                                   // the touched geometry: world body ...
  int geometry = -1;                               // ... and its geometry index
  mpm::Vector3 attachment = mpm::Vector3::Zero();  // X, geometry frame [m]
  MeshPoint mesh_attachment;                       // X on the geometry's triangle mesh, if relaxed as one
  double stiffness = 0.0;                          // k of this pair's spring [N/m], fixed from creation to removal
};

class AttachmentTable {
 public:
  int size() const { return static_cast<int>(pairs_.size()); }
  const ContactPair& pair(int index) const { return pairs_[index]; }
  ContactPair& pair(int index) { return pairs_[index]; }
  const std::vector<ContactPair>& pairs() const { return pairs_; }

  bool Contains(ParticleKind kind, int particle, int body, int geometry) const {
    return index_.count(Key(kind, particle, body, geometry)) != 0;
  }
  // Adds a pair unless one exists for the same particle and geometry; returns true if added.
  bool Insert(const ContactPair& pair);
  // End of step (spec §2.12): pairs with keep[k] take their relaxed attachment, the others
  // are removed. `relaxed` and `relaxed_mesh` are indexed like the pairs.
  // A kept pair keeps its stiffness.
  void CommitAndPrune(const std::vector<bool>& keep, const std::vector<mpm::Vector3>& relaxed,
                      const std::vector<MeshPoint>& relaxed_mesh);
  // Saves or loads the pairs in table order (formulations/state_archive.h); loading fails on
  // a repeated pair. The caller checks the indices against its world.
  void VisitState(StateArchive& archive);
  void Clear() {
    pairs_.clear();
    index_.clear();
  }

 private:
  static std::uint64_t Key(ParticleKind kind, int particle, int body, int geometry) {
    // 1 bit kind, 35 bits particle, 16 bits body, 12 bits geometry.
    return (static_cast<std::uint64_t>(kind) << 63) | (static_cast<std::uint64_t>(particle) << 28) |
           (static_cast<std::uint64_t>(body) << 12) | static_cast<std::uint64_t>(geometry);
  }
  std::vector<ContactPair> pairs_;
  std::unordered_map<std::uint64_t, int> index_;
};

}  // namespace contactlab::penalty
