// MinAtar Asterix test cases (included by tests/envs/minatar_test.cpp): the recording of minatar
// 1.0.15 replayed draw for draw, then the game in vec_env on the test backend.
#pragma once

#include "../../test_backend.hpp"
#include "../../reference_dir.hpp"
#include "replay.hpp"

#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/minatar/asterix.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

TEST_CASE("minatar asterix: replays the reference step for step") {
  using rlkernels::minatar_asterix;
  const rlk_minatar_test::recording rec =
      rlk_minatar_test::load(rlk_test::reference_dir() + "/minatar_asterix.txt");
  CHECK(rlk_minatar_test::replay<minatar_asterix<float>>(rec) >= 4000);
  CHECK(rlk_minatar_test::replay<minatar_asterix<double>>(rec) >= 4000);
  minatar_asterix<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<minatar_asterix<float>>(rec, channels_first) >= 4000);
}

TEST_CASE("minatar asterix: difficulty ramps every 102 frames until both speeds are 1") {
  using env_t = rlkernels::minatar_asterix<float>;
  // The ramp does not depend on the actions or draws: step a state with no sticky actions and
  // keep the player out of the way of enemies by resetting terminal.
  env_t::Params p;
  p.sticky_action_prob = 0.0;
  env_t::State s{};
  rlkernels::rng gen(3, 0, 0);
  env_t::reset(p, s, gen);
  int frames = 0;
  std::vector<int> ramp_frames;
  while (frames < 2000) {
    const int before = s.ramp_index;
    s.terminal = false;
    env_t::step(p, s, 0, gen);
    ++frames;
    if (s.ramp_index != before) ramp_frames.push_back(frames);
  }
  REQUIRE(ramp_frames.size() == 9);  // spawn_speed 10 -> 1
  for (std::size_t k = 0; k < ramp_frames.size(); ++k) CHECK(ramp_frames[k] == 102 * int(k + 1));
  CHECK(s.spawn_speed == 1);
  CHECK(s.move_speed == 1);  // 5 -> 1 on ramp indices 1, 3, 5, 7

  env_t::Params flat = p;
  flat.difficulty_ramping = false;
  env_t::reset(flat, s, gen);
  for (int i = 0; i < 500; ++i) {
    s.terminal = false;
    env_t::step(flat, s, 0, gen);
  }
  CHECK(s.ramp_index == 0);
  CHECK(s.spawn_speed == 10);
  CHECK(s.move_speed == 5);
}

TEST_CASE("minatar asterix: runs in vec_env; the minimal action set maps onto the full one") {
  using full_t = rlkernels::minatar_asterix<float>;
  using minimal_t = rlkernels::minatar_asterix<float, rlkernels::minatar_action_set::minimal>;
  STATIC_REQUIRE(full_t::num_actions == 6);
  STATIC_REQUIRE(minimal_t::num_actions == 5);
  for (std::int32_t a = 0; a < 5; ++a) CHECK(minimal_t::full_action(a) == a);  // {n, l, u, r, d}

  constexpr std::size_t n = 16;
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
      a[i] = std::int32_t(agent.uniform_int(minimal_t::num_actions));
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
      int players = 0;
      for (int k = 0; k < minimal_t::observation_size; ++k) {
        const float v = obs[i * minimal_t::observation_size + k];
        const float f = final_obs[i * minimal_t::observation_size + k];
        not_binary += !(v == 0.0f || v == 1.0f) + !(f == 0.0f || f == 1.0f);
        players += k % minimal_t::channels == 0 && v == 1.0f;
      }
      REQUIRE(players == 1);
      REQUIRE((rewards[i] == 0.0f || rewards[i] == 1.0f));
      reward_sum += std::int64_t(rewards[i]);
      episodes += terminated[i];
    }
    REQUIRE(not_binary == 0);
    REQUIRE(minimal.truncated().to_host() == std::vector<std::uint8_t>(n, 0));
  }
  CHECK(episodes >= n);  // a random player meets an enemy within a few hundred frames
  CHECK(reward_sum > 0);
  const rlkernels::episode_statistics stats = minimal.get_episode_statistics();
  CHECK(stats.count == episodes);
}
