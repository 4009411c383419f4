// rlkernels/envs/failed_steps.hpp
// The env steps a batch's physics could not take, for any env: failed_step_counts, whether an env
// counts them (counts_failed_steps_v: a State with `unstable_steps` and `capacity_overflows`, as the
// MuJoCo envs' mujoco_state has), and the batch's totals read into backend memory or to the host.
// The trainers put them into every iteration's statistics (docs/physics.md, "When a step fails").
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/device_value.hpp"
#include "../core/reduce.hpp"
#include "vec_env.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rlkernels {

/// @brief Env steps the physics engine could not take, by cause. Each ended its episode as
/// truncated (never terminated), and nothing of it was written into the batch (see mujoco_state).
struct failed_step_counts {
  /// Steps that needed more contacts or constraint rows than the env's capacities (its Dims):
  /// raise them (full_capacity_t<Env>, physics::dims_with_capacity).
  std::uint64_t capacity_overflows = 0;
  /// Other steps the engine could not compute: a state, velocity or acceleration that is not
  /// finite or above 1e10 in magnitude (MuJoCo's mj_checkPos/Vel/Acc).
  std::uint64_t unstable_steps = 0;
  /// Both together.
  RLK_HOST_DEVICE std::uint64_t total() const noexcept { return capacity_overflows + unstable_steps; }
  /// Both counts added (sums of 32-bit per-env counters: no 64-bit overflow).
  RLK_HOST_DEVICE failed_step_counts operator+(const failed_step_counts& o) const noexcept {
    return {capacity_overflows + o.capacity_overflows, unstable_steps + o.unstable_steps};
  }
  /// The counts of `o` taken away (the steps between two readings of totals).
  RLK_HOST_DEVICE failed_step_counts operator-(const failed_step_counts& o) const noexcept {
    return {capacity_overflows - o.capacity_overflows, unstable_steps - o.unstable_steps};
  }
  /// Equal counts.
  bool operator==(const failed_step_counts& o) const noexcept {
    return capacity_overflows == o.capacity_overflows && unstable_steps == o.unstable_steps;
  }
};

namespace detail {

template <class State, class = void>
struct has_failure_counters : std::false_type {};
template <class State>
struct has_failure_counters<State, std::void_t<decltype(std::declval<State&>().unstable_steps),
                                               decltype(std::declval<State&>().capacity_overflows)>>
    : std::true_type {};

/// Env i's counters as a term of the batch's sum.
template <class State>
struct load_failed_steps {
  const State* states;
  RLK_HOST_DEVICE failed_step_counts operator()(std::size_t i) const {
    return {std::uint64_t(states[i].capacity_overflows), std::uint64_t(states[i].unstable_steps)};
  }
};
struct add_failed_steps {
  RLK_HOST_DEVICE failed_step_counts operator()(const failed_step_counts& a, const failed_step_counts& b) const {
    return a + b;
  }
};
struct zero_failed_steps_kernel {  // *out = {} (one index)
  failed_step_counts* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *out = failed_step_counts{}; }
};

}  // namespace detail

/// True when Env counts the steps its physics could not take (its State has `unstable_steps` and
/// `capacity_overflows`: the MuJoCo envs). Other envs never fail a step.
template <class Env>
inline constexpr bool counts_failed_steps_v = detail::has_failure_counters<typename Env::State>::value;

/// @brief The batch's failed steps since the vec_env was constructed or reset() (the counters
/// survive automatic resets and travel in checkpoints), written to `*out` in backend memory without
/// a host wait (one reduction queued on the backend); zero for envs that do not count them.
template <class Env, class Backend>
void failed_steps_into(const vec_env<Env, Backend>& envs, failed_step_counts* out) {
  if constexpr (counts_failed_steps_v<Env>) {
    using state = typename vec_env<Env, Backend>::state_type;
    detail::deterministic_sum_into(envs.backend(), envs.num_envs(), detail::load_failed_steps<state>{envs.states().data()},
                                   failed_step_counts{}, detail::add_failed_steps{}, out);
  } else {
    detail::run_once(envs.backend(), detail::zero_failed_steps_kernel{out});
  }
}

/// @brief The batch's failed steps since the vec_env was constructed or reset(), read to the host
/// (one reduction and a wait; {} without one for envs that do not count them).
template <class Env, class Backend>
failed_step_counts failed_steps(const vec_env<Env, Backend>& envs) {
  if constexpr (counts_failed_steps_v<Env>) {
    using state = typename vec_env<Env, Backend>::state_type;
    return detail::deterministic_sum(envs.backend(), envs.num_envs(), detail::load_failed_steps<state>{envs.states().data()},
                                     failed_step_counts{}, detail::add_failed_steps{});
  } else {
    return {};
  }
}

}  // namespace rlkernels
