// MinAtar SpaceInvaders test cases (included by the MinAtar test source, after test_backend.hpp):
// the reference recording replayed draw for draw, the difficulty ramp, the minimal action set, and
// the game running in vec_env on the test backend.
#pragma once

#include "../../test_backend.hpp"
#include "../../reference_dir.hpp"
#include "replay.hpp"

#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/minatar/space_invaders.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

TEST_CASE("minatar space_invaders: replays the reference step for step", "[minatar]") {
  using rlkernels::minatar_space_invaders;
  const rlk_minatar_test::recording rec =
      rlk_minatar_test::load(rlk_test::reference_dir() + "/minatar_space_invaders.txt");
  CHECK(rlk_minatar_test::replay<minatar_space_invaders<float>>(rec) >= 4000);
  CHECK(rlk_minatar_test::replay<minatar_space_invaders<double>>(rec) >= 4000);
  minatar_space_invaders<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<minatar_space_invaders<float>>(rec, channels_first) >= 4000);
}

namespace rlk_space_invaders_test {
using env_t = rlkernels::minatar_space_invaders<float>;

/// A reset state holding one alien at (3, 4) and a bullet of the cannon just below it, which the
/// next frame moves onto the alien: the wave is cleared in one step.
inline env_t::State last_alien_state(const env_t::Params& p) {
  rlkernels::rng gen(1, 0);
  env_t::State s{};
  env_t::reset(p, s, gen);
  for (int y = 0; y < 10; ++y) s.alien[y] = 0;
  s.alien[3] = 1u << 4;
  s.f_bullet[4] = 1u << 4;
  return s;
}
}  // namespace rlk_space_invaders_test

TEST_CASE("minatar space_invaders: a cleared wave comes back faster only while ramping", "[minatar]") {
  using rlk_space_invaders_test::env_t;
  using rlk_space_invaders_test::last_alien_state;
  env_t::Params p;
  p.sticky_action_prob = 0;
  rlkernels::rng gen(3, 0);

  env_t::State s = last_alien_state(p);
  auto r = env_t::step(p, s, 0, gen);
  CHECK(r.reward == 1.0f);
  CHECK_FALSE(r.terminated);
  CHECK(s.enemy_move_interval == 11);
  CHECK(s.ramp_index == 1);
  for (int y = 0; y < 10; ++y) CHECK(s.alien[y] == (y < 4 ? 0xFC : 0));  // alien_map[0:4, 2:8] = 1
  CHECK(s.alien_move_timer == 11);  // timers carry on: 12 at reset, one frame elapsed
  CHECK(s.alien_dir == -1);

  s = last_alien_state(p);
  s.enemy_move_interval = 6;  // the ramp stops at 6 frames per move
  env_t::step(p, s, 0, gen);
  CHECK(s.enemy_move_interval == 6);
  CHECK(s.ramp_index == 0);

  p.difficulty_ramping = false;
  s = last_alien_state(p);
  r = env_t::step(p, s, 0, gen);
  CHECK(r.reward == 1.0f);
  CHECK(s.enemy_move_interval == 12);
  CHECK(s.ramp_index == 0);
}

TEST_CASE("minatar space_invaders: the reference's row roll and shooter choice", "[minatar]") {
  // Expected values from minatar 1.0.15 run on the same states.
  using rlk_space_invaders_test::env_t;
  env_t::Params p;
  p.sticky_action_prob = 0;
  rlkernels::rng gen(9, 0);
  env_t::State s{};
  env_t::reset(p, s, gen);

  // A block on the left edge with an alien on row 9 turns and steps down: np.roll wraps that
  // alien to row 0 and the episode ends (space_invaders.py: `self.alien_map = np.roll(self.alien_map, 1, axis=0)`).
  for (int y = 0; y < 10; ++y) s.alien[y] = 0;
  s.alien[9] = 1u << 0;
  s.alien[8] = 1u << 3;
  s.alien_move_timer = 0;
  auto r = env_t::step(p, s, 0, gen);
  CHECK(r.terminated);
  CHECK(s.alien[0] == (1u << 0));
  CHECK(s.alien[9] == (1u << 3));
  for (int y = 1; y < 9; ++y) CHECK(s.alien[y] == 0);
  CHECK(s.alien_dir == 1);
  CHECK(s.alien_move_timer == 1);  // min(2 aliens, 12) - 1

  // Columns 3 and 7 are both 2 from the cannon at 5: the left one shoots (a stable sort of 0..9
  // by distance), from its lowest alien.
  env_t::reset(p, s, gen);
  for (int y = 0; y < 10; ++y) s.alien[y] = 0;
  s.alien[1] = 1u << 3;
  s.alien[2] = 1u << 3;
  s.alien[6] = 1u << 7;
  s.alien_shot_timer = 0;
  r = env_t::step(p, s, 0, gen);
  CHECK_FALSE(r.terminated);
  for (int y = 0; y < 10; ++y) CHECK(s.e_bullet[y] == (y == 2 ? 1u << 3 : 0u));
  CHECK(s.alien_shot_timer == 9);
}

TEST_CASE("minatar space_invaders: the minimal action set is {n, l, r, f}", "[minatar]") {
  using minimal = rlkernels::minatar_space_invaders<float, rlkernels::minatar_action_set::minimal>;
  using full = rlkernels::minatar_space_invaders<float>;
  STATIC_REQUIRE(minimal::num_actions == 4);
  STATIC_REQUIRE(full::num_actions == 6);
  CHECK(minimal::full_action(0) == 0);
  CHECK(minimal::full_action(1) == 1);
  CHECK(minimal::full_action(2) == 3);
  CHECK(minimal::full_action(3) == 5);
  for (std::int32_t a = 0; a < 6; ++a) CHECK(full::full_action(a) == a);

  // Minimal action 3 fires: the bullet appears on row 8 above the cannon.
  minimal::Params p;
  p.sticky_action_prob = 0;
  rlkernels::rng gen(5, 0);
  minimal::State s{};
  minimal::reset(p, s, gen);
  minimal::step(p, s, 3, gen);
  CHECK(s.f_bullet[8] == (1u << 5));
  CHECK(s.shot_timer == 4);
  minimal::step(p, s, 2, gen);  // right
  CHECK(s.pos == 6);
}

TEST_CASE("minatar space_invaders: runs in vec_env with binary observations and ending episodes", "[minatar][vec_env]") {
  using Env = rlkernels::minatar_space_invaders<float>;
  constexpr std::size_t n = 64;
  constexpr int steps = 3000;
  rlkernels::vec_env<Env, rlk_test::backend_t> env(rlk_test::backend(), n, 17);
  std::mt19937 agent(4);
  std::vector<std::int32_t> a(n);
  double total_reward = 0;
  bool all_binary = true, one_cannon = true, direction_matches = true, rewards_ok = true;
  for (int t = 0; t < steps; ++t) {
    for (auto& x : a) x = std::int32_t(agent() % 6u);
    const auto actions = rlk_test::make(a);
    env.step(actions.cview());
    const std::vector<float> obs = env.observations().to_host();
    const std::vector<float> rewards = env.rewards().to_host();
    for (std::size_t i = 0; i < n; ++i) {
      const float* o = obs.data() + i * Env::observation_size;
      int cannons = 0;
      for (int k = 0; k < Env::observation_size; ++k) all_binary = all_binary && (o[k] == 0.0f || o[k] == 1.0f);
      for (int y = 0; y < 10; ++y)
        for (int x = 0; x < 10; ++x) {
          const float* cell = o + (y * 10 + x) * Env::channels;
          cannons += cell[0] == 1.0f;
          // an alien shows in exactly one of the direction channels, which nothing else uses
          direction_matches = direction_matches && cell[1] == cell[2] + cell[3];
        }
      one_cannon = one_cannon && cannons == 1;
      rewards_ok = rewards_ok && rewards[i] >= 0 && rewards[i] == float(int(rewards[i]));
      total_reward += rewards[i];
    }
  }
  CHECK(all_binary);
  CHECK(one_cannon);
  CHECK(direction_matches);
  CHECK(rewards_ok);
  CHECK(total_reward > 0);
  const rlkernels::episode_statistics stats = env.get_episode_statistics();
  CHECK(stats.count >= n);  // random play loses within a few hundred frames
  CHECK(stats.mean_length > 10);
  CHECK(stats.max_return > 0);
}
