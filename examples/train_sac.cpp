// Trains a SAC agent (rlkernels/algorithms/sac.hpp) on a continuous-action environment chosen by
// its id (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, Hopper-v5, Walker2d-v5, Ant-v5,
// Humanoid-v5, L2F-Crazyflie-v0),
// entirely in C++ on the chosen backend, then evaluates the deterministic policy (the squashed mean action)
// over 100 episodes.
//
//   train_sac [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// The same progress line, CSV + PNG learning curve, checkpoints and final evaluation as train_ppo
// (training_ui.hpp); the CSV has a row every 1000 env steps. --help lists every option; the
// hyperparameters start from the env's preset (rlkernels::sac_preset: sac_config's defaults,
// CleanRL's, for an env without one) that options override.
//
// Data parallel (docs/distributed.md), as train_ppo: under mpirun every rank trains --num-envs envs
// into its own replay buffer and samples --batch-size transitions of it per gradient step; rank 0
// reports:
//
//   mpirun -np 2 train_sac --env Pendulum-v1 --num-envs 2 --batch-size 64 --buffer-size 20000
//
// One process gives the same run, bit for bit, with --env-shards and the per-rank sizes doubled:
//
//   train_sac --env Pendulum-v1 --num-envs 4 --env-shards 2 --batch-size 128 --buffer-size 40000
#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/rlkernels.hpp>

#include "training_ui.hpp"

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using rlk_example::field;
using config = rlkernels::sac_config;

const rlk_example::program program{"train_sac", "SAC", "sac", "Pendulum-v1", 1000, /*exports_policy=*/false,
                                   /*data_parallel=*/true};

std::vector<rlk_example::option<config>> hyperparameters() {
  std::vector<rlk_example::option<config>> options = rlk_example::off_policy_data_options<config>();
  options.insert(options.end(), {
      field("--random-warmup", &config::random_warmup),
      field("--actor-learning-starts", &config::actor_learning_starts),
      field("--gradient-steps", &config::gradient_steps),
      field("--train-frequency", &config::train_frequency),
      field("--gamma", &config::gamma),
      field("--tau", &config::tau),
      field("--policy-lr", &config::policy_lr),
      field("--q-lr", &config::q_lr),
      field("--alpha-lr", &config::alpha_lr),
      field("--policy-frequency", &config::policy_frequency),
      field("--target-network-frequency", &config::target_network_frequency),
      field("--weight-decay", &config::weight_decay),
      field("--alpha", &config::alpha),
      field("--autotune", &config::autotune),
      field("--target-entropy", &config::target_entropy),
  });
  return rlk_example::with_network_options(std::move(options), "256,256", "batch");
}

/// The CSV columns: the last critic step's values, and the last actor step's (the actor learns
/// on every policy_frequency-th critic step only).
std::vector<rlk_example::stat> columns(const rlkernels::sac_iteration_stats& s) {
  using rlk_example::real;
  return {real("critic_loss", s.critic_loss), real("actor_loss", s.actor_loss), real("entropy", s.entropy),
          real("alpha", s.alpha), real("alpha_loss", s.alpha_loss)};
}

std::vector<rlk_example::stat> progress(const rlkernels::sac_iteration_stats& s) {
  if (s.gradient_steps == 0) return {};  // still collecting random transitions
  using rlk_example::real;
  return {real("critic", s.critic_loss), real("actor", s.actor_loss), real("alpha", s.alpha)};
}

/// Keeps the actor's values of the last iteration that stepped the actor.
void merge(rlkernels::sac_iteration_stats& shown, const rlkernels::sac_iteration_stats& s) {
  if (s.gradient_steps == 0) return;
  const rlkernels::sac_iteration_stats before = shown;
  shown = s;
  if (s.actor_loss == 0 && s.entropy == 0) {
    shown.actor_loss = before.actor_loss;
    shown.entropy = before.entropy;
    shown.alpha_loss = before.alpha_loss;
  }
}

template <class Env, class Backend>
int run(Backend backend, const rlk_example::command_line<config>& cl, const rlkernels::registered_env<Env>& entry,
        rlkernels::communicator& comm) {
  using namespace rlkernels;
  const sac_config& c = cl.config;
  const std::string id(entry.info.id);
  rlk_example::print_replay_data_parallel(comm, c.num_envs, c.batch_size);
  if (comm.rank() == 0) std::printf("SAC on %s (%s backend), seed %llu: %zu envs, buffer %zu, batch %zu x %zu per step from step %llu, "
              "gamma %g, tau %g, lr %g (policy) %g (q), policy every %llu, target every %llu, alpha %g%s, "
              "hidden %s, %llu steps\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.buffer_size, c.batch_size,
              c.gradient_steps, (unsigned long long)c.learning_starts, c.gamma, c.tau, c.policy_lr, c.q_lr,
              (unsigned long long)c.policy_frequency, (unsigned long long)c.target_network_frequency, c.alpha,
              c.autotune ? " (autotuned)" : "", rlk_example::int_list_string(c.hidden_sizes).c_str(),
              (unsigned long long)c.total_timesteps);
  std::fflush(stdout);
  sac<Env, Backend> agent(backend, c, entry.params, comm);
  if (comm.rank() == 0 && comm.size() > 1) {
    // Per critic step: both critics' gradient, and on average one actor (and temperature) step.
    const std::size_t critics = agent.critic1().num_parameters() + agent.critic2().num_parameters(),
                      actor = agent.actor().num_parameters(), scalar = sizeof(typename sac<Env, Backend>::scalar_type);
    std::printf("gradient per update: %zu values (%zu bytes) in %d all-reduces (critics %zu, actor %zu%s)\n",
                critics + actor, (critics + actor) * scalar + (c.autotune ? 8 : 0), c.autotune ? 3 : 2, critics, actor,
                c.autotune ? ", temperature 1" : "");
  }
  return rlk_example::train_and_report(agent, program, cl.run, id, c.seed, columns, progress, merge);
}

}  // namespace

int main(int argc, char** argv) {
  return rlk_example::training_main<rlk_example::continuous_actions>(
      argc, argv, program, hyperparameters(), rlkernels::sac_preset,
      "train_sac trains the continuous-action envs (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, "
      "Hopper-v5, Walker2d-v5, Ant-v5, Humanoid-v5, ..., L2F-Crazyflie-v0)",
      [](auto&&... args) { return run(args...); });
}
