// rlkernels/envs/vec_env_kernels.hpp
// What vec_env runs per env and per batch: episode_statistics, and in rlkernels::detail the reset,
// step and observe kernels, the episode accumulators and the deferred action check. vec_env.hpp
// includes it with the vec_env class (vec_env_batch.hpp).
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/host_sync.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../core/reduce.hpp"
#include "env.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

/// @brief Statistics of the episodes completed since the last `clear_episode_statistics()`.
struct episode_statistics {
  std::uint64_t count = 0;   ///< completed episodes (terminated or truncated)
  double mean_return = 0;    ///< undiscounted return, averaged over completed episodes (0 if none)
  double mean_length = 0;    ///< steps per episode, averaged (0 if none)
  double min_return = 0;     ///< smallest return (0 if none)
  double max_return = 0;     ///< largest return (0 if none)
};

namespace detail {

template <class Env, bool Discrete = (Env::action_space == action_kind::discrete)>
struct action_traits {
  using type = std::int32_t;  // one index per env
  static constexpr int width = 1;
};
template <class Env>
struct action_traits<Env, false> {
  using type = typename Env::scalar_type;  // action_size scalars per env
  static constexpr int width = Env::action_size;
};

/// Per-env accumulator of completed episodes, reduced into episode_statistics.
struct episode_accumulator {
  std::uint64_t count;
  double return_sum;
  double length_sum;
  double min_return;
  double max_return;

  RLK_HOST_DEVICE static episode_accumulator empty() {
    return {0, 0.0, 0.0, HUGE_VAL, -HUGE_VAL};
  }
  RLK_HOST_DEVICE void add(double ret, double len) {
    ++count;
    return_sum += ret;
    length_sum += len;
    min_return = ret < min_return ? ret : min_return;
    max_return = ret > max_return ? ret : max_return;
  }
};

struct combine_accumulators {
  RLK_HOST_DEVICE episode_accumulator operator()(const episode_accumulator& a, const episode_accumulator& b) const {
    return {a.count + b.count, a.return_sum + b.return_sum, a.length_sum + b.length_sum,
            a.min_return < b.min_return ? a.min_return : b.min_return,
            a.max_return > b.max_return ? a.max_return : b.max_return};
  }
};

struct load_accumulator {
  const episode_accumulator* data;
  RLK_HOST_DEVICE episode_accumulator operator()(std::size_t i) const { return data[i]; }
};

/// The statistics an accumulator describes (means 0 when no episode completed). One function for
/// the host-returning and the device forms, so both give the same bits.
RLK_HOST_DEVICE inline episode_statistics statistics_of(const episode_accumulator& acc) {
  episode_statistics out;
  out.count = acc.count;
  if (acc.count > 0) {
    out.mean_return = acc.return_sum / double(acc.count);
    out.mean_length = acc.length_sum / double(acc.count);
    out.min_return = acc.min_return;
    out.max_return = acc.max_return;
  }
  return out;
}

/// *out = statistics_of(*acc), one index (the device form of get_episode_statistics).
struct finish_statistics_kernel {
  const episode_accumulator* acc;
  episode_statistics* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *out = statistics_of(*acc); }
};

struct fill_accumulators {
  episode_accumulator* data;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { data[i] = episode_accumulator::empty(); }
};

/// Reduces the accumulators (detail::deterministic_sum: the same numbers for every thread count on
/// the host; CUB on CUDA).
template <class Backend>
episode_accumulator reduce_accumulators(const Backend& backend, const episode_accumulator* data, std::size_t n) {
  return deterministic_sum(backend, n, load_accumulator{data}, episode_accumulator::empty(), combine_accumulators{});
}

/// Pointers to a vec_env's per-env arrays (in backend memory), as the kernels see them.
template <class Env>
struct batch_arrays {
  using scalar = typename Env::scalar_type;
  typename Env::State* states;           // [N]
  std::uint64_t* rng_blocks;             // [N] next Philox block of each env's stream
  std::int32_t* elapsed;                 // [N] steps in the current episode
  double* episode_returns;               // [N] return so far of the current episode
  episode_accumulator* completed;        // completed episodes: [N] on CUDA, one per stats chunk on the host
  scalar* observations;                  // [N, observation_size]
  scalar* final_observations;            // [N, observation_size]
  scalar* rewards;                       // [N]
  std::uint8_t* terminated;              // [N]
  std::uint8_t* truncated;               // [N]
};

/// Resets env i from the start of its random stream and writes its first observation.
template <class Env>
struct reset_kernel {
  using scalar = typename Env::scalar_type;
  typename Env::Params params;
  std::uint64_t seed;
  std::uint64_t first_stream;
  batch_arrays<Env> a;

  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(seed, first_stream + i, 0);
    typename Env::State s{};  // zeroed: an env may keep fields across resets (MinAtar's last action)
    Env::reset(params, s, gen);
    a.states[i] = s;
    a.rng_blocks[i] = gen.block();
    a.elapsed[i] = 0;
    a.episode_returns[i] = 0.0;
    // observe writes straight into the output row (no observation passes through local memory).
    scalar* obs = a.observations + i * Env::observation_size;
    Env::observe(params, s, obs);
    scalar* final_obs = a.final_observations + i * Env::observation_size;
    for (int k = 0; k < Env::observation_size; ++k) final_obs[k] = obs[k];
    a.rewards[i] = scalar(0);
    a.terminated[i] = 0;
    a.truncated[i] = 0;
  }
};

/// Steps env i once, records a completed episode, and resets it in the same step if it ended.
template <class Env>
struct step_kernel {
  using scalar = typename Env::scalar_type;
  static constexpr bool discrete = Env::action_space == action_kind::discrete;
  using action_type = typename action_traits<Env>::type;
  static constexpr int action_width = action_traits<Env>::width;

  typename Env::Params params;
  std::uint64_t seed;
  std::uint64_t first_stream;
  const action_type* actions;
  batch_arrays<Env> a;
  /// Deferred action check (CUDA): while *halt is not ~0 (an earlier step_deferred had an invalid
  /// action) the kernel changes nothing. Null: always step.
  const unsigned long long* halt = nullptr;

  /// Steps env i and resets it if its episode ended. Returns true in that case, with the
  /// episode's return and length in `ret` and `len`.
  RLK_HOST_DEVICE bool step_one(std::size_t i, double& ret, std::int32_t& len) const {
    typename Env::State s = a.states[i];
    rng gen(seed, first_stream + i, a.rng_blocks[i]);
    step_result<scalar> r;
    if constexpr (discrete) {
      r = Env::step(params, s, actions[i], gen);
    } else {
      r = Env::step(params, s, actions + i * action_width, gen);
    }
    const std::int32_t t = a.elapsed[i] + (a.elapsed[i] < 0x7fffffff);  // saturates without a time limit
    ret = a.episode_returns[i] + double(r.reward);
    len = t;
    // An env that could not take the step (r.truncated) ends the episode as truncated, never as
    // terminated: the failure is the simulator's, not a terminal state of the MDP.
    const bool term = r.terminated && !r.truncated;
    const bool trunc = r.truncated || (params.max_episode_steps > 0 && t >= params.max_episode_steps);

    // observe writes straight into the output rows: s' into final_observations, then the first
    // observation of the new episode (or a copy of s') into observations.
    scalar* final_obs = a.final_observations + i * Env::observation_size;
    Env::observe(params, s, final_obs);
    scalar* next_obs = a.observations + i * Env::observation_size;

    const bool done = term || trunc;
    if (done) {
      Env::reset(params, s, gen);
      Env::observe(params, s, next_obs);
      a.elapsed[i] = 0;
      a.episode_returns[i] = 0.0;
    } else {
      for (int k = 0; k < Env::observation_size; ++k) next_obs[k] = final_obs[k];
      a.elapsed[i] = t;
      a.episode_returns[i] = ret;
    }
    a.states[i] = s;
    a.rng_blocks[i] = gen.block();
    a.rewards[i] = r.reward;
    a.terminated[i] = term;
    a.truncated[i] = trunc;
    return done;
  }

  /// One env per call, with one accumulator per env (CUDA: the GPU hides the latency of these
  /// sparse updates).
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    if (halt != nullptr && *halt != ~0ull) return;
    double ret;
    std::int32_t len;
    if (step_one(i, ret, len)) a.completed[i].add(ret, double(len));
  }

  /// The envs [begin, end) in order, with one accumulator for the chunk (host): it stays in
  /// registers, where a per-env accumulator would add a 40-byte read-modify-write per env-step.
  void operator()(std::size_t chunk, std::size_t begin, std::size_t end) const {
    episode_accumulator acc = a.completed[chunk];
    for (std::size_t i = begin; i < end; ++i) {
      double ret;
      std::int32_t len;
      if (step_one(i, ret, len)) acc.add(ret, double(len));
    }
    a.completed[chunk] = acc;
  }
};

/// Recomputes the observation of env i from its state (after the user overwrote states); the
/// final observation is set to the same, as after a step that ended nothing.
template <class Env>
struct observe_kernel {
  using scalar = typename Env::scalar_type;
  typename Env::Params params;
  const typename Env::State* states;
  scalar* observations;
  scalar* final_observations;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    scalar* obs = observations + i * Env::observation_size;
    Env::observe(params, states[i], obs);
    scalar* final_obs = final_observations + i * Env::observation_size;
    for (int k = 0; k < Env::observation_size; ++k) final_obs[k] = obs[k];
  }
};

/// True when env i's action is in the action space: a discrete index in [0, num_actions), or
/// continuous components that are not NaN (out-of-bound values are clipped by the env, as in
/// Gymnasium).
template <class Env>
RLK_HOST_DEVICE bool action_is_valid(const typename action_traits<Env>::type* actions, std::size_t i) {
  if constexpr (Env::action_space == action_kind::discrete) {
    const std::int32_t a = actions[i];
    return a >= 0 && a < Env::num_actions;
  } else {
    constexpr int width = action_traits<Env>::width;
    bool ok = true;
    for (int k = 0; k < width; ++k) {
      const auto a = actions[i * width + k];
      ok &= (a == a);  // false for NaN
    }
    return ok;
  }
}

/// The value an invalid_action reports for env i: the index (discrete) or the first NaN component
/// (continuous; the last component if none is NaN).
template <class Env>
RLK_HOST_DEVICE double offending_value(const typename action_traits<Env>::type* actions, std::size_t i) {
  constexpr int width = action_traits<Env>::width;
  double value = 0;
  for (int k = 0; k < width; ++k) {
    value = double(actions[i * width + k]);
    if (!(Env::action_space == action_kind::continuous) || value != value) break;
  }
  return value;
}

/// The sticky result of vec_env::step_deferred's action check, in backend memory: the lowest
/// invalid env of the first step that had one (~0: none yet) and its offending value.
struct deferred_action_check {
  unsigned long long env;
  double value;
};

/// *flag = value (one index).
struct store_flag {
  unsigned long long* flag;
  unsigned long long value;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *flag = value; }
};

/// Sets a deferred_action_check to "none" (one index).
struct clear_deferred_check {
  deferred_action_check* check;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *check = deferred_action_check{~0ull, 0.0}; }
};

/// After a step's validation: if it found an invalid env (*step_bad) and none was latched before,
/// latch it with its value; reset *step_bad for the next step (one index).
template <class Env>
struct latch_invalid_action {
  const typename action_traits<Env>::type* actions;
  unsigned long long* step_bad;
  deferred_action_check* check;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const unsigned long long bad = *step_bad;
    if (bad == ~0ull) return;
    *step_bad = ~0ull;
    if (check->env != ~0ull) return;
    check->env = bad;
    check->value = offending_value<Env>(actions, std::size_t(bad));
  }
};

/// Writes env i's legal-action mask (Env::action_mask) to row i of masks [N, num_actions].
template <class Env>
struct action_mask_kernel {
  typename Env::Params params;
  const typename Env::State* states;
  std::uint8_t* masks;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    Env::action_mask(params, states[i], masks + i * std::size_t(Env::num_actions));
  }
};

#if RLK_HAS_CUDA
/// Device side of the action check: records the lowest invalid index with an atomic min, so the
/// host reports the same env whatever the thread order. One atomic per warp, not per invalid env
/// (a batch of bad actions would otherwise serialise on one address): for_each_index's
/// grid-stride loop gives the lanes of a warp consecutive indices, so the lowest invalid lane holds
/// the warp's lowest invalid index.
template <class Env>
struct validate_kernel {
  const typename action_traits<Env>::type* actions;
  unsigned long long* first_bad;
  __device__ void operator()(std::size_t i) const {
    const bool bad = !action_is_valid<Env>(actions, i);
    const unsigned active = __activemask();
    const unsigned bad_lanes = __ballot_sync(active, bad);
    const unsigned lane = threadIdx.x % 32u;
    if (bad && (bad_lanes & ((1u << lane) - 1u)) == 0u) atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
};
#endif

}  // namespace detail

}  // namespace rlkernels
