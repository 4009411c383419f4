// rlkernels/algorithms/dqn_config.hpp
// DQN's hyperparameters (dqn_config, CleanRL's defaults, sb3()), the exploration and
// importance-sampling schedules, what an iteration reports (dqn_iteration_stats) and a batch's
// loss (dqn_loss). The trainer is in dqn_trainer.hpp; dqn.hpp includes all of DQN and dqn_preset.
#pragma once

#include "../core/error.hpp"
#include "../losses/dqn.hpp"
#include "../nn/mlp.hpp"
#include "../envs/failed_steps.hpp"
#include "common.hpp"
#include "data_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlkernels {

/// @brief DQN's hyperparameters. The defaults are CleanRL's dqn.py (see dqn_config::sb3() for
/// Stable-Baselines3's); the options beyond it default to off.
///
/// Counting (CleanRL's, generalised to N envs): an iteration steps all N envs once, taking the
/// global steps t, t + 1, ..., t + N - 1 (t = global_step() before it). Every one of those step
/// numbers s counts as CleanRL's `global_step`: after the N transitions are stored, for each s in
/// order, `gradient_steps` updates run when s > learning_starts and s % train_frequency == 0, then
/// the target network is updated when s > learning_starts and s % target_network_frequency == 0.
/// So a run makes the same number of updates per env step whatever N is, and N = 1 is exactly
/// CleanRL's loop. The iteration's exploration rate is epsilon(t).
///
/// Data parallelism (docs/distributed.md): num_envs, buffer_size and batch_size are each rank's;
/// the global steps of an iteration are those of all ranks' envs (R * N of them), so
/// total_timesteps, learning_starts, train_frequency and the exploration schedule count all ranks'
/// steps. The data-parallel and gradient accumulation settings come from data_parallel_settings.
struct dqn_config : data_parallel_settings {
  // ---- collection ----
  std::size_t num_envs = 1;                ///< parallel envs N
  std::uint64_t total_timesteps = 500000;  ///< env steps to train for (all envs together)
  std::size_t buffer_size = 10000;         ///< replay capacity in transitions (rounded up to whole rows of N)
  double start_e = 1.0;                    ///< exploration rate at step 0
  double end_e = 0.05;                     ///< exploration rate from exploration_fraction * total_timesteps on
  double exploration_fraction = 0.5;       ///< fraction of total_timesteps over which epsilon goes linearly to end_e
  std::uint64_t learning_starts = 10000;   ///< no updates at global steps <= this
  // ---- optimisation ----
  double learning_rate = 2.5e-4;        ///< Adam's step size (constant)
  double adam_epsilon = 1e-8;           ///< Adam's epsilon (PyTorch's default, which CleanRL and SB3 keep)
  std::size_t batch_size = 128;         ///< transitions per gradient step
  std::uint64_t train_frequency = 10;   ///< env steps between training phases
  std::size_t gradient_steps = 1;       ///< gradient steps per training phase (SB3's gradient_steps)
  double gamma = 0.99;                  ///< discount
  double tau = 1.0;                     ///< target update: target = tau * online + (1 - tau) * target (1: copy)
  std::uint64_t target_network_frequency = 500;  ///< env steps between target updates
  bool double_q = false;                ///< Double DQN targets (the online network picks a', the target values it)
  int n_step = 1;                       ///< n-step returns (never across an episode end)
  td_loss_kind loss = td_loss_kind::mse;  ///< per-sample TD loss: mse (CleanRL) or huber (SB3's smooth L1)
  double huber_delta = 1.0;             ///< the Huber loss's k (1 = smooth L1)
  double max_grad_norm = 0.0;           ///< clip the gradient's global norm to this (0: off; SB3 uses 10)
  // ---- prioritized replay (Schaul et al. 2016) ----
  bool prioritized = false;       ///< proportional prioritized replay instead of uniform sampling
  double per_alpha = 0.6;         ///< priority exponent
  double per_beta0 = 0.4;         ///< importance-sampling exponent at step 0, annealed linearly to 1 at total_timesteps
  double per_epsilon = 1e-6;      ///< added to |TD error| in priorities
  // ---- keeping the best greedy policy (like SB3's EvalCallback best model) ----
  /// Env steps between greedy evaluations on keep_best_episodes fresh envs (the same seed, derived
  /// from `seed`, every time; one more at the end); the run ends with the Q-network of the best
  /// mean (the first on ties) and its copy as the target network. 0: off (the final network).
  std::uint64_t keep_best_every = 0;
  std::size_t keep_best_episodes = 10;  ///< episodes of each of those evaluations (>= 1)
  // ---- network ----
  std::vector<int> hidden_sizes = {120, 84};         ///< widths of the Q-network's hidden layers
  activation hidden_activation = activation::relu;  ///< after each hidden layer
  // ---- reproducibility ----
  std::uint64_t seed = 1;  ///< seeds the envs, the initial weights, exploration and replay sampling
  // ---- checkpoints (see save_checkpoint) ----
  std::string checkpoint_dir;         ///< where automatic checkpoints go; empty: none
  std::uint64_t checkpoint_every = 0;  ///< iterations between automatic checkpoints (0: off)
  std::size_t checkpoint_keep = 3;     ///< newest automatic checkpoints kept
  bool checkpoint_buffers = true;      ///< include the replay buffer (large) in checkpoints

  /// Stable-Baselines3's DQN defaults where they differ from CleanRL's: lr 1e-4, a 1M buffer,
  /// learning_starts 100, batch 32, train every 4 steps, target copy every 10000 steps, epsilon to
  /// 0.05 over the first 10%, Huber loss, gradient norm 10, 64-64 ReLU network, 1M steps (its
  /// `learn` has no default length; 1M is the zoo's Atari budget).
  static dqn_config sb3() {
    dqn_config c;
    c.total_timesteps = 1000000;
    c.learning_rate = 1e-4;
    c.buffer_size = 1000000;
    c.learning_starts = 100;
    c.batch_size = 32;
    c.train_frequency = 4;
    c.target_network_frequency = 10000;
    c.exploration_fraction = 0.1;
    c.loss = td_loss_kind::huber;
    c.max_grad_norm = 10.0;
    c.hidden_sizes = {64, 64};
    return c;
  }

  /// Rows of the replay ring: buffer_size / num_envs, rounded up.
  std::size_t buffer_rows() const noexcept { return num_envs ? (buffer_size + num_envs - 1) / num_envs : 0; }

  /// @brief The exploration rate at global step `step`, CleanRL's linear_schedule:
  /// max(start_e + (end_e - start_e) / duration * step, end_e) with duration =
  /// exploration_fraction * total_timesteps (min instead of max when end_e > start_e; end_e when
  /// the duration is 0).
  double epsilon(std::uint64_t step) const noexcept {
    const double duration = exploration_fraction * double(total_timesteps);
    if (!(duration > 0)) return end_e;
    const double slope = (end_e - start_e) / duration;
    const double e = slope * double(step) + start_e;
    return start_e >= end_e ? std::max(e, end_e) : std::min(e, end_e);
  }

  /// @brief The importance-sampling exponent of prioritized replay at global step `step`:
  /// per_beta0 + (1 - per_beta0) * min(1, step / total_timesteps).
  double beta(std::uint64_t step) const noexcept {
    const double f = total_timesteps ? std::min(1.0, double(step) / double(total_timesteps)) : 1.0;
    return per_beta0 + (1.0 - per_beta0) * f;
  }

  /// @brief "key=value\n" for every field except the checkpoint_* ones (the keep_best_* ones only
  /// when keep_best_every is on, so that earlier configs' text is unchanged): the constant a
  /// checkpoint must match to be loaded.
  std::string hyperparameters() const {
    detail::hyperparameter_lines lines;
    lines
        .add("algorithm", "dqn")
        .add("num_envs", num_envs)
        .add("total_timesteps", total_timesteps)
        .add("buffer_size", buffer_size)
        .add("start_e", start_e)
        .add("end_e", end_e)
        .add("exploration_fraction", exploration_fraction)
        .add("learning_starts", learning_starts)
        .add("learning_rate", learning_rate)
        .add("adam_epsilon", adam_epsilon)
        .add("batch_size", batch_size)
        .add("train_frequency", train_frequency)
        .add("gradient_steps", gradient_steps)
        .add("gamma", gamma)
        .add("tau", tau)
        .add("target_network_frequency", target_network_frequency)
        .add("double_q", double_q)
        .add("n_step", n_step)
        .add("loss", loss == td_loss_kind::mse ? "mse" : "huber")
        .add("huber_delta", huber_delta)
        .add("max_grad_norm", max_grad_norm)
        .add("prioritized", prioritized)
        .add("per_alpha", per_alpha)
        .add("per_beta0", per_beta0)
        .add("per_epsilon", per_epsilon)
        .add("hidden_sizes", hidden_sizes)
        .add("hidden_activation", activation_name(hidden_activation))
        .add("seed", seed);
    if (keep_best_every) lines.add("keep_best_every", keep_best_every).add("keep_best_episodes", keep_best_episodes);
    return lines.str() + parallel_lines();
  }

  /// @brief Throws std::invalid_argument naming the first bad field.
  void validate() const {
    constexpr const char* who = "rlkernels::dqn_config";
    auto unit = [](double x) { return x >= 0 && x <= 1; };
    RLK_EXPECTS(num_envs >= 1, std::invalid_argument, who, ": num_envs must be >= 1");
    RLK_EXPECTS(buffer_size >= 1, std::invalid_argument, who, ": buffer_size must be >= 1");
    RLK_EXPECTS(unit(start_e), std::invalid_argument, who, ": start_e must be in [0, 1], got ", start_e);
    RLK_EXPECTS(unit(end_e), std::invalid_argument, who, ": end_e must be in [0, 1], got ", end_e);
    RLK_EXPECTS(std::isfinite(exploration_fraction) && exploration_fraction >= 0, std::invalid_argument, who,
                ": exploration_fraction must be finite and >= 0, got ", exploration_fraction);
    RLK_EXPECTS(std::isfinite(learning_rate) && learning_rate >= 0, std::invalid_argument, who,
                ": learning_rate must be finite and >= 0, got ", learning_rate);
    RLK_EXPECTS(adam_epsilon > 0 && std::isfinite(adam_epsilon), std::invalid_argument, who,
                ": adam_epsilon must be finite and > 0, got ", adam_epsilon);
    RLK_EXPECTS(batch_size >= 1, std::invalid_argument, who, ": batch_size must be >= 1");
    RLK_EXPECTS(train_frequency >= 1, std::invalid_argument, who, ": train_frequency must be >= 1");
    RLK_EXPECTS(gradient_steps >= 1, std::invalid_argument, who, ": gradient_steps must be >= 1");
    RLK_EXPECTS(unit(gamma), std::invalid_argument, who, ": gamma must be in [0, 1], got ", gamma);
    RLK_EXPECTS(tau > 0 && tau <= 1, std::invalid_argument, who, ": tau must be in (0, 1], got ", tau);
    RLK_EXPECTS(target_network_frequency >= 1, std::invalid_argument, who, ": target_network_frequency must be >= 1");
    RLK_EXPECTS(n_step >= 1, std::invalid_argument, who, ": n_step must be >= 1, got ", n_step);
    RLK_EXPECTS(loss == td_loss_kind::mse || loss == td_loss_kind::huber, std::invalid_argument, who,
                ": loss is not a td_loss_kind value: ", int(loss));
    RLK_EXPECTS(std::isfinite(huber_delta) && huber_delta > 0, std::invalid_argument, who,
                ": huber_delta must be finite and > 0, got ", huber_delta);
    RLK_EXPECTS(std::isfinite(max_grad_norm) && max_grad_norm >= 0, std::invalid_argument, who,
                ": max_grad_norm must be finite and >= 0 (0 disables clipping), got ", max_grad_norm);
    RLK_EXPECTS(std::isfinite(per_alpha) && per_alpha >= 0, std::invalid_argument, who,
                ": per_alpha must be finite and >= 0, got ", per_alpha);
    RLK_EXPECTS(unit(per_beta0), std::invalid_argument, who, ": per_beta0 must be in [0, 1], got ", per_beta0);
    RLK_EXPECTS(std::isfinite(per_epsilon) && per_epsilon > 0, std::invalid_argument, who,
                ": per_epsilon must be finite and > 0, got ", per_epsilon);
    RLK_EXPECTS(keep_best_every == 0 || keep_best_episodes >= 1, std::invalid_argument, who,
                ": keep_best_episodes must be >= 1 when keep_best_every is on");
    RLK_EXPECTS(!hidden_sizes.empty(), std::invalid_argument, who, ": hidden_sizes is empty (give at least one layer)");
    for (int h : hidden_sizes) RLK_EXPECTS(h >= 1, std::invalid_argument, who, ": hidden size ", h, " must be >= 1");
    validate_parallel(num_envs, batch_size, "batch", who);
    RLK_EXPECTS(!prioritized || gradient_parts() == 1, std::invalid_argument, who,
                ": prioritized replay samples from one sum tree over all envs; it cannot be split into env_shards or "
                "gradient_accumulation_steps (use uniform replay)");
    RLK_EXPECTS(checkpoint_every == 0 || !checkpoint_dir.empty(), std::invalid_argument, who,
                ": checkpoint_every is ", checkpoint_every, " but checkpoint_dir is empty");
    RLK_EXPECTS(checkpoint_keep >= 1, std::invalid_argument, who, ": checkpoint_keep must be >= 1");
  }
};

/// @brief What one DQN iteration (one step of every env and the updates that became due) did.
/// The loss fields are the last gradient step's (0 when none ran).
struct dqn_iteration_stats {
  std::uint64_t iteration = 0;       ///< 1-based
  std::uint64_t global_step = 0;     ///< env steps so far (all envs)
  std::uint64_t episodes = 0;        ///< episodes completed in this iteration
  double episode_return_sum = 0;     ///< sum of their undiscounted returns
  double episode_length_sum = 0;     ///< sum of their lengths
  std::uint64_t gradient_steps = 0;  ///< gradient steps taken in this iteration
  std::uint64_t target_updates = 0;  ///< target-network updates in this iteration
  double q_loss = 0;                 ///< TD loss of the last gradient step
  double q_mean = 0;                 ///< mean Q(s, a) of the taken actions in its batch
  double mean_abs_td_error = 0;      ///< mean |y - Q(s, a)| in its batch
  double grad_norm = 0;              ///< its gradient norm before clipping (0 when max_grad_norm is 0)
  double epsilon = 0;                ///< exploration rate of this iteration's actions
  double beta = 0;                   ///< prioritized replay's importance exponent (0 without it)
  double learning_rate = 0;          ///< Adam's step size
  /// The env steps of this iteration (all ranks) that the physics could not take: each ended its
  /// episode as truncated (docs/physics.md, "When a step fails"); zero for envs that never fail a step.
  failed_step_counts failed_steps;
};

/// @brief DQN's loss on one batch (host scalars).
struct dqn_loss {
  double loss = 0;               ///< (1/B) sum_i w_i l(Q(s_i, a_i) - y_i)
  double mean_abs_td_error = 0;  ///< (1/B) sum_i |y_i - Q(s_i, a_i)|
  double q_mean = 0;             ///< (1/B) sum_i Q(s_i, a_i)
};

}  // namespace rlkernels
