// rlkernels/envs/mujoco/mujoco_env.hpp
// The pieces every MuJoCo env is made of, after Gymnasium's MujocoEnv (task_env.hpp's mujoco_env
// assembles them): the State (qpos, qvel, the solver's warm start and a count of steps the engine
// could not compute), do_simulation over frame_skip physics steps, reset noise, Gymnasium's sums,
// and unstable_steps(envs), which reads that count off a vec_env.
#pragma once

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../../core/reduce.hpp"
#include "../../core/random.hpp"
#include "../../physics/data.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../failed_steps.hpp"
#include "../vec_env.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#ifndef RLK_PHYSICS_POISON_WORKSPACE
/// Test mode, 0 (off) unless defined: see detail::poison_workspace.
#define RLK_PHYSICS_POISON_WORKSPACE 0
#endif

namespace rlkernels {

/// @brief The state of one MuJoCo env: what persists between physics steps, in MuJoCo's order
/// and layout (qpos[nq], qvel[nv] as mjData's, so a state can be copied to or from MuJoCo
/// directly), plus a counter of failed steps.
///
/// A step the engine flags (physics::data::warning: a qpos, qvel or qacc that is not finite or
/// above 1e10 in magnitude, an integrated state that is, or more contacts or constraint rows than
/// the model's slots; not warning_bad_ctrl, on which MuJoCo zeroes the controls and goes on) is
/// never written into the batch: the env keeps the state it had before that step, ends the episode
/// as truncated (step_result::truncated, never terminated: the robot reached no terminal state, so
/// a learner bootstraps from the kept state; the final observation is the kept state's, the
/// reward -control cost), and adds one to `capacity_overflows` if the step needed more contacts or
/// rows than the model's capacities (physics::dims_with_capacity), else to `unstable_steps`.
/// MuJoCo itself resets the data to qpos0 on such a step (mj_checkPos/Vel/Acc, unless autoreset is
/// disabled) and Gymnasium carries on from there; an env here cannot honestly continue, so it ends
/// the episode.
/// `unstable_steps` survives the automatic reset of vec_env (the envs' reset() leaves it as it
/// is), so it counts such steps since the vec_env was constructed or reset(): read the batch's
/// totals with unstable_steps(envs) and capacity_overflows(envs).
/// @tparam Scalar float or double
/// @tparam Dims the model's sizes (physics::model)
template <class Scalar, class Dims>
struct mujoco_state {
  Scalar qpos[Dims::nq];            ///< joint positions (mjData::qpos)
  Scalar qvel[Dims::nv];            ///< joint velocities (mjData::qvel)
  Scalar qacc_warmstart[Dims::nv];  ///< the last step's acceleration, the solver's warm start (0 after a reset, as mj_resetData)
  std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates at 2^32 - 1)
  std::uint32_t capacity_overflows; ///< env steps that needed more contacts or constraint rows than the capacities (saturates)
};

namespace detail {

/// np.sum of n values as NumPy adds float64 (and float32) arrays: pairwise summation. Under 8
/// values a plain loop; up to 128, eight partial sums seeded with a[0..7] and stepping by 8,
/// combined as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)), then the rest in order; above 128, the
/// two halves (the first a multiple of 8 long) summed so and added. Gymnasium's costs over more
/// than 7 numbers (Ant's 8 controls, its 84 contact forces) round as this does, not as a loop.
/// `a(k)` gives value k; the sum is over k = first .. first + n - 1.
template <class Scalar, class F>
RLK_HOST_DEVICE Scalar numpy_sum(const F& a, int first, int n) {
  if (n < 8) {
    Scalar sum = Scalar(0);
    for (int k = 0; k < n; ++k) sum += a(first + k);
    return sum;
  }
  if (n <= 128) {
    Scalar r[8];
    for (int j = 0; j < 8; ++j) r[j] = a(first + j);
    int k = 8;
    for (; k < n - n % 8; k += 8)
      for (int j = 0; j < 8; ++j) r[j] += a(first + k + j);
    Scalar sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; k < n; ++k) sum += a(first + k);
    return sum;
  }
  int half = n / 2;
  half -= half % 8;
  return numpy_sum<Scalar>(a, first, half) + numpy_sum<Scalar>(a, first + half, n - half);
}

/// np.sum(np.square(a)) over n values (Gymnasium's control costs; under 8 values a plain loop).
template <class Scalar>
RLK_HOST_DEVICE Scalar sum_of_squares(const Scalar* a, int n) {
  return numpy_sum<Scalar>([&](int k) { return a[k] * a[k]; }, 0, n);
}

/// The byte the test mode RLK_PHYSICS_POISON_WORKSPACE fills the workspace with.
constexpr unsigned char poison_byte = 0xFF;

#if RLK_PHYSICS_POISON_WORKSPACE
/// Test switch (only with RLK_PHYSICS_POISON_WORKSPACE=1): while true, simulate() fills its
/// workspace with poison_byte before each use. Host code only; device code always poisons.
inline bool poison_workspace_enabled = true;
#endif

/// Test mode RLK_PHYSICS_POISON_WORKSPACE=1 (off by default; without it this is empty): fills every
/// byte of the workspace with 0xFF, so that every float and double field is a quiet NaN and every
/// int -1, before simulate() hands it to the engine. A field read before it is written then shows
/// up as NaN in the results (or as a read at index -1, which the sanitizers report), and
/// tests/envs/mujoco_workspace_test.cpp requires the results to be bit-identical to the normal
/// mode's. Define it the same way in every translation unit of a program.
template <class Workspace>
RLK_HOST_DEVICE inline void poison_workspace(Workspace& w) {
#if RLK_PHYSICS_POISON_WORKSPACE
#if !defined(__CUDA_ARCH__)
  if (!poison_workspace_enabled) return;
#endif
  unsigned char* bytes = reinterpret_cast<unsigned char*>(&w);
  for (std::size_t k = 0; k < sizeof(Workspace); ++k) bytes[k] = poison_byte;
#else
  (void)w;
#endif
}

/// The warning bits that make a step fail: all but warning_bad_ctrl (MuJoCo then takes every
/// control as 0 for that step and carries on, and so does Gymnasium).
constexpr int failed_step_warnings = ~int(physics::warning_bad_ctrl);

/// What the engine reads from the workspace besides the model, from the state `s`: time 0, qpos,
/// qvel, the warm start (s's, or 0 without `warm_start`: mj_resetData's), the controls (0 where
/// `ctrl` is null), no warning and no contact or row peaks. Nothing else is initialised: the engine
/// writes every other field before it reads it, which the poisoned-workspace test checks
/// (RLK_PHYSICS_POISON_WORKSPACE); zeroing it cost a 7.9-25.6 KB write per env step (local memory
/// on CUDA).
template <class Scalar, class Dims, class State>
RLK_HOST_DEVICE void load_workspace(physics::data<Scalar, Dims>& d, const State& s, const Scalar* ctrl,
                                    bool warm_start) {
  poison_workspace(d);
  d.ncon_peak = 0;
  d.nefc_peak = 0;
  d.time = Scalar(0);
  for (int i = 0; i < Dims::nq; ++i) d.qpos[i] = s.qpos[i];
  for (int i = 0; i < Dims::nv; ++i) {
    d.qvel[i] = s.qvel[i];
    d.qacc_warmstart[i] = warm_start ? s.qacc_warmstart[i] : Scalar(0);
  }
  for (int k = 0; k < Dims::nu; ++k) d.ctrl[k] = ctrl ? ctrl[k] : Scalar(0);
  d.warning = physics::warning_none;
}

/// Gymnasium's do_simulation: ctrl = action (unclipped: the engine clamps ctrl to ctrlrange in the
/// actuation, as MuJoCo does), then `frame_skip` physics steps (at least one). On success the state
/// holds the new qpos, qvel and qacc_warmstart and the function returns 0. If a step sets a
/// warning in failed_step_warnings, or the end state is not finite, it returns those bits
/// (warning_bad_state if only the final check failed) and leaves the state as it was before the call.
/// This overload leaves the last physics step's workspace in `d` (what Gymnasium reads from
/// mjData after mj_step: the last forward pass's positions, contacts and forces), for envs whose
/// observation or reward needs more than qpos and qvel.
template <class Scalar, class Dims, class State>
RLK_HOST_DEVICE int simulate(const physics::model<Scalar, Dims>& m, State& s, const Scalar* action, int frame_skip,
                             physics::data<Scalar, Dims>& d) {
  load_workspace(d, s, action, true);
  const int frames = frame_skip > 0 ? frame_skip : 1;
  for (int f = 0; f < frames; ++f) {
    physics::step(m, d);
    if (d.warning & failed_step_warnings) return d.warning & failed_step_warnings;
  }
  // The engine checks each step's inputs and acceleration; the integrated end state is checked here.
  bool finite = true;
  for (int i = 0; i < Dims::nq; ++i) finite &= std::isfinite(d.qpos[i]);
  for (int i = 0; i < Dims::nv; ++i) finite &= std::isfinite(d.qvel[i]) && std::isfinite(d.qacc_warmstart[i]);
  if (!finite) return physics::warning_bad_state;
  for (int i = 0; i < Dims::nq; ++i) s.qpos[i] = d.qpos[i];
  for (int i = 0; i < Dims::nv; ++i) {
    s.qvel[i] = d.qvel[i];
    s.qacc_warmstart[i] = d.qacc_warmstart[i];
  }
  return physics::warning_none;
}

/// Gymnasium's do_simulation (see the overload above) with its own workspace.
template <class Scalar, class Dims, class State>
RLK_HOST_DEVICE int simulate(const physics::model<Scalar, Dims>& m, State& s, const Scalar* action, int frame_skip) {
  physics::data<Scalar, Dims> d;  // not zeroed (see the overload above)
  return simulate(m, s, action, frame_skip, d);
}

/// @brief Refuses terminate_when_unhealthy = false when the Dims (ncon contacts, nefc rows) hold
/// fewer than a robot lying on the floor needs (need_con, need_efc: measured, docs/physics.md).
/// @throw std::invalid_argument naming the env, the setting and both capacities
inline void require_room_for_falls(bool terminate_when_unhealthy, int ncon, int nefc, int need_con, int need_efc,
                                   const char* env, const char* dims) {
  RLK_EXPECTS(terminate_when_unhealthy || (ncon >= need_con && nefc >= need_efc), std::invalid_argument, "rlkernels::",
              env, ": terminate_when_unhealthy = false lets the robot lie on the floor, which needs ", need_con,
              " contacts and ", need_efc, " constraint rows per env (docs/physics.md), but these Dims hold ", ncon,
              " and ", nefc, ". Use rlkernels::full_capacity_t<", env, "<...>> (Python: make_vec(..., capacity='full'); the "
              "host train_* programs have full capacity) or physics::dims_with_capacity<models::", dims, ", ",
              need_con, ", ", need_efc, "> as its Dims");
}

/// One more failed step in s (saturating): a capacity overflow, or else an unstable step.
template <class State>
RLK_HOST_DEVICE void count_failed_step(State& s, int warning) {
  std::uint32_t& n = (warning & (physics::warning_contact_full | physics::warning_efc_full)) ? s.capacity_overflows
                                                                                            : s.unstable_steps;
  n += n != 0xffffffffu ? 1u : 0u;
}

/// Gymnasium's reset for these envs (mj_resetData, then reset_model): qpos = qpos0 + U(-scale,
/// scale) per coordinate; qvel = U(-scale, scale) per dof, or scale * N(0, 1) when `normal_qvel`
/// (HalfCheetah); qacc_warmstart = 0. unstable_steps is left as it is.
template <class Scalar, class Dims, class State, class Rng>
RLK_HOST_DEVICE void reset_state(const physics::model<Scalar, Dims>& m, State& s, Scalar scale,
                                 bool normal_qvel, Rng& gen) {
  for (int i = 0; i < Dims::nq; ++i) s.qpos[i] = m.qpos0[i] + gen.template uniform<Scalar>(-scale, scale);
  for (int i = 0; i < Dims::nv; ++i)
    s.qvel[i] = normal_qvel ? scale * gen.template normal<Scalar>() : gen.template uniform<Scalar>(-scale, scale);
  for (int i = 0; i < Dims::nv; ++i) s.qacc_warmstart[i] = Scalar(0);
}

/// Gymnasium's _get_obs for these envs: qpos (without qpos[0], the x position, when
/// `exclude_x`), then qvel, clipped to [-10, 10] when `clip_qvel` (Hopper, Walker2d).
template <bool ExcludeX, class Scalar, class Dims>
RLK_HOST_DEVICE void observe_state(const mujoco_state<Scalar, Dims>& s, bool clip_qvel, Scalar* obs) {
  int k = 0;
  for (int i = ExcludeX ? 1 : 0; i < Dims::nq; ++i) obs[k++] = s.qpos[i];
  for (int i = 0; i < Dims::nv; ++i) {
    const Scalar v = s.qvel[i];
    obs[k++] = clip_qvel ? (v < Scalar(-10) ? Scalar(-10) : (v > Scalar(10) ? Scalar(10) : v)) : v;
  }
}

/// unstable_steps (or capacity_overflows) of env i as a 64-bit term of a sum.
template <class State>
struct load_unstable_steps {
  const State* states;
  bool overflows;
  RLK_HOST_DEVICE std::uint64_t operator()(std::size_t i) const {
    return overflows ? states[i].capacity_overflows : states[i].unstable_steps;
  }
};

struct add_u64 {
  RLK_HOST_DEVICE std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a + b; }
};

}  // namespace detail

/// @brief The number of env steps in the batch that the physics engine could not compute (see
/// mujoco_state) since the vec_env was constructed or reset(): each ended its episode as
/// truncated. One reduction on the backend, one host read.
/// @tparam Env an env whose State has `unstable_steps` (the MuJoCo envs)
template <class Env, class Backend>
std::uint64_t unstable_steps(const vec_env<Env, Backend>& envs) {
  using state = typename vec_env<Env, Backend>::state_type;
  return detail::deterministic_sum(envs.backend(), envs.num_envs(),
                                   detail::load_unstable_steps<state>{envs.states().data(), false}, std::uint64_t(0),
                                   detail::add_u64{});
}

/// @brief The number of env steps in the batch that needed more contacts or constraint rows than
/// the model's capacities (physics::dims_with_capacity; warning_contact_full, warning_efc_full)
/// since the vec_env was constructed or reset(): each ended its episode as truncated, nothing was
/// dropped. A non-zero count says the capacities are too small for this policy: raise them.
/// @tparam Env an env whose State has `capacity_overflows` (the MuJoCo envs)
template <class Env, class Backend>
std::uint64_t capacity_overflows(const vec_env<Env, Backend>& envs) {
  using state = typename vec_env<Env, Backend>::state_type;
  return detail::deterministic_sum(envs.backend(), envs.num_envs(),
                                   detail::load_unstable_steps<state>{envs.states().data(), true}, std::uint64_t(0),
                                   detail::add_u64{});
}

}  // namespace rlkernels
