// benchmarks/algorithms/rlkernels_td3_l2f.cpp
// rlkernels' TD3 (rlkernels/algorithms/td3.hpp) on the L2F quadrotor (L2F-Crazyflie-v0,
// rlkernels::quadrotor<float>), judged as rltools_sac_l2f.cpp judges RLtools' SAC: by
// learning-to-fly's settling fraction on the env exactly as l2f.Environment() builds it. One run
// per process, on one thread (the serial backend):
//
//   rlkernels_td3_l2f [SEED] [--env-param NAME=VALUE ...] [--steps N] [--num-envs N] [--batch N]
//                     [--hidden H] [--layers L] [--lr X] [--exploration-noise X]
//                     [--learning-starts N] [--eval-every N] [--eval-episodes K]
//                     [--activation relu|tanh] [--policy-noise X] [--noise-clip X]
//                     [--gradient-steps N] [--train-frequency N] [--policy-frequency N] [--tau X]
//                     [--random-warmup 0|1] [--actor-learning-starts N] [--critic-target-frequency N]
//                     [--weight-decay X] [--adam-epsilon X] [--actor-noise X] [--export-policy FILE]
//
// Defaults: td3_preset("L2F-Crazyflie-v0") (what train_td3 --env L2F-Crazyflie-v0 trains with);
// the replay buffer always holds every step (--steps).
//
// Training env: l2f.Environment()'s Params with the --env-param changes (the fields of
// rlkernels/envs/param_fields.hpp, as train_td3 takes them), e.g. --env-param
// reward_angular_acceleration=0 (l2f's weight is 2). With that cost, every flying step under
// exploration noise costs about -10 and a terminating step 0, so crashing at once is what the
// returns teach; learning-to-fly's own training starts from a reward without it and raises its
// weights by a curriculum. The evaluation always uses l2f.Environment()'s Params unchanged; its
// criterion does not read the reward.
//
// Prints, besides header lines, one line per evaluation (before training and every --eval-every
// env steps), in rltools_sac_l2f's format:
//   eval: env_steps <n> training_seconds <s> training_cpu_seconds <c> return <mean return>
//         length <mean episode length> settling_fraction <share> terminated_fraction <share>
// where training_seconds is the steady_clock time spent in TD3's iterations so far (the
// evaluations are not timed) and training_cpu_seconds the process CPU time of the same spans; then
//   training_seconds: <total>   training_cpu_seconds: <total>
//   first_settled_0.9: env_steps <n> training_seconds <s>    (or "never")
//
// --export-policy FILE writes the actor as a policy file (rlkernels/algorithms/policy_file.hpp) after
// every evaluation whose settling fraction is the best so far (the first on a tie), so that FILE
// holds the best evaluated policy of the run; a line "policy: FILE (env_steps N, settling_fraction
// F)" says which.
//
// Evaluation: K = 100 episodes of the deterministic policy (the actor's action, no noise) from the
// env's own initial-state distribution, at most 500 steps each, in batches through the actor. The
// initial states come from a fixed seed (SEED + 1000003), so every evaluation of a run starts from the
// same states. The settling fraction is learning-to-fly's SettlingFractionPosition<200>: the share of
// episodes that run all 500 steps without terminating and end with |position| < 0.2 m.
#include <rlkernels/algorithms/policy_file.hpp>
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/envs/param_fields.hpp>
#include <rlkernels/envs/quadrotor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using env_t = rlkernels::quadrotor<float>;
using agent_t = rlkernels::td3<env_t, rlkernels::serial_backend>;
constexpr int eval_step_limit = 500;
constexpr double settle_distance = 0.2;  // m: SettlingFractionPosition<200> (mm)

struct eval_result {
  double return_mean = 0, length_mean = 0, settling_fraction = 0, terminated_fraction = 0;
};

/// Runs `episodes` episodes of the deterministic policy on l2f.Environment()'s Params, stepping the
/// envs' own host functions (the final states are needed, which a vec_env resets away).
eval_result evaluate(agent_t& agent, std::size_t episodes, std::uint64_t seed) {
  const env_t::Params params{};
  std::vector<env_t::State> states(episodes);
  std::vector<float> observations(episodes * env_t::observation_size), actions(episodes * env_t::action_size);
  std::vector<double> returns(episodes, 0);
  std::vector<int> lengths(episodes, 0);
  std::vector<char> terminated(episodes, 0);
  for (std::size_t i = 0; i < episodes; ++i) {
    rlkernels::rng gen(seed, i, 0);
    states[i] = env_t::State{};
    env_t::reset(params, states[i], gen);
  }
  for (int step = 0; step < eval_step_limit; ++step) {
    for (std::size_t i = 0; i < episodes; ++i)  // a terminated row keeps its last observation; its action is discarded
      if (!terminated[i]) env_t::observe(params, states[i], observations.data() + i * env_t::observation_size);
    for (std::size_t first = 0; first < episodes; first += agent.max_act_rows()) {  // act() takes this many rows at most
      const std::size_t rows = std::min(agent.max_act_rows(), episodes - first);
      agent.act(rlkernels::view<const float>(observations.data() + first * env_t::observation_size,
                                             rows * env_t::observation_size),
                rlkernels::view<float>(actions.data() + first * env_t::action_size, rows * env_t::action_size),
                /*deterministic=*/true);
    }
    bool any_running = false;
    for (std::size_t i = 0; i < episodes; ++i) {
      if (terminated[i]) continue;
      rlkernels::rng gen(seed, i, std::uint64_t(step) + 1);  // unused by the step (no noise); for the signature
      const auto r = env_t::step(params, states[i], actions.data() + i * env_t::action_size, gen);
      returns[i] += r.reward;
      lengths[i] += 1;
      terminated[i] = r.terminated ? 1 : 0;
      any_running = any_running || !terminated[i];
    }
    if (!any_running) break;
  }
  eval_result result;
  std::size_t settled = 0, n_terminated = 0;
  for (std::size_t i = 0; i < episodes; ++i) {
    result.return_mean += returns[i];
    result.length_mean += lengths[i];
    n_terminated += terminated[i] ? 1 : 0;
    if (!terminated[i] && lengths[i] == eval_step_limit) {
      const float* p = states[i].position;
      const double distance = std::sqrt(double(p[0]) * p[0] + double(p[1]) * p[1] + double(p[2]) * p[2]);
      settled += distance < settle_distance ? 1 : 0;
    }
  }
  result.return_mean /= double(episodes);
  result.length_mean /= double(episodes);
  result.settling_fraction = double(settled) / double(episodes);
  result.terminated_fraction = double(n_terminated) / double(episodes);
  return result;
}

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [SEED] [--env-param NAME=VALUE ...] [--steps N] [--num-envs N] [--batch N] [--hidden H] "
               "[--layers L] [--lr X] [--exploration-noise X] [--learning-starts N] [--eval-every N] [--eval-episodes K] "
               "[--activation relu|tanh] [--policy-noise X] [--noise-clip X] [--gradient-steps N] [--train-frequency N] "
               "[--policy-frequency N] "
               "[--tau X] [--export-policy FILE]\n",
               argv0, why.c_str(), argv0);
  std::exit(2);
}

double number(const char* argv0, const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) usage(argv0, name + " takes a non-negative number, not '" + text + "'");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 0;
  std::uint64_t eval_every = 10000;
  std::size_t eval_episodes = 100;
  // td3_preset("L2F-Crazyflie-v0"): what train_td3 --env L2F-Crazyflie-v0 trains with.
  rlkernels::td3_config c = rlkernels::td3_preset("L2F-Crazyflie-v0");
  int hidden = 64, layers = 2;
  std::string export_path;
  std::vector<std::pair<std::string, std::string>> env_params;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i == 1 && a.find_first_not_of("0123456789") == std::string::npos && !a.empty()) {
      seed = std::strtoull(a.c_str(), nullptr, 10);
      continue;
    }
    if (i + 1 >= argc) usage(argv[0], "'" + a + "' is not an option that takes a value here");
    if (a == "--env-param") {
      const std::string kv = argv[++i];
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage(argv[0], "--env-param takes NAME=VALUE, not '" + kv + "'");
      env_params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      continue;
    }
    if (a == "--export-policy") {
      export_path = argv[++i];
      continue;
    }
    if (a == "--activation") {
      const std::string name = argv[++i];
      if (name == "relu") c.hidden_activation = rlkernels::activation::relu;
      else if (name == "tanh") c.hidden_activation = rlkernels::activation::tanh;
      else usage(argv[0], "--activation takes relu or tanh, not '" + name + "'");
      continue;
    }
    const double v = number(argv[0], a, argv[++i]);
    if (a == "--steps") c.total_timesteps = std::uint64_t(v);
    else if (a == "--num-envs") c.num_envs = std::size_t(v);
    else if (a == "--batch") c.batch_size = std::size_t(v);
    else if (a == "--hidden") hidden = int(v);
    else if (a == "--layers") layers = int(v);
    else if (a == "--lr") c.policy_lr = c.q_lr = v;
    else if (a == "--exploration-noise") c.exploration_noise = v;
    else if (a == "--policy-noise") c.policy_noise = v;
    else if (a == "--noise-clip") c.noise_clip = v;
    else if (a == "--gradient-steps") c.gradient_steps = std::size_t(v);
    else if (a == "--train-frequency") c.train_frequency = std::uint64_t(v);
    else if (a == "--policy-frequency") c.policy_frequency = std::uint64_t(v);
    else if (a == "--tau") c.tau = v;
    else if (a == "--learning-starts") c.learning_starts = std::uint64_t(v);
    else if (a == "--random-warmup") c.random_warmup = v != 0;
    else if (a == "--actor-learning-starts") c.actor_learning_starts = std::uint64_t(v);
    else if (a == "--critic-target-frequency") c.critic_target_frequency = std::uint64_t(v);
    else if (a == "--weight-decay") c.weight_decay = v;
    else if (a == "--actor-noise") c.actor_noise = v;
    else if (a == "--adam-epsilon") c.adam_epsilon = v;
    else if (a == "--eval-every") eval_every = std::uint64_t(v);
    else if (a == "--eval-episodes") eval_episodes = std::size_t(v);
    else usage(argv[0], "unknown option '" + a + "'");
  }
  if (eval_every == 0 || eval_episodes == 0 || layers < 1 || hidden < 1) usage(argv[0], "--eval-every, --eval-episodes, --hidden and --layers must be positive");
  c.hidden_sizes.assign(std::size_t(layers), hidden);
  c.buffer_size = std::size_t(c.total_timesteps);
  c.seed = seed;

  env_t::Params train_params{};
  std::string changes;
  for (const auto& [name, value] : env_params) {
    try {
      rlkernels::set_param<env_t>(train_params, name, value);
    } catch (const std::invalid_argument& e) {
      usage(argv[0], e.what());
    }
    changes += (changes.empty() ? "" : ", ") + name + "=" + value;
  }
  std::printf("rlkernels_td3_l2f: TD3, serial backend (one thread), seed %llu, %llu env steps, %zu envs, batch %zu x %zu every %llu "
              "iterations, "
              "%d x %d %s, lr %g, exploration noise %g, target noise %g clip %g, warm-up %llu, gamma %g, tau %g\n",
              (unsigned long long)seed, (unsigned long long)c.total_timesteps, c.num_envs, c.batch_size, c.gradient_steps,
              (unsigned long long)c.train_frequency, layers, hidden,
              c.hidden_activation == rlkernels::activation::tanh ? "tanh" : "ReLU", c.policy_lr, c.exploration_noise, c.policy_noise, c.noise_clip, (unsigned long long)c.learning_starts, c.gamma,
              c.tau);
  std::printf("td3 options: random warm-up %s, actor warm-up %llu, critic targets every %llu critic steps (0: with the actor), "
              "weight decay %g, adam epsilon %g, actor-loss noise %g\n",
              c.random_warmup ? "yes" : "no", (unsigned long long)c.actor_learning_starts,
              (unsigned long long)c.critic_target_frequency, c.weight_decay, c.adam_epsilon, c.actor_noise);
  std::printf("env: L2F-Crazyflie-v0 (l2f.Environment()); training env changes: %s; "
              "evaluation on l2f.Environment() unchanged, %zu episodes every %llu env steps\n",
              changes.empty() ? "none" : changes.c_str(), eval_episodes, (unsigned long long)eval_every);
  std::fflush(stdout);

  try {
    agent_t agent(rlkernels::serial, c, train_params);
    const std::uint64_t eval_seed = seed + 1000003;
    double seconds = 0, cpu_seconds = 0;
    bool settled_reported = false;
    double settled_seconds = 0;
    std::uint64_t settled_env_steps = 0;
    double best_settling = -1;
    std::uint64_t best_env_steps = 0;
    auto report = [&](std::uint64_t env_steps) {
      const eval_result r = evaluate(agent, eval_episodes, eval_seed);
      std::printf("eval: env_steps %7llu training_seconds %8.3f training_cpu_seconds %8.3f return %9.3f length %7.2f "
                  "settling_fraction %.2f terminated_fraction %.2f\n",
                  (unsigned long long)env_steps, seconds, cpu_seconds, r.return_mean, r.length_mean, r.settling_fraction,
                  r.terminated_fraction);
      std::fflush(stdout);
      if (!export_path.empty() && r.settling_fraction > best_settling) {
        best_settling = r.settling_fraction;
        best_env_steps = env_steps;
        rlkernels::save_policy(agent, "L2F-Crazyflie-v0", export_path);
      }
      if (!settled_reported && r.settling_fraction >= 0.9) {
        settled_reported = true;
        settled_seconds = seconds;
        settled_env_steps = env_steps;
      }
    };
    report(0);
    std::uint64_t next = eval_every;
    while (!agent.done()) {
      const std::clock_t cpu_start = std::clock();
      const auto start = std::chrono::steady_clock::now();
      while (!agent.done() && agent.global_step() < next) agent.iterate();
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      cpu_seconds += double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      report(agent.global_step());
      while (next <= agent.global_step()) next += eval_every;
    }
    std::printf("training_seconds: %.6f\ntraining_cpu_seconds: %.6f\n", seconds, cpu_seconds);
    if (!export_path.empty())
      std::printf("policy: %s (env_steps %llu, settling_fraction %.2f)\n", export_path.c_str(),
                  (unsigned long long)best_env_steps, best_settling);
    if (settled_reported)
      std::printf("first_settled_0.9: env_steps %llu training_seconds %.3f\n", (unsigned long long)settled_env_steps,
                  settled_seconds);
    else
      std::printf("first_settled_0.9: never\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlkernels_td3_l2f: %s\n", e.what());
    return 1;
  }
  return 0;
}
