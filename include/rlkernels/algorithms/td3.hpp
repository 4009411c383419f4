// rlkernels/algorithms/td3.hpp
// Twin Delayed DDPG (Fujimoto et al. 2018): a deterministic tanh actor, twin critics, target
// policy smoothing and delayed actor/target updates, as CleanRL's td3_continuous_action.py
// computes it, composed of public rlkernels pieces: vec_env, replay_buffer, the TD3 losses, MLPs,
// Adam and polyak_update. Read `iterate()` and `update()` top to bottom to see one step and one
// gradient step.
#pragma once

#include "../buffers/replay_buffer.hpp"
#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/polyak.hpp"
#include "../losses/td3.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"
#include "actor_critic.hpp"
#include "data_parallel.hpp"
#include "off_policy_config.hpp"
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
/// see td3_preset() for tuned per-env settings.
struct td3_config : off_policy_config {
  bool random_warmup = true;  ///< true: uniform random actions during learning_starts (SB3, CleanRL); false: the initial actor with exploration noise acts from the first step (RLtools)
  std::uint64_t train_frequency = 1; ///< iterations per training iteration: every train_frequency-th iteration takes the gradient steps (SB3's train_freq)
  double weight_decay = 0.0;         ///< decoupled (AdamW) weight decay of all three optimisers, per step p -= lr * weight_decay * p
  std::uint64_t critic_target_frequency = 0;  ///< critic steps per Polyak update of the critics' targets; 0: with the actor's, every policy_frequency-th (the TD3 paper, SB3); 1: every critic step (RLtools)
  std::uint64_t actor_learning_starts = 0;    ///< env steps before the first actor step (and actor target update); 0: learning_starts (RLtools' actor warm-up)
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
    RLK_EXPECTS(train_frequency >= 1, std::invalid_argument, who, ": train_frequency must be >= 1, got ",
                train_frequency);
    RLK_EXPECTS(std::isfinite(policy_noise) && policy_noise >= 0, std::invalid_argument, who,
                ": policy_noise must be finite and >= 0, got ", policy_noise);
    RLK_EXPECTS(std::isfinite(noise_clip) && noise_clip >= 0, std::invalid_argument, who,
                ": noise_clip must be finite and >= 0, got ", noise_clip);
    RLK_EXPECTS(std::isfinite(exploration_noise) && exploration_noise >= 0, std::invalid_argument, who,
                ": exploration_noise must be finite and >= 0, got ", exploration_noise);
    RLK_EXPECTS(std::isfinite(actor_noise) && actor_noise >= 0, std::invalid_argument, who,
                ": actor_noise must be finite and >= 0, got ", actor_noise);
    RLK_EXPECTS(std::isfinite(weight_decay) && weight_decay >= 0, std::invalid_argument, who,
                ": weight_decay must be finite and >= 0, got ", weight_decay);
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
/// OpenMP (any thread count) for a given config and seed.
template <class Env, class Backend>
class td3 {
  static_assert(Env::action_space == action_kind::continuous,
                "rlkernels::td3: TD3 needs a continuous action space (use dqn or ppo for discrete actions)");

 public:
  using env_type = vec_env<Env, Backend>;              ///< the training envs
  using scalar_type = typename env_type::scalar_type;  ///< float or double
  using action_type = scalar_type;                     ///< continuous actions
  using backend_type = Backend;                        ///< where everything runs
  using T = scalar_type;                               ///< shorthand for scalar_type
  static constexpr int observation_size = env_type::observation_size;  ///< O
  static constexpr int action_size = env_type::action_width;           ///< D
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
      : backend_(backend), lb_(detail::light_backend(backend)), config_(checked(std::move(config))),
        env_params_(env_params), comm_(&comm),
        env_(backend, config_.num_envs, config_.seed, env_params, std::uint64_t(comm.rank()) * config_.num_envs),
        replay_(backend, config_.buffer_steps(), config_.num_envs, observation_size, action_size),
        batch_(backend, config_.batch_size, observation_size, action_size),
        actor_(backend, sizes(observation_size, action_size), config_.hidden_activation, activation::tanh),
        actor_target_(backend, sizes(observation_size, action_size), config_.hidden_activation, activation::tanh),
        q1_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q2_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q1_target_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q2_target_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        actor_opt_(backend, actor_.num_parameters(), adam_with(config_.policy_lr)),
        q1_opt_(backend, q1_.num_parameters(), adam_with(config_.q_lr)),
        q2_opt_(backend, q2_.num_parameters(), adam_with(config_.q_lr)), actor_ws_(actor_, rows()),
        target_actor_ws_(actor_target_, part_rows()), q1_ws_(q1_, part_rows()),
        q2_ws_(q2_, part_rows()), target_ws_(q1_target_, part_rows()), target_ws2_(q2_target_, part_rows()),
        critic_grads_(backend, q1_.num_parameters() + q2_.num_parameters(), config_.env_shards,
                      config_.gradient_accumulation_steps, comm),
        actor_grads_(backend, actor_.num_parameters(), config_.env_shards, config_.gradient_accumulation_steps, comm),
        obs_before_(backend, config_.num_envs * std::size_t(observation_size)),
        actions_(backend, config_.num_envs * std::size_t(action_size)),
        env_actions_(backend, rows() * std::size_t(action_size)),
        next_actions_(backend, part_rows() * std::size_t(action_size)),
        critic_in_(backend, part_rows() * std::size_t(q_inputs)),
        targets_(backend, part_rows()), grad_q1_(backend, part_rows()), grad_q2_(backend, part_rows()),
        grad_in_(backend, part_rows() * std::size_t(q_inputs)),
        grad_actions_(backend, part_rows() * std::size_t(action_size)) {
    const layer_init torch{weight_init::pytorch_default, 1.0, 0.0};
    actor_.initialize(detail::derive_key(config_.seed, detail::ac_key_actor_init), torch, torch);
    q1_.initialize(detail::derive_key(config_.seed, detail::ac_key_critic1_init), torch, torch);
    q2_.initialize(detail::derive_key(config_.seed, detail::ac_key_critic2_init), torch, torch);
    if (comm_->size() > 1) join_ranks();
    actor_target_.copy_parameters_from(actor_);
    q1_target_.copy_parameters_from(q1_);
    q2_target_.copy_parameters_from(q2_);
  }

  /// The configuration.
  const td3_config& config() const noexcept { return config_; }
  /// Env steps taken so far (all envs).
  std::uint64_t global_step() const noexcept { return global_step_; }
  /// The most observation rows one act() call takes; evaluate() acts in chunks of this many.
  std::size_t max_act_rows() const noexcept { return rows(); }
  /// Iterations done so far.
  std::uint64_t iteration() const noexcept { return iteration_; }
  /// Critic gradient steps done so far.
  std::uint64_t gradient_steps() const noexcept { return critic_updates_; }
  /// True once total_timesteps env steps have been taken.
  bool done() const noexcept { return iteration_ >= num_iterations(); }
  /// Iterations to cover total_timesteps: each takes num_envs steps on every rank.
  std::uint64_t num_iterations() const noexcept {
    const std::uint64_t per = std::uint64_t(config_.num_envs) * std::uint64_t(comm_->size());
    return (config_.total_timesteps + per - 1) / per;
  }
  /// Transitions of one gradient step over all ranks: batch_size * ranks.
  std::size_t global_batch_size() const noexcept { return config_.batch_size * std::size_t(comm_->size()); }
  /// The job's ranks.
  communicator& comm() const noexcept { return *comm_; }
  /// The deterministic policy mu(s) in [-1, 1]^D.
  mlp<T, Backend>& actor() noexcept { return actor_; }
  /// The deterministic policy mu(s) in [-1, 1]^D (save_policy() writes it).
  const mlp<T, Backend>& actor() const noexcept { return actor_; }
  /// The actor's Polyak-averaged target.
  mlp<T, Backend>& actor_target() noexcept { return actor_target_; }
  /// The first critic Q1(s, a), input [observation, action in [-1, 1]].
  mlp<T, Backend>& critic1() noexcept { return q1_; }
  /// The second critic Q2(s, a).
  mlp<T, Backend>& critic2() noexcept { return q2_; }
  /// Q1's target.
  mlp<T, Backend>& critic1_target() noexcept { return q1_target_; }
  /// Q2's target.
  mlp<T, Backend>& critic2_target() noexcept { return q2_target_; }
  /// The training envs.
  env_type& envs() noexcept { return env_; }
  /// The replay buffer (actions in [-1, 1]).
  replay_buffer<T, T, Backend>& replay() noexcept { return replay_; }

  /// @brief One iteration: every env takes one step (uniform random actions during the first
  /// learning_starts steps when random_warmup, else and then mu(s) + N(0, exploration_noise)
  /// clipped to [-1, 1]), the
  /// transitions go into the replay buffer, then gradient_steps updates once learning_starts
  /// steps have been taken, on every train_frequency-th iteration.
  /// @throw std::logic_error if training is already done(); rlkernels::error if a loss becomes NaN
  td3_iteration_stats iterate() {
    using clock = std::chrono::steady_clock;
    RLK_EXPECTS(!done(), std::logic_error, "rlkernels::td3::iterate: training is done (", global_step_,
                " of total_timesteps ", config_.total_timesteps, " env steps taken)");
    const auto t0 = clock::now();
    td3_iteration_stats stats;
    stats.iteration = ++iteration_;
    const std::size_t n = config_.num_envs, nd = n * std::size_t(action_size);
    const std::uint64_t draw = action_draw_++;
    const std::uint64_t d = std::uint64_t(action_size);
    if (config_.random_warmup && global_step_ < config_.learning_starts) {
      for_each_index(lb_, nd,
                     detail::uniform_action_kernel<T>{detail::derive_key(config_.seed, detail::ac_key_warmup_actions),
                                                      draw, actions_.data(), first_env() * d});
    } else {
      const std::size_t per = n / config_.env_shards, o = std::size_t(observation_size);
      for (std::size_t s = 0; s < config_.env_shards; ++s) {  // a rank's rows in one call, as a rank's are
        const view<const T> mu = actor_.forward(env_.observations().cview().subview(s * per * o, per * o), actor_ws_);
        for_each_index(lb_, per * d,
                       detail::gaussian_exploration_kernel<T>{mu.data(), actions_.data() + s * per * d,
                                                              T(config_.exploration_noise),
                                                              detail::derive_key(config_.seed, detail::ac_key_actions),
                                                              draw, (first_env() + s * per) * d});
      }
    }
    detail::step_and_store<Env>(lb_, env_, replay_, actions_.cview(), env_actions_.view(), obs_before_.view(),
                                &stats_.data()->step);
    global_step_ += std::uint64_t(n) * std::uint64_t(comm_->size());
    actor_updated_ = false;
    detail::run_once(lb_, detail::ac_start_kernel{stats_.data()});
    if (global_step_ > config_.learning_starts && iteration_ % config_.train_frequency == 0) {
      for (std::size_t g = 0; g < config_.gradient_steps; ++g) update(stats);
    }
    const detail::actor_critic_device_stats r = detail::read_iteration(env_, stats_, "rlkernels::td3::iterate", *comm_);
    const detail::env_step_outcome ep = detail::outcome_of(r);
    if (stats.gradient_steps > 0) stats.critic_loss = r.critic.loss;
    if (actor_updated_) stats.actor_loss = r.actor.loss;
    stats.episodes = ep.episodes;
    stats.episode_return_sum = ep.episode_return_sum;
    stats.episode_length_sum = ep.episode_length_sum;
    stats.global_step = global_step_;
    if (comm_->size() > 1 && config_.parameter_check_every > 0 && iteration_ % config_.parameter_check_every == 0)
      detail::check_parameters_agree(*comm_, parameter_checksum(), iteration_, "rlkernels::td3");
    if (config_.checkpoint_every && iteration_ % config_.checkpoint_every == 0) auto_checkpoint();
    stats.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return stats;
  }

  /// @brief Writes the policy's actions, in the env's units, for observations [B, O]: mu(s) when
  /// `deterministic`, else mu(s) + N(0, exploration_noise) clipped (element k from rng(seed, k, draw)).
  /// B must be at most max(num_envs, batch_size).
  /// @throw std::invalid_argument on sizes that do not fit
  void act(view<const T> observations, view<T> actions, bool deterministic, std::uint64_t seed = 0,
           std::uint64_t draw = 0) {
    constexpr const char* who = "rlkernels::td3::act";
    const std::size_t b = detail::check_act_arguments(observations.size(), actions.size(), actions.data(),
                                                       std::size_t(observation_size), std::size_t(action_size), rows(), who);
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

  /// @brief Evaluation on `episodes` fresh envs seeded with `seed` (one episode each); training
  /// state is untouched. See detail::evaluate_policy.
  /// @throw std::invalid_argument if episodes is 0; rlkernels::error if an episode does not end within max_steps
  policy_evaluation evaluate(std::size_t episodes, std::uint64_t seed, bool deterministic = true,
                             std::size_t max_steps = 1000000) {
    return detail::evaluate_policy<Env>(backend_, env_params_, episodes, seed, rows(), max_steps,
                                        "rlkernels::td3::evaluate",
                                        [&](view<const T> obs, view<T> actions, std::size_t first, std::size_t step) {
                                          // Stochastic draws: a key of their own, one per chunk of envs.
                                          act(obs, actions, deterministic,
                                              detail::derive_key(detail::derive_key(seed, detail::ac_key_evaluation), first),
                                              step);
                                        });
  }

  /// The batch type of the replay buffer (observations, actions in [-1, 1], rewards, next observations, ...).
  using batch_type = replay_batch<T, T, Backend>;

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
    replay_.sample_sharded(detail::shard_seeds(detail::derive_key(config_.seed, detail::ac_key_batches),
                                               config_.env_shards, *comm_),
                           batch_draw_++, batch_);
    const std::uint64_t draw = noise_draw_++;
    for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
      critic_loss_into(batch_, first, part_rows(), detail::derive_key(config_.seed, detail::ac_key_target_noise), draw,
                       row);
      detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), critic_updates_ + 1, 1});
      critic_grads_.add({view<const T>(q1_.gradients()), view<const T>(q2_.gradients())}, s, k);
    });
    critic_grads_.reduce(*comm_, config_.gradient_reduction, {q1_.gradients(), q2_.gradients()}, "critic gradients");
    q1_opt_.step(q1_.parameters(), q1_.gradients());
    q2_opt_.step(q2_.parameters(), q2_.gradients());
    ++critic_updates_;
    ++stats.gradient_steps;
    const std::uint64_t ct = config_.critic_target_frequency;
    if (ct > 0 && critic_updates_ % ct == 0) {
      polyak_update(lb_, view<const T>(q1_.parameters()), q1_target_.parameters(), T(config_.tau));
      polyak_update(lb_, view<const T>(q2_.parameters()), q2_target_.parameters(), T(config_.tau));
    }
    if (!td3_should_update_actor(critic_updates_, config_.policy_frequency) ||
        global_step_ <= config_.actor_learning_starts)
      return;
    for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
      actor_loss_into(batch_, first, part_rows(), draw, row);
      detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), critic_updates_, 2});
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
    check_batch(batch, "rlkernels::td3::critic_loss_and_gradients");
    check_one_part("rlkernels::td3::critic_loss_and_gradients");
    critic_loss_into(batch, 0, config_.batch_size, noise_seed, draw, 0);
    return stats_.get(0).critic;  // one host read
  }

  /// @brief The actor's loss -mean Q1(s, mu(s)) on the batch's observations and its gradient
  /// (into actor().gradients(); the critics' gradients are untouched), without an optimiser step.
  /// With actor_noise > 0, -mean Q1(s, clip(mu(s) + noise)) with the noise of draw 0.
  /// @throw std::invalid_argument if the batch does not have config().batch_size transitions;
  ///        std::logic_error as critic_loss_and_gradients
  double actor_loss_and_gradients(const batch_type& batch) {
    check_batch(batch, "rlkernels::td3::actor_loss_and_gradients");
    check_one_part("rlkernels::td3::actor_loss_and_gradients");
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
    critic_input(next_obs, view<const T>(next_actions), b);
    const view<const T> q1_next = q1_target_.forward(in, target_ws_);
    const view<const T> q2_next = q2_target_.forward(in, target_ws2_);
    td3_critic_targets(lb_, batch.rewards.cview().subview(first, b), batch.terminated.cview().subview(first, b),
                       q1_next, q2_next, T(config_.gamma), targets);
    critic_input(obs, batch.actions.cview().subview(first * d, bd), b);
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
    critic_input(obs, a, b);
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
  /// @brief Binds everything a resumed run needs into checkpoint `c` (networks, targets,
  /// optimisers, envs, counters, and the replay buffer when config().checkpoint_buffers).
  template <class C>
  void bind_checkpoint(C& c) {
    bind_shared(c);
    detail::bind_actor_critic_local(c, *this);
  }
  /// @brief Saves the whole training state to `path` (atomically: see rlkernels::checkpoint::save).
  /// In a data-parallel run every rank calls it: rank 0 gathers the ranks' envs and replay buffers
  /// and writes the file.
  /// @throw rlkernels::error on an I/O failure (on every rank: rank 0 tells the others)
  void save_checkpoint(const std::string& path) { state().save(path, global_step_); }
  /// @brief Saves the training state as the checkpoint of global_step() in `dir` (rotating, see
  /// checkpoint_directory::save) and returns the path (rank 0; the other ranks of a data-parallel
  /// run return "" and write nothing).
  /// @throw rlkernels::error on an I/O failure (on every rank)
  std::string save_checkpoint(const checkpoint_directory& dir) { return state().save(dir, global_step_); }
  /// @brief Restores a state saved by save_checkpoint() from the same config (and number of
  /// ranks); resuming then continues bit-identically to the uninterrupted run on the same backend.
  /// In a data-parallel run every rank calls it; rank 0 reads the file and sends it to the others.
  /// @throw checkpoint_error (nothing is changed) if the file is damaged or from another config/shape
  void load_checkpoint(const std::string& path) { state().load(path); }
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
  template <class C, class Trainer>
  friend void detail::bind_actor_critic_shared(C& c, Trainer& t);
  template <class C, class Trainer>
  friend void detail::bind_actor_critic_local(C& c, Trainer& t);
  template <class C>
  void bind_shared(C& c) {
    detail::bind_actor_critic_shared(c, *this);
    c.bind("actor_target/parameters", backend_, actor_target_.parameters());
  }
  /// The checkpoint's two halves (detail::trainer_state).
  auto state() {
    return detail::trainer_state(
        *comm_, [this](checkpoint& c) { bind_shared(c); }, [this](checkpoint& c) { detail::bind_actor_critic_local(c, *this); }, "rlkernels::td3");
  }
  void auto_checkpoint() {
    state().save_automatic(config_.checkpoint_dir, "td3", config_.checkpoint_keep, global_step_);
  }
  /// The ranks check that they run the same config, then take rank 0's parameters (the targets
  /// start as copies of them).
  void join_ranks() {
    detail::join_ranks(*comm_, config_.hyperparameters(), config_.env_shards, "rlkernels::td3");
    broadcast(*comm_, backend_, actor_.parameters(), 0, "actor parameters");
    broadcast(*comm_, backend_, q1_.parameters(), 0, "critic 1 parameters");
    broadcast(*comm_, backend_, q2_.parameters(), 0, "critic 2 parameters");
  }
  /// Rows of one part of a batch: batch_size / (env_shards * gradient_accumulation_steps).
  std::size_t part_rows() const noexcept { return config_.batch_size / config_.gradient_parts(); }
  /// This rank's first env in the whole population (0 in one process).
  std::uint64_t first_env() const noexcept { return std::uint64_t(comm_->rank()) * config_.num_envs; }
  template <class Fn>
  void for_each_part(Fn&& fn) const {
    detail::for_each_batch_part(config_, config_.batch_size, *comm_, fn);
  }
  void check_one_part(const char* who) const { detail::check_one_part(config_, *comm_, who); }
  static constexpr int q_inputs = observation_size + action_size;

  static td3_config checked(td3_config c) {
    c.validate();
    return c;
  }
  adam_params adam_with(double lr) const {
    adam_params p;
    p.learning_rate = lr;
    p.epsilon = config_.adam_epsilon;
    p.weight_decay = config_.weight_decay;
    return p;
  }
  std::vector<int> sizes(int in, int out) const {
    std::vector<int> s{in};
    s.insert(s.end(), config_.hidden_sizes.begin(), config_.hidden_sizes.end());
    s.push_back(out);
    return s;
  }
  std::size_t rows() const noexcept { return std::max(config_.num_envs, part_rows()); }
  void check_batch(const batch_type& batch, const char* who) const {
    RLK_EXPECTS(batch.size() == config_.batch_size, std::invalid_argument, who, ": the batch has ", batch.size(),
                " transitions, the config's batch_size is ", config_.batch_size);
  }
  void critic_input(view<const T> observations, view<const T> actions, std::size_t b) {
    for_each_index(lb_, b * std::size_t(q_inputs),
                   detail::concat_kernel<T>{observations.data(), actions.data(), critic_in_.data(),
                                            std::size_t(observation_size), std::size_t(action_size)});
  }

  Backend backend_;
  Backend lb_;
  td3_config config_;
  typename Env::Params env_params_;
  communicator* comm_;
  env_type env_;
  replay_buffer<T, T, Backend> replay_;
  batch_type batch_;
  mlp<T, Backend> actor_, actor_target_, q1_, q2_, q1_target_, q2_target_;
  adam<T, Backend> actor_opt_, q1_opt_, q2_opt_;
  mlp_workspace<T, Backend> actor_ws_, target_actor_ws_, q1_ws_, q2_ws_, target_ws_, target_ws2_;
  detail::gradient_parts<T, Backend> critic_grads_, actor_grads_;  // a batch's parts summed (more than one part)
  buffer<detail::actor_critic_device_stats, Backend> stats_{backend_, 1};  // [1] the iteration's statistics, read once at its end
  bool actor_updated_ = false;  // an actor step ran in this iteration
  buffer<T, Backend> obs_before_, actions_, env_actions_, next_actions_, critic_in_, targets_, grad_q1_,
      grad_q2_, grad_in_, grad_actions_;
  std::uint64_t global_step_ = 0, iteration_ = 0, critic_updates_ = 0, action_draw_ = 0, batch_draw_ = 0,
                noise_draw_ = 0;
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
