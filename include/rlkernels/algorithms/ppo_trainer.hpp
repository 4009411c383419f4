// rlkernels/algorithms/ppo_trainer.hpp
// The ppo<Env, Backend> trainer (Schulman et al. 2017, as CleanRL's ppo.py / ppo_continuous_action.py
// compute it): rollouts, GAE, minibatch updates, evaluation and checkpoints. Read `iterate()` top to
// bottom to see one PPO iteration. ppo.hpp includes it with its config and kernels.
#pragma once

#include "ppo_config.hpp"
#include "ppo_kernels.hpp"
#include "../buffers/rollout_buffer.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "trainer_core.hpp"
#include "../core/backend.hpp"
#include "../core/communicator.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/vec_env.hpp"
#include "../estimators/gae.hpp"
#include "../estimators/normalization.hpp"
#include "../io/checkpoint.hpp"
#include "../losses/distributions.hpp"
#include "../losses/ppo.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"
#include "../nn/serialize.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {
/// @brief A PPO agent and its training loop for any rlkernels environment `Env` with discrete
/// (categorical policy) or continuous (diagonal Gaussian policy with a state-independent log-std)
/// actions, on `Backend`. Separate actor and critic MLPs, initialised as CleanRL does (orthogonal,
/// gain sqrt(2) in hidden layers, 0.01 for the policy head, 1 for the value head, zero biases).
///
///     rlkernels::ppo<rlkernels::cartpole<float>, rlkernels::openmp_backend> agent(rlkernels::openmp, config);
///     while (!agent.done()) { auto s = agent.iterate(); ... }
///     auto result = agent.evaluate(100, 12345);
///
/// Determinism: for a given config and seed, a run is the same on serial and OpenMP (any thread
/// count): envs, weights, action draws and shuffles are pure functions of the seed, and every
/// reduction has a fixed order.
///
/// Data parallelism (docs/distributed.md): given a communicator of R ranks, each rank steps its
/// own num_envs envs (envs rank * num_envs ..., with those envs' random streams), the parameters
/// start as rank 0's, each minibatch's gradient is all-reduced before the optimiser step, the
/// episode statistics are gathered, and each rank writes its shard of a checkpoint (rank 0 the
/// manifest, last). With the ordered
/// reduction a run equals one process with R * num_envs envs and env_shards = R bit for bit.
///
/// The counters, checkpoints (save_checkpoint, load_checkpoint, automatic ones every
/// config().checkpoint_every iterations) and done() come from trainer_core.
template <class Env, class Backend>
class ppo : public trainer_core<ppo<Env, Backend>, ppo_config, Backend> {
  using core = trainer_core<ppo<Env, Backend>, ppo_config, Backend>;
  friend core;
  using core::backend_;
  using core::comm_;
  using core::config_;
  using core::global_step_;
  using core::gradient_steps_;
  using core::iteration_;

 public:
  using env_type = vec_env<Env, Backend>;                 ///< the training envs
  using scalar_type = typename env_type::scalar_type;     ///< float or double
  using action_type = typename env_type::action_type;     ///< int32 (discrete) or scalar_type
  using backend_type = Backend;                           ///< where everything runs
  using T = scalar_type;  ///< shorthand for scalar_type
  /// True for discrete action spaces.
  static constexpr bool discrete = std::is_same_v<action_type, std::int32_t>;
  static constexpr int observation_size = env_type::observation_size;  ///< inputs of both networks
  static constexpr int action_width = env_type::action_width;          ///< 1 (discrete) or action_size
  /// Actor outputs: logits per action (discrete) or means per action dimension.
  static constexpr int policy_outputs = detail::ppo_policy_outputs<Env>();

  /// @brief Builds envs, networks, optimisers and buffers; with a communicator of R > 1 ranks
  /// (every rank constructs its agent with the same config), this rank's envs are
  /// rank * num_envs .. and the parameters are rank 0's.
  /// @param backend where the envs, networks and buffers live and run (serial, openmp or a cuda_backend)
  /// @param config the hyperparameters; validated here (a bad value throws std::invalid_argument naming it)
  /// @param env_params the envs' parameters (default: the env's defaults)
  /// @param comm the job's ranks (default: this process alone); it must outlive the agent
  /// @throw std::invalid_argument on a bad config (see ppo_config::validate), or if the ranks'
  ///        configs differ or env_shards > 1 with R > 1; out_of_memory; distributed_error
  ppo(Backend backend, ppo_config config, typename Env::Params env_params = {},
      communicator& comm = default_communicator())
      : core(backend, checked(std::move(config)), comm, "ppo"), env_params_(env_params),
        env_(backend, config_.num_envs, config_.seed, env_params, std::uint64_t(comm.rank()) * config_.num_envs),
        rollout_(backend, config_.num_steps, config_.num_envs, observation_size, action_width),
        minibatch_(backend, config_.minibatch_size(), observation_size, action_width),
        actor_(backend, layer_sizes(policy_outputs), config_.hidden_activation, activation::identity),
        critic_(backend, layer_sizes(1), config_.hidden_activation, activation::identity),
        log_std_(backend, discrete ? 0 : std::size_t(action_width)),
        log_std_grad_(backend, discrete ? 0 : std::size_t(action_width)),
        actor_opt_(backend, actor_.num_parameters(), adam_for(config_)),
        critic_opt_(backend, critic_.num_parameters(), adam_for(config_)),
        log_std_opt_(backend, discrete ? 0 : std::size_t(action_width), adam_for(config_)),
        actor_ws_(actor_, std::max(config_.num_envs, config_.minibatch_size())),
        critic_ws_(critic_, std::max(config_.num_envs, config_.minibatch_size())),
        obs_rms_(backend, std::size_t(observation_size)), return_rms_(backend, 1),
        obs_scratch_(backend, config_.num_envs * std::size_t(observation_size)),
        log_std_rows_(backend, discrete ? 0 : std::max(config_.num_envs, config_.minibatch_size()) * std::size_t(action_width)),
        new_log_probs_(backend, config_.minibatch_size()), grad_log_probs_(backend, config_.minibatch_size()),
        grad_policy_out_(backend, config_.minibatch_size() * std::size_t(policy_outputs)),
        grad_log_std_rows_(backend, discrete ? 0 : config_.minibatch_size() * std::size_t(action_width)),
        grad_entropy_(backend, config_.minibatch_size() * std::size_t(policy_outputs)),
        entropy_(backend, config_.minibatch_size()), grad_values_(backend, config_.minibatch_size()),
        discounted_returns_(backend, config_.num_envs),
        env_actions_(backend, discrete ? 0 : config_.num_envs * std::size_t(action_width)), stats_(backend, 1),
        grads_(backend, gradient_size(), config_.env_shards, config_.gradient_accumulation_steps, comm),
        adv_scratch_(backend, config_.env_shards + 2), minibatch_kls_(backend, config_.num_minibatches),
        old_means_(backend, analytic_kl() ? config_.batch_size() * std::size_t(action_width) : 0),
        old_log_std_(backend, analytic_kl() ? std::size_t(action_width) : 0), timer_(backend) {
    const double s2 = std::sqrt(2.0);
    actor_.initialize(config_.seed * 2 + 11, layer_init{weight_init::orthogonal, s2, 0.0},
                      layer_init{weight_init::orthogonal, 0.01, 0.0});
    critic_.initialize(config_.seed * 2 + 12, layer_init{weight_init::orthogonal, s2, 0.0},
                       layer_init{weight_init::orthogonal, 1.0, 0.0});
    if (!discrete) log_std_.assign(std::vector<T>(std::size_t(action_width), T(config_.init_log_std)));
    RLK_EXPECTS(!discrete || config_.kl_estimator == ppo_kl_estimator::k3, std::invalid_argument,
                "rlkernels::ppo: kl_estimator analytic is for Gaussian (continuous-action) policies; this env's "
                "actions are discrete (use k3)");
    this->template join_ranks<T>({{actor_.parameters(), "actor parameters"},
                                  {critic_.parameters(), "critic parameters"},
                                  {log_std_.view(), "log-std"}});
  }

  /// Env steps per iteration over all ranks: R * num_envs * num_steps.
  std::size_t global_batch_size() const noexcept { return std::size_t(comm_->size()) * config_.batch_size(); }

  /// The most observation rows one act() call takes; evaluate() acts in chunks of this many.
  std::size_t max_act_rows() const noexcept {
    return config_.normalize_observations ? config_.num_envs : std::max(config_.num_envs, config_.minibatch_size());
  }
  /// The policy network (logits or means).
  mlp<T, Backend>& actor() noexcept { return actor_; }
  /// The policy network, read-only.
  const mlp<T, Backend>& actor() const noexcept { return actor_; }
  /// The value network.
  mlp<T, Backend>& critic() noexcept { return critic_; }
  /// Continuous actions: the log standard deviations [action_size] (empty for discrete).
  buffer<T, Backend>& log_std() noexcept { return log_std_; }
  /// The training envs.
  env_type& envs() noexcept { return env_; }
  /// The observation normaliser (used when config().normalize_observations).
  const running_mean_std<T, Backend>& observation_normalizer() const noexcept { return obs_rms_; }

  /// @brief One PPO iteration: a rollout of num_steps steps of every env with the current policy,
  /// GAE, then update_epochs passes of minibatch updates of actor and critic; then, every
  /// config().checkpoint_every iterations, an automatic checkpoint (checkpoint_dir/ppo-STEP.rlkc
  /// with STEP the global step, the newest checkpoint_keep kept; see docs/checkpoints.md).
  ///
  /// Host round trips: one read at the end (the statistics, the rollout's deferred action check
  /// and the divergence check together), one more per normaliser in use (its deferred check), and
  /// one per epoch with target_kl > 0 or adaptive_lr_kl > 0; none per env step or minibatch
  /// (docs/training.md, "Host round trips per iteration").
  /// @throw std::logic_error if training is already done(); invalid_action (at the end of the
  ///        iteration) if the policy produced an invalid action (e.g. NaN): the envs stopped
  ///        stepping at that step; rlkernels::error at the end of the iteration if a gradient
  ///        norm became NaN or infinite (diverged training; the message names the gradient step,
  ///        and the parameters are not usable), or if the automatic checkpoint cannot be written
  ///        (the iteration itself is complete then)
  ppo_iteration_stats iterate() {
    this->begin_iteration();
    ppo_iteration_stats stats;
    stats.iteration = iteration_;
    // CleanRL: lr = lr0 * (1 - (iteration - 1) / num_iterations); the adaptive one carries over.
    const double lr = config_.anneal_lr
                          ? config_.learning_rate * (1.0 - double(iteration_ - 1) / double(this->num_iterations()))
                          : (adaptive() ? adaptive_lr_ : config_.learning_rate);
    set_learning_rate(lr);
    stats.learning_rate = lr;

    timer_.mark(0);
    collect_rollout();
    env_.episode_statistics_into(view<episode_statistics>(&stats_.data()->episodes, 1));
    env_.clear_episode_statistics();
    rollout_.compute_advantages(T(config_.gamma), T(config_.gae_lambda));
    timer_.mark(1);

    const std::size_t m = config_.minibatch_size();
    detail::run_once(backend_, detail::ppo_stats_start_kernel{stats_.data()});
    std::vector<double> kls;  // the epoch's minibatch KLs, when read inside the iteration
    for (std::size_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
      rollout_.shuffle_sharded(shard_seeds(), shuffle_epoch_++, m);
      minibatch_kls_.zero();
      for (std::size_t k = 0; k < config_.num_minibatches; ++k) {
        rollout_.gather_minibatch(k, m, minibatch_);
        update_minibatch(++stats.gradient_steps, k);
      }
      // Every rank holds its parts' shares of each minibatch's KL: their sum is the whole
      // minibatch's, the same on every rank after this (in rank order with the ordered reduction).
      if (comm_->size() > 1)
        all_reduce(*comm_, backend_, minibatch_kls_.view(), reduce_op::sum, config_.gradient_reduction,
                   "minibatch KLs");
      detail::run_once(backend_, detail::ppo_epoch_kl_kernel{stats_.data(), minibatch_kls_.data(), config_.num_minibatches});
      // The epoch's KLs: the only read inside an iteration, and only with target_kl > 0 or the
      // adaptive learning rate. The mean adapts the learning rate; the last minibatch's may stop
      // the epochs early.
      if (config_.target_kl > 0 || adaptive()) {
        kls = minibatch_kls_.to_host();
        if (adaptive()) adapt_learning_rate(detail::mean_in_order(kls));
        if (config_.target_kl > 0 && kls.back() > config_.target_kl) break;
      }
    }
    timer_.mark(2);
    // The iteration's one host read: its statistics and the rollout's deferred action check.
    detail::stage_action_flag(env_, &stats_.data()->action_flag);
    failed_steps_into(env_, &stats_.data()->failures);
    detail::ppo_device_stats d = stats_.get(0);
    if (comm_->size() > 1) d = gather_statistics(d);
    gradient_steps_ += stats.gradient_steps;
    detail::raise_if_flagged(env_, d.action_flag);
    // The normalisers' deferred checks of the rollout's batches: one read each, only when enabled.
    if (config_.normalize_observations) obs_rms_.check();
    if (config_.normalize_rewards) return_rms_.check();
    RLK_EXPECTS(d.bad_step == 0, error, "rlkernels::ppo::iterate: the gradient norm is ", d.bad_norm,
                " at gradient step ", d.bad_step, " of iteration ", iteration_,
                " (a NaN or infinity in the gradients: training diverged)");
    stats.policy_loss = d.policy.loss;
    stats.value_loss = d.value.loss;
    stats.entropy = d.entropy;
    stats.failed_steps = this->failed_steps_since_last(d.failures);
    stats.approx_kl = d.last_kl;
    stats.epoch_kl = d.epoch_kl;
    stats.minibatch_kls = std::move(kls);
    stats.grad_norm = d.grad_norm;
    stats.clip_fraction = d.clip_fraction_sum / double(stats.gradient_steps);
    const episode_statistics& ep = d.episodes;
    stats.episodes = ep.count;
    stats.episode_return_sum = ep.mean_return * double(ep.count);
    stats.episode_length_sum = ep.mean_length * double(ep.count);
    global_step_ += global_batch_size();
    stats.global_step = global_step_;
    stats.rollout_seconds = timer_.seconds(0, 1);
    stats.update_seconds = timer_.seconds(1, 2);
    this->end_iteration();
    return stats;
  }

  /// @brief A checksum (detail::fnv1a over the bytes) of the parameters: actor, critic and log-std.
  /// Data-parallel ranks compare theirs every config().parameter_check_every iterations.
  std::uint64_t parameter_checksum() const {
    std::uint64_t h = detail::fnv1a(nullptr, 0);
    for (const std::vector<T>& v : {actor_.parameters_to_host(), critic_.parameters_to_host(), log_std_.to_host()})
      h = detail::fnv1a(v.data(), v.size() * sizeof(T), h);
    return h;
  }


 private:
  /// What every rank holds alike: the config, the counters ("global_step", "iteration",
  /// "action_draw", "shuffle_epoch"; "gradient_steps" only with target_kl > 0, else it follows
  /// from the iteration; "adaptive_learning_rate" only with adaptive_lr_kl > 0), both networks'
  /// parameters, the log-stds, the three Adams and both normalisers. The rollout, gradients and
  /// scratch are not saved.
  template <class C>
  void bind_shared(C& c) {
    c.bind_constant("config", config_.hyperparameters());
    c.bind_value("global_step", global_step_);
    c.bind_value("iteration", iteration_);
    c.bind_value("action_draw", action_draw_);
    c.bind_value("shuffle_epoch", shuffle_epoch_);
    if (config_.target_kl > 0) c.bind_value("gradient_steps", gradient_steps_);
    if (adaptive()) c.bind_value("adaptive_learning_rate", adaptive_lr_);
    c.bind("actor/parameters", backend_, actor_.parameters());
    c.bind("critic/parameters", backend_, critic_.parameters());
    c.bind("log_std", backend_, log_std_.view());
    actor_opt_.bind_checkpoint(c, "actor_optimizer/");
    critic_opt_.bind_checkpoint(c, "critic_optimizer/");
    log_std_opt_.bind_checkpoint(c, "log_std_optimizer/");
    obs_rms_.bind_checkpoint(c, "observation_normalizer/");
    return_rms_.bind_checkpoint(c, "return_normalizer/");
  }
  /// What is this rank's own: its envs and their discounted returns.
  template <class C>
  void bind_local(C& c) {
    c.bind("discounted_returns", backend_, discounted_returns_.view());
    env_.bind_checkpoint(c, "env/");
  }

  /// Without target_kl every iteration takes update_epochs * num_minibatches gradient steps.
  void after_load() {
    if (!(config_.target_kl > 0))
      gradient_steps_ = iteration_ * std::uint64_t(config_.update_epochs) * std::uint64_t(config_.num_minibatches);
  }
  /// Env steps of one iteration on each rank: num_envs * num_steps.
  static std::uint64_t steps_per_iteration(const ppo_config& c) noexcept { return c.batch_size(); }

 public:

  /// @brief Writes the policy's actions for observations [B, observation_size] (raw; they are
  /// normalised here when the config says so): the mode (argmax / mean) when `deterministic`,
  /// else a draw from rng(seed, row, draw); continuous actions are clipped to the env's
  /// [action_low, action_high] (as SB3's predict() does). B must be at most max(num_envs,
  /// minibatch size).
  void act(view<const T> observations, view<action_type> actions, bool deterministic, std::uint64_t seed = 0,
           std::uint64_t draw = 0) {
    constexpr const char* who = "rlkernels::ppo::act";
    RLK_EXPECTS(observations.size() % std::size_t(observation_size) == 0, std::invalid_argument, who,
                ": observations has ", observations.size(), " elements, not a multiple of ", observation_size);
    const std::size_t b = observations.size() / std::size_t(observation_size);
    detail::check_view_size(actions.size(), actions.data(), b * std::size_t(action_width), who, "actions");
    view<const T> in = observations;
    if (config_.normalize_observations) {
      RLK_EXPECTS(b <= config_.num_envs, std::invalid_argument, who, ": at most num_envs rows with normalisation");
      obs_rms_.normalize(observations, obs_scratch_.view().subview(0, observations.size()), T(config_.observation_clip));
      in = obs_scratch_.cview().subview(0, observations.size());
    }
    const view<const T> out = actor_.forward(in, actor_ws_);
    if constexpr (discrete) {
      if (deterministic) {
        for_each_index(backend_, b, detail::argmax_kernel<T>{out.data(), actions.data(), std::size_t(policy_outputs)});
      } else {
        categorical_sample(backend_, categorical_view<T>{std::size_t(policy_outputs), out, {}}, seed, draw, actions);
      }
    } else {
      if (deterministic) {
        copy(backend_, out, actions);
      } else {
        sample_gaussian(out, b, seed, draw, actions);
      }
      for_each_index(backend_, b * std::size_t(action_width),
                     detail::clip_action_kernel<T>{actions.data(), actions.data(), T(Env::action_low), T(Env::action_high)});
    }
  }

  /// @brief Deterministic (or stochastic) evaluation: `episodes` fresh envs (seeded with `seed`,
  /// so they differ from the training envs) run the policy until each has finished one episode;
  /// returns their returns. Training state is untouched (the normaliser is frozen).
  /// @param episodes number of evaluation envs (one episode each), >= 1
  /// @param seed seed of the evaluation envs (and of the action draws when stochastic)
  /// @param deterministic argmax / mean actions (true) or draws from the policy
  /// @param max_steps safety bound on steps (envs without a time limit)
  /// @throw std::invalid_argument if episodes is 0; rlkernels::error if some episode did not end
  ///        within max_steps
  policy_evaluation evaluate(std::size_t episodes, std::uint64_t seed, bool deterministic = true,
                             std::size_t max_steps = 1000000) {
    const std::size_t chunk = max_act_rows();
    return detail::evaluate_policy<Env>(
        backend_, env_params_, episodes, seed, chunk, max_steps, "rlkernels::ppo::evaluate",
        [&](view<const T> obs, view<action_type> actions, std::size_t first, std::size_t step) {
          // Stochastic draws: a key of their own (not the eval envs' streams), one per chunk of envs.
          act(obs, actions, deterministic, detail::derive_key(detail::derive_key(seed, detail::ppo_key_evaluation), first),
              step);
        });
  }

  /// @brief PPO's loss on a minibatch and its gradients, without an optimiser step:
  ///
  ///     total = policy_loss - ent_coef * entropy + vf_coef * value_loss
  ///
  /// (the clipped surrogate; CleanRL's clipped value loss with its 0.5 factor, or the plain one;
  /// the mean entropy), with d total / d parameters written into actor().gradients(),
  /// critic().gradients() and log_std_gradients(). iterate() calls this for every minibatch, then
  /// clips the global gradient norm and steps Adam.
  /// @param mb a minibatch of exactly config().minibatch_size() rows (rollout().gather_minibatch)
  /// @throw std::invalid_argument if mb has another size
  ppo_loss loss_and_gradients(const rollout_minibatch<T, action_type, Backend>& mb) {
    const std::size_t m = config_.minibatch_size();
    RLK_EXPECTS(mb.size() == m, std::invalid_argument, "rlkernels::ppo::loss_and_gradients: the minibatch has ",
                mb.size(), " rows, the config's minibatch size is ", m);
    loss_and_gradients_into(mb, 0, m, config_.normalize_advantages);
    const detail::ppo_device_stats d = stats_.get(0);  // one host read
    ppo_loss l;
    l.policy_loss = d.policy.loss;
    l.value_loss = d.value.loss;
    l.entropy = d.entropy;
    l.total = d.policy.loss - config_.ent_coef * d.entropy + config_.vf_coef * d.value.loss;
    l.approx_kl = d.policy.approx_kl_k3;
    l.clip_fraction = d.policy.clip_fraction;
    return l;
  }

  /// The rollout buffer (filled by the last iterate()).
  rollout_buffer<T, action_type, Backend>& rollout() noexcept { return rollout_; }
  /// Continuous actions: the gradient of the log-stds [action_size] (empty for discrete).
  buffer<T, Backend>& log_std_gradients() noexcept { return log_std_grad_; }

 private:
  view<ppo_policy_stats> policy_stats_view() noexcept { return {&stats_.data()->policy, 1}; }
  view<value_loss_stats> value_stats_view() noexcept { return {&stats_.data()->value, 1}; }
  view<double> entropy_view() noexcept { return {&stats_.data()->entropy, 1}; }

  /// loss_and_gradients of rows [first, first + m) of `mb` without a host wait: the loss
  /// statistics go to stats_ in backend memory.
  void loss_and_gradients_into(const rollout_minibatch<T, action_type, Backend>& mb, std::size_t first, std::size_t m,
                               bool normalize_advantages) {
    const std::size_t a = std::size_t(policy_outputs);
    const std::size_t width = std::size_t(action_width);
    const view<const T> obs = mb.observations.cview().subview(first * std::size_t(observation_size),
                                                               m * std::size_t(observation_size));
    const view<const T> old_log_probs = mb.log_probs.cview().subview(first, m);
    const view<const T> advantages = mb.advantages.cview().subview(first, m);
    const view<T> new_log_probs = new_log_probs_.view().subview(0, m), grad_log_probs = grad_log_probs_.view().subview(0, m);
    const view<T> entropy = entropy_.view().subview(0, m);
    // ---- actor: clipped surrogate and entropy bonus ----
    const view<const T> out = actor_.forward(obs, actor_ws_);
    const view<T> grad_out = grad_policy_out_.view().subview(0, m * a);
    if constexpr (discrete) {
      const categorical_view<T> dist{a, out, {}};
      const view<const std::int32_t> actions = mb.actions.cview().subview(first, m);
      categorical_log_prob(backend_, dist, actions, new_log_probs);
      ppo_policy_loss<Backend, T>(backend_, policy_stats_view(), view<const T>(new_log_probs), old_log_probs, advantages,
                                  T(config_.clip_coef), normalize_advantages, grad_log_probs);
      // d loss / d logits = d loss / d log_probs * d log_probs / d logits.
      categorical_log_prob(backend_, dist, actions, new_log_probs, grad_out, view<const T>(grad_log_probs));
      if (config_.ent_coef > 0) {
        categorical_mean_entropy(backend_, entropy_view(), dist, entropy, grad_entropy_.view().subview(0, m * a));
        for_each_index(backend_, m * a, detail::axpy_kernel<T>{T(-config_.ent_coef), grad_entropy_.data(), grad_out.data()});
      } else {
        categorical_mean_entropy(backend_, entropy_view(), dist, entropy);
      }
    } else {
      const std::size_t d = width;
      for_each_index(backend_, m * d, detail::expand_log_std_kernel<T>{log_std_.data(), log_std_rows_.data(), d});
      const gaussian_view<T> dist{d, out, log_std_rows_.cview().subview(0, m * d)};
      const view<const T> actions = mb.actions.cview().subview(first * d, m * d);
      const view<T> grad_log_std_rows = grad_log_std_rows_.view().subview(0, m * d);
      gaussian_log_prob(backend_, dist, actions, new_log_probs);
      if (analytic_kl())
        detail::deterministic_sum_into(backend_, m,
                                       detail::gaussian_kl_term<T>{out.data(), log_std_.data(), old_means_.data(),
                                                                   old_log_std_.data(), mb.indices.data() + first, d},
                                       0.0, detail::add_doubles{}, &stats_.data()->kl_part_sum);
      ppo_policy_loss<Backend, T>(backend_, policy_stats_view(), view<const T>(new_log_probs), old_log_probs, advantages,
                                  T(config_.clip_coef), normalize_advantages, grad_log_probs);
      gaussian_log_prob(backend_, dist, actions, new_log_probs, grad_out, grad_log_std_rows,
                        view<const T>(grad_log_probs));
      if (config_.ent_coef > 0) {
        gaussian_mean_entropy(backend_, entropy_view(), dist, entropy, grad_entropy_.view().subview(0, m * d));
        for_each_index(backend_, m * d,
                       detail::axpy_kernel<T>{T(-config_.ent_coef), grad_entropy_.data(), grad_log_std_rows_.data()});
      } else {
        gaussian_mean_entropy(backend_, entropy_view(), dist, entropy);
      }
      // The log-std is shared by all rows: its gradient is the column sum.
      for_each_index(backend_, d, detail::column_sum_kernel<T>{grad_log_std_rows_.data(), log_std_grad_.data(), m, d});
    }
    actor_.backward(obs, view<const T>(grad_out), actor_ws_);
    // ---- critic: (clipped) value loss, weighted by vf_coef ----
    const view<const T> values = critic_.forward(obs, critic_ws_);
    const view<T> grad_values = grad_values_.view().subview(0, m);
    value_loss<Backend, T>(backend_, value_stats_view(), values, mb.returns.cview().subview(first, m),
                           mb.values.cview().subview(first, m),
                           config_.clip_value_loss ? value_loss_form::clipped_max : value_loss_form::plain,
                           T(config_.clip_coef), grad_values);
    for_each_index(backend_, m, detail::scale_kernel<T>{grad_values_.data(), T(config_.vf_coef)});
    critic_.backward(obs, view<const T>(grad_values), critic_ws_);
  }

  // ---- data parallelism and gradient accumulation ----

  /// Gradient parts one optimiser step sums, over all ranks.
  std::size_t parts() const noexcept { return config_.gradient_parts() * std::size_t(comm_->size()); }
  /// Elements of actor, critic and log-std gradients together.
  std::size_t gradient_size() const noexcept {
    return actor_.num_parameters() + critic_.num_parameters() + (discrete ? 0 : std::size_t(action_width));
  }
  /// This process's shards' shuffle seeds (detail::shard_seeds).
  std::vector<std::uint64_t> shard_seeds() const {
    return detail::shard_seeds(detail::derive_key(config_.seed, detail::ppo_key_shuffle), config_.env_shards, *comm_);
  }

  /// Merges a batch of this process's envs into a normaliser, shard by shard or rank by rank.
  template <class S>
  void update_normalizer(running_mean_std<S, Backend>& rms, view<const S> batch) {
    if (config_.env_shards > 1) {
      const std::size_t per = batch.size() / config_.env_shards;
      for (std::size_t s = 0; s < config_.env_shards; ++s) rms.update_unchecked(batch.subview(s * per, per));
    } else {
      rms.update_unchecked(batch, *comm_);  // the plain update with one rank
    }
  }

  /// Normalises the minibatch's advantages with the moments of the whole minibatch: this
  /// process's shards' sums folded in order, then all-reduced in rank order.
  void normalize_minibatch_advantages() {
    const std::size_t m = config_.minibatch_size(), shards = config_.env_shards, per = m / shards;
    const double count = double(m) * double(comm_->size());
    T* adv = minibatch_.advantages.data();
    double* sc = adv_scratch_.data();  // [shards partial sums, mean, sum of squared deviations]
    for (int pass = 0; pass < 2; ++pass) {
      const double* mean = pass == 0 ? nullptr : sc + shards;
      for (std::size_t s = 0; s < shards; ++s)
        detail::deterministic_sum_into(backend_, per, detail::advantage_moment_term<T>{adv + s * per, mean}, 0.0,
                                       detail::add_doubles{}, sc + s);
      double* total = sc + shards + pass;
      detail::run_once(backend_, detail::fold_parts_kernel{sc, shards, 1.0, total});
      all_reduce(*comm_, backend_, view<double>(total, 1), reduce_op::sum, config_.gradient_reduction,
                 pass == 0 ? "advantage sum" : "advantage squared deviations");
      if (pass == 0) detail::run_once(backend_, detail::fold_parts_kernel{total, 1, count, total});
    }
    for_each_index(backend_, m, detail::normalize_advantage_kernel<T>{adv, sc + shards, sc + shards + 1, count});
  }

  /// The minibatch's gradient as the sum of its parts (this process's shards times
  /// gradient_accumulation_steps micro-batches), all-reduced over the ranks in rank order and
  /// divided by the number of parts: the whole minibatch's mean gradient.
  void accumulate_gradients(std::size_t minibatch) {
    const std::size_t m = config_.minibatch_size(), shards = config_.env_shards,
                      steps = config_.gradient_accumulation_steps;
    const std::size_t per_shard = m / shards, micro = per_shard / steps;
    if (config_.normalize_advantages) normalize_minibatch_advantages();
    for (std::size_t s = 0; s < shards; ++s) {
      for (std::size_t k = 0; k < steps; ++k) {
        loss_and_gradients_into(minibatch_, s * per_shard + k * micro, micro, false);
        add_kl(minibatch, micro);
        grads_.add({view<const T>(actor_.gradients()), view<const T>(critic_.gradients()), log_std_grad_.cview()}, s, k);
      }
    }
    grads_.reduce(*comm_, config_.gradient_reduction, {actor_.gradients(), critic_.gradients(), log_std_grad_.view()},
                  "gradients");
  }

  /// Every rank's statistics gathered: the loss statistics are the last rank's (its last
  /// micro-batch is the minibatch's last, as in one process), the episodes all ranks', and an
  /// invalid action on any rank stops every rank.
  detail::ppo_device_stats gather_statistics(const detail::ppo_device_stats& mine) {
    return detail::gather_iteration_records(
        *comm_, mine, "rlkernels::ppo::iterate",
        [](detail::ppo_device_stats& x) { return std::pair<episode_statistics&, unsigned long long&>(x.episodes, x.action_flag); },
        [](detail::ppo_device_stats&) {}, [](detail::ppo_device_stats&, const detail::ppo_device_stats&) {});
  }

  bool adaptive() const noexcept { return config_.adaptive_lr_kl > 0; }
  bool analytic_kl() const noexcept { return !discrete && config_.kl_estimator == ppo_kl_estimator::analytic; }
  /// Adds the last loss call's KL (over its `rows`), as its share 1 / parts() of the whole
  /// minibatch's, to minibatch `k`'s KL in backend memory (one index, no host wait).
  void add_kl(std::size_t k, std::size_t rows) {
    detail::run_once(backend_, detail::ppo_kl_add_kernel{stats_.data(), minibatch_kls_.data() + k, analytic_kl(),
                                                         double(rows), 1.0 / double(parts())});
  }
  void set_learning_rate(double lr) {
    actor_opt_.set_learning_rate(lr);
    critic_opt_.set_learning_rate(lr);
    if (!discrete) log_std_opt_.set_learning_rate(lr);
  }
  /// rl_games' adaptive schedule on one epoch's KL (the mean of its minibatches'): / 1.5 above
  /// 2 * target, * 1.5 below target / 2, within the config's bounds; the next epoch uses it.
  void adapt_learning_rate(double kl) {
    const double target = config_.adaptive_lr_kl;
    if (kl > 2.0 * target) {
      adaptive_lr_ = std::max(adaptive_lr_ / 1.5, config_.adaptive_lr_min);
    } else if (kl < 0.5 * target) {
      adaptive_lr_ = std::min(adaptive_lr_ * 1.5, config_.adaptive_lr_max);
    }
    set_learning_rate(adaptive_lr_);
  }

  static ppo_config checked(ppo_config c) {
    c.validate();
    return c;
  }
  static adam_params adam_for(const ppo_config& c) {
    adam_params p;
    p.learning_rate = c.learning_rate;
    p.epsilon = c.adam_epsilon;
    return p;
  }
  std::vector<int> layer_sizes(int outputs) const {
    std::vector<int> s{observation_size};
    s.insert(s.end(), config_.hidden_sizes.begin(), config_.hidden_sizes.end());
    s.push_back(outputs);
    return s;
  }

  /// Observations [N, obs] of the envs as the networks see them: normalised into obs_scratch_
  /// (updating the statistics when `update`) or the env's own array.
  view<const T> network_input(view<const T> raw, bool update) {
    if (!config_.normalize_observations) return raw;
    if (update) update_normalizer(obs_rms_, raw);  // checked once, at the end of the iteration
    obs_rms_.normalize(raw, obs_scratch_.view(), T(config_.observation_clip));
    return obs_scratch_.cview();
  }

  /// This rank's first env in the whole population (0 in one process).
  std::uint64_t first_env() const noexcept { return std::uint64_t(comm_->rank()) * config_.num_envs; }

  void sample_gaussian(view<const T> mean, std::size_t rows, std::uint64_t seed, std::uint64_t draw,
                       view<T> actions, std::uint64_t first_row = 0) {
    const std::size_t n = rows * std::size_t(action_width);
    for_each_index(backend_, n, detail::expand_log_std_kernel<T>{log_std_.data(), log_std_rows_.data(), std::size_t(action_width)});
    gaussian_sample(backend_, gaussian_view<T>{std::size_t(action_width), mean, log_std_rows_.cview().subview(0, n)}, seed,
                    draw, actions, {}, first_row);
  }

  /// Calls fn(first_row, rows) for each env shard of this process (all N envs when unsharded):
  /// with env_shards = R the networks see the rows in the blocks R ranks would, since a small
  /// product's bits can depend on its number of rows (Eigen picks its kernel by size).
  template <class Fn>
  void for_each_shard(Fn&& fn) const {
    const std::size_t per = config_.num_envs / config_.env_shards;
    for (std::size_t s = 0; s < config_.env_shards; ++s) fn(s * per, per);
  }

  void collect_rollout() {
    const std::size_t width = std::size_t(action_width), obs_size = std::size_t(observation_size);
    if (analytic_kl()) copy(backend_, log_std_.cview(), old_log_std_.view());  // the rollout's policy
    for (std::size_t t = 0; t < config_.num_steps; ++t) {
      // s_t, as the networks see it, goes into the rollout.
      const view<const T> obs = network_input(env_.observations().cview(), true);
      copy(backend_, obs, rollout_.observations_at(t));
      const view<const T> stored = rollout_.observations_at(t);
      const std::uint64_t draw = action_draw_++;
      for_each_shard([&](std::size_t first, std::size_t n) {
        const view<const T> rows = stored.subview(first * obs_size, n * obs_size);
        // Policy: a_t ~ pi(. | s_t) and log pi(a_t | s_t); env i draws from stream first_env() + i.
        const view<const T> out = actor_.forward(rows, actor_ws_);
        const view<action_type> actions = rollout_.actions_at(t).subview(first * width, n * width);
        const view<T> log_probs = rollout_.log_probs_at(t).subview(first, n);
        if constexpr (discrete) {
          const categorical_view<T> dist{std::size_t(policy_outputs), out, {}};
          categorical_sample(backend_, dist, action_key(), draw, actions, first_env() + first);
          categorical_log_prob(backend_, dist, view<const std::int32_t>(actions), log_probs);
        } else {
          if (analytic_kl())
            copy(backend_, out, old_means_.view().subview((t * config_.num_envs + first) * width, n * width));
          sample_gaussian(out, n, action_key(), draw, actions, first_env() + first);
          const gaussian_view<T> dist{width, out, log_std_rows_.cview().subview(0, n * width)};
          gaussian_log_prob(backend_, dist, view<const T>(actions), log_probs);
        }
        // V(s_t).
        copy(backend_, critic_.forward(rows, critic_ws_), rollout_.values_at(t).subview(first, n));
      });
      // Step (the env resets ended episodes). Continuous actions are clipped to the env's bounds
      // first, as SB3 and CleanRL (ClipAction) do: the rollout keeps the draw, the env sees the
      // clipped action (which matters where a reward term, such as the MuJoCo envs' control
      // cost, sees the action before the engine clamps it).
      const view<action_type> actions = rollout_.actions_at(t);
      if constexpr (discrete) {
        env_.step_deferred(view<const action_type>(actions));  // checked once, at the end of the iteration
      } else {
        for_each_index(backend_, config_.num_envs * width,
                       detail::clip_action_kernel<T>{actions.data(), env_actions_.data(), T(Env::action_low),
                                                     T(Env::action_high)});
        env_.step_deferred(env_actions_.cview());
      }
      rollout_.store_outcome(t, env_);
      if (config_.normalize_rewards) normalize_rewards(t);
      // Bootstrap on truncation: V(final observation of step t) where the time limit cut the episode.
      if (any_truncated()) {
        const view<const T> final_obs = network_input(env_.final_observations().cview(), false);
        for_each_shard([&](std::size_t first, std::size_t n) {
          copy(backend_, critic_.forward(final_obs.subview(first * obs_size, n * obs_size), critic_ws_),
               rollout_.bootstrap_values_at(t).subview(first, n));
        });
      }
    }
    const view<const T> obs = network_input(env_.observations().cview(), false);
    for_each_shard([&](std::size_t first, std::size_t n) {
      copy(backend_, critic_.forward(obs.subview(first * obs_size, n * obs_size), critic_ws_),
           rollout_.last_values_view().subview(first, n));
    });
  }

  /// Key of the policy's action draws during training (not the envs' own streams).
  std::uint64_t action_key() const noexcept { return detail::derive_key(config_.seed, detail::ppo_key_actions); }

  bool any_truncated() const {
    if constexpr (is_host_backend_v<Backend>) {
      const std::uint8_t* tr = env_.truncated().data();
      for (std::size_t i = 0; i < config_.num_envs; ++i)
        if (tr[i]) return true;
      return false;
    } else {
      return true;  // no host round trip on the device: always compute it
    }
  }

  void normalize_rewards(std::size_t t) {
    const view<T> rewards = rollout_.rewards_at(t);
    for_each_index(backend_, config_.num_envs,
                   detail::discounted_return_kernel<T>{rewards.data(), rollout_.terminated_at(t).data(),
                                                       discounted_returns_.data(), config_.gamma});
    update_normalizer(return_rms_, discounted_returns_.cview());  // checked at the end of the iteration
    for_each_index(backend_, config_.num_envs,
                   detail::scale_rewards_kernel<T>{rewards.data(), return_rms_.var_view().data(), config_.reward_clip});
  }

  /// One minibatch update, nothing read back: loss and gradients, the global gradient norm clipped
  /// on the device (a non-finite norm leaves the gradients as they are and is reported at the end
  /// of the iteration), one Adam step on all parameters.
  void update_minibatch(std::uint64_t step, std::size_t minibatch) {
    if (parts() > 1) {
      accumulate_gradients(minibatch);
    } else {
      loss_and_gradients_into(minibatch_, 0, config_.minibatch_size(), config_.normalize_advantages);
      add_kl(minibatch, config_.minibatch_size());
    }
    const view<double> norm(&stats_.data()->grad_norm, 1);
    if constexpr (discrete) {
      clip_grad_norm(backend_, norm, {actor_.gradients(), critic_.gradients()}, config_.max_grad_norm);
    } else {
      clip_grad_norm(backend_, norm, {actor_.gradients(), critic_.gradients(), log_std_grad_.view()},
                     config_.max_grad_norm);
    }
    actor_opt_.step(actor_.parameters(), actor_.gradients());
    critic_opt_.step(critic_.parameters(), critic_.gradients());
    if (!discrete) log_std_opt_.step(log_std_.view(), log_std_grad_.cview());
    detail::run_once(backend_, detail::ppo_stats_accumulate_kernel{stats_.data(), step});
  }

  typename Env::Params env_params_;
  env_type env_;
  rollout_buffer<T, action_type, Backend> rollout_;
  rollout_minibatch<T, action_type, Backend> minibatch_;
  mlp<T, Backend> actor_, critic_;
  buffer<T, Backend> log_std_, log_std_grad_;
  adam<T, Backend> actor_opt_, critic_opt_, log_std_opt_;
  mlp_workspace<T, Backend> actor_ws_, critic_ws_;
  running_mean_std<T, Backend> obs_rms_;
  running_mean_std<double, Backend> return_rms_;
  buffer<T, Backend> obs_scratch_, log_std_rows_;
  buffer<T, Backend> new_log_probs_, grad_log_probs_, grad_policy_out_, grad_log_std_rows_, grad_entropy_, entropy_,
      grad_values_;
  buffer<double, Backend> discounted_returns_;
  buffer<action_type, Backend> env_actions_;  // continuous: the rollout's actions clipped to the env's bounds
  buffer<detail::ppo_device_stats, Backend> stats_;  // [1] the iteration's statistics, read once at its end
  detail::gradient_parts<T, Backend> grads_;  // a minibatch's parts summed (more than one part)
  buffer<double, Backend> adv_scratch_;  // [env_shards + 2] advantage moments of the minibatch
  buffer<double, Backend> minibatch_kls_;  // [num_minibatches] the epoch's minibatch KLs (this rank's shares)
  buffer<T, Backend> old_means_;    // analytic KL: [T * N, action_size] the rollout policy's means
  buffer<T, Backend> old_log_std_;  // analytic KL: [action_size] the rollout policy's log-stds
  detail::phase_timer<Backend> timer_;
  std::uint64_t action_draw_ = 0, shuffle_epoch_ = 0;
  double adaptive_lr_ = config_.learning_rate;  // the adaptive learning rate (adaptive_lr_kl > 0)
};

}  // namespace rlkernels
