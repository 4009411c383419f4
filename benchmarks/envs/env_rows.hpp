// benchmarks/envs/env_rows.hpp
// The rows every env benchmark registers for an env: rlkernels' vec_env (step and
// step_unchecked) on the backend of the build variant, and the conventional CPU baseline
// ("virtual_gym_style": one heap object per env behind an abstract Env interface, stepped one at
// a time through a virtual call, with the same env code and the same episode bookkeeping as
// vec_env), for discrete and continuous envs. Used by classic_control_bench and grid_bench.
#pragma once

#include "../bench_common.hpp"

#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/env.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rlk_bench {
namespace env_rows {

namespace rlk = rlkernels;

inline constexpr std::uint64_t env_seed = 2026;
inline constexpr std::size_t action_buffer_count = 4;  // cycled, so steps do not repeat one action pattern

template <class Env>
using action_t = typename rlk::vec_env<Env, bench_backend>::action_type;
template <class Env>
constexpr int action_width = rlk::vec_env<Env, bench_backend>::action_width;

/// [action_buffer_count][N * width] uniformly random actions (in the bounds for continuous envs);
/// a pure function of N, so every row sees the same.
template <class Env>
std::vector<std::vector<action_t<Env>>> make_host_actions(std::size_t n) {
  std::mt19937 gen(static_cast<std::uint32_t>(777 + n));
  std::vector<std::vector<action_t<Env>>> out(action_buffer_count,
                                              std::vector<action_t<Env>>(n * std::size_t(action_width<Env>)));
  for (auto& actions : out) {
    for (auto& a : actions) {
      if constexpr (Env::action_space == rlk::action_kind::discrete) {
        a = static_cast<std::int32_t>(gen() % std::uint32_t(Env::num_actions));
      } else {
        a = std::uniform_real_distribution<float>(Env::action_low, Env::action_high)(gen);
      }
    }
  }
  return out;
}

// ---- rlkernels vec_env ------------------------------------------------------------------------

template <class Env>
struct vec_env_fixture {
  std::size_t num_envs;
  rlk::vec_env<Env, bench_backend> envs;
  std::vector<rlk::buffer<action_t<Env>, bench_backend>> actions;
  vec_env_fixture(std::size_t n, int warmup) : num_envs(n), envs(bench_backend{}, n, env_seed) {
    for (const auto& host : make_host_actions<Env>(n)) actions.emplace_back(bench_backend{}, host);
    for (int t = 0; t < warmup; ++t) envs.step_unchecked(action(std::size_t(t)));
    rlk::synchronize(bench_backend{});
  }
  rlk::view<const action_t<Env>> action(std::size_t k) const { return actions[k % actions.size()].cview(); }
};

template <class Env, bool Checked>
void BM_vec_env(benchmark::State& state, int warmup) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<vec_env_fixture<Env>>(n, warmup);
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

#if defined(RLK_BACKEND_CUDA)
/// The checked step plus copying what a host-side learner reads (observations, rewards,
/// terminated, truncated) to pinned host memory: the cost of a GPU simulator feeding a CPU learner.
template <class Env>
struct host_copy {
  using scalar = typename rlk::vec_env<Env, bench_backend>::scalar_type;
  scalar* obs = nullptr;
  scalar* rewards = nullptr;
  std::uint8_t* flags = nullptr;  // [2N]: terminated, truncated
  explicit host_copy(std::size_t n) {
    RLK_CUDA_CHECK(cudaMallocHost(&obs, n * std::size_t(Env::observation_size) * sizeof(scalar)));
    RLK_CUDA_CHECK(cudaMallocHost(&rewards, n * sizeof(scalar)));
    RLK_CUDA_CHECK(cudaMallocHost(&flags, 2 * n));
  }
  host_copy(const host_copy&) = delete;
  host_copy& operator=(const host_copy&) = delete;
  ~host_copy() {
    cudaFreeHost(obs);
    cudaFreeHost(rewards);
    cudaFreeHost(flags);
  }
  void fetch(const rlk::vec_env<Env, bench_backend>& envs) {
    const std::size_t n = envs.num_envs();
    RLK_CUDA_CHECK(cudaMemcpy(obs, envs.observations().data(), envs.observations().size() * sizeof(scalar), cudaMemcpyDeviceToHost));
    RLK_CUDA_CHECK(cudaMemcpy(rewards, envs.rewards().data(), n * sizeof(scalar), cudaMemcpyDeviceToHost));
    RLK_CUDA_CHECK(cudaMemcpy(flags, envs.terminated().data(), n, cudaMemcpyDeviceToHost));
    RLK_CUDA_CHECK(cudaMemcpy(flags + n, envs.truncated().data(), n, cudaMemcpyDeviceToHost));
  }
};

template <class Env>
void BM_vec_env_to_host(benchmark::State& state, int warmup) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<vec_env_fixture<Env>>(n, warmup);
  host_copy<Env> host(n);
  std::size_t k = 0;
  for (auto _ : state) {
    f.envs.step(f.action(k++));
    host.fetch(f.envs);  // synchronous copies: the step has finished when they return
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
#endif

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
  virtual StepOut<Env> step(const action_t<Env>* action) = 0;
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
  StepOut<Env> step(const action_t<Env>* action) override {
    rlk::step_result<float> r;
    if constexpr (Env::action_space == rlk::action_kind::discrete) {
      r = Env::step(params_, state_, *action, gen_);
    } else {
      r = Env::step(params_, state_, action, gen_);
    }
    ++elapsed_;
    return {observe(), r.reward, r.terminated, params_.max_episode_steps > 0 && elapsed_ >= params_.max_episode_steps};
  }

private:
  std::array<float, Env::observation_size> observe() const {
    std::array<float, Env::observation_size> obs;
    Env::observe(params_, state_, obs.data());
    return obs;
  }
  typename Env::Params params_{};
  typename Env::State state_{};  // zeroed, as vec_env does (MinAtar keeps fields across resets)
  rlk::rng gen_;
  int elapsed_ = 0;
};

}  // namespace gym_style

template <class Env>
struct virtual_fixture {
  static constexpr int obs_size = Env::observation_size;
  std::size_t num_envs;
  std::vector<std::unique_ptr<gym_style::AbstractEnv<Env>>> envs;
  std::vector<std::vector<action_t<Env>>> actions;
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

  void step(const std::vector<action_t<Env>>& a) {
    for (std::size_t i = 0; i < num_envs; ++i) {
      gym_style::StepOut<Env> out = envs[i]->step(a.data() + i * std::size_t(action_width<Env>));
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
void BM_virtual_gym_style(benchmark::State& state, int warmup) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<virtual_fixture<Env>>(n, warmup);
  std::size_t k = 0;
  for (auto _ : state) {
    f.step(f.actions[k++ % f.actions.size()]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// ---- set-up ---------------------------------------------------------------------------------------

/// Registers the rows of one env at batch size n: vec_env step and step_unchecked on this
/// variant's backend (on CUDA also step + copying the results to the host), and the
/// single-threaded virtual baseline. Each row steps `warmup` times
/// first (so the envs' resets spread out) and runs for at least min_time_s seconds.
template <class Env>
void add_env_rows(const char* id, std::int64_t n, int warmup, double min_time_s) {
  const std::string backend = rlk::backend_name(bench_backend{});
  const auto add = [&](const std::string& name, void (*fn)(benchmark::State&, int)) {
    add_row(name, fn, warmup, n, min_time_s);
  };
  add(std::string("BM_vec_env_step/") + id + "/" + backend, BM_vec_env<Env, true>);
  add(std::string("BM_vec_env_step_unchecked/") + id + "/" + backend, BM_vec_env<Env, false>);
#if defined(RLK_BACKEND_CUDA)
  add(std::string("BM_vec_env_step_to_host/") + id + "/" + backend, BM_vec_env_to_host<Env>);
#endif
  add(std::string("BM_virtual_gym_style/") + id + "/serial", BM_virtual_gym_style<Env>);
}
}  // namespace env_rows
}  // namespace rlk_bench
