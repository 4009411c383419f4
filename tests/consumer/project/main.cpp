// Steps a few CartPoles on the serial and OpenMP backends through the installed headers.
#include <rlkernels/rlkernels.hpp>

#include <cstdio>
#include <vector>

int main() {
  rlkernels::vec_env<rlkernels::cartpole<>, rlkernels::openmp_backend> env(rlkernels::openmp, 64, 1);
  rlkernels::vec_env<rlkernels::cartpole<>, rlkernels::serial_backend> ref(rlkernels::serial, 64, 1);
  std::vector<std::int32_t> actions(64, 1);
  for (int t = 0; t < 50; ++t) {
    env.step(rlkernels::make_view(actions));
    ref.step(rlkernels::make_view(actions));
  }
  const bool same = env.observations().to_host() == ref.observations().to_host();
  const rlkernels::episode_statistics stats = env.get_episode_statistics();
  std::printf("rlkernels %d.%d.%d consumer: %llu episodes, mean return %.2f, backends agree: %s\n",
              RLKERNELS_VERSION_MAJOR, RLKERNELS_VERSION_MINOR, RLKERNELS_VERSION_PATCH,
              static_cast<unsigned long long>(stats.count), stats.mean_return, same ? "yes" : "no");
  return same && stats.count > 0 ? 0 : 1;
}
