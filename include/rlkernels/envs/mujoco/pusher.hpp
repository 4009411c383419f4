// rlkernels/envs/mujoco/pusher.hpp
// Pusher-v5 as Gymnasium 1.4 defines it (envs/mujoco/pusher_v5.py) on the rlkernels physics engine:
// a seven-joint arm must push a cylinder (the object, on two slides over the table) to a fixed
// goal. Three kinematic trees (arm, object, goal): the engine solves them as constraint islands;
// the object rests on the table (plane-cylinder contacts) and the wrist pushes it (capsule-cylinder
// contacts, MuJoCo's GJK/EPA with multiCCD). Continuous action (seven joint torques, [-2, 2]),
// reward = -|object - goal| - 0.5 |object - fingertip| - 0.1 |action|^2, never terminated,
// truncated at 100 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../../physics/smooth.hpp"
#include "../env.hpp"
#include "models/pusher.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <cmath>
#include <cstdint>

namespace rlkernels {

/// @brief Pusher-v5's task for mujoco_env (pusher is built as mujoco_env<pusher_task, Scalar>; see
/// it for the semantics).
struct pusher_task {
  using dims = models::pusher_dims;  ///< the model's sizes (nq 11, nv 11, nu 7)
  /// The pusher_v5.xml model (xml_file).
  template <class S>
  static physics::model<S, dims> model() {
    return models::pusher<S>();
  }
  static constexpr int observation_size = 23;    ///< qpos 7, qvel 7, three bodies' positions
  static constexpr double action_low = -2;       ///< actuator_ctrlrange low; Box(-2, 2, (7,)), float32 in Gymnasium
  static constexpr double action_high = 2;       ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;           ///< physics steps per env step
  static constexpr int max_episode_steps = 100;  ///< time limit of Pusher-v5 (truncation)
  /// A step is tens of microseconds of physics (5 Euler steps of an 11-dof model with contacts):
  /// OpenMP steps batches of 4 or more envs in parallel.
  static constexpr int parallel_from = 4;
  static constexpr int fingertip_body = 10;  ///< body "tips_arm"
  static constexpr int object_body = 11;     ///< body "object"
  static constexpr int goal_body = 12;       ///< body "goal"

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: the three bodies' positions of the last
  /// forward pass.
  template <class S>
  struct state {
    S qpos[dims::nq];                 ///< joint positions (mjData::qpos): the arm's 7, the object's y, x, the goal's y, x
    S qvel[dims::nv];                 ///< joint velocities (mjData::qvel)
    S qacc_warmstart[dims::nv];       ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more contacts or rows than the capacity (saturates)
    S xpos[3][3];                     ///< xpos of tips_arm, object and goal of the last forward pass
  };

  /// @brief Gymnasium's PusherEnv keyword arguments with their v5 defaults (pusher's Params adds
  /// model = xml_file, frame_skip and the time limit). Not applicable: default_camera_config and
  /// the rendering arguments.
  template <class S>
  struct params {
    S reward_near_weight = S(0.5);     ///< weight of |object - fingertip|
    S reward_dist_weight = S(1);       ///< weight of |object - goal|
    S reward_control_weight = S(0.1);  ///< weight of sum(action^2)
  };

  /// @brief Gymnasium's step info (the reward terms).
  template <class S>
  struct step_info {
    S reward_dist;  ///< -reward_dist_weight * |object - goal|
    S reward_ctrl;  ///< -reward_control_weight * sum(action^2)
    S reward_near;  ///< -reward_near_weight * |object - fingertip|
  };

  /// The arm at qpos0 at (nearly) rest, the object drawn away from the goal (see pusher for the
  /// draws and their order).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>&, const physics::model<S, dims>& m, state<S>& s, Rng& gen) {
    for (int i = 0; i < dims::nq; ++i) s.qpos[i] = m.qpos0[i];
    S cy, cx;
    do {
      cy = gen.template uniform<S>(S(-0.3), S(0));
      cx = gen.template uniform<S>(S(-0.2), S(0.2));
    } while (!(std::sqrt(cy * cy + cx * cx) > S(0.17)));
    s.qpos[7] = cy;
    s.qpos[8] = cx;
    s.qpos[9] = s.qpos[10] = S(0);
    for (int i = 0; i < dims::nv; ++i) s.qvel[i] = gen.template uniform<S>(S(-0.005), S(0.005));
    for (int i = 7; i < dims::nv; ++i) s.qvel[i] = S(0);
  }

  /// The bodies' positions at the state's qpos (forward kinematics only: they do not depend on
  /// qvel or ctrl).
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>&, const physics::model<S, dims>& m, state<S>& s) {
    physics::data<S, dims> d;  // load_workspace sets what kinematics reads
    detail::load_workspace(d, s, static_cast<const S*>(nullptr), false);
    physics::kinematics(m, d);
    copy_positions(d, s);
  }

  /// Reward and info of a step (see pusher); never terminated.
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, dims, state<S>>& t,
                                             step_info<S>& info) {
    failed_step(p, t, info);
    copy_positions(t.data, t.after);
    const state<S>& s = t.after;
    S near[3], dist[3];
    for (int k = 0; k < 3; ++k) {
      near[k] = s.xpos[1][k] - s.xpos[0][k];
      dist[k] = s.xpos[1][k] - s.xpos[2][k];
    }
    info.reward_near = -(norm3(near) * p.reward_near_weight);
    info.reward_dist = -(norm3(dist) * p.reward_dist_weight);
    return {info.reward_dist + info.reward_ctrl + info.reward_near, false};
  }

  /// A step the engine could not take: the control cost, negated, is the reward.
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, dims, state<S>>& t,
                                       step_info<S>& info) {
    info.reward_ctrl = -(detail::sum_of_squares(t.action, dims::nu) * p.reward_control_weight);
    return info.reward_ctrl;
  }

  /// qpos[0:7], qvel[0:7], xpos(tips_arm), xpos(object), xpos(goal).
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const state<S>& s, S* obs) {
    for (int i = 0; i < 7; ++i) obs[i] = s.qpos[i];
    for (int i = 0; i < 7; ++i) obs[7 + i] = s.qvel[i];
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 3; ++k) obs[14 + 3 * b + k] = s.xpos[b][k];
  }

  /// np.linalg.norm of a 3-vector (sqrt of the dot product, summed in order).
  template <class S>
  RLK_HOST_DEVICE static S norm3(const S* v) {
    return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  }

  /// xpos of tips_arm, object and goal from a workspace into the state.
  template <class S>
  RLK_HOST_DEVICE static void copy_positions(const physics::data<S, dims>& d, state<S>& s) {
    const int bodies[3] = {fingertip_body, object_body, goal_body};
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 3; ++k) s.xpos[b][k] = d.xpos[bodies[b]][k];
  }
};

/// @brief Pusher-v5: Gymnasium's semantics on `physics::step` with the pusher_v5.xml model.
///
/// One step: ctrl = action (not clipped: MuJoCo clamps ctrl to ctrlrange [-2, 2] in the actuation),
/// then frame_skip physics steps (Euler, 0.01 s each, no gravity). The bodies' positions tips_arm
/// (the fingertip), object and goal are read from the last physics step's forward pass, as
/// Gymnasium's get_body_com reads mjData's xpos after mj_step. reward = reward_dist + reward_ctrl +
/// reward_near, with reward_dist = -reward_dist_weight * |object - goal|, reward_ctrl =
/// -reward_control_weight * sum(action^2), reward_near = -reward_near_weight * |object - fingertip|;
/// never terminated. A step the engine cannot compute ends the episode as truncated with reward
/// reward_ctrl and the state kept (see mujoco_state).
///
/// Observation [23]: qpos[0:7], qvel[0:7] (the arm), xpos of tips_arm, object and goal.
/// Reset: the arm at qpos0 (0); the object's slides (y, then x: qpos[7], qpos[8]) drawn as U(-0.3, 0)
/// and U(-0.2, 0.2) until farther than 0.17 from the goal at (0, 0); the goal's slides at 0;
/// qvel = U(-0.005, 0.005) for the arm, 0 for the object and the goal (the draws in Gymnasium's
/// order: the object's pairs, then 11 for qvel); qacc_warmstart = 0; then the bodies' frames
/// (Gymnasium's set_state runs mj_forward) for the reset observation.
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Scalar = float>
struct pusher : mujoco_env<pusher_task, Scalar> {
  static constexpr int fingertip_body = pusher_task::fingertip_body;  ///< body "tips_arm"
  static constexpr int object_body = pusher_task::object_body;        ///< body "object"
  static constexpr int goal_body = pusher_task::goal_body;            ///< body "goal"
};

}  // namespace rlkernels
