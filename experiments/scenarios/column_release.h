#pragma once
// What the two column-release scenes of issue 19 share (dam_break, column_collapse): a
// quasi-2D channel, a rectangular column of material against its back wall, and the front
// of the material as it spreads along the channel.
//
// The channel runs along +x: its floor's top face is z = 0, the back wall's face x = 0, the
// end wall's face x = L, and two side walls with faces y = 0 and y = W hold the material in a
// slab a few grid cells thick, so that it flows in the x–z plane only (the planar geometry of
// the experiments the scenes compare with). Every face lies on a grid node plane, as grid
// walls need (formulations/contact/grid_boundary.h); the scenes pick the floor's model
// ("table_model") apart from the walls' ("wall_model"), since a quasi-2D slab needs
// frictionless side walls whatever the floor is.
#include <vector>

#include "experiments/scenarios/scene_tools.h"
#include "formulations/formulation.h"
#include "formulations/parameters.h"

namespace contactlab::experiments {

// The key "wall_model": how the back, end and side walls meet the material (the choices of
// table_model, default slip).
ParameterSpec WallModelSpec();
// The key "slab_cells": the channel's thickness W in grid cells.
ParameterSpec SlabCellsSpec();

struct Channel {
  double length = 0.0;  // L, the end wall's face [m]
  double width = 0.0;   // W, the slab's thickness along y [m]
};

// Adds the channel's five static bodies (floor, wall_back, wall_end, wall_-y, wall_+y) to
// `world`: L is `min_length` rounded up to a whole number of grid cells, W is slab_cells
// cells, the walls `wall_height` high. The floor takes table_model and friction `floor_mu`,
// the walls wall_model and no friction (a smooth channel). Every body is three grid cells
// thick, more than the quadratic B-spline stencil reaches into it. world.grid_spacing must be
// set.
Channel AddChannel(const ParameterSet& parameters, double min_length, double wall_height, double floor_mu,
                   World& world);

// A column of `width` (along x) × W × `height` against the back wall, standing on the floor,
// sampled by SampleBoxLattice; `spacing` receives the lattice spacing (x, y, z).
ParticleRange AddColumn(const ParameterSet& parameters, const Channel& channel, double width, double height,
                        const mpm::Material& material, int material_index, World& world, mpm::Vector3* spacing);

// The front of the material along +x [m]: scanning bins of one particle spacing `spacing`
// from the back wall, the far edge of the last occupied bin before `gap_bins` empty bins in
// a row. Particles beyond such a gap have left the body of the flow (a splash, a grain shed
// at the tip) and do not count; a thinning tongue still attached does.
double ConnectedFront(const mpm::Particles& particles, ParticleRange range, double spacing, int gap_bins);

// The largest x of the range's particles plus half a spacing: the material's face beyond
// the farthest particle centre [m].
double FarthestParticle(const mpm::Particles& particles, ParticleRange range, double spacing);

// Linear interpolation of y(t) at `t`; NaN outside [t.front(), t.back()].
double Interpolate(const std::vector<double>& times, const std::vector<double>& values, double t);

}  // namespace contactlab::experiments
