// benchmarks/envs/grid_bench.cpp
// Env-steps per second of the MinAtar games (float observations, full action set, minatar's
// defaults: sticky actions 0.1, no time limit), Snake-v1 and Maze-v0: rlkernels' vec_env (step and step_unchecked) on
// the backend of this build variant, side by side in the same run with the conventional CPU
// baseline ("virtual_gym_style": one heap object per env behind an abstract Env interface, stepped
// one at a time through a virtual call, with the same game code and the same episode bookkeeping).
// Built once per backend by rlk_add_variants.
#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/minatar/breakout.hpp>
#include <rlkernels/envs/vec_env.hpp>
#include <rlkernels/envs/minatar/asterix.hpp>
#include <rlkernels/envs/minatar/freeway.hpp>
#include <rlkernels/envs/minatar/seaquest.hpp>
#include <rlkernels/envs/minatar/space_invaders.hpp>
#include <rlkernels/envs/grid/maze.hpp>
#include <rlkernels/envs/grid/snake.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

// N = 65536 is where a GPU is saturated; the largest fixture (Seaquest: 1000 floats per
// observation) holds about 0.5 GB of observations per kind.
constexpr std::int64_t batch_sizes[] = {1, 64, 4096, 65536};
constexpr std::uint64_t env_seed = 2026;
constexpr std::size_t action_buffer_count = 4;  // cycled, so steps do not repeat one action pattern
constexpr double min_time_s = 0.2;

/// Envs start their episodes together; some steps of random play spread out the resets (most
/// random MinAtar episodes last tens to hundreds of frames; Freeway's all last 2500). Capped at
/// about 4M env-steps per fixture so that the big batches build in seconds.
constexpr int warmup_steps(std::size_t n) {
  const std::size_t cap = (std::size_t(1) << 22) / n;
  return int(std::max<std::size_t>(16, std::min<std::size_t>(256, cap)));
}

/// [action_buffer_count][N] uniformly random actions; a pure function of N, so every row sees
/// the same.
template <class Env>
std::vector<std::vector<std::int32_t>> make_host_actions(std::size_t n) {
  std::mt19937 gen(static_cast<std::uint32_t>(777 + n));
  std::vector<std::vector<std::int32_t>> out(action_buffer_count, std::vector<std::int32_t>(n));
  for (auto& actions : out)
    for (auto& a : actions) a = static_cast<std::int32_t>(gen() % std::uint32_t(Env::num_actions));
  return out;
}

// ---- rlkernels vec_env ------------------------------------------------------------------------

template <class Env>
struct vec_env_fixture {
  std::size_t num_envs;
  rlk::vec_env<Env, bench_backend> envs;
  std::vector<rlk::buffer<std::int32_t, bench_backend>> actions;
  vec_env_fixture(std::size_t n, int warmup) : num_envs(n), envs(bench_backend{}, n, env_seed) {
    for (const auto& host : make_host_actions<Env>(n)) actions.emplace_back(bench_backend{}, host);
    for (int t = 0; t < warmup; ++t) envs.step_unchecked(action(std::size_t(t)));
    rlk::synchronize(bench_backend{});
  }
  rlk::view<const std::int32_t> action(std::size_t k) const { return actions[k % actions.size()].cview(); }
};

template <class Env, bool Checked>
void BM_vec_env(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<vec_env_fixture<Env>>(n, warmup_steps(n));
  std::size_t k = 0;
  for (auto _ : state) {
    if constexpr (Checked) {
      f.envs.step(f.action(k++));
    } else {
      f.envs.step_unchecked(f.action(k++));
    }
    rlk::synchronize(f.envs.backend());  // CUDA launches are asynchronous: time finished steps
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// ---- "virtual_gym_style": the conventional CPU baseline ----------------------------------------

namespace gym_style {

template <class Env>
struct StepOut {
  std::array<float, Env::observation_size> obs;
  float reward;
  bool terminated;
  bool truncated;
};

/// The interface a C++ port of a Gymnasium loop has: reset() and step(action) per env object.
template <class Env>
struct AbstractEnv {
  virtual ~AbstractEnv() = default;
  virtual std::array<float, Env::observation_size> reset() = 0;
  virtual StepOut<Env> step(std::int32_t action) = 0;
};

/// One env as an object: its own state, random generator, step counter and parameters.
template <class Env>
class Wrapped final : public AbstractEnv<Env> {
public:
  explicit Wrapped(std::uint64_t stream) : gen_(env_seed, stream) { Wrapped::reset(); }
  std::array<float, Env::observation_size> reset() override {
    Env::reset(params_, state_, gen_);
    elapsed_ = 0;
    return observe();
  }
  StepOut<Env> step(std::int32_t action) override {
    const rlk::step_result<float> r = Env::step(params_, state_, action, gen_);
    ++elapsed_;
    const bool truncated = params_.max_episode_steps > 0 && elapsed_ >= params_.max_episode_steps;
    return {observe(), r.reward, r.terminated, truncated};
  }

private:
  std::array<float, Env::observation_size> observe() const {
    std::array<float, Env::observation_size> obs;
    Env::observe(params_, state_, obs.data());
    return obs;
  }
  typename Env::Params params_{};
  typename Env::State state_{};  // zeroed: MinAtar keeps last_action (0 at first) across resets
  rlk::rng gen_;
  int elapsed_ = 0;
};

}  // namespace gym_style

template <class Env>
struct virtual_fixture {
  static constexpr int obs_size = Env::observation_size;
  std::size_t num_envs;
  std::vector<std::unique_ptr<gym_style::AbstractEnv<Env>>> envs;
  std::vector<std::vector<std::int32_t>> actions;
  std::vector<float> observations, final_observations, rewards;
  std::vector<std::uint8_t> terminated, truncated;
  // The same bookkeeping as vec_env (what Gymnasium's RecordEpisodeStatistics adds to a loop):
  // the return of each episode in progress, and the count, sum and extremes of completed ones.
  std::vector<double> episode_returns;
  std::uint64_t episodes = 0;
  double return_sum = 0, length_sum = 0, min_return = 1e300, max_return = -1e300;
  std::vector<std::int32_t> lengths;

  virtual_fixture(std::size_t n, int warmup)
      : num_envs(n), actions(make_host_actions<Env>(n)), observations(obs_size * n), final_observations(obs_size * n),
        rewards(n), terminated(n), truncated(n), episode_returns(n), lengths(n) {
    envs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) envs.push_back(std::make_unique<gym_style::Wrapped<Env>>(i));
    for (int t = 0; t < warmup; ++t) step(actions[std::size_t(t) % actions.size()]);
  }

  void step(const std::vector<std::int32_t>& a) {
    for (std::size_t i = 0; i < num_envs; ++i) {
      gym_style::StepOut<Env> out = envs[i]->step(a[i]);
      for (int k = 0; k < obs_size; ++k) final_observations[obs_size * i + k] = out.obs[k];
      rewards[i] = out.reward;
      terminated[i] = out.terminated;
      truncated[i] = out.truncated;
      episode_returns[i] += out.reward;
      ++lengths[i];
      if (out.terminated || out.truncated) {
        ++episodes;
        return_sum += episode_returns[i];
        length_sum += lengths[i];
        min_return = std::min(min_return, episode_returns[i]);
        max_return = std::max(max_return, episode_returns[i]);
        episode_returns[i] = 0;
        lengths[i] = 0;
        out.obs = envs[i]->reset();
      }
      for (int k = 0; k < obs_size; ++k) observations[obs_size * i + k] = out.obs[k];
    }
  }
};

template <class Env>
void BM_virtual_gym_style(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<virtual_fixture<Env>>(n, warmup_steps(n));
  std::size_t k = 0;
  for (auto _ : state) {
    f.step(f.actions[k++ % f.actions.size()]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// ---- set-up ---------------------------------------------------------------------------------------

template <class Env>
void add_env_rows(const char* id) {
  const std::string backend = rlk::backend_name(bench_backend{});
  // Env-major, then N: each fixture is built once per (env, N).
  for (const std::int64_t n : batch_sizes) {
    rlk_bench::add_row(std::string("BM_vec_env_step/") + id + "/" + backend, BM_vec_env<Env, true>, n, min_time_s);
    rlk_bench::add_row(std::string("BM_vec_env_step_unchecked/") + id + "/" + backend, BM_vec_env<Env, false>, n,
                       min_time_s);
    rlk_bench::add_row(std::string("BM_virtual_gym_style/") + id + "/serial", BM_virtual_gym_style<Env>, n, min_time_s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  add_env_rows<rlk::minatar_breakout<float>>("MinAtar-Breakout-v0");
  add_env_rows<rlk::minatar_asterix<float>>("MinAtar-Asterix-v0");
  add_env_rows<rlk::minatar_freeway<float>>("MinAtar-Freeway-v0");
  add_env_rows<rlk::minatar_seaquest<float>>("MinAtar-Seaquest-v0");
  add_env_rows<rlk::minatar_space_invaders<float>>("MinAtar-SpaceInvaders-v0");
  add_env_rows<rlk::snake<float>>("Snake-v1");
  add_env_rows<rlk::maze<float>>("Maze-v0");
  return rlk_bench::run_registered_benchmarks(argc, argv, "grid_bench");
}
