// rlkernels/algorithms/actor_critic.hpp
// Small pieces the continuous-action off-policy trainers (SAC, TD3) share: critic inputs
// [observation, action], the action columns of a critic's input gradient, actions mapped between
// the policy's [-1, 1] and the env's Box bounds, uniform warm-up actions, and seed derivation.
#pragma once

#include "../core/backend.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../envs/env.hpp"
#include "common.hpp"

#include <cstddef>
#include <cstdint>

namespace rlkernels {
namespace detail {

/// Purposes of derive_key in SAC and TD3: every random use has a key of its own, so none shares
/// the Philox streams the envs draw from (rng(seed, env, block)).
enum actor_critic_key : std::uint64_t {
  ac_key_actor_init = 10,
  ac_key_critic1_init = 11,
  ac_key_critic2_init = 12,
  ac_key_warmup_actions = 20,
  ac_key_actions = 21,
  ac_key_batches = 30,
  ac_key_target_noise = 31,
  ac_key_actor_noise = 32,
  ac_key_evaluation = 40
};

/// out[i] = [obs[i, 0:O], act[i, 0:D]] (the critic's input).
template <class T>
struct concat_kernel {
  const T* obs;
  const T* act;
  T* out;
  std::size_t o, d;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t w = o + d, i = k / w, c = k % w;
    out[k] = c < o ? obs[i * o + c] : act[i * d + (c - o)];
  }
};

/// g[i, j] = a[i, O + j] (+ b[i, O + j]): the action part of critics' input gradients.
template <class T>
struct action_columns_kernel {
  const T* a;
  const T* b;  // may be null
  T* g;
  std::size_t o, d;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = k / d, j = k % d, src = i * (o + d) + o + j;
    g[k] = b ? a[src] + b[src] : a[src];
  }
};

/// mean[i, j] = out[i, j], log_std[i, j] = out[i, D + j] (a Gaussian head's two halves).
template <class T>
struct split_head_kernel {
  const T* out;
  T* mean;
  T* log_std;
  std::size_t d;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = k / d, j = k % d;
    mean[k] = out[i * 2 * d + j];
    log_std[k] = out[i * 2 * d + d + j];
  }
};

/// g_out[i, j] = g_mean[i, j], g_out[i, D + j] = g_log_std[i, j].
template <class T>
struct merge_head_kernel {
  const T* g_mean;
  const T* g_log_std;
  T* g_out;
  std::size_t d;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = k / d, j = k % d;
    g_out[i * 2 * d + j] = g_mean[k];
    g_out[i * 2 * d + d + j] = g_log_std[k];
  }
};

/// a[k] ~ U(-1, 1) from rng(seed, k, draw).
template <class T>
struct uniform_action_kernel {
  std::uint64_t seed, draw;
  T* actions;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, k, draw);
    actions[k] = gen.uniform<T>(T(-1), T(1));
  }
};

/// env[k] = low + (a[k] + 1) / 2 * (high - low): the policy's [-1, 1] to the env's Box.
template <class T>
struct to_env_action_kernel {
  const T* a;
  T* env;
  T low, high;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    T x = a[k] < T(-1) ? T(-1) : (a[k] > T(1) ? T(1) : a[k]);
    env[k] = low + (x + T(1)) * T(0.5) * (high - low);
  }
};

/// a[k] = tanh(mean[k]) (the SAC policy's deterministic action).
template <class T>
struct tanh_kernel {
  const T* in;
  T* out;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { out[k] = std::tanh(in[k]); }
};

/// a[k] = clip(a[k] + sigma * N(0, 1), -1, 1) with the normal from rng(seed, k, draw) (TD3's exploration).
template <class T>
struct gaussian_exploration_kernel {
  const T* in;
  T* out;
  T sigma;
  std::uint64_t seed, draw;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, k, draw);
    const T x = in[k] + sigma * gen.normal<T>();
    out[k] = x < T(-1) ? T(-1) : (x > T(1) ? T(1) : x);
  }
};

}  // namespace detail
}  // namespace rlkernels
