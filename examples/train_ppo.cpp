// Trains a PPO agent (rlkernels/algorithms/ppo.hpp) on an environment chosen by its Gymnasium id,
// entirely in C++ on the chosen backend, then evaluates the deterministic policy over 100 episodes.
//
//   train_ppo [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// While training it shows one updating progress line (plain lines when stdout is not a terminal).
// At the end it writes the learning curve as CSV and, when python3 with matplotlib is present, a
// PNG plot of it (scripts/plot_learning_curve.py), and says where. --help lists every option; the
// hyperparameters start from the env's preset (rlkernels::ppo_preset) that options override.
#include <rlkernels/rlkernels.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#ifndef RLK_PLOT_SCRIPT
#define RLK_PLOT_SCRIPT "scripts/plot_learning_curve.py"
#endif

namespace {

struct options {
  std::string env = "CartPole-v1";
  std::string backend = "openmp";
  std::string out_dir = ".";
  std::string plot_script = RLK_PLOT_SCRIPT;
  bool plot = true;
  bool quiet = false;
  std::size_t eval_episodes = 100;
  double stop_at = std::nan("");  ///< stop once the mean return of the last 100 episodes reaches this
  rlkernels::ppo_config config;
  std::vector<std::string> overrides;  ///< raw "--key value" pairs, applied after the preset
};

void apply(rlkernels::ppo_config& c, const std::string& key, const std::string& v) {
  auto b = [&] {
    if (v == "1" || v == "true" || v == "on") return true;
    if (v == "0" || v == "false" || v == "off") return false;
    throw std::invalid_argument(key + " takes true or false, got '" + v + "'");
  };
  if (key == "--total-steps") c.total_timesteps = std::stoull(v);
  else if (key == "--num-envs") c.num_envs = std::stoull(v);
  else if (key == "--num-steps") c.num_steps = std::stoull(v);
  else if (key == "--lr") c.learning_rate = std::stod(v);
  else if (key == "--anneal-lr") c.anneal_lr = b();
  else if (key == "--minibatches") c.num_minibatches = std::stoull(v);
  else if (key == "--epochs") c.update_epochs = std::stoull(v);
  else if (key == "--gamma") c.gamma = std::stod(v);
  else if (key == "--gae-lambda") c.gae_lambda = std::stod(v);
  else if (key == "--clip") c.clip_coef = std::stod(v);
  else if (key == "--clip-vloss") c.clip_value_loss = b();
  else if (key == "--ent-coef") c.ent_coef = std::stod(v);
  else if (key == "--vf-coef") c.vf_coef = std::stod(v);
  else if (key == "--max-grad-norm") c.max_grad_norm = std::stod(v);
  else if (key == "--target-kl") c.target_kl = std::stod(v);
  else if (key == "--norm-obs") c.normalize_observations = b();
  else if (key == "--norm-reward") c.normalize_rewards = b();
  else if (key == "--init-log-std") c.init_log_std = std::stod(v);
  else if (key == "--hidden") {
    c.hidden_sizes.clear();
    std::size_t pos = 0;
    while (pos <= v.size()) {
      const std::size_t comma = v.find(',', pos);
      c.hidden_sizes.push_back(std::stoi(v.substr(pos, comma - pos)));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  } else if (key == "--activation") {
    if (v == "tanh") c.hidden_activation = rlkernels::activation::tanh;
    else if (v == "relu") c.hidden_activation = rlkernels::activation::relu;
    else throw std::invalid_argument("--activation takes tanh or relu, got '" + v + "'");
  } else {
    throw std::invalid_argument("unknown option " + key + " (try --help)");
  }
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--env ID] [--backend serial|openmp|cuda] [--seed S] [options]\n"
      "  --env ID            Gymnasium id (default CartPole-v1; random_policy --list shows them)\n"
      "  --backend B         serial, openmp (default) or cuda (in train_ppo_cuda)\n"
      "  --seed S            seed of envs, weights and sampling (default 1)\n"
      "  --out DIR           where the CSV and PNG go (default .)\n"
      "  --no-plot           write the CSV only\n"
      "  --eval-episodes K   deterministic evaluation episodes at the end (default 100; 0 skips)\n"
      "  --stop-at R         stop once the mean return of the last 100 episodes reaches R\n"
      "  --quiet             no progress line\n"
      "hyperparameters (defaults: the preset of the env, printed at the start):\n"
      "  --total-steps N --num-envs N --num-steps T --lr X --anneal-lr B --minibatches K --epochs E\n"
      "  --gamma X --gae-lambda X --clip X --clip-vloss B --ent-coef X --vf-coef X --max-grad-norm X\n"
      "  --target-kl X --norm-obs B --norm-reward B --init-log-std X --hidden 64,64 --activation tanh|relu\n",
      argv0);
}

options parse(int argc, char** argv) {
  options opt;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--env") opt.env = value();
    else if (arg == "--backend") opt.backend = value();
    else if (arg == "--seed") seed = std::stoull(value());
    else if (arg == "--out") opt.out_dir = value();
    else if (arg == "--plot-script") opt.plot_script = value();
    else if (arg == "--no-plot") opt.plot = false;
    else if (arg == "--quiet") opt.quiet = true;
    else if (arg == "--eval-episodes") opt.eval_episodes = std::stoull(value());
    else if (arg == "--stop-at") opt.stop_at = std::stod(value());
    else if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      std::exit(0);
    } else if (arg.rfind("--", 0) == 0) {
      opt.overrides.push_back(arg);
      opt.overrides.push_back(value());
    } else {
      throw std::invalid_argument("unexpected argument '" + arg + "' (try --help)");
    }
  }
  bool continuous = false;
  for (const rlkernels::env_info& e : rlkernels::registered_envs())
    if (e.id == opt.env) continuous = e.action_space == rlkernels::action_kind::continuous;
  opt.config = rlkernels::ppo_preset(opt.env, continuous);
  for (std::size_t k = 0; k < opt.overrides.size(); k += 2) apply(opt.config, opt.overrides[k], opt.overrides[k + 1]);
  opt.config.seed = seed;
  opt.config.validate();
  return opt;
}

/// The envs this example trains (MLP policies on low-dimensional observations); the grid envs of
/// the registry are left out to keep its compile time down.
template <class Env>
struct trains : std::false_type {};
template <class S>
struct trains<rlkernels::cartpole<S>> : std::true_type {};
template <class S>
struct trains<rlkernels::mountain_car<S>> : std::true_type {};
template <class S>
struct trains<rlkernels::mountain_car_continuous<S>> : std::true_type {};
template <class S>
struct trains<rlkernels::pendulum<S>> : std::true_type {};
template <class S>
struct trains<rlkernels::acrobot<S>> : std::true_type {};

bool stdout_is_terminal() {
#if defined(__unix__) || defined(__APPLE__)
  return isatty(fileno(stdout)) != 0;
#else
  return false;
#endif
}

std::string hidden_string(const std::vector<int>& h) {
  std::string s;
  for (std::size_t i = 0; i < h.size(); ++i) s += (i ? "," : "") + std::to_string(h[i]);
  return s;
}

template <class Env, class Backend>
int run(Backend backend, const options& opt, const rlkernels::registered_env<Env>& entry) {
  using namespace rlkernels;
  const ppo_config& c = opt.config;
  const std::string id(entry.info.id);
  std::printf("PPO on %s (%s backend), seed %llu: %zu envs x %zu steps, %zu minibatches x %zu epochs, lr %g%s, "
              "gamma %g, lambda %g, clip %g, ent %g, hidden %s, norm obs %s, norm reward %s, %llu steps\n",
              id.c_str(), backend_name(backend), (unsigned long long)c.seed, c.num_envs, c.num_steps, c.num_minibatches,
              c.update_epochs, c.learning_rate, c.anneal_lr ? " (annealed)" : "", c.gamma, c.gae_lambda, c.clip_coef,
              c.ent_coef, hidden_string(c.hidden_sizes).c_str(), c.normalize_observations ? "on" : "off",
              c.normalize_rewards ? "on" : "off", (unsigned long long)c.total_timesteps);
  std::fflush(stdout);

  ppo<Env, Backend> agent(backend, c, entry.params);
  const std::string stem = opt.out_dir + "/ppo_" + id + "_seed" + std::to_string(c.seed);
  const std::string csv_path = stem + ".csv", png_path = stem + ".png";
  std::ofstream csv(csv_path);
  if (!csv) throw std::runtime_error("cannot write " + csv_path);
  csv << "iteration,global_step,elapsed_s,episodes,mean_return_100,policy_loss,value_loss,entropy,approx_kl,"
         "clip_fraction,learning_rate,steps_per_s\n";

  const bool terminal = stdout_is_terminal();
  return_window window(100);
  const auto start = std::chrono::steady_clock::now();
  double last_print = -1.0, elapsed = 0.0, reached_at = -1.0;
  std::uint64_t reached_step = 0, updates = 0;
  while (!agent.done()) {
    const ppo_iteration_stats s = agent.iterate();
    updates += s.gradient_steps;
    window.add(s.episodes, s.episode_return_sum);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double sps = double(s.global_step) / elapsed;
    csv << s.iteration << ',' << s.global_step << ',' << elapsed << ',' << s.episodes << ',' << window.mean() << ','
        << s.policy_loss << ',' << s.value_loss << ',' << s.entropy << ',' << s.approx_kl << ',' << s.clip_fraction
        << ',' << s.learning_rate << ',' << sps << '\n';
    const bool reached = window.full() && window.mean() >= opt.stop_at;
    if (reached && reached_at < 0) {
      reached_at = elapsed;
      reached_step = s.global_step;
    }
    const bool last = agent.done() || reached;
    if (!opt.quiet && (terminal ? (elapsed - last_print >= 0.1 || last) : (elapsed - last_print >= 2.0 || last))) {
      last_print = elapsed;
      std::printf("%s%9llu steps | %8.0f steps/s | mean return (last %3llu episodes) %8.2f | %6.1f s%s",
                  terminal ? "\r" : "", (unsigned long long)s.global_step, sps, (unsigned long long)window.episodes(),
                  window.mean(), elapsed, terminal ? "" : "\n");
      std::fflush(stdout);
    }
    if (reached) break;
  }
  if (!opt.quiet && terminal) std::printf("\n");
  csv.close();
  std::printf("trained %llu env steps and %llu gradient steps in %.2f s (%.0f env steps/s, %.0f updates/s)\n",
              (unsigned long long)agent.global_step(), (unsigned long long)updates, elapsed,
              double(agent.global_step()) / elapsed, double(updates) / elapsed);
  if (reached_at >= 0) {
    std::printf("reached a mean return of %g over the last 100 episodes after %.2f s and %llu env steps\n", opt.stop_at,
                reached_at, (unsigned long long)reached_step);
  }
  std::printf("learning curve: %s\n", csv_path.c_str());
  if (opt.plot) {
    // The plot script exits with status 3 when its interpreter lacks matplotlib: try the next one
    // ($RLK_PYTHON if set, python3 on PATH, then the system's /usr/bin/python3).
    std::vector<std::string> pythons;
    if (const char* p = std::getenv("RLK_PYTHON")) pythons.push_back(p);
    pythons.push_back("python3");
    pythons.push_back("/usr/bin/python3");
    const std::string args = " \"" + opt.plot_script + "\" \"" + csv_path + "\" \"" + png_path + "\" \"PPO " + id +
                             " (seed " + std::to_string(c.seed) + ")\"";
    bool plotted = false;
    for (const std::string& py : pythons) {
      if (std::system((py + args + " 2>/dev/null").c_str()) == 0) {
        plotted = true;
        break;
      }
    }
    if (plotted) {
      std::printf("plot: %s\n", png_path.c_str());
    } else {
      std::printf("no plot written (needs python3 with matplotlib: sudo apt-get install python3-matplotlib); run:\n"
                  "  python3%s\n", args.c_str());
    }
  }
  if (opt.eval_episodes > 0) {
    const ppo_evaluation e = agent.evaluate(opt.eval_episodes, c.seed + 1000003, true);
    std::printf("evaluation (deterministic policy, %zu episodes): mean return %.2f +- %.2f (min %.2f, max %.2f)\n",
                opt.eval_episodes, e.mean, e.std, e.min, e.max);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options opt = parse(argc, argv);
    int rc = 0;
    rlkernels::visit_env(opt.env, [&](auto entry) {
      using Env = typename decltype(entry)::env_type;
      if constexpr (!trains<Env>::value) {
        throw std::invalid_argument("train_ppo trains the classic-control envs (CartPole, Acrobot, MountainCar, "
                                    "Pendulum); " + opt.env + " is not one of them");
      } else if (opt.backend == "serial") {
        rc = run(rlkernels::serial, opt, entry);
      } else if (opt.backend == "openmp") {
        rc = run(rlkernels::openmp, opt, entry);
      } else if (opt.backend == "cuda") {
#if RLK_HAS_CUDA
        rc = run(rlkernels::cuda_backend{}, opt, entry);
#else
        throw std::invalid_argument("this build has no CUDA backend; run train_ppo_cuda (built when nvcc is found)");
#endif
      } else {
        throw std::invalid_argument("unknown backend '" + opt.backend + "' (serial, openmp or cuda)");
      }
    });
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
