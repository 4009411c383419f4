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

namespace rlkernels {

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
struct swimmer {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::swimmer_dims;                           ///< the model's sizes (nq 5, nv 5, nu 2)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
  static constexpr int observation_size = nq + nv - (ExcludeCurrentPositions ? 2 : 0);  ///< 8 (or 10)
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (2,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< the two hinges' torques
  static constexpr Scalar action_low = Scalar(-1);             ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(1);             ///< actuator_ctrlrange high
  /// A step is a few microseconds of physics (4 RK4 steps of a 5-dof model): OpenMP steps batches
  /// of 8 or more envs in parallel.
  static constexpr int parallel_from = 8;

  /// qpos, qvel, qacc_warmstart and the count of failed steps (mujoco_state).
  using State = mujoco_state<Scalar, dims>;

  /// @brief Gymnasium's SwimmerEnv keyword arguments with their v5 defaults, plus the time limit.
  /// Not applicable: xml_file (the model is `model`), default_camera_config and the rendering
  /// arguments; exclude_current_positions_from_observation is the template parameter.
  struct Params {
    model_type model = models::swimmer<Scalar>();    ///< the physics model (xml_file = "swimmer.xml")
    int frame_skip = 4;                              ///< physics steps per env step (values < 1 act as 1)
    Scalar forward_reward_weight = Scalar(1);        ///< weight of x_velocity in the reward
    Scalar ctrl_cost_weight = Scalar(1e-4);          ///< weight of sum(action^2)
    Scalar reset_noise_scale = Scalar(0.1);          ///< reset noise: U(-s, s) on qpos and on qvel
    int max_episode_steps = 1000;                    ///< time limit of Swimmer-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms and positions).
  struct step_info {
    Scalar x_position;      ///< qpos[0] after the step
    Scalar y_position;      ///< qpos[1] after the step
    Scalar x_velocity;      ///< (x after - x before) / dt
    Scalar y_velocity;      ///< (y after - y before) / dt
    Scalar reward_forward;  ///< forward_reward_weight * x_velocity
    Scalar reward_ctrl;     ///< -ctrl_cost_weight * sum(action^2)
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s), qacc_warmstart = 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, false, gen);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const Scalar x_before = s.qpos[0], y_before = s.qpos[1];
    const int warning = detail::simulate(p.model, s, action, p.frame_skip);
    const Scalar ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(action, nu);
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    info.x_position = s.qpos[0];
    info.y_position = s.qpos[1];
    info.reward_ctrl = -ctrl_cost;
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.x_velocity = info.y_velocity = info.reward_forward = Scalar(0);
      return {-ctrl_cost, false, true};  // truncated: the engine failed, the MDP did not end
    }
    info.x_velocity = (s.qpos[0] - x_before) / dt;
    info.y_velocity = (s.qpos[1] - y_before) / dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    return {info.reward_forward - ctrl_cost, false};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[2:] (all of qpos with ExcludeCurrentPositions = false), then qvel.
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    int k = 0;
    for (int i = ExcludeCurrentPositions ? 2 : 0; i < nq; ++i) obs[k++] = s.qpos[i];
    for (int i = 0; i < nv; ++i) obs[k++] = s.qvel[i];
  }
};

}  // namespace rlkernels
