// rlkernels/envs/mujoco/half_cheetah.hpp
// HalfCheetah-v5 as Gymnasium 1.4 defines it (envs/mujoco/half_cheetah_v5.py) on the rlkernels
// physics engine: a planar two-legged "cheetah" that should run forward. Continuous action (6 joint
// torques), never terminates, truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "models/half_cheetah.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

namespace rlkernels {

/// @brief HalfCheetah-v5's task for mujoco_env (half_cheetah is built as
/// mujoco_env<half_cheetah_task<...>, Scalar>; see it for the semantics): Gymnasium's keyword
/// arguments (`params`), observation, reward, reset and step info.
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
/// @tparam Dims the model's sizes (see half_cheetah)
template <bool ExcludeCurrentPositions = true, class Dims = models::half_cheetah_dims>
struct half_cheetah_task {
  using dims = Dims;  ///< the model's sizes (nq 9, nv 9, nu 6)
  /// The half_cheetah.xml model (xml_file) with Dims' capacities.
  template <class S>
  static physics::model<S, Dims> model() {
    return physics::rebind<Dims>(models::half_cheetah<S>());
  }
  static constexpr int observation_size = Dims::nq + Dims::nv - (ExcludeCurrentPositions ? 1 : 0);  ///< 17 (or 18)
  static constexpr double action_low = -1;   ///< actuator_ctrlrange low (all actuators); Box(-1, 1, (6,)), float32 in Gymnasium
  static constexpr double action_high = 1;   ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;       ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of HalfCheetah-v5 (truncation)
  /// A step is tens of microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// @brief Gymnasium's HalfCheetahEnv keyword arguments with their v5 defaults (half_cheetah's
  /// Params adds model = xml_file, frame_skip and the time limit). Not applicable here:
  /// default_camera_config, render_mode, width, height, camera_id, camera_name, max_geom,
  /// visual_options (rendering). exclude_current_positions_from_observation is the template
  /// parameter ExcludeCurrentPositions.
  template <class S>
  struct params {
    S forward_reward_weight = S(1);  ///< weight of x_velocity in the reward
    S ctrl_cost_weight = S(0.1);     ///< weight of sum(action^2)
    S reset_noise_scale = S(0.1);    ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
  };

  /// @brief Gymnasium's step info (the reward terms and position).
  template <class S>
  struct step_info {
    S x_position;      ///< qpos[0] after the step
    S x_velocity;      ///< (x after - x before) / dt
    S reward_forward;  ///< forward_reward_weight * x_velocity
    S reward_ctrl;     ///< -ctrl_cost_weight * sum(action^2)
  };

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, Dims>& m, mujoco_state<S, Dims>& s,
                                    Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, true, gen);
  }

  /// Reward and info of a step (see half_cheetah); never terminated.
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, Dims>& t,
                                             step_info<S>& info) {
    const S ctrl_cost = -failed_step(p, t, info);
    info.x_velocity = (t.after.qpos[0] - t.before.qpos[0]) / t.dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    return {info.reward_forward - ctrl_cost, false};
  }

  /// A step the engine could not take: x_position of the state kept and the control cost, which is
  /// the reward (negated).
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, Dims>& t, step_info<S>& info) {
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, Dims::nu);
    info.x_position = t.after.qpos[0];
    info.reward_ctrl = -ctrl_cost;
    return -ctrl_cost;
  }

  /// qpos[1:] (qpos with ExcludeCurrentPositions = false), then qvel.
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, Dims>&, const mujoco_state<S, Dims>& s,
                                      S* obs) {
    detail::observe_state<ExcludeCurrentPositions>(s, false, obs);
  }
};

/// @brief HalfCheetah-v5: Gymnasium's semantics on `physics::step` with the half_cheetah.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-1, 1] in the actuation,
/// so an action of 1e30 or infinity acts as +-1 but costs its full square), then
/// frame_skip physics steps (semi-implicit Euler with implicit damping, 0.01 s each). Reward =
/// forward_reward_weight * x_velocity - ctrl_cost_weight * sum(action^2) (the raw action), with
/// x_velocity = (qpos[0] after - before) / (timestep * frame_skip). Never terminates (a step the
/// engine cannot compute ends the episode as truncated: see mujoco_state).
///
/// Observation [17] (positions excluded, the default): qpos[1:9], then qvel[0:9] (not clipped);
/// with ExcludeCurrentPositions = false [18]: qpos[0:9] first. Reset: qpos = qpos0 + U(-s, s),
/// qvel = s * N(0, 1), s = reset_noise_scale; qacc_warmstart = 0.
///
/// half_cheetah<double> reproduces Gymnasium (float64 actions) to the engine's accuracy: see
/// docs/physics.md for the measured figures. half_cheetah<float> runs model and engine in float.
/// @tparam Scalar float or double: state, observation, action, reward and engine type
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation (it changes
///         the observation size, so it is a template parameter rather than a Params field)
/// @tparam Dims the model's sizes: models::half_cheetah_dims (14 contacts and 47 constraint rows;
///         measured peaks 6 / 26 under random actions, 7 / 31 under saturated ones; no trained policy
///         measured yet), or full_capacity_t<half_cheetah<...>>, 16 / 76, every contact its pairs can
///         make (docs/physics.md).
///         A step that needs more ends the episode as truncated and is counted: capacity_overflows()
template <class Scalar = float, bool ExcludeCurrentPositions = true, class Dims = models::half_cheetah_dims>
struct half_cheetah : mujoco_env<half_cheetah_task<ExcludeCurrentPositions, Dims>, Scalar> {
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
};

}  // namespace rlkernels
