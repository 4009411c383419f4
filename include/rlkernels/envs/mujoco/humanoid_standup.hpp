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
struct humanoid_standup {
  /// The implementation shared with humanoid (observation, reset, set_state, simulation).
  using common = detail::humanoid_common<Scalar, Dims, ExcludeCurrentPositions, IncludeCinert, IncludeCvel,
                                         IncludeQfrcActuator, IncludeCfrcExt>;
  using scalar_type = Scalar;                       ///< state, observation, action, reward type
  using dims = Dims;                                ///< the model's sizes (as Humanoid-v5's)
  using model_type = physics::model<Scalar, Dims>;  ///< the physics model type
  static constexpr int nq = Dims::nq;               ///< position coordinates
  static constexpr int nv = Dims::nv;               ///< degrees of freedom
  static constexpr int nu = Dims::nu;               ///< actuators
  static constexpr int observation_size = common::observation_size;  ///< 348 by default
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-0.4, 0.4, (17,)), float32 in Gymnasium
  static constexpr int action_size = nu;            ///< the 17 joint motors
  static constexpr Scalar action_low = Scalar(-0.4);  ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(0.4);  ///< actuator_ctrlrange high
  static constexpr int parallel_from = 2;           ///< see humanoid

  using State = humanoid_state<Scalar, Dims>;       ///< see humanoid_state

  /// @brief Gymnasium's HumanoidStandupEnv keyword arguments with their v5 defaults, plus the time
  /// limit (xml_file: `model`; the observation flags are template parameters).
  struct Params {
    model_type model = default_model();            ///< the physics model (xml_file = "humanoidstandup.xml")
    int frame_skip = 5;                            ///< physics steps per env step (values < 1 act as 1)
    /// Gymnasium 1.4 documents this as the weight of qpos[2] / timestep, stores it and never uses it
    /// (humanoidstandup_v5.py); to give v5's rewards exactly, it has no effect here either.
    Scalar uph_cost_weight = Scalar(1);
    Scalar ctrl_cost_weight = Scalar(0.1);         ///< weight of sum(ctrl^2)
    Scalar impact_cost_weight = Scalar(0.5e-6);    ///< weight of sum(cfrc_ext^2)
    Scalar impact_cost_range[2] = {-std::numeric_limits<Scalar>::infinity(), Scalar(10)};  ///< clip of the impact cost
    Scalar reset_noise_scale = Scalar(1e-2);       ///< reset noise: U(-s, s) on qpos and qvel
    int max_episode_steps = 1000;                  ///< time limit of HumanoidStandup-v5 (truncation)
  };

  /// @brief Gymnasium's step info (tendon_length and tendon_velocity are in the State).
  struct step_info {
    Scalar x_position;              ///< qpos[0]
    Scalar y_position;              ///< qpos[1]
    Scalar z_distance_from_origin;  ///< qpos[2] - qpos0[2]
    Scalar reward_linup;            ///< qpos[2] / timestep
    Scalar reward_quadctrl;         ///< -ctrl_cost_weight * sum(ctrl^2)
    Scalar reward_impact;           ///< -clip(impact_cost_weight * sum(cfrc_ext^2), impact_cost_range)
  };

  /// Gymnasium's set_state(qpos, qvel) (see humanoid_common::set_state).
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    common::set_state(p.model, s, qpos, qvel);
  }

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s), qacc_warmstart = 0, then set_state.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    common::reset(p.model, s, p.reset_noise_scale, gen);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const int warning = common::simulate_and_keep(p.model, s, action, p.frame_skip);
    const Scalar ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(action, nu);  // ctrl: the raw action
    info.x_position = s.qpos[0];
    info.y_position = s.qpos[1];
    info.z_distance_from_origin = s.qpos[2] - p.model.qpos0[2];
    info.reward_quadctrl = -ctrl_cost;
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.reward_linup = info.reward_impact = Scalar(0);
      return {-ctrl_cost, false, true};  // truncated: the engine failed, the MDP did not end
    }
    Scalar impact = p.impact_cost_weight * common::cfrc_ext_square_sum(s);
    impact = impact < p.impact_cost_range[0] ? p.impact_cost_range[0]
                                             : (impact > p.impact_cost_range[1] ? p.impact_cost_range[1] : impact);
    info.reward_linup = (s.qpos[2] - Scalar(0)) / p.model.timestep;
    info.reward_impact = -impact;
    const Scalar reward = ((info.reward_linup - ctrl_cost) - impact) + Scalar(1);
    return {reward, false};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// The observation (as Humanoid-v5's).
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) { common::observe(s, obs); }

 private:
  static model_type default_model() { return physics::rebind<Dims>(models::humanoid_standup<Scalar>()); }
};

}  // namespace rlkernels
