#pragma once
// Contact frames and the one sign convention of the project (spec-sap-qn §0): the frame's
// z axis is the outward unit normal n̂ of the rigid geometry, the relative contact velocity
// is that of the MPM material minus that of the rigid point, v_c = R_CW (v_p − v_B(x_p)),
// and v_n > 0 means separation. An impulse γ (contact frame) acts on the MPM side as
// R_WC γ and on the rigid body as −R_WC γ at the contact point; γ_n ≥ 0 is repulsive.
#include "mpm/types.h"

namespace contactlab::contact {

using mpm::Matrix3;
using mpm::Vector3;

// R_WC with columns (t̂₁, t̂₂, n̂), right-handed: t̂₁ is orthogonal to n̂ and to the world
// axis least aligned with n̂, t̂₂ = n̂ × t̂₁. Friction is isotropic, so any such frame works.
Matrix3 MakeContactFrame(const Vector3& unit_normal);

}  // namespace contactlab::contact
