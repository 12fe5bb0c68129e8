#include "formulations/formulation.h"

#include <algorithm>

namespace contactlab {

std::vector<BodyWrench> ZeroWrenches(const World& world) {
  std::vector<BodyWrench> wrenches(world.bodies.size());
  for (std::size_t b = 0; b < world.bodies.size(); ++b) wrenches[b].moment_point = world.bodies[b].pose.position;
  return wrenches;
}

void UsedParameterTracker::Observe(double value) {
  if (!observed_) {
    used_.value = used_.smallest = value;
    observed_ = true;
    return;
  }
  used_.value = std::max(used_.value, value);
  used_.smallest = std::min(used_.smallest, value);
}

}  // namespace contactlab
