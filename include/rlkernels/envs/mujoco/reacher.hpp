// rlkernels/envs/mujoco/reacher.hpp
// Reacher-v5 as Gymnasium 1.4 defines it (envs/mujoco/reacher_v5.py) on the rlkernels physics
// engine: a two-link planar arm whose fingertip must reach a target placed at random. The target
// is a second kinematic tree (two limited slides), so the engine solves the arm's limit rows as
// a constraint island of its own, as MuJoCo does. Continuous action (the two joints' torques,
// [-1, 1]), reward = -|fingertip - target| - |action|^2, never terminated, truncated at 50 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../../physics/smooth.hpp"
#include "../env.hpp"
#include "models/reacher.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief Reacher-v5's task for mujoco_env (reacher is built as mujoco_env<reacher_task, Scalar>;
/// see it for the semantics).
struct reacher_task {
  using dims = models::reacher_dims;  ///< the model's sizes (nq 4, nv 4, nu 2)
  /// The reacher.xml model (xml_file).
  template <class S>
  static physics::model<S, dims> model() {
    return models::reacher<S>();
  }
  static constexpr int observation_size = 10;   ///< cos 2, sin 2, target 2, velocities 2, vec 2
  static constexpr double action_low = -1;      ///< actuator_ctrlrange low; Box(-1, 1, (2,)), float32 in Gymnasium
  static constexpr double action_high = 1;      ///< actuator_ctrlrange high
  static constexpr int frame_skip = 2;          ///< physics steps per env step
  static constexpr int max_episode_steps = 50;  ///< time limit of Reacher-v5 (truncation)
  /// A step is microseconds of physics (2 RK4 steps of a 4-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;
  static constexpr int fingertip_body = 3;  ///< body "fingertip"
  static constexpr int target_body = 4;     ///< body "target"

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: fingertip - target of the last forward pass.
  template <class S>
  struct state {
    S qpos[dims::nq];                 ///< joint positions (mjData::qpos): the arm's two angles, then the target's x, y
    S qvel[dims::nv];                 ///< joint velocities (mjData::qvel)
    S qacc_warmstart[dims::nv];       ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more constraint rows than the capacity (saturates)
    S vec[3];                         ///< xpos(fingertip) - xpos(target) of the last forward pass
  };

  /// @brief Gymnasium's ReacherEnv keyword arguments with their v5 defaults (reacher's Params adds
  /// model = xml_file, frame_skip and the time limit). Not applicable: default_camera_config and
  /// the rendering arguments.
  template <class S>
  struct params {
    S reward_dist_weight = S(1);     ///< weight of the distance |fingertip - target|
    S reward_control_weight = S(1);  ///< weight of sum(action^2)
  };

  /// @brief Gymnasium's step info (the reward terms).
  template <class S>
  struct step_info {
    S reward_dist;  ///< -reward_dist_weight * |fingertip - target|
    S reward_ctrl;  ///< -reward_control_weight * sum(action^2)
  };

  /// The arm at qpos0 + U(-0.1, 0.1) with velocities U(-0.005, 0.005), the target uniform in the
  /// disc of radius 0.2 at rest (see reacher for the draws' order).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>&, const physics::model<S, dims>& m, state<S>& s, Rng& gen) {
    for (int i = 0; i < dims::nq; ++i) s.qpos[i] = m.qpos0[i] + gen.template uniform<S>(S(-0.1), S(0.1));
    S gx, gy;
    do {
      gx = gen.template uniform<S>(S(-0.2), S(0.2));
      gy = gen.template uniform<S>(S(-0.2), S(0.2));
    } while (!(std::sqrt(gx * gx + gy * gy) < S(0.2)));
    s.qpos[2] = gx;
    s.qpos[3] = gy;
    for (int i = 0; i < dims::nv; ++i) s.qvel[i] = gen.template uniform<S>(S(-0.005), S(0.005));
    s.qvel[2] = s.qvel[3] = S(0);
  }

  /// vec from the bodies' frames at the state's qpos (forward kinematics only: the frames do not
  /// depend on qvel or ctrl).
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>&, const physics::model<S, dims>& m, state<S>& s) {
    physics::data<S, dims> d;  // load_workspace sets what kinematics reads
    detail::load_workspace(d, s, static_cast<const S*>(nullptr), false);
    physics::kinematics(m, d);
    for (int k = 0; k < 3; ++k) s.vec[k] = d.xpos[fingertip_body][k] - d.xpos[target_body][k];
  }

  /// Reward and info of a step (see reacher); never terminated.
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, dims, state<S>>& t,
                                             step_info<S>& info) {
    const S reward_ctrl = failed_step(p, t, info);
    for (int k = 0; k < 3; ++k) t.after.vec[k] = t.data.xpos[fingertip_body][k] - t.data.xpos[target_body][k];
    info.reward_dist = -(norm3(t.after.vec) * p.reward_dist_weight);
    return {info.reward_dist + reward_ctrl, false};
  }

  /// A step the engine could not take: the control cost, negated, is the reward.
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, dims, state<S>>& t,
                                       step_info<S>& info) {
    info.reward_ctrl = -(detail::sum_of_squares(t.action, dims::nu) * p.reward_control_weight);
    return info.reward_ctrl;
  }

  /// cos(qpos[0:2]), sin(qpos[0:2]), qpos[2:4], qvel[0:2], vec[0:2].
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const state<S>& s, S* obs) {
    using std::cos;
    using std::sin;
    obs[0] = cos(s.qpos[0]);
    obs[1] = cos(s.qpos[1]);
    obs[2] = sin(s.qpos[0]);
    obs[3] = sin(s.qpos[1]);
    obs[4] = s.qpos[2];
    obs[5] = s.qpos[3];
    obs[6] = s.qvel[0];
    obs[7] = s.qvel[1];
    obs[8] = s.vec[0];
    obs[9] = s.vec[1];
  }

  /// np.linalg.norm of a 3-vector (sqrt of the dot product, summed in order).
  template <class S>
  RLK_HOST_DEVICE static S norm3(const S* v) {
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  }
};

/// @brief Reacher-v5: Gymnasium's semantics on `physics::step` with the reacher.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-1, 1] in the actuation),
/// then frame_skip physics steps (RK4, 0.01 s each). With vec = xpos(fingertip) - xpos(target)
/// (the bodies' frames from the last physics step's forward pass, as Gymnasium's get_body_com
/// reads mjData after mj_step): reward = -reward_dist_weight * |vec| - reward_control_weight *
/// sum(action^2); never terminated. A step the engine cannot compute ends the episode as truncated
/// with reward -reward_control_weight * sum(action^2) and the state kept (see mujoco_state).
///
/// Observation [10]: cos(qpos[0:2]), sin(qpos[0:2]), qpos[2:4] (the target), qvel[0:2], vec[0:2].
/// Reset: qpos = qpos0 + U(-0.1, 0.1) for the arm; the target (qpos[2:4]) drawn as U(-0.2, 0.2)^2
/// until inside the disc of radius 0.2; qvel = U(-0.005, 0.005) for the arm and 0 for the target
/// (the draws in Gymnasium's order: 4 for qpos, the target's pairs, 4 for qvel); qacc_warmstart =
/// 0; then the bodies' frames (Gymnasium's set_state runs mj_forward) for the reset observation's vec.
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Scalar = float>
struct reacher : mujoco_env<reacher_task, Scalar> {
  static constexpr int fingertip_body = reacher_task::fingertip_body;  ///< body "fingertip"
  static constexpr int target_body = reacher_task::target_body;        ///< body "target"
};

}  // namespace rlkernels
