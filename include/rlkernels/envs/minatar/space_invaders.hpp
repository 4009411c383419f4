// rlkernels/envs/minatar/space_invaders.hpp
// MinAtar SpaceInvaders (minatar/environments/space_invaders.py, minatar 1.0.15), step for step: a
// cannon on the bottom row shoots up at a 4x6 block of aliens that sweeps sideways, steps down at
// the edges and shoots back. Reward 1 per alien hit; the episode ends when an alien or an alien
// bullet reaches the cannon (or the block steps down from the bottom row).
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "common.hpp"

#include <cstdint>

namespace rlkernels {

/// @brief MinAtar SpaceInvaders. Observation: 6 binary channels (0 cannon, 1 alien, 2 alien_left
/// = the aliens while they move left, 3 alien_right = the aliens while they move right,
/// 4 friendly_bullet, 5 enemy_bullet) of the 10x10 grid, [10, 10, 6] (or [6, 10, 10] with
/// channels_first). Actions: the full set {n, l, u, r, d, f} (minatar's SpaceInvaders-v0) or,
/// with minatar_action_set::minimal, {n, l, r, f} (SpaceInvaders-v1).
/// @tparam Scalar observation and reward type (float or double)
/// @tparam Set full or minimal action set
template <class Scalar = float, minatar_action_set Set = minatar_action_set::full>
struct minatar_space_invaders {
  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int channels = 6;  ///< cannon, alien, alien_left, alien_right, friendly_bullet, enemy_bullet
  static constexpr int observation_size = 10 * 10 * channels;         ///< 600
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = Set == minatar_action_set::full ? 6 : 4;  ///< 6 or 4

  /// Full-set id of action a (identity for the full set; {n, l, r, f} -> {0, 1, 3, 5} for the
  /// minimal one, minatar's minimal_action_set()).
  RLK_HOST_DEVICE static constexpr std::int32_t full_action(std::int32_t a) {
    return Set == minatar_action_set::full ? a : (a == 0 ? 0 : a == 1 ? 1 : a == 2 ? 3 : 5);
  }

  /// Settings (defaults: minatar's).
  struct Params {
    int max_episode_steps = 0;        ///< time limit (truncation); 0 = none (gymnax uses 1000)
    double sticky_action_prob = 0.1;  ///< probability of repeating the previous action, in [0, 1]
    bool difficulty_ramping = true;   ///< each cleared wave moves one frame faster, down to 6 (minatar's `ramping`)
    bool channels_first = false;      ///< observation layout [C, 10, 10] instead of [10, 10, C]
  };

  /// The game state. The three 10x10 maps of the reference are kept as bit rows: bit x of
  /// row[y] is cell (y, x), so numpy's row and column rolls become array shifts and bit rotations.
  struct State {
    std::uint16_t alien[10];     ///< alien_map
    std::uint16_t f_bullet[10];  ///< f_bullet_map: the cannon's bullets, moving up
    std::uint16_t e_bullet[10];  ///< e_bullet_map: the aliens' bullets, moving down
    std::int8_t pos;             ///< cannon column
    std::int8_t alien_dir;       ///< -1 left, +1 right
    std::int8_t enemy_move_interval;  ///< frames between alien moves of a full wave (12, ramps down to 6)
    std::int8_t alien_move_timer;  ///< frames until the aliens move again
    std::int8_t alien_shot_timer;  ///< frames until the next alien shot (every 10)
    std::int8_t shot_timer;        ///< frames until the cannon may fire again (cool-down 5)
    std::int8_t ramp_index;      ///< waves cleared while ramping (minatar's difficulty_ramp())
    bool terminal;               ///< the cannon was hit or reached by the aliens: episode over
    std::int32_t last_action;    ///< sticky actions: kept across resets, as minatar does
  };

  /// minatar SpaceInvaders' reset(): no random draws. The cannon at 5, aliens in rows 0-3 and
  /// columns 2-7 moving left, no bullets, full timers.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Gen&) {
    for (int y = 0; y < 10; ++y) {
      s.alien[y] = y < 4 ? wave_row : 0;
      s.f_bullet[y] = 0;
      s.e_bullet[y] = 0;
    }
    s.pos = 5;
    s.alien_dir = -1;
    s.enemy_move_interval = 12;  // enemy_move_interval
    s.alien_move_timer = 12;
    s.alien_shot_timer = 10;     // enemy_shot_interval
    s.ramp_index = 0;
    s.shot_timer = 0;
    s.terminal = false;
  }

  /// One frame (space_invaders.py act()): sticky action, cannon, bullets, aliens, hits, timers,
  /// and a new (faster) wave once the aliens are gone.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    const std::int32_t a = detail::minatar_sticky(p.sticky_action_prob, full_action(action), s.last_action, gen);
    int r = 0;
    if (s.terminal) return {Scalar(r), true};

    // Fire only when cooled down; 'f' during the cool-down does nothing (the elif chain).
    if (a == 5 && s.shot_timer == 0) {
      s.f_bullet[9] |= bit(s.pos);
      s.shot_timer = 5;  // shot_cool_down
    } else if (a == 1) {
      s.pos = s.pos - 1 < 0 ? 0 : s.pos - 1;
    } else if (a == 3) {
      s.pos = s.pos + 1 > 9 ? 9 : s.pos + 1;
    }

    // np.roll(f_bullet_map, -1, axis=0) then row 9 = 0: bullets move up, row 0 leaves the grid
    // (it wraps to row 9, which is cleared). A bullet fired this frame is on row 8 already.
    for (int y = 0; y < 9; ++y) s.f_bullet[y] = s.f_bullet[y + 1];
    s.f_bullet[9] = 0;
    // np.roll(e_bullet_map, 1, axis=0) then row 0 = 0: bullets move down, row 9 leaves the grid.
    for (int y = 9; y > 0; --y) s.e_bullet[y] = s.e_bullet[y - 1];
    s.e_bullet[0] = 0;
    if (s.e_bullet[9] & bit(s.pos)) s.terminal = true;

    if (s.alien[9] & bit(s.pos)) s.terminal = true;
    if (s.alien_move_timer == 0) {
      const int count = alien_count(s);
      s.alien_move_timer = std::int8_t(count < s.enemy_move_interval ? count : s.enemy_move_interval);
      const std::uint16_t columns = occupied_columns(s);
      if (((columns & bit(0)) && s.alien_dir < 0) || ((columns & bit(9)) && s.alien_dir > 0)) {
        s.alien_dir = std::int8_t(-s.alien_dir);
        if (s.alien[9] != 0) s.terminal = true;
        // np.roll(alien_map, 1, axis=0): a true roll, so aliens on row 9 wrap to row 0. The
        // episode has ended then, but the final observation shows the wrapped block.
        const std::uint16_t last = s.alien[9];
        for (int y = 9; y > 0; --y) s.alien[y] = s.alien[y - 1];
        s.alien[0] = last;
      } else {
        // np.roll(alien_map, alien_dir, axis=1), a rotation of each row (it never wraps here:
        // the block turns before it reaches the edge it is moving to).
        for (int y = 0; y < 10; ++y) {
          const unsigned row = s.alien[y];
          s.alien[y] = std::uint16_t(s.alien_dir > 0 ? ((row << 1) | (row >> 9)) & full_row
                                                     : (row >> 1) | ((row & 1u) << 9));
        }
      }
      if (s.alien[9] & bit(s.pos)) s.terminal = true;
    }
    if (s.alien_shot_timer == 0) {
      s.alien_shot_timer = 10;  // enemy_shot_interval
      // _nearest_alien(pos): columns in order of |x - pos|, a stable sort of 0..9, so of two
      // columns at the same distance the left one comes first; the lowest alien of the first
      // non-empty column shoots from its own cell. The map is never empty here (a cleared wave
      // is refilled at the end of the frame that cleared it), so the reference's `return None`
      // (which would raise) cannot happen; if it did, nobody shoots.
      const std::uint16_t columns = occupied_columns(s);
      int col = -1;
      for (int d = 0; d < 10 && col < 0; ++d) {
        if (s.pos - d >= 0 && (columns & bit(s.pos - d))) {
          col = s.pos - d;
        } else if (s.pos + d <= 9 && (columns & bit(s.pos + d))) {
          col = s.pos + d;
        }
      }
      if (col >= 0) {
        int row = 9;
        while (!(s.alien[row] & bit(col))) --row;  // np.max(np.where(alien_map[:, col] == 1))
        s.e_bullet[row] |= bit(col);
      }
    }

    // kill_locations = alien_map & (alien_map == f_bullet_map): cells holding an alien and a bullet.
    for (int y = 0; y < 10; ++y) {
      const std::uint16_t kill = s.alien[y] & s.f_bullet[y];
      r += popcount(kill);
      s.alien[y] = std::uint16_t(s.alien[y] & ~kill);
      s.f_bullet[y] = std::uint16_t(s.f_bullet[y] & ~kill);
    }

    if (s.shot_timer > 0) --s.shot_timer;
    --s.alien_move_timer;
    --s.alien_shot_timer;
    if (alien_count(s) == 0) {
      // A new wave: only the aliens come back; bullets, direction and timers carry on.
      if (s.enemy_move_interval > 6 && p.difficulty_ramping) {
        --s.enemy_move_interval;
        ++s.ramp_index;
      }
      for (int y = 0; y < 4; ++y) s.alien[y] = wave_row;
    }
    return {Scalar(r), s.terminal};
  }

  /// minatar SpaceInvaders' state(): cannon (row 9), aliens, aliens again in the channel of their
  /// direction, friendly and enemy bullets.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    detail::minatar_clear(obs, channels);
    const bool cf = p.channels_first;
    obs[detail::minatar_index(cf, channels, 9, s.pos, 0)] = Scalar(1);
    const int dir_channel = s.alien_dir < 0 ? 2 : 3;
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 10; ++x) {
        if (s.alien[y] & bit(x)) {
          obs[detail::minatar_index(cf, channels, y, x, 1)] = Scalar(1);
          obs[detail::minatar_index(cf, channels, y, x, dir_channel)] = Scalar(1);
        }
        if (s.f_bullet[y] & bit(x)) obs[detail::minatar_index(cf, channels, y, x, 4)] = Scalar(1);
        if (s.e_bullet[y] & bit(x)) obs[detail::minatar_index(cf, channels, y, x, 5)] = Scalar(1);
      }
  }

 private:
  static constexpr std::uint16_t full_row = 0x3FF;  ///< all ten columns
  static constexpr std::uint16_t wave_row = 0xFC;   ///< columns 2-7: alien_map[0:4, 2:8] = 1

  RLK_HOST_DEVICE static constexpr std::uint16_t bit(int x) { return std::uint16_t(1u << x); }

  RLK_HOST_DEVICE static int popcount(unsigned v) {
    int n = 0;
    for (; v != 0; v &= v - 1) ++n;
    return n;
  }

  RLK_HOST_DEVICE static int alien_count(const State& s) {
    int n = 0;
    for (int y = 0; y < 10; ++y) n += popcount(s.alien[y]);
    return n;
  }

  /// Bit x set when column x holds an alien.
  RLK_HOST_DEVICE static std::uint16_t occupied_columns(const State& s) {
    std::uint16_t any = 0;
    for (int y = 0; y < 10; ++y) any = std::uint16_t(any | s.alien[y]);
    return any;
  }
};

}  // namespace rlkernels
