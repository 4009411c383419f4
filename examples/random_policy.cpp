// Steps N copies of an environment, chosen by its Gymnasium id, with uniformly random actions on
// the chosen backend, and prints the throughput (env steps per second) and the statistics of the
// episodes that ended.
//
//   random_policy [--env ID] [--backend serial|openmp|cuda] [--envs N] [--steps T] [--seed S] [--list]
//
// The CUDA backend is in the build compiled by nvcc (random_policy_cuda), which runs only it (its
// default); the serial and OpenMP backends are in random_policy.
#include <rlkernels/rlkernels.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

struct options {
  std::string env = "CartPole-v1";
  std::string backend = RLK_HAS_CUDA ? "cuda" : "openmp";
  std::size_t envs = 4096;
  int steps = 1000;
  std::uint64_t seed = 1;
};

/// Writes a uniformly random action for every env at step t, on the backend itself (no host round
/// trip): an index in [0, num_actions) for discrete envs, each component in [low, high] otherwise.
template <class Env>
struct random_actions {
  using action_type = typename rlkernels::vec_env<Env, rlkernels::serial_backend>::action_type;
  std::uint64_t seed;
  std::uint64_t t;
  action_type* actions;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rlkernels::rng gen(seed, i, t);
    if constexpr (Env::action_space == rlkernels::action_kind::discrete) {
      actions[i] = static_cast<std::int32_t>(gen.uniform_int(Env::num_actions));
    } else {
      for (int k = 0; k < Env::action_size; ++k)
        actions[i * Env::action_size + k] = gen.template uniform<action_type>(Env::action_low, Env::action_high);
    }
  }
};

template <class Env, class Backend>
void run(Backend backend, const options& opt, const rlkernels::registered_env<Env>& entry) {
  using namespace rlkernels;
  vec_env<Env, Backend> env(backend, opt.envs, opt.seed, entry.params);
  buffer<typename vec_env<Env, Backend>::action_type, Backend> actions(backend, opt.envs * env.action_width);
  const std::uint64_t action_seed = opt.seed ^ 0x9e3779b97f4a7c15ull;  // a stream apart from the envs'

  synchronize(backend);
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < opt.steps; ++t) {
    for_each_index(backend, opt.envs, random_actions<Env>{action_seed, std::uint64_t(t), actions.data()});
    env.step_unchecked(actions.cview());  // the actions are valid by construction
  }
  synchronize(backend);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const episode_statistics stats = env.get_episode_statistics();
  const double steps = double(opt.envs) * opt.steps;
  std::printf("%s on %s: %zu envs x %d steps = %.3g env steps in %.3f s -> %.3g env steps/s\n",
              std::string(entry.info.id).c_str(), backend_name(backend), opt.envs, opt.steps, steps, seconds,
              steps / seconds);
  std::printf("episodes completed: %llu, mean return %.2f, mean length %.2f, min %.2f, max %.2f\n",
              static_cast<unsigned long long>(stats.count), stats.mean_return, stats.mean_length, stats.min_return,
              stats.max_return);
}

void list_envs() {
  std::printf("%-26s %-11s %4s  %-22s %6s\n", "id", "actions", "obs", "action space", "limit");
  for (const rlkernels::env_info& e : rlkernels::registered_envs()) {
    const bool discrete = e.action_space == rlkernels::action_kind::discrete;
    const std::string space = discrete ? "Discrete(" + std::to_string(e.num_actions) + ")"
                                       : "Box(" + std::to_string(e.action_low).substr(0, 5) + ", " +
                                             std::to_string(e.action_high).substr(0, 4) + ", (" +
                                             std::to_string(e.action_size) + ",))";
    std::printf("%-26s %-11s %4d  %-22s %6d\n", std::string(e.id).c_str(), discrete ? "discrete" : "continuous",
                e.observation_size, space.c_str(), e.max_episode_steps);
  }
}

options parse(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--env") opt.env = value();
    else if (arg == "--backend") opt.backend = value();
    else if (arg == "--envs") opt.envs = std::stoull(value());
    else if (arg == "--steps") opt.steps = std::stoi(value());
    else if (arg == "--seed") opt.seed = std::stoull(value());
    else if (arg == "--list") {
      list_envs();
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [--env ID] [--backend serial|openmp|cuda] [--envs N] [--steps T] [--seed S] [--list]\n"
                  "  --env ID   Gymnasium id of the environment (default CartPole-v1; --list shows them all)\n",
                  argv[0]);
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + arg + " (try --help)");
    }
  }
  if (opt.steps < 0) throw std::invalid_argument("--steps must be >= 0");
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options opt = parse(argc, argv);
    // random_policy_cuda (nvcc) runs the CUDA backend, random_policy the host ones: nvcc then
    // compiles every env for one backend, not three.
    if (opt.backend != "serial" && opt.backend != "openmp" && opt.backend != "cuda")
      throw std::invalid_argument("unknown backend '" + opt.backend + "' (serial, openmp or cuda)");
#if RLK_HAS_CUDA
    if (opt.backend != "cuda")
      throw std::invalid_argument("random_policy_cuda runs --backend cuda; the " + opt.backend +
                                  " backend is in random_policy (the host build beside it)");
    rlkernels::visit_env(opt.env, [&](auto entry) { run(rlkernels::cuda_backend{}, opt, entry); });
#else
    if (opt.backend == "cuda")
      throw std::invalid_argument("this build has no CUDA backend; run random_policy_cuda (built when nvcc is found)");
    rlkernels::visit_env(opt.env, [&](auto entry) {
      if (opt.backend == "serial")
        run(rlkernels::serial, opt, entry);
      else
        run(rlkernels::openmp, opt, entry);
    });
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
