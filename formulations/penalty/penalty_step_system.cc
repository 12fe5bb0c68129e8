#include "formulations/penalty/penalty_step_system.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <omp.h>

#include "formulations/penalty/mesh_relaxation.h"
#include "formulations/penalty/relaxation.h"
#include "mpm/bspline.h"

namespace contactlab::penalty {

double DerivedPairStiffness(double mass, double dt, double modulus, double size) {
  const double angular_frequency = 2.0 * std::numbers::pi / dt;
  return std::max(mass * angular_frequency * angular_frequency, modulus * size);
}

double PenaltyStepSystem::InitialStiffness(ParticleKind kind, int particle) const {
  const bool is_mpm = kind == ParticleKind::kMpm;
  const double given = is_mpm ? options_.particle_stiffness : options_.rigid_stiffness;
  if (given > 0.0) return given;
  if (is_mpm) {
    return DerivedPairStiffness(world_.particles.mass[particle], dt_,
                                material_moduli_[world_.particles.material[particle]],
                                std::cbrt(world_.particles.initial_volume[particle]));
  }
  return DerivedPairStiffness(samples_[particle].mass, dt_, stiffest_modulus_, samples_[particle].spacing);
}

ContactShape PenaltyStepSystem::TouchedShape(int body, int geometry) const {
  const rigid::Shape& shape = world_.bodies[body].geometries[geometry].shape;
  if (!box_meshes_[body][geometry].triangles.empty()) return ContactShape(shape, 0.0);
  return ContactShape(shape,
                      options_.edge_radius >= 0.0 ? options_.edge_radius : DerivedEdgeRadius(world_.grid_spacing));
}

namespace {

using RowMatrix3X = Eigen::Matrix<double, 3, Eigen::Dynamic>;

// out = diag(row_scale) (a + b) for compressed column-major a and b of one size, written into
// out's existing storage (it grows only when out holds fewer nonzeros than needed). Entries
// of a and b at one place are summed before the scaling, as Eigen's expression would.
void AddAndScaleRows(const SparseMatrix& a, const SparseMatrix& b, const Eigen::VectorXd& row_scale,
                     SparseMatrix* out) {
  out->resize(a.rows(), a.cols());
  out->resizeNonZeros(a.nonZeros() + b.nonZeros());
  int* out_outer = out->outerIndexPtr();
  int* out_inner = out->innerIndexPtr();
  double* out_value = out->valuePtr();
  const int *a_outer = a.outerIndexPtr(), *a_inner = a.innerIndexPtr();
  const int *b_outer = b.outerIndexPtr(), *b_inner = b.innerIndexPtr();
  const double *a_value = a.valuePtr(), *b_value = b.valuePtr();
  int count = 0;
  for (int column = 0; column < a.cols(); ++column) {
    out_outer[column] = count;
    int i = a_outer[column], j = b_outer[column];
    const int i_end = a_outer[column + 1], j_end = b_outer[column + 1];
    while (i < i_end || j < j_end) {
      int row;
      double value;
      if (j == j_end || (i < i_end && a_inner[i] < b_inner[j])) {
        row = a_inner[i];
        value = a_value[i++];
      } else if (i == i_end || b_inner[j] < a_inner[i]) {
        row = b_inner[j];
        value = b_value[j++];
      } else {
        row = a_inner[i];
        value = a_value[i++] + b_value[j++];
      }
      out_inner[count] = row;
      out_value[count++] = row_scale[row] * value;
    }
  }
  out_outer[a.cols()] = count;
  out->resizeNonZeros(count);
}

Matrix3 CrossMatrix(const Vector3& a) {
  Matrix3 m;
  m << 0.0, -a.z(), a.y(), a.z(), 0.0, -a.x(), -a.y(), a.x(), 0.0;
  return m;
}

// exp([θ]×) and the left Jacobian J_l(θ) of the exponential map (spec §2.8):
// exp([θ + δ]×) ≈ exp([J_l(θ) δ]×) exp([θ]×).
Matrix3 RotationFromVector(const Vector3& theta) {
  const double angle = theta.norm();
  if (angle == 0.0) return Matrix3::Identity();
  return Eigen::AngleAxisd(angle, theta / angle).toRotationMatrix();
}

Matrix3 LeftJacobian(const Vector3& theta) {
  const double angle = theta.norm();
  const Matrix3 cross = CrossMatrix(theta);
  double first, second;  // (1 − cos θ)/θ², (θ − sin θ)/θ³
  if (angle < 1.0e-4) {
    const double angle2 = angle * angle;
    first = 0.5 - angle2 / 24.0;
    second = 1.0 / 6.0 - angle2 / 120.0;
  } else {
    first = (1.0 - std::cos(angle)) / (angle * angle);
    second = (angle - std::sin(angle)) / (angle * angle * angle);
  }
  return Matrix3::Identity() + first * cross + second * cross * cross;
}

}  // namespace

PenaltyStepSystem::PenaltyStepSystem(const World& world, double dt, const mpm::SparseGrid& grid,
                                     const dynamics::ImplicitMpm& implicit_mpm, const dynamics::RigidDofs& rigid_dofs,
                                     const std::vector<RigidSample>& samples, const PenaltyContactOptions& options,
                                     AttachmentTable& attachments)
    : world_(world),
      dt_(dt),
      implicit_mpm_(implicit_mpm),
      rigid_dofs_(rigid_dofs),
      samples_(samples),
      options_(options),
      attachments_(attachments) {
  // M_w = ρc² of each material [Pa], for the derived stiffness of new pairs.
  for (const mpm::Material& material : world.materials) {
    const double speed = material.WaveSpeed();
    material_moduli_.push_back(material.density * speed * speed);
    stiffest_modulus_ = std::max(stiffest_modulus_, material_moduli_.back());
  }
  grid_size_ = implicit_mpm.num_dofs();
  rigid_size_ = rigid_dofs.size();

  // 1. Every particle's stencil at xⁿ: active node indices and B-spline weights, for
  //    Z_p = x_pⁿ + Δt Σ_i w_ip v_i (spec §2.7, MPM particle row).
  const mpm::Particles& particles = world.particles;
  const int particle_count = static_cast<int>(particles.size());
  stencils_.resize(particle_count);
#pragma omp parallel for schedule(static)
  for (int p = 0; p < particle_count; ++p) {
    const mpm::QuadraticStencil stencil = mpm::ComputeQuadraticStencil(particles.position[p], grid.spacing());
    ParticleStencil& out = stencils_[p];
    for (int c = 0; c < 3; ++c) {
      for (int b = 0; b < 3; ++b) {
        for (int a = 0; a < 3; ++a) {
          const int slot = a + 3 * b + 9 * c;
          const int node = grid.FindNode(stencil.base_node + mpm::NodeCoordinate(a, b, c));
          out.nodes[slot] = node >= 0 ? implicit_mpm.ActiveIndexOfGridNode(node) : -1;
          out.weights[slot] = stencil.Weight(a, b, c);
        }
      }
    }
  }

  // 2. Each body's spatial velocity [v; ω] = S u + bias, and its pose at the step's start
  //    (kinematic bodies: at its end).
  const int body_count = static_cast<int>(world.bodies.size());
  spatial_maps_.assign(body_count, BodySpatialMap{});
  start_poses_.resize(body_count);
  kinematic_end_poses_.resize(body_count);
  for (int b = 0; b < body_count; ++b) {
    const rigid::RigidBody& body = world.bodies[b];
    start_poses_[b] = body.pose;
    BodySpatialMap& map = spatial_maps_[b];
    map.map.resize(6, 0);
    if (body.motion == rigid::BodyMotion::kKinematic && body.trajectory) {
      kinematic_end_poses_[b] = body.trajectory(world.time + dt).pose;
      continue;
    }
    if (body.is_free()) {
      rigid_dofs.PointJacobian(world, b, body.pose.position, &map.first_column);
      map.map = Eigen::Matrix<double, 6, 6>::Identity();
    } else if (body.motion == rigid::BodyMotion::kArticulated && body.tree_link >= 0) {
      const rigid::MultibodyTree& tree = world.multibody;
      if (rigid_dofs.HasDofs(b)) {
        rigid_dofs.PointJacobian(world, b, body.pose.position, &map.first_column);
        const rigid::SpatialJacobian link = tree.LinkJacobian(body.tree_link);  // [ω; v]
        map.map.resize(6, link.cols());
        map.map.topRows<3>() = link.bottomRows<3>();
        map.map.bottomRows<3>() = link.topRows<3>();
      }
      // Prescribed joints move the link without unknowns: its velocity field is affine in the
      // point, v(c + e) = v(c) + ω × e, which gives ω from two offsets.
      const Vector3 centre = body.pose.position;
      const Vector3 at_centre = tree.PointBiasVelocity(body.tree_link, centre);
      const Vector3 along_x = tree.PointBiasVelocity(body.tree_link, centre + Vector3::UnitX()) - at_centre;
      const Vector3 along_y = tree.PointBiasVelocity(body.tree_link, centre + Vector3::UnitY()) - at_centre;
      map.bias.head<3>() = at_centre;
      map.bias.tail<3>() = Vector3(along_y.z(), -along_x.z(), along_x.y());
    }
  }

  // 3. D = diag(m_i I, diag A): the weights of the residual norm.
  inverse_sqrt_weights_.resize(size());
  const Eigen::VectorXd& node_masses = implicit_mpm.node_masses();
  for (int node = 0; node < implicit_mpm.num_active_nodes(); ++node) {
    inverse_sqrt_weights_.segment<3>(3 * node).setConstant(1.0 / std::sqrt(node_masses[node]));
  }
  for (int k = 0; k < rigid_size_; ++k) {
    inverse_sqrt_weights_[grid_size_ + k] = 1.0 / std::sqrt(rigid_dofs.dynamics_matrix()(k, k));
  }

  // 4. Triangle meshes of boxes when they are relaxed as meshes.
  box_meshes_.assign(body_count, {});
  for (int b = 0; b < body_count; ++b) {
    const auto& geometries = world.bodies[b].geometries;
    box_meshes_[b].resize(geometries.size());
    if (!options_.box_as_mesh) continue;
    for (std::size_t g = 0; g < geometries.size(); ++g) {
      if (geometries[g].shape.kind == rigid::ShapeKind::kBox) {
        box_meshes_[b][g] = TriangleMesh::Box(geometries[g].shape.half_extents);
      }
    }
  }
}

Eigen::VectorXd PenaltyStepSystem::InitialGuess() const {
  Eigen::VectorXd x(size());
  x.head(grid_size_) = implicit_mpm_.start_velocity();  // grid walls' components at zero
  x.tail(rigid_size_) = rigid_dofs_.current_velocity();
  return x;
}

double PenaltyStepSystem::ResidualScale() const {
  double total_mass = implicit_mpm_.node_masses().sum();
  for (const rigid::RigidBody& body : world_.bodies) {
    if (body.has_finite_mass()) total_mass += body.mass;
  }
  const Eigen::VectorXd x = InitialGuess();
  const double kinetic = (x.array() / inverse_sqrt_weights_.array()).square().sum();  // Σ D_kk x_k²
  const double rms_speed = total_mass > 0.0 ? std::sqrt(kinetic / total_mass) : 0.0;
  const double speed = std::max(dt_ * world_.gravity.norm(), rms_speed);
  return std::sqrt(total_mass) * std::max(speed, 1.0e-12);
}

std::vector<int> PenaltyStepSystem::PreconditionerBlocks() const {
  // Three unknowns per grid node; one block per free body; the whole tree as one block.
  std::vector<int> blocks;
  for (int start = 0; start < grid_size_; start += 3) blocks.push_back(start);
  std::vector<int> rigid_starts;
  for (const BodySpatialMap& map : spatial_maps_) {
    if (map.first_column >= 0) rigid_starts.push_back(map.first_column);
  }
  std::sort(rigid_starts.begin(), rigid_starts.end());
  rigid_starts.erase(std::unique(rigid_starts.begin(), rigid_starts.end()), rigid_starts.end());
  for (int start : rigid_starts) blocks.push_back(grid_size_ + start);
  blocks.push_back(size());
  return blocks;
}

Vector3 PenaltyStepSystem::MpmParticlePosition(int particle, const Eigen::VectorXd& x) const {
  const ParticleStencil& stencil = stencils_[particle];
  Vector3 velocity = Vector3::Zero();
  for (int slot = 0; slot < 27; ++slot) {
    if (stencil.nodes[slot] >= 0) velocity += stencil.weights[slot] * x.segment<3>(3 * stencil.nodes[slot]);
  }
  return world_.particles.position[particle] + dt_ * velocity;
}

BodyMotionAtIterate PenaltyStepSystem::BodyMotion(int body_index, const Eigen::VectorXd& x) const {
  BodyMotionAtIterate motion;
  const rigid::RigidBody& body = world_.bodies[body_index];
  if (body.motion == rigid::BodyMotion::kKinematic && body.trajectory) {
    motion.position = kinematic_end_poses_[body_index].position;
    motion.rotation = kinematic_end_poses_[body_index].rotation();
    return motion;
  }
  const BodySpatialMap& map = spatial_maps_[body_index];
  Eigen::Matrix<double, 6, 1> spatial = map.bias;
  if (map.first_column >= 0) spatial += map.map * x.segment(grid_size_ + map.first_column, map.map.cols());
  motion.rotation_vector = dt_ * spatial.tail<3>();
  motion.position = start_poses_[body_index].position + dt_ * spatial.head<3>();
  motion.rotation = RotationFromVector(motion.rotation_vector) * start_poses_[body_index].rotation();
  motion.left_jacobian = LeftJacobian(motion.rotation_vector);
  return motion;
}

bool PenaltyStepSystem::BeginIteration(const Eigen::VectorXd& x) {
  return DetectNewPairs(x) > 0;
}

int PenaltyStepSystem::DetectNewPairs(const Eigen::VectorXd& x) {
  const int body_count = static_cast<int>(world_.bodies.size());
  std::vector<BodyMotionAtIterate> motions(body_count);
  for (int b = 0; b < body_count; ++b) motions[b] = BodyMotion(b, x);
  // World → geometry frame of every geometry at the iterate.
  struct GeometryFrame {
    int body, geometry;
    Matrix3 rotation;
    Vector3 origin;
  };
  std::vector<GeometryFrame> frames;
  for (int b = 0; b < body_count; ++b) {
    const auto& geometries = world_.bodies[b].geometries;
    for (int g = 0; g < static_cast<int>(geometries.size()); ++g) {
      frames.push_back({b, g, motions[b].rotation * geometries[g].pose_in_body.rotation(),
                        motions[b].position + motions[b].rotation * geometries[g].pose_in_body.position});
    }
  }

  // Candidates per particle (found in parallel, inserted in particle order so that the
  // pair numbering does not depend on the thread count). A new pair attaches at the closest
  // surface point X = Z − φ(Z) n(Z) (spec §2.6).
  const int mpm_count = static_cast<int>(world_.particles.size());
  const int sample_count = static_cast<int>(samples_.size());
  const int candidate_count = mpm_count + sample_count;
  std::vector<std::vector<ContactPair>> candidates(candidate_count);
#pragma omp parallel for schedule(dynamic, 256)
  for (int k = 0; k < candidate_count; ++k) {
    const bool is_mpm = k < mpm_count;
    const int particle = is_mpm ? k : k - mpm_count;
    int own_body = -1;
    Vector3 position;
    if (is_mpm) {
      position = MpmParticlePosition(particle, x);
    } else {
      own_body = samples_[particle].body;
      position = motions[own_body].position + motions[own_body].rotation * samples_[particle].position_in_body;
    }
    const ParticleKind kind = is_mpm ? ParticleKind::kMpm : ParticleKind::kRigidSample;
    for (const GeometryFrame& frame : frames) {
      if (frame.body == own_body) continue;
      if (is_mpm && world_.bodies[frame.body].is_grid_boundary()) continue;  // the grid holds it
      const ContactShape shape = TouchedShape(frame.body, frame.geometry);
      const Vector3 local = frame.rotation.transpose() * (position - frame.origin);
      const double distance = shape.SignedDistance(local);
      if (!(distance < 0.0)) continue;
      if (attachments_.Contains(kind, particle, frame.body, frame.geometry)) continue;
      ContactPair pair;
      pair.particle_kind = kind;
      pair.particle = particle;
      pair.body = frame.body;
      pair.geometry = frame.geometry;
      pair.stiffness = InitialStiffness(kind, particle);
      const TriangleMesh& mesh = box_meshes_[frame.body][frame.geometry];
      if (!mesh.triangles.empty()) {
        pair.mesh_attachment = ClosestPointOnMesh(mesh, local);
        pair.attachment = PointOnMesh(mesh, pair.mesh_attachment);
      } else {
        pair.attachment = local - distance * shape.OutwardNormal(local);
      }
      candidates[k].push_back(pair);
    }
  }
  int added = 0;
  for (const auto& list : candidates) {
    for (const ContactPair& pair : list) added += attachments_.Insert(pair) ? 1 : 0;
  }
  pairs_created_ += added;
  return added;
}

void PenaltyStepSystem::EvaluatePair(int pair_index, const Eigen::VectorXd& x,
                                     const std::vector<BodyMotionAtIterate>& motions, bool with_jacobian,
                                     PairContribution& contribution) {
  const ContactPair& pair = attachments_.pair(pair_index);
  PairForce& out = pair_forces_[pair_index];
  const rigid::Geometry& geometry = world_.bodies[pair.body].geometries[pair.geometry];
  const BodyMotionAtIterate& object = motions[pair.body];
  const BodySpatialMap& object_map = spatial_maps_[pair.body];
  const Matrix3 geometry_rotation = object.rotation * geometry.pose_in_body.rotation();
  const Vector3 geometry_origin = object.position + object.rotation * geometry.pose_in_body.position;
  const double mu = geometry.friction_coefficient;

  // 1. The particle Z at the iterate (spec §2.7).
  const bool is_mpm = pair.particle_kind == ParticleKind::kMpm;
  Vector3 particle_position;
  Vector3 arm = Vector3::Zero();  // Z − c_a for a rigid sample of body a
  int particle_body = -1;
  const double stiffness = pair.stiffness;
  if (is_mpm) {
    particle_position = MpmParticlePosition(pair.particle, x);
  } else {
    const RigidSample& sample = samples_[pair.particle];
    particle_body = sample.body;
    arm = motions[particle_body].rotation * sample.position_in_body;
    particle_position = motions[particle_body].position + arm;
  }

  // 2. Relax the attachment in the geometry's frame (spec §2.3–2.5) and form the spring.
  const Vector3 local = geometry_rotation.transpose() * (particle_position - geometry_origin);
  Vector3 relaxed_local;
  Matrix3 relaxed_jacobian;
  Vector3 normal_local;
  bool active = false;
  bool sliding = false;
  const TriangleMesh& mesh = box_meshes_[pair.body][pair.geometry];
  out.relaxed_mesh_point = pair.mesh_attachment;
  out.mesh_states = 0;
  if (!mesh.triangles.empty()) {
    const MeshRelaxation relaxation = RelaxAgainstMesh(mesh, pair.mesh_attachment, local, mu);
    relaxed_local = relaxation.relaxed_point;
    relaxed_jacobian = relaxation.jacobian;
    normal_local = relaxation.normal;
    active = relaxation.active;
    sliding = relaxation.sliding;
    out.relaxed_mesh_point = relaxation.relaxed_location;
    out.mesh_states = static_cast<int>(relaxation.states.size());
  } else {
    Relaxation relaxation;
    if (geometry.shape.kind == rigid::ShapeKind::kHalfSpace) {
      relaxation = RelaxAgainstPlane(pair.attachment, local, Vector3::Zero(), Vector3::UnitZ(), mu);
    } else {
      const ContactShape shape = TouchedShape(pair.body, pair.geometry);
      const LevelSetFunction level_set = [&shape](const Vector3& point) { return shape.Sample(point); };
      relaxation = RelaxAgainstLevelSet(pair.attachment, local, level_set, mu);
    }
    relaxed_local = relaxation.relaxed_point;
    relaxed_jacobian = relaxation.jacobian;
    normal_local = relaxation.normal;
    active = relaxation.active;
    sliding = relaxation.sliding;
  }
  const Vector3 force = active ? Vector3(stiffness * (geometry_rotation * (relaxed_local - local))) : Vector3::Zero();
  const Matrix3 force_jacobian =  // K = ∂f/∂Z (spec §2.9)
      active ? Matrix3(stiffness * geometry_rotation * (relaxed_jacobian - Matrix3::Identity()) *
                       geometry_rotation.transpose())
             : Matrix3::Zero();
  out.active = active;
  out.sliding = sliding;
  out.particle_position = particle_position;
  out.relaxed_point = geometry_origin + geometry_rotation * relaxed_local;
  out.relaxed_local = relaxed_local;
  out.normal = geometry_rotation * normal_local;
  out.force = force;

  // 3. Rows (generalized forces) and columns (unknowns) this pair touches.
  contribution.rows.clear();
  contribution.columns.clear();
  const mpm::Vector3 object_arm = particle_position - object.position;  // ρ = Z − c_b
  const int object_width = object_map.first_column >= 0 ? static_cast<int>(object_map.map.cols()) : 0;
  const BodySpatialMap* particle_map = is_mpm ? nullptr : &spatial_maps_[particle_body];
  const int particle_width =
      (!is_mpm && particle_map->first_column >= 0) ? static_cast<int>(particle_map->map.cols()) : 0;
  const ParticleStencil* stencil = is_mpm ? &stencils_[pair.particle] : nullptr;
  std::array<int, 27> slots{};
  int slot_count = 0;
  if (is_mpm) {
    for (int slot = 0; slot < 27; ++slot) {
      if (stencil->nodes[slot] >= 0) slots[slot_count++] = slot;
    }
    for (int s = 0; s < slot_count; ++s) {
      for (int axis = 0; axis < 3; ++axis) contribution.rows.push_back(3 * stencil->nodes[slots[s]] + axis);
    }
  } else {
    for (int k = 0; k < particle_width; ++k) contribution.rows.push_back(grid_size_ + particle_map->first_column + k);
  }
  const int particle_rows = static_cast<int>(contribution.rows.size());
  for (int k = 0; k < object_width; ++k) contribution.rows.push_back(grid_size_ + object_map.first_column + k);
  contribution.columns = contribution.rows;  // the same unknowns drive Z and the object pose
  const int count = static_cast<int>(contribution.rows.size());

  // 4. Generalized forces: w_i f on the nodes, or Sᵀ[f; arm × f] on body a; Sᵀ[−f; −ρ × f] on
  //    the touched body (the reaction at Y has the torque of ρ × f since Y − Z ∥ f).
  contribution.force.setZero(count);
  if (is_mpm) {
    for (int s = 0; s < slot_count; ++s) contribution.force.segment<3>(3 * s) = stencil->weights[slots[s]] * force;
  } else if (particle_width > 0) {
    Eigen::Matrix<double, 6, 1> wrench;
    wrench << force, arm.cross(force);
    contribution.force.head(particle_width) = particle_map->map.transpose() * wrench;
  }
  if (object_width > 0) {
    Eigen::Matrix<double, 6, 1> wrench;
    wrench << -force, -object_arm.cross(force);
    contribution.force.tail(object_width) = object_map.map.transpose() * wrench;
  }
  contribution.stencil_only = is_mpm && object_width == 0;
  if (!with_jacobian) return;
  if (contribution.stencil_only) {
    // δf = K δZ and δZ = Δt Σ_t w_t δv_t, so ∂(w_s f)/∂v_t = Δt w_s w_t K (assembled later).
    contribution.force_jacobian = force_jacobian;
    for (int s = 0; s < slot_count; ++s) contribution.node_weights[s] = stencil->weights[slots[s]];
    return;
  }

  // 5. Derivatives along the pair's unknowns (spec §2.8–2.9): δZ, δc_b, δθ_b, then
  //    δf = K δZ − K δc_b + (−[f]× + K[ρ]×) δθ_b.
  RowMatrix3X delta_particle = RowMatrix3X::Zero(3, count);         // δZ
  RowMatrix3X delta_arm = RowMatrix3X::Zero(3, count);              // δ(Z − c_a)
  RowMatrix3X delta_object_position = RowMatrix3X::Zero(3, count);  // δc_b
  RowMatrix3X delta_object_rotation = RowMatrix3X::Zero(3, count);  // δθ_b (left)
  if (is_mpm) {
    for (int s = 0; s < slot_count; ++s) {
      delta_particle.block<3, 3>(0, 3 * s) = dt_ * stencil->weights[slots[s]] * Matrix3::Identity();
    }
  } else if (particle_width > 0) {
    // Z = c_a + exp([θ_a]×) Rⁿ s: ∂Z/∂v_a = Δt I, ∂Z/∂ω_a = −Δt [Z − c_a]× J_l(θ_a).
    const Matrix3 rotation_part = -dt_ * CrossMatrix(arm) * motions[particle_body].left_jacobian;
    delta_arm.leftCols(particle_width) = rotation_part * particle_map->map.bottomRows<3>();
    delta_particle.leftCols(particle_width) = dt_ * particle_map->map.topRows<3>() + delta_arm.leftCols(particle_width);
  }
  if (object_width > 0) {
    delta_object_position.rightCols(object_width) = dt_ * object_map.map.topRows<3>();
    delta_object_rotation.rightCols(object_width) = dt_ * object.left_jacobian * object_map.map.bottomRows<3>();
  }
  const Matrix3 rotation_sensitivity = -CrossMatrix(force) + force_jacobian * CrossMatrix(object_arm);
  const RowMatrix3X delta_force =
      force_jacobian * (delta_particle - delta_object_position) + rotation_sensitivity * delta_object_rotation;

  contribution.stiffness.setZero(count, count);
  if (is_mpm) {
    for (int s = 0; s < slot_count; ++s) {
      contribution.stiffness.middleRows<3>(3 * s) = stencil->weights[slots[s]] * delta_force;
    }
  } else if (particle_width > 0) {
    // δτ_a = [arm]× δf − [f]× δarm.
    Eigen::Matrix<double, 6, Eigen::Dynamic> delta_wrench(6, count);
    delta_wrench.topRows<3>() = delta_force;
    delta_wrench.bottomRows<3>() = CrossMatrix(arm) * delta_force - CrossMatrix(force) * delta_arm;
    contribution.stiffness.topRows(particle_rows) = particle_map->map.transpose() * delta_wrench;
  }
  if (object_width > 0) {
    // δF_b = −δf, δτ_b = −[ρ]× δf + [f]× (δZ − δc_b).
    Eigen::Matrix<double, 6, Eigen::Dynamic> delta_wrench(6, count);
    delta_wrench.topRows<3>() = -delta_force;
    delta_wrench.bottomRows<3>() =
        -CrossMatrix(object_arm) * delta_force + CrossMatrix(force) * (delta_particle - delta_object_position);
    contribution.stiffness.bottomRows(object_width) = object_map.map.transpose() * delta_wrench;
  }
}

void PenaltyStepSystem::AddStencilOnlyStiffness(const std::vector<PairContribution>& contributions,
                                                SparseMatrix& grid_block,
                                                std::vector<Eigen::Triplet<double>>& triplets) const {
  const int* outer = grid_block.outerIndexPtr();
  const int* inner = grid_block.innerIndexPtr();
  double* values = grid_block.valuePtr();
  const auto fixed = [&](int dof) { return implicit_mpm_.IsConstrainedDof(dof); };
  std::vector<std::vector<Eigen::Triplet<double>>> thread_triplets(omp_get_max_threads());
#pragma omp parallel
  {
    // Columns [begin, end) belong to this thread; the ranges come from the team actually started.
    const int team = omp_get_num_threads();
    const int thread = omp_get_thread_num();
    const int begin = static_cast<int>(static_cast<long long>(grid_size_) * thread / team);
    const int end = static_cast<int>(static_cast<long long>(grid_size_) * (thread + 1) / team);
    std::vector<Eigen::Triplet<double>>& mine = thread_triplets[thread];
    for (const PairContribution& contribution : contributions) {
      if (!contribution.stencil_only) continue;
      const int node_count = static_cast<int>(contribution.rows.size()) / 3;
      const Matrix3& k = contribution.force_jacobian;
      for (int t = 0; t < node_count; ++t) {
        const int first_column = contribution.rows[3 * t];
        if (first_column + 2 < begin || first_column >= end) continue;
        for (int b = 0; b < 3; ++b) {
          const int column = first_column + b;
          if (column < begin || column >= end || fixed(column)) continue;
          const int* column_begin = inner + outer[column];
          const int* column_end = inner + outer[column + 1];
          for (int s = 0; s < node_count; ++s) {
            const double weight = -dt_ * dt_ * contribution.node_weights[s] * contribution.node_weights[t];
            const int first_row = contribution.rows[3 * s];
            // The node's three rows sit together in the column when the pattern holds them.
            const int* found = std::lower_bound(column_begin, column_end, first_row);
            for (int a = 0; a < 3; ++a) {
              const double value = weight * k(a, b);
              if (value == 0.0) continue;
              const int row = first_row + a;
              if (fixed(row)) continue;  // decoupled like ImplicitMpm::Hessian
              if (found + a < column_end && found[a] == row) {
                values[found + a - inner] += value;
              } else {
                mine.emplace_back(row, column, value);
              }
            }
          }
        }
      }
    }
  }
  for (const auto& part : thread_triplets) triplets.insert(triplets.end(), part.begin(), part.end());
}

void PenaltyStepSystem::Evaluate(const Eigen::VectorXd& x, Eigen::VectorXd* residual, SparseMatrix* jacobian) {
  const int body_count = static_cast<int>(world_.bodies.size());
  std::vector<BodyMotionAtIterate> motions(body_count);
  for (int b = 0; b < body_count; ++b) motions[b] = BodyMotion(b, x);

  // 1. Every pair's force (and derivatives), in parallel.
  const int pair_count = attachments_.size();
  pair_forces_.assign(pair_count, PairForce{});
  std::vector<PairContribution> contributions(pair_count);
  const bool with_jacobian = jacobian != nullptr;
#pragma omp parallel for schedule(dynamic, 16)
  for (int k = 0; k < pair_count; ++k) EvaluatePair(k, x, motions, with_jacobian, contributions[k]);

  // 2. g = [∇E_mpm(v); A (u − u*)] − Δt (contact forces), pairs summed in table order.
  const Eigen::VectorXd grid_velocity = x.head(grid_size_);
  Eigen::VectorXd& g = *residual;
  g.resize(size());
  g.head(grid_size_) = implicit_mpm_.Gradient(grid_velocity);
  g.tail(rigid_size_) = rigid_dofs_.dynamics_matrix() * (x.tail(rigid_size_) - rigid_dofs_.free_motion_velocity());
  // Grid walls absorb the contact forces on the velocity components they fix.
  const auto fixed = [&](int row) { return row < grid_size_ && implicit_mpm_.IsConstrainedDof(row); };
  grid_contact_impulses_ = Eigen::VectorXd::Zero(grid_size_);
  for (const PairContribution& contribution : contributions) {
    for (std::size_t i = 0; i < contribution.rows.size(); ++i) {
      const int row = contribution.rows[i];
      if (row < grid_size_) grid_contact_impulses_[row] += dt_ * contribution.force[i];
      if (!fixed(row)) g[row] -= dt_ * contribution.force[i];
    }
  }

  if (with_jacobian) {
    // 3. H = [∇²E_mpm, 0; 0, A] − Δt ∂(contact forces)/∂x. Grid–grid contact blocks fall on
    //    node pairs that share a particle's stencil, which the MPM Hessian pattern already
    //    holds; everything touching rigid unknowns goes through triplets.
    SparseMatrix& grid_block = grid_block_;
    if (implicit_mpm_.is_quadratic()) {
      if (!mpm_hessian_cached_) {
        mpm_hessian_ = implicit_mpm_.Hessian(grid_velocity);
        mpm_hessian_cached_ = true;
      }
      grid_block = mpm_hessian_;
    } else {
      // The exact tangent: the line search differentiates ½‖g‖² through H, so a PSD-projected
      // block would give it wrong slopes (spec-penalty-hybrid §2.2).
      grid_block = implicit_mpm_.Hessian(grid_velocity, dynamics::StressTangent::kExact);
    }
    const int* outer = grid_block.outerIndexPtr();
    const int* inner = grid_block.innerIndexPtr();
    double* values = grid_block.valuePtr();
    std::vector<Eigen::Triplet<double>> triplets;
    for (const PairContribution& contribution : contributions) {
      if (contribution.stencil_only) continue;  // AddStencilOnlyStiffness, below
      const int count = static_cast<int>(contribution.rows.size());
      for (int j = 0; j < count; ++j) {
        const int column = contribution.columns[j];
        for (int i = 0; i < count; ++i) {
          const double value = -dt_ * contribution.stiffness(i, j);
          if (value == 0.0) continue;
          const int row = contribution.rows[i];
          if (fixed(row) || fixed(column)) continue;  // decoupled like ImplicitMpm::Hessian
          if (row < grid_size_ && column < grid_size_) {
            const int* begin = inner + outer[column];
            const int* end = inner + outer[column + 1];
            const int* found = std::lower_bound(begin, end, row);
            if (found != end && *found == row) {
              values[found - inner] += value;  // the two nodes share this particle's stencil
            } else {
              triplets.emplace_back(row, column, value);
            }
          } else {
            triplets.emplace_back(row, column, value);
          }
        }
      }
    }
    AddStencilOnlyStiffness(contributions, grid_block, triplets);
    const Eigen::MatrixXd& dynamics = rigid_dofs_.dynamics_matrix();
    for (int j = 0; j < rigid_size_; ++j) {
      for (int i = 0; i < rigid_size_; ++i) {
        if (dynamics(i, j) != 0.0) triplets.emplace_back(grid_size_ + i, grid_size_ + j, dynamics(i, j));
      }
    }
    grid_block.conservativeResize(size(), size());
    grid_block.makeCompressed();
    rigid_part_.resize(size(), size());
    rigid_part_.setFromTriplets(triplets.begin(), triplets.end());
    // 4. The weighted system: g̃ = D^(-1/2) g, H̃ = D^(-1/2) H (the rows of H scaled).
    AddAndScaleRows(grid_block, rigid_part_, inverse_sqrt_weights_, jacobian);
  }
  g.array() *= inverse_sqrt_weights_.array();
}

}  // namespace contactlab::penalty
