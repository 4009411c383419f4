// benchmarks/algorithms/rltools_sac_pendulum.cpp
// The external baseline of offpolicy_bench: RLtools' SAC on RLtools' Pendulum env for 10,000 env
// steps, written here against RLtools' public headers as the PyPI package ships them
// (pip install rltools; CMake finds them through RLK_RLTOOLS_INCLUDE_DIR). One run per process:
//
//   rltools_sac_pendulum [SEED]      (SEED: default 0)
//
// prints, besides a header line,
//   training_seconds: <steady_clock seconds from the first env step to the 10,000th (after
//                      allocation and network initialisation, as offpolicy_bench times ours)>
//   training_cpu_seconds: <the process CPU time of the same span (steadier on a busy machine)>
//   eval_return: <mean return of 100 deterministic episodes after training (not timed)>
// offpolicy_bench's rltools_sac_pendulum_10k row reads training_seconds.
//
// Hyperparameters: those of rlkernels' sac_preset("Pendulum-v1") where RLtools' configuration has
// the knob: 64-64 ReLU actor and twin critics, batch 100, Adam lr 1e-3 for the actor, the critics and
// alpha, Adam epsilon 1e-8 (PyTorch's), 100 uniform-random warm-up steps before the first update, one
// critic, target and actor step per env step, gamma 0.99, Polyak 0.005, alpha starting at 1 and
// tuned towards the target entropy -1, log-std clamped to [-20, 2], no overwritten replay data.
// Where they differ (RLtools fixes these):
//   - the critic loss is 0.5 * MSE per critic (SB3's; our preset uses the MSE: critic_loss_scale 1;
//     under Adam this changes little but epsilon's weight);
//   - RLtools' own weight initialisation, random engine (std::mt19937) and batch sampling;
//   - RLtools' Pendulum instead of ours (the same Gymnasium dynamics and reward; its actions in
//     [-1, 1] are scaled to the torque limit 2; 200-step episodes).
// Built with this project's speed flags (-O3 -march=native -fno-math-errno, never -ffast-math) and,
// when CMake finds libopenblas (option RLK_RLTOOLS_OPENBLAS, on by default), on RLtools' OpenBLAS
// backend (RL_TOOLS_BACKEND_ENABLE_OPENBLAS); run it with OPENBLAS_NUM_THREADS=1.

// RLtools resolves its operations by overloads: every operations header of the pieces the SAC loop
// uses comes before the loop's own (the device first, the Adam optimiser before the models).
#include <rl_tools/operations/cpu_mux.h>
#include <rl_tools/nn/optimizers/adam/instance/operations_generic.h>
#include <rl_tools/nn/operations_cpu_mux.h>
#include <rl_tools/nn/layers/sample_and_squash/operations_generic.h>
#include <rl_tools/nn_models/mlp/operations_generic.h>
#include <rl_tools/nn_models/sequential/operations_generic.h>
#include <rl_tools/nn/optimizers/adam/operations_generic.h>
#include <rl_tools/rl/environments/pendulum/operations_cpu.h>
#include <rl_tools/nn_models/operations_cpu.h>
#include <rl_tools/rl/algorithms/sac/loop/core/operations_generic.h>  // the layers' operations, then config.h
#include <rl_tools/rl/utils/evaluation/operations_generic.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>

namespace rlt = rl_tools;

namespace {

using device_t = rlt::devices::DEVICE_FACTORY<>;
using rng_t = device_t::SPEC::RANDOM::ENGINE<>;
using index_t = device_t::index_t;
using scalar_t = float;
using type_policy = rlt::numeric_types::Policy<scalar_t>;
using env_t = rlt::rl::environments::Pendulum<rlt::rl::environments::pendulum::Specification<scalar_t, index_t>>;

constexpr index_t total_steps = 10000;

// Adam as PyTorch sets it up (epsilon 1e-8), step size 1e-3 as in sac_preset("Pendulum-v1").
struct adam_parameters : rlt::nn::optimizers::adam::DEFAULT_PARAMETERS_PYTORCH<type_policy> {
  static constexpr scalar_t ALPHA = 1e-3;
};

struct loop_parameters : rlt::rl::algorithms::sac::loop::core::DefaultParameters<type_policy, index_t, env_t> {
  struct SAC_PARAMETERS : rlt::rl::algorithms::sac::DefaultParameters<type_policy, index_t, env_t::ACTION_DIM> {
    static constexpr index_t ACTOR_BATCH_SIZE = 100;
    static constexpr index_t CRITIC_BATCH_SIZE = 100;
    static constexpr scalar_t ALPHA = 1.0;  // the initial temperature (sac_preset: alpha = 1)
  };
  static constexpr index_t STEP_LIMIT = total_steps;
  static constexpr index_t REPLAY_BUFFER_CAP = total_steps;  // every transition kept, as in a 1e6 buffer
  static constexpr index_t N_WARMUP_STEPS = 100;
  static constexpr index_t N_WARMUP_STEPS_CRITIC = 100;
  static constexpr index_t N_WARMUP_STEPS_ACTOR = 100;
  static constexpr index_t ACTOR_HIDDEN_DIM = 64;
  static constexpr index_t ACTOR_NUM_LAYERS = 3;  // input -> 64 -> 64 -> output
  static constexpr index_t CRITIC_HIDDEN_DIM = 64;
  static constexpr index_t CRITIC_NUM_LAYERS = 3;
  using ACTOR_OPTIMIZER_PARAMETERS = adam_parameters;
  using CRITIC_OPTIMIZER_PARAMETERS = adam_parameters;
  using ALPHA_OPTIMIZER_PARAMETERS = adam_parameters;
};
static_assert(loop_parameters::N_WARMUP_STEPS >= loop_parameters::SAC_PARAMETERS::ACTOR_BATCH_SIZE,
              "the first batch needs that many transitions");

using loop_config = rlt::rl::algorithms::sac::loop::core::Config<type_policy, index_t, rng_t, env_t, loop_parameters>;
using loop_state = loop_config::State<loop_config>;

constexpr index_t eval_episodes = 100;
using eval_spec = rlt::rl::utils::evaluation::Specification<type_policy, index_t, env_t, eval_episodes,
                                                           env_t::EPISODE_STEP_LIMIT>;

const char* backend_name() {
#if defined(RL_TOOLS_BACKEND_ENABLE_OPENBLAS)
  return "OpenBLAS";
#else
  return "generic (no BLAS)";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  index_t seed = 0;
  if (argc > 2 || (argc == 2 && std::string(argv[1]).find_first_not_of("0123456789") != std::string::npos)) {
    std::fprintf(stderr, "usage: %s [SEED]   (SEED: a non-negative integer, default 0)\n", argv[0]);
    return 2;
  }
  if (argc == 2) seed = static_cast<index_t>(std::strtoull(argv[1], nullptr, 10));
  std::printf("rltools_sac_pendulum: RLtools %s (headers of the rltools PyPI package), backend %s, seed %zu, "
              "%zu env steps\n",
              RL_TOOLS_STRINGIFY(RL_TOOLS_COMMIT_HASH), backend_name(), static_cast<std::size_t>(seed),
              static_cast<std::size_t>(total_steps));

  device_t device;
  rlt::init(device);
  auto state = std::make_unique<loop_state>();  // large: keep it off the stack
  rlt::malloc(device, *state);
  rlt::init(device, *state, seed);

  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  while (!rlt::step(device, *state)) {
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf("training_seconds: %.6f\ntraining_cpu_seconds: %.6f\n", seconds, cpu_seconds);

  // 100 deterministic episodes (the tanh of the policy's mean), not timed, own random stream.
  env_t eval_env;
  rlt::rl::environments::DummyUI ui;
  rng_t eval_rng;
  rlt::malloc(device, eval_env);
  rlt::init(device, eval_env);
  rlt::malloc(device, eval_rng);
  rlt::init(device, eval_rng, seed + 1000003);
  rlt::rl::utils::evaluation::Result<eval_spec> result;
  rlt::evaluate(device, eval_env, ui, rlt::get_actor(*state), result, eval_rng,
                rlt::Mode<rlt::mode::Evaluation<>>{});
  std::printf("eval_return: %.3f\n", static_cast<double>(result.returns_mean));

  rlt::free(device, eval_rng);
  rlt::free(device, eval_env);
  rlt::free(device, *state);
  return 0;
}
