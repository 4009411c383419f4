// rlkernels/algorithms/ppo_kernels.hpp
// The element-wise kernels, random keys and device statistics records of PPO's trainer
// (rlkernels::detail): log-std rows, the discounted returns of reward normalisation, action
// clipping, advantage normalisation, the iteration's one-read statistics.
#pragma once

#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../envs/env.hpp"
#include "../envs/failed_steps.hpp"
#include "../losses/ppo.hpp"
#include "common.hpp"
#include "ppo_config.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

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
  double kl_part_sum;              // the analytic KL's sum over the rows of the last loss call
  double last_kl;                  // the last epoch's last minibatch's KL (whole minibatch)
  double epoch_kl;                 // the last epoch's KL: the mean of its minibatches' KLs
  failed_step_counts failures;     // the envs' failed steps so far (this rank's; all ranks' once gathered)
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

/// Row i's KL(new || old) of two diagonal Gaussians (rl_games' policy_kl without its 1e-5 guards),
/// summed over the dim action dimensions: log(s1 / s0) + (s0^2 + (m1 - m0)^2) / (2 s1^2) - 1/2
/// with (m0, s0) the new policy's and (m1, s1) the rollout's. The old means are the rollout's
/// rows indices[i] ([T * N, dim]); both log-stds are state-independent ([dim]).
template <class T>
struct gaussian_kl_term {
  const T* new_mean;
  const T* new_log_std;
  const T* old_mean;
  const T* old_log_std;
  const std::uint64_t* indices;
  std::size_t dim;
  RLK_HOST_DEVICE double operator()(std::size_t i) const {
    const T* m1 = old_mean + indices[i] * dim;
    double kl = 0.0;
    for (std::size_t d = 0; d < dim; ++d) {
      const double ls0 = double(new_log_std[d]), ls1 = double(old_log_std[d]);
      const double diff = double(m1[d]) - double(new_mean[i * dim + d]);
      kl += (ls1 - ls0) + (std::exp(2.0 * ls0) + diff * diff) / (2.0 * std::exp(2.0 * ls1)) - 0.5;
    }
    return kl;
  }
};

/// Adds one part's KL, times `weight` (1 / the parts of the minibatch over all ranks), to the
/// minibatch's KL `*out` (one index): the part's analytic sum over its `rows`, or its k3 mean.
struct ppo_kl_add_kernel {
  const ppo_device_stats* s;
  double* out;
  bool analytic;
  double rows, weight;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double kl = analytic ? s->kl_part_sum / rows : s->policy.approx_kl_k3;
    *out += kl * weight;
  }
};

/// At the end of an epoch: its last minibatch's KL and the mean of all `n`, summed in order (the
/// same arithmetic as mean_in_order on the host; one index).
struct ppo_epoch_kl_kernel {
  ppo_device_stats* s;
  const double* kls;
  std::size_t n;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    double sum = 0.0;
    for (std::size_t k = 0; k < n; ++k) sum += kls[k];
    s->last_kl = kls[n - 1];
    s->epoch_kl = sum / double(n);
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

/// The mean of `x` summed in order (0 for none): an epoch's KL from its minibatches' KLs.
inline double mean_in_order(const std::vector<double>& x) {
  double sum = 0.0;
  for (double v : x) sum += v;
  return x.empty() ? 0.0 : sum / double(x.size());
}

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
