#pragma once
// cloth_folding (issue 21; seed 002's T-shirt folding, [yu2025async] Fig. 1, reduced as
// spec-sap-qn §4.3 E9 proposes: a rectangular cloth and kinematic grippers, no robot arms): a
// cloth of length L (x) and width W (y) lies flat on a table. Pins play the grippers:
// 1. two pads on the corners of the −x edge lift it, carry it over the cloth by L and lay it on
//    the +x edge: a fold in half across x (2 layers);
// 2. a bar on the −y edge (its vertices of both layers) carries it over by W: a second fold
//    (4 layers);
// 3. the same bar, then the same pads, carry the edges back: the cloth unfolds.
// Measures, every `layer_interval`: the mean number of cloth layers over the cloth (at each
// face particle, the triangles whose projection onto the table covers it, averaged), the
// face particles whose layer is inverted (r₃₃ < 0: cloth passing through cloth), and the
// covered area over the rest area. Summary: layers after each fold and at the end (2, 4, 1
// for a clean fold and unfold), the area ratio at the end, the most inverted faces.
#include "experiments/scenario.h"

namespace contactlab::experiments {

ScenarioInfo ClothFoldingInfo();

}  // namespace contactlab::experiments
