#include "formulations/contact/grid_boundary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <omp.h>

#include "formulations/contact/coulomb_collision.h"
#include "formulations/contact/geometry_query.h"

namespace contactlab::contact {

const ChoiceTable<rigid::GridBoundary>& GridBoundaryNames() {
  static const ChoiceTable<rigid::GridBoundary> names = {{"contact_body", rigid::GridBoundary::kContactBody},
                                                         {"sticky", rigid::GridBoundary::kSticky},
                                                         {"slip", rigid::GridBoundary::kSlip},
                                                         {"separating", rigid::GridBoundary::kSeparating}};
  return names;
}

bool HasGridBoundary(const std::vector<rigid::RigidBody>& bodies) {
  for (const rigid::RigidBody& body : bodies) {
    if (body.is_grid_boundary()) return true;
  }
  return false;
}

std::vector<GridBoundaryNode> FindGridBoundaryNodes(const mpm::SparseGrid& grid,
                                                    const std::vector<rigid::RigidBody>& bodies) {
  std::vector<int> walls;
  for (int b = 0; b < static_cast<int>(bodies.size()); ++b) {
    if (!bodies[b].is_grid_boundary()) continue;
    if (bodies[b].motion != rigid::BodyMotion::kStatic) {
      throw InputError("body '" + bodies[b].name + "': a grid boundary must be a static body");
    }
    walls.push_back(b);
  }
  std::vector<GridBoundaryNode> nodes;
  if (walls.empty()) return nodes;
  const auto boxes = GeometryBoundingBoxes(bodies, 0.0);
  const int node_count = grid.num_nodes();
  // Per node one record for every wall geometry it lies in, deepest first; gathered in node
  // order. A node at a container's concave edge lies in two walls and is held along both
  // normals (one normal would let material through there).
  std::vector<std::vector<std::pair<double, GridBoundaryNode>>> per_node(node_count);
#pragma omp parallel for schedule(static)
  for (int node = 0; node < node_count; ++node) {
    if (grid.mass[node] <= 0.0) continue;
    const Vector3 position = grid.NodePosition(node);
    std::vector<std::pair<double, GridBoundaryNode>>& records = per_node[node];
    for (const int b : walls) {
      const rigid::RigidBody& body = bodies[b];
      for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
        if (!boxes[b][g].contains(position)) continue;
        const GeometryQuery query = QueryGeometry(body, g, position);
        if (query.signed_distance > 0.0) continue;
        records.emplace_back(query.signed_distance,
                             GridBoundaryNode{node, b, position, body.grid_boundary, query.normal.normalized(),
                                              body.geometries[g].friction_coefficient});
      }
    }
    std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  for (const auto& records : per_node) {
    for (const auto& record : records) nodes.push_back(record.second);
  }
  return nodes;
}

void ApplyGridBoundary(const std::vector<GridBoundaryNode>& nodes, const std::vector<rigid::RigidBody>& bodies,
                       mpm::SparseGrid& grid, std::vector<WallImpulse>& impulses) {
  for (const GridBoundaryNode& wall : nodes) {
    Vector3& velocity = grid.velocity[wall.node];
    const Vector3 before = velocity;
    const double normal_velocity = velocity.dot(wall.normal);
    switch (wall.kind) {
      case rigid::GridBoundary::kSticky:
        velocity.setZero();
        break;
      case rigid::GridBoundary::kSlip:
        velocity -= normal_velocity * wall.normal;
        break;
      case rigid::GridBoundary::kSeparating: {
        // The wall (first side, at rest, infinite mass) meets the node (second side).
        const double mass = grid.mass[wall.node];
        const CoulombCollisionResult collision = ResolveCoulombCollision(
            Vector3::Zero(), velocity, wall.normal, mass, wall.friction_coefficient, /*restitution=*/0.0);
        if (collision.approaching) velocity += collision.impulse_on_second / mass;
        break;
      }
      case rigid::GridBoundary::kContactBody:
        break;
    }
    const Vector3 impulse_on_wall = -grid.mass[wall.node] * (velocity - before);
    WallImpulse& total = impulses[wall.body];
    total.linear += impulse_on_wall;
    total.angular += (wall.position - bodies[wall.body].pose.position).cross(impulse_on_wall);
  }
}

int ProjectParticlesOutOfGridWalls(const std::vector<rigid::RigidBody>& bodies, mpm::Particles& particles,
                                   std::vector<WallImpulse>& impulses) {
  std::vector<int> walls;
  for (int b = 0; b < static_cast<int>(bodies.size()); ++b) {
    if (bodies[b].is_grid_boundary()) walls.push_back(b);
  }
  if (walls.empty()) return 0;
  const auto boxes = GeometryBoundingBoxes(bodies, 0.0);
  const int count = static_cast<int>(particles.size());
  const int body_count = static_cast<int>(bodies.size());
  int moved = 0;
  // Per-thread sums of the impulses, added in thread order.
  std::vector<std::vector<WallImpulse>> partial;
#pragma omp parallel reduction(+ : moved)
  {
#pragma omp single
    partial.assign(static_cast<std::size_t>(omp_get_num_threads()), std::vector<WallImpulse>(body_count));
    std::vector<WallImpulse>& mine = partial[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (int p = 0; p < count; ++p) {
      Vector3& position = particles.position[p];
      Vector3& velocity = particles.velocity[p];
      bool inside_any = false;
      for (const int b : walls) {
        const rigid::RigidBody& body = bodies[b];
        for (int g = 0; g < static_cast<int>(body.geometries.size()); ++g) {
          if (!boxes[b][g].contains(position)) continue;
          const GeometryQuery query = QueryGeometry(body, g, position);
          if (!(query.signed_distance < 0.0)) continue;
          inside_any = true;
          const Vector3 normal = query.normal.normalized();
          position -= query.signed_distance * normal;
          const Vector3 before = velocity;
          const double mass = particles.mass[p];
          switch (body.grid_boundary) {
            case rigid::GridBoundary::kSticky:
              velocity.setZero();
              break;
            case rigid::GridBoundary::kSlip:
              velocity -= std::min(0.0, velocity.dot(normal)) * normal;
              break;
            case rigid::GridBoundary::kSeparating: {
              const CoulombCollisionResult collision =
                  ResolveCoulombCollision(Vector3::Zero(), velocity, normal, mass,
                                          body.geometries[g].friction_coefficient, /*restitution=*/0.0);
              if (collision.approaching) velocity += collision.impulse_on_second / mass;
              break;
            }
            case rigid::GridBoundary::kContactBody:
              break;
          }
          const Vector3 impulse_on_wall = -mass * (velocity - before);
          mine[b].linear += impulse_on_wall;
          mine[b].angular += (position - body.pose.position).cross(impulse_on_wall);
        }
      }
      if (inside_any) ++moved;
    }
  }
  for (const std::vector<WallImpulse>& sums : partial) {
    for (int b = 0; b < body_count; ++b) {
      impulses[b].linear += sums[b].linear;
      impulses[b].angular += sums[b].angular;
    }
  }
  return moved;
}

std::uint8_t ImplicitConstraintMask(const GridBoundaryNode& node, const Vector3& predictor,
                                    const std::vector<rigid::RigidBody>& bodies) {
  if (node.kind == rigid::GridBoundary::kSticky) return 0b111;
  if (node.kind == rigid::GridBoundary::kContactBody) return 0;
  int axis = 0;
  node.normal.cwiseAbs().maxCoeff(&axis);
  if (std::abs(node.normal[axis]) < 1.0 - 1e-9) {
    throw InputError("body '" + bodies[node.body].name + "': sap and penalty need grid_boundary = sticky, or a " +
                     "slip/separating wall whose normal is a world axis");
  }
  if (node.kind == rigid::GridBoundary::kSeparating && predictor.dot(node.normal) >= 0.0) return 0;
  return static_cast<std::uint8_t>(1u << axis);
}

Vector3 SeparatingWallFriction(const GridBoundaryNode& node, const Vector3& velocity, double node_mass,
                               double normal_impulse) {
  if (node.kind != rigid::GridBoundary::kSeparating || normal_impulse <= 0.0) return Vector3::Zero();
  const Vector3 tangential = velocity - velocity.dot(node.normal) * node.normal;
  const double slip_speed = tangential.norm();
  if (slip_speed == 0.0) return Vector3::Zero();
  const double removed = std::min(slip_speed, node.friction_coefficient * normal_impulse / node_mass);
  return -(removed / slip_speed) * tangential;
}

}  // namespace contactlab::contact
