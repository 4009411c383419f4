// rlkernels/physics/constraint.hpp
// Constraint rows (joint limits, then contacts with the pyramidal friction cone) and MuJoCo's soft
// constraint parameters (solref, solimp, diagApprox from invweight0). STUB: interface only.
#pragma once

#include "../core/config.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"

namespace rlkernels {
namespace physics {

/// @brief Builds the constraint rows of the position stage (MuJoCo's mj_makeConstraint and the
/// position-dependent part of its impedance): d.nl, d.nefc, efc_type, efc_id, efc_J, efc_pos,
/// efc_margin, efc_diagApprox, efc_KBIP, efc_R, efc_D. Needs the kinematics (cdof, subtree_com,
/// xanchor) and the contacts (collide). Sets warning_efc_full and makes no rows if they do not fit.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void make_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  d.nl = 0;
  d.nefc = 0;
}

/// @brief The velocity-stage part (MuJoCo's mj_referenceConstraint): efc_vel = J qvel and the
/// reference acceleration efc_aref.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void reference_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  (void)d;
}

}  // namespace physics
}  // namespace rlkernels
