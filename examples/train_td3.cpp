// Trains a TD3 agent (rlkernels/algorithms/td3.hpp) on a continuous-action environment chosen by
// its Gymnasium id (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, Hopper-v5, Walker2d-v5),
// entirely in C++ on the chosen backend, then evaluates the deterministic policy (the actor's action,
// no exploration noise) over 100 episodes.
//
//   train_td3 [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// The same progress line, CSV + PNG learning curve, checkpoints and final evaluation as train_ppo
// (training_ui.hpp); the CSV has a row every 1000 env steps. --help lists every option; the
// hyperparameters start from the env's preset (rlkernels::td3_preset: td3_config's defaults,
// CleanRL's, for an env without one) that options override.
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

const rlk_example::program program{"train_td3", "TD3", "td3", "Pendulum-v1", 1000};

std::vector<rlk_example::option<config>> hyperparameters() {
  return {
      field("--total-steps", &config::total_timesteps),
      field("--num-envs", &config::num_envs),
      field("--buffer-size", &config::buffer_size),
      field("--batch-size", &config::batch_size),
      field("--learning-starts", &config::learning_starts),
      field("--gradient-steps", &config::gradient_steps),
      field("--gamma", &config::gamma),
      field("--tau", &config::tau),
      field("--policy-lr", &config::policy_lr),
      field("--q-lr", &config::q_lr),
      field("--policy-frequency", &config::policy_frequency),
      field("--policy-noise", &config::policy_noise),
      field("--noise-clip", &config::noise_clip),
      field("--exploration-noise", &config::exploration_noise),
      field("--hidden", &config::hidden_sizes, "256,256"),
      rlk_example::activation_option<config>(),
  };
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
int run(Backend backend, const rlk_example::command_line<config>& cl, const rlkernels::registered_env<Env>& entry) {
  using namespace rlkernels;
  const td3_config& c = cl.config;
  const std::string id(entry.info.id);
  std::printf("TD3 on %s (%s backend), seed %llu: %zu envs, buffer %zu, batch %zu x %zu per step from step %llu, "
              "gamma %g, tau %g, lr %g (policy) %g (q), policy every %llu, noise %g (exploration) %g clip %g "
              "(target), hidden %s, %llu steps\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.buffer_size, c.batch_size,
              c.gradient_steps, (unsigned long long)c.learning_starts, c.gamma, c.tau, c.policy_lr, c.q_lr,
              (unsigned long long)c.policy_frequency, c.exploration_noise, c.policy_noise, c.noise_clip,
              rlk_example::int_list_string(c.hidden_sizes).c_str(), (unsigned long long)c.total_timesteps);
  std::fflush(stdout);
  td3<Env, Backend> agent(backend, c, entry.params);
  return rlk_example::train_and_report(agent, program, cl.run, id, c.seed, columns, progress, merge);
}

}  // namespace

int main(int argc, char** argv) {
  return rlk_example::guarded_main([&] {
    const rlk_example::command_line<config> cl =
        rlk_example::parse_command_line(argc, argv, program, hyperparameters(), rlkernels::td3_preset);
    (void)rlk_example::start_job(argc, argv, cl.run, program);  // refuses to run as one of several ranks
    return rlk_example::with_env<rlk_example::continuous_actions>(
        cl.run.env,
        "train_td3 trains the continuous-action envs (Pendulum-v1, MountainCarContinuous-v0, HalfCheetah-v5, "
        "Hopper-v5, Walker2d-v5); " + cl.run.env +
            " is not one of them",
        [&](auto entry) {
          return rlk_example::with_backend(cl.run.backend, program, [&](auto backend) { return run(backend, cl, entry); });
        });
  });
}
