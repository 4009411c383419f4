// rlkernels/envs/mujoco/inverted_double_pendulum.hpp
// InvertedDoublePendulum-v5 as Gymnasium 1.4 defines it (envs/mujoco/inverted_double_pendulum_v5.py)
// on the rlkernels physics engine: a cart with two poles stacked on hinges; push the cart to keep
// the tip high. Continuous action (the cart's force, [-1, 1]), terminated when the tip's height is
// 1 or less, truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "models/inverted_double_pendulum.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief InvertedDoublePendulum-v5's task for mujoco_env (inverted_double_pendulum is
/// mujoco_env<inverted_double_pendulum_task, Scalar>; see it for the semantics).
struct inverted_double_pendulum_task {
  using dims = models::inverted_double_pendulum_dims;  ///< the model's sizes (nq 3, nv 3, nu 1)
  /// The inverted_double_pendulum.xml model (xml_file).
  template <class S>
  static physics::model<S, dims> model() {
    return models::inverted_double_pendulum<S>();
  }
  static constexpr int observation_size = 9;      ///< x, sin, sin, cos, cos, 3 velocities, a constraint force
  static constexpr double action_low = -1;        ///< actuator_ctrlrange low; Box(-1, 1, (1,)), float32 in Gymnasium
  static constexpr double action_high = 1;        ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;            ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of InvertedDoublePendulum-v5 (truncation)
  /// A step is microseconds of physics (5 RK4 steps of a 3-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: qfrc_constraint[0] of the last forward pass.
  template <class S>
  struct state {
    S qpos[dims::nq];                 ///< joint positions (mjData::qpos)
    S qvel[dims::nv];                 ///< joint velocities (mjData::qvel)
    S qacc_warmstart[dims::nv];       ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more constraint rows than the capacity (saturates)
    S qfrc_constraint0;               ///< qfrc_constraint[0] of the last forward pass (the slider's limit force)
  };

  /// @brief Gymnasium's InvertedDoublePendulumEnv keyword arguments with their v5 defaults
  /// (inverted_double_pendulum's Params adds model = xml_file, frame_skip and the time limit).
  /// Not applicable: default_camera_config and the rendering arguments.
  template <class S>
  struct params {
    S healthy_reward = S(10);      ///< reward per step while not terminated
    S reset_noise_scale = S(0.1);  ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
  };

  /// @brief Gymnasium's step info (the reward terms).
  template <class S>
  struct step_info {
    S reward_survive;    ///< healthy_reward if not terminated, else 0
    S distance_penalty;  ///< -(0.01 x^2 + (y - 2)^2), (x, _, y) the tip's position
    S velocity_penalty;  ///< -(1e-3 qvel[1]^2 + 5e-3 qvel[2]^2)
  };

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, dims>& m, state<S>& s, Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, true, gen);
  }

  /// qfrc_constraint[0] of a forward pass at the state's qpos and qvel with ctrl 0 and no warm
  /// start (Gymnasium's set_state runs mj_forward).
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>&, const physics::model<S, dims>& m, state<S>& s) {
    physics::data<S, dims> d;  // load_workspace sets what the engine reads
    detail::load_workspace(d, s, static_cast<const S*>(nullptr), false);
    physics::forward(m, d);
    s.qfrc_constraint0 = d.qfrc_constraint[0];
  }

  /// Reward, termination and info of a step (see inverted_double_pendulum).
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, dims, state<S>>& t,
                                             step_info<S>& info) {
    t.after.qfrc_constraint0 = t.data.qfrc_constraint[0];
    const S x = t.data.site_xpos[0][0], y = t.data.site_xpos[0][2];
    const bool terminated = y <= S(1);
    const S v1 = t.after.qvel[1], v2 = t.after.qvel[2];
    const S dist_penalty = S(0.01) * (x * x) + (y - S(2)) * (y - S(2));
    const S vel_penalty = S(1e-3) * (v1 * v1) + S(5e-3) * (v2 * v2);
    info.reward_survive = terminated ? S(0) : p.healthy_reward;
    info.distance_penalty = -dist_penalty;
    info.velocity_penalty = -vel_penalty;
    return {info.reward_survive - dist_penalty - vel_penalty, terminated};
  }

  /// qpos[0], sin(qpos[1:3]), cos(qpos[1:3]), clip(qvel, -10, 10), clip(qfrc_constraint[0], -10, 10).
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const state<S>& s, S* obs) {
    using std::cos;
    using std::sin;
    obs[0] = s.qpos[0];
    obs[1] = sin(s.qpos[1]);
    obs[2] = sin(s.qpos[2]);
    obs[3] = cos(s.qpos[1]);
    obs[4] = cos(s.qpos[2]);
    for (int i = 0; i < dims::nv; ++i) obs[5 + i] = clip10(s.qvel[i]);
    obs[8] = clip10(s.qfrc_constraint0);
  }

 private:
  template <class S>
  RLK_HOST_DEVICE static S clip10(S v) {
    return v < S(-10) ? S(-10) : (v > S(10) ? S(10) : v);
  }
};

/// @brief InvertedDoublePendulum-v5: Gymnasium's semantics on `physics::step` with the
/// inverted_double_pendulum.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-1, 1] in the actuation),
/// then frame_skip physics steps (RK4, 0.01 s each). With (x, _, y) the world position of the site
/// "tip" (site_xpos[0], from the last physics step's forward pass, as Gymnasium reads mjData after
/// mj_step): terminated = y <= 1; reward = healthy_reward * (not terminated) - (0.01 x^2 + (y - 2)^2)
/// - (1e-3 qvel[1]^2 + 5e-3 qvel[2]^2). A step the engine cannot compute ends the episode as
/// truncated with reward 0 and the state kept (see mujoco_state).
///
/// Observation [9]: qpos[0], sin(qpos[1:3]), cos(qpos[1:3]), clip(qvel, -10, 10),
/// clip(qfrc_constraint[0], -10, 10) (the slider's constraint force: its joint limit). Reset:
/// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1), s = reset_noise_scale; qacc_warmstart = 0; then a
/// forward pass (Gymnasium's set_state runs mj_forward, with ctrl = 0 after mj_resetData) for the
/// reset observation's qfrc_constraint[0].
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Scalar = float>
struct inverted_double_pendulum : mujoco_env<inverted_double_pendulum_task, Scalar> {};

}  // namespace rlkernels
