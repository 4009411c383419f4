// rlkernels/envs/quadrotor.hpp
// L2F-Crazyflie-v0: the Crazyflie 2.1 quadrotor of RLtools' "Learning to Fly in Seconds", as the
// `l2f` simulator (PyPI l2f 2.0.18, `l2f.Environment()`) defines it: one rigid body with four
// rotors whose speeds follow their setpoints with first-order lags, integrated with RK4 at 100 Hz.
// Fly to the origin and hover there; the episode terminates when the drone leaves a 1 m box or
// moves too fast, and is truncated after 500 steps (5 s).
#pragma once

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/math.hpp"
#include "../core/random.hpp"
#include "env.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace rlkernels {

/// @brief L2F-Crazyflie-v0, the quadrotor of the `l2f` simulator (RLtools' Learning to Fly).
///
/// `quadrotor<double>` reproduces l2f built with T = double bit for bit (every state number, the
/// reward, termination and observation of every step; host, `-ffp-contract=off`): the same
/// operations in the same order, down to RK4's term-by-term sums. `quadrotor<float>` is l2f's
/// float build (the `l2f` wheel computes in float) bit for bit, compiled strictly; the wheel
/// itself is built with -Ofast, so its last bits differ. The initial state follows l2f's
/// distribution with this library's random numbers (l2f draws from std::mt19937).
///
/// State: position (m, world frame, z up), orientation quaternion (w, x, y, z; body to world),
/// linear velocity (m/s, world frame), angular velocity (rad/s, body frame), the four rotor
/// speeds (normalised to [0, 1]) and a ring buffer of the last `HistoryLength` actions.
///
/// Action [4]: one command per rotor in [-1, 1] (clamped), mapped to the rotor-speed setpoint
/// a * 0.5 + 0.5 in [0, 1]; rotors are ordered front-right, back-right, back-left, front-left
/// (x forward, y left), with spin directions -, +, -, + about z.
///
/// Observation [18 + 4 HistoryLength] (82 by default), all relative to the target (the origin,
/// at rest): position [3]; the rotation matrix body to world, row-major [9]; linear velocity [3];
/// angular velocity [3]; the last HistoryLength actions as given to step() (unclamped), newest
/// first [4 each]. At reset the history holds the rotor speeds as actions (2 rpm - 1).
///
/// Reward (l2f's "squared" reward with l2f.Environment()'s weights): on the state before the
/// step, constant - scale * (position * |p| (clipped at position_clip) + orientation *
/// 2 acos(1 - |q_z|) + linear_velocity * |v| + angular_velocity * |w| + linear_acceleration *
/// |dv|/dt + angular_acceleration * |dw|/dt + action * |(a + 1)/2 - hover|^2), where dv and dw
/// are the changes over the step; termination_penalty (0) on a terminating step. Terms with
/// weight 0 are skipped (l2f adds 0 * cost, the same sum while the cost is finite).
///
/// Termination, on the state after the step: any |position| > 1 m, |linear velocity| > 2 m/s or
/// |angular velocity| > 35 rad/s; also any state number that is not finite (l2f cannot produce
/// one from finite actions, which it clamps). Truncation after 500 steps (vec_env).
///
/// Where libm and CUDA differ: the reward's acos and the reset's sin/cos/sqrt go through the
/// platform's math library (CUDA's and glibc's are each within a few ulp and may differ in the last
/// bit); the dynamics use only +, -, *, / and sqrt, which are correctly rounded on both.
/// @tparam Scalar float or double
/// @tparam HistoryLength actions kept in the state and the observation (l2f's default: 16)
template <class Scalar = float, int HistoryLength = 16>
struct quadrotor {
  static_assert(HistoryLength >= 1, "quadrotor: HistoryLength must be >= 1");
  using scalar_type = Scalar;                                           ///< state, observation, action, reward type
  static constexpr int history_length = HistoryLength;                  ///< actions kept (l2f: 16)
  static constexpr int observation_size = 18 + 4 * HistoryLength;      ///< 82 by default
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (4,))
  static constexpr int action_size = 4;                                 ///< one command per rotor
  static constexpr Scalar action_low = Scalar(-1);                      ///< clamped to [-1, 1]
  static constexpr Scalar action_high = Scalar(1);                      ///< clamped to [-1, 1]
  static constexpr int state_size = 17;  ///< position, orientation, velocities and rotor speeds

  /// The rigid body and its rotors (l2f's `Dynamics`; defaults: the Crazyflie 2.1 with an SD-card
  /// deck and the optical-flow deck v2, l2f's `parameters::dynamics::crazyflie`).
  struct Dynamics {
    /// Rotor positions in the body frame (m).
    Scalar rotor_positions[4][3] = {{Scalar(0.028), Scalar(-0.028), Scalar(0)},
                                    {Scalar(-0.028), Scalar(-0.028), Scalar(0)},
                                    {Scalar(-0.028), Scalar(0.028), Scalar(0)},
                                    {Scalar(0.028), Scalar(0.028), Scalar(0)}};
    /// Thrust direction of each rotor in the body frame.
    Scalar rotor_thrust_directions[4][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    /// Direction of each rotor's drag torque (its spin direction).
    Scalar rotor_torque_directions[4][3] = {{0, 0, -1}, {0, 0, 1}, {0, 0, -1}, {0, 0, 1}};
    /// Thrust (N) = c0 + c1 rpm + c2 rpm^2, rpm the normalised rotor speed.
    Scalar rotor_thrust_coefficients[4][3] = {{Scalar(0.00352526), Scalar(0.01437313), Scalar(0.09223048)},
                                              {Scalar(0.00352526), Scalar(0.01437313), Scalar(0.09223048)},
                                              {Scalar(0.00352526), Scalar(0.01437313), Scalar(0.09223048)},
                                              {Scalar(0.00352526), Scalar(0.01437313), Scalar(0.09223048)}};
    /// Drag torque (N m) per newton of thrust.
    Scalar rotor_torque_constants[4] = {Scalar(4.665e-3), Scalar(4.665e-3), Scalar(4.665e-3), Scalar(4.665e-3)};
    /// Motor time constant (s) while the speed rises towards its setpoint.
    Scalar rotor_time_constants_rising[4] = {Scalar(0.05545454545454546), Scalar(0.05545454545454546),
                                             Scalar(0.05545454545454546), Scalar(0.05545454545454546)};
    /// Motor time constant (s) while the speed falls towards its setpoint.
    Scalar rotor_time_constants_falling[4] = {Scalar(0.24939393939393945), Scalar(0.24939393939393945),
                                              Scalar(0.24939393939393945), Scalar(0.24939393939393945)};
    /// Take-off mass (kg): the vehicle, SD-card deck, SD card and flow deck, summed in double as l2f does.
    Scalar mass = Scalar(0.027 + 0.0017 + 0.0003 + 0.0016);
    /// Gravity (m/s^2), world frame.
    Scalar gravity[3] = {Scalar(0), Scalar(0), Scalar(-9.81)};
    /// Inertia (kg m^2), body frame.
    Scalar J[3][3] = {{Scalar(9.416556729130406e-06), 0, 0},
                      {0, Scalar(9.644051701582312e-06), 0},
                      {0, 0, Scalar(1.745951732253285e-05)}};
    /// Its inverse, as l2f gives it (literals, not computed).
    Scalar J_inv[3][3] = {{Scalar(106195.93007988465), 0, 0},
                          {0, Scalar(103690.85846314249), 0},
                          {0, 0, Scalar(57275.35197719487)}};
    /// The hover throttle the reward's action term refers to (l2f's stored value; the rotor speed
    /// that actually balances gravity with these coefficients is about 0.806).
    Scalar hovering_throttle_relative = Scalar(0.7261389721508553);
    Scalar action_limit_min = Scalar(0);  ///< lowest rotor-speed setpoint
    Scalar action_limit_max = Scalar(1);  ///< highest rotor-speed setpoint
  };

  /// Reward weights (l2f's `reward_functions::Squared` as l2f.Environment() sets it).
  struct Reward {
    bool non_negative = false;                 ///< clamp the reward at 0 from below
    Scalar scale = Scalar(0.1);                ///< multiplies the weighted cost
    Scalar constant = Scalar(1.1);             ///< added after scaling
    Scalar termination_penalty = Scalar(0);    ///< the reward of a terminating step
    Scalar position = Scalar(10);              ///< weight of |position|
    Scalar position_clip = Scalar(2.5);        ///< |position| is clipped here (0: no clip)
    Scalar orientation = Scalar(1);            ///< weight of 2 acos(1 - |q_z|)
    Scalar linear_velocity = Scalar(0);        ///< weight of |v|
    Scalar angular_velocity = Scalar(0);       ///< weight of |w|
    Scalar linear_acceleration = Scalar(0);    ///< weight of |dv| / dt
    Scalar angular_acceleration = Scalar(2);   ///< weight of |dw| / dt
    Scalar action = Scalar(0);                 ///< weight of |(a + 1)/2 - hovering_throttle_relative|^2
  };

  /// Initial-state distribution (l2f's `init_90_deg`).
  struct Init {
    Scalar guidance = Scalar(0.1);             ///< probability of starting at the origin, level, at rest
    Scalar max_position = Scalar(0.5);         ///< otherwise position ~ U(-max, max) per axis
    Scalar max_angle = Scalar(1.5707963267948966);  ///< > 0: random orientation; l2f draws the angle
                                                    ///< from U(0, 1) rad whatever this value (kept so)
    Scalar max_linear_velocity = Scalar(1);    ///< velocity ~ U(-max, max) per axis
    Scalar max_angular_velocity = Scalar(1);   ///< angular velocity ~ U(-max, max) per axis
    bool relative_rpm = true;                  ///< min_rpm, max_rpm are in action units [-1, 1]
    Scalar min_rpm = Scalar(-1);               ///< rotor speeds ~ U(min, max) (also when guided)
    Scalar max_rpm = Scalar(0);                ///< (relative: rotor speeds in [0, 0.5])
  };

  /// Termination thresholds (l2f.Environment()'s).
  struct Termination {
    bool enabled = true;                       ///< false: only non-finite states terminate
    Scalar position = Scalar(1);               ///< any |p_i| above (m)
    Scalar linear_velocity = Scalar(2);        ///< any |v_i| above (m/s)
    Scalar angular_velocity = Scalar(35);      ///< any |w_i| above (rad/s)
  };

  /// @brief Domain randomisation of the airframe at every reset: l2f's `DomainRandomization`
  /// options, sampled as l2f's `sample_initial_parameters` samples them, in its order, before the
  /// initial state. Every option is off by default, as in l2f.Environment(); an option that is
  /// off draws no random number (the resets of an env without randomisation are unchanged).
  ///
  /// The ranges' defaults are those l2f enables with its `DOMAIN_RANDOMIZATION_OPTIONS::ENABLED`,
  /// except torque_to_inertia and the rotor time constants, where l2f's enabled values (0.001-0.1,
  /// and 0) would freeze the rotation or divide by 0: there they are the Crazyflie-class ranges
  /// l2f's own comments give. What is sampled (see Airframe):
  /// - thrust_to_weight ~ U(min, max): every thrust coefficient scales to give it.
  /// - mass: a size ~ U(cbrt(mass_min), cbrt(mass_max)), mass = size^3 (kg, absolute, not a
  ///   factor); thrust scales with it, so thrust-to-weight stays.
  /// - torque_to_inertia (rad/s^2 at full differential thrust) ~ U(min, max): the inertia's
  ///   diagonal scales to give it.
  /// - mass_size_deviation: the arm length scales with cbrt(mass ratio) times a factor from
  ///   l2f's draw N(-deviation, deviation) mapped to 1/(1 - f) below 0 and 1 + f above (l2f's
  ///   mean of -deviation is kept); with torque_to_inertia or this, the termination box and the
  ///   initial position range become 20 and 10 times the longest arm, as in l2f.
  /// - rotor_torque_constant ~ U(min, max) for all rotors (N m per N).
  /// - rotor_time_constant: rising ~ U(min, max), falling ~ U(min, max) (s), for all rotors.
  /// - disturbance_force: a force constant over the episode, N(0, sigma) per world axis, with
  ///   sigma = U(0, max(0, thrust_to_weight - 1) * disturbance_force_max) * thrust_to_weight *
  ///   mass / 3 (l2f's formula, in its units).
  /// vec_env rejects (std::invalid_argument) an enabled option with an empty or invalid range.
  struct Randomization {
    bool thrust_to_weight = false;                ///< randomise the thrust-to-weight ratio
    Scalar thrust_to_weight_min = Scalar(1.5);    ///< >= 1.5, as l2f requires
    Scalar thrust_to_weight_max = Scalar(5);      ///< > min
    bool mass = false;                            ///< randomise the mass (and the thrust with it)
    Scalar mass_min = Scalar(0.02);               ///< kg, > 0
    Scalar mass_max = Scalar(5);                  ///< kg, > min
    bool torque_to_inertia = false;               ///< randomise the inertia through the torque-to-inertia ratio
    Scalar torque_to_inertia_min = Scalar(536);   ///< rad/s^2, > 0
    Scalar torque_to_inertia_max = Scalar(933);   ///< rad/s^2, > min
    bool mass_size_deviation = false;             ///< randomise the arm length around the mass's scale
    Scalar mass_size_deviation_std = Scalar(0.1); ///< l2f's mass_size_deviation, > 0
    bool rotor_torque_constant = false;           ///< randomise the rotors' drag-torque constant
    Scalar rotor_torque_constant_min = Scalar(0.005);  ///< > 0
    Scalar rotor_torque_constant_max = Scalar(0.05);   ///< > min
    bool rotor_time_constant = false;             ///< randomise the motors' time constants
    Scalar rotor_time_constant_rising_min = Scalar(0.05);   ///< s, > 0
    Scalar rotor_time_constant_rising_max = Scalar(0.09);   ///< s, > min
    Scalar rotor_time_constant_falling_min = Scalar(0.07);  ///< s, > 0
    Scalar rotor_time_constant_falling_max = Scalar(0.3);   ///< s, > min
    bool disturbance_force = false;               ///< a random constant force per episode
    Scalar disturbance_force_max = Scalar(0.1);   ///< in multiples of the surplus thrust-to-weight, > 0

    /// True when any option is on.
    RLK_HOST_DEVICE bool any() const noexcept {
      return thrust_to_weight || mass || torque_to_inertia || mass_size_deviation || rotor_torque_constant ||
             rotor_time_constant || disturbance_force;
    }
    /// True when the thrust coefficients are scaled (Airframe::thrust_scale is used).
    RLK_HOST_DEVICE bool scales_thrust() const noexcept { return thrust_to_weight || mass; }
    /// True when the inertia and arms are scaled (Airframe::inertia_scale, arm_scale, position_limit).
    RLK_HOST_DEVICE bool scales_geometry() const noexcept { return torque_to_inertia || mass_size_deviation; }
  };

  /// Everything l2f.Environment() configures; another airframe is another `dynamics`.
  struct Params {
    Dynamics dynamics{};                       ///< airframe
    Reward reward{};                           ///< reward weights
    Init init{};                               ///< initial-state distribution
    Termination termination{};                 ///< termination thresholds
    Randomization randomization{};             ///< domain randomisation at reset (off)
    Scalar dt = Scalar(1.0 / Scalar(100));     ///< RK4 step (s): 100 Hz
    Scalar state_limit_position = Scalar(100000);          ///< positions are clamped to +-this
    Scalar state_limit_linear_velocity = Scalar(100000);   ///< velocities are clamped to +-this
    Scalar state_limit_angular_velocity = Scalar(100000);  ///< angular velocities are clamped to +-this
    int max_episode_steps = 500;               ///< l2f's EPISODE_STEP_LIMIT (5 s)
  };

  /// @brief The airframe of one episode, as domain randomisation sampled it: l2f's nominal
  /// Dynamics with every thrust coefficient times thrust_scale, the inertia's diagonal divided by
  /// inertia_scale (its inverse's times it), the rotor positions times arm_scale. step() reads a
  /// field only while the option that samples it is on (Randomization::scales_thrust(), ...), so
  /// a State built by hand needs none of them without randomisation; reset() fills them all
  /// (nominal values for the options that are off).
  struct Airframe {
    Scalar mass;                   ///< kg
    Scalar thrust_scale;           ///< multiplies every thrust coefficient
    Scalar inertia_scale;          ///< divides the inertia's diagonal, multiplies its inverse's
    Scalar arm_scale;              ///< multiplies the rotor positions
    Scalar torque_constant;        ///< every rotor's drag torque per N (rotor_torque_constant)
    Scalar time_constant_rising;   ///< every motor's (rotor_time_constant)
    Scalar time_constant_falling;  ///< every motor's (rotor_time_constant)
    Scalar force[3];               ///< N, world frame, constant over the episode (disturbance_force)
    Scalar position_limit;         ///< termination box half-width (m), 20 x the longest arm (scales_geometry())
  };

  /// The flying body and the action history.
  struct State {
    Scalar position[3];          ///< m, world frame
    Scalar orientation[4];       ///< unit quaternion (w, x, y, z), body to world
    Scalar linear_velocity[3];   ///< m/s, world frame
    Scalar angular_velocity[3];  ///< rad/s, body frame
    Scalar rpm[4];               ///< rotor speeds, normalised to [0, 1]
    Scalar action_history[HistoryLength][4];  ///< ring buffer of the actions given to step()
    std::int32_t history_step;   ///< the slot the next action goes to
    Airframe airframe;           ///< this episode's sampled airframe (read only for the enabled options)
  };

  /// l2f's `sample_initial_state`: with probability `guidance` at the origin, level and at rest;
  /// otherwise a uniform position, a rotation about a uniform axis by an angle from U(0, 1) rad and
  /// uniform velocities. Rotor speeds uniform (in [0, 0.5] by default) in both cases; the action
  /// history holds them as actions.
  /// With domain randomisation (Params::randomization), the airframe is sampled first (l2f's
  /// order), and the initial position range may follow its size.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    const Init& in = p.init;
    Scalar max_position = in.max_position;
    sample_airframe(p, s.airframe, max_position, gen);
    const bool guidance = gen.template uniform<Scalar>(Scalar(0), Scalar(1)) < in.guidance;
    for (int i = 0; i < 3; ++i)
      s.position[i] = guidance ? Scalar(0) : gen.template uniform<Scalar>(-max_position, max_position);
    if (in.max_angle > 0 && !guidance) {
      const Scalar u = gen.template uniform<Scalar>(Scalar(0), Scalar(1));
      const Scalar v = gen.template uniform<Scalar>(Scalar(0), Scalar(1));
      const Scalar phi = Scalar(2.0 * detail::pi_v<Scalar> * u);
      const Scalar cos_theta = Scalar(1.0 - 2.0 * v);
      const Scalar sin_theta = Scalar(std::sqrt(1.0 - cos_theta * cos_theta));  // in double, as l2f
      const Scalar x = sin_theta * std::cos(phi);
      const Scalar y = sin_theta * std::sin(phi);
      const Scalar z = cos_theta;
      const Scalar angle = gen.template uniform<Scalar>(Scalar(0), Scalar(1));
      const Scalar half = Scalar(0.5 * angle);
      const Scalar sh = std::sin(half);
      s.orientation[0] = std::cos(half);
      s.orientation[1] = x * sh;
      s.orientation[2] = y * sh;
      s.orientation[3] = z * sh;
    } else {
      s.orientation[0] = Scalar(1);
      s.orientation[1] = s.orientation[2] = s.orientation[3] = Scalar(0);
    }
    for (int i = 0; i < 3; ++i)
      s.linear_velocity[i] =
          guidance ? Scalar(0) : gen.template uniform<Scalar>(-in.max_linear_velocity, in.max_linear_velocity);
    for (int i = 0; i < 3; ++i)
      s.angular_velocity[i] =
          guidance ? Scalar(0) : gen.template uniform<Scalar>(-in.max_angular_velocity, in.max_angular_velocity);
    const Dynamics& d = p.dynamics;
    Scalar min_rpm, max_rpm;
    if (in.relative_rpm) {
      min_rpm = (in.min_rpm + 1) / 2 * (d.action_limit_max - d.action_limit_min) + d.action_limit_min;
      max_rpm = (in.max_rpm + 1) / 2 * (d.action_limit_max - d.action_limit_min) + d.action_limit_min;
    } else {
      min_rpm = in.min_rpm < 0 ? d.action_limit_min : in.min_rpm;
      max_rpm = in.max_rpm < 0 ? d.action_limit_max : in.max_rpm;
      if (max_rpm > d.action_limit_max) max_rpm = d.action_limit_max;
      if (min_rpm > max_rpm) min_rpm = max_rpm;
    }
    for (int i = 0; i < 4; ++i) s.rpm[i] = gen.template uniform<Scalar>(min_rpm, max_rpm);
    s.history_step = 0;
    for (int j = 0; j < HistoryLength; ++j)
      for (int k = 0; k < 4; ++k)
        s.action_history[j][k] = (s.rpm[k] - d.action_limit_min) / (d.action_limit_max - d.action_limit_min) * 2 - 1;
    if (p.randomization.disturbance_force) {  // l2f's StateRandomForce, sampled after the rest
      for (int i = 0; i < 3; ++i) s.airframe.force[i] = gen.template normal<Scalar>(Scalar(0), s.airframe.force[i]);
    }
  }

  /// @brief l2f's `sample_initial_parameters` with Params::randomization: fills `a` (nominal
  /// values for what is not randomised) and, when the geometry is scaled, sets `max_position` to
  /// 10 x the longest arm. With disturbance_force, a.force[i] holds the force's standard deviation
  /// (reset() then draws the force).
  template <class Rng>
  RLK_HOST_DEVICE static void sample_airframe(const Params& p, Airframe& a, Scalar& max_position, Rng& gen) {
    const Dynamics& d = p.dynamics;
    const Randomization& r = p.randomization;
    a.mass = d.mass;
    a.thrust_scale = a.inertia_scale = a.arm_scale = Scalar(1);
    a.torque_constant = d.rotor_torque_constants[0];
    a.time_constant_rising = d.rotor_time_constants_rising[0];
    a.time_constant_falling = d.rotor_time_constants_falling[0];
    a.force[0] = a.force[1] = a.force[2] = Scalar(0);
    a.position_limit = p.termination.position;
    if (!r.any()) return;
    const Scalar g = std::sqrt(d.gravity[0] * d.gravity[0] + d.gravity[1] * d.gravity[1] + d.gravity[2] * d.gravity[2]);
    Scalar thrust_to_weight_nominal;
    {
      const Scalar max_action = d.action_limit_max;
      Scalar max_thrust = 0;
      for (int k = 0; k < 4; ++k) {
        const Scalar* c = d.rotor_thrust_coefficients[k];
        max_thrust += c[0] + c[1] * max_action + c[2] * max_action * max_action;
      }
      thrust_to_weight_nominal = max_thrust / (d.mass * g);
    }
    Scalar thrust_to_weight = thrust_to_weight_nominal, factor_thrust_to_weight = 1;
    if (r.thrust_to_weight) {
      thrust_to_weight = gen.template uniform<Scalar>(r.thrust_to_weight_min, r.thrust_to_weight_max);
      factor_thrust_to_weight = thrust_to_weight / thrust_to_weight_nominal;
    }
    Scalar factor_mass = 1, scale_relative = 1;
    if (r.mass) {
      const Scalar size = gen.template uniform<Scalar>(Scalar(std::cbrt(r.mass_min)), Scalar(std::cbrt(r.mass_max)));
      Scalar m = size * size * size;
      m = clamp(m, r.mass_min, r.mass_max);
      scale_relative = std::cbrt(m / d.mass);
      factor_mass = m / d.mass;
      a.mass = m;
    }
    if (r.scales_thrust()) a.thrust_scale = factor_thrust_to_weight * factor_mass;
    Scalar torque_to_inertia_factor = 1;
    if (r.torque_to_inertia) {
      const Scalar max_thrust = thrust_to_weight * a.mass * g / 4;
      const Scalar arm = std::abs(d.rotor_positions[0][0]);
      const Scalar max_torque = Scalar(double(arm) * 1.414213562373095 * double(max_thrust));  // l2f: a double literal
      const Scalar nominal = max_torque / d.J[0][0];
      torque_to_inertia_factor = gen.template uniform<Scalar>(r.torque_to_inertia_min, r.torque_to_inertia_max) / nominal;
    }
    Scalar rotor_distance_factor = 1;
    if (r.mass_size_deviation) {
      Scalar f = gen.template normal<Scalar>(-r.mass_size_deviation_std, r.mass_size_deviation_std);
      f = f < 0 ? 1 / (1 - f) : 1 + f;
      rotor_distance_factor = scale_relative * f;
    }
    if (r.scales_geometry()) {
      a.inertia_scale = torque_to_inertia_factor / rotor_distance_factor;
      a.arm_scale = rotor_distance_factor;
      Scalar longest = 0;
      for (int k = 0; k < 4; ++k) {
        Scalar q[3];
        for (int i = 0; i < 3; ++i) q[i] = d.rotor_positions[k][i] * rotor_distance_factor;
        const Scalar n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
        if (n > longest) longest = n;
      }
      a.position_limit = longest * 20;
      max_position = longest * 10;
    }
    if (r.rotor_torque_constant)
      a.torque_constant = gen.template uniform<Scalar>(r.rotor_torque_constant_min, r.rotor_torque_constant_max);
    if (r.disturbance_force) {
      Scalar surplus = thrust_to_weight - Scalar(1.0);
      if (surplus < 0) surplus = 0;
      const Scalar multiple = gen.template uniform<Scalar>(Scalar(0), surplus * r.disturbance_force_max);
      const Scalar sigma = multiple * thrust_to_weight * a.mass / 3;
      a.force[0] = a.force[1] = a.force[2] = sigma;
    }
    if (r.rotor_time_constant) {
      a.time_constant_rising =
          gen.template uniform<Scalar>(r.rotor_time_constant_rising_min, r.rotor_time_constant_rising_max);
      a.time_constant_falling =
          gen.template uniform<Scalar>(r.rotor_time_constant_falling_min, r.rotor_time_constant_falling_max);
    }
  }

  /// @brief Checks Params::randomization's enabled options (vec_env calls it).
  /// @throw std::invalid_argument naming the first option with an empty or invalid range
  static void validate(const Params& p) {
    const Randomization& r = p.randomization;
    auto range = [](bool on, Scalar lo, Scalar hi, Scalar least, const char* name) {
      if (!on) return;
      RLK_EXPECTS(std::isfinite(lo) && std::isfinite(hi) && lo >= least && lo < hi, std::invalid_argument,
                  "rlkernels::quadrotor: randomization.", name, " needs finite ", least, " <= min < max, got [", lo,
                  ", ", hi, "]");
    };
    range(r.thrust_to_weight, r.thrust_to_weight_min, r.thrust_to_weight_max, Scalar(1.5), "thrust_to_weight");
    range(r.mass, r.mass_min, r.mass_max, Scalar(1e-6), "mass");
    range(r.torque_to_inertia, r.torque_to_inertia_min, r.torque_to_inertia_max, Scalar(1e-6), "torque_to_inertia");
    range(r.rotor_torque_constant, r.rotor_torque_constant_min, r.rotor_torque_constant_max, Scalar(0),
          "rotor_torque_constant");
    range(r.rotor_time_constant, r.rotor_time_constant_rising_min, r.rotor_time_constant_rising_max, Scalar(1e-6),
          "rotor_time_constant_rising");
    range(r.rotor_time_constant, r.rotor_time_constant_falling_min, r.rotor_time_constant_falling_max, Scalar(1e-6),
          "rotor_time_constant_falling");
    RLK_EXPECTS(!r.mass_size_deviation || (std::isfinite(r.mass_size_deviation_std) && r.mass_size_deviation_std > 0),
                std::invalid_argument, "rlkernels::quadrotor: randomization.mass_size_deviation_std must be finite and > 0, got ",
                r.mass_size_deviation_std);
    RLK_EXPECTS(!r.disturbance_force || (std::isfinite(r.disturbance_force_max) && r.disturbance_force_max > 0),
                std::invalid_argument, "rlkernels::quadrotor: randomization.disturbance_force_max must be finite and > 0, got ",
                r.disturbance_force_max);
  }

  /// One 10 ms step: clamp the action, map it to rotor setpoints, one RK4 step of body and
  /// motors, normalise the quaternion, clamp the state, record the action.
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    const Dynamics& d = p.dynamics;
    const Scalar half_range = (d.action_limit_max - d.action_limit_min) / 2;
    Scalar setpoint[4];
    for (int k = 0; k < 4; ++k) {
      const Scalar a = clamp(action[k], Scalar(-1), Scalar(1));
      setpoint[k] = a * half_range + d.action_limit_min + half_range;
    }
    const body before = load(s);
    body next;
    rk4(p, s.airframe, before, setpoint, next);
    store(next, s);

    // l2f's post_integration
    Scalar norm = 0;
    for (int i = 0; i < 4; ++i) norm += s.orientation[i] * s.orientation[i];
    norm = std::sqrt(norm);
    for (int i = 0; i < 4; ++i) s.orientation[i] /= norm;
    for (int i = 0; i < 3; ++i) {
      s.position[i] = clamp(s.position[i], -p.state_limit_position, p.state_limit_position);
      s.linear_velocity[i] = clamp(s.linear_velocity[i], -p.state_limit_linear_velocity, p.state_limit_linear_velocity);
      s.angular_velocity[i] =
          clamp(s.angular_velocity[i], -p.state_limit_angular_velocity, p.state_limit_angular_velocity);
    }
    for (int k = 0; k < 4; ++k) s.rpm[k] = clamp(s.rpm[k], d.action_limit_min, d.action_limit_max);
    const int slot = s.history_step;
    for (int k = 0; k < 4; ++k) s.action_history[slot][k] = action[k];
    s.history_step = (slot + 1) % HistoryLength;

    const bool done = terminated(p, s);
    return {done ? p.reward.termination_penalty : reward(p, before, action, load(s)), done};
  }

  /// Position, rotation matrix, velocity, angular velocity, then the action history newest first.
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    // l2f adds its observation noise (standard deviation 0 here, so a 0): the sum turns -0 into +0,
    // which is kept for bit equality.
    const Scalar* q = s.orientation;
    const Scalar zero = 0;
    for (int i = 0; i < 3; ++i) obs[i] = s.position[i] + zero;
    obs[3] = (1 - 2 * q[2] * q[2] - 2 * q[3] * q[3]) + zero;
    obs[4] = (2 * q[1] * q[2] - 2 * q[0] * q[3]) + zero;
    obs[5] = (2 * q[1] * q[3] + 2 * q[0] * q[2]) + zero;
    obs[6] = (2 * q[1] * q[2] + 2 * q[0] * q[3]) + zero;
    obs[7] = (1 - 2 * q[1] * q[1] - 2 * q[3] * q[3]) + zero;
    obs[8] = (2 * q[2] * q[3] - 2 * q[0] * q[1]) + zero;
    obs[9] = (2 * q[1] * q[3] - 2 * q[0] * q[2]) + zero;
    obs[10] = (2 * q[2] * q[3] + 2 * q[0] * q[1]) + zero;
    obs[11] = (1 - 2 * q[1] * q[1] - 2 * q[2] * q[2]) + zero;
    for (int i = 0; i < 3; ++i) obs[12 + i] = s.linear_velocity[i] + zero;
    for (int i = 0; i < 3; ++i) obs[15 + i] = s.angular_velocity[i] + zero;
    int slot = s.history_step == 0 ? HistoryLength - 1 : s.history_step - 1;
    for (int j = 0; j < HistoryLength; ++j) {
      for (int k = 0; k < 4; ++k) obs[18 + 4 * j + k] = s.action_history[slot][k];
      slot = slot == 0 ? HistoryLength - 1 : slot - 1;
    }
  }

  /// True when the state is outside l2f's termination thresholds, or not finite.
  RLK_HOST_DEVICE static bool terminated(const Params& p, const State& s) {
    for (int i = 0; i < 3; ++i) {
      if (!(std::isfinite(s.position[i]) && std::isfinite(s.linear_velocity[i]) && std::isfinite(s.angular_velocity[i])))
        return true;
    }
    for (int i = 0; i < 4; ++i) {
      if (!(std::isfinite(s.orientation[i]) && std::isfinite(s.rpm[i]))) return true;
    }
    if (p.termination.enabled) {
      const Scalar position_limit = p.randomization.scales_geometry() ? s.airframe.position_limit : p.termination.position;
      for (int i = 0; i < 3; ++i) {
        if (std::abs(s.position[i]) > position_limit ||
            std::abs(s.linear_velocity[i]) > p.termination.linear_velocity ||
            std::abs(s.angular_velocity[i]) > p.termination.angular_velocity)
          return true;
      }
    }
    return false;
  }

  /// The reward of a step that does not terminate: l2f's reward_components (costs of the state
  /// before the step, accelerations over the step, the raw action).
  RLK_HOST_DEVICE static Scalar reward(const Params& p, const State& s, const Scalar* action, const State& next) {
    return reward(p, load(s), action, load(next));
  }

 private:
  /// The integrated part of the state (what RK4 carries; the action history stays out of it).
  struct body {
    Scalar position[3];
    Scalar orientation[4];
    Scalar linear_velocity[3];
    Scalar angular_velocity[3];
    Scalar rpm[4];
  };
  RLK_INLINE static body load(const State& s) {
    body b;
    for (int i = 0; i < 3; ++i) b.position[i] = s.position[i];
    for (int i = 0; i < 4; ++i) b.orientation[i] = s.orientation[i];
    for (int i = 0; i < 3; ++i) b.linear_velocity[i] = s.linear_velocity[i];
    for (int i = 0; i < 3; ++i) b.angular_velocity[i] = s.angular_velocity[i];
    for (int i = 0; i < 4; ++i) b.rpm[i] = s.rpm[i];
    return b;
  }
  RLK_INLINE static void store(const body& b, State& s) {
    for (int i = 0; i < 3; ++i) s.position[i] = b.position[i];
    for (int i = 0; i < 4; ++i) s.orientation[i] = b.orientation[i];
    for (int i = 0; i < 3; ++i) s.linear_velocity[i] = b.linear_velocity[i];
    for (int i = 0; i < 3; ++i) s.angular_velocity[i] = b.angular_velocity[i];
    for (int i = 0; i < 4; ++i) s.rpm[i] = b.rpm[i];
  }

  RLK_HOST_DEVICE static Scalar reward(const Params& p, const body& s, const Scalar* action, const body& next) {
    const Reward& w = p.reward;
    const Scalar* q = s.orientation;
    const Scalar* x = s.position;
    const Scalar* v = s.linear_velocity;
    const Scalar* o = s.angular_velocity;
    Scalar cost = 0;
    if (w.position != 0) {
      Scalar c = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
      if (w.position_clip > 0) c = w.position_clip < c ? w.position_clip : c;  // std::min
      cost += w.position * c;
    }
    if (w.orientation != 0) cost += w.orientation * (2 * std::acos(1 - std::abs(q[3])));
    if (w.linear_velocity != 0) cost += w.linear_velocity * std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (w.angular_velocity != 0) cost += w.angular_velocity * std::sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
    if (w.linear_acceleration != 0) {
      Scalar a[3];
      for (int i = 0; i < 3; ++i) a[i] = next.linear_velocity[i] - v[i];
      cost += w.linear_acceleration * (std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) / p.dt);
    }
    if (w.angular_acceleration != 0) {
      Scalar a[3];
      for (int i = 0; i < 3; ++i) a[i] = next.angular_velocity[i] - o[i];
      cost += w.angular_acceleration * (std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) / p.dt);
    }
    if (w.action != 0) {
      Scalar acc = 0;
      for (int k = 0; k < 4; ++k) {
        const Scalar diff = (action[k] + Scalar(1.0)) / Scalar(2.0) - p.dynamics.hovering_throttle_relative;
        acc += diff * diff;
      }
      const Scalar n = std::sqrt(acc);
      cost += w.action * (n * n);
    }
    Scalar r = -(w.scale * cost) + w.constant;
    if (w.non_negative && !(r > 0)) r = 0;
    return r;
  }

 public:
  /// The hover rotor speed: where the thrust of the four rotors balances gravity (about 0.806 for
  /// the Crazyflie). The action that holds it is 2 rpm - 1.
  RLK_HOST_DEVICE static Scalar hover_rpm(const Params& p) {
    const Scalar* c = p.dynamics.rotor_thrust_coefficients[0];
    const Scalar weight = p.dynamics.mass * std::abs(p.dynamics.gravity[2]) / 4;
    // c2 r^2 + c1 r + c0 - weight = 0
    return (-c[1] + std::sqrt(c[1] * c[1] - 4 * c[2] * (c[0] - weight))) / (2 * c[2]);
  }

 private:
  RLK_INLINE static Scalar clamp(Scalar x, Scalar lo, Scalar hi) { return x < lo ? lo : (x > hi ? hi : x); }

  /// The time derivative of the integrated state (l2f's multirotor_dynamics for the base state and
  /// the rotors, then its StateRandomForce part: the disturbance force, 0 without randomisation
  /// and then skipped; l2f's random torque is always 0). Randomised airframe quantities are
  /// formed as l2f stores them (coefficient times scale, and so on), so they round the same.
  RLK_INLINE static void dynamics(const Params& p, const Airframe& af, const body& s, const Scalar* setpoint, body& ds) {
    const Dynamics& d = p.dynamics;
    const Randomization& dr = p.randomization;
    Scalar thrust[3] = {0, 0, 0};
    Scalar torque[3] = {0, 0, 0};
    for (int r = 0; r < 4; ++r) {
      const Scalar rpm = s.rpm[r];
      Scalar c[3] = {d.rotor_thrust_coefficients[r][0], d.rotor_thrust_coefficients[r][1],
                     d.rotor_thrust_coefficients[r][2]};
      if (dr.scales_thrust())
        for (int k = 0; k < 3; ++k) c[k] *= af.thrust_scale;
      const Scalar magnitude = c[0] + c[1] * rpm + c[2] * rpm * rpm;
      Scalar rotor_thrust[3];
      for (int i = 0; i < 3; ++i) rotor_thrust[i] = d.rotor_thrust_directions[r][i] * magnitude;
      for (int i = 0; i < 3; ++i) thrust[i] += rotor_thrust[i];
      const Scalar drag = magnitude * (dr.rotor_torque_constant ? af.torque_constant : d.rotor_torque_constants[r]);
      for (int i = 0; i < 3; ++i) torque[i] += d.rotor_torque_directions[r][i] * drag;
      Scalar rp[3] = {d.rotor_positions[r][0], d.rotor_positions[r][1], d.rotor_positions[r][2]};
      if (dr.scales_geometry())
        for (int i = 0; i < 3; ++i) rp[i] *= af.arm_scale;
      torque[0] += rp[1] * rotor_thrust[2] - rp[2] * rotor_thrust[1];
      torque[1] += rp[2] * rotor_thrust[0] - rp[0] * rotor_thrust[2];
      torque[2] += rp[0] * rotor_thrust[1] - rp[1] * rotor_thrust[0];
    }
    for (int i = 0; i < 3; ++i) ds.position[i] = s.linear_velocity[i];

    const Scalar* q = s.orientation;
    const Scalar* w = s.angular_velocity;
    ds.orientation[0] = -q[1] * w[0] - q[2] * w[1] - q[3] * w[2];
    ds.orientation[1] = q[0] * w[0] + q[2] * w[2] - q[3] * w[1];
    ds.orientation[2] = q[0] * w[1] + q[3] * w[0] - q[1] * w[2];
    ds.orientation[3] = q[0] * w[2] + q[1] * w[1] - q[2] * w[0];
    for (int i = 0; i < 4; ++i) ds.orientation[i] *= Scalar(0.5);

    // thrust rotated to the world frame: v + 2 w (u x v) + u x (2 (u x v)), u = q.xyz, w = q.w
    Scalar t[3];
    t[0] = q[2] * thrust[2] - q[3] * thrust[1];
    t[1] = q[3] * thrust[0] - q[1] * thrust[2];
    t[2] = q[1] * thrust[1] - q[2] * thrust[0];
    for (int i = 0; i < 3; ++i) t[i] *= Scalar(2);
    Scalar* a = ds.linear_velocity;
    a[0] = q[2] * t[2] - q[3] * t[1];
    a[1] = q[3] * t[0] - q[1] * t[2];
    a[2] = q[1] * t[1] - q[2] * t[0];
    for (int i = 0; i < 3; ++i) a[i] += t[i] * q[0];
    for (int i = 0; i < 3; ++i) a[i] += thrust[i];
    const Scalar mass = dr.mass ? af.mass : d.mass;
    const Scalar inverse_mass = 1 / mass;
    for (int i = 0; i < 3; ++i) a[i] *= inverse_mass;
    for (int i = 0; i < 3; ++i) a[i] += d.gravity[i];

    // Euler's equation: J_inv (torque - w x (J w))
    const bool geometry = dr.scales_geometry();
    Scalar jw[3], gyro[3], net[3];
    for (int i = 0; i < 3; ++i) {
      jw[i] = 0;
      for (int j = 0; j < 3; ++j) jw[i] += (geometry && i == j ? d.J[i][j] / af.inertia_scale : d.J[i][j]) * w[j];
    }
    gyro[0] = w[1] * jw[2] - w[2] * jw[1];
    gyro[1] = w[2] * jw[0] - w[0] * jw[2];
    gyro[2] = w[0] * jw[1] - w[1] * jw[0];
    for (int i = 0; i < 3; ++i) net[i] = torque[i] - gyro[i];
    for (int i = 0; i < 3; ++i) {
      ds.angular_velocity[i] = 0;
      for (int j = 0; j < 3; ++j)
        ds.angular_velocity[i] += (geometry && i == j ? d.J_inv[i][j] * af.inertia_scale : d.J_inv[i][j]) * net[j];
    }

    // first-order motors; the time constant depends on the direction of the change
    const bool motors = dr.rotor_time_constant;
    for (int r = 0; r < 4; ++r) {
      const Scalar tau = setpoint[r] >= s.rpm[r] ? (motors ? af.time_constant_rising : d.rotor_time_constants_rising[r])
                                                 : (motors ? af.time_constant_falling : d.rotor_time_constants_falling[r]);
      ds.rpm[r] = (setpoint[r] - s.rpm[r]) * 1 / tau;
    }
    if (dr.disturbance_force)
      for (int i = 0; i < 3; ++i) ds.linear_velocity[i] += af.force[i] / mass;
  }

  /// out += scale * k over the integrated numbers (l2f's scalar_multiply_accumulate).
  RLK_INLINE static void accumulate(const body& k, Scalar scale, body& out) {
    for (int i = 0; i < 3; ++i) {
      out.position[i] += scale * k.position[i];
      out.orientation[i] += scale * k.orientation[i];
      out.linear_velocity[i] += scale * k.linear_velocity[i];
      out.angular_velocity[i] += scale * k.angular_velocity[i];
    }
    out.orientation[3] += scale * k.orientation[3];
    for (int r = 0; r < 4; ++r) out.rpm[r] += scale * k.rpm[r];
  }

  /// Classic RK4 with l2f's evaluation order.
  RLK_HOST_DEVICE static void rk4(const Params& p, const Airframe& af, const body& s, const Scalar* setpoint, body& next) {
    const Scalar dt = p.dt;
    body k1, k2, k3, k4, tmp = s;
    dynamics(p, af, s, setpoint, k1);
    accumulate(k1, dt / 2, tmp);
    dynamics(p, af, tmp, setpoint, k2);
    tmp = s;
    accumulate(k2, dt / 2, tmp);
    dynamics(p, af, tmp, setpoint, k3);
    tmp = s;
    accumulate(k3, dt, tmp);
    dynamics(p, af, tmp, setpoint, k4);
    next = s;
    accumulate(k1, dt / 6, next);
    accumulate(k2, dt / 3, next);
    accumulate(k3, dt / 3, next);
    accumulate(k4, dt / 6, next);
  }
};

}  // namespace rlkernels
