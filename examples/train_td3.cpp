// Trains a TD3 agent (rlkernels/algorithms/td3.hpp) on a continuous-action environment chosen by
// its id (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, Hopper-v5, Walker2d-v5, Ant-v5,
// Humanoid-v5, L2F-Crazyflie-v0),
// entirely in C++ on the chosen backend, then evaluates the deterministic policy (the actor's action,
// no exploration noise) over 100 episodes; --export-policy FILE writes it as a policy file
// (rlkernels/algorithms/policy_file.hpp).
//
//   train_td3 [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// The same progress line, CSV + PNG learning curve, checkpoints and final evaluation as train_ppo
// (training_ui.hpp); the CSV has a row every 1000 env steps. --help lists every option; the
// hyperparameters start from the env's preset (rlkernels::td3_preset: td3_config's defaults,
// CleanRL's, for an env without one) that options override.
//
// Data parallel (docs/distributed.md), as train_ppo: under mpirun every rank trains --num-envs envs
// into its own replay buffer and samples --batch-size transitions of it per gradient step; rank 0
// reports:
//
//   mpirun -np 2 train_td3 --env Pendulum-v1 --num-envs 2 --batch-size 64 --buffer-size 20000
//
// One process gives the same run, bit for bit, with --env-shards and the per-rank sizes doubled:
//
//   train_td3 --env Pendulum-v1 --num-envs 4 --env-shards 2 --batch-size 128 --buffer-size 40000
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/rlkernels.hpp>

#include "training_ui.hpp"

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using rlk_example::field;
using config = rlkernels::td3_config;

const rlk_example::program program{"train_td3", "TD3", "td3", "Pendulum-v1", 1000, /*exports_policy=*/true,
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
      field("--policy-frequency", &config::policy_frequency),
      field("--critic-target-frequency", &config::critic_target_frequency),
      field("--weight-decay", &config::weight_decay),
      field("--adam-epsilon", &config::adam_epsilon),
      field("--policy-noise", &config::policy_noise),
      field("--noise-clip", &config::noise_clip),
      field("--exploration-noise", &config::exploration_noise),
      field("--actor-noise", &config::actor_noise),
  });
  return rlk_example::with_network_options(std::move(options), "256,256", "batch");
}

std::vector<rlk_example::stat> columns(const rlkernels::td3_iteration_stats& s) {
  using rlk_example::real;
  return {real("critic_loss", s.critic_loss), real("actor_loss", s.actor_loss)};
}

std::vector<rlk_example::stat> progress(const rlkernels::td3_iteration_stats& s) {
  if (s.gradient_steps == 0) return {};  // still collecting random transitions
  using rlk_example::real;
  return {real("critic", s.critic_loss), real("actor", s.actor_loss)};
}

/// Keeps the actor loss of the last iteration that stepped the (delayed) actor.
void merge(rlkernels::td3_iteration_stats& shown, const rlkernels::td3_iteration_stats& s) {
  if (s.gradient_steps == 0) return;
  const double actor_loss = shown.actor_loss;
  shown = s;
  if (s.actor_loss == 0) shown.actor_loss = actor_loss;
}

template <class Env, class Backend>
int run(Backend backend, const rlk_example::command_line<config>& cl, const rlkernels::registered_env<Env>& entry,
        rlkernels::communicator& comm) {
  using namespace rlkernels;
  const td3_config& c = cl.config;
  const std::string id(entry.info.id);
  rlk_example::print_replay_data_parallel(comm, c.num_envs, c.batch_size);
  if (comm.rank() == 0) std::printf("TD3 on %s (%s backend), seed %llu: %zu envs, buffer %zu, batch %zu x %zu per step from step %llu, "
              "gamma %g, tau %g, lr %g (policy) %g (q), policy every %llu, noise %g (exploration) %g clip %g "
              "(target), hidden %s, %llu steps\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.buffer_size, c.batch_size,
              c.gradient_steps, (unsigned long long)c.learning_starts, c.gamma, c.tau, c.policy_lr, c.q_lr,
              (unsigned long long)c.policy_frequency, c.exploration_noise, c.policy_noise, c.noise_clip,
              rlk_example::int_list_string(c.hidden_sizes).c_str(), (unsigned long long)c.total_timesteps);
  std::fflush(stdout);
  td3<Env, Backend> agent(backend, c, entry.params, comm);
  if (comm.rank() == 0 && comm.size() > 1) {
    // Per critic step: both critics' gradient, and the actor's every policy_frequency-th step.
    const double critics = double(agent.critic1().num_parameters() + agent.critic2().num_parameters()),
                 actor = double(agent.actor().num_parameters()) / double(c.policy_frequency);
    const double values = critics + actor;
    std::printf("gradient per update: %.0f values (%.0f bytes) in %g all-reduces (critics %.0f, actor %.0f on average)\n",
                values, values * double(sizeof(typename td3<Env, Backend>::scalar_type)),
                1.0 + 1.0 / double(c.policy_frequency), critics, actor);
  }
  const int status = rlk_example::train_and_report(agent, program, cl.run, id, c.seed, columns, progress, merge);
  return rlk_example::export_policy(status, agent, cl.run, id, comm);
}

}  // namespace

int main(int argc, char** argv) {
  return rlk_example::training_main<rlk_example::continuous_actions>(
      argc, argv, program, hyperparameters(), rlkernels::td3_preset,
      "train_td3 trains the continuous-action envs (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, "
      "Hopper-v5, Walker2d-v5, Ant-v5, Humanoid-v5, ..., L2F-Crazyflie-v0)",
      [](auto&&... args) { return run(args...); });
}
