#pragma once
// box_bagging (issue 21; seed 002's box bagging, [yu2025async] §VI-C, reduced as spec-sap-qn §4.3
// E7 proposes, without the robot): a 0.42 m square cloth (30 × 30 vertices, 1,682 triangles:
// 2,582 particles, as seed 002's Table I) is held at its four corners by pins at 0.3 m. The pins
// first draw the corners in so that the cloth sags into a cradle, two 8 cm rigid boxes drop
// into it, the pins then move the corners inward to wrap the boxes, and at release_time the
// two corners on the +x side let go: the boxes fall out onto the floor below.
//
// Measures (per step and in the summary): each box's height and whether it lies in the cloth
// (its centre above the lowest cloth vertex and inside the pins' square), the deepest
// cloth particle inside a box against h/2, the face particles whose layer is inverted
// (r₃₃ < 0: cloth passing through cloth), contacts, and whether both boxes were held until the
// release and lay on the floor at the end.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo BoxBaggingInfo();

// laundry (issue 21; seed 002's laundry, [yu2025async] §VI-D, reduced as spec-sap-qn E8 proposes):
// the same bag, with a second cloth (0.3 m square) in place of the boxes, held flat above the
// bag by one corner pin and dropped into it after the sag; the bag wraps it and two corners
// release. Measures: the laundry's centre of mass in the bag until the release and near the
// floor at the end, the inverted faces of both cloths (cloth through cloth), contacts.
ScenarioInfo LaundryInfo();

}  // namespace contactlab::experiments
