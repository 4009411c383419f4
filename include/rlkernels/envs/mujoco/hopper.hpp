// rlkernels/envs/mujoco/hopper.hpp
// Hopper-v5 as Gymnasium 1.4 defines it (envs/mujoco/hopper_v5.py) on the rlkernels physics engine:
// a one-legged planar robot (torso, thigh, leg, foot) that should hop forward. Continuous action
// (3 joint torques), terminated when unhealthy, truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "models/hopper.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <limits>

namespace rlkernels {

/// @brief Hopper-v5's task for mujoco_env (hopper is built as mujoco_env<hopper_task<...>, Scalar>;
/// see it for the semantics): Gymnasium's keyword arguments (`params`), observation, reward,
/// termination, reset and step info.
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
/// @tparam Dims the model's sizes (see hopper)
template <bool ExcludeCurrentPositions = true, class Dims = models::hopper_dims>
struct hopper_task {
  using dims = Dims;  ///< the model's sizes (nq 6, nv 6, nu 3)
  /// The hopper.xml model (xml_file) with Dims' capacities.
  template <class S>
  static physics::model<S, Dims> model() {
    return physics::rebind<Dims>(models::hopper<S>());
  }
  static constexpr int observation_size = Dims::nq + Dims::nv - (ExcludeCurrentPositions ? 1 : 0);  ///< 11 (or 12)
  static constexpr double action_low = -1;   ///< actuator_ctrlrange low (all actuators); Box(-1, 1, (3,)), float32 in Gymnasium
  static constexpr double action_high = 1;   ///< actuator_ctrlrange high
  static constexpr int frame_skip = 4;       ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of Hopper-v5 (truncation)
  /// A step is tens of microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// @brief Gymnasium's HopperEnv keyword arguments with their v5 defaults (hopper's Params adds
  /// model = xml_file, frame_skip and the time limit). Not applicable here: default_camera_config,
  /// render_mode, width, height, camera_id, camera_name, max_geom, visual_options (rendering).
  /// exclude_current_positions_from_observation is the template parameter ExcludeCurrentPositions.
  template <class S>
  struct params {
    S forward_reward_weight = S(1);        ///< weight of x_velocity in the reward
    S ctrl_cost_weight = S(1e-3);          ///< weight of sum(action^2)
    S healthy_reward = S(1);               ///< reward per step while healthy
    bool terminate_when_unhealthy = true;  ///< terminate when not healthy
    S healthy_state_range[2] = {S(-100), S(100)};  ///< bounds of qpos[2:] and qvel
    S healthy_z_range[2] = {S(0.7), std::numeric_limits<S>::infinity()};  ///< bounds of the torso height qpos[1]
    S healthy_angle_range[2] = {S(-0.2), S(0.2)};  ///< bounds of the torso angle qpos[2]
    S reset_noise_scale = S(5e-3);         ///< half-width of the uniform reset noise
  };

  /// Refuses terminate_when_unhealthy = false with Dims too small for the robot on the floor.
  template <class S>
  static void validate(const params<S>& p) {
    detail::require_room_for_falls(p.terminate_when_unhealthy, dims::ncon, dims::nefc, 8, 32, "hopper", "hopper_dims");
  }

  /// @brief Gymnasium's step info (the reward terms and positions).
  template <class S>
  struct step_info {
    S x_position;              ///< qpos[0] after the step
    S z_distance_from_origin;  ///< qpos[1] - qpos0[1]
    S x_velocity;              ///< (x after - x before) / dt
    S reward_forward;          ///< forward_reward_weight * x_velocity
    S reward_ctrl;             ///< -ctrl_cost_weight * sum(action^2)
    S reward_survive;          ///< healthy_reward if healthy, else 0
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, Dims>& m, mujoco_state<S, Dims>& s,
                                    Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }

  /// Gymnasium's is_healthy on a state.
  template <class S>
  RLK_HOST_DEVICE static bool is_healthy(const params<S>& p, const mujoco_state<S, Dims>& s) {
    const S lo = p.healthy_state_range[0], hi = p.healthy_state_range[1];
    bool healthy_state = true;
    for (int i = 2; i < Dims::nq; ++i) healthy_state &= lo < s.qpos[i] && s.qpos[i] < hi;
    for (int i = 0; i < Dims::nv; ++i) healthy_state &= lo < s.qvel[i] && s.qvel[i] < hi;
    const S z = s.qpos[1], angle = s.qpos[2];
    const bool healthy_z = p.healthy_z_range[0] < z && z < p.healthy_z_range[1];
    const bool healthy_angle = p.healthy_angle_range[0] < angle && angle < p.healthy_angle_range[1];
    return healthy_state && healthy_z && healthy_angle;
  }

  /// Reward, termination and info of a step (see hopper).
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, Dims>& t,
                                             step_info<S>& info) {
    const S ctrl_cost = positions_and_ctrl_cost(p, t, info);
    info.x_velocity = (t.after.qpos[0] - t.before.qpos[0]) / t.dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    const bool healthy = is_healthy(p, t.after);
    info.reward_survive = healthy ? p.healthy_reward : S(0);
    const S reward = (info.reward_forward + info.reward_survive) - ctrl_cost;
    return {reward, !healthy && p.terminate_when_unhealthy};
  }

  /// A step the engine could not take: the positions of the state kept, the control cost; reward
  /// -ctrl_cost.
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, Dims>& t, step_info<S>& info) {
    return -positions_and_ctrl_cost(p, t, info);
  }

  /// info's positions (of t.after) and reward_ctrl; returns ctrl_cost_weight * sum(action^2).
  template <class S>
  RLK_HOST_DEVICE static S positions_and_ctrl_cost(const params<S>& p, const mujoco_task_step<S, Dims>& t,
                                                   step_info<S>& info) {
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, Dims::nu);
    info.x_position = t.after.qpos[0];
    info.z_distance_from_origin = t.after.qpos[1] - t.model.qpos0[1];
    info.reward_ctrl = -ctrl_cost;
    return ctrl_cost;
  }

  /// qpos[1:] (qpos with ExcludeCurrentPositions = false), then qvel clipped to [-10, 10].
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, Dims>&, const mujoco_state<S, Dims>& s,
                                      S* obs) {
    detail::observe_state<ExcludeCurrentPositions>(s, true, obs);
  }
};

/// @brief Hopper-v5: Gymnasium's semantics on `physics::step` with the hopper.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-1, 1] in the actuation,
/// so an action of 1e30 or infinity acts as +-1 but costs its full square), then
/// frame_skip physics steps (RK4, 0.002 s each). Reward = forward_reward_weight * x_velocity +
/// healthy_reward * is_healthy - ctrl_cost_weight * sum(action^2) (the raw action), with
/// x_velocity = (qpos[0] after - before) / (timestep * frame_skip). Healthy: every qpos[2:] and
/// qvel within healthy_state_range, z = qpos[1] within healthy_z_range, angle = qpos[2] within
/// healthy_angle_range (all open intervals), evaluated on the state after the step.
///
/// Observation [11] (positions excluded, the default): qpos[1:6], then qvel[0:6] clipped to
/// [-10, 10]; with ExcludeCurrentPositions = false [12]: qpos[0:6] first. Reset: qpos = qpos0 +
/// U(-s, s), qvel = U(-s, s), s = reset_noise_scale; qacc_warmstart = 0.
///
/// hopper<double> reproduces Gymnasium (float64 actions) to the engine's accuracy: see
/// docs/physics.md for the measured figures. hopper<float> runs model and engine in float.
/// A step the engine cannot compute ends the episode as truncated (see mujoco_state, unstable_steps()).
/// @tparam Scalar float or double: state, observation, action, reward and engine type
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation (it changes
///         the observation size, so it is a template parameter rather than a Params field)
/// @tparam Dims the model's sizes: models::hopper_dims (6 contacts and 20 constraint rows, measured
///         peaks 3 / 13 with the default termination; with terminate_when_unhealthy = false the
///         hopper can lie on the floor and needs more: physics::dims_with_capacity<models::hopper_dims,
///         8, 32>, or 14 / 44 for every contact its pairs can make; docs/physics.md). A step that
///         needs more ends the episode as truncated and is counted: capacity_overflows()
template <class Scalar = float, bool ExcludeCurrentPositions = true, class Dims = models::hopper_dims>
struct hopper : mujoco_env<hopper_task<ExcludeCurrentPositions, Dims>, Scalar> {
  using base = mujoco_env<hopper_task<ExcludeCurrentPositions, Dims>, Scalar>;  ///< the generic env it is
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment

  /// Gymnasium's is_healthy on a state.
  RLK_HOST_DEVICE static bool is_healthy(const typename base::Params& p, const typename base::State& s) {
    return base::task_type::is_healthy(p, s);
  }
};

}  // namespace rlkernels
