// examples/ppo_program.hpp: train_ppo's options and its run() (one PPO training run with the
// shared user interface of training_ui.hpp), for train_ppo.cpp and for programs that train an env
// of their own the same way (examples/my_robot/train_my_robot.cpp).
#pragma once

#include <rlkernels/rlkernels.hpp>

#include "training_ui.hpp"

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace rlk_example {
namespace ppo_program {

using rlk_example::field;
using config = rlkernels::ppo_config;

inline const rlk_example::program program{"train_ppo", "PPO", "ppo", "CartPole-v1", 0, /*exports_policy=*/true,
                                   /*data_parallel=*/true};


inline std::vector<rlk_example::option<config>> hyperparameters() {
  std::vector<rlk_example::option<config>> options = {
      field("--total-steps", &config::total_timesteps),
      field("--num-envs", &config::num_envs),
      field("--num-steps", &config::num_steps, "T"),
      field("--lr", &config::learning_rate),
      field("--anneal-lr", &config::anneal_lr),
      field("--adaptive-kl", &config::adaptive_lr_kl),
      field("--minibatches", &config::num_minibatches, "K"),
      field("--epochs", &config::update_epochs, "E"),
      field("--gamma", &config::gamma),
      field("--gae-lambda", &config::gae_lambda),
      field("--clip", &config::clip_coef),
      field("--clip-vloss", &config::clip_value_loss),
      field("--ent-coef", &config::ent_coef),
      field("--vf-coef", &config::vf_coef),
      field("--max-grad-norm", &config::max_grad_norm),
      field("--target-kl", &config::target_kl),
      {"--kl-estimator", "k3|analytic",
       [](config& c, const std::string& v) {
         if (v == "k3") c.kl_estimator = rlkernels::ppo_kl_estimator::k3;
         else if (v == "analytic") c.kl_estimator = rlkernels::ppo_kl_estimator::analytic;
         else throw std::invalid_argument("--kl-estimator takes k3 or analytic, got '" + v + "'");
       },
       "the KL that --adaptive-kl and --target-kl read: k3 (CleanRL's estimate, any env) or analytic (the "
       "Gaussian policies' exact KL, rl_games'; continuous actions)"},
      field("--norm-obs", &config::normalize_observations),
      field("--norm-reward", &config::normalize_rewards),
      field("--init-log-std", &config::init_log_std),
  };
  return rlk_example::with_network_options(std::move(options), "64,64", "minibatch");
}

/// The preset of the env; for ids without one, CleanRL's defaults for its action space.
inline config preset(const std::string& id) {
  bool continuous = false;
  for (const rlkernels::env_info& e : rlkernels::registered_envs())
    if (e.id == id) continuous = e.action_space == rlkernels::action_kind::continuous;
  return rlkernels::ppo_preset(id, continuous);
}

template <class Env, class Backend>
int run(Backend backend, const rlk_example::command_line<config>& cl, const rlkernels::registered_env<Env>& entry,
        rlkernels::communicator& comm) {
  using namespace rlkernels;
  const ppo_config& c = cl.config;
  const std::string id(entry.info.id);
  if (comm.rank() == 0 && comm.size() > 1)
    std::printf("data parallel: %d ranks (%s) x %zu envs = %zu envs; gradients all-reduced in rank order\n", comm.size(),
                comm.name().c_str(), c.num_envs, std::size_t(comm.size()) * c.num_envs);
  if (comm.rank() == 0) std::printf("PPO on %s (%s backend), seed %llu: %zu envs x %zu steps, %zu minibatches x %zu epochs, lr %g%s, "
              "gamma %g, lambda %g, clip %g, ent %g, hidden %s, norm obs %s, norm reward %s, %llu steps\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.num_steps, c.num_minibatches,
              c.update_epochs, c.learning_rate, c.anneal_lr ? " (annealed)" : (c.adaptive_lr_kl > 0 ? " (KL-adaptive)" : ""), c.gamma, c.gae_lambda, c.clip_coef,
              c.ent_coef, rlk_example::int_list_string(c.hidden_sizes).c_str(), c.normalize_observations ? "on" : "off",
              c.normalize_rewards ? "on" : "off", (unsigned long long)c.total_timesteps);
  std::fflush(stdout);

  ppo<Env, Backend> agent(backend, c, entry.params, comm);
  if (comm.rank() == 0 && comm.size() > 1) {
    const std::size_t values = agent.actor().num_parameters() + agent.critic().num_parameters() + agent.log_std().size();
    std::printf("gradient: %zu values (%zu bytes) all-reduced %zu times per iteration (%zu minibatches x %zu epochs)\n",
                values, values * sizeof(typename ppo<Env, Backend>::scalar_type), c.num_minibatches * c.update_epochs,
                c.num_minibatches, c.update_epochs);
  }
  auto columns = [](const ppo_iteration_stats& s) -> std::vector<rlk_example::stat> {
    using rlk_example::real;
    return {real("policy_loss", s.policy_loss), real("value_loss", s.value_loss), real("entropy", s.entropy),
            real("approx_kl", s.approx_kl),     real("epoch_kl", s.epoch_kl),  real("clip_fraction", s.clip_fraction),
            real("learning_rate", s.learning_rate)};
  };
  const int status = rlk_example::train_and_report(agent, program, cl.run, id, c.seed, columns, rlk_example::no_stats{});
  return rlk_example::export_policy(status, agent, cl.run, id, comm);
}

}  // namespace ppo_program
}  // namespace rlk_example
