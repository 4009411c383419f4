// benchmarks/envs/cartpole_bench.cpp
// CartPole env-steps per second: rlkernels' vec_env (step and step_unchecked) on the backend of
// this build variant, side by side in the same run with two references: a hand-written
// single-purpose loop over the same data ("limit") and a conventional virtual-call, one-object-
// per-env CPU loop ("virtual_gym_style"). Built once per backend by rlk_add_variants.
#include <rlkernels/rlkernels.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"
#include "env_rows.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;

using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

using env_type = rlk::cartpole<float>;
using vec_env_type = rlk::vec_env<env_type, bench_backend>;

constexpr std::int64_t batch_sizes[] = {1, 64, 4096, std::int64_t(1) << 20};
constexpr std::uint64_t env_seed = 2026;
// Several action buffers, cycled, so that consecutive steps do not repeat one action pattern.
constexpr std::size_t action_buffer_count = 4;
// Every fixture is stepped this often before timing. All envs start their first episode together,
// so the share of envs resetting in a step (the expensive path) swings for the first ~100 steps
// before settling near 6.4% with random actions; timing earlier would favour whichever row runs
// first.
constexpr int warmup_steps = 128;
// Short on purpose: the serial and OpenMP binaries together should finish in about a minute on
// two cores. Pass --benchmark_min_time=<s> for steadier numbers.
constexpr double min_time_s = 0.2;
// Bytes a CartPole step must move through memory per env, for the bytes_per_second column of the
// vec_env, limit and copy rows (what the step reads and writes at least once each; the Philox
// block, read only by the ~6% of envs that reset, is left out):
//   State 16 read + 16 written, action 4 read, elapsed steps 4 + 4, episode return (double) 8 + 8,
//   observation 16 and final observation 16 written, reward 4, terminated 1 and truncated 1 written.
constexpr std::int64_t step_bytes_per_env = 16 + 16 + 4 + 4 + 4 + 8 + 8 + 16 + 16 + 4 + 1 + 1;
static_assert(step_bytes_per_env == 98, "update the byte count above with the data a step moves");

/// [action_buffer_count][N] random 0/1 actions; a pure function of N, so every row sees the same.
std::vector<std::vector<std::int32_t>> make_host_actions(std::size_t n) {
  std::mt19937 gen(static_cast<std::uint32_t>(12345 + n));
  std::vector<std::vector<std::int32_t>> out(action_buffer_count, std::vector<std::int32_t>(n));
  for (auto& actions : out)
    for (auto& a : actions) a = static_cast<std::int32_t>(gen() & 1u);
  return out;
}

/// The action buffers in backend memory (device memory for CUDA), made once per fixture.
struct action_buffers {
  std::vector<rlk::buffer<std::int32_t, bench_backend>> buffers;
  explicit action_buffers(std::size_t n) {
    for (const auto& host : make_host_actions(n)) buffers.emplace_back(bench_backend{}, host);
  }
  rlk::view<const std::int32_t> operator[](std::size_t k) const { return buffers[k % buffers.size()].cview(); }
};

// ---- rlkernels vec_env ------------------------------------------------------------------------

struct vec_env_fixture {
  std::size_t num_envs;
  vec_env_type envs;
  action_buffers actions;
  vec_env_fixture(std::size_t n, int warmup) : num_envs(n), envs(bench_backend{}, n, env_seed), actions(n) {
    for (int t = 0; t < warmup; ++t) envs.step_unchecked(actions[std::size_t(t)]);
    rlk::synchronize(bench_backend{});
  }
};

template <bool Checked>
void BM_vec_env(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  vec_env_fixture& f = fixture_for<vec_env_fixture>(n, rlk_bench::warmup_or(std::int64_t(n), warmup_steps));
  std::size_t k = 0;
  for (auto _ : state) {
    if constexpr (Checked) {
      f.envs.step(f.actions[k++]);
    } else {
      f.envs.step_unchecked(f.actions[k++]);
    }
    rlk::synchronize(f.envs.backend());  // CUDA launches are asynchronous: time finished steps
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * step_bytes_per_env);
}

// ---- "limit": a hand-written single-purpose CartPole loop ---------------------------------------
// The same data layout as vec_env (State array, Philox block counters, elapsed steps, episode
// returns, observations, final observations, rewards, flags), the same float arithmetic and the
// same counter-based reset, but no generic env interface, no Params struct and no episode
// statistics: how fast a loop written for this one job goes.

struct limit_state {
  float x, x_dot, theta, theta_dot;
};

/// Raw pointers to the arrays, passed by value into the loop body / kernel.
struct limit_arrays {
  const std::int32_t* actions;       // [N]
  limit_state* states;               // [N]
  std::uint64_t* rng_blocks;         // [N] next Philox block of env i's stream
  std::int32_t* elapsed;             // [N]
  double* episode_returns;           // [N]
  float* observations;               // [N, 4]
  float* final_observations;         // [N, 4]
  float* rewards;                    // [N]
  std::uint8_t* terminated;          // [N]
  std::uint8_t* truncated;           // [N]
};

RLK_INLINE void limit_step(std::size_t i, std::uint64_t seed, limit_arrays a) {
  // Gymnasium CartPole-v1 constants, in float, combined in the same order as cartpole.hpp.
  constexpr float gravity = 9.8f, masscart = 1.0f, masspole = 0.1f, length = 0.5f, force_mag = 10.0f, tau = 0.02f;
  constexpr float total_mass = masspole + masscart, polemass_length = masspole * length;
  constexpr float theta_threshold = float(12 * 2 * 3.141592653589793 / 360), x_threshold = 2.4f;
  constexpr float reset_bound = 0.05f;
  constexpr std::int32_t max_episode_steps = 500;

  limit_state s = a.states[i];
  const float force = a.actions[i] == 1 ? force_mag : -force_mag;
  const float costheta = std::cos(s.theta);
  const float sintheta = std::sin(s.theta);
  const float temp = (force + polemass_length * (s.theta_dot * s.theta_dot) * sintheta) / total_mass;
  const float thetaacc =
      (gravity * sintheta - costheta * temp) / (length * (4.0f / 3.0f - masspole * (costheta * costheta) / total_mass));
  const float xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  s.x = s.x + tau * s.x_dot;
  s.x_dot = s.x_dot + tau * xacc;
  s.theta = s.theta + tau * s.theta_dot;
  s.theta_dot = s.theta_dot + tau * thetaacc;

  const bool terminated = s.x < -x_threshold || s.x > x_threshold || s.theta < -theta_threshold || s.theta > theta_threshold;
  const std::int32_t t = a.elapsed[i] + 1;
  const bool truncated = t >= max_episode_steps;

  float* final_obs = a.final_observations + 4 * i;
  final_obs[0] = s.x;
  final_obs[1] = s.x_dot;
  final_obs[2] = s.theta;
  final_obs[3] = s.theta_dot;
  if (terminated || truncated) {
    rlk::rng gen(seed, i, a.rng_blocks[i]);
    s.x = gen.uniform<float>(-reset_bound, reset_bound);
    s.x_dot = gen.uniform<float>(-reset_bound, reset_bound);
    s.theta = gen.uniform<float>(-reset_bound, reset_bound);
    s.theta_dot = gen.uniform<float>(-reset_bound, reset_bound);
    a.rng_blocks[i] = gen.block();
    a.elapsed[i] = 0;
    a.episode_returns[i] = 0.0;
  } else {
    a.elapsed[i] = t;
    a.episode_returns[i] += 1.0;
  }
  float* obs = a.observations + 4 * i;
  obs[0] = s.x;
  obs[1] = s.x_dot;
  obs[2] = s.theta;
  obs[3] = s.theta_dot;
  a.states[i] = s;
  a.rewards[i] = 1.0f;
  a.terminated[i] = terminated;
  a.truncated[i] = truncated;
}

[[maybe_unused]] void limit_loop(rlk::serial_backend, std::size_t n, std::uint64_t seed, limit_arrays a) {
  for (std::size_t i = 0; i < n; ++i) limit_step(i, seed, a);
}

[[maybe_unused]] void limit_loop(rlk::openmp_backend, std::size_t n, std::uint64_t seed, limit_arrays a) {
  const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) limit_step(static_cast<std::size_t>(i), seed, a);
}

#if RLK_HAS_CUDA
__global__ void limit_kernel(std::size_t n, std::uint64_t seed, limit_arrays a) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) limit_step(i, seed, a);
}

[[maybe_unused]] void limit_loop(rlk::cuda_backend backend, std::size_t n, std::uint64_t seed, limit_arrays a) {
  constexpr unsigned int block = 256;
  limit_kernel<<<static_cast<unsigned int>((n + block - 1) / block), block, 0, backend.stream>>>(n, seed, a);
  RLK_CUDA_CHECK(cudaGetLastError());
}
#endif

struct limit_fixture {
  std::size_t num_envs;
  rlk::buffer<limit_state, bench_backend> states;
  rlk::buffer<std::uint64_t, bench_backend> rng_blocks;
  rlk::buffer<std::int32_t, bench_backend> elapsed;
  rlk::buffer<double, bench_backend> episode_returns;
  rlk::buffer<float, bench_backend> observations;
  rlk::buffer<float, bench_backend> final_observations;
  rlk::buffer<float, bench_backend> rewards;
  rlk::buffer<std::uint8_t, bench_backend> terminated;
  rlk::buffer<std::uint8_t, bench_backend> truncated;
  action_buffers actions;

  explicit limit_fixture(std::size_t n)
      : num_envs(n), states(bench_backend{}, n), rng_blocks(bench_backend{}, n), elapsed(bench_backend{}, n),
        episode_returns(bench_backend{}, n), observations(bench_backend{}, 4 * n),
        final_observations(bench_backend{}, 4 * n), rewards(bench_backend{}, n), terminated(bench_backend{}, n),
        truncated(bench_backend{}, n), actions(n) {
    // The same first reset as vec_env: env i draws from rng(seed, i) from block 0.
    std::vector<limit_state> s(n);
    std::vector<std::uint64_t> blocks(n);
    std::vector<float> obs(4 * n);
    for (std::size_t i = 0; i < n; ++i) {
      rlk::rng gen(env_seed, i, 0);
      s[i].x = gen.uniform<float>(-0.05f, 0.05f);
      s[i].x_dot = gen.uniform<float>(-0.05f, 0.05f);
      s[i].theta = gen.uniform<float>(-0.05f, 0.05f);
      s[i].theta_dot = gen.uniform<float>(-0.05f, 0.05f);
      blocks[i] = gen.block();
      obs[4 * i + 0] = s[i].x;
      obs[4 * i + 1] = s[i].x_dot;
      obs[4 * i + 2] = s[i].theta;
      obs[4 * i + 3] = s[i].theta_dot;
    }
    states.assign(s);
    rng_blocks.assign(blocks);
    observations.assign(obs);
    final_observations.assign(obs);
  }

  limit_fixture(std::size_t n, int warmup) : limit_fixture(n) {
    for (int t = 0; t < warmup; ++t) step(actions[std::size_t(t)]);
    rlk::synchronize(bench_backend{});
  }

  void step(rlk::view<const std::int32_t> a) {
    limit_loop(bench_backend{}, num_envs, env_seed,
               limit_arrays{a.data(), states.data(), rng_blocks.data(), elapsed.data(), episode_returns.data(),
                            observations.data(), final_observations.data(), rewards.data(), terminated.data(),
                            truncated.data()});
  }
};

void BM_limit_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  limit_fixture& f = fixture_for<limit_fixture>(n, rlk_bench::warmup_or(std::int64_t(n), warmup_steps));
  std::size_t k = 0;
  for (auto _ : state) {
    f.step(f.actions[k++]);
    rlk::synchronize(bench_backend{});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * step_bytes_per_env);
}

#if defined(RLK_BACKEND_CUDA)
// ---- "device_copy": the memory roofline the step rows are measured against ----------------------
// One device-to-device cudaMemcpyAsync of step_bytes_per_env / 2 bytes per env (read once, written
// once: the same bytes a CartPole step moves), synchronised per iteration like the step rows. Its
// bytes_per_second is the achievable DRAM bandwidth at large N; the step rows' bytes_per_second
// over it is the fraction of that bandwidth a step reaches.
struct copy_fixture {
  std::size_t num_envs;
  rlk::buffer<std::uint8_t, bench_backend> from, to;
  copy_fixture(std::size_t n, int)
      : num_envs(n), from(bench_backend{}, n * std::size_t(step_bytes_per_env / 2)),
        to(bench_backend{}, n * std::size_t(step_bytes_per_env / 2)) {}
};

void BM_device_copy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  copy_fixture& f = fixture_for<copy_fixture>(n, 0);
  const bench_backend backend{};
  for (auto _ : state) {
    RLK_CUDA_CHECK(cudaMemcpyAsync(f.to.data(), f.from.data(), f.from.size(), cudaMemcpyDeviceToDevice, backend.stream));
    rlk::synchronize(backend);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * step_bytes_per_env);
}
#endif

// ---- "virtual_gym_style": the conventional CPU baseline -----------------------------------------
// What a C++ port of a Gymnasium loop looks like: an abstract Env, one heap object per env with
// its own std::mt19937, stepped one at a time through a virtual call, reset on episode end. Always
// serial on the host, in every variant.

namespace gym_style {

using Observation = std::array<float, 4>;

struct StepOut {
  Observation obs;
  float reward;
  bool terminated;
  bool truncated;
};

struct Env {
  virtual ~Env() = default;
  virtual Observation reset() = 0;
  virtual StepOut step(int action) = 0;
};

class CartPole : public Env {
public:
  explicit CartPole(std::uint32_t seed) : gen_(seed) { CartPole::reset(); }

  Observation reset() override {
    x_ = reset_dist_(gen_);
    x_dot_ = reset_dist_(gen_);
    theta_ = reset_dist_(gen_);
    theta_dot_ = reset_dist_(gen_);
    elapsed_ = 0;
    return {x_, x_dot_, theta_, theta_dot_};
  }

  StepOut step(int action) override {
    if (action != 0 && action != 1) throw std::invalid_argument("CartPole::step: action must be 0 or 1");
    const float force = action == 1 ? force_mag_ : -force_mag_;
    const float costheta = std::cos(theta_);
    const float sintheta = std::sin(theta_);
    const float temp = (force + polemass_length_ * (theta_dot_ * theta_dot_) * sintheta) / total_mass_;
    const float thetaacc =
        (gravity_ * sintheta - costheta * temp) / (length_ * (4.0f / 3.0f - masspole_ * (costheta * costheta) / total_mass_));
    const float xacc = temp - polemass_length_ * thetaacc * costheta / total_mass_;
    x_ = x_ + tau_ * x_dot_;
    x_dot_ = x_dot_ + tau_ * xacc;
    theta_ = theta_ + tau_ * theta_dot_;
    theta_dot_ = theta_dot_ + tau_ * thetaacc;
    ++elapsed_;
    const bool terminated = x_ < -x_threshold_ || x_ > x_threshold_ || theta_ < -theta_threshold_ || theta_ > theta_threshold_;
    return {{x_, x_dot_, theta_, theta_dot_}, 1.0f, terminated, elapsed_ >= max_episode_steps_};
  }

private:
  float gravity_ = 9.8f, masscart_ = 1.0f, masspole_ = 0.1f, total_mass_ = masspole_ + masscart_;
  float length_ = 0.5f, polemass_length_ = masspole_ * length_, force_mag_ = 10.0f, tau_ = 0.02f;
  float theta_threshold_ = float(12 * 2 * 3.141592653589793 / 360), x_threshold_ = 2.4f;
  int max_episode_steps_ = 500;
  float x_ = 0, x_dot_ = 0, theta_ = 0, theta_dot_ = 0;
  int elapsed_ = 0;
  std::mt19937 gen_;
  std::uniform_real_distribution<float> reset_dist_{-0.05f, 0.05f};
};

}  // namespace gym_style

struct virtual_fixture {
  std::size_t num_envs;
  std::vector<std::unique_ptr<gym_style::Env>> envs;
  std::vector<std::vector<std::int32_t>> actions;  // host copies of the same action buffers
  std::vector<float> observations, final_observations, rewards;
  std::vector<std::uint8_t> terminated, truncated;

  virtual_fixture(std::size_t n, int warmup)
      : num_envs(n), actions(make_host_actions(n)), observations(4 * n), final_observations(4 * n), rewards(n),
        terminated(n), truncated(n) {
    envs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      envs.push_back(std::make_unique<gym_style::CartPole>(static_cast<std::uint32_t>(env_seed + i)));
    }
    for (int t = 0; t < warmup; ++t) step(actions[std::size_t(t) % actions.size()]);
  }

  void step(const std::vector<std::int32_t>& a) {
    for (std::size_t i = 0; i < num_envs; ++i) {
      gym_style::StepOut out = envs[i]->step(a[i]);
      for (int k = 0; k < 4; ++k) final_observations[4 * i + k] = out.obs[k];
      rewards[i] = out.reward;
      terminated[i] = out.terminated;
      truncated[i] = out.truncated;
      if (out.terminated || out.truncated) out.obs = envs[i]->reset();
      for (int k = 0; k < 4; ++k) observations[4 * i + k] = out.obs[k];
    }
  }
};

void BM_virtual_gym_style(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  // One object per env with its own std::mt19937 (5 KB): 2^20 envs take about 5.3 GB.
  const double needed = double(n) * double(sizeof(gym_style::CartPole) + 16);
  if (needed > 0.5 * rlk_bench::physical_memory_bytes()) {
    state.SkipWithError(rlk::detail::concat("needs ", needed / 1e9, " GB, over half of this machine's memory").c_str());
    return;
  }
  virtual_fixture& f = fixture_for<virtual_fixture>(n, rlk_bench::warmup_or(std::int64_t(n), warmup_steps));
  std::size_t k = 0;
  for (auto _ : state) {
    f.step(f.actions[k++ % f.actions.size()]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// ---- set-up ---------------------------------------------------------------------------------------

/// Runs vec_env and the limit loop side by side and compares every output, so the limit row is
/// known to do the same work. Returns a message describing the first difference, or "" if none.
std::string compare_limit_with_vec_env(std::size_t n, int steps) {
  vec_env_type envs(bench_backend{}, n, env_seed);
  limit_fixture limit(n);
  action_buffers actions(n);
  for (int t = 0; t < steps; ++t) {
    envs.step_unchecked(actions[std::size_t(t)]);
    limit.step(actions[std::size_t(t)]);
  }
  const auto mismatch = [&](const char* what, const auto& a, const auto& b) -> std::string {
    const auto ha = a.to_host();
    const auto hb = b.to_host();
    for (std::size_t i = 0; i < ha.size(); ++i)
      if (!(ha[i] == hb[i])) return rlk::detail::concat(what, "[", i, "] after ", steps, " steps");
    return "";
  };
  for (const std::string& m :
       {mismatch("observations", envs.observations(), limit.observations),
        mismatch("final_observations", envs.final_observations(), limit.final_observations),
        mismatch("rewards", envs.rewards(), limit.rewards), mismatch("terminated", envs.terminated(), limit.terminated),
        mismatch("truncated", envs.truncated(), limit.truncated), mismatch("elapsed", envs.episode_lengths(), limit.elapsed),
        mismatch("episode_returns", envs.episode_returns(), limit.episode_returns)})
    if (!m.empty()) return m;
  return "";
}

void add(const std::string& name, void (*fn)(benchmark::State&), std::int64_t n) {
  rlk_bench::add_row(name, fn, n, rlk_bench::min_time_or(min_time_s));
}

}  // namespace

int main(int argc, char** argv) {
  if (!rlk_bench::parse_options_or_report(argc, argv, "cartpole_bench")) return 2;
  const std::string backend = rlk::backend_name(bench_backend{});
  // N-major order: the rows for one N run together (and each fixture is built once per N).
  for (const std::int64_t n : rlk_bench::batch_sizes_or(batch_sizes)) {
    add("BM_vec_env_step/" + backend, BM_vec_env<true>, n);
    add("BM_vec_env_step_unchecked/" + backend, BM_vec_env<false>, n);
#if defined(RLK_BACKEND_CUDA)
    // step + copying observations, rewards and flags to pinned host memory (env_rows.hpp)
    rlk_bench::add_row("BM_vec_env_step_to_host/" + backend, rlk_bench::env_rows::BM_vec_env_to_host<env_type>,
                       rlk_bench::warmup_or(n, warmup_steps), n, rlk_bench::min_time_or(min_time_s));
#endif
    add("BM_limit_loop/" + backend, BM_limit_loop, n);
#if defined(RLK_BACKEND_CUDA)
    add("BM_device_copy/" + backend, BM_device_copy, n);
#endif
    add("BM_virtual_gym_style/serial", BM_virtual_gym_style, n);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  try {
    rlk_bench::add_backend_context();
    // 600 steps reach the 500-step time limit, so resets by truncation are compared too.
    // A difference is reported, not fatal: under nvcc, floating-point contraction may round the
    // two codes differently (the work done stays the same).
    const std::string diff = compare_limit_with_vec_env(4096, 600);
    if (!diff.empty()) std::fprintf(stderr, "cartpole_bench: warning: the limit loop differs from vec_env at %s\n", diff.c_str());
    benchmark::AddCustomContext("limit_loop_matches_vec_env",
                                diff.empty() ? "yes (4096 envs x 600 steps, bitwise)" : "no: first difference at " + diff);

    benchmark::RunSpecifiedBenchmarks();
    rlk_bench::release_fixtures();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cartpole_bench: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
