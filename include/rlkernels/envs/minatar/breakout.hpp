// rlkernels/envs/minatar/breakout.hpp
// MinAtar Breakout (minatar/environments/breakout.py, minatar 1.0.15), step for step: a paddle on
// the bottom row, a ball moving diagonally, three rows of bricks that come back when all are gone.
// Reward 1 per brick; the episode ends when the ball passes the paddle.
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "common.hpp"

#include <cstdint>

namespace rlkernels {

/// @brief MinAtar Breakout. Observation: 4 binary channels (0 paddle, 1 ball, 2 trail = the ball's
/// previous cell, 3 brick) of the 10x10 grid, [10, 10, 4] (or [4, 10, 10] with channels_first).
/// Actions: the full set {n, l, u, r, d, f} (minatar's Breakout-v0) or, with
/// minatar_action_set::minimal, {n, l, r} (Breakout-v1).
/// @tparam Scalar observation and reward type (float or double)
/// @tparam Set full or minimal action set
template <class Scalar = float, minatar_action_set Set = minatar_action_set::full>
struct minatar_breakout {
  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int channels = 4;                                  ///< paddle, ball, trail, brick
  static constexpr int observation_size = 10 * 10 * channels;         ///< 400
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = Set == minatar_action_set::full ? 6 : 3;  ///< 6 or 3

  /// Full-set id of action a (identity for the full set; {n, l, r} -> {0, 1, 3} for the minimal).
  RLK_HOST_DEVICE static constexpr std::int32_t full_action(std::int32_t a) {
    return Set == minatar_action_set::full ? a : (a == 0 ? 0 : a == 1 ? 1 : 3);
  }

  /// Settings (defaults: minatar's).
  struct Params {
    int max_episode_steps = 0;        ///< time limit (truncation); 0 = none (gymnax uses 1000)
    double sticky_action_prob = 0.1;  ///< probability of repeating the previous action, in [0, 1]
    bool channels_first = false;      ///< observation layout [C, 10, 10] instead of [10, 10, C]
  };

  /// The game state.
  struct State {
    std::int8_t ball_x;    ///< ball column, in [0, 9]
    std::int8_t ball_y;    ///< ball row, in [0, 9]
    std::int8_t ball_dir;  ///< ball direction: 0 up-left, 1 up-right, 2 down-right, 3 down-left
    std::int8_t pos;       ///< paddle column on row 9, in [0, 9]
    std::int8_t last_x;    ///< ball column before the last move (the trail)
    std::int8_t last_y;    ///< ball row before the last move (the trail)
    bool strike;           ///< the ball met a brick last frame; a brick met on the next frame is not broken
    bool terminal;         ///< the ball passed the paddle: episode over
    std::int32_t last_action;   ///< sticky actions: kept across resets, as minatar does
    std::uint8_t bricks[10][10];  ///< brick_map[y][x]
  };

  /// minatar Breakout's reset(): the ball starts at (3, 0) moving down-right or (3, 9) moving
  /// down-left (one randint(2)), the paddle at 4, bricks in rows 1-3.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Gen& gen) {
    s.ball_y = 3;
    const bool right_start = gen.uniform_int(2u) == 1u;
    s.ball_x = right_start ? 9 : 0;
    s.ball_dir = right_start ? 3 : 2;
    s.pos = 4;
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 10; ++x) s.bricks[y][x] = (y >= 1 && y <= 3) ? 1 : 0;
    s.strike = false;
    s.last_x = s.ball_x;
    s.last_y = s.ball_y;
    s.terminal = false;
  }

  /// One frame: sticky action, paddle move, ball move with wall, brick and paddle bounces.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    const std::int32_t a = detail::minatar_sticky(p.sticky_action_prob, full_action(action), s.last_action, gen);
    int r = 0;
    if (s.terminal) return {Scalar(r), true};
    if (a == 1) {
      s.pos = s.pos - 1 < 0 ? 0 : s.pos - 1;
    } else if (a == 3) {
      s.pos = s.pos + 1 > 9 ? 9 : s.pos + 1;
    }
    s.last_x = s.ball_x;
    s.last_y = s.ball_y;
    int new_x = s.ball_x + (s.ball_dir == 1 || s.ball_dir == 2 ? 1 : -1);
    int new_y = s.ball_y + (s.ball_dir == 2 || s.ball_dir == 3 ? 1 : -1);
    constexpr std::int8_t flip_x[4] = {1, 0, 3, 2}, flip_y[4] = {3, 2, 1, 0}, paddle_edge[4] = {2, 3, 0, 1};
    bool strike_toggle = false;
    if (new_x < 0 || new_x > 9) {
      new_x = new_x < 0 ? 0 : 9;
      s.ball_dir = flip_x[s.ball_dir];
    }
    if (new_y < 0) {
      new_y = 0;
      s.ball_dir = flip_y[s.ball_dir];
    } else if (s.bricks[new_y][new_x] == 1) {
      strike_toggle = true;
      if (!s.strike) {
        r += 1;
        s.strike = true;
        s.bricks[new_y][new_x] = 0;
        new_y = s.last_y;
        s.ball_dir = flip_y[s.ball_dir];
      }
    } else if (new_y == 9) {
      bool any = false;
      for (int y = 0; y < 10; ++y)
        for (int x = 0; x < 10; ++x) any = any || s.bricks[y][x] != 0;
      if (!any)
        for (int y = 1; y <= 3; ++y)
          for (int x = 0; x < 10; ++x) s.bricks[y][x] = 1;
      if (s.ball_x == s.pos) {
        s.ball_dir = flip_y[s.ball_dir];
        new_y = s.last_y;
      } else if (new_x == s.pos) {
        s.ball_dir = paddle_edge[s.ball_dir];
        new_y = s.last_y;
      } else {
        s.terminal = true;
      }
    }
    if (!strike_toggle) s.strike = false;
    s.ball_x = std::int8_t(new_x);
    s.ball_y = std::int8_t(new_y);
    return {Scalar(r), s.terminal};
  }

  /// minatar Breakout's state(): ball, paddle (row 9), trail, bricks.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    detail::minatar_clear(obs, channels);
    const bool cf = p.channels_first;
    obs[detail::minatar_index(cf, channels, s.ball_y, s.ball_x, 1)] = Scalar(1);
    obs[detail::minatar_index(cf, channels, 9, s.pos, 0)] = Scalar(1);
    obs[detail::minatar_index(cf, channels, s.last_y, s.last_x, 2)] = Scalar(1);
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 10; ++x)
        if (s.bricks[y][x]) obs[detail::minatar_index(cf, channels, y, x, 3)] = Scalar(1);
  }
};

}  // namespace rlkernels
