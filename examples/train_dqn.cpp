// Trains a DQN agent (rlkernels/algorithms/dqn.hpp) on a discrete-action environment chosen by its
// Gymnasium id, entirely in C++ on the chosen backend, then evaluates the greedy policy over 100
// episodes.
//
//   train_dqn [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// While training it shows one updating progress line (plain lines when stdout is not a terminal).
// At the end it writes the learning curve as CSV (a row every 1000 env steps) and, when python3
// with matplotlib is present, a PNG plot of it (scripts/plot_learning_curve.py), and says where.
// --help lists every option; the hyperparameters start from the env's preset (rlkernels::dqn_preset;
// CleanRL's dqn.py defaults for envs without one) that options override. The user interface is
// shared with the other training examples (training_ui.hpp).
//
// Data parallel (docs/distributed.md), as train_ppo: under mpirun every rank trains --num-envs envs
// into its own replay buffer and samples --batch-size transitions of it per gradient step; rank 0
// reports:
//
//   mpirun -np 2 train_dqn --env CartPole-v1 --num-envs 2 --batch-size 64 --buffer-size 20000
//
// One process gives the same run, bit for bit, with --env-shards and the per-rank sizes doubled:
//
//   train_dqn --env CartPole-v1 --num-envs 4 --env-shards 2 --batch-size 128 --buffer-size 40000
#include <rlkernels/rlkernels.hpp>
#include <rlkernels/algorithms/dqn.hpp>

#include "training_ui.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using rlk_example::field;
using config = rlkernels::dqn_config;

const rlk_example::program program{"train_dqn", "DQN", "dqn", "CartPole-v1", 1000, /*exports_policy=*/false,
                                   /*data_parallel=*/true};

std::vector<rlk_example::option<config>> hyperparameters() {
  std::vector<rlk_example::option<config>> options = {
      field("--total-steps", &config::total_timesteps),
      field("--num-envs", &config::num_envs),
      field("--buffer-size", &config::buffer_size),
      field("--lr", &config::learning_rate),
      field("--adam-eps", &config::adam_epsilon),
      field("--batch-size", &config::batch_size),
      field("--learning-starts", &config::learning_starts),
      field("--train-freq", &config::train_frequency),
      field("--gradient-steps", &config::gradient_steps),
      field("--gamma", &config::gamma),
      field("--tau", &config::tau),
      field("--target-freq", &config::target_network_frequency),
      field("--start-e", &config::start_e),
      field("--end-e", &config::end_e),
      field("--exploration-fraction", &config::exploration_fraction),
      field("--double-q", &config::double_q),
      field("--n-step", &config::n_step),
      {"--loss", "mse|huber",
       [](config& c, const std::string& v) {
         if (v == "mse") c.loss = rlkernels::td_loss_kind::mse;
         else if (v == "huber") c.loss = rlkernels::td_loss_kind::huber;
         else throw std::invalid_argument("--loss takes mse or huber, got '" + v + "'");
       },
       ""},
      field("--huber-delta", &config::huber_delta),
      field("--max-grad-norm", &config::max_grad_norm),
      field("--prioritized", &config::prioritized),
      field("--per-alpha", &config::per_alpha),
      field("--per-beta0", &config::per_beta0),
      field("--per-eps", &config::per_epsilon),
      field("--keep-best-every", &config::keep_best_every),
      field("--keep-best-episodes", &config::keep_best_episodes),
  };
  return rlk_example::with_network_options(std::move(options), "64,64", "batch");
}

/// The preset of the env; CleanRL's dqn.py defaults for ids without one.
config preset(const std::string& id) {
  try {
    return rlkernels::dqn_preset(id);
  } catch (const std::invalid_argument&) {
    return config{};
  }
}

template <class Env, class Backend>
int run(Backend backend, const rlk_example::command_line<config>& cl, const rlkernels::registered_env<Env>& entry,
        rlkernels::communicator& comm) {
  using namespace rlkernels;
  const dqn_config& c = cl.config;
  const std::string id(entry.info.id);
  const std::string n_step = c.n_step > 1 ? ", " + std::to_string(c.n_step) + "-step" : "";
  const std::string keep_best = c.keep_best_every ? "; ends with the best of greedy evaluations (" +
                                                       std::to_string(c.keep_best_episodes) + " episodes) every " +
                                                       std::to_string(c.keep_best_every) + " steps"
                                                 : "";
  rlk_example::print_replay_data_parallel(comm, c.num_envs, c.batch_size);
  if (comm.rank() == 0) std::printf("DQN on %s (%s backend), seed %llu: %zu envs, buffer %zu, lr %g, batch %zu, learning starts %llu, "
              "train every %llu steps x %zu gradient steps, target %s every %llu steps, epsilon %g -> %g over %g, "
              "gamma %g, %s loss%s%s%s, hidden %s, %llu steps%s\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.buffer_size,
              c.learning_rate, c.batch_size, (unsigned long long)c.learning_starts,
              (unsigned long long)c.train_frequency, c.gradient_steps, c.tau == 1.0 ? "copy" : "polyak",
              (unsigned long long)c.target_network_frequency, c.start_e, c.end_e, c.exploration_fraction, c.gamma,
              c.loss == td_loss_kind::mse ? "mse" : "huber", c.double_q ? ", double Q" : "",
              n_step.c_str(),
              c.prioritized ? ", prioritized replay" : "", rlk_example::int_list_string(c.hidden_sizes).c_str(),
              (unsigned long long)c.total_timesteps, keep_best.c_str());
  std::fflush(stdout);

  dqn<Env, Backend> agent(backend, c, entry.params, comm);
  if (comm.rank() == 0 && comm.size() > 1) {
    const std::size_t values = agent.q_network().num_parameters();
    std::printf("gradient per update: %zu values (%zu bytes) in 1 all-reduces (the Q-network)\n", values,
                values * sizeof(typename dqn<Env, Backend>::scalar_type));
  }
  auto columns = [](const dqn_iteration_stats& s) -> std::vector<rlk_example::stat> {
    using rlk_example::real;
    return {real("q_loss", s.q_loss),   real("q_mean", s.q_mean), real("mean_abs_td_error", s.mean_abs_td_error),
            real("epsilon", s.epsilon), real("beta", s.beta),     real("learning_rate", s.learning_rate)};
  };
  auto progress = [](const dqn_iteration_stats& s) -> std::vector<rlk_example::stat> {
    using rlk_example::real;
    return {real("eps", s.epsilon), real("loss", s.q_loss), real("q", s.q_mean)};
  };
  // The shown stats: the last update's losses with the latest iteration's exploration rate.
  auto merge = [](dqn_iteration_stats& shown, const dqn_iteration_stats& s) {
    if (s.gradient_steps > 0) shown = s;
    shown.epsilon = s.epsilon;
  };
  return rlk_example::train_and_report(agent, program, cl.run, id, c.seed, columns, progress, merge);
}

}  // namespace

int main(int argc, char** argv) {
  return rlk_example::training_main<rlk_example::discrete_classic_control>(
      argc, argv, program, hyperparameters(), preset,
      "train_dqn trains the discrete-action classic-control envs (CartPole, Acrobot, MountainCar)",
      [](auto&&... args) { return run(args...); });
}
