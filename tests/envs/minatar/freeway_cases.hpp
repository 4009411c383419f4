// MinAtar Freeway test cases (included by tests/envs/minatar_test.cpp): the recording of minatar
// 1.0.15 replayed draw for draw (two runs long enough to reach the 2500-frame end), then the game
// in vec_env on the test backend.
#pragma once

#include "../../test_backend.hpp"
#include "../../reference_dir.hpp"
#include "replay.hpp"

#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/minatar/freeway.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

TEST_CASE("minatar freeway: replays the reference step for step") {
  using rlkernels::minatar_freeway;
  const rlk_minatar_test::recording rec =
      rlk_minatar_test::load(rlk_test::reference_dir() + "/minatar_freeway.txt");
  // The recording must cover the end of an episode and the reset after it.
  int terminals = 0;
  for (const auto& r : rec.runs)
    for (const auto& x : r.records) terminals += x.kind == 'S' && x.terminal;
  REQUIRE(terminals >= 2);
  CHECK(rlk_minatar_test::replay<minatar_freeway<float>>(rec) >= 5000);
  CHECK(rlk_minatar_test::replay<minatar_freeway<double>>(rec) >= 5000);
  minatar_freeway<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<minatar_freeway<float>>(rec, channels_first) >= 5000);
}

TEST_CASE("minatar freeway: a chicken that only goes up crosses, and the car speeds are re-drawn") {
  using env_t = rlkernels::minatar_freeway<double>;
  env_t::Params p;
  p.sticky_action_prob = 0.0;
  env_t::State s{};
  rlkernels::rng gen(5, 0, 0);
  env_t::reset(p, s, gen);
  int crossings = 0, redrawn = 0;
  for (int t = 0; t < 2500; ++t) {
    const env_t::State before = s;
    const auto r = env_t::step(p, s, 2, gen);  // 'u'
    REQUIRE(!r.terminated);
    REQUIRE((r.reward == 0.0 || r.reward == 1.0));
    if (r.reward == 1.0) {
      ++crossings;
      CHECK(before.pos == 1);
      CHECK(s.pos == 9);
      for (int i = 0; i < env_t::cars; ++i) redrawn += s.car_speed[i] != before.car_speed[i];
    }
    for (int i = 0; i < env_t::cars; ++i) {
      const int speed = s.car_speed[i] < 0 ? -s.car_speed[i] : s.car_speed[i];
      REQUIRE((speed >= 1 && speed <= 5));
    }
  }
  CHECK(crossings > 0);
  CHECK(redrawn > 0);
  CHECK(env_t::step(p, s, 2, gen).terminated);  // frame 2501
}

TEST_CASE("minatar freeway: runs in vec_env; the minimal action set maps onto the full one") {
  using full_t = rlkernels::minatar_freeway<float>;
  using minimal_t = rlkernels::minatar_freeway<float, rlkernels::minatar_action_set::minimal>;
  STATIC_REQUIRE(full_t::num_actions == 6);
  STATIC_REQUIRE(minimal_t::num_actions == 3);
  CHECK(minimal_t::full_action(0) == 0);  // n
  CHECK(minimal_t::full_action(1) == 2);  // u
  CHECK(minimal_t::full_action(2) == 4);  // d
  for (std::int32_t a = 0; a < 6; ++a) CHECK(full_t::full_action(a) == a);

  constexpr std::size_t n = 8;
  constexpr int steps = 3000;
  rlkernels::vec_env<full_t, rlk_test::backend_t> full(rlk_test::backend(), n, 7);
  rlkernels::vec_env<minimal_t, rlk_test::backend_t> minimal(rlk_test::backend(), n, 7);
  // vec_env zero-initialises the state before the first reset, so the sticky "previous action"
  // starts at 0, as in a fresh minatar.Environment.
  for (const auto& s : full.states().to_host()) REQUIRE(s.last_action == 0);
  for (const auto& s : minimal.states().to_host()) REQUIRE(s.last_action == 0);
  auto full_actions = rlk_test::zeros<std::int32_t>(n);
  auto minimal_actions = rlk_test::zeros<std::int32_t>(n);
  rlkernels::rng agent(11, 0, 0);
  std::size_t episodes = 0;
  std::int64_t reward_sum = 0;
  for (int t = 0; t < steps; ++t) {
    std::vector<std::int32_t> a(n), fa(n);
    for (std::size_t i = 0; i < n; ++i) {
      // Mostly up, so that crossings happen.
      const std::uint32_t u = agent.uniform_int(4);
      a[i] = u < 2 ? 1 : std::int32_t(u - 2) * 2;  // u, u, n, d
      fa[i] = minimal_t::full_action(a[i]);
    }
    minimal_actions.assign(a);
    full_actions.assign(fa);
    minimal.step(minimal_actions.cview());
    full.step(full_actions.cview());

    const std::vector<float> obs = minimal.observations().to_host();
    const std::vector<float> final_obs = minimal.final_observations().to_host();
    const std::vector<float> rewards = minimal.rewards().to_host();
    const std::vector<std::uint8_t> terminated = minimal.terminated().to_host();
    INFO("step " << t);
    // Same seeds and the same full-set actions: the two variants play the same games.
    REQUIRE(obs == full.observations().to_host());
    REQUIRE(rewards == full.rewards().to_host());
    REQUIRE(terminated == full.terminated().to_host());
    int not_binary = 0;
    for (std::size_t i = 0; i < n; ++i) {
      int count[minimal_t::channels] = {};
      for (int k = 0; k < minimal_t::observation_size; ++k) {
        const float v = obs[i * minimal_t::observation_size + k];
        const float f = final_obs[i * minimal_t::observation_size + k];
        not_binary += !(v == 0.0f || v == 1.0f) + !(f == 0.0f || f == 1.0f);
        count[k % minimal_t::channels] += v == 1.0f;
      }
      REQUIRE(count[0] == 1);  // the chicken
      REQUIRE(count[1] == 8);  // one car per lane
      REQUIRE(count[2] + count[3] + count[4] + count[5] + count[6] == 8);  // one trail per car
      REQUIRE((rewards[i] == 0.0f || rewards[i] == 1.0f));
      reward_sum += std::int64_t(rewards[i]);
      // Every episode lasts exactly 2501 frames (see the quirk in freeway.hpp).
      REQUIRE(bool(terminated[i]) == (t == 2500));
      episodes += terminated[i];
    }
    REQUIRE(not_binary == 0);
    REQUIRE(minimal.truncated().to_host() == std::vector<std::uint8_t>(n, 0));
  }
  CHECK(episodes == n);
  CHECK(reward_sum > 0);
  const rlkernels::episode_statistics stats = minimal.get_episode_statistics();
  CHECK(stats.count == n);
  CHECK(stats.mean_length == 2501.0);
}
