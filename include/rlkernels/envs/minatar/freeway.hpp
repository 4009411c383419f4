// rlkernels/envs/minatar/freeway.hpp
// MinAtar Freeway (minatar/environments/freeway.py, minatar 1.0.15), step for step: a chicken in
// column 4 crosses eight lanes of cars (rows 1-8) moving up or down, at most once every 3 frames.
// Reward 1 per crossing (then back to the bottom, car speeds re-drawn); a car sends the chicken
// back to the bottom. The episode ends after 2500 frames (see the quirk in step()).
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "common.hpp"

#include <cstdint>

namespace rlkernels {

/// @brief MinAtar Freeway. Observation: 7 binary channels (0 chicken, 1 car, 2-6 trail of a car
/// that moves once every 1-5 frames, on the cell behind it) of the 10x10 grid, [10, 10, 7] (or
/// [7, 10, 10] with channels_first). Actions: the full set {n, l, u, r, d, f} (minatar's
/// Freeway-v0) or, with minatar_action_set::minimal, {n, u, d} (Freeway-v1).
/// @tparam Scalar observation and reward type (float or double)
/// @tparam Set full or minimal action set
template <class Scalar = float, minatar_action_set Set = minatar_action_set::full>
struct minatar_freeway {
  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int channels = 7;                                  ///< chicken, car, speed1..speed5
  static constexpr int observation_size = 10 * 10 * channels;         ///< 700
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = Set == minatar_action_set::full ? 6 : 3;  ///< 6 or 3

  /// Full-set id of action a (identity for the full set; {n, u, d} -> {0, 2, 4} for the minimal).
  RLK_HOST_DEVICE static constexpr std::int32_t full_action(std::int32_t a) {
    return Set == minatar_action_set::full ? a : a * 2;
  }

  /// Settings (defaults: minatar's).
  struct Params {
    int max_episode_steps = 0;        ///< time limit (truncation); 0 = none (gymnax uses 1000)
    double sticky_action_prob = 0.1;  ///< probability of repeating the previous action, in [0, 1]
    bool difficulty_ramping = true;   ///< accepted for uniformity; Freeway does not ramp (as in minatar)
    bool channels_first = false;      ///< observation layout [C, 10, 10] instead of [10, 10, C]
  };

  /// Number of cars: car i drives in row i + 1.
  static constexpr int cars = 8;

  /// The game state.
  struct State {
    std::int8_t car_x[cars];      ///< column of car i (row i + 1)
    std::int8_t car_timer[cars];  ///< frames until car i moves again
    std::int8_t car_speed[cars];  ///< signed: |speed| = frames per move, sign = direction (+ right)
    std::int8_t pos;              ///< chicken's row (column is always 4)
    std::int8_t move_timer;       ///< frames until the chicken may move again
    std::int16_t terminate_timer;  ///< frames left: starts at 2500, the episode ends below 0
    bool terminal;                ///< the time limit ran out: episode over
    std::int32_t last_action;  ///< sticky actions: kept across resets, as minatar does
  };

  /// minatar Freeway's reset(): all cars at x = 0 with random speeds, chicken at the bottom.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Gen& gen) {
    for (int i = 0; i < cars; ++i) s.car_x[i] = 0;
    randomize_cars(s, gen);
    s.pos = 9;
    s.move_timer = 3;  // player_speed
    s.terminate_timer = 2500;  // time_limit
    s.terminal = false;
  }

  /// One frame: sticky action, chicken move, crossing, cars move (with hits), timers.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    const std::int32_t a = detail::minatar_sticky(p.sticky_action_prob, full_action(action), s.last_action, gen);
    int r = 0;
    if (s.terminal) return {Scalar(r), true};

    if (a == 2 && s.move_timer == 0) {
      s.move_timer = 3;
      s.pos = s.pos - 1 < 0 ? 0 : s.pos - 1;
    } else if (a == 4 && s.move_timer == 0) {
      s.move_timer = 3;
      s.pos = s.pos + 1 > 9 ? 9 : s.pos + 1;
    }

    if (s.pos == 0) {
      r += 1;
      randomize_cars(s, gen);  // new speeds; the cars keep their columns
      s.pos = 9;
    }

    // A car hits the chicken if it is on the chicken's cell before or after its move (a car that
    // jumps over the chicken's cell, or that the chicken walks past, does not).
    for (int i = 0; i < cars; ++i) {
      if (s.car_x[i] == 4 && i + 1 == s.pos) s.pos = 9;
      if (s.car_timer[i] == 0) {
        s.car_timer[i] = abs8(s.car_speed[i]);
        s.car_x[i] = std::int8_t(s.car_x[i] + (s.car_speed[i] > 0 ? 1 : -1));
        if (s.car_x[i] < 0) {
          s.car_x[i] = 9;
        } else if (s.car_x[i] > 9) {
          s.car_x[i] = 0;
        }
        if (s.car_x[i] == 4 && i + 1 == s.pos) s.pos = 9;
      } else {
        s.car_timer[i] = std::int8_t(s.car_timer[i] - 1);
      }
    }

    s.move_timer = std::int8_t(s.move_timer - (s.move_timer > 0));
    // Quirk (freeway.py, act(): `if(self.terminate_timer<0)`): the timer starts at 2500 and the
    // episode ends when it drops below 0, i.e. on the 2501st frame.
    s.terminate_timer = std::int16_t(s.terminate_timer - 1);
    if (s.terminate_timer < 0) s.terminal = true;
    return {Scalar(r), s.terminal};
  }

  /// minatar Freeway's state(): chicken in column 4, each car and its trail (the cell behind it,
  /// wrapping around) in the channel of its speed.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    detail::minatar_clear(obs, channels);
    const bool cf = p.channels_first;
    obs[detail::minatar_index(cf, channels, s.pos, 4, 0)] = Scalar(1);
    // Quirk (freeway.py, state()): `trail` is only assigned for |speed| in 1..5, so a car of speed 0
    // (see randomize_cars) reuses the previous car's trail channel (the reference raises for car 0;
    // we then draw no trail).
    int trail = -1;
    for (int i = 0; i < cars; ++i) {
      const int x = s.car_x[i], y = i + 1;
      obs[detail::minatar_index(cf, channels, y, x, 1)] = Scalar(1);
      int back_x = s.car_speed[i] > 0 ? x - 1 : x + 1;
      back_x = back_x < 0 ? 9 : back_x > 9 ? 0 : back_x;
      const int speed = abs8(s.car_speed[i]);
      if (speed >= 1 && speed <= 5) trail = 1 + speed;
      if (trail >= 0) obs[detail::minatar_index(cf, channels, y, back_x, trail)] = Scalar(1);
    }
  }

 private:
  RLK_HOST_DEVICE static std::int8_t abs8(std::int8_t v) { return v < 0 ? std::int8_t(-v) : v; }

  /// minatar's _randomize_cars(): randint(1, 6, 8) speeds, then rand(8) directions
  /// (np.sign(u - 0.5)); every car's timer becomes |speed|.
  /// Quirk: a draw of exactly 0.5 gives np.sign 0, a car of speed 0, which then moves left every
  /// frame (`car[3]>0` is false and its timer stays 0); kept as is.
  template <class Gen>
  RLK_HOST_DEVICE static void randomize_cars(State& s, Gen& gen) {
    std::int8_t speeds[cars];
    for (int i = 0; i < cars; ++i) speeds[i] = std::int8_t(1 + gen.uniform_int(5u));
    for (int i = 0; i < cars; ++i) {
      const double u = gen.template uniform<double>() - 0.5;
      const int direction = u > 0 ? 1 : u < 0 ? -1 : 0;
      s.car_speed[i] = std::int8_t(speeds[i] * direction);
      s.car_timer[i] = abs8(s.car_speed[i]);
    }
  }
};

}  // namespace rlkernels
