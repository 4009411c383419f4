// rlkernels/algorithms/off_policy_trainer.hpp
// What SAC and TD3 share beyond trainer_core: the envs, the replay buffer, an actor, twin critics
// with their targets and optimisers, the iteration (warm-up or policy actions, one step of every
// env into the replay buffer, the gradient steps due, the one host read at its end), evaluation
// and the checkpoint's common entries. Each trainer adds its actions, its gradient step and its
// own statistics.
#pragma once

#include "../buffers/replay_buffer.hpp"
#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/vec_env.hpp"
#include "../nn/mlp.hpp"
#include "../nn/optim.hpp"
#include "actor_critic.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "off_policy_config.hpp"
#include "trainer_core.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief The base of sac and td3 (by CRTP, no virtual functions): on top of trainer_core, the
/// training envs, the replay buffer, the actor, two critics Q(s, a) with Polyak-averaged targets
/// and their Adam optimisers, and the iteration they share:
///
/// 1. every env takes one step with uniform random actions in [-1, 1]^D while fewer than
///    learning_starts env steps are taken and random_warmup is set, else with
///    `Derived::policy_actions(draw)`'s (actions in [-1, 1] are mapped linearly to the env's Box
///    bounds; the replay buffer and the critics see the [-1, 1] actions);
/// 2. the transitions go into the replay buffer;
/// 3. once more than learning_starts env steps are taken, on every train_frequency-th iteration,
///    gradient_steps calls of `Derived::update(stats)`;
/// 4. one host read: the episodes, the losses, the env's deferred action check and the divergence
///    check; `Derived::finish_statistics(stats, record)` adds the trainer's own values.
///
/// `Derived` gives `iteration_stats` (its statistics type), `policy_actions`, `update`,
/// `finish_statistics`, `act`, `parameter_checksum()` and `bind_shared(c)` (which calls
/// bind_common(c) first).
template <class Derived, class Env, class Backend, class Config>
class off_policy_trainer : public trainer_core<Derived, Config, Backend> {
  using core = trainer_core<Derived, Config, Backend>;
  friend core;

 public:
  using env_type = vec_env<Env, Backend>;              ///< the training envs
  using scalar_type = typename env_type::scalar_type;  ///< float or double
  using action_type = scalar_type;                     ///< continuous actions
  using backend_type = Backend;                        ///< where everything runs
  using T = scalar_type;                               ///< shorthand for scalar_type
  static constexpr int observation_size = env_type::observation_size;  ///< O
  static constexpr int action_size = env_type::action_width;           ///< D
  /// The batch type of the replay buffer (observations, actions in [-1, 1], rewards, next observations, ...).
  using batch_type = replay_batch<T, T, Backend>;

  /// Env steps of one iteration on each rank: num_envs.
  static std::uint64_t steps_per_iteration(const Config& c) noexcept { return c.num_envs; }
  /// The most observation rows one act() call takes; evaluate() acts in chunks of this many.
  std::size_t max_act_rows() const noexcept { return rows(); }
  /// Transitions of one gradient step over all ranks: batch_size * ranks.
  std::size_t global_batch_size() const noexcept { return config_.batch_size * std::size_t(comm_->size()); }
  /// The first critic Q1(s, a), input [observation, action in [-1, 1]].
  mlp<T, Backend>& critic1() noexcept { return q1_; }
  /// The second critic Q2(s, a).
  mlp<T, Backend>& critic2() noexcept { return q2_; }
  /// Q1's Polyak-averaged target.
  mlp<T, Backend>& critic1_target() noexcept { return q1_target_; }
  /// Q2's Polyak-averaged target.
  mlp<T, Backend>& critic2_target() noexcept { return q2_target_; }
  /// The training envs.
  env_type& envs() noexcept { return env_; }
  /// The replay buffer (actions in [-1, 1]).
  replay_buffer<T, T, Backend>& replay() noexcept { return replay_; }

  /// @brief One iteration (see the class's description): one step of every env, its transitions
  /// into the replay buffer, the gradient steps due; then, every config().checkpoint_every
  /// iterations, an automatic checkpoint.
  /// @throw std::logic_error if training is already done(); rlkernels::error if a loss becomes
  ///        NaN or infinite (naming the first such gradient step); invalid_action if an action was invalid
  auto iterate() {
    using clock = std::chrono::steady_clock;
    this->begin_iteration();
    const auto t0 = clock::now();
    typename Derived::iteration_stats stats;
    stats.iteration = iteration_;
    const std::size_t n = config_.num_envs, nd = n * std::size_t(action_size);
    // a_t: uniform in [-1, 1]^D while warming up, else the trainer's policy with its exploration.
    const std::uint64_t draw = action_draw_++;
    if (config_.random_warmup && global_step_ < config_.learning_starts) {
      for_each_index(lb_, nd,
                     detail::uniform_action_kernel<T>{detail::derive_key(config_.seed, detail::ac_key_warmup_actions),
                                                      draw, actions_.data(), first_env() * std::uint64_t(action_size)});
    } else {
      derived().policy_actions(draw);
    }
    // Step the envs with the actions mapped to their bounds; store (s_t, a_t, r, s', terminated, truncated).
    detail::step_and_store<Env>(lb_, env_, replay_, actions_.cview(), env_actions_.view(), obs_before_.view(),
                                &stats_.data()->step);
    global_step_ += std::uint64_t(n) * std::uint64_t(comm_->size());
    actor_updated_ = false;
    detail::run_once(lb_, detail::ac_start_kernel{stats_.data()});
    if (global_step_ > config_.learning_starts && iteration_ % config_.train_frequency == 0) {
      for (std::size_t g = 0; g < config_.gradient_steps; ++g) derived().update(stats);
    }
    const std::string who = std::string(this->who()) + "::iterate";
    const detail::actor_critic_device_stats d = detail::read_iteration(env_, stats_, who.c_str(), *comm_);
    const detail::env_step_outcome ep = detail::outcome_of(d);
    if (stats.gradient_steps > 0) stats.critic_loss = d.critic.loss;
    if (actor_updated_) stats.actor_loss = d.actor.loss;
    stats.episodes = ep.episodes;
    stats.episode_return_sum = ep.episode_return_sum;
    stats.episode_length_sum = ep.episode_length_sum;
    stats.global_step = global_step_;
    stats.failed_steps = this->failed_steps_since_last(d.step.failures);
    derived().finish_statistics(stats, d);
    this->end_iteration();
    stats.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return stats;
  }

  /// @brief Evaluation on `episodes` fresh envs seeded with `seed` (one episode each) with act();
  /// training state is untouched. See detail::evaluate_policy.
  /// @throw std::invalid_argument if episodes is 0; rlkernels::error if an episode does not end within max_steps
  policy_evaluation evaluate(std::size_t episodes, std::uint64_t seed, bool deterministic = true,
                             std::size_t max_steps = 1000000) {
    const std::string who = std::string(this->who()) + "::evaluate";
    return detail::evaluate_policy<Env>(backend_, env_params_, episodes, seed, rows(), max_steps, who.c_str(),
                                        [&](view<const T> obs, view<T> actions, std::size_t first, std::size_t step) {
                                          // Stochastic draws: a key of their own, one per chunk of envs.
                                          derived().act(obs, actions, deterministic,
                                                        detail::derive_key(detail::derive_key(seed, detail::ac_key_evaluation), first),
                                                        step);
                                        });
  }

 protected:
  using core::backend_;
  using core::comm_;
  using core::config_;
  using core::global_step_;
  using core::gradient_steps_;
  using core::iteration_;
  static constexpr int q_inputs = observation_size + action_size;  ///< the critics' inputs: [observation, action]

  /// Builds envs, replay buffer, the actor (observations -> actor_outputs, `actor_output` after
  /// the last layer), the critics and their targets (the targets copy the critics after
  /// initialise_and_join()) and the shared scratch.
  off_policy_trainer(Backend backend, Config config, typename Env::Params env_params, communicator& comm,
                     const char* name, int actor_outputs, activation actor_output)
      : core(backend, std::move(config), comm, name), lb_(detail::light_backend(backend)), env_params_(env_params),
        env_(backend, config_.num_envs, config_.seed, env_params, std::uint64_t(comm.rank()) * config_.num_envs),
        replay_(backend, config_.buffer_steps(), config_.num_envs, observation_size, action_size),
        batch_(backend, config_.batch_size, observation_size, action_size),
        actor_(backend, sizes(observation_size, actor_outputs), config_.hidden_activation, actor_output),
        q1_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q2_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q1_target_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        q2_target_(backend, sizes(q_inputs, 1), config_.hidden_activation, activation::identity),
        actor_opt_(backend, actor_.num_parameters(), adam_with(config_.policy_lr)),
        q1_opt_(backend, q1_.num_parameters(), adam_with(config_.q_lr)),
        q2_opt_(backend, q2_.num_parameters(), adam_with(config_.q_lr)), actor_ws_(actor_, rows()),
        q1_ws_(q1_, part_rows()), q2_ws_(q2_, part_rows()), target_ws_(q1_target_, part_rows()),
        target_ws2_(q2_target_, part_rows()),
        critic_grads_(backend, q1_.num_parameters() + q2_.num_parameters(), config_.env_shards,
                      config_.gradient_accumulation_steps, comm),
        actor_grads_(backend, actor_.num_parameters(), config_.env_shards, config_.gradient_accumulation_steps, comm),
        obs_before_(backend, config_.num_envs * std::size_t(observation_size)),
        actions_(backend, config_.num_envs * std::size_t(action_size)),
        env_actions_(backend, rows() * std::size_t(action_size)),
        critic_in_(backend, part_rows() * std::size_t(q_inputs)), targets_(backend, part_rows()),
        grad_q1_(backend, part_rows()), grad_q2_(backend, part_rows()) {}

  /// PyTorch's default Linear initialisation of the actor and the critics; with R > 1 ranks the
  /// ranks check their configs and take rank 0's parameters; then the critics' targets copy the critics.
  void initialize_and_join() {
    const layer_init torch{weight_init::pytorch_default, 1.0, 0.0};
    actor_.initialize(detail::derive_key(config_.seed, detail::ac_key_actor_init), torch, torch);
    q1_.initialize(detail::derive_key(config_.seed, detail::ac_key_critic1_init), torch, torch);
    q2_.initialize(detail::derive_key(config_.seed, detail::ac_key_critic2_init), torch, torch);
    this->template join_ranks<T>({{actor_.parameters(), "actor parameters"},
                                  {q1_.parameters(), "critic 1 parameters"},
                                  {q2_.parameters(), "critic 2 parameters"}});
    q1_target_.copy_parameters_from(q1_);
    q2_target_.copy_parameters_from(q2_);
  }

  /// The state every rank holds alike: the config, the actor, both critics and their targets,
  /// their optimisers and the counters (SAC and TD3 then add their own).
  template <class C>
  void bind_common(C& c) {
    c.bind_constant("config", config_.hyperparameters());
    c.bind("actor/parameters", backend_, actor_.parameters());
    c.bind("q1/parameters", backend_, q1_.parameters());
    c.bind("q2/parameters", backend_, q2_.parameters());
    c.bind("q1_target/parameters", backend_, q1_target_.parameters());
    c.bind("q2_target/parameters", backend_, q2_target_.parameters());
    actor_opt_.bind_checkpoint(c, "actor_adam/");
    q1_opt_.bind_checkpoint(c, "q1_adam/");
    q2_opt_.bind_checkpoint(c, "q2_adam/");
    c.bind_value("counters/global_step", global_step_);
    c.bind_value("counters/iteration", iteration_);
    c.bind_value("counters/critic_updates", gradient_steps_);
    c.bind_value("counters/action_draw", action_draw_);
    c.bind_value("counters/batch_draw", batch_draw_);
    c.bind_value("counters/noise_draw", noise_draw_);
  }
  /// What is each rank's own: its envs and its replay buffer (when config().checkpoint_buffers).
  template <class C>
  void bind_local(C& c) {
    env_.bind_checkpoint(c, "env/");
    if (config_.checkpoint_buffers) replay_.bind_checkpoint(c, "replay/");
  }

  /// Adam with step size `lr`, the config's epsilon and weight decay.
  adam_params adam_with(double lr) const {
    adam_params p;
    p.learning_rate = lr;
    p.epsilon = config_.adam_epsilon;
    p.weight_decay = config_.weight_decay;
    return p;
  }
  /// [in, hidden..., out].
  std::vector<int> sizes(int in, int out) const {
    std::vector<int> s{in};
    s.insert(s.end(), config_.hidden_sizes.begin(), config_.hidden_sizes.end());
    s.push_back(out);
    return s;
  }
  /// Rows of the act() workspaces: max(num_envs, part_rows()).
  std::size_t rows() const noexcept { return std::max(config_.num_envs, part_rows()); }
  /// Rows of one part of a batch: batch_size / (env_shards * gradient_accumulation_steps).
  std::size_t part_rows() const noexcept { return config_.batch_size / config_.gradient_parts(); }
  /// This rank's first env in the whole population (0 in one process).
  std::uint64_t first_env() const noexcept { return std::uint64_t(comm_->rank()) * config_.num_envs; }
  /// This process's shards' batch sampling keys (detail::shard_seeds).
  std::vector<std::uint64_t> shard_seeds() const {
    return detail::shard_seeds(detail::derive_key(config_.seed, detail::ac_key_batches), config_.env_shards, *comm_);
  }
  /// fn(shard, micro-batch, first row here, first row of all ranks) for every part of a batch.
  template <class Fn>
  void for_each_part(Fn&& fn) const {
    detail::for_each_batch_part(config_, config_.batch_size, *comm_, fn);
  }
  /// The one-part loss functions refuse several parts (detail::check_one_part).
  void check_one_part(const char* who) const { detail::check_one_part(config_, *comm_, who); }
  /// @throw std::invalid_argument, naming `who`, unless the batch has config().batch_size transitions
  void check_batch(const batch_type& batch, const char* who) const {
    RLK_EXPECTS(batch.size() == config_.batch_size, std::invalid_argument, who, ": the batch has ", batch.size(),
                " transitions, the config's batch_size is ", config_.batch_size);
  }
  /// critic_in_ = [observations, actions] for b rows.
  void critic_input(view<const T> observations, view<const T> actions, std::size_t b) {
    for_each_index(lb_, b * std::size_t(q_inputs),
                   detail::concat_kernel<T>{observations.data(), actions.data(), critic_in_.data(),
                                            std::size_t(observation_size), std::size_t(action_size)});
  }
  /// True once more than actor_learning_starts env steps are taken (0: learning_starts, which
  /// every gradient step has passed).
  bool actor_learning() const noexcept { return global_step_ > config_.actor_learning_starts; }

  Backend lb_;                          ///< detail::light_backend(backend_): small element-wise passes
  typename Env::Params env_params_;     ///< the envs' parameters (also of evaluate()'s envs)
  env_type env_;                        ///< the training envs
  replay_buffer<T, T, Backend> replay_;  ///< the transitions (actions in [-1, 1])
  batch_type batch_;                    ///< the batch of the current gradient step
  mlp<T, Backend> actor_;               ///< the policy network
  mlp<T, Backend> q1_;                  ///< the first critic
  mlp<T, Backend> q2_;                  ///< the second critic
  mlp<T, Backend> q1_target_;           ///< Q1's target
  mlp<T, Backend> q2_target_;           ///< Q2's target
  adam<T, Backend> actor_opt_;          ///< the actor's Adam
  adam<T, Backend> q1_opt_;             ///< Q1's Adam
  adam<T, Backend> q2_opt_;             ///< Q2's Adam
  mlp_workspace<T, Backend> actor_ws_;   ///< the actor's activations (rows() rows)
  mlp_workspace<T, Backend> q1_ws_;      ///< Q1's activations (one part of a batch)
  mlp_workspace<T, Backend> q2_ws_;      ///< Q2's activations
  mlp_workspace<T, Backend> target_ws_;  ///< Q1 target's activations
  mlp_workspace<T, Backend> target_ws2_;  ///< Q2 target's activations
  detail::gradient_parts<T, Backend> critic_grads_;  ///< a batch's parts of the critics' gradients summed
  detail::gradient_parts<T, Backend> actor_grads_;   ///< a batch's parts of the actor's gradient summed
  /// [1] the iteration's statistics, read once at its end.
  buffer<detail::actor_critic_device_stats, Backend> stats_{backend_, 1};
  bool actor_updated_ = false;       ///< an actor step ran in this iteration
  buffer<T, Backend> obs_before_;    ///< [N, O] s_t, kept across the env step
  buffer<T, Backend> actions_;       ///< [N, D] the iteration's actions in [-1, 1]
  buffer<T, Backend> env_actions_;   ///< [rows(), D] actions in the env's units
  buffer<T, Backend> critic_in_;     ///< [part rows, O + D] a critic's input
  buffer<T, Backend> targets_;       ///< [part rows] the critics' targets
  buffer<T, Backend> grad_q1_;       ///< [part rows] d loss / d Q1
  buffer<T, Backend> grad_q2_;       ///< [part rows] d loss / d Q2
  std::uint64_t action_draw_ = 0;    ///< counter of the iterations' action draws
  std::uint64_t batch_draw_ = 0;     ///< counter of the batches sampled
  std::uint64_t noise_draw_ = 0;     ///< counter of the losses' noise draws

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace rlkernels
