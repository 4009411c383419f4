// benchmarks/algorithms/ppo_bench.cpp
// Wall-clock time for PPO to solve CartPole-v1: seconds until the mean return of the last 100
// training episodes reaches 475 (Gymnasium's reward threshold), one row per seed (5 seeds as
// repetitions, so Google Benchmark prints the median), with env steps/s and gradient updates/s.
//
// Rows, side by side in one run:
// - ppo_cartpole_preset:  ppo_preset("CartPole-v1"), the tuned configuration train_ppo uses
// - ppo_cartpole_cleanrl: CleanRL ppo.py's defaults (4 envs x 128 steps, lr 2.5e-4, ent 0.01, 500k
//                         steps): the same implementation with the reference hyperparameters
// The "time" column is the time to 475 (manual time); a seed that never reaches it within its
// total_timesteps reports its whole training time and reached = 0.
#include "../bench_common.hpp"

#include <rlkernels/algorithms/ppo.hpp>
#include <rlkernels/algorithms/ppo_presets.hpp>
#include <rlkernels/envs/cartpole.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

using backend_t = rlk_bench::bench_backend;
using env_t = rlkernels::cartpole<float>;

void time_to_475(benchmark::State& state, const rlkernels::ppo_config& base) {
  static std::uint64_t next_seed = 1;  // repetition r uses seed r + 1 (per row; reset below)
  for (auto _ : state) {
    rlkernels::ppo_config c = base;
    c.seed = next_seed++;
    rlkernels::ppo<env_t, backend_t> agent(backend_t{}, c);
    rlkernels::return_window window(100);
    std::uint64_t updates = 0;
    bool reached = false;
    const auto start = std::chrono::steady_clock::now();
    while (!agent.done() && !reached) {
      const rlkernels::ppo_iteration_stats s = agent.iterate();
      updates += s.gradient_steps;
      window.add(s.episodes, s.episode_return_sum);
      reached = window.full() && window.mean() >= 475.0;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    state.counters["reached"] = reached ? 1 : 0;
    state.counters["env_steps"] = double(agent.global_step());
    state.counters["env_steps_per_s"] = double(agent.global_step()) / seconds;
    state.counters["updates_per_s"] = double(updates) / seconds;
    state.counters["seed"] = double(c.seed);
  }
  if (next_seed > 5) next_seed = 1;
}

void preset(benchmark::State& state) { time_to_475(state, rlkernels::ppo_preset("CartPole-v1")); }

void cleanrl(benchmark::State& state) {
  rlkernels::ppo_config c;  // CleanRL ppo.py defaults
  time_to_475(state, c);
}

void register_rows() {
  for (auto [name, fn] : {std::pair{"ppo_cartpole_preset", &preset}, std::pair{"ppo_cartpole_cleanrl", &cleanrl}}) {
    benchmark::RegisterBenchmark(name, fn)
        ->Iterations(1)
        ->Repetitions(5)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); })
        ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return rlk_bench::run_registered_benchmarks(argc, argv, "ppo_bench");
}
