// rlkernels/physics/forward.hpp
// MuJoCo's mj_forward and mj_step for the supported subset: the position, velocity and acceleration
// stages, the constraint solve, and the Euler (with implicit damping) and RK4 integrators.
// STUB: the interface only; being written.
#pragma once

#include "../core/config.hpp"
#include "collision.hpp"
#include "constraint.hpp"
#include "data.hpp"
#include "model.hpp"
#include "solver.hpp"

namespace rlkernels {
namespace physics {

/// @brief Everything mj_forward computes (positions, velocities, forces, contacts, constraint
/// solve) from d.qpos, d.qvel, d.ctrl and d.qacc_warmstart, into d's other fields.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void forward(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  (void)d;
}

/// @brief One mj_step: checks qpos/qvel, forward, checks qacc, integrates with the model's
/// integrator (d.time advances by m.timestep; qacc_warmstart becomes the new qacc). On a bad state
/// it sets d.warning (warning_bits) and, as MuJoCo does, leaves the state as documented there.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void step(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  d.warning = warning_none;
}

}  // namespace physics
}  // namespace rlkernels
