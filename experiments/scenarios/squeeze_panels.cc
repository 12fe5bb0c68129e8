#include "experiments/scenarios/squeeze_panels.h"

#include <cmath>
#include <optional>

namespace contactlab::experiments {

std::vector<ParameterSpec> PanelParameterSpecs(double default_thickness, double default_width) {
  return {
      {"panel_mass", 0.1, "kg", "Mass of each panel (the steady state does not depend on it).", Positive()},
      {"panel_thickness", default_thickness, "m", "Panel size along the squeeze direction (spec E5/E6).", Positive()},
      {"panel_width", default_width, "m", "Panel size along y and z (spec E5/E6).", Positive()},
      AutoParameter("panel_damping", 0.0, "N s/m",
                    "Viscous damping c of each panel's drive, force -c v along its slider (the papers' panels are "
                    "robot grippers on damped drives; they state neither mass nor drive). auto: critical damping "
                    "2 sqrt(k m) of the panel mass m on the elastic cube it squeezes, k = 2 E a (half a cube of "
                    "edge a and Young's modulus E between the panel and the cube's mid-plane); without damping the "
                    "undamped cube and panel bounce apart after the first impact.",
                    NonNegative()),
  };
}

double PanelDamping(const ParameterSet& parameters, double youngs_modulus, double cube_side) {
  if (const std::optional<double> given = parameters.GetOptionalDouble("panel_damping")) return *given;
  const double stiffness = 2.0 * youngs_modulus * cube_side;
  return 2.0 * std::sqrt(stiffness * parameters.GetDouble("panel_mass"));
}

UsedParameter PanelDampingUsed(double damping) {
  return UsedParameter{"panel_damping",
                       damping,
                       damping,
                       "critical damping 2 sqrt(k m), k = 2 E a of the squeezed cube, m = panel_mass",
                       {}};
}

PanelPair AddSqueezePanels(World& world, const ParameterSet& parameters, int parent_link, double inner_face_offset,
                           double squeeze_force, double friction_coefficient, double damping) {
  const double width = parameters.GetDouble("panel_width");
  const rigid::Vector3 half_extents = 0.5 * rigid::Vector3(parameters.GetDouble("panel_thickness"), width, width);
  const double density = parameters.GetDouble("panel_mass") / (8.0 * half_extents.prod());
  PanelPair panels;
  for (const int side_sign : {-1, +1}) {
    rigid::JointSpec joint;
    joint.name = side_sign < 0 ? "left_slider" : "right_slider";
    joint.type = rigid::JointType::kPrismatic;
    joint.parent = parent_link;
    joint.frame_on_parent.position = rigid::Vector3(side_sign * (inner_face_offset + half_extents.x()), 0.0, 0.0);
    joint.axis = rigid::Vector3::UnitX();
    joint.constant_effort = -side_sign * squeeze_force;  // toward the parent's origin
    if (damping > 0.0) {
      joint.pd.enabled = true;
      joint.pd.stiffness = 0.0;
      joint.pd.damping = damping;
      joint.pd.target = rigid::TimeFunction::Constant(0.0);
    }
    const int body = AddArticulatedBody(
        world, side_sign < 0 ? "left_panel" : "right_panel",
        {rigid::Geometry{rigid::Shape::Box(half_extents), rigid::Pose{}, friction_coefficient}}, density, joint);
    (side_sign < 0 ? panels.left : panels.right) = body;
  }
  return panels;
}

}  // namespace contactlab::experiments
