// rlkernels/algorithms/ppo_config.hpp
// PPO's hyperparameters (ppo_config, CleanRL's defaults), what an iteration reports
// (ppo_iteration_stats) and its loss by parts (ppo_loss). The trainer is in ppo_trainer.hpp;
// ppo.hpp includes all of PPO.
#pragma once

#include "../core/error.hpp"
#include "../envs/failed_steps.hpp"
#include "../nn/mlp.hpp"
#include "common.hpp"
#include "data_parallel.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlkernels {

/// @brief How PPO measures the KL divergence between the rollout's policy and the updated one
/// (the approx_kl it reports, target_kl's early stop and the KL-adaptive learning rate).
enum class ppo_kl_estimator {
  /// Schulman's k3 estimate of KL(old || new) from the log-probability ratio r of each row's
  /// action: mean((r - 1) - log r) (CleanRL's approx_kl). Any action space.
  k3,
  /// The exact KL(new || old) of the two diagonal Gaussians at each row's observation, summed over
  /// the action dimensions, then averaged over the rows: rl_games' policy_kl, without its 1e-5
  /// guards. Continuous actions only; the trainer keeps the rollout's means ([T, N, action_size])
  /// and log-stds for it.
  analytic
};

/// "k3" or "analytic".
inline const char* kl_estimator_name(ppo_kl_estimator e) noexcept {
  return e == ppo_kl_estimator::analytic ? "analytic" : "k3";
}

/// @brief PPO's hyperparameters. The defaults are CleanRL's ppo.py (discrete actions); see
/// ppo_config::cleanrl_continuous() for ppo_continuous_action.py's. The data-parallel and gradient
/// accumulation settings come from data_parallel_settings (a batch there is one minibatch).
struct ppo_config : data_parallel_settings {
  // ---- rollout ----
  std::size_t num_envs = 4;                ///< parallel envs N
  std::size_t num_steps = 128;             ///< steps per env per rollout T (batch = N * T)
  std::uint64_t total_timesteps = 500000;  ///< env steps to train for (rounded up to whole iterations)
  // ---- optimisation ----
  double learning_rate = 2.5e-4;     ///< Adam's step size at the start
  bool anneal_lr = true;             ///< linearly to 0 over the iterations (CleanRL)
  /// KL-adaptive learning rate (rl_games' and RSL-RL's "adaptive" schedule; 0: off): after each
  /// epoch, the learning rate is divided by 1.5 where the epoch's KL exceeds twice this target and
  /// multiplied by 1.5 where it is below half of it, within [adaptive_lr_min, adaptive_lr_max].
  /// The epoch's KL is the mean of its minibatches' KLs, each over the whole minibatch (every env
  /// shard, micro-batch and rank), so any layout adapts on the same quantity up to rounding. It
  /// starts at learning_rate; not with anneal_lr.
  double adaptive_lr_kl = 0.0;
  double adaptive_lr_min = 1e-6;     ///< lower bound of the adaptive learning rate
  double adaptive_lr_max = 1e-2;     ///< upper bound of the adaptive learning rate
  double adam_epsilon = 1e-5;        ///< Adam's epsilon (CleanRL: 1e-5)
  std::size_t num_minibatches = 4;   ///< minibatches per epoch (minibatch = N * T / this)
  std::size_t update_epochs = 4;     ///< passes over the rollout per iteration
  double gamma = 0.99;               ///< discount
  double gae_lambda = 0.95;          ///< GAE lambda
  bool normalize_advantages = true;  ///< per minibatch (ddof 1)
  double clip_coef = 0.2;            ///< policy ratio clip epsilon
  bool clip_value_loss = true;       ///< CleanRL's clipped value loss (max of clipped and unclipped)
  double ent_coef = 0.01;            ///< entropy bonus weight
  double vf_coef = 0.5;              ///< value loss weight
  double max_grad_norm = 0.5;        ///< global gradient-norm clip over actor, critic and log-std
  /// Stop the epochs of an iteration once the KL of an epoch's last minibatch (over the whole
  /// minibatch: every shard, micro-batch and rank; CleanRL's check) exceeds it (0: never).
  double target_kl = 0.0;
  ppo_kl_estimator kl_estimator = ppo_kl_estimator::k3;  ///< how the KL is measured (analytic: continuous actions)
  // ---- networks ----
  std::vector<int> hidden_sizes = {64, 64};          ///< widths of the hidden layers (actor and critic alike)
  activation hidden_activation = activation::tanh;  ///< after each hidden layer
  double init_log_std = 0.0;                         ///< continuous actions: initial log std (state-independent)
  // ---- normalisation (CleanRL's continuous script wraps the env in both) ----
  bool normalize_observations = false;  ///< running mean/std of observations, clipped to +-observation_clip
  double observation_clip = 10.0;       ///< bound of normalised observations
  bool normalize_rewards = false;       ///< divide rewards by the running std of the discounted return
  double reward_clip = 10.0;            ///< bound of normalised rewards
  // ---- reproducibility ----
  std::uint64_t seed = 1;  ///< seeds the envs, the initial weights, the action draws and the shuffles
  // ---- checkpoints (docs/checkpoints.md) ----
  std::string checkpoint_dir;           ///< directory of automatic checkpoints; empty: none
  std::uint64_t checkpoint_every = 0;   ///< iterations between automatic checkpoints (0: off)
  std::size_t checkpoint_keep = 3;      ///< newest automatic checkpoints kept, >= 1

  /// CleanRL's ppo_continuous_action.py defaults (1 env, 2048 steps, 32 minibatches, 10 epochs,
  /// lr 3e-4, no entropy bonus, observation and reward normalisation).
  static ppo_config cleanrl_continuous() {
    ppo_config c;
    c.num_envs = 1;
    c.num_steps = 2048;
    c.total_timesteps = 1000000;
    c.learning_rate = 3e-4;
    c.num_minibatches = 32;
    c.update_epochs = 10;
    c.ent_coef = 0.0;
    c.normalize_observations = true;
    c.normalize_rewards = true;
    return c;
  }
  /// N * T.
  std::size_t batch_size() const noexcept { return num_envs * num_steps; }
  /// N * T / num_minibatches.
  std::size_t minibatch_size() const noexcept { return num_minibatches ? batch_size() / num_minibatches : 0; }
  /// Iterations of N * T steps to cover total_timesteps.
  std::uint64_t num_iterations() const noexcept {
    const std::uint64_t b = batch_size();
    return b ? (total_timesteps + b - 1) / b : 0;
  }
  /// @brief Every field except the checkpoint_* ones as "key=value\n" lines (doubles with 17
  /// significant digits): what a checkpoint records and a resumed run must match.
  std::string hyperparameters() const {
    return detail::hyperparameter_lines{}
        .add("algorithm", "ppo")
        .add("num_envs", num_envs)
        .add("num_steps", num_steps)
        .add("total_timesteps", total_timesteps)
        .add("learning_rate", learning_rate)
        .add("anneal_lr", anneal_lr)
        .add("adam_epsilon", adam_epsilon)
        .add("num_minibatches", num_minibatches)
        .add("update_epochs", update_epochs)
        .add("gamma", gamma)
        .add("gae_lambda", gae_lambda)
        .add("normalize_advantages", normalize_advantages)
        .add("clip_coef", clip_coef)
        .add("clip_value_loss", clip_value_loss)
        .add("ent_coef", ent_coef)
        .add("vf_coef", vf_coef)
        .add("max_grad_norm", max_grad_norm)
        .add("target_kl", target_kl)
        .add("hidden_sizes", hidden_sizes)
        .add("hidden_activation", activation_name(hidden_activation))
        .add("init_log_std", init_log_std)
        .add("normalize_observations", normalize_observations)
        .add("observation_clip", observation_clip)
        .add("normalize_rewards", normalize_rewards)
        .add("reward_clip", reward_clip)
        .add("seed", seed)
        .str() + adaptive_lines() + kl_lines() + parallel_lines();
  }
  /// The KL estimator's line, only when it is not the default k3 (so checkpoints written before it
  /// existed still resume).
  std::string kl_lines() const {
    if (kl_estimator == ppo_kl_estimator::k3) return {};
    return detail::hyperparameter_lines{}.add("kl_estimator", kl_estimator_name(kl_estimator)).str();
  }
  /// The adaptive learning rate's lines, only when it is on (so checkpoints written before it
  /// existed still resume).
  std::string adaptive_lines() const {
    if (!(adaptive_lr_kl > 0)) return {};
    return detail::hyperparameter_lines{}
        .add("adaptive_lr_kl", adaptive_lr_kl)
        .add("adaptive_lr_min", adaptive_lr_min)
        .add("adaptive_lr_max", adaptive_lr_max)
        .str();
  }
  /// @brief Throws std::invalid_argument naming the first bad field.
  void validate() const {
    constexpr const char* who = "rlkernels::ppo_config";
    RLK_EXPECTS(num_envs >= 1, std::invalid_argument, who, ": num_envs must be >= 1");
    RLK_EXPECTS(num_steps >= 1, std::invalid_argument, who, ": num_steps must be >= 1");
    RLK_EXPECTS(num_minibatches >= 1 && num_minibatches <= batch_size(), std::invalid_argument, who,
                ": num_minibatches must be in [1, num_envs * num_steps = ", batch_size(), "], got ", num_minibatches);
    RLK_EXPECTS(batch_size() % num_minibatches == 0, std::invalid_argument, who, ": num_envs * num_steps (",
                batch_size(), ") must be a multiple of num_minibatches (", num_minibatches, ")");
    RLK_EXPECTS(!normalize_advantages || minibatch_size() >= 2, std::invalid_argument, who,
                ": normalize_advantages needs minibatches of at least 2 samples");
    validate_parallel(num_envs, minibatch_size(), "minibatch", who);
    RLK_EXPECTS(update_epochs >= 1, std::invalid_argument, who, ": update_epochs must be >= 1");
    RLK_EXPECTS(std::isfinite(learning_rate) && learning_rate >= 0, std::invalid_argument, who,
                ": learning_rate must be finite and >= 0, got ", learning_rate);
    RLK_EXPECTS(gamma >= 0 && gamma <= 1, std::invalid_argument, who, ": gamma must be in [0, 1], got ", gamma);
    RLK_EXPECTS(gae_lambda >= 0 && gae_lambda <= 1, std::invalid_argument, who, ": gae_lambda must be in [0, 1], got ",
                gae_lambda);
    RLK_EXPECTS(clip_coef > 0 && clip_coef < 1, std::invalid_argument, who, ": clip_coef must be in (0, 1), got ",
                clip_coef);
    RLK_EXPECTS(std::isfinite(ent_coef) && ent_coef >= 0, std::invalid_argument, who, ": ent_coef must be >= 0, got ",
                ent_coef);
    RLK_EXPECTS(std::isfinite(vf_coef) && vf_coef >= 0, std::invalid_argument, who, ": vf_coef must be >= 0, got ",
                vf_coef);
    RLK_EXPECTS(max_grad_norm > 0, std::invalid_argument, who, ": max_grad_norm must be > 0, got ", max_grad_norm);
    RLK_EXPECTS(target_kl >= 0, std::invalid_argument, who, ": target_kl must be >= 0 (0 disables it), got ", target_kl);
    RLK_EXPECTS(std::isfinite(adaptive_lr_kl) && adaptive_lr_kl >= 0, std::invalid_argument, who,
                ": adaptive_lr_kl must be finite and >= 0 (0 disables it), got ", adaptive_lr_kl);
    RLK_EXPECTS(!(adaptive_lr_kl > 0 && anneal_lr), std::invalid_argument, who,
                ": adaptive_lr_kl and anneal_lr are two learning-rate schedules; turn one off");
    RLK_EXPECTS(!(adaptive_lr_kl > 0) || (adaptive_lr_min > 0 && adaptive_lr_min <= learning_rate &&
                                          learning_rate <= adaptive_lr_max && std::isfinite(adaptive_lr_max)),
                std::invalid_argument, who, ": with adaptive_lr_kl, 0 < adaptive_lr_min (", adaptive_lr_min,
                ") <= learning_rate (", learning_rate, ") <= adaptive_lr_max (", adaptive_lr_max, ") must hold");
    RLK_EXPECTS(adam_epsilon > 0, std::invalid_argument, who, ": adam_epsilon must be > 0, got ", adam_epsilon);
    RLK_EXPECTS(!hidden_sizes.empty(), std::invalid_argument, who, ": hidden_sizes is empty (give at least one layer)");
    for (int h : hidden_sizes) RLK_EXPECTS(h >= 1, std::invalid_argument, who, ": hidden size ", h, " must be >= 1");
    RLK_EXPECTS(std::isfinite(init_log_std), std::invalid_argument, who, ": init_log_std must be finite");
    RLK_EXPECTS(observation_clip > 0 && reward_clip > 0, std::invalid_argument, who,
                ": observation_clip and reward_clip must be > 0");
    RLK_EXPECTS(checkpoint_every == 0 || !checkpoint_dir.empty(), std::invalid_argument, who,
                ": checkpoint_every is ", checkpoint_every, " but checkpoint_dir is empty");
    RLK_EXPECTS(checkpoint_keep >= 1, std::invalid_argument, who, ": checkpoint_keep must be >= 1, got ",
                checkpoint_keep);
  }
};

/// @brief What one PPO iteration (a rollout and its update) did.
struct ppo_iteration_stats {
  std::uint64_t iteration = 0;        ///< 1-based
  std::uint64_t global_step = 0;      ///< env steps so far (all envs)
  std::uint64_t episodes = 0;         ///< episodes completed in this iteration's rollout
  double episode_return_sum = 0;      ///< sum of their undiscounted returns (raw rewards)
  double episode_length_sum = 0;      ///< sum of their lengths
  double learning_rate = 0;           ///< the learning rate used
  double policy_loss = 0;             ///< last minibatch's clipped surrogate loss
  double value_loss = 0;              ///< last minibatch's value loss (with its 0.5 factor)
  double entropy = 0;                 ///< last minibatch's mean entropy
  /// The KL (config().kl_estimator) of the last epoch's last minibatch, over the whole minibatch.
  double approx_kl = 0;
  /// The last epoch's KL: the mean of minibatch_kls (what the KL-adaptive learning rate used).
  double epoch_kl = 0;
  /// The KL of each minibatch of the last epoch, in order, each over the whole minibatch (every
  /// env shard, micro-batch and rank), measured before the minibatch's own optimiser step. Filled
  /// when adaptive_lr_kl > 0 or target_kl > 0 (the trainer reads them after every epoch then);
  /// empty otherwise, to keep the iteration at one host read.
  std::vector<double> minibatch_kls;
  double clip_fraction = 0;           ///< mean over all minibatches of the fraction of clipped ratios
  double grad_norm = 0;               ///< last minibatch's global gradient norm before clipping
  std::uint64_t gradient_steps = 0;   ///< optimiser steps taken in this iteration
  /// The rollout's env steps (all ranks) that the physics could not take: each ended its episode
  /// as truncated (docs/physics.md, "When a step fails"); zero for envs that never fail a step.
  failed_step_counts failed_steps;
  double rollout_seconds = 0;         ///< wall-clock of the rollout (including GAE)
  double update_seconds = 0;          ///< wall-clock of the update epochs
};

/// @brief PPO's loss on one minibatch, by parts (host scalars).
struct ppo_loss {
  double policy_loss = 0;    ///< clipped surrogate
  double value_loss = 0;     ///< value loss (0.5 factor included)
  double entropy = 0;        ///< mean entropy of the policy
  double total = 0;          ///< policy_loss - ent_coef * entropy + vf_coef * value_loss
  double approx_kl = 0;      ///< k3 estimate of KL(old || new)
  double clip_fraction = 0;  ///< fraction of clipped ratios
};

}  // namespace rlkernels
