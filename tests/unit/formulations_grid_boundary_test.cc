// Static supports as grid boundary conditions (contact/grid_boundary.h): the node projection
// and the particle projection against hand-computed values, the implicit formulations' constraint masks, and under
// every registered formulation an elastic cube resting and sliding on a table modelled as a sticky, slip or separating
// wall: the table carries the cube's weight, no particle falls through, and the tangential motion follows the wall's
// kind (kept, stopped, or Coulomb-decelerated).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "formulations/contact/grid_boundary.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"
#include "test_worlds.h"

namespace contactlab {
namespace {

using mpm::Vector3;
using rigid::GridBoundary;

rigid::RigidBody Table(GridBoundary kind, double friction) {
  rigid::Pose pose;
  pose.position = Vector3(0.0, 0.0, -0.1);  // top face at z = 0
  rigid::RigidBody table = rigid::MakeStaticBody(
      "table", {rigid::Geometry{rigid::Shape::Box(Vector3(1.0, 1.0, 0.1)), rigid::Pose{}, friction}}, pose);
  table.grid_boundary = kind;
  return table;
}

// A grid with one node of mass 2 kg at the origin (inside the table, on its top face).
mpm::SparseGrid OneNodeGrid(const Vector3& velocity) {
  mpm::SparseGrid grid(0.1);
  grid.Rebuild({Vector3(0.0, 0.0, 0.0)});
  const int node = grid.FindNode(mpm::NodeCoordinate(0, 0, 0));
  grid.mass[node] = 2.0;
  grid.velocity[node] = velocity;
  return grid;
}

TEST(GridBoundary, NodeProjectionPerKind) {
  const Vector3 approaching(0.3, 0.0, -1.0);  // 1 m/s into the table, 0.3 m/s sliding
  struct Case {
    GridBoundary kind;
    double friction;
    Vector3 expected;
  };
  // Separating, μ 0.1: the normal impulse 2 kg × 1 m/s allows 0.1 × 1 = 0.1 m/s of slip
  // change; μ 0.5 stops the slip (0.5 m/s > 0.3 m/s).
  for (const Case& c :
       {Case{GridBoundary::kSticky, 0.5, Vector3::Zero()}, Case{GridBoundary::kSlip, 0.5, Vector3(0.3, 0.0, 0.0)},
        Case{GridBoundary::kSeparating, 0.1, Vector3(0.2, 0.0, 0.0)},
        Case{GridBoundary::kSeparating, 0.5, Vector3::Zero()}}) {
    const std::vector<rigid::RigidBody> bodies = {Table(c.kind, c.friction)};
    mpm::SparseGrid grid = OneNodeGrid(approaching);
    const std::vector<contact::GridBoundaryNode> nodes = contact::FindGridBoundaryNodes(grid, bodies);
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_NEAR((nodes[0].normal - Vector3::UnitZ()).norm(), 0.0, 1e-12);
    std::vector<contact::WallImpulse> impulses(1);
    contact::ApplyGridBoundary(nodes, bodies, grid, impulses);
    const Vector3& velocity = grid.velocity[nodes[0].node];
    EXPECT_NEAR((velocity - c.expected).norm(), 0.0, 1e-12) << velocity.transpose();
    // The wall receives what the node lost.
    EXPECT_NEAR((impulses[0].linear - 2.0 * (approaching - c.expected)).norm(), 0.0, 1e-12);
  }
  // A node leaving a separating or slip-free wall keeps its velocity under "separating".
  const std::vector<rigid::RigidBody> bodies = {Table(GridBoundary::kSeparating, 0.5)};
  mpm::SparseGrid grid = OneNodeGrid(Vector3(0.3, 0.0, 1.0));
  std::vector<contact::WallImpulse> impulses(1);
  contact::ApplyGridBoundary(contact::FindGridBoundaryNodes(grid, bodies), bodies, grid, impulses);
  EXPECT_EQ(grid.velocity[grid.FindNode(mpm::NodeCoordinate(0, 0, 0))], Vector3(0.3, 0.0, 1.0));
  EXPECT_EQ(impulses[0].linear, Vector3::Zero());
}

// A node on the concave edge of a container (the floor's top face and a side wall's inner
// face meet there) lies in both walls: it is held along both normals, and each wall receives
// the momentum its own normal removed. With one normal per node the liquid of
// hydrostatic_column leaked through such edges.
TEST(GridBoundary, NodeOnAConcaveEdgeIsHeldByBothWalls) {
  rigid::RigidBody floor = Table(GridBoundary::kSlip, 0.0);
  rigid::Pose wall_pose;
  wall_pose.position = Vector3(0.1, 0.0, 0.5);  // inner face at x = 0
  rigid::RigidBody wall = rigid::MakeStaticBody(
      "wall", {rigid::Geometry{rigid::Shape::Box(Vector3(0.1, 1.0, 0.5)), rigid::Pose{}, 0.0}}, wall_pose);
  wall.grid_boundary = GridBoundary::kSlip;
  const std::vector<rigid::RigidBody> bodies = {floor, wall};
  const Vector3 velocity(0.4, 0.3, -1.0);  // into both walls, sliding along y
  mpm::SparseGrid grid = OneNodeGrid(velocity);
  const std::vector<contact::GridBoundaryNode> nodes = contact::FindGridBoundaryNodes(grid, bodies);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, nodes[1].node);
  std::vector<contact::WallImpulse> impulses(2);
  contact::ApplyGridBoundary(nodes, bodies, grid, impulses);
  EXPECT_NEAR((grid.velocity[nodes[0].node] - Vector3(0.0, 0.3, 0.0)).norm(), 0.0, 1e-12);
  EXPECT_NEAR((impulses[0].linear - Vector3(0.0, 0.0, -2.0)).norm(), 0.0, 1e-12);  // floor: m v_z
  EXPECT_NEAR((impulses[1].linear - Vector3(0.8, 0.0, 0.0)).norm(), 0.0, 1e-12);   // wall: m v_x
  // The implicit masks of the two records together fix x and z.
  std::uint8_t mask = 0;
  for (const contact::GridBoundaryNode& node : nodes) mask |= contact::ImplicitConstraintMask(node, velocity, bodies);
  EXPECT_EQ(mask, 0b101);
}

// A particle that drifted into a wall goes back onto its surface and meets the wall's
// condition as a node would; the wall receives what the particle lost, and a particle
// outside every wall is left alone. In a corner it leaves both walls.
TEST(GridBoundary, ParticlesInsideAWallGoBackToItsSurface) {
  const Vector3 approaching(0.3, 0.0, -1.0);
  struct Case {
    GridBoundary kind;
    double friction;
    Vector3 expected;
  };
  for (const Case& c :
       {Case{GridBoundary::kSticky, 0.5, Vector3::Zero()}, Case{GridBoundary::kSlip, 0.5, Vector3(0.3, 0.0, 0.0)},
        Case{GridBoundary::kSeparating, 0.1, Vector3(0.2, 0.0, 0.0)}}) {
    const std::vector<rigid::RigidBody> bodies = {Table(c.kind, c.friction)};
    mpm::Particles particles;
    particles.Add(Vector3(0.2, 0.1, -0.004), approaching, 2.0, 1e-3, 0);  // 4 mm deep
    particles.Add(Vector3(0.2, 0.1, 0.003), approaching, 2.0, 1e-3, 0);   // above the table
    std::vector<contact::WallImpulse> impulses(1);
    EXPECT_EQ(contact::ProjectParticlesOutOfGridWalls(bodies, particles, impulses), 1);
    EXPECT_NEAR((particles.position[0] - Vector3(0.2, 0.1, 0.0)).norm(), 0.0, 1e-12);
    EXPECT_NEAR((particles.velocity[0] - c.expected).norm(), 0.0, 1e-12) << particles.velocity[0].transpose();
    EXPECT_NEAR((impulses[0].linear - 2.0 * (approaching - c.expected)).norm(), 0.0, 1e-12);
    // Its moment about the table's centre (0, 0, −0.1), from the point on the surface.
    EXPECT_NEAR((impulses[0].angular - Vector3(0.2, 0.1, 0.1).cross(impulses[0].linear)).norm(), 0.0, 1e-12);
    EXPECT_EQ(particles.position[1], Vector3(0.2, 0.1, 0.003));
    EXPECT_EQ(particles.velocity[1], approaching);
  }
  // A slip wall keeps a particle that already leaves it as it is, apart from its position.
  {
    const std::vector<rigid::RigidBody> bodies = {Table(GridBoundary::kSlip, 0.0)};
    mpm::Particles particles;
    particles.Add(Vector3(0.0, 0.0, -0.002), Vector3(0.1, 0.0, 0.5), 1.0, 1e-3, 0);
    std::vector<contact::WallImpulse> impulses(1);
    EXPECT_EQ(contact::ProjectParticlesOutOfGridWalls(bodies, particles, impulses), 1);
    EXPECT_EQ(particles.velocity[0], Vector3(0.1, 0.0, 0.5));
    EXPECT_EQ(impulses[0].linear, Vector3::Zero());
  }
  // A corner: inside the floor and a side wall (inner face at x = 0) that reaches into the
  // floor, as a container's walls do.
  rigid::RigidBody floor = Table(GridBoundary::kSlip, 0.0);
  rigid::Pose wall_pose;
  wall_pose.position = Vector3(0.1, 0.0, 0.4);
  rigid::RigidBody wall = rigid::MakeStaticBody(
      "wall", {rigid::Geometry{rigid::Shape::Box(Vector3(0.1, 1.0, 0.5)), rigid::Pose{}, 0.0}}, wall_pose);
  wall.grid_boundary = GridBoundary::kSlip;
  const std::vector<rigid::RigidBody> bodies = {floor, wall};
  mpm::Particles particles;
  particles.Add(Vector3(0.003, 0.0, -0.002), Vector3(0.4, 0.3, -1.0), 2.0, 1e-3, 0);
  std::vector<contact::WallImpulse> impulses(2);
  EXPECT_EQ(contact::ProjectParticlesOutOfGridWalls(bodies, particles, impulses), 1);
  EXPECT_NEAR((particles.position[0] - Vector3(0.0, 0.0, 0.0)).norm(), 0.0, 1e-12);
  EXPECT_NEAR((particles.velocity[0] - Vector3(0.0, 0.3, 0.0)).norm(), 0.0, 1e-12);
  EXPECT_NEAR((impulses[0].linear + impulses[1].linear - Vector3(0.8, 0.0, -2.0)).norm(), 0.0, 1e-12);
}

TEST(GridBoundary, ImplicitMasksAndBadInput) {
  const std::vector<rigid::RigidBody> bodies = {Table(GridBoundary::kSeparating, 0.5)};
  contact::GridBoundaryNode node{0, 0, Vector3::Zero(), GridBoundary::kSeparating, Vector3::UnitZ(), 0.5};
  EXPECT_EQ(contact::ImplicitConstraintMask(node, Vector3(0.0, 0.0, -0.1), bodies), 0b100);
  EXPECT_EQ(contact::ImplicitConstraintMask(node, Vector3(0.0, 0.0, 0.1), bodies), 0);  // leaving: free
  node.kind = GridBoundary::kSlip;
  EXPECT_EQ(contact::ImplicitConstraintMask(node, Vector3(0.0, 0.0, 0.1), bodies), 0b100);
  node.kind = GridBoundary::kSticky;
  EXPECT_EQ(contact::ImplicitConstraintMask(node, Vector3::Zero(), bodies), 0b111);
  // A tilted slip wall cannot be a constraint on world components.
  node.kind = GridBoundary::kSlip;
  node.normal = Vector3(0.6, 0.0, 0.8);
  EXPECT_THROW(contact::ImplicitConstraintMask(node, Vector3::Zero(), bodies), InputError);
  // Only static bodies can be grid walls.
  std::vector<rigid::RigidBody> moving = {Table(GridBoundary::kSticky, 0.5)};
  moving[0].motion = rigid::BodyMotion::kKinematic;
  const mpm::SparseGrid grid = OneNodeGrid(Vector3::Zero());
  try {
    contact::FindGridBoundaryNodes(grid, moving);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("'table'"), std::string::npos) << error.what();
  }
}

ParameterSet Defaults(const std::string& formulation) {
  ParameterSet parameters;
  parameters.Declare(FindFormulation(formulation).parameters);
  parameters.Validate();
  return parameters;
}

// A 0.1 m elastic cube (h 0.025, 8 particles per cell) whose lowest particles sit s/2 above
// the table top, moving at `velocity`.
World CubeOnTable(GridBoundary kind, double friction, const Vector3& velocity) {
  World world;
  world.grid_spacing = 0.025;
  test_worlds::AddCube(world, Vector3(-0.05, -0.05, 0.0), 0.1, 1000.0, 1e5, velocity);
  world.bodies.push_back(Table(kind, friction));
  return world;
}

double MeanPositionX(const World& world) {
  double moment = 0.0, mass = 0.0;
  for (std::size_t p = 0; p < world.particles.size(); ++p) {
    moment += world.particles.mass[p] * world.particles.position[p].x();
    mass += world.particles.mass[p];
  }
  return moment / mass;
}

class EveryFormulationAndWall : public ::testing::TestWithParam<std::tuple<std::string, GridBoundary>> {};

TEST_P(EveryFormulationAndWall, TableCarriesTheRestingCube) {
  const auto& [formulation_name, kind] = GetParam();
  World world = CubeOnTable(kind, 0.5, Vector3::Zero());
  const double mass = mpm::TotalMass(world.particles);
  std::unique_ptr<Formulation> formulation = MakeFormulation({formulation_name, Defaults(formulation_name)});
  const double dt = 2e-3;
  const int steps = 60;
  double table_impulse = 0.0;  // ∫ F_z dt the table received [N s]
  for (int step = 0; step < steps; ++step) {
    const StepReport report = formulation->Step(world, dt);
    table_impulse += report.contact_wrench[0].force.z() * dt;
    EXPECT_GT(report.grid_boundary_nodes, 0);
    EXPECT_EQ(report.contacts, 0) << "particles never register against a grid wall";
    // No particle falls through: the wall holds the nodes at z = 0, the lowest particles
    // (s/2 = h/4 above it at rest) sink by the cube's elastic settling only.
    ASSERT_GT(test_worlds::LowestParticle(world), 0.0) << "step " << step;
  }
  // Momentum balance: what the table received is what it gave the cube, −(Δp_z + m g T),
  // to the solvers' tolerance (the wall impulses are the momentum the grid projection
  // removed, or the implicit constraints' reactions ∇E on the fixed components).
  const double momentum = mpm::LinearMomentum(world.particles).z();
  const double gravity_impulse = mass * 9.81 * steps * dt;
  EXPECT_NEAR(table_impulse, -(momentum + gravity_impulse), 1e-6 * gravity_impulse) << formulation_name;
  // And the cube rests: its momentum is a small part of the weight's impulse, so the table
  // carried the weight on average.
  EXPECT_LT(std::abs(momentum), 0.1 * gravity_impulse) << formulation_name;
}

TEST_P(EveryFormulationAndWall, SlidingCubeFollowsTheWallKind) {
  const auto& [formulation_name, kind] = GetParam();
  // 0.5 m/s along x on a table of μ 0.2 for T = 0.1 s. Coulomb friction decelerates the cube
  // by μ g: it travels v T − μ g T²/2 = 40.2 mm. A slip wall lets it travel v T = 50 mm. A
  // sticky one holds the bottom layer and the cube only rocks, its top by the shear
  // deflection v/ω ≈ 5 mm (ω = 2π c_s/(4 L), c_s = √(G/ρ) ≈ 6.2 m/s), its centre of mass by
  // less: bounded here by 2.5 mm, 5% of v T.
  const double mu = 0.2, speed = 0.5, duration = 0.1;
  World world = CubeOnTable(kind, mu, Vector3(speed, 0.0, 0.0));
  const double start = MeanPositionX(world);
  std::unique_ptr<Formulation> formulation = MakeFormulation({formulation_name, Defaults(formulation_name)});
  const double dt = 2e-3;
  for (int step = 0; step < static_cast<int>(std::lround(duration / dt)); ++step) formulation->Step(world, dt);
  const double travel = MeanPositionX(world) - start;
  const double friction_loss = 0.5 * mu * 9.81 * duration * duration;
  switch (kind) {
    case GridBoundary::kSlip:
      EXPECT_NEAR(travel, speed * duration, 0.02 * speed * duration) << formulation_name;
      break;
    case GridBoundary::kSeparating:
      EXPECT_NEAR(travel, speed * duration - friction_loss, 0.05 * friction_loss) << formulation_name;
      break;
    default:
      EXPECT_LT(std::abs(travel), 0.05 * speed * duration) << formulation_name;
  }
}

std::vector<std::tuple<std::string, GridBoundary>> Cases() {
  std::vector<std::tuple<std::string, GridBoundary>> cases;
  for (const FormulationInfo& info : RegisteredFormulations()) {
    for (const GridBoundary kind : {GridBoundary::kSticky, GridBoundary::kSlip, GridBoundary::kSeparating}) {
      cases.emplace_back(info.name, kind);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GridBoundary, EveryFormulationAndWall, ::testing::ValuesIn(Cases()), [](const auto& info) {
  return std::get<0>(info.param) + "_" + ChoiceName(std::get<1>(info.param), contact::GridBoundaryNames());
});

}  // namespace
}  // namespace contactlab
