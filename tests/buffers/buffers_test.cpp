// replay_buffer and rollout_buffer: filling from a real vec_env, wrap-around, uniform sampling
// (range, frequencies, determinism), 1-step and n-step gathers against a float64 reference that
// walks logical time, GAE on the stored rollout against a plain float64 loop, the shuffle
// (a permutation, keyed by (seed, epoch), equal to a host recomputation) and minibatch coverage;
// input validation that changes nothing on rejection, and memory checks before allocating.
#include <rlkernels/buffers/replay_buffer.hpp>
#include <rlkernels/buffers/rollout_buffer.hpp>
#include <rlkernels/envs/cartpole.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../test_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace rlkernels;

namespace {

using B = rlk_test::backend_t;
using u8 = std::uint8_t;
using u64 = std::uint64_t;

template <class T>
buffer<T, B> to_device(const std::vector<T>& host) {
  return buffer<T, B>(rlk_test::backend(), host);
}

/// Writes host values into a view of backend memory.
template <class T>
void put(view<T> dst, const std::vector<T>& host) {
  const buffer<T, B> tmp = to_device(host);
  copy(rlk_test::backend(), tmp.cview(), dst);
  synchronize(rlk_test::backend());
}

/// One hand-built vec_env step of N envs (host side), and its copy in backend memory.
struct step_data {
  std::vector<double> obs, next_obs, rewards;
  std::vector<std::int32_t> actions;
  std::vector<u8> terminated, truncated;
};

constexpr int kObs = 2;

/// Step `tau` (logical time) of N envs: values that identify (tau, env); done flags from `flags`
/// (0: none, 1: terminated, 2: truncated, 3: both) indexed by [tau][env].
step_data make_step(std::size_t tau, std::size_t n, const std::vector<std::vector<int>>& flags) {
  step_data s;
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < kObs; ++k) {
      s.obs.push_back(1000.0 * double(tau) + 10.0 * double(i) + k);
      s.next_obs.push_back(1000.0 * double(tau) + 10.0 * double(i) + k + 0.5);
    }
    s.actions.push_back(std::int32_t(tau * 7 + i));
    s.rewards.push_back(1.0 + 0.37 * double(tau) - 0.11 * double(i) + 0.013 * double(tau * tau % 17));
    const int f = tau < flags.size() && i < flags[tau].size() ? flags[tau][i] : 0;
    s.terminated.push_back(u8(f & 1));
    s.truncated.push_back(u8((f >> 1) & 1));
  }
  return s;
}

template <class Buffer>
void add_step(Buffer& rb, const step_data& s) {
  const auto obs = to_device(s.obs), next = to_device(s.next_obs), rew = to_device(s.rewards);
  const auto act = to_device(s.actions);
  const auto term = to_device(s.terminated), trunc = to_device(s.truncated);
  rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
  synchronize(rlk_test::backend());
}

using replay_t = replay_buffer<double, std::int32_t, B>;
using batch_t = replay_batch<double, std::int32_t, B>;

/// Slots 0 .. count-1 in backend memory.
buffer<u64, B> all_slots(std::size_t count) {
  std::vector<u64> v(count);
  std::iota(v.begin(), v.end(), u64(0));
  return to_device(v);
}

/// The float64 n-step reference, written on logical time: slot s holds the latest step tau with
/// tau % C == s / N among the `steps` added; the window is tau, tau+1, ... while the step exists
/// (tau + j < steps), ending after a done step or after n steps.
struct n_step_ref {
  double reward = 0, discount = 1;
  std::size_t last_tau = 0;
  int m = 0;
};
n_step_ref reference_n_step(const std::vector<step_data>& steps, std::size_t capacity_steps, std::size_t n_envs,
                            u64 slot, int n, double gamma) {
  const std::size_t row = std::size_t(slot / n_envs), env = std::size_t(slot % n_envs);
  std::size_t tau = row;
  while (tau + capacity_steps < steps.size()) tau += capacity_steps;  // the latest step written to that row
  n_step_ref r;
  for (std::size_t j = tau; j < steps.size(); ++j) {
    r.reward += r.discount * steps[j].rewards[env];
    r.discount *= gamma;
    r.last_tau = j;
    ++r.m;
    if (steps[j].terminated[env] || steps[j].truncated[env] || r.m == n) break;
  }
  return r;
}

const std::vector<std::vector<int>> kFlags = {
    // env:  0  1  2
    {0, 0, 0},  // tau 0
    {0, 1, 0},  // 1
    {0, 0, 2},  // 2
    {3, 0, 0},  // 3
    {0, 0, 0},  // 4
    {0, 2, 1},  // 5
    {0, 0, 0},  // 6
    {1, 0, 0},  // 7
    {0, 0, 0},  // 8
    {0, 0, 0},  // 9
    {0, 1, 0},  // 10
};

std::string message_of(const std::exception& e) { return e.what(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// replay_buffer
// ---------------------------------------------------------------------------------------------

TEST_CASE("replay: wrap-around overwrites the oldest rows; size, head and rows_added follow", "[replay]") {
  const std::size_t C = 3, N = 2;
  replay_t rb(rlk_test::backend(), C, N, kObs, 1);
  CHECK(rb.size() == 0);
  CHECK(rb.capacity() == C * N);
  CHECK(rb.head_row() == 0);
  CHECK(rb.num_envs() == N);
  std::vector<step_data> steps;
  for (std::size_t tau = 0; tau < 5; ++tau) {
    steps.push_back(make_step(tau, N, kFlags));
    add_step(rb, steps.back());
    CHECK(rb.rows_added() == tau + 1);
    CHECK(rb.rows_stored() == std::min<std::size_t>(tau + 1, C));
    CHECK(rb.size() == std::min<std::size_t>(tau + 1, C) * N);
    CHECK(rb.head_row() == (tau + 1) % C);
  }
  // Rows now hold steps 3, 4, 2: the two oldest (0, 1) were overwritten.
  const std::size_t expected_tau[C] = {3, 4, 2};
  const auto obs = rb.observations().to_host(), next = rb.next_observations().to_host(), rew = rb.rewards().to_host();
  const auto act = rb.actions().to_host();
  const auto term = rb.terminated().to_host(), trunc = rb.truncated().to_host();
  for (std::size_t r = 0; r < C; ++r) {
    const step_data& s = steps[expected_tau[r]];
    for (std::size_t i = 0; i < N; ++i) {
      const std::size_t slot = r * N + i;
      for (int k = 0; k < kObs; ++k) {
        CHECK(obs[slot * kObs + k] == s.obs[i * kObs + k]);
        CHECK(next[slot * kObs + k] == s.next_obs[i * kObs + k]);
      }
      CHECK(act[slot] == s.actions[i]);
      CHECK(rew[slot] == s.rewards[i]);
      CHECK(term[slot] == s.terminated[i]);
      CHECK(trunc[slot] == s.truncated[i]);
    }
  }
}

TEST_CASE("replay: filled from a vec_env, gather returns exactly the stored transitions", "[replay][vec_env]") {
  using env_t = vec_env<cartpole<double>, B>;
  cartpole<double>::Params params;
  params.max_episode_steps = 10;  // truncations, and (pushing one way) terminations, some on the same step
  const std::size_t N = 6, steps = 24, C = 32;
  env_t env(rlk_test::backend(), N, 42, params);
  replay_t rb(rlk_test::backend(), C, N, env_t::observation_size, env_t::action_width);

  std::vector<double> obs_log, final_log, reward_log;
  std::vector<std::int32_t> action_log;
  std::vector<u8> term_log, trunc_log;
  buffer<double, B> obs_before(rlk_test::backend(), N * env_t::observation_size);
  for (std::size_t t = 0; t < steps; ++t) {
    copy(rlk_test::backend(), env.observations().cview(), obs_before.view());
    std::vector<std::int32_t> a(N);
    for (std::size_t i = 0; i < N; ++i) a[i] = i < 3 ? 1 : std::int32_t((t + i) % 2);
    const auto actions = to_device(a);
    env.step(actions.cview());
    rb.add(obs_before.cview(), actions.cview(), env);
    const auto o = obs_before.to_host(), f = env.final_observations().to_host(), r = env.rewards().to_host();
    const auto te = env.terminated().to_host(), tr = env.truncated().to_host();
    obs_log.insert(obs_log.end(), o.begin(), o.end());
    final_log.insert(final_log.end(), f.begin(), f.end());
    reward_log.insert(reward_log.end(), r.begin(), r.end());
    action_log.insert(action_log.end(), a.begin(), a.end());
    term_log.insert(term_log.end(), te.begin(), te.end());
    trunc_log.insert(trunc_log.end(), tr.begin(), tr.end());
  }
  REQUIRE(std::count(term_log.begin(), term_log.end(), u8(1)) > 0);
  REQUIRE(std::count(trunc_log.begin(), trunc_log.end(), u8(1)) > 0);
  REQUIRE(rb.size() == steps * N);

  const std::size_t count = rb.size();
  const auto indices = all_slots(count);
  batch_t batch(rlk_test::backend(), count, env_t::observation_size, env_t::action_width);
  rb.gather(indices.cview(), batch);
  const auto bo = batch.observations.to_host(), bn = batch.next_observations.to_host(), br = batch.rewards.to_host();
  const auto ba = batch.actions.to_host();
  const auto bi = batch.indices.to_host();
  const auto bt = batch.terminated.to_host(), bu = batch.truncated.to_host();
  const int obs = env_t::observation_size;
  std::size_t ended_checked = 0;
  for (std::size_t s = 0; s < count; ++s) {
    CHECK(bi[s] == s);
    for (int k = 0; k < obs; ++k) {
      CHECK(bo[s * obs + k] == obs_log[s * obs + k]);
      CHECK(bn[s * obs + k] == final_log[s * obs + k]);
    }
    CHECK(ba[s] == action_log[s]);
    CHECK(br[s] == reward_log[s]);
    CHECK(bt[s] == term_log[s]);
    CHECK(bu[s] == trunc_log[s]);
    if ((term_log[s] || trunc_log[s]) && s + N < count) {
      // Where the episode ended, s' is the final observation, not the next episode's first one.
      bool differs = false;
      for (int k = 0; k < obs; ++k) differs |= bn[s * obs + k] != obs_log[(s + N) * obs + k];
      CHECK(differs);
      ++ended_checked;
    }
  }
  CHECK(ended_checked > 0);
}

TEST_CASE("replay: sampling draws only written slots, uniformly", "[replay][sampling]") {
  const std::size_t C = 100, N = 3;
  replay_t rb(rlk_test::backend(), C, N, kObs, 1);
  for (std::size_t tau = 0; tau < 7; ++tau) add_step(rb, make_step(tau, N, kFlags));
  REQUIRE(rb.size() == 21);
  const std::size_t draws = 21000;
  buffer<u64, B> indices(rlk_test::backend(), draws);
  rb.sample_indices(2024, 5, indices.view());
  const auto idx = indices.to_host();
  std::vector<double> counts(rb.size(), 0.0);
  for (u64 i : idx) {
    REQUIRE(i < rb.size());
    counts[std::size_t(i)] += 1;
  }
  // Pearson's chi-square against uniform: 20 degrees of freedom, 45.3 is the 0.999 quantile.
  const double expected = double(draws) / double(rb.size());
  double chi2 = 0;
  for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
  CHECK(chi2 < 45.3);
  CHECK(chi2 > 8.26);  // the 0.01 quantile: too good a fit is suspicious as well

  // Full after wrap-around: every slot can be drawn.
  replay_t small(rlk_test::backend(), 4, N, kObs, 1);
  for (std::size_t tau = 0; tau < 9; ++tau) add_step(small, make_step(tau, N, kFlags));
  buffer<u64, B> more(rlk_test::backend(), 4000);
  small.sample_indices(1, 0, more.view());
  std::vector<int> seen(small.capacity(), 0);
  for (u64 i : more.to_host()) {
    REQUIRE(i < small.capacity());
    seen[std::size_t(i)] = 1;
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == int(small.capacity()));
}

TEST_CASE("replay: indices are a pure function of (seed, draw, k), the same as a host recomputation", "[replay][determinism]") {
  const std::size_t N = 5;
  replay_t rb(rlk_test::backend(), 50, N, kObs, 1);
  for (std::size_t tau = 0; tau < 13; ++tau) add_step(rb, make_step(tau, N, kFlags));
  const std::size_t count = 777;
  buffer<u64, B> a(rlk_test::backend(), count), b(rlk_test::backend(), count), c(rlk_test::backend(), count),
      d(rlk_test::backend(), count);
  rb.sample_indices(99, 3, a.view());
  rb.sample_indices(99, 3, b.view());
  rb.sample_indices(99, 4, c.view());
  rb.sample_indices(100, 3, d.view());
  const auto ha = a.to_host(), hb = b.to_host(), hc = c.to_host(), hd = d.to_host();
  CHECK(ha == hb);
  CHECK(ha != hc);
  CHECK(ha != hd);
  for (std::size_t k = 0; k < count; ++k) {
    rng gen(99, 3, k);
    REQUIRE(ha[k] == detail::uniform_index64(gen, rb.size()));
  }
  // A prefix of a larger draw is the smaller draw (index k does not depend on the batch size).
  buffer<u64, B> prefix(rlk_test::backend(), 10);
  rb.sample_indices(99, 3, prefix.view());
  const auto hp = prefix.to_host();
  CHECK(std::equal(hp.begin(), hp.end(), ha.begin()));
}

TEST_CASE("replay: sharded sampling draws shard s's env columns only, as a buffer of those columns alone would",
          "[replay][sampling][distributed]") {
  // Six env columns in 3 shards of 2: part s of the batch comes from columns 2s, 2s + 1 with key
  // seeds[s], and names the same transitions as a buffer holding only those columns (a
  // data-parallel rank's) sampled with one key.
  const std::size_t N = 6, shards = 3, cols = N / shards, batch = 300;
  replay_t whole(rlk_test::backend(), 7, N, kObs, 1);  // wraps around: 13 steps into 7 rows
  for (std::size_t tau = 0; tau < 13; ++tau) add_step(whole, make_step(tau, N, kFlags));
  const std::vector<u64> seeds = {11, 12, 13};
  buffer<u64, B> idx(rlk_test::backend(), batch);
  whole.sample_indices_sharded(seeds, 4, idx.view());
  const auto h = idx.to_host();
  const std::size_t per = batch / shards;
  for (std::size_t s = 0; s < shards; ++s) {
    for (std::size_t k = 0; k < per; ++k) {
      const u64 slot = h[s * per + k];
      REQUIRE(slot < whole.size());
      REQUIRE(slot % N / cols == s);  // its env column is in shard s
      rng gen(seeds[s], 4, k);         // as one buffer of the shard's columns: slot' = row * cols + column
      const u64 local = detail::uniform_index64(gen, whole.rows_stored() * cols);
      REQUIRE(slot == (local / cols) * N + s * cols + local % cols);
    }
  }
  // One seed is plain sampling; bad shard counts are refused.
  buffer<u64, B> plain(rlk_test::backend(), batch);
  whole.sample_indices(11, 4, plain.view());
  whole.sample_indices_sharded({11}, 4, idx.view());
  CHECK(idx.to_host() == plain.to_host());
  CHECK_THROWS_WITH(whole.sample_indices_sharded({1, 2, 3, 4}, 0, idx.view()), Catch::Contains("4 shards must divide"));
  CHECK_THROWS_AS(whole.sample_indices_sharded({}, 0, idx.view()), std::invalid_argument);
}

TEST_CASE("replay: 64-bit uniform integers are exact beyond 2^32", "[replay][sampling]") {
  // The fast 128-bit product agrees with the portable one.
  rng bits(7, 0);
  for (int k = 0; k < 1000; ++k) {
    const u64 x = bits.next_u64(), y = bits.next_u64();
    REQUIRE(detail::mulhi64(x, y) == detail::mulhi64_portable(x, y));
  }
  CHECK(detail::mulhi64_portable(~u64(0), ~u64(0)) == ~u64(0) - 1);
  // n = 3 * 2^62: a quarter of the raw draws are rejected; the thirds must be equally likely.
  const u64 n = 3 * (u64(1) << 62);
  double thirds[3] = {0, 0, 0};
  const int draws = 30000;
  for (int k = 0; k < draws; ++k) {
    rng gen(11, 0, u64(k));
    const u64 v = detail::uniform_index64(gen, n);
    REQUIRE(v < n);
    thirds[v >> 62] += 1;
  }
  for (double t : thirds) CHECK(std::abs(t / draws - 1.0 / 3.0) < 0.015);
  // n just above 2^32: the high bits are used (a 32-bit draw would never exceed 2^32).
  const u64 big = (u64(1) << 32) + 12345;
  int above = 0;
  for (int k = 0; k < 2000; ++k) {
    rng gen(3, 1, u64(k));
    const u64 v = detail::uniform_index64(gen, big);
    REQUIRE(v < big);
    above += v >= (u64(1) << 31);
  }
  CHECK(std::abs(above / 2000.0 - 0.5) < 0.05);
}

TEST_CASE("replay: n-step gathers equal a float64 reference: stop at done, at n and at the write head", "[replay][n_step]") {
  const std::size_t C = 6, N = 3;
  const double gamma = 0.9;
  for (std::size_t added : {std::size_t(1), std::size_t(4), std::size_t(6), std::size_t(9), std::size_t(11)}) {
    replay_t rb(rlk_test::backend(), C, N, kObs, 1);
    std::vector<step_data> steps;
    for (std::size_t tau = 0; tau < added; ++tau) {
      steps.push_back(make_step(tau, N, kFlags));
      add_step(rb, steps.back());
    }
    const std::size_t count = rb.size();
    const auto indices = all_slots(count);
    for (int n : {1, 2, 3, 5, 10}) {
      CAPTURE(added, n);
      batch_t batch(rlk_test::backend(), count, kObs, 1);
      rb.gather_n_step(indices.cview(), n, gamma, batch);
      const auto rew = batch.rewards.to_host(), disc = batch.discounts.to_host(), next = batch.next_observations.to_host();
      const auto obs = batch.observations.to_host();
      const auto term = batch.terminated.to_host(), trunc = batch.truncated.to_host();
      bool stopped_by_head = false;
      for (u64 s = 0; s < count; ++s) {
        CAPTURE(s);
        const n_step_ref ref = reference_n_step(steps, C, N, s, n, gamma);
        const std::size_t env = std::size_t(s % N);
        const step_data& last = steps[ref.last_tau];
        CHECK(rew[s] == Approx(ref.reward).epsilon(1e-14));
        CHECK(disc[s] == Approx(ref.discount).epsilon(1e-14));
        CHECK(disc[s] == Approx(std::pow(gamma, ref.m)).epsilon(1e-14));
        for (int k = 0; k < kObs; ++k) {
          CHECK(next[s * kObs + k] == last.next_obs[env * kObs + k]);
          CHECK(obs[s * kObs + k] == steps[ref.last_tau + 1 - ref.m].obs[env * kObs + k]);
        }
        CHECK(term[s] == last.terminated[env]);
        CHECK(trunc[s] == last.truncated[env]);
        stopped_by_head |= ref.m < n && ref.last_tau + 1 == steps.size() && !last.terminated[env] && !last.truncated[env];
      }
      if (n > 1) CHECK(stopped_by_head);
    }
  }
  // The case the head rule exists for: after wrap-around the newest row's successor in the ring
  // is the oldest row; a window from the newest row must not read it.
  replay_t rb(rlk_test::backend(), 3, 1, kObs, 1);
  std::vector<step_data> steps;
  for (std::size_t tau = 0; tau < 5; ++tau) {
    steps.push_back(make_step(tau, 1, {}));
    add_step(rb, steps.back());
  }
  REQUIRE(rb.head_row() == 2);  // rows hold steps 3, 4, 2; newest = row 1, oldest = row 2
  const auto one = to_device(std::vector<u64>{1});
  batch_t batch(rlk_test::backend(), 1, kObs, 1);
  rb.gather_n_step(one.cview(), 3, gamma, batch);
  CHECK(batch.rewards.get(0) == steps[4].rewards[0]);
  CHECK(batch.discounts.get(0) == gamma);
  CHECK(batch.next_observations.get(0) == steps[4].next_obs[0]);
  const auto oldest = to_device(std::vector<u64>{2});
  rb.gather_n_step(oldest.cview(), 3, gamma, batch);  // steps 2, 3, 4 across the ring's end
  CHECK(batch.rewards.get(0) ==
        Approx(steps[2].rewards[0] + gamma * steps[3].rewards[0] + gamma * gamma * steps[4].rewards[0]).epsilon(1e-14));
}

TEST_CASE("replay: gather leaves discounts and weights; sample fills everything", "[replay]") {
  const std::size_t N = 3;
  replay_t rb(rlk_test::backend(), 8, N, kObs, 1);
  std::vector<step_data> steps;
  for (std::size_t tau = 0; tau < 6; ++tau) {
    steps.push_back(make_step(tau, N, kFlags));
    add_step(rb, steps.back());
  }
  batch_t batch(rlk_test::backend(), 64, kObs, 1);
  CHECK(batch.size() == 64);
  const auto w0 = batch.weights.to_host();
  CHECK(std::all_of(w0.begin(), w0.end(), [](double w) { return w == 1.0; }));
  batch.discounts.assign(std::vector<double>(64, -3.0));
  batch.weights.assign(std::vector<double>(64, 5.0));
  buffer<u64, B> idx(rlk_test::backend(), 64);
  rb.sample_indices(5, 1, idx.view());
  rb.gather(idx.cview(), batch);
  const auto d = batch.discounts.to_host(), w5 = batch.weights.to_host();
  CHECK(std::all_of(d.begin(), d.end(), [](double x) { return x == -3.0; }));
  CHECK(std::all_of(w5.begin(), w5.end(), [](double x) { return x == 5.0; }));
  CHECK(batch.indices.to_host() == idx.to_host());

  rb.sample(5, 1, batch, 3, 0.5);
  CHECK(batch.indices.to_host() == idx.to_host());
  const auto w = batch.weights.to_host();
  CHECK(std::all_of(w.begin(), w.end(), [](double x) { return x == 1.0; }));
  batch_t reference(rlk_test::backend(), 64, kObs, 1);
  rb.gather_n_step(idx.cview(), 3, 0.5, reference);
  CHECK(batch.rewards.to_host() == reference.rewards.to_host());
  CHECK(batch.discounts.to_host() == reference.discounts.to_host());
  CHECK(batch.next_observations.to_host() == reference.next_observations.to_host());
  rb.sample(5, 1, batch);  // n = 1: discounts = gamma
  const auto d1 = batch.discounts.to_host();
  CHECK(std::all_of(d1.begin(), d1.end(), [](double x) { return x == 0.99; }));
}

TEST_CASE("replay: continuous actions of width 2 in float", "[replay]") {
  replay_buffer<float, float, B> rb(rlk_test::backend(), 4, 2, 3, 2);
  const auto obs = to_device(std::vector<float>{1, 2, 3, 4, 5, 6}), next = to_device(std::vector<float>{7, 8, 9, 10, 11, 12});
  const auto act = to_device(std::vector<float>{0.5f, -0.5f, 0.25f, -0.25f}), rew = to_device(std::vector<float>{1, 2});
  const auto flags = to_device(std::vector<u8>{0, 1});
  rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), flags.cview(), flags.cview());
  replay_batch<float, float, B> batch(rlk_test::backend(), 1, 3, 2);
  const auto one = to_device(std::vector<u64>{1});
  rb.gather(one.cview(), batch);
  CHECK(batch.actions.to_host() == std::vector<float>{0.25f, -0.25f});
  CHECK(batch.observations.to_host() == std::vector<float>{4, 5, 6});
  CHECK(batch.next_observations.to_host() == std::vector<float>{10, 11, 12});
  CHECK(batch.rewards.get(0) == 2.0f);
  CHECK(batch.terminated.get(0) == 1);
}

TEST_CASE("replay: bad arguments are rejected and change nothing", "[replay][errors]") {
  const std::size_t N = 3;
  replay_t rb(rlk_test::backend(), 4, N, kObs, 1);
  batch_t batch(rlk_test::backend(), 2, kObs, 1);
  const auto two = to_device(std::vector<u64>{0, 1});
  buffer<u64, B> idx(rlk_test::backend(), 2);
  // Empty buffer.
  CHECK_THROWS_AS(rb.sample_indices(1, 0, idx.view()), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather(two.cview(), batch), std::invalid_argument);
  CHECK_THROWS_AS(rb.sample(1, 0, batch), std::invalid_argument);

  const step_data s0 = make_step(0, N, kFlags);
  add_step(rb, s0);
  const step_data s1 = make_step(1, N, kFlags);
  const auto obs = to_device(s1.obs), next = to_device(s1.next_obs), rew = to_device(s1.rewards);
  const auto act = to_device(s1.actions);
  const auto term = to_device(s1.terminated), trunc = to_device(s1.truncated);
  const auto short_obs = to_device(std::vector<double>(N * kObs - 1));
  const auto obs_before = rb.observations().to_host(), rew_before = rb.rewards().to_host();
  try {
    rb.add(obs.cview(), act.cview(), rew.cview(), short_obs.cview(), term.cview(), trunc.cview());
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(message_of(e), Catch::Contains("next_observations") && Catch::Contains("5 elements, expected 6"));
  }
  CHECK_THROWS_AS(rb.add(obs.cview(), act.cview(), view<const double>(nullptr, N), next.cview(), term.cview(), trunc.cview()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), view<const u8>()),
                  std::invalid_argument);
  CHECK(rb.rows_added() == 1);
  CHECK(rb.head_row() == 1);
  CHECK(rb.size() == N);
  CHECK(rb.observations().to_host() == obs_before);
  CHECK(rb.rewards().to_host() == rew_before);

  // gather: an index past the stored slots, a size mismatch, n < 1, gamma outside [0, 1].
  rb.gather(two.cview(), batch);
  const auto rewards_before = batch.rewards.to_host();
  const auto out_of_range = to_device(std::vector<u64>{0, u64(N)});
  try {
    rb.gather(out_of_range.cview(), batch);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(message_of(e), Catch::Contains("index 3 is out of range [0, 3)"));
  }
  CHECK_THROWS_AS(rb.gather_n_step(out_of_range.cview(), 2, 0.9, batch), std::invalid_argument);
  const auto three = to_device(std::vector<u64>{0, 1, 2});
  CHECK_THROWS_AS(rb.gather(three.cview(), batch), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather_n_step(two.cview(), 0, 0.9, batch), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather_n_step(two.cview(), 1, 1.5, batch), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather_n_step(two.cview(), 1, std::numeric_limits<double>::quiet_NaN(), batch), std::invalid_argument);
  batch_t wrong_shape(rlk_test::backend(), 2, kObs + 1, 1);
  CHECK_THROWS_AS(rb.gather(two.cview(), wrong_shape), std::invalid_argument);
  const auto idx_before = batch.indices.to_host();
  CHECK_THROWS_AS(rb.sample(1, 0, batch, 0), std::invalid_argument);
  CHECK(batch.indices.to_host() == idx_before);
  CHECK(batch.rewards.to_host() == rewards_before);
  CHECK_THROWS_AS(rb.sample_indices(1, 0, view<u64>(nullptr, 4)), std::invalid_argument);

  // Constructor arguments.
  CHECK_THROWS_AS(replay_t(rlk_test::backend(), 0, N, kObs, 1), std::invalid_argument);
  CHECK_THROWS_AS(replay_t(rlk_test::backend(), 4, 0, kObs, 1), std::invalid_argument);
  CHECK_THROWS_AS(replay_t(rlk_test::backend(), 4, N, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(replay_t(rlk_test::backend(), 4, N, kObs, 0), std::invalid_argument);
  CHECK_THROWS_AS(batch_t(rlk_test::backend(), 4, kObs, -1), std::invalid_argument);
}

TEST_CASE("replay: one add and one sample never wait for the host, at any batch size and capacity", "[replay][host_sync]") {
  REQUIRE(host_sync_counting_enabled);
  for (const std::size_t capacity_steps : {std::size_t(4), std::size_t(300)}) {
    for (const std::size_t batch_size : {std::size_t(1), std::size_t(64), std::size_t(5000)}) {
      INFO("capacity_steps " << capacity_steps << ", batch " << batch_size);
      const std::size_t N = 3;
      replay_t rb(rlk_test::backend(), capacity_steps, N, kObs, 1);
      batch_t batch(rlk_test::backend(), batch_size, kObs, 1);
      add_step(rb, make_step(0, N, kFlags));
      const step_data s = make_step(1, N, kFlags);
      const auto obs = to_device(s.obs), next = to_device(s.next_obs), rew = to_device(s.rewards);
      const auto act = to_device(s.actions);
      const auto term = to_device(s.terminated), trunc = to_device(s.truncated);
      const auto indices = to_device(std::vector<u64>(batch_size, 1));
      reset_host_sync_counts();
      rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
      rb.sample(7, 0, batch, 3, 0.9);
      rb.gather_unchecked(indices.cview(), batch);
      rb.gather_n_step_unchecked(indices.cview(), 2, 0.9, batch);
      CHECK(host_sync_counts().total() == 0);
      // The checked gathers return their index check to the host: one reduction each.
      rb.gather(indices.cview(), batch);
      rb.gather_n_step(indices.cview(), 2, 0.9, batch);
      const host_sync_counts_t c = host_sync_counts();
      CHECK(c.reductions == 2);
      CHECK(c.total() == 2);
    }
  }
}

TEST_CASE("replay: add checks each new pointer's memory once and remembers the accepted ones", "[replay][errors]") {
  const std::size_t N = 3;
  replay_t rb(rlk_test::backend(), 4, N, kObs, 1);
  const step_data s = make_step(0, N, kFlags);
  const auto obs = to_device(s.obs), next = to_device(s.next_obs), rew = to_device(s.rewards);
  const auto act = to_device(s.actions);
  const auto term = to_device(s.terminated), trunc = to_device(s.truncated);
  const auto other_rewards = to_device(s.rewards);
  rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
  rb.add(obs.cview(), act.cview(), other_rewards.cview(), next.cview(), term.cview(), trunc.cview());  // a new pointer
  rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());            // and back
  CHECK(rb.rows_added() == 3);
  CHECK(rb.rewards().to_host() == std::vector<double>{s.rewards[0], s.rewards[1], s.rewards[2], s.rewards[0],
                                                      s.rewards[1], s.rewards[2], s.rewards[0], s.rewards[1],
                                                      s.rewards[2], 0.0, 0.0, 0.0});
  if (rlk_test::on_cuda) {
    // Host memory in place of an accepted device pointer is still refused, naming the argument,
    // and changes nothing; the accepted pointer still works after it.
    const std::vector<double> host_rewards = s.rewards;
    try {
      rb.add(obs.cview(), act.cview(), view<const double>(host_rewards.data(), N), next.cview(), term.cview(),
             trunc.cview());
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(message_of(e), Catch::Contains("rewards") && Catch::Contains("device (or managed) memory"));
    }
    CHECK(rb.rows_added() == 3);
    rb.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
    CHECK(rb.rows_added() == 4);
  }
}

TEST_CASE("replay: bytes_required, and an absurd capacity fails before allocating", "[replay][memory]") {
  // Per slot: 2 observations of 3 doubles, 1 int32 action, a double reward, 2 flag bytes.
  CHECK(replay_t::bytes_required(10, 4, 3, 1) == 10 * 4 * (2 * 3 * 8 + 4 + 8 + 2));
  CHECK(batch_t::bytes_required(5, 3, 1) == 5 * (8 + 2 * 3 * 8 + 4 + 3 * 8 + 2));
  const std::size_t steps = std::size_t(1) << 40;
  const std::size_t bytes = replay_t::bytes_required(steps, 4, 3, 1);
  try {
    replay_t rb(rlk_test::backend(), steps, 4, 3, 1);
    FAIL("no exception");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == bytes);
    CHECK_THAT(message_of(e), Catch::Contains("replay_buffer") && Catch::Contains(std::to_string(bytes) + " bytes"));
  }
  try {
    replay_t rb(rlk_test::backend(), std::size_t(1) << 62, 1024, 3, 1);
    FAIL("no exception");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == std::size_t(-1));
    CHECK_THAT(message_of(e), Catch::Contains("overflows"));
  }
}

// ---------------------------------------------------------------------------------------------
// rollout_buffer
// ---------------------------------------------------------------------------------------------

namespace {

using rollout_t = rollout_buffer<double, std::int32_t, B>;
using minibatch_t = rollout_minibatch<double, std::int32_t, B>;

/// A fixed, nonlinear "value function" of a CartPole observation.
double value_of(const double* s) { return 1.0 + 0.5 * s[0] - 0.25 * s[1] + 2.0 * std::sin(s[2]) + 0.125 * s[3] * s[3]; }

std::vector<double> values_of(const std::vector<double>& obs, int obs_size) {
  std::vector<double> v(obs.size() / std::size_t(obs_size));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = value_of(&obs[i * std::size_t(obs_size)]);
  return v;
}

/// What the test recorded on the host while filling a rollout from a vec_env.
struct rollout_log {
  std::vector<double> obs, log_probs, values, rewards, bootstrap, last_values;
  std::vector<std::int32_t> actions;
  std::vector<u8> terminated, truncated;
};

/// Fills `rb` from a CartPole vec_env the way a PPO runner does, recording everything on the host.
rollout_log fill_from_env(rollout_t& rb) {
  using env_t = vec_env<cartpole<double>, B>;
  cartpole<double>::Params params;
  params.max_episode_steps = 10;
  const std::size_t N = rb.num_envs(), T = rb.num_steps();
  const int obs = env_t::observation_size;
  env_t env(rlk_test::backend(), N, 42, params);
  rollout_log log;
  for (std::size_t t = 0; t < T; ++t) {
    rb.store_observations(t, env);
    const auto o = env.observations().to_host();
    std::vector<std::int32_t> a(N);
    std::vector<double> lp(N);
    for (std::size_t i = 0; i < N; ++i) {
      a[i] = i < 3 ? 1 : std::int32_t((t + i) % 2);
      lp[i] = -0.1 * double(t + 1) - 0.01 * double(i);
    }
    const std::vector<double> v = values_of(o, obs);
    put(rb.actions_at(t), a);
    put(rb.log_probs_at(t), lp);
    put(rb.values_at(t), v);
    env.step(rb.actions_at(t));
    rb.store_outcome(t, env);
    const std::vector<double> bootstrap = values_of(env.final_observations().to_host(), obs);
    put(rb.bootstrap_values_at(t), bootstrap);
    const auto r = env.rewards().to_host();
    const auto te = env.terminated().to_host(), tr = env.truncated().to_host();
    log.obs.insert(log.obs.end(), o.begin(), o.end());
    log.actions.insert(log.actions.end(), a.begin(), a.end());
    log.log_probs.insert(log.log_probs.end(), lp.begin(), lp.end());
    log.values.insert(log.values.end(), v.begin(), v.end());
    log.rewards.insert(log.rewards.end(), r.begin(), r.end());
    log.terminated.insert(log.terminated.end(), te.begin(), te.end());
    log.truncated.insert(log.truncated.end(), tr.begin(), tr.end());
    log.bootstrap.insert(log.bootstrap.end(), bootstrap.begin(), bootstrap.end());
  }
  log.last_values = values_of(env.observations().to_host(), obs);
  put(rb.last_values_view(), log.last_values);
  return log;
}

/// Plain float64 GAE with explicit masks (docs/episode-end-contract.md).
void reference_gae(const rollout_log& log, std::size_t T, std::size_t N, double gamma, double lambda,
                   std::vector<double>& adv, std::vector<double>& ret) {
  adv.assign(T * N, 0.0);
  ret.assign(T * N, 0.0);
  for (std::size_t i = 0; i < N; ++i) {
    double a = 0;
    for (std::size_t t = T; t-- > 0;) {
      const std::size_t k = t * N + i;
      const double term = log.terminated[k], done = (log.terminated[k] || log.truncated[k]) ? 1.0 : 0.0;
      // V of the true next state: the final observation where the episode ended, else s_{t+1}.
      const double v_next = log.truncated[k] || log.terminated[k] ? log.bootstrap[k]
                            : t + 1 < T                          ? log.values[k + N]
                                                                 : log.last_values[i];
      const double delta = log.rewards[k] + gamma * (1.0 - term) * v_next - log.values[k];
      a = delta + gamma * lambda * (1.0 - done) * a;
      adv[k] = a;
      ret[k] = a + log.values[k];
    }
  }
}

/// The permutation shuffle() must produce, recomputed on the host.
std::vector<u64> reference_permutation(u64 seed, u64 epoch, std::size_t n) {
  std::vector<u64> keys(n), perm(n);
  for (std::size_t i = 0; i < n; ++i) {
    rng gen(seed, epoch, i);
    keys[i] = gen.next_u64();
  }
  std::iota(perm.begin(), perm.end(), u64(0));
  std::stable_sort(perm.begin(), perm.end(), [&](u64 a, u64 b) { return keys[a] < keys[b]; });
  return perm;
}

bool is_permutation_of_range(const std::vector<u64>& p) {
  std::vector<int> seen(p.size(), 0);
  for (u64 x : p) {
    if (x >= p.size() || seen[std::size_t(x)]) return false;
    seen[std::size_t(x)] = 1;
  }
  return true;
}

}  // namespace

TEST_CASE("rollout: filled from a vec_env step by step, the arrays hold what the env produced", "[rollout][vec_env]") {
  const std::size_t T = 24, N = 6;
  rollout_t rb(rlk_test::backend(), T, N, 4, 1);
  CHECK(rb.size() == T * N);
  const rollout_log log = fill_from_env(rb);
  REQUIRE(std::count(log.terminated.begin(), log.terminated.end(), u8(1)) > 0);
  REQUIRE(std::count(log.truncated.begin(), log.truncated.end(), u8(1)) > 0);
  CHECK(rb.observations().to_host() == log.obs);
  CHECK(rb.actions().to_host() == log.actions);
  CHECK(rb.log_probs().to_host() == log.log_probs);
  CHECK(rb.values().to_host() == log.values);
  CHECK(rb.rewards().to_host() == log.rewards);
  CHECK(rb.terminated().to_host() == log.terminated);
  CHECK(rb.truncated().to_host() == log.truncated);
  CHECK(rb.bootstrap_values().to_host() == log.bootstrap);
  CHECK(rb.last_values().to_host() == log.last_values);
  const rollout_view<double> r = rb.rollout();
  CHECK(r.num_steps == T);
  CHECK(r.num_envs == N);
  CHECK(r.rewards.data() == rb.rewards().data());
  CHECK(r.last_values.size() == N);
}

TEST_CASE("rollout: compute_advantages equals a float64 GAE with explicit masks", "[rollout][gae]") {
  const std::size_t T = 24, N = 6;
  rollout_t rb(rlk_test::backend(), T, N, 4, 1);
  const rollout_log log = fill_from_env(rb);
  for (double lambda : {0.0, 0.95, 1.0}) {
    CAPTURE(lambda);
    rb.compute_advantages(0.99, lambda);
    std::vector<double> adv, ret;
    reference_gae(log, T, N, 0.99, lambda, adv, ret);
    const auto got_adv = rb.advantages().to_host(), got_ret = rb.returns().to_host();
    for (std::size_t k = 0; k < T * N; ++k) {
      CAPTURE(k);
      CHECK(got_adv[k] == Approx(adv[k]).epsilon(1e-12).margin(1e-12));
      CHECK(got_ret[k] == Approx(ret[k]).epsilon(1e-12).margin(1e-12));
    }
  }
  CHECK_THROWS_AS(rb.compute_advantages(1.5, 0.9), std::invalid_argument);
}

TEST_CASE("rollout: shuffle is a permutation keyed by (seed, epoch), equal to a host recomputation", "[rollout][shuffle]") {
  const std::size_t T = 9, N = 13;
  rollout_t rb(rlk_test::backend(), T, N, 4, 1);
  std::vector<u64> identity(T * N);
  std::iota(identity.begin(), identity.end(), u64(0));
  CHECK(rb.permutation().to_host() == identity);
  rb.shuffle(17, 0);
  const auto p0 = rb.permutation().to_host();
  CHECK(is_permutation_of_range(p0));
  CHECK(p0 == reference_permutation(17, 0, T * N));
  CHECK(p0 != identity);
  rb.shuffle(17, 1);
  const auto p1 = rb.permutation().to_host();
  CHECK(is_permutation_of_range(p1));
  CHECK(p1 != p0);
  rb.shuffle(18, 0);
  CHECK(rb.permutation().to_host() != p0);
  rb.shuffle(17, 0);
  CHECK(rb.permutation().to_host() == p0);

#if !defined(RLK_BACKEND_CUDA)
  // Serial and OpenMP (forced parallel, odd thread count) give the same permutation.
  const std::size_t big = 4099;
  rollout_buffer<double, std::int32_t, serial_backend> s(serial, big, 1, 1, 1);
  rollout_buffer<double, std::int32_t, openmp_backend> o(openmp_backend{3, 0}, big, 1, 1, 1);
  s.shuffle(5, 9);
  o.shuffle(5, 9);
  CHECK(s.permutation().to_host() == o.permutation().to_host());
  CHECK(is_permutation_of_range(o.permutation().to_host()));
#endif
}

TEST_CASE("rollout: shuffle_sharded gives the minibatches that S ranks shuffling their own envs give together",
          "[rollout][shuffle]") {
  // 3 shards of 4 envs, T = 6: minibatch k is the k-th M / 3 elements of each shard's own
  // shuffle (a rollout of 4 envs shuffled with that shard's seed), mapped to the big rollout's
  // elements, shard after shard. With one shard it is shuffle().
  const std::size_t T = 6, S = 3, n = 4, N = S * n, M = 12;
  const std::vector<u64> seeds = {17, 23, 99};
  rollout_t big(rlk_test::backend(), T, N, 1, 1);
  big.shuffle_sharded(seeds, 5, M);
  const auto perm = big.permutation().to_host();
  CHECK(is_permutation_of_range(perm));
  std::vector<u64> expected(T * N);
  for (std::size_t s = 0; s < S; ++s) {
    rollout_t small(rlk_test::backend(), T, n, 1, 1);
    small.shuffle(seeds[s], 5);
    const auto local = small.permutation().to_host();
    for (std::size_t k = 0; k < T * N / M; ++k)
      for (std::size_t j = 0; j < M / S; ++j) {
        const u64 e = local[k * (M / S) + j];
        expected[k * M + s * (M / S) + j] = (e / n) * N + s * n + e % n;
      }
  }
  CHECK(perm == expected);
  big.shuffle_sharded({17}, 5, M);
  CHECK(big.permutation().to_host() == reference_permutation(17, 5, T * N));
  CHECK_THROWS_WITH(big.shuffle_sharded({1, 2, 3, 4, 5}, 0, M), Catch::Contains("5 shards do not split the 12 envs"));
  CHECK_THROWS_WITH(big.shuffle_sharded(seeds, 0, 8), Catch::Contains("the minibatch size 8 must divide"));
}

TEST_CASE("rollout: minibatches cover every element exactly once per epoch, with its data", "[rollout][minibatch]") {
  const std::size_t T = 5, N = 7, M = 8;  // 35 elements: 4 minibatches of 8 and one of 3
  rollout_t rb(rlk_test::backend(), T, N, 4, 1);
  const rollout_log log = fill_from_env(rb);
  rb.compute_advantages(0.99, 0.95);
  const auto adv = rb.advantages().to_host(), ret = rb.returns().to_host();
  REQUIRE(rb.num_minibatches(M) == 5);
  for (u64 epoch = 0; epoch < 2; ++epoch) {
    rb.shuffle(3, epoch);
    const auto perm = rb.permutation().to_host();
    std::vector<int> seen(T * N, 0);
    for (std::size_t k = 0; k < rb.num_minibatches(M); ++k) {
      const std::size_t m = std::min(M, T * N - k * M);
      minibatch_t mb(rlk_test::backend(), m, 4, 1);
      rb.gather_minibatch(k, M, mb);
      const auto idx = mb.indices.to_host();
      const auto act = mb.actions.to_host();
      const auto obs = mb.observations.to_host(), lp = mb.log_probs.to_host(), val = mb.values.to_host(),
                 a = mb.advantages.to_host(), r = mb.returns.to_host();
      for (std::size_t j = 0; j < m; ++j) {
        const std::size_t e = std::size_t(idx[j]);
        REQUIRE(e < T * N);
        CHECK(idx[j] == perm[k * M + j]);
        ++seen[e];
        for (int c = 0; c < 4; ++c) CHECK(obs[j * 4 + c] == log.obs[e * 4 + c]);
        CHECK(act[j] == log.actions[e]);
        CHECK(lp[j] == log.log_probs[e]);
        CHECK(val[j] == log.values[e]);
        CHECK(a[j] == adv[e]);
        CHECK(r[j] == ret[e]);
      }
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
  // Errors: k past the end, a last partial minibatch into a full-size out, M = 0, a wrong shape.
  minibatch_t full(rlk_test::backend(), M, 4, 1);
  const auto before = full.observations.to_host();
  CHECK_THROWS_AS(rb.gather_minibatch(5, M, full), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather_minibatch(4, M, full), std::invalid_argument);
  CHECK_THROWS_AS(rb.gather_minibatch(0, 0, full), std::invalid_argument);
  minibatch_t wrong(rlk_test::backend(), M, 3, 1);
  CHECK_THROWS_AS(rb.gather_minibatch(0, M, wrong), std::invalid_argument);
  CHECK(full.observations.to_host() == before);
}

TEST_CASE("rollout: bad arguments are rejected and change nothing; memory is checked first", "[rollout][errors]") {
  using env_t = vec_env<cartpole<double>, B>;
  rollout_t rb(rlk_test::backend(), 4, 3, 4, 1);
  env_t env(rlk_test::backend(), 3, 1);
  env_t other(rlk_test::backend(), 5, 1);
  CHECK_THROWS_AS(rb.observations_at(4), std::invalid_argument);
  CHECK_THROWS_AS(rb.values_at(99), std::invalid_argument);
  CHECK_THROWS_AS(rb.store_outcome(4, env), std::invalid_argument);
  CHECK_THROWS_AS(rb.store_observations(4, env), std::invalid_argument);
  try {
    rb.store_outcome(0, other);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(message_of(e), Catch::Contains("rewards has 5 elements, expected 3"));
  }
  CHECK_THROWS_AS(rb.store_observations(0, other), std::invalid_argument);
  const auto zeros = std::vector<double>(12, 0.0);
  CHECK(rb.rewards().to_host() == zeros);
  CHECK(rb.observations().to_host() == std::vector<double>(48, 0.0));

  CHECK_THROWS_AS(rollout_t(rlk_test::backend(), 0, 3, 4, 1), std::invalid_argument);
  CHECK_THROWS_AS(rollout_t(rlk_test::backend(), 4, 0, 4, 1), std::invalid_argument);
  CHECK_THROWS_AS(rollout_t(rlk_test::backend(), 4, 3, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(minibatch_t(rlk_test::backend(), 4, 4, 0), std::invalid_argument);

  // observations 4 doubles, 1 int32 action, 6 doubles, 2 flags, permutation and key per element,
  // plus last_values.
  CHECK(rollout_t::bytes_required(10, 3, 4, 1) == 10 * 3 * (4 * 8 + 4 + 6 * 8 + 2 + 2 * 8) + 3 * 8);
  CHECK(minibatch_t::bytes_required(7, 4, 1) == 7 * (8 + 4 * 8 + 4 + 4 * 8));
  const std::size_t steps = std::size_t(1) << 40;
  const std::size_t bytes = rollout_t::bytes_required(steps, 8, 4, 1);
  try {
    rollout_t huge(rlk_test::backend(), steps, 8, 4, 1);
    FAIL("no exception");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == bytes);
    CHECK_THAT(message_of(e), Catch::Contains("rollout_buffer") && Catch::Contains(std::to_string(bytes) + " bytes"));
  }
}
