// rlkernels/envs/cartpole.hpp
// CartPole-v1 exactly as Gymnasium defines it (classic_control/cartpole.py, Barto, Sutton &
// Anderson 1983): a pole on a cart, two actions (push left / push right), reward 1 per step,
// terminated when the pole falls past 12 degrees or the cart leaves [-2.4, 2.4], truncated at 500.
#pragma once

#include "../core/config.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief CartPole-v1. With `cartpole<double>` one step reproduces Gymnasium's float64 arithmetic
/// bit for bit (when compiled without floating-point contraction, e.g. `-ffp-contract=off`);
/// `cartpole<float>` (the default) runs the same equations in float.
///
/// Observation [4]: cart position, cart velocity, pole angle (rad), pole angular velocity.
/// Actions: 0 pushes the cart left, 1 pushes it right.
/// @tparam Scalar float or double: the type of the state, observations and rewards
template <class Scalar = float>
struct cartpole {
  using scalar_type = Scalar;                                         ///< state, observation, reward type
  static constexpr int observation_size = 4;                          ///< [x, x_dot, theta, theta_dot]
  static constexpr action_kind action_space = action_kind::discrete;  ///< Discrete(2)
  static constexpr int num_actions = 2;                               ///< 0: push left, 1: push right

  /// Physical state; the observation is this state as is.
  struct State {
    Scalar x;          ///< cart position (m)
    Scalar x_dot;      ///< cart velocity (m/s)
    Scalar theta;      ///< pole angle from upright (rad)
    Scalar theta_dot;  ///< pole angular velocity (rad/s)
  };

  /// Gymnasium's constants; change them to make variants (e.g. a longer pole).
  struct Params {
    Scalar gravity = Scalar(9.8);   ///< m/s^2
    Scalar masscart = Scalar(1.0);  ///< kg
    Scalar masspole = Scalar(0.1);  ///< kg
    Scalar length = Scalar(0.5);  ///< half the pole's length
    Scalar force_mag = Scalar(10.0);  ///< N, pushed left or right
    Scalar tau = Scalar(0.02);  ///< seconds per step (explicit Euler)
    Scalar theta_threshold_radians = Scalar(12 * 2 * 3.141592653589793 / 360);  ///< 12 degrees: terminated beyond
    Scalar x_threshold = Scalar(2.4);  ///< terminated when |x| exceeds it
    Scalar reset_bound = Scalar(0.05);  ///< reset draws each state variable from U(-bound, bound)
    int max_episode_steps = 500;  ///< time limit of CartPole-v1 (truncation)
  };

  /// Starts an episode: every state variable from U(-reset_bound, reset_bound).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    s.x = gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound);
    s.x_dot = gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound);
    s.theta = gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound);
    s.theta_dot = gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound);
  }

  /// One explicit-Euler step of tau seconds under the pushed force; reward 1.
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Rng&) {
    // Same operation order as Gymnasium so that the double version rounds identically.
    const Scalar total_mass = p.masspole + p.masscart;
    const Scalar polemass_length = p.masspole * p.length;
    const Scalar force = action == 1 ? p.force_mag : -p.force_mag;
    const Scalar costheta = std::cos(s.theta);
    const Scalar sintheta = std::sin(s.theta);
    const Scalar temp = (force + polemass_length * (s.theta_dot * s.theta_dot) * sintheta) / total_mass;
    const Scalar thetaacc = (p.gravity * sintheta - costheta * temp) /
                            (p.length * (Scalar(4.0) / Scalar(3.0) - p.masspole * (costheta * costheta) / total_mass));
    const Scalar xacc = temp - polemass_length * thetaacc * costheta / total_mass;

    const State old = s;
    s.x = old.x + p.tau * old.x_dot;
    s.x_dot = old.x_dot + p.tau * xacc;
    s.theta = old.theta + p.tau * old.theta_dot;
    s.theta_dot = old.theta_dot + p.tau * thetaacc;

    const bool terminated = s.x < -p.x_threshold || s.x > p.x_threshold || s.theta < -p.theta_threshold_radians ||
                            s.theta > p.theta_threshold_radians;
    return {Scalar(1), terminated};  // Gymnasium gives 1 on the terminal step too
  }

  /// The observation is the state: [x, x_dot, theta, theta_dot].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    obs[0] = s.x;
    obs[1] = s.x_dot;
    obs[2] = s.theta;
    obs[3] = s.theta_dot;
  }
};

}  // namespace rlkernels
