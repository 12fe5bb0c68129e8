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

void AttachmentTable::VisitState(StateArchive& archive) {
  const StateArchive::Scope scope(archive, "attachments");
  // One column per field: the pairs hold Eigen vectors, which are not plain bytes.
  std::vector<ParticleKind> kinds;
  std::vector<int> particles, bodies, geometries, triangles;
  std::vector<mpm::Vector3> attachments, barycentrics;
  std::vector<double> stiffnesses;
  for (const ContactPair& pair : pairs_) {
    kinds.push_back(pair.particle_kind);
    particles.push_back(pair.particle);
    bodies.push_back(pair.body);
    geometries.push_back(pair.geometry);
    attachments.push_back(pair.attachment);
    triangles.push_back(pair.mesh_attachment.triangle);
    barycentrics.push_back(pair.mesh_attachment.barycentric);
    stiffnesses.push_back(pair.stiffness);
  }
  archive("particle_kind", kinds);
  archive("particle", particles);
  archive("body", bodies);
  archive("geometry", geometries);
  archive("attachment", attachments);
  archive("mesh_triangle", triangles);
  archive("mesh_barycentric", barycentrics);
  archive("stiffness", stiffnesses);
  if (archive.saving()) return;
  const std::size_t count = kinds.size();
  for (const std::size_t size : {particles.size(), bodies.size(), geometries.size(), attachments.size(),
                                 triangles.size(), barycentrics.size(), stiffnesses.size()}) {
    if (size != count) archive.Fail("particle", "and the other columns differ in length");
  }
  Clear();
  for (std::size_t k = 0; k < count; ++k) {
    if (kinds[k] != ParticleKind::kMpm && kinds[k] != ParticleKind::kRigidSample) {
      archive.Fail("particle_kind", "holds no kind");
    }
    const ContactPair pair{kinds[k],      particles[k],   bodies[k],
                           geometries[k], attachments[k], {triangles[k], barycentrics[k]},
                           stiffnesses[k]};
    if (!Insert(pair)) archive.Fail("particle", "lists a pair twice");
  }
}

}  // namespace contactlab::penalty
