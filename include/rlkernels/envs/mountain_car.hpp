// rlkernels/envs/mountain_car.hpp
// MountainCar-v0 as Gymnasium defines it (classic_control/mountain_car.py, Moore 1990): drive an
// underpowered car up a hill by rocking it. Three discrete actions, reward -1 per step,
// terminated at the flag, truncated at 200 steps.
#pragma once

#include "../core/config.hpp"
#include "../core/math.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief MountainCar-v0. One step of `mountain_car<double>` reproduces Gymnasium bit for bit (the
/// reference computes in float64; compile without floating-point contraction); `mountain_car<float>`
/// runs the same equations in float.
///
/// Observation [2]: position in [-1.2, 0.6], velocity in [-0.07, 0.07]. Actions: 0 accelerates
/// left, 1 does nothing, 2 accelerates right. Hitting the left wall stops the car.
/// @tparam Scalar float or double: state, observation and reward type
template <class Scalar = float>
struct mountain_car {
  using scalar_type = Scalar;                                         ///< state, observation, reward type
  static constexpr int observation_size = 2;                          ///< [position, velocity]
  static constexpr action_kind action_space = action_kind::discrete;  ///< Discrete(3)
  static constexpr int num_actions = 3;                               ///< 0 left, 1 none, 2 right

  /// Position and velocity of the car; the observation is this state as is.
  struct State {
    Scalar position;  ///< in [min_position, max_position]
    Scalar velocity;  ///< in [-max_speed, max_speed]
  };

  /// Gymnasium's constants (`goal_velocity` is the one Gymnasium lets you change through make()).
  struct Params {
    Scalar min_position = Scalar(-1.2);   ///< left wall
    Scalar max_position = Scalar(0.6);    ///< right end
    Scalar max_speed = Scalar(0.07);      ///< |velocity| is clipped to it
    Scalar goal_position = Scalar(0.5);   ///< terminated at or beyond it...
    Scalar goal_velocity = Scalar(0);     ///< ...with at least this velocity
    Scalar force = Scalar(0.001);         ///< acceleration per action unit
    Scalar gravity = Scalar(0.0025);      ///< slope term: -gravity * cos(3 position)
    Scalar reset_low = Scalar(-0.6);      ///< reset draws position from U(reset_low, reset_high)
    Scalar reset_high = Scalar(-0.4);     ///< (velocity starts at 0)
    int max_episode_steps = 200;          ///< time limit of MountainCar-v0 (truncation)
  };

  /// position ~ U(-0.6, -0.4), velocity 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    s.position = gen.template uniform<Scalar>(p.reset_low, p.reset_high);
    s.velocity = Scalar(0);
  }

  /// One step: accelerate, clip the speed, move, clip the position, stop at the left wall.
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Rng&) {
    // Same operations in the same order as Gymnasium.
    Scalar velocity = s.velocity + (Scalar(action - 1) * p.force + std::cos(Scalar(3) * s.position) * (-p.gravity));
    velocity = detail::clip(velocity, -p.max_speed, p.max_speed);
    Scalar position = detail::clip(s.position + velocity, p.min_position, p.max_position);
    if (position == p.min_position && velocity < Scalar(0)) velocity = Scalar(0);
    s.position = position;
    s.velocity = velocity;
    const bool terminated = position >= p.goal_position && velocity >= p.goal_velocity;
    return {Scalar(-1), terminated};  // -1 on the terminal step too
  }

  /// The observation is the state: [position, velocity].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    obs[0] = s.position;
    obs[1] = s.velocity;
  }
};

}  // namespace rlkernels
