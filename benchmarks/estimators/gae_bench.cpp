// benchmarks/estimators/gae_bench.cpp
// Elements per second of GAE (advantages and returns, float) over a time-major [T = 128, N]
// rollout: rlkernels::gae on the backend of this build variant, beside the straightforward
// single-threaded CPU loop ("textbook_loop": for each env, walk t backwards over the same [T, N]
// arrays) in the same binary. Items = T * N elements per iteration. Built once per backend by
// rlk_add_variants.
#include <rlkernels/core/memory.hpp>
#include <rlkernels/estimators/gae.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

constexpr std::size_t num_steps = 128;
constexpr std::int64_t batch_sizes[] = {4096, 65536, std::int64_t(1) << 20};
constexpr float discount = 0.99f;
constexpr float gae_lambda = 0.95f;
constexpr double min_time_s = 0.2;

/// A random [T, N] float rollout (about 2% terminations and 1% truncations) and the outputs, in
/// the memory of Backend. The baseline uses serial_backend's (host memory): on the host variants
/// that is the same fixture as the rlkernels rows.
template <class Backend>
struct gae_fixture {
  std::size_t num_envs;
  rlk::buffer<float, Backend> rewards, values, bootstrap_values, last_values, advantages, returns;
  rlk::buffer<std::uint8_t, Backend> terminated, truncated;

  gae_fixture(std::size_t n, int /*warmup*/)
      : num_envs(n), rewards(Backend{}, num_steps * n), values(Backend{}, num_steps * n),
        bootstrap_values(Backend{}, num_steps * n), last_values(Backend{}, n), advantages(Backend{}, num_steps * n),
        returns(Backend{}, num_steps * n), terminated(Backend{}, num_steps * n), truncated(Backend{}, num_steps * n) {
    std::mt19937 gen(static_cast<std::uint32_t>(n));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const auto fill = [&](rlk::buffer<float, Backend>& b) {
      std::vector<float> host(b.size());
      for (auto& x : host) x = u(gen);
      b.assign(host);
    };
    fill(rewards);
    fill(values);
    fill(bootstrap_values);
    fill(last_values);
    std::vector<std::uint8_t> term(num_steps * n), trunc(num_steps * n);
    for (std::size_t k = 0; k < term.size(); ++k) {
      const std::uint32_t draw = gen() % 1000u;
      term[k] = draw < 20u;
      trunc[k] = draw >= 990u;
    }
    terminated.assign(term);
    truncated.assign(trunc);
  }

  rlk::rollout_view<float> rollout() const {
    rlk::rollout_view<float> r;
    r.num_steps = num_steps;
    r.num_envs = num_envs;
    r.rewards = rewards.cview();
    r.values = values.cview();
    r.bootstrap_values = bootstrap_values.cview();
    r.last_values = last_values.cview();
    r.terminated = terminated.cview();
    r.truncated = truncated.cview();
    return r;
  }
};

using host_fixture =
    std::conditional_t<rlk::is_host_backend_v<bench_backend>, gae_fixture<bench_backend>, gae_fixture<rlk::serial_backend>>;

void BM_gae(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<gae_fixture<bench_backend>>(n, 0);
  const rlk::rollout_view<float> r = f.rollout();
  for (auto _ : state) {
    rlk::gae(bench_backend{}, r, discount, gae_lambda, f.advantages.view(), f.returns.view());
    rlk::synchronize(bench_backend{});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(num_steps * n));
}

/// What one writes first: per env, the backward loop over t with the masks of
/// docs/episode-end-contract.md, reading the time-major arrays with stride N.
void textbook_gae(const float* rewards, const float* values, const float* bootstrap_values, const float* last_values,
                  const std::uint8_t* terminated, const std::uint8_t* truncated, std::size_t steps, std::size_t n,
                  float* advantages, float* returns) {
  for (std::size_t i = 0; i < n; ++i) {
    float a = 0.0f;
    for (std::size_t t = steps; t-- > 0;) {
      const std::size_t k = t * n + i;
      const float next_value = truncated[k] ? bootstrap_values[k] : (t + 1 < steps ? values[k + n] : last_values[i]);
      const float not_terminal = terminated[k] ? 0.0f : 1.0f;
      const float not_done = (terminated[k] | truncated[k]) ? 0.0f : 1.0f;
      const float delta = rewards[k] + discount * not_terminal * next_value - values[k];
      a = delta + discount * gae_lambda * not_done * a;
      advantages[k] = a;
      returns[k] = a + values[k];
    }
  }
}

void BM_textbook_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<host_fixture>(n, 0);
  for (auto _ : state) {
    textbook_gae(f.rewards.data(), f.values.data(), f.bootstrap_values.data(), f.last_values.data(),
                 f.terminated.data(), f.truncated.data(), num_steps, n, f.advantages.data(), f.returns.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(num_steps * n));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string backend = rlk::backend_name(bench_backend{});
  for (const std::int64_t n : batch_sizes) {
    rlk_bench::add_row("BM_gae/T128/" + backend, BM_gae, n, min_time_s);
    rlk_bench::add_row("BM_textbook_loop/T128/serial", BM_textbook_loop, n, min_time_s);
  }
  return rlk_bench::run_registered_benchmarks(argc, argv, "gae_bench");
}
