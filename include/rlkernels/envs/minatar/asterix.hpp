// rlkernels/envs/minatar/asterix.hpp
// MinAtar Asterix (minatar/environments/asterix.py, minatar 1.0.15), step for step: the player
// moves in the 4 directions; enemies and gold enter from the sides of rows 1-8 and cross them.
// Reward 1 per gold picked up; the episode ends on contact with an enemy. Enemies spawn more often
// and move faster as the episode goes on (difficulty ramping).
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "common.hpp"

#include <cstdint>

namespace rlkernels {

/// @brief MinAtar Asterix. Observation: 4 binary channels (0 player, 1 enemy, 2 trail = the cell
/// an entity came from, 3 gold) of the 10x10 grid, [10, 10, 4] (or [4, 10, 10] with
/// channels_first). Actions: the full set {n, l, u, r, d, f} (minatar's Asterix-v0) or, with
/// minatar_action_set::minimal, {n, l, u, r, d} (Asterix-v1).
/// @tparam Scalar observation and reward type (float or double)
/// @tparam Set full or minimal action set
template <class Scalar = float, minatar_action_set Set = minatar_action_set::full>
struct minatar_asterix {
  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int channels = 4;                                  ///< player, enemy, trail, gold
  static constexpr int observation_size = 10 * 10 * channels;         ///< 400
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = Set == minatar_action_set::full ? 6 : 5;  ///< 6 or 5

  /// Full-set id of action a: the minimal set {n, l, u, r, d} is the full set without 'f', so both
  /// map to themselves.
  RLK_HOST_DEVICE static constexpr std::int32_t full_action(std::int32_t a) { return a; }

  /// Settings (defaults: minatar's).
  struct Params {
    int max_episode_steps = 0;        ///< time limit (truncation); 0 = none (gymnax uses 1000)
    double sticky_action_prob = 0.1;  ///< probability of repeating the previous action, in [0, 1]
    bool difficulty_ramping = true;   ///< spawn and move faster over time (minatar's `difficulty_ramping`)
    bool channels_first = false;      ///< observation layout [C, 10, 10] instead of [10, 10, C]
  };

  /// Number of entity slots: slot i is row i + 1.
  static constexpr int slots = 8;

  /// The game state.
  struct State {
    std::int8_t player_x;                         ///< player column, in [0, 9]
    std::int8_t player_y;                         ///< player row, in [1, 8]
    std::int8_t entity_x[slots];                  ///< column of the entity in slot i (row i + 1)
    bool alive[slots];                            ///< slot i holds an entity (minatar: not None)
    bool moving_right[slots];                     ///< minatar's `lr`: entered at x = 0, moves right
    bool gold[slots];                             ///< gold (reward) rather than an enemy
    std::int8_t spawn_speed;                      ///< frames between spawns (10, ramps down to 1)
    std::int8_t spawn_timer;                      ///< frames until the next spawn
    std::int8_t move_speed;                       ///< frames between entity moves (5, ramps down to 1)
    std::int8_t move_timer;                       ///< frames until the entities move again
    std::int8_t ramp_timer;                       ///< frames until the next ramp step (100 down to -1)
    std::int8_t ramp_index;                       ///< ramp steps taken; move_speed drops on odd ones
    bool terminal;                                ///< an enemy touched the player: episode over
    std::int32_t last_action;  ///< sticky actions: kept across resets, as minatar does
  };

  /// minatar Asterix's reset(): player at (5, 5), no entities, initial speeds; draws nothing.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Gen&) {
    s.player_x = 5;
    s.player_y = 5;
    for (int i = 0; i < slots; ++i) {
      s.entity_x[i] = 0;
      s.alive[i] = false;
      s.moving_right[i] = false;
      s.gold[i] = false;
    }
    s.spawn_speed = 10;  // init_spawn_speed
    s.spawn_timer = s.spawn_speed;
    s.move_speed = 5;  // init_move_interval
    s.move_timer = s.move_speed;
    s.ramp_timer = 100;  // ramp_interval
    s.ramp_index = 0;
    s.terminal = false;
  }

  /// One frame: sticky action, spawn, player move, collisions, entity move, timers, ramping.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    const std::int32_t a = detail::minatar_sticky(p.sticky_action_prob, full_action(action), s.last_action, gen);
    int r = 0;
    if (s.terminal) return {Scalar(r), true};

    if (s.spawn_timer == 0) {
      spawn_entity(s, gen);
      s.spawn_timer = s.spawn_speed;
    }

    if (a == 1) {
      s.player_x = s.player_x - 1 < 0 ? 0 : s.player_x - 1;
    } else if (a == 3) {
      s.player_x = s.player_x + 1 > 9 ? 9 : s.player_x + 1;
    } else if (a == 2) {
      s.player_y = s.player_y - 1 < 1 ? 1 : s.player_y - 1;
    } else if (a == 4) {
      s.player_y = s.player_y + 1 > 8 ? 8 : s.player_y + 1;
    }

    // Collisions after the player moved. An enemy hit ends the episode but the frame goes on
    // (entities still move, timers and ramp still update), as in the reference. A player and an
    // entity that swap cells in one frame do not meet.
    for (int i = 0; i < slots; ++i) collide(s, i, r);
    if (s.move_timer == 0) {
      s.move_timer = s.move_speed;
      for (int i = 0; i < slots; ++i) {
        if (!s.alive[i]) continue;
        s.entity_x[i] = std::int8_t(s.entity_x[i] + (s.moving_right[i] ? 1 : -1));
        if (s.entity_x[i] < 0 || s.entity_x[i] > 9) {
          s.alive[i] = false;  // left the screen (it cannot be on the player's cell then)
        } else {
          collide(s, i, r);
        }
      }
    }

    s.spawn_timer = std::int8_t(s.spawn_timer - 1);
    s.move_timer = std::int8_t(s.move_timer - 1);

    // Quirk (asterix.py, act(): `if(self.ramp_timer>=0)`): the timer counts down through 0 to -1
    // before a ramp step, so the difficulty rises every ramp_interval + 2 = 102 frames, not 100.
    // Ramping stops once both speeds reach 1; move_speed drops only on odd ramp indices.
    if (p.difficulty_ramping && (s.spawn_speed > 1 || s.move_speed > 1)) {
      if (s.ramp_timer >= 0) {
        s.ramp_timer = std::int8_t(s.ramp_timer - 1);
      } else {
        if (s.move_speed > 1 && s.ramp_index % 2) s.move_speed = std::int8_t(s.move_speed - 1);
        if (s.spawn_speed > 1) s.spawn_speed = std::int8_t(s.spawn_speed - 1);
        s.ramp_index = std::int8_t(s.ramp_index + 1);
        s.ramp_timer = 100;
      }
    }
    return {Scalar(r), s.terminal};
  }

  /// minatar Asterix's state(): player, then each entity (enemy or gold) with its trail.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    detail::minatar_clear(obs, channels);
    const bool cf = p.channels_first;
    obs[detail::minatar_index(cf, channels, s.player_y, s.player_x, 0)] = Scalar(1);
    for (int i = 0; i < slots; ++i) {
      if (!s.alive[i]) continue;
      const int x = s.entity_x[i], y = i + 1;
      obs[detail::minatar_index(cf, channels, y, x, s.gold[i] ? 3 : 1)] = Scalar(1);
      const int back_x = s.moving_right[i] ? x - 1 : x + 1;
      if (back_x >= 0 && back_x <= 9) obs[detail::minatar_index(cf, channels, y, back_x, 2)] = Scalar(1);
    }
  }

 private:
  /// Entity i on the player's cell: gold is picked up (+1), an enemy ends the episode (and stays).
  RLK_HOST_DEVICE static void collide(State& s, int i, int& r) {
    if (!s.alive[i] || s.entity_x[i] != s.player_x || i + 1 != s.player_y) return;
    if (s.gold[i]) {
      s.alive[i] = false;
      r += 1;
    } else {
      s.terminal = true;
    }
  }

  /// minatar's _spawn_entity(): rand() for the side, rand() for gold, then (only if a row is free)
  /// randint over the free slots, in slot order. Both rand()s are drawn even when no row is free.
  template <class Gen>
  RLK_HOST_DEVICE static void spawn_entity(State& s, Gen& gen) {
    const bool lr = gen.template uniform<double>() < 1.0 / 2.0;
    const bool is_gold = gen.template uniform<double>() < 1.0 / 3.0;
    int free_slots[slots];
    int n = 0;
    for (int i = 0; i < slots; ++i)
      if (!s.alive[i]) free_slots[n++] = i;
    if (n == 0) return;
    const int slot = free_slots[gen.uniform_int(std::uint32_t(n))];
    s.alive[slot] = true;
    s.entity_x[slot] = lr ? 0 : 9;
    s.moving_right[slot] = lr;
    s.gold[slot] = is_gold;
  }
};

}  // namespace rlkernels
