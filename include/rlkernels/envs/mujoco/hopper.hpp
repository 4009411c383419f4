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

#include <limits>

namespace rlkernels {

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
struct hopper {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = Dims;                                           ///< the model's sizes (nq 6, nv 6, nu 3)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
  static constexpr int observation_size = nq + nv - (ExcludeCurrentPositions ? 1 : 0);  ///< 11 (or 12)
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (3,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< thigh, leg, foot torques
  static constexpr Scalar action_low = Scalar(-1);             ///< actuator_ctrlrange low (all actuators)
  static constexpr Scalar action_high = Scalar(1);             ///< actuator_ctrlrange high
  /// A step is tens of microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// qpos, qvel, qacc_warmstart and the count of failed steps (mujoco_state).
  using State = mujoco_state<Scalar, dims>;

  /// @brief Gymnasium's HopperEnv keyword arguments with their v5 defaults, plus the time limit.
  /// Not applicable here: xml_file (the model is `model`, generated from hopper.xml by
  /// scripts/mjcf_to_header.py; generate another for another robot), default_camera_config,
  /// render_mode, width, height, camera_id, camera_name, max_geom, visual_options (rendering).
  /// exclude_current_positions_from_observation is the template parameter ExcludeCurrentPositions.
  struct Params {
    model_type model = default_model();             ///< the physics model (xml_file = "hopper.xml")
    int frame_skip = 4;                              ///< physics steps per env step (values < 1 act as 1)
    Scalar forward_reward_weight = Scalar(1);        ///< weight of x_velocity in the reward
    Scalar ctrl_cost_weight = Scalar(1e-3);          ///< weight of sum(action^2)
    Scalar healthy_reward = Scalar(1);               ///< reward per step while healthy
    bool terminate_when_unhealthy = true;            ///< terminate when not healthy
    Scalar healthy_state_range[2] = {Scalar(-100), Scalar(100)};  ///< bounds of qpos[2:] and qvel
    Scalar healthy_z_range[2] = {Scalar(0.7), std::numeric_limits<Scalar>::infinity()};  ///< bounds of the torso height qpos[1]
    Scalar healthy_angle_range[2] = {Scalar(-0.2), Scalar(0.2)};  ///< bounds of the torso angle qpos[2]
    Scalar reset_noise_scale = Scalar(5e-3);         ///< half-width of the uniform reset noise
    int max_episode_steps = 1000;                    ///< time limit of Hopper-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms and positions).
  struct step_info {
    Scalar x_position;              ///< qpos[0] after the step
    Scalar z_distance_from_origin;  ///< qpos[1] - qpos0[1]
    Scalar x_velocity;              ///< (x after - x before) / dt
    Scalar reward_forward;          ///< forward_reward_weight * x_velocity
    Scalar reward_ctrl;             ///< -ctrl_cost_weight * sum(action^2)
    Scalar reward_survive;          ///< healthy_reward if healthy, else 0
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s), qacc_warmstart = 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, false, gen);
  }

  /// Gymnasium's is_healthy on a state.
  RLK_HOST_DEVICE static bool is_healthy(const Params& p, const State& s) {
    const Scalar lo = p.healthy_state_range[0], hi = p.healthy_state_range[1];
    bool healthy_state = true;
    for (int i = 2; i < nq; ++i) healthy_state &= lo < s.qpos[i] && s.qpos[i] < hi;
    for (int i = 0; i < nv; ++i) healthy_state &= lo < s.qvel[i] && s.qvel[i] < hi;
    const Scalar z = s.qpos[1], angle = s.qpos[2];
    const bool healthy_z = p.healthy_z_range[0] < z && z < p.healthy_z_range[1];
    const bool healthy_angle = p.healthy_angle_range[0] < angle && angle < p.healthy_angle_range[1];
    return healthy_state && healthy_z && healthy_angle;
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const Scalar x_before = s.qpos[0];
    const int warning = detail::simulate(p.model, s, action, p.frame_skip);
    const Scalar ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(action, nu);
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    info.x_position = s.qpos[0];
    info.z_distance_from_origin = s.qpos[1] - p.model.qpos0[1];
    info.reward_ctrl = -ctrl_cost;
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.x_velocity = info.reward_forward = info.reward_survive = Scalar(0);
      return {-ctrl_cost, false, true};  // truncated: the engine failed, the MDP did not end
    }
    info.x_velocity = (s.qpos[0] - x_before) / dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    const bool healthy = is_healthy(p, s);
    info.reward_survive = healthy ? p.healthy_reward : Scalar(0);
    const Scalar reward = (info.reward_forward + info.reward_survive) - ctrl_cost;
    return {reward, !healthy && p.terminate_when_unhealthy};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[1:] (qpos with ExcludeCurrentPositions = false), then qvel clipped to [-10, 10].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    detail::observe_state<ExcludeCurrentPositions>(s, true, obs);
  }

 private:
  static model_type default_model() { return physics::rebind<Dims>(models::hopper<Scalar>()); }
};

}  // namespace rlkernels
