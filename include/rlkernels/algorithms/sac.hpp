// rlkernels/algorithms/sac.hpp
// Soft Actor-Critic (Haarnoja et al. 2018) with twin critics, target critics, a tanh-squashed
// Gaussian policy and an automatically tuned temperature, as CleanRL's sac_continuous_action.py
// and Stable-Baselines3's SAC compute it, composed of public rlkernels pieces: vec_env,
// replay_buffer, the SAC losses and tanh-Gaussian distribution functions, MLPs, Adam and
// polyak_update. Read `iterate()` (off_policy_trainer.hpp, shared with TD3), `policy_actions()`
// and `update()` top to bottom to see one step and one gradient step; they are the loop you would
// write yourself.
#pragma once

#include "../buffers/replay_buffer.hpp"
#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/distributions.hpp"
#include "../losses/polyak.hpp"
#include "../losses/sac.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"
#include "actor_critic.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "off_policy_config.hpp"
#include "off_policy_trainer.hpp"
#include "trainer_core.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief SAC's hyperparameters: those it shares with TD3 (off_policy_config: data, optimisation,
/// networks, seed, checkpoints) and its own. The defaults are CleanRL's sac_continuous_action.py;
/// see sac_config::sb3() for Stable-Baselines3's and sac_preset() for tuned per-env settings.
struct sac_config : off_policy_config {
  double alpha_lr = 1e-3;                    ///< Adam step size of log(alpha) (CleanRL uses q_lr)
  std::uint64_t target_network_frequency = 1;  ///< critic steps between Polyak updates of the targets
  // ---- temperature ----
  double alpha = 0.2;                        ///< the temperature (initial value when autotune)
  bool autotune = true;                      ///< learn alpha towards target_entropy
  double target_entropy = std::nan("");      ///< NaN: -action_size (the paper's heuristic)
  // ---- policy ----
  double log_std_min = -20;                         ///< the policy's log-std is clamped to [min, max]
  double log_std_max = 2;                           ///< (SB3's bounds)

  /// CleanRL's defaults: 5000 warm-up steps, critics' learning rate 1e-3.
  sac_config() : off_policy_config(/*default_learning_starts=*/5000, /*default_q_lr=*/1e-3) {}

  /// Stable-Baselines3's SAC defaults (lr 3e-4 everywhere, 100 warm-up steps, one actor and
  /// temperature step per critic step, 0.5 * the critic MSE sum, alpha starting at 1).
  static sac_config sb3() {
    sac_config c;
    c.learning_starts = 100;
    c.q_lr = 3e-4;
    c.alpha_lr = 3e-4;
    c.policy_frequency = 1;
    c.critic_loss_scale = 0.5;
    c.alpha = 1.0;
    return c;
  }
  /// "key=value" lines of every hyperparameter (not the checkpoint settings), as checkpoints record them.
  std::string hyperparameters() const {
    return data_lines("sac")
        .add("batch_size", batch_size)
        .add("gradient_steps", gradient_steps)
        .add("gamma", gamma)
        .add("tau", tau)
        .add("policy_lr", policy_lr)
        .add("q_lr", q_lr)
        .add("alpha_lr", alpha_lr)
        .add("adam_epsilon", adam_epsilon)
        .add("policy_frequency", policy_frequency)
        .add("target_network_frequency", target_network_frequency)
        .add("critic_loss_scale", critic_loss_scale)
        .add("alpha", alpha)
        .add("autotune", autotune)
        .add("target_entropy", target_entropy)
        .add("hidden_sizes", hidden_sizes)
        .add("hidden_activation", activation_name(hidden_activation))
        .add("log_std_min", log_std_min)
        .add("log_std_max", log_std_max)
        .add("seed", seed)
        .str() + schedule_lines() + parallel_lines();
  }
  /// @brief Throws std::invalid_argument naming the first bad field.
  void validate() const {
    constexpr const char* who = "rlkernels::sac_config";
    detail::validate_actor_critic_config(*this, who);
    RLK_EXPECTS(std::isfinite(alpha_lr) && alpha_lr >= 0, std::invalid_argument, who,
                ": alpha_lr must be finite and >= 0, got ", alpha_lr);
    RLK_EXPECTS(target_network_frequency >= 1, std::invalid_argument, who, ": target_network_frequency must be >= 1");
    RLK_EXPECTS(std::isfinite(alpha) && alpha > 0, std::invalid_argument, who, ": alpha must be finite and > 0, got ",
                alpha);
    RLK_EXPECTS(std::isnan(target_entropy) || std::isfinite(target_entropy), std::invalid_argument, who,
                ": target_entropy must be finite (or NaN for -action_size)");
    RLK_EXPECTS(std::isfinite(log_std_min) && std::isfinite(log_std_max) && log_std_min < log_std_max,
                std::invalid_argument, who, ": need finite log_std_min < log_std_max, got ", log_std_min, ", ",
                log_std_max);
  }
 private:
  /// The lines of random_warmup, train_frequency, weight_decay and actor_learning_starts, only
  /// where they differ from their defaults (SAC had none of them before: checkpoints of runs that
  /// keep the defaults stay loadable and byte-identical).
  std::string schedule_lines() const {
    detail::hyperparameter_lines lines;
    if (!random_warmup) lines.add("random_warmup", 0);
    if (train_frequency != 1) lines.add("train_frequency", train_frequency);
    if (weight_decay != 0.0) lines.add("weight_decay", weight_decay);
    if (actor_learning_starts != 0) lines.add("actor_learning_starts", actor_learning_starts);
    return lines.str();
  }
};

/// @brief What one SAC iteration (one step of every env, then the gradient steps due) did.
struct sac_iteration_stats {
  std::uint64_t iteration = 0;      ///< 1-based
  std::uint64_t global_step = 0;    ///< env steps so far (all envs)
  std::uint64_t episodes = 0;       ///< episodes completed in this iteration
  double episode_return_sum = 0;    ///< sum of their returns
  double episode_length_sum = 0;    ///< sum of their lengths
  std::uint64_t gradient_steps = 0;  ///< critic steps taken in this iteration
  double critic_loss = 0;           ///< last critic step's scale * (mse(Q1) + mse(Q2))
  double actor_loss = 0;            ///< last actor step's mean(alpha log pi - min Q)
  double entropy = 0;               ///< last actor step's -mean(log pi)
  double alpha = 0;                 ///< the temperature after this iteration
  double alpha_loss = 0;            ///< last temperature step's loss (autotune)
  double seconds = 0;               ///< wall-clock of the iteration
  /// The env steps of this iteration (all ranks) that the physics could not take: each ended its
  /// episode as truncated (docs/physics.md, "When a step fails"); zero for envs that never fail a step.
  failed_step_counts failed_steps;
};

/// @brief A SAC agent and its training loop for a continuous-action rlkernels environment `Env`
/// on `Backend`: an actor MLP with a Gaussian head [mean, log_std] squashed by tanh, two critic
/// MLPs Q(s, a) with Polyak-averaged targets, and a learned temperature. The policy acts in
/// [-1, 1]^D; actions are mapped linearly to the env's Box bounds, and the replay buffer and the
/// critics see the policy's [-1, 1] actions (as SB3 does). Networks start from PyTorch's default
/// Linear initialisation, as in CleanRL and SB3.
///
///     rlkernels::sac<rlkernels::pendulum<float>, rlkernels::serial_backend> agent(rlkernels::serial, config);
///     while (!agent.done()) agent.iterate();
///     auto result = agent.evaluate(10, 12345);
///
/// Truncation: the replay buffer stores each step's final observation and bootstraps through it
/// unless the episode terminated. Determinism: for a given config and seed a run is the same on
/// serial and OpenMP (any thread count).
///
/// Data parallelism (docs/distributed.md): given a communicator of R ranks, each rank steps its
/// own num_envs envs (envs rank * num_envs ..., with those envs' random streams) into its own
/// replay buffer and samples its batch_size transitions from it; the parameters start as rank
/// 0's, the critic, actor and temperature gradients are all-reduced before every optimiser step,
/// the episode statistics are gathered, and each rank writes its envs and replay buffer to its
/// shard of a checkpoint (rank 0 the manifest, last). With the ordered reduction a run equals one process with R * num_envs envs,
/// R * batch_size, R * buffer_size and env_shards = R bit for bit.
///
/// The iteration, evaluation, envs, replay buffer and critics come from off_policy_trainer, the
/// counters and checkpoints from trainer_core.
template <class Env, class Backend>
class sac : public off_policy_trainer<sac<Env, Backend>, Env, Backend, sac_config> {
  static_assert(Env::action_space == action_kind::continuous,
                "rlkernels::sac: SAC needs a continuous action space (use dqn or ppo for discrete actions)");
  using base = off_policy_trainer<sac<Env, Backend>, Env, Backend, sac_config>;
  using core = trainer_core<sac<Env, Backend>, sac_config, Backend>;
  friend base;
  friend core;

 public:
  using typename base::T;
  using typename base::batch_type;
  using typename base::env_type;
  using base::action_size;
  using base::observation_size;
  /// What iterate() returns.
  using iteration_stats = sac_iteration_stats;

  /// @brief Builds envs, networks, optimisers and the replay buffer; with a communicator of R > 1
  /// ranks (every rank constructs its agent with the same config), this rank's envs are
  /// rank * num_envs .. and the parameters are rank 0's.
  /// @param backend where the envs, networks and buffers live and run (serial, openmp or a cuda_backend)
  /// @param config the hyperparameters; validated here (a bad value throws std::invalid_argument naming it)
  /// @param env_params the envs' parameters (default: the env's defaults)
  /// @param comm the job's ranks (default: this process alone); it must outlive the agent
  /// @throw std::invalid_argument on a bad config (see sac_config::validate), or if the ranks'
  ///        configs differ or env_shards > 1 with R > 1; out_of_memory; distributed_error
  sac(Backend backend, sac_config config, typename Env::Params env_params = {},
      communicator& comm = default_communicator())
      : base(backend, checked(std::move(config)), env_params, comm, "sac", 2 * action_size, activation::identity),
        log_alpha_(serial_backend{}, 1), log_alpha_grad_(serial_backend{}, 1),
        alpha_opt_(serial_backend{}, 1, temperature_adam()),
        mean_(backend, this->rows() * std::size_t(action_size)),
        log_std_(backend, this->rows() * std::size_t(action_size)),
        eps_(backend, this->rows() * std::size_t(action_size)),
        pi_actions_(backend, this->part_rows() * std::size_t(action_size)), log_probs_(backend, this->part_rows()),
        grad_log_probs_(backend, this->part_rows()),
        grad_in1_(backend, this->part_rows() * std::size_t(q_inputs)),
        grad_in2_(backend, this->part_rows() * std::size_t(q_inputs)),
        grad_actions_(backend, this->part_rows() * std::size_t(action_size)),
        grad_mean_(backend, this->part_rows() * std::size_t(action_size)),
        grad_log_std_(backend, this->part_rows() * std::size_t(action_size)),
        grad_head_(backend, this->part_rows() * std::size_t(2 * action_size)) {
    this->initialize_and_join();
    log_alpha_.assign(std::vector<T>{T(std::log(config_.alpha))});
    target_entropy_ = std::isnan(config_.target_entropy) ? sac_target_entropy(std::size_t(action_size))
                                                          : config_.target_entropy;
  }

  /// The current temperature alpha.
  double alpha() const { return std::exp(double(log_alpha_.data()[0])); }
  /// The entropy target of the temperature's loss.
  double target_entropy() const noexcept { return target_entropy_; }
  /// The policy network: observations -> [mean (D), log_std (D)] before the tanh squashing.
  mlp<T, Backend>& actor() noexcept { return actor_; }

  /// @brief Writes the policy's actions, in the env's units, for observations [B, O]: tanh(mean)
  /// scaled to the bounds when `deterministic`, else a draw (element k from rng(seed, k, draw)).
  /// B must be at most max(num_envs, batch_size).
  /// @throw std::invalid_argument on sizes that do not fit
  void act(view<const T> observations, view<T> actions, bool deterministic, std::uint64_t seed = 0,
           std::uint64_t draw = 0) {
    constexpr const char* who = "rlkernels::sac::act";
    const std::size_t b = detail::check_act_arguments(observations.size(), actions.size(), actions.data(),
                                                       std::size_t(observation_size), std::size_t(action_size), this->rows(), who);
    const std::size_t bd = b * std::size_t(action_size);
    const view<T> a = env_actions_.view().subview(0, bd);
    if (deterministic) {
      head(observations, b);
      for_each_index(lb_, bd, detail::tanh_kernel<T>{mean_.data(), a.data()});
    } else {
      sample_policy(observations, b, seed, draw, a);
    }
    for_each_index(lb_, bd, detail::to_env_action_kernel<T>{a.data(), actions.data(), Env::action_low, Env::action_high});
  }

  /// @brief One gradient step: a fresh uniform batch from replay(); the critics towards the soft
  /// double-Q target (critic_loss_and_gradients), then, every policy_frequency-th critic step,
  /// policy_frequency steps of the actor (actor_loss_and_gradients) and of the temperature (when
  /// autotune), then, every target_network_frequency-th critic step, the Polyak update of the
  /// target critics. iterate() calls it gradient_steps times per iteration after the warm-up. No
  /// actor or temperature step before actor_learning_starts env steps are taken.
  /// The critic and actor losses stay in backend memory; iterate() reads them (and reports a NaN or
  /// infinite loss, naming the first such gradient step) once at its end. With autotune, the
  /// temperature's loss is read at each actor step (the temperature is a host value that the
  /// critic targets and the actor loss take).
  ///
  /// With env_shards or gradient_accumulation_steps > 1, or R > 1 ranks, the batch is sampled shard
  /// by shard (replay_buffer::sample_sharded) and each loss's gradient is the mean of its parts'
  /// (gradient_parts), all-reduced over the ranks before the optimiser step; the temperature's
  /// gradient likewise.
  void update(sac_iteration_stats& stats) {
    replay_.sample_sharded(this->shard_seeds(), batch_draw_++, batch_);
    // ---- critics ----
    const std::uint64_t critic_draw = noise_draw_++;
    this->for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
      critic_loss_into(batch_, first, this->part_rows(), detail::derive_key(config_.seed, detail::ac_key_target_noise),
                       critic_draw, row);
      detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), gradient_steps_ + 1, 1});
      critic_grads_.add({view<const T>(q1_.gradients()), view<const T>(q2_.gradients())}, s, k);
    });
    critic_grads_.reduce(*comm_, config_.gradient_reduction, {q1_.gradients(), q2_.gradients()}, "critic gradients");
    q1_opt_.step(q1_.parameters(), q1_.gradients());
    q2_opt_.step(q2_.parameters(), q2_.gradients());
    ++gradient_steps_;
    ++stats.gradient_steps;
    // ---- actor and temperature, delayed ----
    if (gradient_steps_ % config_.policy_frequency == 0 && this->actor_learning()) {
      for (std::uint64_t j = 0; j < config_.policy_frequency; ++j) {
        const std::uint64_t actor_draw = noise_draw_++;
        detail::host_parts temperature(config_.env_shards, config_.gradient_accumulation_steps);
        this->for_each_part([&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t row) {
          actor_loss_into(batch_, first, this->part_rows(), detail::derive_key(config_.seed, detail::ac_key_actor_noise),
                          actor_draw, row);
          detail::run_once(lb_, detail::ac_divergence_kernel{stats_.data(), gradient_steps_, 2});
          actor_grads_.add({view<const T>(actor_.gradients())}, s, k);
          if (config_.autotune) {
            // loss = -log_alpha * mean(log pi + target_entropy), with this actor step's log-probs (SB3).
            temperature.add(sac_temperature_loss(lb_, log_probs_.cview().subview(0, this->part_rows()),
                                                 log_alpha_.data()[0], T(target_entropy_))
                                .grad_log_alpha,
                            s, k);
          }
        });
        actor_grads_.reduce(*comm_, config_.gradient_reduction, {actor_.gradients()}, "actor gradients");
        actor_opt_.step(actor_.parameters(), actor_.gradients());
        actor_updated_ = true;
        if (config_.autotune) {
          double g = temperature.sum();
          const std::size_t parts = actor_grads_.parts();
          if (comm_->size() > 1)
            all_reduce(*comm_, serial_backend{}, view<double>(&g, 1), reduce_op::sum, config_.gradient_reduction,
                       "temperature gradient");
          if (parts > 1) g /= double(parts);
          const double la = double(log_alpha_.data()[0]);
          log_alpha_grad_.data()[0] = T(g);
          alpha_opt_.step(log_alpha_.view(), log_alpha_grad_.cview());
          stats.alpha_loss = la * g;  // -log_alpha * mean(log pi + target_entropy) over the whole batch
        }
      }
    }
    // ---- targets ----
    if (gradient_steps_ % config_.target_network_frequency == 0) {
      polyak_update(lb_, view<const T>(q1_.parameters()), q1_target_.parameters(), T(config_.tau));
      polyak_update(lb_, view<const T>(q2_.parameters()), q2_target_.parameters(), T(config_.tau));
    }
  }

  /// @brief The critics' loss on `batch` and its gradients, without an optimiser step:
  ///
  ///     y = r + gamma (1 - terminated) (min(Q1_target, Q2_target)(s', a') - alpha log pi(a'|s'))
  ///     loss = critic_loss_scale * (mean (Q1(s, a) - y)^2 + mean (Q2(s, a) - y)^2)
  ///
  /// with a' = tanh(mean + std eps) drawn from the current policy with noise rng(noise_seed, k, draw)
  /// (as tanh_gaussian_sample), y held constant; d loss / d parameters go into critic1().gradients()
  /// and critic2().gradients().
  /// @param batch exactly config().batch_size transitions
  /// @param noise_seed key of the noise draws (iterate() uses a key derived from the seed)
  /// @param draw counter of the draws (a fresh one per call in iterate())
  /// @throw std::invalid_argument if the batch has another size; std::logic_error with
  ///        env_shards or gradient_accumulation_steps > 1 (the workspaces hold one part: use update())
  twin_critic_loss_result critic_loss_and_gradients(const batch_type& batch, std::uint64_t noise_seed, std::uint64_t draw) {
    this->check_batch(batch, "rlkernels::sac::critic_loss_and_gradients");
    this->check_one_part("rlkernels::sac::critic_loss_and_gradients");
    critic_loss_into(batch, 0, config_.batch_size, noise_seed, draw, 0);
    return stats_.get(0).critic;  // one host read
  }

  /// @brief The actor's loss on the batch's observations and its gradient, without an optimiser step:
  ///
  ///     loss = mean(alpha log pi(a|s) - min(Q1, Q2)(s, a)),  a = tanh(mean(s) + std(s) eps)
  ///
  /// reparameterised (eps from rng(noise_seed, k, draw), held fixed), alpha constant; d loss / d
  /// parameters go into actor().gradients() (the critics' gradients are untouched).
  /// The log-probs of this step stay available to the temperature's loss.
  /// @throw std::invalid_argument if the batch does not have config().batch_size transitions;
  ///        std::logic_error as critic_loss_and_gradients
  sac_actor_loss_result actor_loss_and_gradients(const batch_type& batch, std::uint64_t noise_seed, std::uint64_t draw) {
    this->check_batch(batch, "rlkernels::sac::actor_loss_and_gradients");
    this->check_one_part("rlkernels::sac::actor_loss_and_gradients");
    actor_loss_into(batch, 0, config_.batch_size, noise_seed, draw, 0);
    return stats_.get(0).actor;  // one host read
  }

 private:
  /// critic_loss_and_gradients of the batch's rows [first, first + b) without a host wait (the
  /// loss goes to stats_); the target actions' noise is that of rows first_row .. of the whole
  /// (possibly distributed) batch.
  void critic_loss_into(const batch_type& batch, std::size_t first, std::size_t b, std::uint64_t noise_seed,
                        std::uint64_t draw, std::uint64_t first_row) {
    const std::size_t o = std::size_t(observation_size), d = std::size_t(action_size), bd = b * d;
    const view<const T> obs = batch.observations.cview().subview(first * o, b * o);
    const view<const T> next_obs = batch.next_observations.cview().subview(first * o, b * o);
    const view<T> log_probs = log_probs_.view().subview(0, b), targets = targets_.view().subview(0, b);
    const view<const T> in = critic_in_.cview().subview(0, b * std::size_t(q_inputs));
    sample_policy(next_obs, b, noise_seed, draw, pi_actions_.view(), first_row);
    tanh_gaussian_log_prob(lb_, dist(b), action_bounds<T>{}, eps_.cview().subview(0, bd), log_probs);
    this->critic_input(next_obs, pi_actions_.cview().subview(0, bd), b);
    const view<const T> q1_next = q1_target_.forward(in, target_ws_);
    const view<const T> q2_next = q2_target_.forward(in, target_ws2_);
    sac_critic_targets(lb_, batch.rewards.cview().subview(first, b), batch.terminated.cview().subview(first, b),
                       q1_next, q2_next, view<const T>(log_probs), T(config_.gamma), T(alpha()), targets);
    this->critic_input(obs, batch.actions.cview().subview(first * d, bd), b);
    const view<const T> q1 = q1_.forward(in, q1_ws_);
    const view<const T> q2 = q2_.forward(in, q2_ws_);
    twin_critic_loss(lb_, view<twin_critic_loss_result>(&stats_.data()->critic, 1), q1, q2, view<const T>(targets),
                     T(config_.critic_loss_scale), grad_q1_.view().subview(0, b), grad_q2_.view().subview(0, b));
    q1_.backward(in, grad_q1_.cview().subview(0, b), q1_ws_);
    q2_.backward(in, grad_q2_.cview().subview(0, b), q2_ws_);
  }

  /// actor_loss_and_gradients of the batch's rows [first, first + b) without a host wait (the loss
  /// goes to stats_), with the noise of rows first_row .. of the whole batch.
  void actor_loss_into(const batch_type& batch, std::size_t first, std::size_t b, std::uint64_t noise_seed,
                       std::uint64_t draw, std::uint64_t first_row) {
    const std::size_t o = std::size_t(observation_size), d = std::size_t(action_size), bd = b * d;
    const view<const T> obs = batch.observations.cview().subview(first * o, b * o);
    const view<T> log_probs = log_probs_.view().subview(0, b);
    const view<const T> in = critic_in_.cview().subview(0, b * std::size_t(q_inputs));
    sample_policy(obs, b, noise_seed, draw, pi_actions_.view(), first_row);
    const gaussian_view<T> g = dist(b);
    const view<const T> eps = eps_.cview().subview(0, bd);
    tanh_gaussian_log_prob(lb_, g, action_bounds<T>{}, eps, log_probs);
    this->critic_input(obs, pi_actions_.cview().subview(0, bd), b);
    const view<const T> q1 = q1_.forward(in, q1_ws_);
    const view<const T> q2 = q2_.forward(in, q2_ws_);
    sac_actor_loss(lb_, view<sac_actor_loss_result>(&stats_.data()->actor, 1), view<const T>(log_probs), q1, q2,
                   T(alpha()), grad_log_probs_.view().subview(0, b), grad_q1_.view().subview(0, b),
                   grad_q2_.view().subview(0, b));
    // d loss / d a through both critics.
    const std::size_t bq = b * std::size_t(q_inputs);
    q1_.input_gradient(in, grad_q1_.cview().subview(0, b), q1_ws_, grad_in1_.view().subview(0, bq));
    q2_.input_gradient(in, grad_q2_.cview().subview(0, b), q2_ws_, grad_in2_.view().subview(0, bq));
    for_each_index(lb_, bd, detail::action_columns_kernel<T>{grad_in1_.data(), grad_in2_.data(), grad_actions_.data(),
                                                             std::size_t(observation_size), std::size_t(action_size)});
    // d loss / d (mean, log_std): the log-prob term (alpha / B per row) plus the path through a.
    const view<T> grad_mean = grad_mean_.view().subview(0, bd), grad_log_std = grad_log_std_.view().subview(0, bd);
    tanh_gaussian_log_prob(lb_, g, action_bounds<T>{}, eps, log_probs, grad_mean, grad_log_std,
                           grad_log_probs_.cview().subview(0, b));
    tanh_gaussian_action_backward(lb_, g, action_bounds<T>{}, eps, grad_actions_.cview().subview(0, bd), grad_mean,
                                  grad_log_std, true);
    for_each_index(lb_, bd, detail::merge_head_kernel<T>{grad_mean_.data(), grad_log_std_.data(), grad_head_.data(),
                                                         std::size_t(action_size)});
    actor_.backward(obs, grad_head_.cview().subview(0, 2 * bd), actor_ws_);
  }

 public:
  /// @brief A checksum (detail::fnv1a over the bytes) of every parameter: actor, critics, targets
  /// and log(alpha). Data-parallel ranks compare theirs every config().parameter_check_every iterations.
  std::uint64_t parameter_checksum() const {
    const std::uint64_t h = detail::parameters_checksum<T>(
        {view<const T>(actor_.parameters()), view<const T>(q1_.parameters()), view<const T>(q2_.parameters()),
         view<const T>(q1_target_.parameters()), view<const T>(q2_target_.parameters())},
        backend_);
    return detail::fnv1a(log_alpha_.data(), sizeof(T), h);
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

  /// The actions of an iteration after the warm-up: draws a ~ pi(.|s_t), env shard by env shard.
  void policy_actions(std::uint64_t draw) {
    const std::size_t n = config_.num_envs;
    const std::size_t per = n / config_.env_shards, o = std::size_t(observation_size), d = std::size_t(action_size);
    for (std::size_t s = 0; s < config_.env_shards; ++s)  // a rank's rows in one call, as a rank's are
      sample_policy(env_.observations().cview().subview(s * per * o, per * o), per,
                    detail::derive_key(config_.seed, detail::ac_key_actions), draw,
                    this->actions_.view().subview(s * per * d, per * d), this->first_env() + s * per);
  }
  /// SAC's own statistics: the last actor step's entropy, the temperature.
  void finish_statistics(sac_iteration_stats& stats, const detail::actor_critic_device_stats& d) {
    if (actor_updated_) stats.entropy = d.actor.entropy;
    stats.alpha = alpha();
  }
  /// The shared state, then the temperature and its optimiser.
  template <class C>
  void bind_shared(C& c) {
    this->bind_common(c);
    c.bind("log_alpha", serial_backend{}, log_alpha_.view());
    alpha_opt_.bind_checkpoint(c, "alpha_adam/");
  }
  static sac_config checked(sac_config c) {
    c.validate();
    return c;
  }
  /// The temperature's Adam: alpha_lr, the config's epsilon, no weight decay.
  adam_params temperature_adam() const {
    adam_params p;
    p.learning_rate = config_.alpha_lr;
    p.epsilon = config_.adam_epsilon;
    return p;
  }

  gaussian_view<T> dist(std::size_t b) const {
    const std::size_t bd = b * std::size_t(action_size);
    return gaussian_view<T>{std::size_t(action_size), mean_.cview().subview(0, bd), log_std_.cview().subview(0, bd),
                            T(config_.log_std_min), T(config_.log_std_max)};
  }
  /// Actor forward on observations [b, O] into mean_ and log_std_.
  void head(view<const T> observations, std::size_t b) {
    const view<const T> out = actor_.forward(observations, actor_ws_);
    for_each_index(lb_, b * std::size_t(action_size),
                   detail::split_head_kernel<T>{out.data(), mean_.data(), log_std_.data(), std::size_t(action_size)});
  }
  /// a = tanh(mean + std * eps) in [-1, 1], with eps kept in eps_ for the log-probs and gradients.
  void sample_policy(view<const T> observations, std::size_t b, std::uint64_t seed, std::uint64_t draw, view<T> out,
                     std::uint64_t first_row = 0) {
    head(observations, b);
    const std::size_t bd = b * std::size_t(action_size);
    tanh_gaussian_sample(lb_, dist(b), action_bounds<T>{}, seed, draw, out.subview(0, bd), eps_.view().subview(0, bd),
                         first_row);
  }

  buffer<T, serial_backend> log_alpha_, log_alpha_grad_;
  adam<T, serial_backend> alpha_opt_;
  buffer<T, Backend> mean_, log_std_, eps_, pi_actions_, log_probs_, grad_log_probs_, grad_in1_, grad_in2_,
      grad_actions_, grad_mean_, grad_log_std_, grad_head_;
  double target_entropy_ = 0;
};

/// @brief SAC hyperparameters tuned for the env `id` (a Gymnasium id); CleanRL's defaults
/// (sac_config{}) for envs without a preset. The seed is left at 1.
///
/// - Pendulum-v1: 64x64 ReLU networks, batch 100, 100 warm-up steps, every learning rate 1e-3,
///   one actor step per critic step, alpha starting at 1, 20k steps (the size of RLtools'
///   Pendulum-v1 SAC: small networks train fast; every seed evaluates above -200, see docs/training.md).
inline sac_config sac_preset(std::string_view id) {
  sac_config c;
  if (id == "Pendulum-v1") {
    c.total_timesteps = 20000;
    c.hidden_sizes = {64, 64};
    c.batch_size = 100;
    c.learning_starts = 100;
    c.policy_lr = 1e-3;
    c.q_lr = 1e-3;
    c.alpha_lr = 1e-3;
    c.policy_frequency = 1;
    c.alpha = 1.0;
  }
  return c;
}

}  // namespace rlkernels
