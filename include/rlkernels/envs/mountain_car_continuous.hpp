// rlkernels/envs/mountain_car_continuous.hpp
// MountainCarContinuous-v0 as Gymnasium defines it (classic_control/continuous_mountain_car.py):
// MountainCar with a continuous force; +100 at the flag, minus 0.1 a^2 per step; truncated at 999.
#pragma once

#include "../core/config.hpp"
#include "../core/math.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>

namespace rlkernels {

/// @brief MountainCarContinuous-v0, in float64 (`mountain_car_continuous<double>`) or float.
///
/// Gymnasium itself does not compute this env in float64: it stores the state as float32 after
/// every step and, under NumPy 2's promotion rules, does the velocity update in float32 when
/// the action is a float32 array. `mountain_car_continuous<double>` computes the same formula in
/// float64 throughout (within 1e-7 relative of Gymnasium for one step; the tests prove 1e-6), and
/// `mountain_car_continuous<float>` in float.
///
/// Observation [2]: position in [-1.2, 0.6], velocity in [-0.07, 0.07]. Action [1]: force, clipped
/// to [-1, 1] for the dynamics; the reward's action cost uses the action as given (unclipped), as
/// in Gymnasium.
/// @tparam Scalar float or double: state, observation, action and reward type
template <class Scalar = float>
struct mountain_car_continuous {
  using scalar_type = Scalar;                                           ///< state, observation, action, reward type
  static constexpr int observation_size = 2;                            ///< [position, velocity]
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (1,))
  static constexpr int action_size = 1;                                 ///< force
  static constexpr Scalar action_low = Scalar(-1);                      ///< min_action
  static constexpr Scalar action_high = Scalar(1);                      ///< max_action

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
    Scalar goal_position = Scalar(0.45);  ///< terminated at or beyond it...
    Scalar goal_velocity = Scalar(0);     ///< ...with at least this velocity
    Scalar power = Scalar(0.0015);        ///< acceleration per unit of force
    Scalar gravity = Scalar(0.0025);      ///< slope term: -gravity * cos(3 position)
    Scalar goal_reward = Scalar(100);     ///< reward for reaching the goal
    Scalar action_cost = Scalar(0.1);     ///< reward -= action_cost * a^2
    Scalar reset_low = Scalar(-0.6);      ///< reset draws position from U(reset_low, reset_high)
    Scalar reset_high = Scalar(-0.4);     ///< (velocity starts at 0)
    int max_episode_steps = 999;          ///< time limit of MountainCarContinuous-v0 (truncation)
  };

  /// position ~ U(-0.6, -0.4), velocity 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    s.position = gen.template uniform<Scalar>(p.reset_low, p.reset_high);
    s.velocity = Scalar(0);
  }

  /// One step: accelerate with the clipped force, clip the speed, move, clip the position, stop at
  /// the left wall. Reward: goal_reward when terminated, minus action_cost * a^2 (unclipped a).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    const Scalar a = action[0];
    const Scalar force = detail::clip(a, action_low, action_high);
    // Same operations in the same order as Gymnasium.
    Scalar velocity = s.velocity + (force * p.power - p.gravity * std::cos(Scalar(3) * s.position));
    velocity = detail::clip(velocity, -p.max_speed, p.max_speed);
    Scalar position = detail::clip(s.position + velocity, p.min_position, p.max_position);
    if (position == p.min_position && velocity < Scalar(0)) velocity = Scalar(0);
    s.position = position;
    s.velocity = velocity;
    const bool terminated = position >= p.goal_position && velocity >= p.goal_velocity;
    const Scalar reward = (terminated ? p.goal_reward : Scalar(0)) - detail::reference_square(a) * p.action_cost;
    return {reward, terminated};
  }

  /// The observation is the state: [position, velocity].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    obs[0] = s.position;
    obs[1] = s.velocity;
  }
};

}  // namespace rlkernels
