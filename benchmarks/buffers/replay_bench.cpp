// benchmarks/buffers/replay_bench.cpp
// Replay sampling throughput (samples per second) from a buffer of 2^20 transitions (float
// observations of size 4, one int32 action), batches of 256 and 4096: rlkernels' uniform
// replay_buffer::sample and prioritized_replay_buffer (sample + update_priorities) on the backend
// of this build variant, beside straightforward single-threaded CPU baselines in the same run
// (std::mt19937_64 indices and a gather loop; for PER a std::vector<double> sum tree).
#include <rlkernels/buffers/prioritized_replay.hpp>
#include <rlkernels/buffers/replay_buffer.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

constexpr std::size_t num_envs = 1024;                 // transitions per row
constexpr std::size_t capacity_steps = 1024;           // rows: 2^20 transitions in all
constexpr std::size_t transitions = num_envs * capacity_steps;
constexpr int obs_size = 4;
constexpr std::int64_t batch_sizes[] = {256, 4096};
constexpr std::uint64_t sample_seed = 2026;
constexpr double alpha = 0.6, beta = 0.4, epsilon = 1e-6;
constexpr float gamma = 0.99f;
constexpr double min_time_s = 0.2;

/// Row r of the stored data: float observations, int32 actions, rewards and flags.
struct host_row {
  std::vector<float> obs, next, rewards;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> terminated, truncated;
};

host_row make_row(std::size_t r) {
  host_row row;
  std::mt19937 gen(static_cast<std::uint32_t>(r));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (std::size_t i = 0; i < num_envs; ++i) {
    for (int k = 0; k < obs_size; ++k) {
      row.obs.push_back(unit(gen));
      row.next.push_back(unit(gen));
    }
    row.actions.push_back(std::int32_t(gen() % 2));
    row.rewards.push_back(1.0f);
    row.terminated.push_back(std::uint8_t(gen() % 200 == 0));
    row.truncated.push_back(0);
  }
  return row;
}

/// TD errors of the fixtures: the same on every row.
std::vector<float> make_td(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> td(n);
  for (float& x : td) x = normal(gen);
  return td;
}

// ---- rlkernels ------------------------------------------------------------------------------------

template <class Buffer>
void fill(Buffer& buffer) {
  for (std::size_t r = 0; r < capacity_steps; ++r) {
    const host_row h = make_row(r);
    rlk::buffer<float, bench_backend> obs(bench_backend{}, h.obs), next(bench_backend{}, h.next),
        rew(bench_backend{}, h.rewards);
    rlk::buffer<std::int32_t, bench_backend> act(bench_backend{}, h.actions);
    rlk::buffer<std::uint8_t, bench_backend> term(bench_backend{}, h.terminated), trunc(bench_backend{}, h.truncated);
    buffer.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
  }
}

struct uniform_fixture {
  std::size_t num_envs;  // the batch size (the key fixture_for caches on)
  rlk::replay_buffer<float, std::int32_t, bench_backend> buffer;
  rlk::replay_batch<float, std::int32_t, bench_backend> batch;
  uniform_fixture(std::size_t b, int)
      : num_envs(b), buffer(bench_backend{}, capacity_steps, ::num_envs, obs_size, 1),
        batch(bench_backend{}, b, obs_size, 1) {
    fill(buffer);
    rlk::synchronize(bench_backend{});
  }
};

void BM_uniform_sample(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<uniform_fixture>(b, 0);
  std::uint64_t draw = 0;
  for (auto _ : state) {
    f.buffer.sample(sample_seed, draw++, f.batch, 1, gamma);
    rlk::synchronize(bench_backend{});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}

struct prioritized_fixture {
  std::size_t num_envs;  // the batch size
  rlk::prioritized_replay_buffer<float, std::int32_t, bench_backend> buffer;
  rlk::replay_batch<float, std::int32_t, bench_backend> batch;
  rlk::buffer<float, bench_backend> td;  // [B] the TD errors reported after each sample
  prioritized_fixture(std::size_t b, int)
      : num_envs(b), buffer(bench_backend{}, capacity_steps, ::num_envs, obs_size, 1, params()),
        batch(bench_backend{}, b, obs_size, 1), td(bench_backend{}, make_td(b, 7)) {
    fill(buffer);
    // Spread the priorities: one update over every slot.
    std::vector<std::uint64_t> all(transitions);
    for (std::size_t i = 0; i < transitions; ++i) all[i] = i;
    const rlk::buffer<std::uint64_t, bench_backend> slots(bench_backend{}, all);
    const rlk::buffer<float, bench_backend> td_all(bench_backend{}, make_td(transitions, 3));
    buffer.update_priorities(slots.cview(), td_all.cview());
    rlk::synchronize(bench_backend{});
  }
  static rlk::prioritized_replay_params params() {
    rlk::prioritized_replay_params p;
    p.alpha = alpha;
    p.beta = beta;
    p.epsilon = epsilon;
    return p;
  }
};

template <bool Update>
void BM_prioritized(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<prioritized_fixture>(b, 0);
  std::uint64_t draw = 0;
  for (auto _ : state) {
    f.buffer.sample(sample_seed, draw++, f.batch, float(beta), 1, gamma);
    if constexpr (Update) f.buffer.update_priorities(f.batch.indices.cview(), f.td.cview());
    rlk::synchronize(bench_backend{});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}

// ---- single-threaded CPU baselines ----------------------------------------------------------------

/// The stored transitions as plain vectors, slot-major like replay_buffer.
struct host_storage {
  std::vector<float> obs, next, rewards;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> terminated, truncated;
  host_storage() {
    for (std::size_t r = 0; r < capacity_steps; ++r) {
      const host_row h = make_row(r);
      obs.insert(obs.end(), h.obs.begin(), h.obs.end());
      next.insert(next.end(), h.next.begin(), h.next.end());
      rewards.insert(rewards.end(), h.rewards.begin(), h.rewards.end());
      actions.insert(actions.end(), h.actions.begin(), h.actions.end());
      terminated.insert(terminated.end(), h.terminated.begin(), h.terminated.end());
      truncated.insert(truncated.end(), h.truncated.begin(), h.truncated.end());
    }
  }
};

/// The batch arrays of the baselines.
struct host_batch {
  std::vector<std::uint64_t> indices;
  std::vector<float> obs, next, rewards, discounts, weights;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> terminated, truncated;
  explicit host_batch(std::size_t b)
      : indices(b), obs(b * obs_size), next(b * obs_size), rewards(b), discounts(b), weights(b, 1.0f), actions(b),
        terminated(b), truncated(b) {}
  void gather(const host_storage& s) {
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const std::size_t i = indices[k];
      for (int c = 0; c < obs_size; ++c) {
        obs[k * obs_size + c] = s.obs[i * obs_size + c];
        next[k * obs_size + c] = s.next[i * obs_size + c];
      }
      actions[k] = s.actions[i];
      rewards[k] = s.rewards[i];
      terminated[k] = s.terminated[i];
      truncated[k] = s.truncated[i];
      discounts[k] = gamma;
    }
  }
};

struct uniform_baseline_fixture {
  std::size_t num_envs;  // the batch size
  host_storage storage;
  host_batch batch;
  std::mt19937_64 gen{sample_seed};
  uniform_baseline_fixture(std::size_t b, int) : num_envs(b), batch(b) {}
};

void BM_uniform_baseline(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<uniform_baseline_fixture>(b, 0);
  std::uniform_int_distribution<std::uint64_t> slot(0, transitions - 1);
  for (auto _ : state) {
    for (auto& i : f.batch.indices) i = slot(f.gen);
    f.batch.gather(f.storage);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}

/// The textbook array sum tree: leaves at [L, 2L), parents recomputed on the walk to the root.
struct vector_sum_tree {
  std::size_t leaf_count = 1;
  std::vector<double> nodes;
  explicit vector_sum_tree(std::size_t capacity) {
    while (leaf_count < capacity) leaf_count <<= 1;
    nodes.assign(2 * leaf_count, 0.0);
  }
  void set(std::size_t i, double value) {
    std::size_t p = leaf_count + i;
    nodes[p] = value;
    for (p >>= 1; p >= 1; p >>= 1) nodes[p] = nodes[2 * p] + nodes[2 * p + 1];
  }
  std::size_t find(double u) const {
    std::size_t p = 1;
    while (p < leaf_count) {
      const double left = nodes[2 * p];
      if (u < left || nodes[2 * p + 1] == 0.0) {
        p = 2 * p;
      } else {
        u -= left;
        p = 2 * p + 1;
      }
    }
    return p - leaf_count;
  }
};

struct prioritized_baseline_fixture {
  std::size_t num_envs;  // the batch size
  host_storage storage;
  host_batch batch;
  vector_sum_tree tree{transitions};
  std::vector<float> td;
  std::mt19937_64 gen{sample_seed};
  double max_priority = 1.0;
  prioritized_baseline_fixture(std::size_t b, int) : num_envs(b), batch(b), td(make_td(b, 7)) {
    const std::vector<float> td_all = make_td(transitions, 3);
    for (std::size_t i = 0; i < transitions; ++i) {
      const double p = std::fabs(double(td_all[i])) + epsilon;
      max_priority = std::max(max_priority, p);
      tree.nodes[tree.leaf_count + i] = std::pow(p, alpha);
    }
    for (std::size_t p = tree.leaf_count - 1; p >= 1; --p) tree.nodes[p] = tree.nodes[2 * p] + tree.nodes[2 * p + 1];
  }
};

void BM_prioritized_baseline(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto& f = fixture_for<prioritized_baseline_fixture>(b, 0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (auto _ : state) {
    const double total = f.tree.nodes[1], segment = total / double(b);
    double p_min = 1e300;
    for (std::size_t k = 0; k < b; ++k) {
      const std::size_t i = f.tree.find((double(k) + unit(f.gen)) * segment);
      f.batch.indices[k] = i;
      p_min = std::min(p_min, f.tree.nodes[f.tree.leaf_count + i]);
    }
    for (std::size_t k = 0; k < b; ++k)
      f.batch.weights[k] = float(std::pow(p_min / f.tree.nodes[f.tree.leaf_count + f.batch.indices[k]], beta));
    f.batch.gather(f.storage);
    for (std::size_t k = 0; k < b; ++k) {
      const double p = std::fabs(double(f.td[k])) + epsilon;
      f.max_priority = std::max(f.max_priority, p);
      f.tree.set(f.batch.indices[k], std::pow(p, alpha));
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string backend = rlk::backend_name(bench_backend{});
  for (const std::int64_t b : batch_sizes) {
    rlk_bench::add_row("BM_uniform_sample/" + backend, BM_uniform_sample, b, min_time_s);
    rlk_bench::add_row("BM_uniform_baseline/serial", BM_uniform_baseline, b, min_time_s);
  }
  for (const std::int64_t b : batch_sizes) {
    rlk_bench::add_row("BM_prioritized_sample/" + backend, BM_prioritized<false>, b, min_time_s);
    rlk_bench::add_row("BM_prioritized_sample_update/" + backend, BM_prioritized<true>, b, min_time_s);
    rlk_bench::add_row("BM_prioritized_baseline/serial", BM_prioritized_baseline, b, min_time_s);
  }
  return rlk_bench::run_registered_benchmarks(argc, argv, "replay_bench");
}
