// rlkernels/envs/pendulum.hpp
// Pendulum-v1 as Gymnasium defines it (classic_control/pendulum.py): swing a pendulum up and keep
// it upright with a bounded torque. Continuous action, reward = -cost, never terminates,
// truncated at 200 steps.
#pragma once

#include "../core/config.hpp"
#include "../core/math.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>

namespace rlkernels {

/// @brief Pendulum-v1. One step of `pendulum<double>` reproduces Gymnasium bit for bit when the
/// action is given as float64 (then the reference computes in float64 throughout; compile without
/// floating-point contraction, e.g. `-ffp-contract=off`). With a float32 action, NumPy 2 rounds
/// the terms 3*u and 0.001*u^2 to float32 (NEP 50 promotion); pendulum<double> keeps them in
/// double, within 1e-7 relative of the reference. `pendulum<float>` runs everything in float.
///
/// Observation [3]: cos(theta), sin(theta), theta_dot. Action [1]: torque, clipped to
/// [-2, 2]. Reward: -(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2) on the state before
/// the step (0 at best, about -16.27 at worst). theta = 0 is upright; theta is not wrapped in the state.
/// @tparam Scalar float or double: state, observation, action and reward type
template <class Scalar = float>
struct pendulum {
  using scalar_type = Scalar;                                           ///< state, observation, action, reward type
  static constexpr int observation_size = 3;                            ///< [cos th, sin th, thdot]
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-2, 2, (1,))
  static constexpr int action_size = 1;                                 ///< torque
  static constexpr Scalar action_low = Scalar(-2);                      ///< max_torque, negated
  static constexpr Scalar action_high = Scalar(2);                      ///< max_torque

  /// Angle and angular velocity.
  struct State {
    Scalar theta;      ///< angle from upright (rad), unbounded
    Scalar theta_dot;  ///< angular velocity (rad/s), in [-max_speed, max_speed]
  };

  /// Gymnasium's constants (`g` is the one Gymnasium lets you change through make()).
  struct Params {
    Scalar g = Scalar(10.0);          ///< gravity (m/s^2)
    Scalar m = Scalar(1.0);           ///< mass (kg)
    Scalar l = Scalar(1.0);           ///< length (m)
    Scalar dt = Scalar(0.05);         ///< seconds per step
    Scalar max_speed = Scalar(8);     ///< angular velocity is clipped to +-max_speed
    Scalar reset_theta = detail::pi_v<Scalar>;  ///< reset draws theta from U(-reset_theta, reset_theta)
    Scalar reset_theta_dot = Scalar(1.0);       ///< and theta_dot from U(-reset_theta_dot, reset_theta_dot)
    int max_episode_steps = 200;                ///< time limit of Pendulum-v1 (truncation)
  };

  /// theta ~ U(-pi, pi), theta_dot ~ U(-1, 1).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    s.theta = gen.template uniform<Scalar>(-p.reset_theta, p.reset_theta);
    s.theta_dot = gen.template uniform<Scalar>(-p.reset_theta_dot, p.reset_theta_dot);
  }

  /// Applies the clipped torque for dt seconds (semi-implicit Euler); the reward is the negated
  /// cost of the state before the step. Never terminates.
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    using detail::reference_square;
    const Scalar u = detail::clip(action[0], action_low, action_high);
    // Same operations in the same order as Gymnasium (`x**2` is libm's pow there).
    const Scalar costs = reference_square(angle_normalize(s.theta)) + Scalar(0.1) * reference_square(s.theta_dot) +
                         Scalar(0.001) * reference_square(u);
    Scalar new_theta_dot =
        s.theta_dot +
        (Scalar(3) * p.g / (Scalar(2) * p.l) * std::sin(s.theta) + Scalar(3.0) / (p.m * reference_square(p.l)) * u) *
            p.dt;
    new_theta_dot = detail::clip(new_theta_dot, -p.max_speed, p.max_speed);
    s.theta = s.theta + new_theta_dot * p.dt;
    s.theta_dot = new_theta_dot;
    return {-costs, false};
  }

  /// [cos theta, sin theta, theta_dot].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    obs[0] = std::cos(s.theta);
    obs[1] = std::sin(s.theta);
    obs[2] = s.theta_dot;
  }

  /// theta mapped into [-pi, pi) as Gymnasium's angle_normalize: ((x + pi) mod 2 pi) - pi.
  RLK_HOST_DEVICE static Scalar angle_normalize(Scalar x) {
    constexpr Scalar pi = detail::pi_v<Scalar>;
    return detail::floor_mod(x + pi, Scalar(2) * pi) - pi;
  }
};

}  // namespace rlkernels
