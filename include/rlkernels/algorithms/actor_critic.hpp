// rlkernels/algorithms/actor_critic.hpp
// Small pieces the continuous-action off-policy trainers (SAC, TD3) share: critic inputs
// [observation, action], the action columns of a critic's input gradient, actions mapped between
// the policy's [-1, 1] and the env's Box bounds, uniform warm-up actions, and seed derivation.
#pragma once

#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../envs/env.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/sac.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "trainer_core.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
  ac_key_td3_actor_noise = 33,
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

/// a[k] ~ U(-1, 1) from rng(seed, first + k, draw) (first: the element's place in the whole
/// population, for a data-parallel rank or an env shard).
template <class T>
struct uniform_action_kernel {
  std::uint64_t seed, draw;
  T* actions;
  std::uint64_t first = 0;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, first + k, draw);
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

/// a[k] = clip(a[k] + sigma * N(0, 1), -1, 1) with the normal from rng(seed, first + k, draw)
/// (TD3's exploration and target smoothing; first: the element's place in the whole batch).
template <class T>
struct gaussian_exploration_kernel {
  const T* in;
  T* out;
  T sigma;
  std::uint64_t seed, draw;
  std::uint64_t first = 0;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, first + k, draw);
    const T x = in[k] + sigma * gen.normal<T>();
    out[k] = x < T(-1) ? T(-1) : (x > T(1) ? T(1) : x);
  }
};

/// g[k] = 0 where in[k] + sigma N (the draw of gaussian_exploration_kernel with the same seed, draw
/// and first) falls outside [-1, 1]: the gradient through that kernel's clip.
template <class T>
struct clipped_noise_gradient_kernel {
  const T* in;
  T* g;
  T sigma;
  std::uint64_t seed, draw;
  std::uint64_t first = 0;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, first + k, draw);
    const T x = in[k] + sigma * gen.normal<T>();
    if (x < T(-1) || x > T(1)) g[k] = T(0);
  }
};

/// The checks SAC's and TD3's configs share (their fields have the same names and meanings).
template <class Config>
void validate_actor_critic_config(const Config& c, const char* who) {
  RLK_EXPECTS(c.num_envs >= 1, std::invalid_argument, who, ": num_envs must be >= 1");
  RLK_EXPECTS(c.batch_size >= 1, std::invalid_argument, who, ": batch_size must be >= 1");
  RLK_EXPECTS(c.buffer_size >= 1, std::invalid_argument, who, ": buffer_size must be >= 1");
  RLK_EXPECTS(c.gradient_steps >= 1, std::invalid_argument, who, ": gradient_steps must be >= 1");
  RLK_EXPECTS(c.train_frequency >= 1, std::invalid_argument, who, ": train_frequency must be >= 1, got ",
              c.train_frequency);
  RLK_EXPECTS(c.gamma >= 0 && c.gamma <= 1, std::invalid_argument, who, ": gamma must be in [0, 1], got ", c.gamma);
  RLK_EXPECTS(c.tau >= 0 && c.tau <= 1, std::invalid_argument, who, ": tau must be in [0, 1], got ", c.tau);
  RLK_EXPECTS(std::isfinite(c.policy_lr) && c.policy_lr >= 0, std::invalid_argument, who,
              ": policy_lr must be finite and >= 0, got ", c.policy_lr);
  RLK_EXPECTS(std::isfinite(c.q_lr) && c.q_lr >= 0, std::invalid_argument, who, ": q_lr must be finite and >= 0, got ",
              c.q_lr);
  RLK_EXPECTS(c.adam_epsilon > 0, std::invalid_argument, who, ": adam_epsilon must be > 0, got ", c.adam_epsilon);
  RLK_EXPECTS(std::isfinite(c.weight_decay) && c.weight_decay >= 0, std::invalid_argument, who,
              ": weight_decay must be finite and >= 0, got ", c.weight_decay);
  RLK_EXPECTS(c.policy_frequency >= 1, std::invalid_argument, who, ": policy_frequency must be >= 1");
  RLK_EXPECTS(std::isfinite(c.critic_loss_scale) && c.critic_loss_scale > 0, std::invalid_argument, who,
              ": critic_loss_scale must be > 0, got ", c.critic_loss_scale);
  RLK_EXPECTS(!c.hidden_sizes.empty(), std::invalid_argument, who, ": hidden_sizes is empty (give at least one layer)");
  for (int h : c.hidden_sizes) RLK_EXPECTS(h >= 1, std::invalid_argument, who, ": hidden size ", h, " must be >= 1");
  RLK_EXPECTS(c.checkpoint_every == 0 || !c.checkpoint_dir.empty(), std::invalid_argument, who,
              ": checkpoint_every is ", c.checkpoint_every, " but checkpoint_dir is empty");
  RLK_EXPECTS(c.checkpoint_keep >= 1, std::invalid_argument, who, ": checkpoint_keep must be >= 1");
  c.validate_parallel(c.num_envs, c.batch_size, "batch", who);
}

/// What one env step of an off-policy trainer gathered: the episodes that ended in it.
struct env_step_outcome {
  std::uint64_t episodes = 0;      ///< episodes completed
  double episode_return_sum = 0;  ///< sum of their returns
  double episode_length_sum = 0;  ///< sum of their lengths
};

/// What an off-policy iteration leaves in backend memory for its one host read.
struct env_step_record {
  episode_statistics episodes;     // the episodes that ended in the iteration's env step
  unsigned long long action_flag;  // a copy of the env's deferred action flag (~0: all valid)
  failed_step_counts failures;     // the envs' failed steps so far (this rank's; all ranks' once gathered)
};

/// Steps `env` with `actions` [N, D] in [-1, 1] (mapped to the env's Box bounds through
/// `env_actions`), stores (s, a in [-1, 1], r, s', terminated, truncated) in `replay` (s copied
/// aside into `obs_before` first) and writes the statistics of the episodes that ended to
/// `record` in backend memory. Nothing waits for the host: the action check is deferred
/// (vec_env::step_deferred); read_step_outcome() reads both at the end of the iteration.
template <class Env, class Backend, class VecEnv, class Replay, class T>
void step_and_store(const Backend& backend, VecEnv& env, Replay& replay, view<const T> actions, view<T> env_actions,
                    view<T> obs_before, env_step_record* record) {
  const std::size_t nd = actions.size();
  copy(backend, env.observations().cview(), obs_before);
  for_each_index(backend, nd, to_env_action_kernel<T>{actions.data(), env_actions.data(), Env::action_low, Env::action_high});
  env.step_deferred(view<const T>(env_actions.subview(0, nd)));
  replay.add(view<const T>(obs_before), actions, env);
  env.episode_statistics_into(view<episode_statistics>(&record->episodes, 1));
  env.clear_episode_statistics();
}

/// What a SAC or TD3 iteration leaves in backend memory for its one host read at the end.
struct actor_critic_device_stats {
  env_step_record step;           // the env step's episodes and action flag
  twin_critic_loss_result critic;  // the last critic step's loss
  sac_actor_loss_result actor;     // the last actor step's loss (TD3: loss only)
  std::uint64_t bad_step;          // the first critic step (1-based, of the run) with a non-finite loss; 0: none
  double bad_loss;                 // that loss
  std::uint32_t bad_part;          // 1: the critic loss, 2: the actor loss
};

/// Starts an iteration's divergence check (one index).
struct ac_start_kernel {
  actor_critic_device_stats* s;
  RLK_HOST_DEVICE void operator()(std::size_t) const { s->bad_step = 0; }
};
/// Remembers the first non-finite critic (part 1) or actor (part 2) loss (one index).
struct ac_divergence_kernel {
  actor_critic_device_stats* s;
  std::uint64_t step;
  std::uint32_t part;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double l = part == 1 ? s->critic.loss : s->actor.loss;
    if (!(l - l == 0.0) && s->bad_step == 0) {
      s->bad_step = step;
      s->bad_loss = l;
      s->bad_part = part;
    }
  }
};

/// The iteration records of every rank gathered (data-parallel SAC and TD3): the losses are the
/// last rank's (its last part is the batch's last, as in one process), the episodes all ranks',
/// the first diverged gradient step any rank saw; an invalid action on another rank stops this
/// one with a message naming that rank.
inline actor_critic_device_stats gather_actor_critic_stats(communicator& comm, const actor_critic_device_stats& mine,
                                                           const char* who) {
  using R = actor_critic_device_stats;
  return gather_iteration_records(
      comm, mine, who,
      [](R& x) { return std::pair<episode_statistics&, unsigned long long&>(x.step.episodes, x.step.action_flag); },
      [](R& d) { d.bad_step = 0; },
      [](R& d, const R& x) {
        if (x.bad_step != 0 && (d.bad_step == 0 || x.bad_step < d.bad_step)) {
          d.bad_step = x.bad_step;
          d.bad_loss = x.bad_loss;
          d.bad_part = x.bad_part;
        }
      });
}

/// The end of an off-policy iteration, its one host read: the statistics in `stats` (the episodes
/// step_and_store left there, the losses) and the deferred action check (throws invalid_action
/// naming the env and value); throws rlkernels::error, naming `who`, if a loss diverged.
template <class VecEnv, class Stats>
actor_critic_device_stats read_iteration(VecEnv& env, Stats& stats, const char* who,
                                         communicator& comm = default_communicator()) {
  stage_action_flag(env, &stats.data()->step.action_flag);
  failed_steps_into(env, &stats.data()->step.failures);
  actor_critic_device_stats d = stats.get(0);
  if (comm.size() > 1) d = gather_actor_critic_stats(comm, d, who);
  raise_if_flagged(env, d.step.action_flag);
  RLK_EXPECTS(d.bad_step == 0, error, who, ": the ", d.bad_part == 1 ? "critic" : "actor", " loss is ", d.bad_loss,
              " at gradient step ", d.bad_step, " (training diverged)");
  return d;
}

/// The episodes of an iteration's env step.
inline env_step_outcome outcome_of(const actor_critic_device_stats& d) {
  const episode_statistics& ep = d.step.episodes;
  return {ep.count, ep.mean_return * double(ep.count), ep.mean_length * double(ep.count)};
}

/// act()'s argument checks: observations [B, O] with 1 <= B <= max_rows, actions [B, D]; returns B.
inline std::size_t check_act_arguments(std::size_t observations, std::size_t actions, const void* actions_data,
                                       std::size_t observation_size, std::size_t action_size, std::size_t max_rows,
                                       const char* who) {
  RLK_EXPECTS(observations % observation_size == 0 && observations > 0, std::invalid_argument, who, ": observations has ",
              observations, " elements, not a positive multiple of ", observation_size);
  const std::size_t b = observations / observation_size;
  RLK_EXPECTS(b <= max_rows, std::invalid_argument, who, ": ", b, " rows, at most max(num_envs, batch_size) = ", max_rows);
  check_view_size(actions, actions_data, b * action_size, who, "actions");
  return b;
}


}  // namespace detail
}  // namespace rlkernels
