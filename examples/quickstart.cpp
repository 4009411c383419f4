// The README's C++ example: 4096 CartPole-v1 envs stepped in parallel, then PPO trained on them.
#include <rlkernels/rlkernels.hpp>

#include <cstdio>

int main() {
  using namespace rlkernels;
  // 4096 envs on the CPU's cores (serial for one core; cuda_backend{stream} in a .cu file on a GPU)
  vec_env<cartpole<float>, openmp_backend> env(openmp, 4096, /*seed=*/42);
  buffer<std::int32_t, openmp_backend> actions(openmp, env.num_envs());  // [N], in backend memory
  for (int t = 0; t < 1000; ++t) {
    for (std::size_t i = 0; i < env.num_envs(); ++i) actions.data()[i] = (t + int(i)) % 2;  // your policy
    env.step(actions.cview());  // observations(), rewards(), terminated(), truncated(), final_observations()
  }
  episode_statistics done = env.get_episode_statistics();
  std::printf("%llu episodes, mean return %.1f\n", (unsigned long long)done.count, done.mean_return);

  // PPO with the tuned CartPole-v1 preset: rollouts, GAE and minibatch updates, all in C++
  ppo<cartpole<float>, openmp_backend> agent(openmp, ppo_preset("CartPole-v1"));
  while (!agent.done()) agent.iterate();
  std::printf("PPO: mean return %.1f over 100 evaluation episodes\n", agent.evaluate(100, /*seed=*/7).mean);
}
