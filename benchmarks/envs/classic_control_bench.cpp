// benchmarks/envs/classic_control_bench.cpp
// Env-steps per second of Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1 and
// the quadrotor L2F-Crazyflie-v0 (float): rlkernels' vec_env (step and step_unchecked) on the backend of this build variant,
// side by side in the same run with the conventional CPU baseline ("virtual_gym_style": one heap
// object per env behind an abstract Env interface, stepped one at a time through a virtual call,
// with the same env arithmetic and the same episode bookkeeping). CartPole-v1 has its own binary (cartpole_bench), which also has a
// hand-written limit loop. Built once per backend by rlk_add_variants.
#include <rlkernels/rlkernels.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"
#include "env_rows.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;

constexpr std::int64_t batch_sizes[] = {1, 64, 4096, std::int64_t(1) << 20};
// Envs start their episodes together; a few hundred steps spread out the resets (MountainCar's
// episodes all last 200 steps under random actions, so it stays in step: that is the env).
constexpr int warmup_steps = 256;
constexpr double min_time_s = 0.2;

template <class Env>
void add_rows(const char* id) {
  // Env-major, then N: each fixture is built once per (env, N).
  for (const std::int64_t n : rlk_bench::batch_sizes_or(batch_sizes))
    rlk_bench::env_rows::add_env_rows<Env>(id, n, rlk_bench::warmup_or(n, warmup_steps), rlk_bench::min_time_or(min_time_s));
}

}  // namespace

int main(int argc, char** argv) {
  if (!rlk_bench::parse_options_or_report(argc, argv, "classic_control_bench")) return 2;
  add_rows<rlk::pendulum<float>>("Pendulum-v1");
  add_rows<rlk::mountain_car<float>>("MountainCar-v0");
  add_rows<rlk::mountain_car_continuous<float>>("MountainCarContinuous-v0");
  add_rows<rlk::acrobot<float>>("Acrobot-v1");
  add_rows<rlk::quadrotor<float>>("L2F-Crazyflie-v0");
  return rlk_bench::run_registered_benchmarks(argc, argv, "classic_control_bench");
}
