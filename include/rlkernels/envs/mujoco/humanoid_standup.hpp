// rlkernels/envs/mujoco/humanoid_standup.hpp
// HumanoidStandup-v5 as Gymnasium 1.4 defines it (envs/mujoco/humanoidstandup_v5.py): the Humanoid
// lying on the floor (humanoidstandup.xml), rewarded for raising its torso. Never terminates;
// truncated at 1000 steps. State and observation as Humanoid-v5's (humanoid.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "humanoid.hpp"
#include "models/humanoid_standup.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

namespace rlkernels {

/// @brief HumanoidStandup-v5's task for mujoco_env (humanoid_standup is
/// mujoco_env<humanoid_standup_task<...>, Scalar>; see it for the semantics). State, observation,
/// reset and set_state as humanoid_task's.
template <bool ExcludeCurrentPositions = true, bool IncludeCinert = true, bool IncludeCvel = true,
          bool IncludeQfrcActuator = true, bool IncludeCfrcExt = true, class Dims = models::humanoid_standup_dims>
struct humanoid_standup_task {
  /// The implementation shared with humanoid_task (observation, set_state, what a step keeps).
  template <class S>
  using common = detail::humanoid_common<S, Dims, ExcludeCurrentPositions, IncludeCinert, IncludeCvel,
                                         IncludeQfrcActuator, IncludeCfrcExt>;
  using dims = Dims;  ///< the model's sizes (as Humanoid-v5's)
  /// The humanoidstandup.xml model (xml_file) with Dims' capacities.
  template <class S>
  static physics::model<S, Dims> model() {
    return physics::rebind<Dims>(models::humanoid_standup<S>());
  }
  static constexpr int observation_size = common<float>::observation_size;  ///< 348 by default
  static constexpr double action_low = -0.4;  ///< actuator_ctrlrange low; Box(-0.4, 0.4, (17,)), float32 in Gymnasium
  static constexpr double action_high = 0.4;  ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;        ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of HumanoidStandup-v5 (truncation)
  static constexpr int parallel_from = 2;     ///< see humanoid_task

  /// see humanoid_state
  template <class S>
  using state = humanoid_state<S, Dims>;

  /// @brief Gymnasium's HumanoidStandupEnv keyword arguments with their v5 defaults
  /// (humanoid_standup's Params adds model = xml_file, frame_skip and the time limit; the
  /// observation flags are template parameters).
  template <class S>
  struct params {
    /// Gymnasium 1.4 documents this as the weight of qpos[2] / timestep, stores it and never uses it
    /// (humanoidstandup_v5.py); to give v5's rewards exactly, it has no effect here either.
    S uph_cost_weight = S(1);
    S ctrl_cost_weight = S(0.1);        ///< weight of sum(ctrl^2)
    S impact_cost_weight = S(0.5e-6);   ///< weight of sum(cfrc_ext^2)
    S impact_cost_range[2] = {-std::numeric_limits<S>::infinity(), S(10)};  ///< clip of the impact cost
    S reset_noise_scale = S(1e-2);      ///< reset noise: U(-s, s) on qpos and qvel
  };

  /// @brief Gymnasium's step info (tendon_length and tendon_velocity are in the State).
  template <class S>
  struct step_info {
    S x_position;              ///< qpos[0]
    S y_position;              ///< qpos[1]
    S z_distance_from_origin;  ///< qpos[2] - qpos0[2]
    S reward_linup;            ///< qpos[2] / timestep
    S reward_quadctrl;         ///< -ctrl_cost_weight * sum(ctrl^2)
    S reward_impact;           ///< -clip(impact_cost_weight * sum(cfrc_ext^2), impact_cost_range)
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, Dims>& m, state<S>& s, Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }

  /// What mj_forward leaves at the state (see humanoid_common::set_state).
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>&, const physics::model<S, Dims>& m, state<S>& s) {
    common<S>::set_state(m, s, s.qpos, s.qvel);
  }

  /// mj_rnePostConstraint and what the State keeps, then reward and info (see humanoid_standup).
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, Dims, state<S>>& t,
                                             step_info<S>& info) {
    state<S>& s = t.after;
    common<S>::keep_step(t.model, t.data, s);
    const S ctrl_cost = -failed_step(p, t, info);
    S impact = p.impact_cost_weight * common<S>::cfrc_ext_square_sum(s);
    impact = impact < p.impact_cost_range[0] ? p.impact_cost_range[0]
                                             : (impact > p.impact_cost_range[1] ? p.impact_cost_range[1] : impact);
    info.reward_linup = (s.qpos[2] - S(0)) / t.model.timestep;
    info.reward_impact = -impact;
    const S reward = ((info.reward_linup - ctrl_cost) - impact) + S(1);
    return {reward, false};
  }

  /// A step the engine could not take: the positions of the state kept and the control cost, which
  /// is the reward (negated).
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, Dims, state<S>>& t,
                                       step_info<S>& info) {
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, Dims::nu);  // ctrl: the raw action
    info.x_position = t.after.qpos[0];
    info.y_position = t.after.qpos[1];
    info.z_distance_from_origin = t.after.qpos[2] - t.model.qpos0[2];
    info.reward_quadctrl = -ctrl_cost;
    return -ctrl_cost;
  }

  /// The observation (as Humanoid-v5's).
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, Dims>&, const state<S>& s, S* obs) {
    common<S>::observe(s, obs);
  }
};

/// @brief HumanoidStandup-v5: Gymnasium's semantics on `physics::step` with humanoidstandup.xml
/// (RK4, 0.003 s, PGS, frame_skip 5).
///
/// Reward = ((qpos[2] / timestep - ctrl_cost_weight * sum(ctrl^2)) -
/// clip(impact_cost_weight * sum(cfrc_ext^2), impact_cost_range) + 1, with the model's timestep
/// (not dt) and NumPy's pairwise sums; never terminated. Observation, reset and State as
/// Humanoid-v5's (humanoid_state; reset noise U(-0.01, 0.01) on qpos and qvel).
/// The workspace holds models::humanoid_standup_dims::ncon contacts and nefc rows (measured maxima
/// with a margin: docs/physics.md); a step that needs more ends the episode as truncated and is
/// counted (capacity_overflows()).
template <class Scalar = float, bool ExcludeCurrentPositions = true, bool IncludeCinert = true, bool IncludeCvel = true,
          bool IncludeQfrcActuator = true, bool IncludeCfrcExt = true, class Dims = models::humanoid_standup_dims>
struct humanoid_standup : mujoco_env<humanoid_standup_task<ExcludeCurrentPositions, IncludeCinert, IncludeCvel,
                                                           IncludeQfrcActuator, IncludeCfrcExt, Dims>,
                                     Scalar> {
  /// The implementation shared with humanoid (observation, set_state, what a step keeps).
  using common = detail::humanoid_common<Scalar, Dims, ExcludeCurrentPositions, IncludeCinert, IncludeCvel,
                                         IncludeQfrcActuator, IncludeCfrcExt>;
};

}  // namespace rlkernels
