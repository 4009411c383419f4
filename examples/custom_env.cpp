// reach_target: a user-written 1-D continuous-control environment and a driver that runs it with
// rlkernels::vec_env on the serial and OpenMP backends (and on CUDA when compiled by nvcc).
// The example of docs/writing-an-env.md; built and run by the test suite.
//   g++ -std=c++17 -O2 -fopenmp -I include -I /usr/include/eigen3 -I /usr/local/cuda/include/cccl examples/custom_env.cpp
//   nvcc -std=c++17 -O2 -arch=sm_90 -Xcompiler=-fopenmp -x cu -I include -I /usr/include/eigen3 examples/custom_env.cpp
#include <rlkernels/rlkernels.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

struct reach_target {
  using scalar_type = float;
  static constexpr int observation_size = 2;  // position, target
  static constexpr rlkernels::action_kind action_space = rlkernels::action_kind::continuous;
  static constexpr int action_size = 1;
  static constexpr float action_low = -1.0f;
  static constexpr float action_high = 1.0f;

  struct State {
    float position;
    float target;
  };

  struct Params {
    float max_speed = 0.05f;  // distance moved per step at action 1
    float noise = 0.01f;      // uniform noise added to each move
    float tolerance = 0.05f;  // reached when |target - position| < tolerance
    int max_episode_steps = 200;
  };

  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Rng& gen) {
    s.position = gen.template uniform<float>(-1.0f, 1.0f);
    s.target = gen.template uniform<float>(-1.0f, 1.0f);
  }

  template <class Rng>
  RLK_HOST_DEVICE static rlkernels::step_result<float> step(const Params& p, State& s, const float* action, Rng& gen) {
    // Clip with plain comparisons: std::min/std::clamp are not device functions.
    float a = action[0];
    a = a < action_low ? action_low : (a > action_high ? action_high : a);
    float x = s.position + p.max_speed * a + p.noise * gen.template uniform<float>(-1.0f, 1.0f);
    s.position = x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
    const bool reached = std::fabs(s.target - s.position) < p.tolerance;
    return {reached ? 1.0f : -0.01f, reached};
  }

  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) {
    obs[0] = s.position;
    obs[1] = s.target;
  }
};

static_assert(rlkernels::check_env<reach_target>());

template <class Backend>
void run(Backend backend, std::size_t num_envs, int steps) {
  rlkernels::vec_env<reach_target, Backend> envs(backend, num_envs, /*seed=*/42);
  rlkernels::buffer<float, Backend> actions(backend, num_envs * envs.action_width);
  std::vector<float> host_actions(num_envs);

  for (int t = 0; t < steps; ++t) {
    const std::vector<float> obs = envs.observations().to_host();  // [N, 2]
    for (std::size_t i = 0; i < num_envs; ++i)
      host_actions[i] = 10.0f * (obs[2 * i + 1] - obs[2 * i]);  // clipped to [-1, 1] by the env
    actions.assign(host_actions);
    envs.step(actions.cview());
  }

  const rlkernels::episode_statistics stats = envs.get_episode_statistics();
  std::printf("%-6s: %llu episodes, mean return %.4f, mean length %.2f\n", rlkernels::backend_name(backend),
              static_cast<unsigned long long>(stats.count), stats.mean_return, stats.mean_length);
}

int main() {
  run(rlkernels::serial, 1024, 300);
  run(rlkernels::openmp, 1024, 300);  // same numbers as serial: randomness is keyed per env
#if RLK_HAS_CUDA
  run(rlkernels::cuda_backend{}, 1024, 300);
#endif
}
