#pragma once
// The pair of force-driven panels shared by the grasping scenes: two boxes on prismatic
// joints along x, each pushed toward the origin of its parent by a constant force.
#include <vector>

#include "formulations/formulation.h"
#include "formulations/parameters.h"
#include "formulations/world.h"

namespace contactlab::experiments {

// panel_mass [kg], panel_thickness [m] (along x), panel_width [m] (along y and z).
std::vector<ParameterSpec> PanelParameterSpecs(double default_thickness, double default_width);

struct PanelPair {
  int left = -1;   // index in world.bodies of the panel on the −x side
  int right = -1;  // and of the one on the +x side
};

// The drive damping c [N s/m]: panel_damping, or for "auto" the critical damping of a panel
// on the elastic cube of Young's modulus E [Pa] and edge a [m] it squeezes; and its record.
double PanelDamping(const ParameterSet& parameters, double youngs_modulus, double cube_side);
UsedParameter PanelDampingUsed(double damping);

// Adds both panels as articulated links of `parent_link` (−1: the world), with their inner
// faces at x = ∓inner_face_offset of the parent frame, pushed inward by `squeeze_force` [N]
// and damped by `damping` [N s/m] (implicit joint damping).
PanelPair AddSqueezePanels(World& world, const ParameterSet& parameters, int parent_link, double inner_face_offset,
                           double squeeze_force, double friction_coefficient, double damping);

}  // namespace contactlab::experiments
