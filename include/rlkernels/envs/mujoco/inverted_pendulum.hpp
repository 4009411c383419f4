// rlkernels/envs/mujoco/inverted_pendulum.hpp
// InvertedPendulum-v5 as Gymnasium 1.4 defines it (envs/mujoco/inverted_pendulum_v5.py) on the
// rlkernels physics engine: a cart on a rail with a pole on a hinge; push the cart to keep the pole
// upright. Continuous action (the cart's force, [-3, 3]), reward 1 per step while the pole is within
// 0.2 rad of upright, terminated when it is not, truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "models/inverted_pendulum.hpp"
#include "mujoco_env.hpp"

#include <cmath>

namespace rlkernels {

/// @brief InvertedPendulum-v5: Gymnasium's semantics on `physics::step` with the
/// inverted_pendulum.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-3, 3] in the actuation),
/// then frame_skip physics steps (RK4, 0.02 s each). Terminated when the observation is not finite
/// or |qpos[1]| > 0.2 (the pole's angle); reward = 1 if not terminated, else 0 (v5 gives no reward
/// on the terminal step). A step the engine cannot compute ends the episode as truncated with reward
/// 0 and the state kept (see mujoco_state).
///
/// Observation [4]: qpos (cart position, pole angle), then qvel. Reset: qpos = qpos0 + U(-s, s),
/// qvel = U(-s, s), s = reset_noise_scale; qacc_warmstart = 0.
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Scalar = float>
struct inverted_pendulum {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::inverted_pendulum_dims;                 ///< the model's sizes (nq 2, nv 2, nu 1)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr int observation_size = nq + nv;             ///< 4
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-3, 3, (1,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< the force on the cart
  static constexpr Scalar action_low = Scalar(-3);             ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(3);             ///< actuator_ctrlrange high
  /// A step is microseconds of physics (2 RK4 steps of a 2-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;

  /// qpos, qvel, qacc_warmstart and the count of failed steps (mujoco_state).
  using State = mujoco_state<Scalar, dims>;

  /// @brief Gymnasium's InvertedPendulumEnv keyword arguments with their v5 defaults, plus the time
  /// limit. Not applicable: xml_file (the model is `model`), default_camera_config and the
  /// rendering arguments.
  struct Params {
    model_type model = models::inverted_pendulum<Scalar>();  ///< the physics model (xml_file = "inverted_pendulum.xml")
    int frame_skip = 2;                              ///< physics steps per env step (values < 1 act as 1)
    Scalar reset_noise_scale = Scalar(0.01);         ///< reset noise: U(-s, s) on qpos and on qvel
    int max_episode_steps = 1000;                    ///< time limit of InvertedPendulum-v5 (truncation)
  };

  /// @brief Gymnasium's step info.
  struct step_info {
    Scalar reward_survive;  ///< the reward: 1 if not terminated, else 0
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s), qacc_warmstart = 0.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, false, gen);
  }

  /// One env step, with Gymnasium's info in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const int warning = detail::simulate(p.model, s, action, p.frame_skip);
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.reward_survive = Scalar(0);
      return {Scalar(0), false, true};  // truncated: the engine failed, the MDP did not end
    }
    bool finite = true;
    for (int i = 0; i < nq; ++i) finite &= std::isfinite(s.qpos[i]);
    for (int i = 0; i < nv; ++i) finite &= std::isfinite(s.qvel[i]);
    const Scalar angle = s.qpos[1];
    const bool terminated = !finite || angle > Scalar(0.2) || -angle > Scalar(0.2);  // |angle| > 0.2
    info.reward_survive = terminated ? Scalar(0) : Scalar(1);
    return {info.reward_survive, terminated};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos, then qvel.
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    detail::observe_state<false>(s, false, obs);
  }
};

}  // namespace rlkernels
