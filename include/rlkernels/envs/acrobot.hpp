// rlkernels/envs/acrobot.hpp
// Acrobot-v1 as Gymnasium defines it (classic_control/acrobot.py, Sutton 1996; "book" dynamics):
// a two-link chain actuated at the middle joint must swing its tip above a line. Three torques,
// reward -1 per step (0 on the terminal step), one RK4 step of 0.2 s, truncated at 500 steps.
#pragma once

#include "../core/config.hpp"
#include "../core/math.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief Acrobot-v1. One step of `acrobot<double>` reproduces Gymnasium bit for bit (the reference
/// computes in float64; compile without floating-point contraction); `acrobot<float>` runs the
/// same equations in float.
///
/// Observation [6]: cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot (t1 is the first link's angle
/// from hanging down, t2 the second link's angle relative to the first). Actions: torque -1, 0,
/// +1 on the middle joint. Terminated when -cos(t1) - cos(t1 + t2) > 1 (the tip is more than one
/// link length above the base).
/// @tparam Scalar float or double: state, observation and reward type
template <class Scalar = float>
struct acrobot {
  using scalar_type = Scalar;                                         ///< state, observation, reward type
  static constexpr int observation_size = 6;                          ///< see the class comment
  static constexpr action_kind action_space = action_kind::discrete;  ///< Discrete(3)
  static constexpr int num_actions = 3;                               ///< torque -1, 0, +1

  /// Joint angles (wrapped into [-pi, pi]) and angular velocities (bounded).
  struct State {
    Scalar theta1;      ///< first link, from hanging down (rad)
    Scalar theta2;      ///< second link, relative to the first (rad)
    Scalar theta1_dot;  ///< rad/s, in [-max_vel_1, max_vel_1]
    Scalar theta2_dot;  ///< rad/s, in [-max_vel_2, max_vel_2]
  };

  /// Gymnasium's constants (class attributes of AcrobotEnv there).
  struct Params {
    Scalar dt = Scalar(0.2);                             ///< seconds per step (one RK4 step)
    Scalar link_length_1 = Scalar(1.0);                  ///< m
    Scalar link_mass_1 = Scalar(1.0);                    ///< kg
    Scalar link_mass_2 = Scalar(1.0);                    ///< kg
    Scalar link_com_pos_1 = Scalar(0.5);                 ///< centre of mass of link 1 (m)
    Scalar link_com_pos_2 = Scalar(0.5);                 ///< centre of mass of link 2 (m)
    Scalar link_moi = Scalar(1.0);                       ///< moment of inertia of both links
    Scalar gravity = Scalar(9.8);                        ///< m/s^2
    Scalar max_vel_1 = Scalar(4 * 3.141592653589793);    ///< bound on |theta1_dot|
    Scalar max_vel_2 = Scalar(9 * 3.141592653589793);    ///< bound on |theta2_dot|
    Scalar torque_noise_max = Scalar(0);                 ///< torque += U(-noise, noise) when > 0
    Scalar reset_bound = Scalar(0.1);                    ///< reset draws every state variable from U(-b, b)
    bool nips_dynamics = false;                          ///< the NIPS paper's equation instead of the book's
    int max_episode_steps = 500;                         ///< time limit of Acrobot-v1 (truncation)
  };

  /// Every state variable from U(-0.1, 0.1), rounded to float as Gymnasium does (`.astype(np.float32)`).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    s.theta1 = Scalar(float(gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound)));
    s.theta2 = Scalar(float(gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound)));
    s.theta1_dot = Scalar(float(gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound)));
    s.theta2_dot = Scalar(float(gen.template uniform<Scalar>(-p.reset_bound, p.reset_bound)));
  }

  /// One classical RK4 step of dt with the torque held constant, then angles wrapped into
  /// [-pi, pi] and velocities bounded. Reward -1, or 0 when the step reaches the goal.
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Rng& gen) {
    Scalar torque = Scalar(action - 1);
    if (p.torque_noise_max > Scalar(0)) torque += gen.template uniform<Scalar>(-p.torque_noise_max, p.torque_noise_max);

    // Gymnasium's rk4() over t = [0, dt], in the same operation order.
    const Scalar dt = p.dt;
    const Scalar dt2 = dt / Scalar(2.0);
    const State y0 = s;
    const State k1 = derivatives(p, torque, y0);
    const State k2 = derivatives(p, torque, axpy(dt2, k1, y0));
    const State k3 = derivatives(p, torque, axpy(dt2, k2, y0));
    const State k4 = derivatives(p, torque, axpy(dt, k3, y0));
    const Scalar w = dt / Scalar(6.0);
    const auto combine = [w](Scalar y, Scalar a, Scalar b, Scalar c, Scalar d) {
      return y + w * (a + Scalar(2) * b + Scalar(2) * c + d);
    };
    constexpr Scalar pi = detail::pi_v<Scalar>;
    s.theta1 = wrap(combine(y0.theta1, k1.theta1, k2.theta1, k3.theta1, k4.theta1), -pi, pi);
    s.theta2 = wrap(combine(y0.theta2, k1.theta2, k2.theta2, k3.theta2, k4.theta2), -pi, pi);
    s.theta1_dot =
        detail::clip(combine(y0.theta1_dot, k1.theta1_dot, k2.theta1_dot, k3.theta1_dot, k4.theta1_dot), -p.max_vel_1,
                     p.max_vel_1);
    s.theta2_dot =
        detail::clip(combine(y0.theta2_dot, k1.theta2_dot, k2.theta2_dot, k3.theta2_dot, k4.theta2_dot), -p.max_vel_2,
                     p.max_vel_2);

    const bool terminated = -std::cos(s.theta1) - std::cos(s.theta2 + s.theta1) > Scalar(1.0);
    return {terminated ? Scalar(0) : Scalar(-1), terminated};
  }

  /// [cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    obs[0] = std::cos(s.theta1);
    obs[1] = std::sin(s.theta1);
    obs[2] = std::cos(s.theta2);
    obs[3] = std::sin(s.theta2);
    obs[4] = s.theta1_dot;
    obs[5] = s.theta2_dot;
  }

  /// Time derivative of the state under `torque` (Gymnasium's _dsdt), as a State of rates.
  RLK_INLINE static State derivatives(const Params& p, Scalar torque, const State& s) {
    using detail::reference_square;
    constexpr Scalar pi = detail::pi_v<Scalar>;
    const Scalar m1 = p.link_mass_1, m2 = p.link_mass_2, l1 = p.link_length_1;
    const Scalar lc1 = p.link_com_pos_1, lc2 = p.link_com_pos_2, I1 = p.link_moi, I2 = p.link_moi, g = p.gravity;
    const Scalar theta1 = s.theta1, theta2 = s.theta2, dtheta1 = s.theta1_dot, dtheta2 = s.theta2_dot;
    // Each line mirrors the reference expression term by term (`**2` is libm's pow there).
    const Scalar cos2 = std::cos(theta2), sin2 = std::sin(theta2);
    const Scalar d1 = m1 * reference_square(lc1) +
                      m2 * (reference_square(l1) + reference_square(lc2) + Scalar(2) * l1 * lc2 * cos2) + I1 + I2;
    const Scalar d2 = m2 * (reference_square(lc2) + l1 * lc2 * cos2) + I2;
    const Scalar phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - pi / Scalar(2.0));
    const Scalar phi1 = -m2 * l1 * lc2 * reference_square(dtheta2) * sin2 -
                        Scalar(2) * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2 +
                        (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - pi / Scalar(2)) + phi2;
    const Scalar denominator = m2 * reference_square(lc2) + I2 - reference_square(d2) / d1;
    const Scalar ddtheta2 =
        p.nips_dynamics
            ? (torque + d2 / d1 * phi1 - phi2) / denominator
            : (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * reference_square(dtheta1) * sin2 - phi2) / denominator;
    const Scalar ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    return {dtheta1, dtheta2, ddtheta1, ddtheta2};
  }

private:
  /// y + a * k, component by component (the torque component of the reference is constant).
  RLK_INLINE static State axpy(Scalar a, const State& k, const State& y) {
    return {y.theta1 + a * k.theta1, y.theta2 + a * k.theta2, y.theta1_dot + a * k.theta1_dot,
            y.theta2_dot + a * k.theta2_dot};
  }

  /// Gymnasium's wrap(): shifts x by whole turns into [lo, hi]. A non-finite x (only reachable
  /// through set_states) is returned as is, where Gymnasium's loop would never end.
  RLK_HOST_DEVICE static Scalar wrap(Scalar x, Scalar lo, Scalar hi) {
    if (!(x - x == Scalar(0))) return x;
    const Scalar diff = hi - lo;
    while (x > hi) x = x - diff;
    while (x < lo) x = x + diff;
    return x;
  }
};

}  // namespace rlkernels
