// rlkernels/envs/param_fields.hpp
// Every registered env's Params fields by name: the keyword arguments of the Python package's
// make_vec() (Gymnasium's env kwargs where the names agree) and the --env-param NAME=VALUE option
// of the training examples. C++ has no reflection, so every Params is listed here once; a field
// missing here is simply not settable by name (the Python test suite checks the MuJoCo and
// classic-control lists against Gymnasium's kwargs).
#pragma once

#include <rlkernels/envs/registry.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

/// @brief visit(params, f) calls f(name, field) for every settable field of the env's Params. The
/// default knows only the time limit, which every Params has.
template <class Env>
struct param_fields {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `cartpole` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<cartpole<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("gravity", p.gravity);
    f("masscart", p.masscart);
    f("masspole", p.masspole);
    f("length", p.length);
    f("force_mag", p.force_mag);
    f("tau", p.tau);
    f("theta_threshold_radians", p.theta_threshold_radians);
    f("x_threshold", p.x_threshold);
    f("reset_bound", p.reset_bound);
    f("max_episode_steps", p.max_episode_steps);
  }
};

namespace detail {

/// The track that MountainCar and MountainCarContinuous share, their first fields: min_position,
/// max_position, max_speed, goal_position, goal_velocity.
template <class P, class F>
void visit_mountain_car_track_fields(P& p, F& f) {
  f("min_position", p.min_position);
  f("max_position", p.max_position);
  f("max_speed", p.max_speed);
  f("goal_position", p.goal_position);
  f("goal_velocity", p.goal_velocity);
}

}  // namespace detail

/// The settable parameters of `mountain_car` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<mountain_car<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mountain_car_track_fields(p, f);
    f("force", p.force);
    f("gravity", p.gravity);
    f("reset_low", p.reset_low);
    f("reset_high", p.reset_high);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `mountain_car_continuous` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<mountain_car_continuous<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mountain_car_track_fields(p, f);
    f("power", p.power);
    f("gravity", p.gravity);
    f("goal_reward", p.goal_reward);
    f("action_cost", p.action_cost);
    f("reset_low", p.reset_low);
    f("reset_high", p.reset_high);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `pendulum` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<pendulum<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("g", p.g);
    f("m", p.m);
    f("l", p.l);
    f("dt", p.dt);
    f("max_speed", p.max_speed);
    f("reset_theta", p.reset_theta);
    f("reset_theta_dot", p.reset_theta_dot);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `acrobot` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<acrobot<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("dt", p.dt);
    f("link_length_1", p.link_length_1);
    f("link_mass_1", p.link_mass_1);
    f("link_mass_2", p.link_mass_2);
    f("link_com_pos_1", p.link_com_pos_1);
    f("link_com_pos_2", p.link_com_pos_2);
    f("link_moi", p.link_moi);
    f("gravity", p.gravity);
    f("max_vel_1", p.max_vel_1);
    f("max_vel_2", p.max_vel_2);
    f("torque_noise_max", p.torque_noise_max);
    f("reset_bound", p.reset_bound);
    f("nips_dynamics", p.nips_dynamics);
    f("max_episode_steps", p.max_episode_steps);
  }
};

namespace detail {

/// The first fields of the MuJoCo locomotion tasks (all but HumanoidStandup), in Gymnasium's
/// keyword order: frame_skip, forward_reward_weight, ctrl_cost_weight.
template <class P, class F>
void visit_mujoco_leading_fields(P& p, F& f) {
  f("frame_skip", p.frame_skip);
  f("forward_reward_weight", p.forward_reward_weight);
  f("ctrl_cost_weight", p.ctrl_cost_weight);
}

/// The health fields that Humanoid, Hopper and Walker2d list together: healthy_reward,
/// terminate_when_unhealthy.
template <class P, class F>
void visit_healthy_fields(P& p, F& f) {
  f("healthy_reward", p.healthy_reward);
  f("terminate_when_unhealthy", p.terminate_when_unhealthy);
}

/// The last fields of every MuJoCo task: reset_noise_scale, then the time limit.
template <class P, class F>
void visit_mujoco_trailing_fields(P& p, F& f) {
  f("reset_noise_scale", p.reset_noise_scale);
  f("max_episode_steps", p.max_episode_steps);
}

/// The MinAtar games' fields; `Ramping`: the game has difficulty ramping (all but Breakout).
template <bool Ramping>
struct minatar_param_fields {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("sticky_action_prob", p.sticky_action_prob);
    if constexpr (Ramping) f("difficulty_ramping", p.difficulty_ramping);
    f("channels_first", p.channels_first);
    f("max_episode_steps", p.max_episode_steps);
  }
};

}  // namespace detail

/// The settable parameters of `half_cheetah` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, class Dims>
struct param_fields<half_cheetah<S, E, Dims>> {  // any capacities
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `swimmer` (names as the Python keywords and `--env-param` take them).
template <class S, bool E>
struct param_fields<swimmer<S, E>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `reacher` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<reacher<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("frame_skip", p.frame_skip);
    f("reward_dist_weight", p.reward_dist_weight);
    f("reward_control_weight", p.reward_control_weight);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `pusher` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<pusher<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("frame_skip", p.frame_skip);
    f("reward_near_weight", p.reward_near_weight);
    f("reward_dist_weight", p.reward_dist_weight);
    f("reward_control_weight", p.reward_control_weight);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `inverted_pendulum` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<inverted_pendulum<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("frame_skip", p.frame_skip);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `inverted_double_pendulum` (names as the Python keywords and `--env-param` take them).
template <class S>
struct param_fields<inverted_double_pendulum<S>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("frame_skip", p.frame_skip);
    f("healthy_reward", p.healthy_reward);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `ant` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, bool C, class Dims>
struct param_fields<ant<S, E, C, Dims>> {  // any capacities (physics::dims_with_capacity)
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    f("contact_cost_weight", p.contact_cost_weight);
    f("healthy_reward", p.healthy_reward);
    f("main_body", p.main_body);
    f("terminate_when_unhealthy", p.terminate_when_unhealthy);
    f("healthy_z_range", p.healthy_z_range);
    f("contact_force_range", p.contact_force_range);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `humanoid` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, bool A, bool B, bool C, bool D, class Dims>
struct param_fields<humanoid<S, E, A, B, C, D, Dims>> {  // any capacities
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    f("contact_cost_weight", p.contact_cost_weight);
    f("contact_cost_range", p.contact_cost_range);
    detail::visit_healthy_fields(p, f);
    f("healthy_z_range", p.healthy_z_range);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `humanoid_standup` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, bool A, bool B, bool C, bool D, class Dims>
struct param_fields<humanoid_standup<S, E, A, B, C, D, Dims>> {  // any capacities
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("frame_skip", p.frame_skip);
    f("uph_cost_weight", p.uph_cost_weight);
    f("ctrl_cost_weight", p.ctrl_cost_weight);
    f("impact_cost_weight", p.impact_cost_weight);
    f("impact_cost_range", p.impact_cost_range);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `hopper` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, class Dims>
struct param_fields<hopper<S, E, Dims>> {  // any capacities
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    detail::visit_healthy_fields(p, f);
    f("healthy_state_range", p.healthy_state_range);
    f("healthy_z_range", p.healthy_z_range);
    f("healthy_angle_range", p.healthy_angle_range);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The settable parameters of `walker2d` (names as the Python keywords and `--env-param` take them).
template <class S, bool E, class Dims>
struct param_fields<walker2d<S, E, Dims>> {  // any capacities
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    detail::visit_mujoco_leading_fields(p, f);
    detail::visit_healthy_fields(p, f);
    f("healthy_z_range", p.healthy_z_range);
    f("healthy_angle_range", p.healthy_angle_range);
    detail::visit_mujoco_trailing_fields(p, f);
  }
};

/// The MinAtar games: Breakout has no difficulty ramping, the others do.
template <class S, minatar_action_set A>
struct param_fields<minatar_breakout<S, A>> : detail::minatar_param_fields<false> {};
/// The settable parameters of `minatar_asterix` (names as the Python keywords and `--env-param` take them).
template <class S, minatar_action_set A>
struct param_fields<minatar_asterix<S, A>> : detail::minatar_param_fields<true> {};
/// The settable parameters of `minatar_freeway` (names as the Python keywords and `--env-param` take them).
template <class S, minatar_action_set A>
struct param_fields<minatar_freeway<S, A>> : detail::minatar_param_fields<true> {};
/// The settable parameters of `minatar_seaquest` (names as the Python keywords and `--env-param` take them).
template <class S, minatar_action_set A>
struct param_fields<minatar_seaquest<S, A>> : detail::minatar_param_fields<true> {};
/// The settable parameters of `minatar_space_invaders` (names as the Python keywords and `--env-param` take them).
template <class S, minatar_action_set A>
struct param_fields<minatar_space_invaders<S, A>> : detail::minatar_param_fields<true> {};

/// The settable parameters of `snake` (names as the Python keywords and `--env-param` take them).
template <class S, int R, int C>
struct param_fields<snake<S, R, C>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("num_rows", p.num_rows);
    f("num_cols", p.num_cols);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// The settable parameters of `maze` (names as the Python keywords and `--env-param` take them).
template <class S, int M, int V, maze_actions A>
struct param_fields<maze<S, M, V, A>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("size", p.size);
    f("random_start_goal", p.random_start_goal);
    f("max_episode_steps", p.max_episode_steps);
  }
};

/// L2F-Crazyflie-v0: the reward weights, initial-state ranges and termination thresholds of l2f's
/// configuration (prefixed by their group), the mass, the step and the time limit.
template <class S, int H>
struct param_fields<quadrotor<S, H>> {
  /// Calls f(name, field) for each field of `p`, in this order.
  template <class P, class F>
  static void visit(P& p, F&& f) {
    f("mass", p.dynamics.mass);
    f("dt", p.dt);
    f("reward_non_negative", p.reward.non_negative);
    f("reward_scale", p.reward.scale);
    f("reward_constant", p.reward.constant);
    f("reward_termination_penalty", p.reward.termination_penalty);
    f("reward_position", p.reward.position);
    f("reward_position_clip", p.reward.position_clip);
    f("reward_orientation", p.reward.orientation);
    f("reward_linear_velocity", p.reward.linear_velocity);
    f("reward_angular_velocity", p.reward.angular_velocity);
    f("reward_linear_acceleration", p.reward.linear_acceleration);
    f("reward_angular_acceleration", p.reward.angular_acceleration);
    f("reward_action", p.reward.action);
    f("init_guidance", p.init.guidance);
    f("init_max_position", p.init.max_position);
    f("init_max_linear_velocity", p.init.max_linear_velocity);
    f("init_max_angular_velocity", p.init.max_angular_velocity);
    f("termination_enabled", p.termination.enabled);
    f("termination_position", p.termination.position);
    f("termination_linear_velocity", p.termination.linear_velocity);
    f("termination_angular_velocity", p.termination.angular_velocity);
    f("max_episode_steps", p.max_episode_steps);
    f("randomize_thrust_to_weight", p.randomization.thrust_to_weight);
    f("randomize_thrust_to_weight_min", p.randomization.thrust_to_weight_min);
    f("randomize_thrust_to_weight_max", p.randomization.thrust_to_weight_max);
    f("randomize_mass", p.randomization.mass);
    f("randomize_mass_min", p.randomization.mass_min);
    f("randomize_mass_max", p.randomization.mass_max);
    f("randomize_torque_to_inertia", p.randomization.torque_to_inertia);
    f("randomize_torque_to_inertia_min", p.randomization.torque_to_inertia_min);
    f("randomize_torque_to_inertia_max", p.randomization.torque_to_inertia_max);
    f("randomize_mass_size_deviation", p.randomization.mass_size_deviation);
    f("randomize_mass_size_deviation_std", p.randomization.mass_size_deviation_std);
    f("randomize_rotor_torque_constant", p.randomization.rotor_torque_constant);
    f("randomize_rotor_torque_constant_min", p.randomization.rotor_torque_constant_min);
    f("randomize_rotor_torque_constant_max", p.randomization.rotor_torque_constant_max);
    f("randomize_rotor_time_constant", p.randomization.rotor_time_constant);
    f("randomize_rotor_time_constant_rising_min", p.randomization.rotor_time_constant_rising_min);
    f("randomize_rotor_time_constant_rising_max", p.randomization.rotor_time_constant_rising_max);
    f("randomize_rotor_time_constant_falling_min", p.randomization.rotor_time_constant_falling_min);
    f("randomize_rotor_time_constant_falling_max", p.randomization.rotor_time_constant_falling_max);
    f("randomize_disturbance_force", p.randomization.disturbance_force);
    f("randomize_disturbance_force_max", p.randomization.disturbance_force_max);
  }
};

namespace detail {

/// Parses one number of an --env-param value; throws std::invalid_argument naming the field.
inline double parse_param_number(const std::string& name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v))
    throw std::invalid_argument("env parameter " + name + ": '" + text + "' is not a finite number");
  return v;
}

template <class T>
void set_param_scalar(const std::string& name, T& field, const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    if (text == "1" || text == "true" || text == "True") field = true;
    else if (text == "0" || text == "false" || text == "False") field = false;
    else throw std::invalid_argument("env parameter " + name + ": '" + text + "' is not true/false (or 1/0)");
  } else if constexpr (std::is_integral_v<T>) {
    const double v = parse_param_number(name, text);
    if (v != std::floor(v) || v < double(std::numeric_limits<T>::lowest()) || v > double(std::numeric_limits<T>::max()))
      throw std::invalid_argument("env parameter " + name + ": '" + text + "' is not an integer in range");
    field = T(v);
  } else {
    field = T(parse_param_number(name, text));
  }
}

}  // namespace detail

/// @brief Names of the fields param_fields<Env> lists, in its order.
template <class Env>
std::vector<std::string> param_names() {
  typename Env::Params p{};
  std::vector<std::string> names;
  param_fields<Env>::visit(p, [&](const char* name, auto&) { names.emplace_back(name); });
  return names;
}

/// @brief Sets the field `name` of `p` from text: a number ("0.5", "1e-3"), an integer for
/// integer fields, true/false or 1/0 for flags, "low,high" for the two-number ranges. A rejected
/// call leaves `p` unchanged.
/// @throw std::invalid_argument naming the env's fields if `name` is unknown, or the field if
///        `text` does not fit it (not finite, not an integer, not a pair)
template <class Env>
void set_param(typename Env::Params& p, const std::string& name, const std::string& text) {
  typename Env::Params copy = p;
  bool found = false;
  param_fields<Env>::visit(copy, [&](const char* field_name, auto& field) {
    if (name != field_name) return;
    found = true;
    using F = std::remove_reference_t<decltype(field)>;
    if constexpr (std::is_array_v<F>) {
      const std::size_t comma = text.find(',');
      if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
        throw std::invalid_argument("env parameter " + name + ": '" + text + "' is not a pair low,high");
      detail::set_param_scalar(name, field[0], text.substr(0, comma));
      detail::set_param_scalar(name, field[1], text.substr(comma + 1));
    } else {
      detail::set_param_scalar(name, field, text);
    }
  });
  if (!found) {
    std::string known;
    for (const std::string& n : param_names<Env>()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown env parameter '" + name + "'; this env takes: " + known);
  }
  p = copy;
}

}  // namespace rlkernels
