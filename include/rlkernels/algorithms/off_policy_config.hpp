// rlkernels/algorithms/off_policy_config.hpp
// The hyperparameters that SAC and TD3 share: off_policy_config, the base of sac_config and
// td3_config (replay data, optimisation, networks, seed and checkpoint settings).
#pragma once

#include "../nn/mlp.hpp"
#include "common.hpp"
#include "data_parallel.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rlkernels {

/// @brief The hyperparameters that sac_config and td3_config share, with CleanRL's defaults
/// where its SAC and TD3 agree; each derived config sets its own learning_starts and q_lr. In a
/// data-parallel run (docs/distributed.md) num_envs, buffer_size and batch_size are each rank's,
/// total_timesteps and learning_starts count the env steps of all ranks together; the
/// data-parallel and gradient accumulation settings come from data_parallel_settings.
struct off_policy_config : data_parallel_settings {
  // ---- data ----
  std::size_t num_envs = 1;                 ///< parallel envs N (one iteration = one step of each)
  std::uint64_t total_timesteps = 1000000;  ///< env steps to train for (all envs)
  std::size_t buffer_size = 1000000;        ///< replay capacity in transitions (rounded up to whole steps of N)
  /// Env steps before the first update, taken with uniform random actions (unless random_warmup
  /// is false). CleanRL's defaults: SAC 5000, TD3 25000.
  std::uint64_t learning_starts;
  /// true: uniform random actions during learning_starts (SB3, CleanRL); false: the initial
  /// policy (with its exploration) acts from the first step (RLtools).
  bool random_warmup = true;
  // ---- optimisation ----
  std::size_t batch_size = 256;      ///< transitions per gradient step
  std::size_t gradient_steps = 1;    ///< gradient steps per training iteration (after learning_starts)
  /// Iterations per training iteration: every train_frequency-th iteration takes the gradient
  /// steps (SB3's train_freq); 1: every iteration.
  std::uint64_t train_frequency = 1;
  double gamma = 0.99;               ///< discount
  double tau = 0.005;                ///< Polyak weight of the target networks' update
  double policy_lr = 3e-4;           ///< Adam step size of the actor
  double q_lr;                       ///< Adam step size of the critics (CleanRL's defaults: SAC 1e-3, TD3 3e-4)
  double adam_epsilon = 1e-8;        ///< Adam's epsilon (PyTorch's default)
  /// Decoupled (AdamW) weight decay of the actor's and the critics' optimisers, per step
  /// p -= lr * weight_decay * p (SAC's temperature is not decayed); 0: plain Adam.
  double weight_decay = 0.0;
  /// The actor's delay in critic steps: TD3 steps the actor (and updates the targets) on every
  /// policy_frequency-th critic step (its delay d); SAC then steps the actor (and temperature)
  /// policy_frequency times in a row (CleanRL's delayed update, which keeps one actor step per
  /// critic step on average).
  std::uint64_t policy_frequency = 2;
  /// Env steps before the first actor step (TD3: and actor target update; SAC: and temperature
  /// step); 0: learning_starts, with the critics (RLtools' actor warm-up when larger).
  std::uint64_t actor_learning_starts = 0;
  double critic_loss_scale = 1.0;    ///< 1: mse(Q1) + mse(Q2) (CleanRL, SB3's TD3); 0.5: SB3's SAC
  // ---- networks ----
  std::vector<int> hidden_sizes = {256, 256};        ///< hidden widths of the actor and of each critic
  activation hidden_activation = activation::relu;  ///< after each hidden layer
  // ---- reproducibility ----
  std::uint64_t seed = 1;  ///< seeds envs, initial weights, actions, batches and noise
  // ---- checkpoints (not part of hyperparameters()) ----
  std::string checkpoint_dir;          ///< directory of automatic checkpoints (empty: none)
  std::uint64_t checkpoint_every = 0;  ///< iterations between automatic checkpoints (0: none)
  std::size_t checkpoint_keep = 3;     ///< newest automatic checkpoints kept
  bool checkpoint_buffers = true;      ///< include the replay buffer in checkpoints (exact resume)

  /// Replay ring rows: ceil(buffer_size / num_envs).
  std::size_t buffer_steps() const noexcept { return num_envs ? (buffer_size + num_envs - 1) / num_envs : 0; }
  /// Iterations (steps of all N envs) to cover total_timesteps.
  std::uint64_t num_iterations() const noexcept {
    return num_envs ? (total_timesteps + num_envs - 1) / num_envs : 0;
  }

 protected:
  /// Only as the base of sac_config and td3_config, which give their own defaults.
  off_policy_config(std::uint64_t default_learning_starts, double default_q_lr)
      : learning_starts(default_learning_starts), q_lr(default_q_lr) {}

  /// The first lines of hyperparameters(), alike in SAC and TD3: the algorithm's name, then
  /// num_envs, total_timesteps, buffer_size and learning_starts.
  detail::hyperparameter_lines data_lines(const char* algorithm) const {
    detail::hyperparameter_lines lines;
    lines.add("algorithm", algorithm)
        .add("num_envs", num_envs)
        .add("total_timesteps", total_timesteps)
        .add("buffer_size", buffer_size)
        .add("learning_starts", learning_starts);
    return lines;
  }
};

}  // namespace rlkernels
