#include "experiments/scenarios/squeeze_panels.h"

namespace contactlab::experiments {

std::vector<ParameterSpec> PanelParameterSpecs(double default_thickness, double default_width) {
  return {
      {"panel_mass", 0.1, "kg", "Mass of each panel (the steady state does not depend on it).", Positive()},
      {"panel_thickness", default_thickness, "m", "Panel size along the squeeze direction (spec E5/E6).",
       Positive()},
      {"panel_width", default_width, "m", "Panel size along y and z (spec E5/E6).", Positive()},
  };
}

PanelPair AddSqueezePanels(World& world, const ParameterSet& parameters, int parent_link,
                           double inner_face_offset, double squeeze_force, double friction_coefficient) {
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
    const int body = AddArticulatedBody(
        world, side_sign < 0 ? "left_panel" : "right_panel",
        {rigid::Geometry{rigid::Shape::Box(half_extents), rigid::Pose{}, friction_coefficient}}, density, joint);
    (side_sign < 0 ? panels.left : panels.right) = body;
  }
  return panels;
}

}  // namespace contactlab::experiments
