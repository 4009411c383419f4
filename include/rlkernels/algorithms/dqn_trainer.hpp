// rlkernels/algorithms/dqn_trainer.hpp
// The dqn<Env, Backend> trainer (Mnih et al. 2015, as CleanRL's dqn.py computes it, with Double
// DQN, n-step returns, Huber loss, gradient clipping and prioritized replay). Read `iterate()` and
// `loss_and_gradients()` top to bottom. dqn.hpp includes it with its config, kernels and dqn_preset.
#pragma once

#include "dqn_config.hpp"
#include "dqn_kernels.hpp"
#include "../buffers/prioritized_replay.hpp"
#include "../buffers/replay_buffer.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "trainer_core.hpp"
#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../core/reduce.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/dqn.hpp"
#include "../losses/polyak.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {
/// @brief A DQN agent and its training loop for any rlkernels environment `Env` with discrete
/// actions, on `Backend`: an MLP Q-network (PyTorch's default Linear initialisation, as CleanRL and
/// SB3), a target copy of it, Adam, and a replay buffer (uniform, or prioritized with
/// config.prioritized).
///
///     rlkernels::dqn<rlkernels::cartpole<float>, rlkernels::openmp_backend> agent(rlkernels::openmp,
///                                                                                 rlkernels::dqn_preset("CartPole-v1"));
///     while (!agent.done()) { auto s = agent.iterate(); ... }
///     auto result = agent.evaluate(100, 12345);
///
/// Truncation: the replay buffer stores vec_env::final_observations() as s' and the terminated
/// flag; targets bootstrap from Q_target(s') wherever the step was not terminated, so a time-limit
/// truncation bootstraps from the observation the episode was cut at.
///
/// Determinism: for a given config and seed, a run is the same on serial and OpenMP (any thread
/// count): the envs, the initial weights, exploration (rng(key, env, iteration)) and replay sampling
/// (rng(key, gradient step, sample)) are pure functions of the seed, and every reduction has a fixed
/// order. On CUDA a run is deterministic on one GPU model but not bit-equal to the host.
///
/// CUDA: all arrays stay in device memory. The env step's action check (vec_env::step_deferred),
/// the episode statistics and the batch statistics stay on the device and are read once at the
/// end of each iteration (docs/training.md, "Host round trips per iteration", has the counts); no
/// batch is copied to the host.
///
/// Data parallelism (docs/distributed.md): given a communicator of R ranks, each rank steps its
/// own num_envs envs (envs rank * num_envs ..., with those envs' exploration streams) into its own
/// replay buffer and samples its batch_size transitions from it; the parameters start as rank
/// 0's, the gradients are all-reduced before every optimiser step, the episode statistics are
/// gathered, and each rank writes its envs and replay buffer to its shard of a checkpoint (rank 0
/// the manifest, last). With
/// the ordered reduction a run equals one process with R * num_envs envs, R * batch_size,
/// R * buffer_size and env_shards = R bit for bit. Prioritized replay is not data-parallel.
///
/// The counters, checkpoints (save_checkpoint, load_checkpoint, automatic ones every
/// config().checkpoint_every iterations) and done() come from trainer_core.
template <class Env, class Backend>
class dqn : public trainer_core<dqn<Env, Backend>, dqn_config, Backend> {
  using core = trainer_core<dqn<Env, Backend>, dqn_config, Backend>;
  friend core;
  using core::backend_;
  using core::comm_;
  using core::config_;
  using core::global_step_;
  using core::gradient_steps_;
  using core::iteration_;

 public:
  using env_type = vec_env<Env, Backend>;              ///< the training envs
  using scalar_type = typename env_type::scalar_type;  ///< float or double
  using action_type = typename env_type::action_type;  ///< std::int32_t
  using backend_type = Backend;                        ///< where everything runs
  using T = scalar_type;                               ///< shorthand for scalar_type
  using batch_type = replay_batch<T, std::int32_t, Backend>;  ///< what loss_and_gradients takes
  static_assert(std::is_same_v<action_type, std::int32_t>, "rlkernels::dqn: the env must have discrete actions");
  static constexpr int observation_size = env_type::observation_size;  ///< the Q-network's inputs
  static constexpr int action_width = 1;                              ///< one action index per env
  static constexpr int num_actions = Env::num_actions;                ///< the Q-network's outputs

  /// @brief Builds envs, the networks, the optimiser and the replay buffer; the target network
  /// starts as a copy of the Q-network.
  /// With a communicator of R > 1 ranks (every rank constructs its agent with the same config),
  /// this rank's envs are rank * num_envs .. and the parameters are rank 0's.
  /// @param backend where the envs, networks and buffers live and run (serial, openmp or a cuda_backend)
  /// @param config the hyperparameters; validated here (a bad value throws std::invalid_argument naming it)
  /// @param env_params the envs' parameters (default: the env's defaults)
  /// @param comm the job's ranks (default: this process alone); it must outlive the agent
  /// @throw std::invalid_argument on a bad config (see dqn_config::validate), or if the ranks'
  ///        configs differ, env_shards > 1 or prioritized replay with R > 1; out_of_memory;
  ///        distributed_error
  dqn(Backend backend, dqn_config config, typename Env::Params env_params = {},
      communicator& comm = default_communicator())
      : core(backend, checked(std::move(config)), comm, "dqn"), env_params_(env_params),
        env_(backend, config_.num_envs, config_.seed, env_params, std::uint64_t(comm.rank()) * config_.num_envs),
        q_(backend, layer_sizes(), config_.hidden_activation, activation::identity),
        target_(backend, layer_sizes(), config_.hidden_activation, activation::identity),
        opt_(backend, q_.num_parameters(), adam_for(config_)),
        q_ws_(q_, std::max(config_.num_envs, part_rows())), q_next_ws_(q_, part_rows()),
        target_ws_(target_, part_rows()),
        grads_(backend, q_.num_parameters(), config_.env_shards, config_.gradient_accumulation_steps, comm),
        batch_(backend, config_.batch_size, observation_size, action_width),
        observations_(backend, config_.num_envs * std::size_t(observation_size)), actions_(backend, config_.num_envs),
        targets_(backend, config_.batch_size), td_errors_(backend, config_.batch_size),
        grad_q_(backend, part_rows() * std::size_t(num_actions)), device_stats_(backend, 1),
        best_(backend, config_.keep_best_every > 0 ? q_.num_parameters() : 0) {
    if (config_.prioritized) {
      prioritized_replay_params p;
      p.alpha = config_.per_alpha;
      p.beta = config_.per_beta0;
      p.epsilon = config_.per_epsilon;
      per_.emplace(backend, config_.buffer_rows(), config_.num_envs, observation_size, action_width, p);
    } else {
      uniform_.emplace(backend, config_.buffer_rows(), config_.num_envs, observation_size, action_width);
    }
    const layer_init torch_linear{weight_init::pytorch_default, 1.0, 0.0};
    q_.initialize(detail::derive_key(config_.seed, detail::dqn_key_weights), torch_linear, torch_linear);
    if (comm_->size() > 1) {
      this->check_ranks();
      RLK_EXPECTS(!config_.prioritized, std::invalid_argument, "rlkernels::dqn: ", comm_->where_am_i(),
                  ": prioritized replay is not data-parallel (each rank's sum tree would have to be one); use "
                  "uniform replay");
      this->template broadcast_parameters<T>({{q_.parameters(), "Q-network parameters"}});
    }
    target_.copy_parameters_from(q_);
  }

  /// Transitions of one gradient step over all ranks: batch_size * ranks.
  std::size_t global_batch_size() const noexcept { return config_.batch_size * std::size_t(comm_->size()); }
  /// @brief A checksum (detail::fnv1a over the bytes) of the Q-network's and the target's
  /// parameters. Data-parallel ranks compare theirs every config().parameter_check_every iterations.
  std::uint64_t parameter_checksum() const {
    return detail::parameters_checksum<T>({view<const T>(q_.parameters()), view<const T>(target_.parameters())},
                                          backend_);
  }

  /// The most observation rows one act() call takes; evaluate() acts in chunks of this many.
  std::size_t max_act_rows() const noexcept { return q_ws_.max_batch(); }
  /// The exploration rate of the next iteration: config().epsilon(global_step()).
  double epsilon() const noexcept { return config_.epsilon(global_step_); }
  /// The online Q-network (observations -> one value per action).
  mlp<T, Backend>& q_network() noexcept { return q_; }
  /// The target network (updated from the online one every target_network_frequency steps).
  mlp<T, Backend>& target_network() noexcept { return target_; }
  /// The optimiser of the Q-network.
  adam<T, Backend>& optimizer() noexcept { return opt_; }
  /// The training envs.
  env_type& envs() noexcept { return env_; }
  /// The stored transitions (the prioritized buffer's ring when config().prioritized).
  const replay_buffer<T, std::int32_t, Backend>& replay() const noexcept {
    return per_ ? per_->storage() : *uniform_;
  }
  /// The prioritized buffer (null unless config().prioritized).
  const prioritized_replay_buffer<T, std::int32_t, Backend>* prioritized_replay() const noexcept {
    return per_ ? &*per_ : nullptr;
  }
  /// The batch the last gradient step trained on.
  const batch_type& last_batch() const noexcept { return batch_; }
  /// [batch_size] TD errors y - Q(s, a) of the last loss_and_gradients() call.
  const buffer<T, Backend>& td_errors() const noexcept { return td_errors_; }

  /// @brief One DQN iteration: one epsilon-greedy step of every env, its N transitions into the
  /// replay buffer, then the gradient steps and target updates that became due (see dqn_config's
  /// counting); with config().keep_best_every, the greedy evaluation that became due (and, in the
  /// last iteration, the best network restored); saves an automatic checkpoint when
  /// config().checkpoint_every says so.
  /// Host round trips: one read at the end of the iteration (its statistics, the env step's
  /// deferred action check and the divergence check together), whatever the numbers of envs and
  /// gradient steps (plus an evaluation's, in an iteration that makes one for keep_best_every).
  /// @throw std::logic_error if training is already done(); rlkernels::error at the end of the
  ///        iteration if a TD loss became NaN or infinite (diverged training; the message names
  ///        the first such gradient step, and the parameters are not usable); invalid_action if an
  ///        action was invalid (the envs stopped stepping at that step)
  dqn_iteration_stats iterate() {
    this->begin_iteration();
    dqn_iteration_stats stats;
    stats.iteration = iteration_;
    const std::uint64_t t = global_step_;
    const std::size_t n = config_.num_envs;
    const std::uint64_t steps = std::uint64_t(n) * std::uint64_t(comm_->size());  // of all ranks
    stats.epsilon = config_.epsilon(t);
    stats.learning_rate = config_.learning_rate;

    // Act on s_t (kept aside: the step overwrites the env's observations), step, store; shard by
    // shard, a rank's rows in one call as a rank's are.
    copy(backend_, env_.observations().cview(), observations_.view());
    const std::size_t per = n / config_.env_shards, o = std::size_t(observation_size);
    for (std::size_t s = 0; s < config_.env_shards; ++s)
      select_actions(observations_.cview().subview(s * per * o, per * o), actions_.view().subview(s * per, per),
                     stats.epsilon, detail::derive_key(config_.seed, detail::dqn_key_exploration),
                     std::uint64_t(comm_->rank()) * n + s * per, iteration_ - 1);
    env_.step_deferred(actions_.cview());  // checked once, at the end of the iteration
    if (per_) {
      per_->add(observations_.cview(), actions_.cview(), env_);
    } else {
      uniform_->add(observations_.cview(), actions_.cview(), env_);
    }
    global_step_ += steps;
    env_.episode_statistics_into(view<episode_statistics>(&device_stats_.data()->episodes, 1));
    env_.clear_episode_statistics();

    // The updates due at global steps t .. t + N - 1, in order.
    detail::run_once(backend_, detail::dqn_start_kernel{device_stats_.data()});
    if (per_) stats.beta = config_.beta(t);
    for (std::uint64_t s = t; s < t + steps; ++s) {
      if (s <= config_.learning_starts) continue;
      if (s % config_.train_frequency == 0) {
        for (std::size_t g = 0; g < config_.gradient_steps; ++g) gradient_step(stats);
      }
      if (s % config_.target_network_frequency == 0) {
        // light_backend: an element-wise pass over a few thousand parameters; on OpenMP a parallel
        // region (and its spinning threads) would cost more than the loop.
        polyak_update(detail::light_backend(backend_), view<const T>(q_.parameters()), target_.parameters(),
                      T(config_.tau));
        ++stats.target_updates;
      }
    }
    // The iteration's one host read: the statistics and the deferred action check together.
    detail::stage_action_flag(env_, &device_stats_.data()->action_flag);
    failed_steps_into(env_, &device_stats_.data()->failures);
    detail::dqn_device_stats d = device_stats_.get(0);
    if (comm_->size() > 1) d = gather_statistics(d);
    detail::raise_if_flagged(env_, d.action_flag);
    RLK_EXPECTS(d.bad_step == 0, error, "rlkernels::dqn::iterate: the TD loss is ", d.bad_loss, " at gradient step ",
                d.bad_step, " (diverged training)");
    stats.episodes = d.episodes.count;
    stats.episode_return_sum = d.episodes.mean_return * double(d.episodes.count);
    stats.episode_length_sum = d.episodes.mean_length * double(d.episodes.count);
    if (stats.gradient_steps > 0) {
      stats.q_loss = d.loss.loss;
      stats.mean_abs_td_error = d.loss.mean_abs_td_error;
      stats.q_mean = d.q_sum / double(part_rows());
      if (config_.max_grad_norm > 0) stats.grad_norm = d.grad_norm;
    }
    stats.global_step = global_step_;
    stats.failed_steps = this->failed_steps_since_last(d.failures);
    if (config_.keep_best_every > 0) keep_best(t);
    this->end_iteration();
    return stats;
  }

  /// @brief Writes actions for observations [B, observation_size]: argmax_a Q(s, a) when
  /// `deterministic`, else epsilon-greedy with the current exploration rate epsilon(): row i draws
  /// from rng(seed, i, draw) (u < epsilon: a uniform action). B must be at most
  /// max(num_envs, batch_size).
  /// @throw std::invalid_argument on a size mismatch or too many rows
  void act(view<const T> observations, view<action_type> actions, bool deterministic, std::uint64_t seed = 0,
           std::uint64_t draw = 0) {
    select_actions(observations, actions, deterministic ? 0.0 : epsilon(), seed, 0, draw);
  }

  /// @brief Deterministic (argmax) or epsilon-greedy evaluation: `episodes` fresh envs (seeded
  /// with `seed`, so they differ from the training envs) run the policy until each has finished
  /// one episode; returns their returns. Training state is untouched.
  /// @param episodes number of evaluation envs (one episode each), >= 1
  /// @param seed seed of the evaluation envs (and of the exploration draws when not deterministic)
  /// @param deterministic argmax actions (true) or epsilon-greedy with epsilon()
  /// @param max_steps safety bound on steps
  /// @throw std::invalid_argument if episodes is 0; rlkernels::error if some episode did not end
  ///        within max_steps
  policy_evaluation evaluate(std::size_t episodes, std::uint64_t seed, bool deterministic = true,
                             std::size_t max_steps = 1000000) {
    const double eps = deterministic ? 0.0 : epsilon();
    const std::uint64_t key = detail::derive_key(seed, detail::dqn_key_evaluation);
    return detail::evaluate_policy<Env>(
        backend_, env_params_, episodes, seed, q_ws_.max_batch(), max_steps, "rlkernels::dqn::evaluate",
        [&](view<const T> obs, view<action_type> actions, std::size_t first, std::size_t step) {
          select_actions(obs, actions, eps, key, first, step);
        });
  }

  /// @brief The TD loss of a batch and its gradient, without an optimiser step:
  ///
  ///     y_i    = r_i + d_i (1 - terminated_i) Q_target(s'_i, argmax_a Q_target(s'_i, a))
  ///              (double_q: argmax_a Q(s'_i, a) picks the action instead)
  ///     loss   = (1/B) sum_i w_i l(Q(s_i, a_i) - y_i)
  ///
  /// with r_i and d_i the batch's (n-step) rewards and discounts (gamma^m), l the mse or Huber loss,
  /// and w_i the batch's importance weights when config().prioritized (1 otherwise). The targets
  /// are constants: d loss / d parameters of the online network goes into
  /// q_network().gradients(), and y_i - Q(s_i, a_i) into td_errors(). iterate() calls this for
  /// every gradient step, then clips the gradient norm (when max_grad_norm > 0) and steps Adam.
  /// @param batch exactly config().batch_size transitions (replay().sample(...) or the
  ///        prioritized buffer's sample)
  /// @throw std::invalid_argument if the batch has another size or shape
  dqn_loss loss_and_gradients(const batch_type& batch) {
    check_batch(batch);
    detail::check_one_part(config_, *comm_, "rlkernels::dqn::loss_and_gradients");
    td_loss_and_gradients(batch, 0, config_.batch_size);
    const detail::dqn_device_stats d = device_stats_.get(0);  // one host read
    dqn_loss out;
    out.loss = d.loss.loss;
    out.mean_abs_td_error = d.loss.mean_abs_td_error;
    out.q_mean = d.q_sum / double(config_.batch_size);
    return out;
  }

 private:
  /// What every rank holds alike: the config, the networks, Adam and the counters.
  template <class C>
  void bind_shared(C& c) {
    c.bind_constant("config", config_.hyperparameters());
    c.bind("q/parameters", backend_, q_.parameters());
    c.bind("target/parameters", backend_, target_.parameters());
    opt_.bind_checkpoint(c, "q/adam/");
    c.bind_value("global_step", global_step_);
    c.bind_value("iteration", iteration_);
    c.bind_value("gradient_step", gradient_steps_);
    if (config_.keep_best_every > 0) {
      c.bind("best/parameters", backend_, best_.view());
      c.bind_value("best/score", best_score_);
    }
  }
  /// keep_best_every: after the iteration that started at global step t, a greedy evaluation
  /// (keep_best_episodes fresh envs, the same seed every time) when a multiple of keep_best_every
  /// was passed or training is done; a strictly better mean keeps the parameters. When done, the
  /// Q-network and the target end as the best kept.
  void keep_best(std::uint64_t t) {
    const std::uint64_t k = config_.keep_best_every;
    if (t / k == global_step_ / k && !this->done()) return;
    const double score =
        evaluate(config_.keep_best_episodes, detail::derive_key(config_.seed, detail::dqn_key_keep_best)).mean;
    if (score > best_score_) {
      best_score_ = score;
      copy(backend_, view<const T>(q_.parameters()), best_.view());
    }
    if (this->done()) {
      copy(backend_, best_.cview(), q_.parameters());
      target_.copy_parameters_from(q_);
    }
  }
  /// What is this rank's own: its envs and replay buffer.
  template <class C>
  void bind_local(C& c) {
    env_.bind_checkpoint(c, "env/");
    if (config_.checkpoint_buffers) {
      if (per_) {
        per_->bind_checkpoint(c, "replay/");
      } else {
        uniform_->bind_checkpoint(c, "replay/");
      }
    }
  }
  /// Env steps of one iteration on each rank: num_envs (so done(), on iterations, is global_step()
  /// >= total_timesteps: every iteration adds num_envs * ranks to global_step()).
  static std::uint64_t steps_per_iteration(const dqn_config& c) noexcept { return c.num_envs; }
  /// Rows of one part of a batch: batch_size / (env_shards * gradient_accumulation_steps).
  std::size_t part_rows() const noexcept { return config_.batch_size / config_.gradient_parts(); }
  void check_batch(const batch_type& batch) const {
    constexpr const char* who = "rlkernels::dqn::loss_and_gradients";
    RLK_EXPECTS(batch.size() == config_.batch_size, std::invalid_argument, who, ": the batch has ", batch.size(),
                " transitions, the config's batch_size is ", config_.batch_size);
    RLK_EXPECTS(batch.observation_size() == observation_size, std::invalid_argument, who,
                ": the batch has observation_size ", batch.observation_size(), ", the env ", observation_size);
  }

  /// loss_and_gradients without a host wait: the loss and the sum of Q(s, a) go to device_stats_
  /// in backend memory. The batch's actions come from the replay buffer, which holds only actions
  /// the env accepted, so td_loss does not check them again.
  /// The batch's rows [first, first + b) (one part of it, or all of it).
  void td_loss_and_gradients(const batch_type& batch, std::size_t first, std::size_t b) {
    const std::size_t a = std::size_t(num_actions), o = std::size_t(observation_size);
    const T gamma = T(config_.gamma);
    const view<const T> rewards = batch.rewards.cview().subview(first, b),
                        discounts = batch.discounts.cview().subview(first, b);
    const view<const std::uint8_t> terminated = batch.terminated.cview().subview(first, b);
    const view<T> targets = targets_.view().subview(first, b);
    // ---- targets y (no gradient) ----
    const view<const T> next_obs = batch.next_observations.cview().subview(first * o, b * o);
    const view<const T> q_next_target = target_.forward(next_obs, target_ws_);
    if (config_.double_q) {
      const view<const T> q_next_online = q_.forward(next_obs, q_next_ws_);
      double_q_learning_targets(backend_, rewards, terminated, q_next_online, q_next_target, a, gamma, targets,
                                discounts);
    } else {
      q_learning_targets(backend_, rewards, terminated, q_next_target, a, gamma, targets, discounts);
    }
    // ---- TD loss of Q(s, a) and its gradient through the network ----
    const view<const T> obs = batch.observations.cview().subview(first * o, b * o);
    const view<const T> q = q_.forward(obs, q_ws_);
    const view<const std::int32_t> actions = batch.actions.cview().subview(first, b);
    td_loss_options<T> options;
    options.kind = config_.loss;
    options.huber_delta = T(config_.huber_delta);
    const view<const T> weights = config_.prioritized ? batch.weights.cview() : view<const T>{};
    td_loss(backend_, view<td_loss_result>(&device_stats_.data()->loss, 1), q, a, actions, view<const T>(targets),
            weights, options, td_errors_.view().subview(first, b), grad_q_.view().subview(0, b * a));
    q_.backward(obs, grad_q_.cview().subview(0, b * a), q_ws_);
    detail::deterministic_sum_into(detail::light_backend(backend_), b,
                                   detail::taken_q_term<T>{q.data(), actions.data(), a}, 0.0, detail::dqn_plus{},
                                   &device_stats_.data()->q_sum);
  }

  /// Every rank's statistics gathered (detail::gather_iteration_records): the losses of the last
  /// rank, the episodes of all, the first diverged gradient step any rank saw.
  detail::dqn_device_stats gather_statistics(const detail::dqn_device_stats& mine) {
    using R = detail::dqn_device_stats;
    return detail::gather_iteration_records(
        *comm_, mine, "rlkernels::dqn::iterate",
        [](R& x) { return std::pair<episode_statistics&, unsigned long long&>(x.episodes, x.action_flag); },
        [](R& d) { d.bad_step = 0; },
        [](R& d, const R& x) {
          if (x.bad_step != 0 && (d.bad_step == 0 || x.bad_step < d.bad_step)) {
            d.bad_step = x.bad_step;
            d.bad_loss = x.bad_loss;
          }
        });
  }

  static dqn_config checked(dqn_config c) {
    c.validate();
    return c;
  }
  static adam_params adam_for(const dqn_config& c) {
    adam_params p;
    p.learning_rate = c.learning_rate;
    p.epsilon = c.adam_epsilon;
    return p;
  }
  std::vector<int> layer_sizes() const {
    std::vector<int> s{observation_size};
    s.insert(s.end(), config_.hidden_sizes.begin(), config_.hidden_sizes.end());
    s.push_back(num_actions);
    return s;
  }

  /// Epsilon-greedy (epsilon 0: argmax) actions for observations [B, obs], row i drawing from
  /// rng(key, first_stream + i, draw). The Q-network runs only when some action may be greedy.
  void select_actions(view<const T> observations, view<action_type> actions, double eps, std::uint64_t key,
                      std::uint64_t first_stream, std::uint64_t draw) {
    constexpr const char* who = "rlkernels::dqn::act";
    RLK_EXPECTS(observations.size() % std::size_t(observation_size) == 0, std::invalid_argument, who,
                ": observations has ", observations.size(), " elements, not a multiple of ", observation_size);
    const std::size_t b = observations.size() / std::size_t(observation_size);
    RLK_EXPECTS(b <= q_ws_.max_batch(), std::invalid_argument, who, ": ", b, " rows, at most ", q_ws_.max_batch(),
                " (max(num_envs, batch_size))");
    detail::check_view_size(actions.size(), actions.data(), b, who, "actions");
    if (b == 0) return;
    const T* q = eps >= 1.0 ? nullptr : q_.forward(observations, q_ws_).data();
    for_each_index(backend_, b,
                   detail::epsilon_greedy_kernel<T>{q, actions.data(), std::size_t(num_actions), eps, key,
                                                    first_stream, draw});
  }

  /// One gradient step on a fresh batch: sample, loss and gradient, clip, Adam, priorities.
  void gradient_step(dqn_iteration_stats& stats) {
    const std::uint64_t key = detail::derive_key(config_.seed, detail::dqn_key_replay);
    const std::uint64_t draw = gradient_steps_;
    if (per_) {
      per_->sample(key, draw, batch_, T(stats.beta), config_.n_step, T(config_.gamma));
    } else {
      uniform_->sample_sharded(detail::shard_seeds(key, config_.env_shards, *comm_), draw, batch_, config_.n_step,
                               T(config_.gamma));
    }
    // The batch's gradient as the mean of its parts' (env shards, micro-batches, ranks).
    detail::for_each_batch_part(config_, config_.batch_size, *comm_,
                                [&](std::size_t s, std::size_t k, std::size_t first, std::uint64_t) {
                                  td_loss_and_gradients(batch_, first, part_rows());
                                  detail::run_once(backend_, detail::dqn_divergence_kernel{device_stats_.data(),
                                                                                           gradient_steps_ + 1});
                                  grads_.add({view<const T>(q_.gradients())}, s, k);
                                });
    grads_.reduce(*comm_, config_.gradient_reduction, {q_.gradients()}, "gradients");
    if (config_.max_grad_norm > 0) {
      clip_grad_norm(backend_, view<double>(&device_stats_.data()->grad_norm, 1), {q_.gradients()},
                     config_.max_grad_norm);
    }
    opt_.step(q_.parameters(), q_.gradients());
    // Deferred: no host wait per gradient step. The indices come from the sampler, and a NaN or
    // infinite TD error makes this step's loss non-finite, which the divergence check above reports
    // at the end of the iteration; so the buffer's own validation record can never be set here.
    if (per_) per_->update_priorities_deferred(batch_.indices.cview(), td_errors_.cview());
    ++gradient_steps_;
    ++stats.gradient_steps;
  }

  typename Env::Params env_params_;
  env_type env_;
  mlp<T, Backend> q_, target_;
  adam<T, Backend> opt_;
  mlp_workspace<T, Backend> q_ws_, q_next_ws_, target_ws_;
  detail::gradient_parts<T, Backend> grads_;  // a batch's parts summed (more than one part)
  std::optional<replay_buffer<T, std::int32_t, Backend>> uniform_;
  std::optional<prioritized_replay_buffer<T, std::int32_t, Backend>> per_;
  batch_type batch_;
  buffer<T, Backend> observations_;          // [N, obs] s_t, kept across the env step
  buffer<std::int32_t, Backend> actions_;    // [N] a_t
  buffer<T, Backend> targets_, td_errors_;   // [B]
  buffer<T, Backend> grad_q_;                // [B, A] d loss / d Q
  buffer<detail::dqn_device_stats, Backend> device_stats_;  // [1] read once per iteration
  buffer<T, Backend> best_;  // keep_best_every: the best evaluated Q-network parameters
  double best_score_ = -std::numeric_limits<double>::infinity();
};

}  // namespace rlkernels
