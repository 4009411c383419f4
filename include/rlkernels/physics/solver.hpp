// rlkernels/physics/solver.hpp
// MuJoCo's primal Newton solver for the soft constraints, with its exact line search and warm start
// (mj_fwdConstraint + mj_solNewton). STUB: interface only.
#pragma once

#include "../core/config.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"

namespace rlkernels {
namespace physics {

/// @brief Solves for the constrained acceleration (MuJoCo's mj_fwdConstraint): chooses the warm
/// start (qacc_warmstart or qacc_smooth, whichever costs less), runs Newton with the model's
/// iterations, tolerance, ls_iterations and ls_tolerance, and writes d.qacc, d.efc_force,
/// d.efc_state, d.qfrc_constraint and d.solver_niter. Without rows: qacc = qacc_smooth.
/// Needs qM and its factor qLD, qfrc_smooth, qacc_smooth and the rows (make_constraint,
/// reference_constraint).
template <class Scalar, class Dims>
RLK_HOST_DEVICE void solve_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  for (int i = 0; i < Dims::nv; ++i) {
    d.qacc[i] = d.qacc_smooth[i];
    d.qfrc_constraint[i] = Scalar(0);
  }
  d.solver_niter = 0;
}

}  // namespace physics
}  // namespace rlkernels
