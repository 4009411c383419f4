// rlkernels/envs/mujoco/full_capacity.hpp
// full_capacity_t<Env>: a bundled MuJoCo env with room for every contact its candidate pairs can
// make and every constraint row, so that no step overflows (physics::dims_full_capacity). The
// bundled Hopper, Walker2d, HalfCheetah, Ant, Humanoid and HumanoidStandup come with capacities
// measured for Gymnasium's default termination; with terminate_when_unhealthy=False, or a policy
// that makes the robot lie on the floor, their steps can overflow them (counted, the episode
// truncated). The other bundled MuJoCo envs have full capacities already.
#pragma once

#include "../../physics/model.hpp"
#include "ant.hpp"
#include "half_cheetah.hpp"
#include "hopper.hpp"
#include "humanoid.hpp"
#include "humanoid_standup.hpp"
#include "walker2d.hpp"

namespace rlkernels {

/// @brief `type`: Env with the full contact and row capacities of its model; Env itself for the
/// envs whose capacities are full already and for envs without a physics workspace.
///
///     rlkernels::vec_env<rlkernels::full_capacity_t<rlkernels::humanoid<float>>, rlkernels::openmp_backend>
///         envs(rlkernels::openmp, 64, seed);  // 190 contacts and 311 rows per env instead of 16 and 36
///
/// The results are the same bits as with the smaller capacities wherever those did not overflow;
/// the cost is memory (and, for PGS models such as the Humanoids, the solver's O(rows^2) stack
/// matrix: 388 KB per env in double for 311 rows, too much for a GPU thread's stack).
template <class Env>
struct full_capacity {
  using type = Env;  ///< the env itself
};
/// @cond specialisations
template <class S, bool E, class D>
struct full_capacity<hopper<S, E, D>> {
  using type = hopper<S, E, physics::dims_full_capacity<D>>;
};
template <class S, bool E, class D>
struct full_capacity<walker2d<S, E, D>> {
  using type = walker2d<S, E, physics::dims_full_capacity<D>>;
};
template <class S, bool E, class D>
struct full_capacity<half_cheetah<S, E, D>> {
  using type = half_cheetah<S, E, physics::dims_full_capacity<D>>;
};
template <class S, bool E, bool C, class D>
struct full_capacity<ant<S, E, C, D>> {
  using type = ant<S, E, C, physics::dims_full_capacity<D>>;
};
template <class S, bool E, bool A, bool B, bool C, bool F, class D>
struct full_capacity<humanoid<S, E, A, B, C, F, D>> {
  using type = humanoid<S, E, A, B, C, F, physics::dims_full_capacity<D>>;
};
template <class S, bool E, bool A, bool B, bool C, bool F, class D>
struct full_capacity<humanoid_standup<S, E, A, B, C, F, D>> {
  using type = humanoid_standup<S, E, A, B, C, F, physics::dims_full_capacity<D>>;
};
/// @endcond

/// @brief Env with the full contact and row capacities of its model (see full_capacity).
template <class Env>
using full_capacity_t = typename full_capacity<Env>::type;

}  // namespace rlkernels
