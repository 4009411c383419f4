// vec_env: the episode-end contract (terminated / truncated / final observation / auto-reset),
// reproducibility across backends, thread counts and batch sizes, input validation that changes
// nothing on rejection, episode statistics and state access.
#include <rlkernels/core/host_sync.hpp>
#include <rlkernels/envs/cartpole.hpp>
#include <rlkernels/envs/env.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../test_backend.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace rlkernels;

namespace {

/// A deterministic counter env: each step adds action + 1 to the count; terminated once the count
/// reaches terminate_at; the reward is the new count. obs = [count, a uniform drawn at reset].
struct ticker {
  using scalar_type = float;
  static constexpr int observation_size = 2;
  static constexpr action_kind action_space = action_kind::discrete;
  static constexpr int num_actions = 3;
  struct State {
    int count;
    float tag;
  };
  struct Params {
    int terminate_at = 7;
    int max_episode_steps = 5;
  };
  RLK_HOST_DEVICE static void reset(const Params&, State& s, rng& gen) {
    s.count = 0;
    s.tag = gen.uniform<float>();
  }
  RLK_HOST_DEVICE static step_result<float> step(const Params& p, State& s, std::int32_t action, rng&) {
    s.count += action + 1;
    return {float(s.count), s.count >= p.terminate_at};
  }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) {
    obs[0] = float(s.count);
    obs[1] = s.tag;
  }
};
static_assert(check_env<ticker>());

/// A continuous env (2-D Box action in [-1, 1]) that never terminates: x += clip(a).
struct drift {
  using scalar_type = float;
  static constexpr int observation_size = 2;
  static constexpr action_kind action_space = action_kind::continuous;
  static constexpr int action_size = 2;
  static constexpr float action_low = -1.0f, action_high = 1.0f;
  struct State {
    float x[2];
  };
  struct Params {
    int max_episode_steps = 0;
  };
  RLK_HOST_DEVICE static void reset(const Params&, State& s, rng& gen) {
    s.x[0] = gen.normal<float>();
    s.x[1] = gen.normal<float>();
  }
  RLK_HOST_DEVICE static step_result<float> step(const Params&, State& s, const float* a, rng&) {
    float r = 0;
    for (int k = 0; k < 2; ++k) {
      const float u = a[k] < action_low ? action_low : (a[k] > action_high ? action_high : a[k]);
      s.x[k] += u;
      r -= std::abs(s.x[k]);
    }
    return {r, false};
  }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) {
    obs[0] = s.x[0];
    obs[1] = s.x[1];
  }
};
static_assert(check_env<drift>());

/// A "heavy" env (parallel_from = 2): each step records which OpenMP thread ran it, and ends the
/// episode every third step, so that the statistics have something to sum.
struct heavy_ticker {
  using scalar_type = float;
  static constexpr int observation_size = 1;
  static constexpr action_kind action_space = action_kind::discrete;
  static constexpr int num_actions = 2;
  static constexpr int parallel_from = 2;
  struct State {
    int count;
    int thread;
  };
  struct Params {
    int max_episode_steps = 0;
  };
  RLK_HOST_DEVICE static void reset(const Params&, State& s, rng&) { s.count = 0; }
  RLK_HOST_DEVICE static step_result<float> step(const Params&, State& s, std::int32_t action, rng&) {
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
    s.thread = omp_get_thread_num();
#else
    s.thread = 0;
#endif
    s.count += 1;
    return {float(action + s.count), s.count >= 3};
  }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) { obs[0] = float(s.count); }
};
static_assert(check_env<heavy_ticker>());

/// A counter env that cannot always take a step (as a physics env whose engine fails): action 1
/// leaves the state as it was and returns truncated (and terminated too, which vec_env must
/// ignore: a step the env could not take is no terminal state). Action 0 adds one to the count.
struct stumbler {
  using scalar_type = float;
  static constexpr int observation_size = 2;
  static constexpr action_kind action_space = action_kind::discrete;
  static constexpr int num_actions = 2;
  struct State {
    int count;
    float tag;
  };
  struct Params {
    int max_episode_steps = 100;
  };
  RLK_HOST_DEVICE static void reset(const Params&, State& s, rng& gen) {
    s.count = 0;
    s.tag = gen.uniform<float>();
  }
  RLK_HOST_DEVICE static step_result<float> step(const Params&, State& s, std::int32_t action, rng&) {
    if (action == 1) return {-1.0f, true, true};  // not taken: the state is the one before the step
    s.count += 1;
    return {1.0f, false};
  }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) {
    obs[0] = float(s.count);
    obs[1] = s.tag;
  }
};
static_assert(check_env<stumbler>());

using backend_t = rlk_test::backend_t;

template <class T>
buffer<T, backend_t> device_copy(const std::vector<T>& host) {
  return buffer<T, backend_t>(rlk_test::backend(), host);
}

/// Fixed pseudo-random actions for step t of env i (the same on every backend).
std::vector<std::int32_t> cartpole_actions(std::size_t n, int t) {
  std::vector<std::int32_t> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<std::int32_t>(rng(777, i, t).next_u32() & 1u);
  return a;
}

}  // namespace

TEST_CASE("episode end by time limit: truncated, final observation kept, same-step reset", "[vec_env][contract]") {
  vec_env<ticker, backend_t> env(rlk_test::backend(), 3, 5);
  const std::vector<float> first_obs = env.observations().to_host();
  auto zeros = device_copy(std::vector<std::int32_t>(3, 0));  // +1 per step: reaches 5 steps, never 7
  for (int t = 1; t <= 5; ++t) {
    env.step(zeros.cview());
    const auto obs = env.observations().to_host();
    const auto final_obs = env.final_observations().to_host();
    const auto rewards = env.rewards().to_host();
    const auto term = env.terminated().to_host();
    const auto trunc = env.truncated().to_host();
    for (int i = 0; i < 3; ++i) {
      INFO("t " << t << " env " << i);
      CHECK(final_obs[2 * i] == float(t));
      CHECK(final_obs[2 * i + 1] == first_obs[2 * i + 1]);
      CHECK(rewards[i] == float(t));
      CHECK(term[i] == 0);
      CHECK(trunc[i] == (t == 5 ? 1 : 0));
      if (t < 5) {
        CHECK(obs[2 * i] == float(t));
        CHECK(obs[2 * i + 1] == first_obs[2 * i + 1]);
      } else {
        CHECK(obs[2 * i] == 0.0f);                       // the new episode's first observation
        CHECK(obs[2 * i + 1] != first_obs[2 * i + 1]);  // drawn afresh at the reset
      }
    }
  }
  CHECK(env.episode_lengths().to_host() == std::vector<std::int32_t>(3, 0));
  const episode_statistics stats = env.get_episode_statistics();
  CHECK(stats.count == 3);
  CHECK(stats.mean_length == 5.0);
  CHECK(stats.mean_return == 15.0);  // 1 + 2 + 3 + 4 + 5
}

TEST_CASE("episode end by termination, and both flags at once", "[vec_env][contract]") {
  SECTION("terminated before the limit") {
    vec_env<ticker, backend_t> env(rlk_test::backend(), 2, 1);
    auto twos = device_copy(std::vector<std::int32_t>{1, 1});  // +2: 2, 4, 6, 8 >= 7 at step 4
    for (int t = 1; t <= 4; ++t) env.step(twos.cview());
    CHECK(env.terminated().to_host() == std::vector<std::uint8_t>{1, 1});
    CHECK(env.truncated().to_host() == std::vector<std::uint8_t>{0, 0});
    CHECK(env.final_observations().to_host()[0] == 8.0f);
    CHECK(env.observations().to_host()[0] == 0.0f);
    CHECK(env.rewards().to_host()[0] == 8.0f);
  }
  SECTION("terminal state reached on the last allowed step") {
    ticker::Params p;
    p.terminate_at = 5;
    p.max_episode_steps = 5;
    vec_env<ticker, backend_t> env(rlk_test::backend(), 1, 1, p);
    auto ones = device_copy(std::vector<std::int32_t>{0});
    for (int t = 1; t <= 5; ++t) env.step(ones.cview());
    CHECK(env.terminated().get(0) == 1);
    CHECK(env.truncated().get(0) == 1);  // as Gymnasium's TimeLimit: both set; termination wins
  }
  SECTION("max_episode_steps = 0 means no time limit") {
    ticker::Params p;
    p.terminate_at = 1 << 30;
    p.max_episode_steps = 0;
    vec_env<ticker, backend_t> env(rlk_test::backend(), 1, 1, p);
    auto ones = device_copy(std::vector<std::int32_t>{0});
    for (int t = 1; t <= 1000; ++t) env.step(ones.cview());
    CHECK(env.truncated().get(0) == 0);
    CHECK(env.episode_lengths().get(0) == 1000);
  }
}

TEST_CASE("a step the env could not take ends the episode as truncated, not terminated", "[vec_env][contract]") {
  // {reward, terminated} leaves truncated false, as every env that never fails writes it.
  const step_result<float> plain{1.0f, true};
  CHECK_FALSE(plain.truncated);
  vec_env<stumbler, backend_t> env(rlk_test::backend(), 3, 9);
  auto forward = device_copy(std::vector<std::int32_t>{0, 0, 0});
  for (int t = 0; t < 3; ++t) env.step(forward.cview());
  const std::vector<float> before = env.observations().to_host();
  auto fail_one = device_copy(std::vector<std::int32_t>{0, 1, 0});  // env 1 cannot take its step
  env.step(fail_one.cview());
  CHECK(env.terminated().to_host() == std::vector<std::uint8_t>{0, 0, 0});
  CHECK(env.truncated().to_host() == std::vector<std::uint8_t>{0, 1, 0});
  const auto final_obs = env.final_observations().to_host();
  const auto obs = env.observations().to_host();
  CHECK(final_obs[2] == before[2]);  // the observation of the state it kept (count 3)
  CHECK(final_obs[3] == before[3]);
  CHECK(final_obs[2] == 3.0f);
  CHECK(obs[2] == 0.0f);              // reset in the same step
  CHECK(obs[3] != before[3]);
  CHECK(env.rewards().get(1) == -1.0f);
  CHECK(env.episode_lengths().to_host() == std::vector<std::int32_t>{4, 0, 4});
  const episode_statistics stats = env.get_episode_statistics();  // counted as a completed episode
  CHECK(stats.count == 1);
  CHECK(stats.mean_length == 4.0);
  CHECK(stats.mean_return == 2.0);  // 1 + 1 + 1 - 1
}

TEST_CASE("bad arguments are rejected with a clear message", "[vec_env][errors]") {
  CHECK_THROWS_WITH((vec_env<ticker, backend_t>(rlk_test::backend(), 0, 1)), Catch::Contains("num_envs must be >= 1, got 0"));
  ticker::Params bad;
  bad.max_episode_steps = -3;
  CHECK_THROWS_WITH((vec_env<ticker, backend_t>(rlk_test::backend(), 4, 1, bad)), Catch::Contains("got -3"));

  // More envs than the backend's memory can hold: refused up front with the whole size.
  const std::size_t too_many = std::size_t(1) << 40;
  try {
    vec_env<ticker, backend_t> huge(rlk_test::backend(), too_many, 1);
    FAIL("2^40 envs were created");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == vec_env<ticker, backend_t>::bytes_required(too_many));
    CHECK_THAT(e.what(), Catch::Contains("1099511627776 envs need") && Catch::Contains("available"));
  }
  CHECK_THROWS_WITH((vec_env<ticker, backend_t>(rlk_test::backend(), std::size_t(-1) / 2, 1)),
                    Catch::Contains("overflows"));

  vec_env<ticker, backend_t> env(rlk_test::backend(), 4, 1);
  auto three = device_copy(std::vector<std::int32_t>(3, 0));
  CHECK_THROWS_WITH(env.step(three.cview()), Catch::Contains("actions has 3 elements, expected 4"));
  CHECK_THROWS_WITH(env.step(view<const std::int32_t>(nullptr, 4)), Catch::Contains("null"));
  CHECK_THROWS_AS(env.set_states(std::vector<ticker::State>(5)), std::invalid_argument);
#if defined(RLK_BACKEND_CUDA)
  std::vector<std::int32_t> host(4, 0);
  CHECK_THROWS_WITH(env.step(make_view(host)), Catch::Contains("device"));
#endif
}

TEST_CASE("an invalid action names the env and value, and the rejected step changes nothing", "[vec_env][errors]") {
  vec_env<ticker, backend_t> env(rlk_test::backend(), 1000, 3);
  auto ok = device_copy(std::vector<std::int32_t>(1000, 1));
  env.step(ok.cview());
  env.step(ok.cview());

  const auto states = env.states().to_host();
  const auto obs = env.observations().to_host();
  const auto final_obs = env.final_observations().to_host();
  const auto rewards = env.rewards().to_host();
  const auto lengths = env.episode_lengths().to_host();
  const auto returns = env.episode_returns().to_host();

  for (std::int32_t bad_value : {3, -1, std::numeric_limits<std::int32_t>::min()}) {
    std::vector<std::int32_t> actions(1000, 0);
    actions[613] = bad_value;
    actions[900] = 7;  // a later bad one: the first is reported
    auto dev = device_copy(actions);
    try {
      env.step(dev.cview());
      FAIL("no exception");
    } catch (const invalid_action& e) {
      CHECK(e.env_index() == 613);
      CHECK(e.value() == double(bad_value));
      CHECK_THAT(e.what(), Catch::Contains("env 613") && Catch::Contains(std::to_string(bad_value)) &&
                               Catch::Contains("[0, 3)"));
    }
  }
  const auto states_after = env.states().to_host();
  for (std::size_t i = 0; i < states.size(); ++i) {
    REQUIRE(states_after[i].count == states[i].count);
    REQUIRE(states_after[i].tag == states[i].tag);
  }
  CHECK(env.observations().to_host() == obs);
  CHECK(env.final_observations().to_host() == final_obs);
  CHECK(env.rewards().to_host() == rewards);
  CHECK(env.episode_lengths().to_host() == lengths);
  CHECK(env.episode_returns().to_host() == returns);
}

TEST_CASE("the action check finds the first bad env in large batches too", "[vec_env][errors]") {
  const std::size_t n = 100000;  // above the size where the OpenMP check runs in parallel
  vec_env<ticker, backend_t> env(rlk_test::backend(), n, 3);
  std::vector<std::int32_t> actions(n, 2);
  actions[99999] = 3;
  actions[65537] = -2;
  auto dev = device_copy(actions);
  try {
    env.step(dev.cview());
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 65537);
    CHECK(e.value() == -2.0);
  }
  CHECK(env.episode_lengths().get(0) == 0);
  actions[65537] = 0;
  actions[99999] = 0;
  dev.assign(actions);
  env.step(dev.cview());
  CHECK(env.episode_lengths().get(99999) == 1);
}

TEST_CASE("continuous actions: NaN is rejected, out-of-bound values are clipped by the env", "[vec_env][errors]") {
  vec_env<drift, backend_t> env(rlk_test::backend(), 8, 11);
  const auto before = env.observations().to_host();
  std::vector<float> actions(16, 0.5f);
  actions[2 * 5 + 1] = std::numeric_limits<float>::quiet_NaN();
  auto dev = device_copy(actions);
  try {
    env.step(dev.cview());
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 5);
    CHECK(std::isnan(e.value()));
    CHECK_THAT(e.what(), Catch::Contains("env 5") && Catch::Contains("NaN"));
  }
  CHECK(env.observations().to_host() == before);

  std::vector<float> big(16, 100.0f);
  auto dev_big = device_copy(big);
  env.step(dev_big.cview());
  const auto after = env.observations().to_host();
  for (int k = 0; k < 16; ++k) CHECK(after[k] == before[k] + 1.0f);

  auto wrong = device_copy(std::vector<float>(8, 0.0f));
  CHECK_THROWS_WITH(env.step(wrong.cview()), Catch::Contains("expected 16 (num_envs 8 x 2)"));
}

TEST_CASE("same seed, same trajectories: across thread counts, batch sizes and backends", "[vec_env][determinism]") {
  using env_t = vec_env<cartpole<float>, backend_t>;
  const std::size_t n_small = 37, n_large = 100;
  const int steps = 300;

  // Reference: the serial backend with the large batch.
  vec_env<cartpole<float>, serial_backend> ref(serial, n_large, 2026);
  env_t small(rlk_test::backend(), n_small, 2026);
  env_t large(rlk_test::backend(), n_large, 2026);
  env_t probe(rlk_test::backend(), n_large, 2026);
  const auto ref_first = ref.observations().to_host();
  CHECK(large.observations().to_host() == ref_first);  // reset draws are exact on every backend
  CHECK(small.observations().to_host() == std::vector<float>(ref_first.begin(), ref_first.begin() + 4 * n_small));

  for (int t = 0; t < steps; ++t) {
    const auto a = cartpole_actions(n_large, t);
    const auto ref_states = ref.states().to_host();
    ref.step(make_view(a));
    auto a_large = device_copy(a);
    auto a_small = device_copy(std::vector<std::int32_t>(a.begin(), a.begin() + n_small));
    large.step(a_large.cview());
    small.step(a_small.cview());
    // Env i does the same thing whatever the batch size.
    const auto l_obs = large.observations().to_host();
    const auto s_obs = small.observations().to_host();
    for (std::size_t k = 0; k < 4 * n_small; ++k) REQUIRE(s_obs[k] == l_obs[k]);
    if (!rlk_test::on_cuda) {
      // Host backends: bit-identical to the serial reference.
      REQUIRE(l_obs == ref.observations().to_host());
      REQUIRE(large.final_observations().to_host() == ref.final_observations().to_host());
      REQUIRE(large.terminated().to_host() == ref.terminated().to_host());
      REQUIRE(large.truncated().to_host() == ref.truncated().to_host());
      REQUIRE(large.rewards().to_host() == ref.rewards().to_host());
    } else {
      // CUDA's sinf/cosf may differ from glibc's in the last bit and CartPole amplifies that over
      // an episode, so CUDA is compared one step at a time from the reference states: within
      // 1e-5 relative (the documented tolerance).
      probe.set_states(ref_states);
      probe.step(a_large.cview());
      const auto p_final = probe.final_observations().to_host();
      const auto r_final = ref.final_observations().to_host();
      for (std::size_t k = 0; k < p_final.size(); ++k)
        REQUIRE(std::abs(p_final[k] - r_final[k]) <= 1e-5f * std::max(1.0f, std::abs(r_final[k])));
      REQUIRE(probe.terminated().to_host() == ref.terminated().to_host());
    }
  }
  if (!rlk_test::on_cuda) {
    const auto a = large.get_episode_statistics(), b = ref.get_episode_statistics();
    CHECK(a.count == b.count);
    CHECK(a.mean_return == b.mean_return);
  }
}

TEST_CASE("a population split over several vec_envs with first_env_index equals one batch", "[vec_env][determinism]") {
  const std::size_t n = 64;
  vec_env<cartpole<float>, backend_t> whole(rlk_test::backend(), n, 77);
  vec_env<cartpole<float>, backend_t> lo(rlk_test::backend(), 24, 77, {}, 0);
  vec_env<cartpole<float>, backend_t> hi(rlk_test::backend(), n - 24, 77, {}, 24);
  CHECK(hi.first_env_index() == 24);
  for (int t = 0; t < 100; ++t) {
    const auto a = cartpole_actions(n, t);
    auto a_whole = device_copy(a);
    auto a_lo = device_copy(std::vector<std::int32_t>(a.begin(), a.begin() + 24));
    auto a_hi = device_copy(std::vector<std::int32_t>(a.begin() + 24, a.end()));
    whole.step(a_whole.cview());
    lo.step(a_lo.cview());
    hi.step(a_hi.cview());
    std::vector<float> joined = lo.observations().to_host();
    const auto upper = hi.observations().to_host();
    joined.insert(joined.end(), upper.begin(), upper.end());
    REQUIRE(joined == whole.observations().to_host());
  }
}

#if defined(RLK_BACKEND_OPENMP)
TEST_CASE("OpenMP thread counts do not change a single bit", "[vec_env][determinism]") {
  const std::size_t n = 1001;
  std::vector<std::vector<float>> observations;
  std::vector<episode_statistics> stats;
  for (int threads : {1, 2, 3, 8}) {
    vec_env<cartpole<float>, openmp_backend> env(openmp_backend{threads, /*serial_below=*/0}, n, 9);
    for (int t = 0; t < 200; ++t) {
      const auto a = cartpole_actions(n, t);
      env.step(make_view(a));
    }
    observations.push_back(env.observations().to_host());
    stats.push_back(env.get_episode_statistics());
  }
  for (std::size_t k = 1; k < observations.size(); ++k) {
    CHECK(observations[k] == observations[0]);
    CHECK(stats[k].count == stats[0].count);
    CHECK(stats[k].mean_return == stats[0].mean_return);
  }
}
TEST_CASE("an env with parallel_from is stepped in parallel below serial_below, with the same results",
          "[vec_env][determinism]") {
  // 8 heavy envs: under the default serial_below (1024) they would all run on the calling thread.
  const std::size_t n = 8;
  std::vector<std::vector<float>> observations;
  std::vector<episode_statistics> stats;
  std::vector<std::int32_t> actions(n);
  for (std::size_t i = 0; i < n; ++i) actions[i] = std::int32_t(i % 2);
  for (int threads : {1, 2, 4}) {
    vec_env<heavy_ticker, openmp_backend> env(openmp_backend{threads}, n, 3);
    for (int t = 0; t < 10; ++t) env.step(make_view(actions));
    observations.push_back(env.observations().to_host());
    stats.push_back(env.get_episode_statistics());
    std::vector<int> used;
    for (const auto& s : env.states().to_host()) used.push_back(s.thread);
    std::sort(used.begin(), used.end());
    const auto distinct = std::size_t(std::unique(used.begin(), used.end()) - used.begin());
    INFO("threads " << threads);
    CHECK(distinct == std::size_t(std::min(threads, int(n))));
  }
  for (std::size_t k = 1; k < observations.size(); ++k) {
    CHECK(observations[k] == observations[0]);
    CHECK(stats[k].count == stats[0].count);
    CHECK(stats[k].mean_return == stats[0].mean_return);
  }
  CHECK(stats[0].count == n * 3);  // 10 steps, an episode every 3: three per env
}
#endif

TEST_CASE("reset(seed) restarts every stream; different seeds differ", "[vec_env]") {
  vec_env<cartpole<float>, backend_t> env(rlk_test::backend(), 16, 1);
  const auto first = env.observations().to_host();
  auto a = device_copy(cartpole_actions(16, 0));
  for (int t = 0; t < 30; ++t) env.step(a.cview());
  env.reset();
  CHECK(env.observations().to_host() == first);
  CHECK(env.get_episode_statistics().count == 0);
  env.reset(2);
  CHECK(env.observations().to_host() != first);
  CHECK(env.seed() == 2);
  for (float x : env.observations().to_host()) {
    CHECK(x >= -0.05f);
    CHECK(x < 0.05f);
  }
}

TEST_CASE("episode statistics equal a host recount of the completed episodes", "[vec_env][statistics]") {
  const std::size_t n = 257;
  vec_env<cartpole<float>, backend_t> env(rlk_test::backend(), n, 31);
  std::vector<double> returns_so_far(n, 0.0), lengths_so_far(n, 0.0);
  std::uint64_t count = 0;
  double return_sum = 0, length_sum = 0, min_return = 1e300, max_return = -1e300;
  for (int t = 0; t < 120; ++t) {
    auto a = device_copy(cartpole_actions(n, t));
    env.step(a.cview());
    const auto r = env.rewards().to_host();
    const auto term = env.terminated().to_host();
    const auto trunc = env.truncated().to_host();
    for (std::size_t i = 0; i < n; ++i) {
      returns_so_far[i] += r[i];
      lengths_so_far[i] += 1;
      if (term[i] || trunc[i]) {
        ++count;
        return_sum += returns_so_far[i];
        length_sum += lengths_so_far[i];
        min_return = std::min(min_return, returns_so_far[i]);
        max_return = std::max(max_return, returns_so_far[i]);
        returns_so_far[i] = lengths_so_far[i] = 0;
      }
    }
  }
  const episode_statistics s = env.get_episode_statistics();
  REQUIRE(count > 100);
  CHECK(s.count == count);
  CHECK(s.mean_return == Approx(return_sum / count).epsilon(1e-12));
  CHECK(s.mean_length == Approx(length_sum / count).epsilon(1e-12));
  CHECK(s.min_return == min_return);
  CHECK(s.max_return == max_return);
  const auto returns = env.episode_returns().to_host();
  for (std::size_t i = 0; i < n; ++i) REQUIRE(returns[i] == returns_so_far[i]);

  env.clear_episode_statistics();
  const episode_statistics cleared = env.get_episode_statistics();
  CHECK(cleared.count == 0);
  CHECK(cleared.mean_return == 0.0);
  CHECK(env.episode_returns().to_host() == returns);  // episodes in progress carry on
}

namespace {
struct push_right_kernel {
  cartpole<float>::State* states;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { states[i].x = 1.0f + float(i); }
};
}  // namespace

TEST_CASE("env states can be read and overwritten", "[vec_env][states]") {
  vec_env<cartpole<float>, backend_t> env(rlk_test::backend(), 4, 8);
  std::vector<cartpole<float>::State> s(4, cartpole<float>::State{0.5f, 0.0f, 0.1f, 0.0f});
  s[3].x = -2.0f;
  env.set_states(s);
  const auto obs = env.observations().to_host();
  CHECK(env.final_observations().to_host() == obs);  // nothing ended: s' == next observation
  CHECK(obs[0] == 0.5f);
  CHECK(obs[2] == 0.1f);
  CHECK(obs[12] == -2.0f);
  const auto back = env.states().to_host();
  CHECK(back[3].x == -2.0f);

  // Writing through the view from a kernel, then refreshing the observations.
  for_each_index(rlk_test::backend(), 4, push_right_kernel{env.states_view().data()});
  env.refresh_observations();
  CHECK(env.observations().to_host()[4 * 2] == 3.0f);
  // Stepping continues from the written state: x moves by tau * x_dot = 0.
  auto a = device_copy(std::vector<std::int32_t>{1, 1, 1, 1});
  env.step(a.cview());
  CHECK(env.final_observations().to_host()[4 * 2] == 3.0f);
}

TEST_CASE("ten million envs in one batch step like a small batch", "[vec_env][large]") {
  const std::size_t n = 10'000'000;
  using big_env = vec_env<cartpole<float>, backend_t>;
  INFO("vec_env of 10^7 CartPoles needs " << big_env::bytes_required(n) << " bytes");
  big_env big(rlk_test::backend(), n, 5);
  buffer<std::int32_t, backend_t> actions(rlk_test::backend(), n);  // all zeros: push left
  big.step(actions.cview());
  big.step(actions.cview());

  // The last envs of the big batch equal the same envs run alone (stream = env index).
  const std::vector<float> obs = big.observations().to_host();
  vec_env<cartpole<float>, serial_backend> one(serial, 1, 5);
  cartpole<float>::State s{};
  rng gen(5, n - 1, 0);
  cartpole<float>::reset(cartpole<float>::Params{}, s, gen);
  one.set_states({s});
  const std::vector<std::int32_t> left{0};
  one.step(make_view(left));
  one.step(make_view(left));
  const std::vector<float> expected = one.observations().to_host();
  for (int k = 0; k < 4; ++k) {
    if (rlk_test::on_cuda) {
      CHECK(obs[4 * (n - 1) + k] == Approx(expected[k]).epsilon(1e-5).margin(1e-6));
    } else {
      CHECK(obs[4 * (n - 1) + k] == expected[k]);
    }
  }
  CHECK(big.episode_lengths().get(n - 1) == 2);
}

// ---- deferred action check, device episode statistics, host round trips ----

TEST_CASE("step_deferred equals step for valid actions, with no host wait per step", "[vec_env][deferred][host_sync]") {
  const std::size_t n = 257;
  vec_env<cartpole<float>, backend_t> eager(rlk_test::backend(), n, 21), deferred(rlk_test::backend(), n, 21);
  std::vector<buffer<std::int32_t, backend_t>> actions;
  for (int t = 0; t < 40; ++t) actions.push_back(device_copy(cartpole_actions(n, t)));
  for (int t = 0; t < 40; ++t) eager.step(actions[std::size_t(t)].cview());
  reset_host_sync_counts();
  for (int t = 0; t < 40; ++t) deferred.step_deferred(actions[std::size_t(t)].cview());
  CHECK(host_sync_counts().total() == 0);
  deferred.check_deferred_actions();
  CHECK(host_sync_counts().total() == (host_sync_counting_enabled ? 1u : 0u));
  CHECK(deferred.observations().to_host() == eager.observations().to_host());
  CHECK(deferred.final_observations().to_host() == eager.final_observations().to_host());
  CHECK(deferred.episode_returns().to_host() == eager.episode_returns().to_host());
  CHECK(deferred.terminated().to_host() == eager.terminated().to_host());
}

TEST_CASE("step_deferred: the first invalid action is reported later, with the envs as before that step",
          "[vec_env][deferred][errors]") {
  const std::size_t n = 1000;
  vec_env<ticker, backend_t> env(rlk_test::backend(), n, 3), twin(rlk_test::backend(), n, 3);
  auto ok = device_copy(std::vector<std::int32_t>(n, 1));
  std::vector<std::int32_t> bad_host(n, 0);
  bad_host[613] = 3;
  bad_host[900] = -4;
  auto bad = device_copy(bad_host);
  std::vector<std::int32_t> worse_host(n, 0);
  worse_host[2] = 9;  // a lower env in a later step: the first bad step is the one reported
  auto worse = device_copy(worse_host);

  env.step_deferred(ok.cview());
  twin.step(ok.cview());
  env.step_deferred(bad.cview());
  env.step_deferred(ok.cview());
  env.step_deferred(worse.cview());
  try {
    env.check_deferred_actions();
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 613);
    CHECK(e.value() == 3.0);
    CHECK_THAT(e.what(), Catch::Contains("env 613") && Catch::Contains("[0, 3)") &&
                             Catch::Contains("state it had before the step"));
  }
  // Nothing moved after the first (valid) step.
  const auto s = env.states().to_host(), t = twin.states().to_host();
  for (std::size_t i = 0; i < n; ++i) REQUIRE(s[i].count == t[i].count);
  CHECK(env.episode_lengths().to_host() == twin.episode_lengths().to_host());
  CHECK(env.observations().to_host() == twin.observations().to_host());
  CHECK(env.rewards().to_host() == twin.rewards().to_host());
  // The error is cleared by the check: stepping goes on.
  env.check_deferred_actions();
  env.step_deferred(ok.cview());
  twin.step(ok.cview());
  env.check_deferred_actions();
  CHECK(env.episode_lengths().to_host() == twin.episode_lengths().to_host());
  // reset() clears a pending error too.
  env.step_deferred(bad.cview());
  env.reset();
  CHECK_NOTHROW(env.check_deferred_actions());
}

TEST_CASE("step_deferred: NaN continuous actions are latched with their value", "[vec_env][deferred][errors]") {
  vec_env<drift, backend_t> env(rlk_test::backend(), 40, 11);
  const auto before = env.observations().to_host();
  std::vector<float> actions(80, 0.5f);
  actions[2 * 33 + 1] = std::numeric_limits<float>::quiet_NaN();
  auto dev = device_copy(actions);
  env.step_deferred(dev.cview());
  CHECK_THROWS_AS(env.check_deferred_actions(), invalid_action);
  CHECK(env.observations().to_host() == before);
  env.step_deferred(dev.cview());
  try {
    env.check_deferred_actions();
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 33);
    CHECK(std::isnan(e.value()));
    CHECK_THAT(e.what(), Catch::Contains("env 33") && Catch::Contains("NaN"));
  }
}

TEST_CASE("episode_statistics_into writes get_episode_statistics' numbers to backend memory",
          "[vec_env][statistics][host_sync]") {
  const std::size_t n = 300;  // several host statistics chunks
  vec_env<cartpole<float>, backend_t> env(rlk_test::backend(), n, 5);
  for (int t = 0; t < 60; ++t) {
    auto a = device_copy(cartpole_actions(n, t));
    env.step(a.cview());
  }
  auto out = rlk_test::zeros<episode_statistics>(1);
  reset_host_sync_counts();
  env.episode_statistics_into(out.view());
  CHECK(host_sync_counts().total() == 0);
  const episode_statistics d = out.get(0), h = env.get_episode_statistics();
  REQUIRE(h.count > 0);
  CHECK(d.count == h.count);
  CHECK(d.mean_return == h.mean_return);
  CHECK(d.mean_length == h.mean_length);
  CHECK(d.min_return == h.min_return);
  CHECK(d.max_return == h.max_return);
  env.clear_episode_statistics();
  env.episode_statistics_into(out.view());
  CHECK(out.get(0).count == 0);
  CHECK(out.get(0).mean_return == 0.0);
  auto two = rlk_test::zeros<episode_statistics>(2);
  CHECK_THROWS_AS(env.episode_statistics_into(two.view()), std::invalid_argument);
}

TEST_CASE("host round trips: eager step reads once per step on CUDA only, step_deferred never",
          "[vec_env][host_sync]") {
  if (!host_sync_counting_enabled) return;
  const std::size_t n = 64;
  vec_env<cartpole<float>, backend_t> env(rlk_test::backend(), n, 9);
  auto a = device_copy(cartpole_actions(n, 0));
  reset_host_sync_counts();
  for (int t = 0; t < 10; ++t) env.step(a.cview());
  CHECK(host_sync_counts().total() == (rlk_test::on_cuda ? 10u : 0u));
  reset_host_sync_counts();
  for (int t = 0; t < 10; ++t) env.step_deferred(a.cview());
  for (int t = 0; t < 10; ++t) env.step_unchecked(a.cview());
  CHECK(host_sync_counts().total() == 0);
  env.check_deferred_actions();
  CHECK(host_sync_counts().reads == 1);
  CHECK(host_sync_counts().total() == 1);
}
