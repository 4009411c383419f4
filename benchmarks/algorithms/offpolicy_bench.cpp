// benchmarks/algorithms/offpolicy_bench.cpp
// Wall-clock time of off-policy training runs, one row per seed (5 seeds as repetitions, so
// Google Benchmark prints the median), beside RLtools' SAC in the same run:
//
// - sac_pendulum_10k:     sac_preset("Pendulum-v1") for 10,000 env steps (RLtools' headline task:
//                         SAC on Pendulum-v1, 64x64 networks, batch 100); counters: the final
//                         deterministic 100-episode evaluation return (not timed).
// - td3_pendulum_10k:     td3_preset("Pendulum-v1") for 10,000 env steps.
// - rltools_sac_pendulum_10k: the command in $RLK_RLTOOLS_SAC (a shell command that trains RLtools'
//                         SAC on Pendulum-v1 for 10,000 steps once; scripts/rltools_sac_baseline.sh
//                         builds it from RLtools' public repository and prints the command), timed
//                         as a whole process. Skipped, saying so, when the variable is unset.
//
// The time column is the training time (manual time). Run it on an idle machine: both trainers
// are single-threaded at these sizes (one chunk of rows per network call).
#include "../bench_common.hpp"

#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/envs/pendulum.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using backend_t = rlk_bench::bench_backend;
using env_t = rlkernels::pendulum<float>;

template <class Agent, class Config>
void train_10k(benchmark::State& state, Config base) {
  static std::uint64_t next_seed = 1;
  for (auto _ : state) {
    Config c = base;
    c.total_timesteps = 10000;
    c.seed = next_seed++;
    Agent agent(backend_t{}, c);
    std::uint64_t updates = 0;
    const auto start = std::chrono::steady_clock::now();
    while (!agent.done()) updates += agent.iterate().gradient_steps;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    state.counters["eval_return"] = agent.evaluate(100, 1000003 + c.seed).mean;
    state.counters["updates_per_s"] = double(updates) / seconds;
    state.counters["seed"] = double(c.seed);
  }
  if (next_seed > 5) next_seed = 1;
}

void sac_row(benchmark::State& state) {
  train_10k<rlkernels::sac<env_t, backend_t>>(state, rlkernels::sac_preset("Pendulum-v1"));
}
void td3_row(benchmark::State& state) {
  train_10k<rlkernels::td3<env_t, backend_t>>(state, rlkernels::td3_preset("Pendulum-v1"));
}

void rltools_row(benchmark::State& state) {
  const char* command = std::getenv("RLK_RLTOOLS_SAC");
  if (!command || !*command) {
    state.SkipWithError("set RLK_RLTOOLS_SAC to a command that trains RLtools' SAC on Pendulum-v1 for 10k steps "
                        "(scripts/rltools_sac_baseline.sh builds one)");
    for (auto _ : state) {
    }
    return;
  }
  const std::string quiet = std::string(command) + " > /dev/null 2>&1";
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const int rc = std::system(quiet.c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc != 0) {
      state.SkipWithError(("RLK_RLTOOLS_SAC exited with status " + std::to_string(rc)).c_str());
      break;
    }
    state.SetIterationTime(seconds);
  }
}

void register_rows() {
  for (auto [name, fn] : {std::pair{"sac_pendulum_10k", &sac_row}, std::pair{"td3_pendulum_10k", &td3_row},
                          std::pair{"rltools_sac_pendulum_10k", &rltools_row}}) {
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
  return rlk_bench::run_registered_benchmarks(argc, argv, "offpolicy_bench");
}
