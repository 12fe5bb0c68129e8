#include "formulations/penalty/attachment_table.h"

namespace contactlab::penalty {

bool AttachmentTable::Insert(const ContactPair& pair) {
  const auto [where, added] = index_.emplace(Key(pair.particle_kind, pair.particle, pair.body, pair.geometry), size());
  if (added) pairs_.push_back(pair);
  return added;
}

void AttachmentTable::CommitAndPrune(const std::vector<bool>& keep, const std::vector<mpm::Vector3>& relaxed,
                                     const std::vector<MeshPoint>& relaxed_mesh) {
  std::vector<ContactPair> kept;
  kept.reserve(pairs_.size());
  index_.clear();
  for (std::size_t k = 0; k < pairs_.size(); ++k) {
    if (!keep[k]) continue;
    ContactPair pair = pairs_[k];
    pair.attachment = relaxed[k];
    if (pair.mesh_attachment.triangle >= 0) pair.mesh_attachment = relaxed_mesh[k];
    index_.emplace(Key(pair.particle_kind, pair.particle, pair.body, pair.geometry), static_cast<int>(kept.size()));
    kept.push_back(pair);
  }
  pairs_.swap(kept);
}

}  // namespace contactlab::penalty
