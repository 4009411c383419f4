// benchmarks/algorithms/offpolicy_bench.cpp
// Wall-clock time of off-policy training runs, one row per seed (5 seeds as repetitions, so
// Google Benchmark prints the median), beside RLtools' SAC in the same run:
//
// - sac_pendulum_10k:     sac_preset("Pendulum-v1") for 10,000 env steps (RLtools' headline task:
//                         SAC on Pendulum-v1, 64x64 networks, batch 100); counters: the final
//                         deterministic 100-episode evaluation return (not timed), the process CPU
//                         seconds of the timed part (steadier than wall time on a busy machine).
// - td3_pendulum_10k:     td3_preset("Pendulum-v1") for 10,000 env steps.
// - rltools_sac_pendulum_10k: one run of the program in $RLK_RLTOOLS_SAC (a user-supplied command
//                         that trains RLtools' SAC on Pendulum-v1 for 10,000 steps) or, when that is
//                         unset, of rltools_sac_pendulum, the driver this build makes from the rltools
//                         PyPI package's headers (algorithms/rltools_sac_pendulum.cpp; CMake builds it
//                         when pip install rltools has put them in place). The time is the program's
//                         "training_seconds:" line (its training loop, as ours is timed), or the whole
//                         process when it prints none; "training_cpu_seconds:" and "eval_return:"
//                         lines become counters. Skipped, saying so, when there is no program.
//
// The time column is the training time (manual time). Run it on an idle machine: both trainers
// are single-threaded at these sizes (one chunk of rows per network call).
#include "../bench_common.hpp"

#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/envs/pendulum.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
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
    const std::clock_t cpu_start = std::clock();
    const auto start = std::chrono::steady_clock::now();
    while (!agent.done()) updates += agent.iterate().gradient_steps;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    state.counters["cpu_seconds"] = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
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

// The RLtools row's command: $RLK_RLTOOLS_SAC (user-supplied), else the driver this build made.
std::string rltools_command() {
  if (const char* command = std::getenv("RLK_RLTOOLS_SAC"); command && *command) return command;
#ifdef RLK_RLTOOLS_SAC_DRIVER
  if (std::ifstream(RLK_RLTOOLS_SAC_DRIVER).good()) return std::string("'") + RLK_RLTOOLS_SAC_DRIVER + "'";
#endif
  return {};
}

// The number after `key` at the start of a line of `output`, or NaN.
double output_value(const std::string& output, const std::string& key) {
  for (std::size_t at = output.find(key); at != std::string::npos; at = output.find(key, at + 1)) {
    if (at == 0 || output[at - 1] == '\n') return std::strtod(output.c_str() + at + key.size(), nullptr);
  }
  return std::nan("");
}

void rltools_row(benchmark::State& state) {
  const std::string command = rltools_command();
  if (command.empty()) {
    state.SkipWithError("no RLtools program: pip install rltools and re-run CMake (it then builds "
                        "rltools_sac_pendulum), or set RLK_RLTOOLS_SAC to a command that trains RLtools' SAC "
                        "on Pendulum-v1 for 10k steps");
    for (auto _ : state) {
    }
    return;
  }
  setenv("OPENBLAS_NUM_THREADS", "1", 0);  // one BLAS thread, as ours, unless the caller chose otherwise
  const std::string quiet = command + " 2> /dev/null";
  for (auto _ : state) {
    std::string output;
    const auto start = std::chrono::steady_clock::now();
    FILE* pipe = popen(quiet.c_str(), "r");
    if (pipe) {
      char buffer[4096];
      for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    }
    const int rc = pipe ? pclose(pipe) : -1;
    const double process_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc != 0) {
      state.SkipWithError(("the RLtools command exited with status " + std::to_string(rc) + ": " + command).c_str());
      break;
    }
    const double training_seconds = output_value(output, "training_seconds:");
    state.SetIterationTime(std::isnan(training_seconds) ? process_seconds : training_seconds);
    state.counters["program_timed"] = std::isnan(training_seconds) ? 0 : 1;
    state.counters["process_seconds"] = process_seconds;
    if (const double v = output_value(output, "training_cpu_seconds:"); !std::isnan(v)) state.counters["cpu_seconds"] = v;
    if (const double v = output_value(output, "eval_return:"); !std::isnan(v)) state.counters["eval_return"] = v;
    if (const auto end = output.find('\n'); end != std::string::npos) state.SetLabel(output.substr(0, end));
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
