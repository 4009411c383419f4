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

namespace rlkernels {

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
template <class Scalar = float, bool ExcludeCurrentPositions = true>
struct half_cheetah {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::half_cheetah_dims;                      ///< the model's sizes (nq 9, nv 9, nu 6)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
  static constexpr int observation_size = nq + nv - (ExcludeCurrentPositions ? 1 : 0);  ///< 17 (or 18)
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (6,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< back thigh, shin, foot, front thigh, shin, foot
  static constexpr Scalar action_low = Scalar(-1);             ///< actuator_ctrlrange low (all actuators)
  static constexpr Scalar action_high = Scalar(1);             ///< actuator_ctrlrange high
  /// A step is tens of microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// qpos, qvel, qacc_warmstart and the count of failed steps (mujoco_state).
  using State = mujoco_state<Scalar, dims>;

  /// @brief Gymnasium's HalfCheetahEnv keyword arguments with their v5 defaults, plus the time
  /// limit. Not applicable here: xml_file (the model is `model`, generated from half_cheetah.xml by
  /// scripts/mjcf_to_header.py), default_camera_config, render_mode, width, height, camera_id,
  /// camera_name, max_geom, visual_options (rendering). exclude_current_positions_from_observation
  /// is the template parameter ExcludeCurrentPositions.
  struct Params {
    model_type model = models::half_cheetah<Scalar>();  ///< the physics model (xml_file = "half_cheetah.xml")
    int frame_skip = 5;                              ///< physics steps per env step (values < 1 act as 1)
    Scalar forward_reward_weight = Scalar(1);        ///< weight of x_velocity in the reward
    Scalar ctrl_cost_weight = Scalar(0.1);           ///< weight of sum(action^2)
    Scalar reset_noise_scale = Scalar(0.1);          ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
    int max_episode_steps = 1000;                    ///< time limit of HalfCheetah-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms and position).
  struct step_info {
    Scalar x_position;      ///< qpos[0] after the step
    Scalar x_velocity;      ///< (x after - x before) / dt
    Scalar reward_forward;  ///< forward_reward_weight * x_velocity
    Scalar reward_ctrl;     ///< -ctrl_cost_weight * sum(action^2)
  };

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1), qacc_warmstart = 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, true, gen);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const Scalar x_before = s.qpos[0];
    const int warning = detail::simulate(p.model, s, action, p.frame_skip);
    const Scalar ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(action, nu);
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    info.x_position = s.qpos[0];
    info.reward_ctrl = -ctrl_cost;
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.x_velocity = info.reward_forward = Scalar(0);
      return {-ctrl_cost, false, true};  // truncated: the engine failed, the MDP did not end
    }
    info.x_velocity = (s.qpos[0] - x_before) / dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
    return {info.reward_forward - ctrl_cost, false};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[1:] (qpos with ExcludeCurrentPositions = false), then qvel.
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    detail::observe_state<ExcludeCurrentPositions>(s, false, obs);
  }
};

}  // namespace rlkernels
