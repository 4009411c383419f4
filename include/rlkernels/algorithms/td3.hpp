// rlkernels/algorithms/td3.hpp
// Twin Delayed DDPG (Fujimoto et al. 2018): a deterministic tanh actor, twin critics, target
// policy smoothing and delayed actor/target updates, as CleanRL's td3_continuous_action.py
// computes it, composed of public rlkernels pieces: vec_env, replay_buffer, the TD3 losses, MLPs,
// Adam and polyak_update. Read `iterate()` (off_policy_trainer.hpp, shared with SAC),
// `policy_actions()` and `update()` top to bottom to see one step and one gradient step.
#pragma once

#include "../buffers/replay_buffer.hpp"
#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/polyak.hpp"
#include "../losses/td3.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"
#include "actor_critic.hpp"
#include "data_parallel.hpp"
#include "off_policy_config.hpp"
#include "off_policy_trainer.hpp"
#include "trainer_core.hpp"
#include "common.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief TD3's hyperparameters: those it shares with SAC (off_policy_config: data, optimisation,
/// networks, seed, checkpoints) and its own. The defaults are CleanRL's td3_continuous_action.py
/// (noise scales are fractions of the action range's half-width, as CleanRL's `* action_scale`);
/// see td3_preset() for tuned per-env settings. random_warmup, train_frequency, weight_decay
/// and actor_learning_starts, once TD3's own, are off_policy_config's (SAC has them too).
struct td3_config : off_policy_config {
  std::uint64_t critic_target_frequency = 0;  ///< critic steps per Polyak update of the critics' targets; 0: with the actor's, every policy_frequency-th (the TD3 paper, SB3); 1: every critic step (RLtools)
  double policy_noise = 0.2;         ///< std of the target policy smoothing noise
  double noise_clip = 0.5;           ///< bound of the smoothing noise
  double exploration_noise = 0.1;    ///< std of the Gaussian exploration noise on the actor's actions
  double actor_noise = 0.0;          ///< std of Gaussian noise on mu(s) in the actor's loss, -mean Q1(s, clip(mu(s) + noise)) (RLtools' td3_sampling layer: its exploration noise); 0: -mean Q1(s, mu(s))

  /// CleanRL's defaults: 25000 warm-up steps, critics' learning rate 3e-4.
  td3_config() : off_policy_config(/*default_learning_starts=*/25000, /*default_q_lr=*/3e-4) {}

  /// "key=value" lines of every hyperparameter (not the checkpoint settings), as checkpoints record them.
  std::string hyperparameters() const {
    return data_lines("td3")
        .add("random_warmup", random_warmup ? 1 : 0)
        .add("batch_size", batch_size)
        .add("gradient_steps", gradient_steps)
        .add("train_frequency", train_frequency)
        .add("gamma", gamma)
        .add("tau", tau)
        .add("policy_lr", policy_lr)
        .add("q_lr", q_lr)
        .add("adam_epsilon", adam_epsilon)
        .add("weight_decay", weight_decay)
        .add("policy_frequency", policy_frequency)
        .add("critic_target_frequency", critic_target_frequency)
        .add("actor_learning_starts", actor_learning_starts)
        .add("policy_noise", policy_noise)
        .add("noise_clip", noise_clip)
        .add("exploration_noise", exploration_noise)
        .add("actor_noise", actor_noise)
        .add("critic_loss_scale", critic_loss_scale)
        .add("hidden_sizes", hidden_sizes)
        .add("hidden_activation", activation_name(hidden_activation))
        .add("seed", seed)
        .str() + parallel_lines();
  }
  /// @brief Throws std::invalid_argument naming the first bad field.
  void validate() const {
    constexpr const char* who = "rlkernels::td3_config";
    detail::validate_actor_critic_config(*this, who);
    RLK_EXPECTS(std::isfinite(policy_noise) && policy_noise >= 0, std::invalid_argument, who,
                ": policy_noise must be finite and >= 0, got ", policy_noise);
    RLK_EXPECTS(std::isfinite(noise_clip) && noise_clip >= 0, std::invalid_argument, who,
                ": noise_clip must be finite and >= 0, got ", noise_clip);
    RLK_EXPECTS(std::isfinite(exploration_noise) && exploration_noise >= 0, std::invalid_argument, who,
                ": exploration_noise must be finite and >= 0, got ", exploration_noise);
    RLK_EXPECTS(std::isfinite(actor_noise) && actor_noise >= 0, std::invalid_argument, who,
                ": actor_noise must be finite and >= 0, got ", actor_noise);
  }
};

/// @brief What one TD3 iteration (one step of every env, then the gradient steps due) did.
struct td3_iteration_stats {
  std::uint64_t iteration = 0;       ///< 1-based
  std::uint64_t global_step = 0;     ///< env steps so far (all envs)
  std::uint64_t episodes = 0;        ///< episodes completed in this iteration
  double episode_return_sum = 0;     ///< sum of their returns
  double episode_length_sum = 0;     ///< sum of their lengths
  std::uint64_t gradient_steps = 0;  ///< critic steps taken in this iteration
  double critic_loss = 0;            ///< last critic step's scale * (mse(Q1) + mse(Q2))
  double actor_loss = 0;             ///< last actor step's -mean Q1(s, mu(s))
  double seconds = 0;                ///< wall-clock of the iteration
  /// The env steps of this iteration (all ranks) that the physics could not take: each ended its
  /// episode as truncated (docs/physics.md, "When a step fails"); zero for envs that never fail a step.
  failed_step_counts failed_steps;
};

/// @brief A TD3 agent and its training loop for a continuous-action rlkernels environment `Env`
/// on `Backend`: a deterministic actor mu(s) in [-1, 1]^D (tanh output, mapped linearly to the
/// env's bounds), two critics Q(s, a) and targets of all three. Networks start from PyTorch's
/// default Linear initialisation, as in CleanRL.
///
///     rlkernels::td3<rlkernels::pendulum<float>, rlkernels::serial_backend> agent(rlkernels::serial, config);
///     while (!agent.done()) agent.iterate();
///
/// Truncation bootstraps through the stored final observation; a run is the same on serial and
/// OpenMP (any thread count) for a given config and seed. The iteration, evaluation, envs,
/// replay buffer and critics come from off_policy_trainer, the counters and checkpoints from
/// trainer_core.
template <class Env, class Backend>
class td3 : public off_policy_trainer<td3<Env, Backend>, Env, Backend, td3_config> {
  static_assert(Env::action_space == action_kind::continuous,
                "rlkernels::td3: TD3 needs a continuous action space (use dqn or ppo for discrete actions)");
  using base = off_policy_trainer<td3<Env, Backend>, Env, Backend, td3_config>;
  using core = trainer_core<td3<Env, Backend>, td3_config, Backend>;
  friend base;
  friend core;

 public:
  using typename base::T;
  using typename base::batch_type;
  using typename base::env_type;
  using base::action_size;
  using base::observation_size;
  /// What iterate() returns.
  using iteration_stats = td3_iteration_stats;
  /// The policy is the actor alone, mu(s) in [-1, 1]^D (save_policy() writes it with the "rescale" map).
  static constexpr bool deterministic_actor = true;

  /// @brief Builds envs, networks, optimisers and the replay buffer; with a communicator of R > 1
  /// ranks (every rank constructs its agent with the same config), this rank's envs are
  /// rank * num_envs .. and the parameters are rank 0's.
  /// @param backend where the envs, networks and buffers live and run (serial, openmp or a cuda_backend)
  /// @param config the hyperparameters; validated here (a bad value throws std::invalid_argument naming it)
  /// @param env_params the envs' parameters (default: the env's defaults)
  /// @param comm the job's ranks (default: this process alone); it must outlive the agent
  /// @throw std::invalid_argument on a bad config (see td3_config::validate), or if the ranks'
  ///        configs differ or env_shards > 1 with R > 1; out_of_memory; distributed_error
  td3(Backend backend, td3_config config, typename Env::Params env_params = {},
      communicator& comm = default_communicator())
      : base(backend, checked(std::move(config)), env_params, comm, "td3", action_size, activation::tanh),
        actor_target_(backend, this->sizes(observation_size, action_size), config_.hidden_activation, activation::tanh),
        target_actor_ws_(actor_target_, this->part_rows()),
        next_actions_(backend, this->part_rows() * std::size_t(action_size)),
        grad_in_(backend, this->part_rows() * std::size_t(q_inputs)),
        grad_actions_(backend, this->part_rows() * std::size_t(action_size)) {
    this->initialize_and_join();
    actor_target_.copy_parameters_from(actor_);
  }

  /// The deterministic policy mu(s) in [-1, 1]^D.
  mlp<T, Backend>& actor() noexcept { return actor_; }
  /// The deterministic policy mu(s) in [-1, 1]^D (save_policy() writes it).
  const mlp<T, Backend>& actor() const noexcept { return actor_; }
  /// The actor's Polyak-averaged target.
  mlp<T, Backend>& actor_target() noexcept { return actor_target_; }

  /// @brief Writes the policy's actions, in the env's units, for observations [B, O]: mu(s) when
  /// `deterministic`, else mu(s) + N(0, exploration_noise) clipped (element k from rng(seed, k, draw)).
  /// B must be at most max(num_envs, batch_size).
  /// @throw std::invalid_argument on sizes that do not fit
  void act(view<const T> observations, view<T> actions, bool deterministic, std::uint64_t seed = 0,
           std::uint64_t draw = 0) {
    constexpr const char* who = "rlkernels::td3::act";
    const std::size_t b = detail::check_act_arguments(observations.size(), actions.size(), actions.data(),
                                                       std::size_t(observation_size), std::size_t(action_size),
                                                       this->rows(), who);
    const std::size_t bd = b * std::size_t(action_size);
    const view<const T> mu = actor_.forward(observations, actor_ws_);
    const T* a = mu.data();
    if (!deterministic) {
      for_each_index(lb_, bd,
                     detail::gaussian_exploration_kernel<T>{mu.data(), env_actions_.data(), T(config_.exploration_noise),
                                                            seed, draw});
      a = env_actions_.data();
    }
    for_each_index(lb_, bd, detail::to_env_action_kernel<T>{a, actions.data(), Env::action_low, Env::action_high});
  }

  /// @brief One gradient step on a fresh uniform batch: the critics towards the clipped double-Q
  /// target with target policy smoothing (critic_loss_and_gradients); every policy_frequency-th
  /// critic step also the actor (actor_loss_and_gradients, once actor_learning_starts env steps
  /// are taken) and the Polyak update of its target and, unless critic_target_frequency is set
  /// (then every critic_target_frequency-th critic step), of the critics' targets.
  /// Nothing is read back: the losses stay in backend memory, and iterate() reads them (and
  /// reports a NaN or infinite loss, naming the first such gradient step) once at its end.
  ///
  /// With env_shards or gradient_accumulation_steps > 1, or R > 1 ranks, the batch is sampled shard
  /// by shard (replay_buffer::sample_sharded) and each loss's gradient is the mean of its parts'
  /// (gradient_parts), all-reduced over the ranks before the optimiser step.
  void update(td3_iteration_stats& stats) {
    replay_.sample_sharded(this->shard_seeds(), batch_draw_++, batch_);
    const std::uint64_t draw = noise_draw_++;
    this->for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
      critic_loss_into(batch_, first, this->part_rows(), detail::derive_key(config_.seed, detail::ac_key_target_noise),
                       draw, row);
      detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), gradient_steps_ + 1, 1});
      critic_grads_.add({view<const T>(q1_.gradients()), view<const T>(q2_.gradients())}, s, k);
    });
    critic_grads_.reduce(*comm_, config_.gradient_reduction, {q1_.gradients(), q2_.gradients()}, "critic gradients");
    q1_opt_.step(q1_.parameters(), q1_.gradients());
    q2_opt_.step(q2_.parameters(), q2_.gradients());
    ++gradient_steps_;
    ++stats.gradient_steps;
    const std::uint64_t ct = config_.critic_target_frequency;
    if (ct > 0 && gradient_steps_ % ct == 0) {
      polyak_update(lb_, view<const T>(q1_.parameters()), q1_target_.parameters(), T(config_.tau));
      polyak_update(lb_, view<const T>(q2_.parameters()), q2_target_.parameters(), T(config_.tau));
    }
    if (!td3_should_update_actor(gradient_steps_, config_.policy_frequency) || !this->actor_learning()) return;
    this->for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
      actor_loss_into(batch_, first, this->part_rows(), draw, row);
      detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), gradient_steps_, 2});
      actor_grads_.add({view<const T>(actor_.gradients())}, s, k);
    });
    actor_grads_.reduce(*comm_, config_.gradient_reduction, {actor_.gradients()}, "actor gradients");
    actor_opt_.step(actor_.parameters(), actor_.gradients());
    actor_updated_ = true;
    polyak_update(lb_, view<const T>(actor_.parameters()), actor_target_.parameters(), T(config_.tau));
    if (ct > 0) return;
    polyak_update(lb_, view<const T>(q1_.parameters()), q1_target_.parameters(), T(config_.tau));
    polyak_update(lb_, view<const T>(q2_.parameters()), q2_target_.parameters(), T(config_.tau));
  }

  /// @brief The critics' loss on `batch` and its gradients, without an optimiser step:
  ///
  ///     a' = clip(mu_target(s') + clip(policy_noise * N(0, 1), -noise_clip, noise_clip), -1, 1)
  ///     y = r + gamma (1 - terminated) min(Q1_target, Q2_target)(s', a')
  ///     loss = critic_loss_scale * (mean (Q1(s, a) - y)^2 + mean (Q2(s, a) - y)^2)
  ///
  /// with the smoothing noise from td3_smoothed_target_actions(noise_seed, draw) and y constant;
  /// d loss / d parameters go into critic1().gradients() and critic2().gradients().
  /// @throw std::invalid_argument if the batch does not have config().batch_size transitions;
  ///        std::logic_error with env_shards or gradient_accumulation_steps > 1, or several ranks
  ///        (the workspaces hold one part: update() adds the parts)
  twin_critic_loss_result critic_loss_and_gradients(const batch_type& batch, std::uint64_t noise_seed, std::uint64_t draw) {
    this->check_batch(batch, "rlkernels::td3::critic_loss_and_gradients");
    this->check_one_part("rlkernels::td3::critic_loss_and_gradients");
    critic_loss_into(batch, 0, config_.batch_size, noise_seed, draw, 0);
    return stats_.get(0).critic;  // one host read
  }

  /// @brief The actor's loss -mean Q1(s, mu(s)) on the batch's observations and its gradient
  /// (into actor().gradients(); the critics' gradients are untouched), without an optimiser step.
  /// With actor_noise > 0, -mean Q1(s, clip(mu(s) + noise)) with the noise of draw 0.
  /// @throw std::invalid_argument if the batch does not have config().batch_size transitions;
  ///        std::logic_error as critic_loss_and_gradients
  double actor_loss_and_gradients(const batch_type& batch) {
    this->check_batch(batch, "rlkernels::td3::actor_loss_and_gradients");
    this->check_one_part("rlkernels::td3::actor_loss_and_gradients");
    actor_loss_into(batch, 0, config_.batch_size);
    return stats_.get(0).actor.loss;  // one host read
  }

 private:
  /// critic_loss_and_gradients of the batch's rows [first, first + b) without a host wait (the
  /// loss goes to stats_); the smoothing noise is that of rows first_row .. of the whole batch.
  void critic_loss_into(const batch_type& batch, std::size_t first, std::size_t b, std::uint64_t noise_seed,
                        std::uint64_t draw, std::uint64_t first_row) {
    const std::size_t o = std::size_t(observation_size), d = std::size_t(action_size), bd = b * d;
    const view<const T> obs = batch.observations.cview().subview(first * o, b * o);
    const view<const T> next_obs = batch.next_observations.cview().subview(first * o, b * o);
    const view<const T> in = critic_in_.cview().subview(0, b * std::size_t(q_inputs));
    const view<T> next_actions = next_actions_.view().subview(0, bd), targets = targets_.view().subview(0, b);
    const view<const T> mu_next = actor_target_.forward(next_obs, target_actor_ws_);
    td3_smoothed_target_actions(lb_, mu_next, noise_seed, draw, T(config_.policy_noise), T(config_.noise_clip), T(-1),
                                T(1), next_actions, first_row * d);
    this->critic_input(next_obs, view<const T>(next_actions), b);
    const view<const T> q1_next = q1_target_.forward(in, target_ws_);
    const view<const T> q2_next = q2_target_.forward(in, target_ws2_);
    td3_critic_targets(lb_, batch.rewards.cview().subview(first, b), batch.terminated.cview().subview(first, b),
                       q1_next, q2_next, T(config_.gamma), targets);
    this->critic_input(obs, batch.actions.cview().subview(first * d, bd), b);
    const view<const T> q1 = q1_.forward(in, q1_ws_);
    const view<const T> q2 = q2_.forward(in, q2_ws_);
    td3_critic_loss(lb_, view<twin_critic_loss_result>(&stats_.data()->critic, 1), q1, q2, view<const T>(targets),
                    grad_q1_.view().subview(0, b), grad_q2_.view().subview(0, b), T(config_.critic_loss_scale));
    q1_.backward(in, grad_q1_.cview().subview(0, b), q1_ws_);
    q2_.backward(in, grad_q2_.cview().subview(0, b), q2_ws_);
  }

  /// actor_loss_and_gradients of the batch's rows [first, first + b) without a host wait (the loss
  /// goes to stats_). With actor_noise > 0 the critic sees clip(mu(s) + actor_noise N) (rows
  /// first_row .. of the whole batch, draw `draw`), and the gradient passes where the sum is inside
  /// [-1, 1].
  void actor_loss_into(const batch_type& batch, std::size_t first, std::size_t b, std::uint64_t draw = 0,
                       std::uint64_t first_row = 0) {
    const std::size_t o = std::size_t(observation_size), d = std::size_t(action_size), bd = b * d;
    const view<const T> obs = batch.observations.cview().subview(first * o, b * o);
    const view<const T> in = critic_in_.cview().subview(0, b * std::size_t(q_inputs));
    const view<const T> mu = actor_.forward(obs, actor_ws_);
    const T sigma = T(config_.actor_noise);
    const std::uint64_t key = detail::derive_key(config_.seed, detail::ac_key_td3_actor_noise);
    view<const T> a = mu;
    if (sigma > T(0)) {
      for_each_index(lb_, bd, detail::gaussian_exploration_kernel<T>{mu.data(), next_actions_.data(), sigma, key, draw,
                                                                     first_row * d});
      a = next_actions_.cview().subview(0, bd);
    }
    this->critic_input(obs, a, b);
    const view<const T> q1_pi = q1_.forward(in, q1_ws_);
    td3_actor_loss(lb_, view<double>(&stats_.data()->actor.loss, 1), q1_pi, grad_q1_.view().subview(0, b));
    q1_.input_gradient(in, grad_q1_.cview().subview(0, b), q1_ws_, grad_in_.view().subview(0, b * std::size_t(q_inputs)));
    for_each_index(lb_, bd, detail::action_columns_kernel<T>{grad_in_.data(), nullptr, grad_actions_.data(),
                                                             std::size_t(observation_size), std::size_t(action_size)});
    if (sigma > T(0))
      for_each_index(lb_, bd, detail::clipped_noise_gradient_kernel<T>{mu.data(), grad_actions_.data(), sigma, key, draw,
                                                                       first_row * d});
    actor_.backward(obs, grad_actions_.cview().subview(0, bd), actor_ws_);
  }

 public:
  /// @brief A checksum (detail::fnv1a over the bytes) of every parameter: actor, critics and their
  /// targets. Data-parallel ranks compare theirs every config().parameter_check_every iterations.
  std::uint64_t parameter_checksum() const {
    return detail::parameters_checksum<T>(
        {view<const T>(actor_.parameters()), view<const T>(q1_.parameters()), view<const T>(q2_.parameters()),
         view<const T>(actor_target_.parameters()), view<const T>(q1_target_.parameters()),
         view<const T>(q2_target_.parameters())},
        backend_);
  }

 private:
  using base::actor_;
  using base::actor_grads_;
  using base::actor_opt_;
  using base::actor_updated_;
  using base::actor_ws_;
  using base::backend_;
  using base::batch_;
  using base::batch_draw_;
  using base::comm_;
  using base::config_;
  using base::critic_grads_;
  using base::critic_in_;
  using base::env_;
  using base::env_actions_;
  using base::gradient_steps_;
  using base::grad_q1_;
  using base::grad_q2_;
  using base::lb_;
  using base::noise_draw_;
  using base::q1_;
  using base::q1_opt_;
  using base::q1_target_;
  using base::q1_ws_;
  using base::q2_;
  using base::q2_opt_;
  using base::q2_target_;
  using base::q2_ws_;
  using base::q_inputs;
  using base::replay_;
  using base::stats_;
  using base::target_ws2_;
  using base::target_ws_;
  using base::targets_;

  /// The actions of an iteration after the warm-up: mu(s) + N(0, exploration_noise), clipped.
  void policy_actions(std::uint64_t draw) {
    const std::size_t n = config_.num_envs, d = std::size_t(action_size);
    const std::size_t per = n / config_.env_shards, o = std::size_t(observation_size);
    for (std::size_t s = 0; s < config_.env_shards; ++s) {  // a rank's rows in one call, as a rank's are
      const view<const T> mu = actor_.forward(env_.observations().cview().subview(s * per * o, per * o), actor_ws_);
      for_each_index(lb_, per * d,
                     detail::gaussian_exploration_kernel<T>{mu.data(), this->actions_.data() + s * per * d,
                                                            T(config_.exploration_noise),
                                                            detail::derive_key(config_.seed, detail::ac_key_actions),
                                                            draw, (this->first_env() + s * per) * d});
    }
  }
  /// TD3 has no statistics beyond the shared ones.
  void finish_statistics(td3_iteration_stats&, const detail::actor_critic_device_stats&) {}
  /// The shared state, then the actor's target.
  template <class C>
  void bind_shared(C& c) {
    this->bind_common(c);
    c.bind("actor_target/parameters", backend_, actor_target_.parameters());
  }

  static td3_config checked(td3_config c) {
    c.validate();
    return c;
  }

  mlp<T, Backend> actor_target_;
  mlp_workspace<T, Backend> target_actor_ws_;
  buffer<T, Backend> next_actions_, grad_in_, grad_actions_;
};

/// @brief TD3 hyperparameters tuned for the env `id` (a Gymnasium id); CleanRL's defaults
/// (td3_config{}) for envs without a preset. The seed is left at 1.
///
/// - Pendulum-v1: 64x64 ReLU networks, batch 100, 100 warm-up steps, learning rates 1e-3,
///   20k steps (every seed evaluates above -200, see docs/training.md).
/// - L2F-Crazyflie-v0: RLtools' TD3 schedule (the learning-to-fly paper's) made cheaper: 1 env, a
///   critic step of batch 128 every 5 env steps (the paper: batch 256 every 10), the actor every
///   second one; the noisy initial actor acts from the first step, critics learn from 15k steps,
///   the actor from 30k; critic targets every critic step; 64x64 tanh networks, learning rates
///   1e-3, Adam epsilon 1e-7, AdamW decay 0.05 (5e-5 per step, as the paper's 1e-4 / 2);
///   exploration and actor-loss noise 0.1, target noise 0.22 clipped at 0.5; 600k steps
///   (docs/quadrotor.md: on its training reward, time to fly against RLtools').
inline td3_config td3_preset(std::string_view id) {
  td3_config c;
  if (id == "L2F-Crazyflie-v0") {
    c.num_envs = 1;
    c.total_timesteps = 600000;
    c.buffer_size = 600000;
    c.batch_size = 128;
    c.train_frequency = 5;
    c.learning_starts = 15000;
    c.actor_learning_starts = 30000;
    c.random_warmup = false;
    c.critic_target_frequency = 1;
    c.hidden_sizes = {64, 64};
    c.hidden_activation = activation::tanh;
    c.policy_lr = 1e-3;
    c.q_lr = 1e-3;
    c.adam_epsilon = 1e-7;
    c.weight_decay = 0.05;
    c.exploration_noise = 0.1;
    c.actor_noise = 0.1;
    c.policy_noise = 0.22;  // RLtools' target actor adds its 0.1 exploration noise to the 0.2 smoothing noise
    c.noise_clip = 0.5;
  }
  if (id == "Pendulum-v1") {
    c.total_timesteps = 20000;
    c.hidden_sizes = {64, 64};
    c.batch_size = 100;
    c.learning_starts = 100;
    c.policy_lr = 1e-3;
    c.q_lr = 1e-3;
  }
  return c;
}

}  // namespace rlkernels
