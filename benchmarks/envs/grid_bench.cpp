// benchmarks/envs/grid_bench.cpp
// Env-steps per second of the MinAtar games (float observations, full action set, minatar's
// defaults: sticky actions 0.1, no time limit), Snake-v1 and Maze-v0: rlkernels' vec_env (step
// and step_unchecked) on the backend of this build variant, side by side in the same run with the
// conventional CPU baseline (see env_rows.hpp). Built once per backend by rlk_add_variants.
#include "../bench_common.hpp"
#include "env_rows.hpp"

#include <rlkernels/envs/grid/maze.hpp>
#include <rlkernels/envs/grid/snake.hpp>
#include <rlkernels/envs/minatar/asterix.hpp>
#include <rlkernels/envs/minatar/breakout.hpp>
#include <rlkernels/envs/minatar/freeway.hpp>
#include <rlkernels/envs/minatar/seaquest.hpp>
#include <rlkernels/envs/minatar/space_invaders.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace {

namespace rlk = rlkernels;

constexpr std::int64_t batch_sizes[] = {1, 64, 4096, 65536};
constexpr double min_time_s = 0.2;

/// Envs start their episodes together; some steps of random play spread out the resets (most
/// random MinAtar episodes last tens to hundreds of frames; Freeway's all last 2501). Capped at
/// about 4M env-steps per fixture so that the big batches build in seconds.
constexpr int warmup_steps(std::size_t n) {
  const std::size_t cap = (std::size_t(1) << 22) / n;
  return int(std::max<std::size_t>(16, std::min<std::size_t>(256, cap)));
}

template <class Env>
void add_rows(const char* id) {
  // Env-major, then N: each fixture is built once per (env, N).
  for (const std::int64_t n : rlk_bench::batch_sizes_or(batch_sizes))
    rlk_bench::env_rows::add_env_rows<Env>(id, n, rlk_bench::warmup_or(n, warmup_steps(std::size_t(n))),
                                           rlk_bench::min_time_or(min_time_s));
}

}  // namespace

int main(int argc, char** argv) {
  if (!rlk_bench::parse_options_or_report(argc, argv, "grid_bench")) return 2;
  add_rows<rlk::minatar_breakout<float>>("MinAtar-Breakout-v0");
  add_rows<rlk::minatar_asterix<float>>("MinAtar-Asterix-v0");
  add_rows<rlk::minatar_freeway<float>>("MinAtar-Freeway-v0");
  add_rows<rlk::minatar_seaquest<float>>("MinAtar-Seaquest-v0");
  add_rows<rlk::minatar_space_invaders<float>>("MinAtar-SpaceInvaders-v0");
  add_rows<rlk::snake<float>>("Snake-v1");
  add_rows<rlk::maze<float>>("Maze-v0");
  return rlk_bench::run_registered_benchmarks(argc, argv, "grid_bench");
}
