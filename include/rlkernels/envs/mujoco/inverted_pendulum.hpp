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
#include "task_env.hpp"

#include <cmath>

namespace rlkernels {

/// @brief InvertedPendulum-v5's task for mujoco_env (inverted_pendulum is
/// mujoco_env<inverted_pendulum_task, Scalar>; see it for the semantics).
struct inverted_pendulum_task {
  using dims = models::inverted_pendulum_dims;  ///< the model's sizes (nq 2, nv 2, nu 1)
  /// The inverted_pendulum.xml model (xml_file).
  template <class S>
  static physics::model<S, dims> model() {
    return models::inverted_pendulum<S>();
  }
  static constexpr int observation_size = 4;      ///< qpos, qvel
  static constexpr double action_low = -3;        ///< actuator_ctrlrange low; Box(-3, 3, (1,)), float32 in Gymnasium
  static constexpr double action_high = 3;        ///< actuator_ctrlrange high
  static constexpr int frame_skip = 2;            ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of InvertedPendulum-v5 (truncation)
  /// A step is microseconds of physics (2 RK4 steps of a 2-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;

  /// @brief Gymnasium's InvertedPendulumEnv keyword arguments with their v5 defaults
  /// (inverted_pendulum's Params adds model = xml_file, frame_skip and the time limit). Not
  /// applicable: default_camera_config and the rendering arguments.
  template <class S>
  struct params {
    S reset_noise_scale = S(0.01);  ///< reset noise: U(-s, s) on qpos and on qvel
  };

  /// @brief Gymnasium's step info.
  template <class S>
  struct step_info {
    S reward_survive;  ///< the reward: 1 if not terminated, else 0
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, dims>& m, mujoco_state<S, dims>& s,
                                    Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }

  /// Reward 1 while |qpos[1]| <= 0.2 and the state is finite, else terminated with 0.
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>&, const mujoco_task_step<S, dims>& t, step_info<S>& info) {
    bool finite = true;
    for (int i = 0; i < dims::nq; ++i) finite &= std::isfinite(t.after.qpos[i]);
    for (int i = 0; i < dims::nv; ++i) finite &= std::isfinite(t.after.qvel[i]);
    const S angle = t.after.qpos[1];
    const bool terminated = !finite || angle > S(0.2) || -angle > S(0.2);  // |angle| > 0.2
    info.reward_survive = terminated ? S(0) : S(1);
    return {info.reward_survive, terminated};
  }

  /// qpos, then qvel.
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const mujoco_state<S, dims>& s,
                                      S* obs) {
    detail::observe_state<false>(s, false, obs);
  }
};

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
struct inverted_pendulum : mujoco_env<inverted_pendulum_task, Scalar> {};

}  // namespace rlkernels
