// rlkernels/physics/collision.hpp
// Narrow-phase collision over the model's fixed list of candidate pairs (MuJoCo's mj_collision for
// planes, spheres and capsules). STUB: the interface only; the functions are being written.
#pragma once

#include "../core/config.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"

namespace rlkernels {
namespace physics {

/// @brief Finds the contacts of the model's candidate pairs (d.ncon, d.con[]), from the geom
/// frames of the position stage (d.geom_xpos, d.geom_xmat). Contacts are kept while
/// dist < includemargin, in pair order, each with MuJoCo's mixed parameters.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void collide(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  d.ncon = 0;
}

}  // namespace physics
}  // namespace rlkernels
