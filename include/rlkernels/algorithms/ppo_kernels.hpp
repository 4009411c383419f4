// rlkernels/algorithms/ppo_kernels.hpp
// The element-wise kernels, random keys and device statistics records of PPO's trainer
// (rlkernels::detail): log-std rows, the discounted returns of reward normalisation, action
// clipping, advantage normalisation, the iteration's one-read statistics.
#pragma once

#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../envs/env.hpp"
#include "../losses/ppo.hpp"
#include "common.hpp"
#include "ppo_config.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace rlkernels {
namespace detail {

template <class T>
struct expand_log_std_kernel {  // rows[i, d] = log_std[d]
  const T* log_std;
  T* rows;
  std::size_t dim;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { rows[k] = log_std[k % dim]; }
};
template <class T>
struct column_sum_kernel {  // out[d] = sum_i in[i, d], in order
  const T* in;
  T* out;
  std::size_t rows, dim;
  RLK_HOST_DEVICE void operator()(std::size_t d) const {
    T s = T(0);
    for (std::size_t i = 0; i < rows; ++i) s += in[i * dim + d];
    out[d] = s;
  }
};
template <class T>
struct copy_kernel {
  const T* src;
  T* dst;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { dst[k] = src[k]; }
};
/// Gymnasium's NormalizeReward: G = G * gamma * (1 - terminated) + r per env (the running
/// discounted return; it is not reset on truncation either, as Gymnasium does).
template <class T>
struct discounted_return_kernel {
  const T* rewards;
  const std::uint8_t* terminated;
  double* returns;
  double gamma;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    returns[i] = returns[i] * gamma * (terminated[i] ? 0.0 : 1.0) + double(rewards[i]);
  }
};
/// out[k] = clamp(in[k], low, high): a continuous action as the env receives it (SB3 and CleanRL
/// clip to the action space before env.step; the unclipped draw keeps its log-probability).
template <class T>
struct clip_action_kernel {
  const T* in;
  T* out;
  T low, high;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const T a = in[k];
    out[k] = a < low ? low : (a > high ? high : a);
  }
};
template <class T>
struct scale_rewards_kernel {  // r = clip(r / sqrt(var + 1e-8), -c, c)
  T* rewards;
  const double* var;
  double clip;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    double r = double(rewards[i]) / std::sqrt(var[0] + 1e-8);
    r = r < -clip ? -clip : (r > clip ? clip : r);
    rewards[i] = T(r);
  }
};

/// Purposes of derive_key in PPO: each random use has its own key, so none shares the Philox
/// streams the envs draw from (rng(seed, env, block)).
inline constexpr std::uint64_t ppo_key_actions = 1;
inline constexpr std::uint64_t ppo_key_shuffle = 2;
inline constexpr std::uint64_t ppo_key_evaluation = 3;

/// What a PPO iteration leaves in backend memory for its one host read at the end.
struct ppo_device_stats {
  episode_statistics episodes;     // the rollout's completed episodes
  ppo_policy_stats policy;         // the last minibatch's policy loss statistics
  value_loss_stats value;          // the last minibatch's value loss
  double entropy;                  // the last minibatch's mean entropy
  double grad_norm;                // the last minibatch's global gradient norm before clipping
  double clip_fraction_sum;        // sum over the iteration's minibatches of their clip fraction
  std::uint64_t bad_step;          // 1-based gradient step of the iteration whose norm was not finite (0: none)
  double bad_norm;                 // that norm
  unsigned long long action_flag;  // a copy of the env's deferred action flag (~0: all valid)
};

/// Starts an iteration's accumulators (one index).
struct ppo_stats_start_kernel {
  ppo_device_stats* s;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    s->clip_fraction_sum = 0.0;
    s->bad_step = 0;
    s->bad_norm = 0.0;
  }
};

/// After gradient step `step` (1-based) of the iteration: adds its clip fraction and remembers the
/// first non-finite gradient norm (one index).
struct ppo_stats_accumulate_kernel {
  ppo_device_stats* s;
  std::uint64_t step;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    s->clip_fraction_sum += s->policy.clip_fraction;
    const double n = s->grad_norm;
    if (!(n - n == 0.0) && s->bad_step == 0) {
      s->bad_step = step;
      s->bad_norm = n;
    }
  }
};

/// a[i] (mean null) or (a[i] - mean)^2, in double: the minibatch's advantage moments.
template <class T>
struct advantage_moment_term {
  const T* a;
  const double* mean;
  RLK_HOST_DEVICE double operator()(std::size_t i) const {
    if (!mean) return double(a[i]);
    const double d = double(a[i]) - *mean;
    return d * d;
  }
};
/// out = ((parts[0] + parts[1]) + ...) / divisor (one index).
struct fold_parts_kernel {
  const double* parts;
  std::size_t n;
  double divisor;
  double* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    double s = parts[0];
    for (std::size_t k = 1; k < n; ++k) s += parts[k];
    *out = s / divisor;
  }
};
/// a[i] = (a[i] - mean) / (sqrt(ssd / (count - 1)) + 1e-8): CleanRL's per-minibatch
/// normalisation (std with ddof 1) with moments of the whole (possibly distributed) minibatch.
template <class T>
struct normalize_advantage_kernel {
  T* a;
  const double* mean;
  const double* ssd;
  double count;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const double sd = std::sqrt(*ssd / (count - 1.0));
    a[i] = T((double(a[i]) - *mean) / (sd + 1e-8));
  }
};

template <class Env>
constexpr int ppo_policy_outputs() {
  if constexpr (Env::action_space == action_kind::discrete) {
    return Env::num_actions;
  } else {
    return Env::action_size;
  }
}

}  // namespace detail

}  // namespace rlkernels
