// Steps N CartPole-v1 environments with uniformly random actions on the chosen backend and prints
// the throughput (env steps per second) and the statistics of the episodes that ended.
//
//   cartpole_random [--backend serial|openmp|cuda] [--envs N] [--steps T] [--seed S]
//
// The CUDA backend is available in the build compiled by nvcc (cartpole_random_cuda).
#include <rlkernels/rlkernels.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

struct options {
  std::string backend = "openmp";
  std::size_t envs = 4096;
  int steps = 1000;
  std::uint64_t seed = 1;
};

/// Writes a random action per env for step t, on the backend itself (no host round trip).
struct random_actions {
  std::uint64_t seed;
  std::uint64_t t;
  std::int32_t* actions;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rlkernels::rng gen(seed, i, t);
    actions[i] = static_cast<std::int32_t>(gen.uniform_int(rlkernels::cartpole<>::num_actions));
  }
};

template <class Backend>
void run(Backend backend, const options& opt) {
  using namespace rlkernels;
  vec_env<cartpole<float>, Backend> env(backend, opt.envs, opt.seed);
  buffer<std::int32_t, Backend> actions(backend, opt.envs);
  const std::uint64_t action_seed = opt.seed ^ 0x9e3779b97f4a7c15ull;  // a stream apart from the envs'

  synchronize(backend);
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < opt.steps; ++t) {
    for_each_index(backend, opt.envs, random_actions{action_seed, std::uint64_t(t), actions.data()});
    env.step_unchecked(actions.cview());  // actions come from [0, num_actions) by construction
  }
  synchronize(backend);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const episode_statistics stats = env.get_episode_statistics();
  const double steps = double(opt.envs) * opt.steps;
  std::printf("backend %s: %zu envs x %d steps = %.3g env steps in %.3f s -> %.3g env steps/s\n",
              backend_name(backend), opt.envs, opt.steps, steps, seconds, steps / seconds);
  std::printf("episodes completed: %llu, mean return %.2f, mean length %.2f, min %.0f, max %.0f\n",
              static_cast<unsigned long long>(stats.count), stats.mean_return, stats.mean_length, stats.min_return,
              stats.max_return);
}

options parse(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--backend") opt.backend = value();
    else if (arg == "--envs") opt.envs = std::stoull(value());
    else if (arg == "--steps") opt.steps = std::stoi(value());
    else if (arg == "--seed") opt.seed = std::stoull(value());
    else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [--backend serial|openmp|cuda] [--envs N] [--steps T] [--seed S]\n", argv[0]);
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
    if (opt.backend == "serial") {
      run(rlkernels::serial, opt);
    } else if (opt.backend == "openmp") {
      run(rlkernels::openmp, opt);
    } else if (opt.backend == "cuda") {
#if RLK_HAS_CUDA
      run(rlkernels::cuda_backend{}, opt);
#else
      throw std::invalid_argument("this build has no CUDA backend; run cartpole_random_cuda (built when nvcc is found)");
#endif
    } else {
      throw std::invalid_argument("unknown backend '" + opt.backend + "' (serial, openmp or cuda)");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
