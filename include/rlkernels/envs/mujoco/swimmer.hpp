// rlkernels/envs/mujoco/swimmer.hpp
// Swimmer-v5 as Gymnasium 1.4 defines it (envs/mujoco/swimmer_v5.py) on the rlkernels physics
// engine: three capsule links joined by two driven hinges, in a viscous medium (MuJoCo's
// inertia-box fluid model, density 4000, viscosity 0.1); swim forward along x. Continuous action
// (the two hinges' torques, [-1, 1]), reward = x velocity - 1e-4 * |action|^2, never terminated,
// truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "models/swimmer.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

namespace rlkernels {

/// @brief Swimmer-v5's task for mujoco_env (swimmer is built as mujoco_env<swimmer_task<...>,
/// Scalar>; see it for the semantics): Gymnasium's keyword arguments (`params`), observation,
/// reward, reset and step info.
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
template <bool ExcludeCurrentPositions = true>
struct swimmer_task {
  using dims = models::swimmer_dims;  ///< the model's sizes (nq 5, nv 5, nu 2)
  /// The swimmer.xml model (xml_file).
  template <class S>
  static physics::model<S, dims> model() {
    return models::swimmer<S>();
  }
  static constexpr int observation_size = dims::nq + dims::nv - (ExcludeCurrentPositions ? 2 : 0);  ///< 8 (or 10)
  static constexpr double action_low = -1;   ///< actuator_ctrlrange low; Box(-1, 1, (2,)), float32 in Gymnasium
  static constexpr double action_high = 1;   ///< actuator_ctrlrange high
  static constexpr int frame_skip = 4;       ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of Swimmer-v5 (truncation)
  /// A step is a few microseconds of physics (4 RK4 steps of a 5-dof model): OpenMP steps batches
  /// of 8 or more envs in parallel.
  static constexpr int parallel_from = 8;

  /// @brief Gymnasium's SwimmerEnv keyword arguments with their v5 defaults (swimmer's Params adds
  /// model = xml_file, frame_skip and the time limit). Not applicable: default_camera_config and
  /// the rendering arguments; exclude_current_positions_from_observation is the template parameter.
  template <class S>
  struct params {
    S forward_reward_weight = S(1);  ///< weight of x_velocity in the reward
    S ctrl_cost_weight = S(1e-4);    ///< weight of sum(action^2)
    S reset_noise_scale = S(0.1);    ///< reset noise: U(-s, s) on qpos and on qvel
  };

  /// @brief Gymnasium's step info (the reward terms and positions).
  template <class S>
  struct step_info {
    S x_position;      ///< qpos[0] after the step
    S y_position;      ///< qpos[1] after the step
    S x_velocity;      ///< (x after - x before) / dt
    S y_velocity;      ///< (y after - y before) / dt
    S reward_forward;  ///< forward_reward_weight * x_velocity
    S reward_ctrl;     ///< -ctrl_cost_weight * sum(action^2)
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, dims>& m, mujoco_state<S, dims>& s,
                                    Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }

  /// Reward and info of a step (see swimmer); never terminated.
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, dims>& t,
                                             step_info<S>& info) {
    const S ctrl_cost = -failed_step(p, t, info);
    info.x_velocity = (t.after.qpos[0] - t.before.qpos[0]) / t.dt;
    info.y_velocity = (t.after.qpos[1] - t.before.qpos[1]) / t.dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    return {info.reward_forward - ctrl_cost, false};
  }

  /// A step the engine could not take: the positions of the state kept and the control cost, which
  /// is the reward (negated).
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, dims>& t, step_info<S>& info) {
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, dims::nu);
    info.x_position = t.after.qpos[0];
    info.y_position = t.after.qpos[1];
    info.reward_ctrl = -ctrl_cost;
    return -ctrl_cost;
  }

  /// qpos[2:] (all of qpos with ExcludeCurrentPositions = false), then qvel.
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const mujoco_state<S, dims>& s,
                                      S* obs) {
    int k = 0;
    for (int i = ExcludeCurrentPositions ? 2 : 0; i < dims::nq; ++i) obs[k++] = s.qpos[i];
    for (int i = 0; i < dims::nv; ++i) obs[k++] = s.qvel[i];
  }
};

/// @brief Swimmer-v5: Gymnasium's semantics on `physics::step` with the swimmer.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-1, 1] in the actuation),
/// then frame_skip physics steps (RK4, 0.01 s each, fluid forces in the passive stage). Reward =
/// forward_reward_weight * x_velocity - ctrl_cost_weight * sum(action^2), with x_velocity =
/// (qpos[0] after - qpos[0] before) / dt; never terminated (Gymnasium's Swimmer has no termination).
/// A step the engine cannot compute ends the episode as truncated with reward -ctrl_cost and the
/// state kept (see mujoco_state).
///
/// Observation [8]: qpos[2:] (the body's angle and the two joint angles), then qvel (5); with
/// ExcludeCurrentPositions = false, qpos[0:2] too [10]. Reset: qpos = qpos0 + U(-s, s),
/// qvel = U(-s, s), s = reset_noise_scale; qacc_warmstart = 0.
/// @tparam Scalar float or double: state, observation, action, reward and engine type
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
template <class Scalar = float, bool ExcludeCurrentPositions = true>
struct swimmer : mujoco_env<swimmer_task<ExcludeCurrentPositions>, Scalar> {
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
};

}  // namespace rlkernels
