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

#include <cmath>
#include <cstdint>

namespace rlkernels {

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
struct pusher {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::pusher_dims;                            ///< the model's sizes (nq 11, nv 11, nu 7)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates (arm 7, object 2, goal 2)
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr int observation_size = 23;                  ///< qpos 7, qvel 7, three bodies' positions
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-2, 2, (7,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< the seven joints' torques
  static constexpr Scalar action_low = Scalar(-2);             ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(2);             ///< actuator_ctrlrange high
  /// A step is tens of microseconds of physics (5 Euler steps of an 11-dof model with contacts):
  /// OpenMP steps batches of 4 or more envs in parallel.
  static constexpr int parallel_from = 4;
  static constexpr int fingertip_body = 10;  ///< body "tips_arm"
  static constexpr int object_body = 11;     ///< body "object"
  static constexpr int goal_body = 12;       ///< body "goal"

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: the three bodies' positions of the last
  /// forward pass.
  struct State {
    Scalar qpos[nq];                  ///< joint positions (mjData::qpos): the arm's 7, the object's y, x, the goal's y, x
    Scalar qvel[nv];                  ///< joint velocities (mjData::qvel)
    Scalar qacc_warmstart[nv];        ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more contacts or rows than the capacity (saturates)
    Scalar xpos[3][3];                ///< xpos of tips_arm, object and goal of the last forward pass
  };

  /// @brief Gymnasium's PusherEnv keyword arguments with their v5 defaults, plus the time limit.
  /// Not applicable: xml_file (the model is `model`), default_camera_config and the rendering
  /// arguments.
  struct Params {
    model_type model = models::pusher<Scalar>();  ///< the physics model (xml_file = "pusher_v5.xml")
    int frame_skip = 5;                           ///< physics steps per env step (values < 1 act as 1)
    Scalar reward_near_weight = Scalar(0.5);      ///< weight of |object - fingertip|
    Scalar reward_dist_weight = Scalar(1);        ///< weight of |object - goal|
    Scalar reward_control_weight = Scalar(0.1);   ///< weight of sum(action^2)
    int max_episode_steps = 100;                  ///< time limit of Pusher-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms).
  struct step_info {
    Scalar reward_dist;  ///< -reward_dist_weight * |object - goal|
    Scalar reward_ctrl;  ///< -reward_control_weight * sum(action^2)
    Scalar reward_near;  ///< -reward_near_weight * |object - fingertip|
  };

  /// Gymnasium's set_state(qpos, qvel): the state's qpos and qvel, then the bodies' frames at qpos.
  /// qacc_warmstart and the counters are left as they are.
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) s.qvel[i] = qvel[i];
    body_positions(p, s);
  }

  /// The arm at qpos0 at (nearly) rest, the object drawn away from the goal (see the class
  /// comment for the draws and their order).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = p.model.qpos0[i];
    Scalar cy, cx;
    do {
      cy = gen.template uniform<Scalar>(Scalar(-0.3), Scalar(0));
      cx = gen.template uniform<Scalar>(Scalar(-0.2), Scalar(0.2));
    } while (!(std::sqrt(cy * cy + cx * cx) > Scalar(0.17)));
    s.qpos[7] = cy;
    s.qpos[8] = cx;
    s.qpos[9] = s.qpos[10] = Scalar(0);
    for (int i = 0; i < nv; ++i) s.qvel[i] = gen.template uniform<Scalar>(Scalar(-0.005), Scalar(0.005));
    for (int i = 7; i < nv; ++i) s.qvel[i] = Scalar(0);
    for (int i = 0; i < nv; ++i) s.qacc_warmstart[i] = Scalar(0);
    body_positions(p, s);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    physics::data<Scalar, dims> d;  // simulate() sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    info.reward_ctrl = -(detail::sum_of_squares(action, nu) * p.reward_control_weight);
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.reward_dist = info.reward_near = Scalar(0);
      return {info.reward_ctrl, false, true};  // truncated: the engine failed, the MDP did not end
    }
    copy_positions(d, s);
    Scalar near[3], dist[3];
    for (int k = 0; k < 3; ++k) {
      near[k] = s.xpos[1][k] - s.xpos[0][k];
      dist[k] = s.xpos[1][k] - s.xpos[2][k];
    }
    info.reward_near = -(norm3(near) * p.reward_near_weight);
    info.reward_dist = -(norm3(dist) * p.reward_dist_weight);
    return {info.reward_dist + info.reward_ctrl + info.reward_near, false};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[0:7], qvel[0:7], xpos(tips_arm), xpos(object), xpos(goal).
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    for (int i = 0; i < 7; ++i) obs[i] = s.qpos[i];
    for (int i = 0; i < 7; ++i) obs[7 + i] = s.qvel[i];
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 3; ++k) obs[14 + 3 * b + k] = s.xpos[b][k];
  }

 private:
  /// np.linalg.norm of a 3-vector (sqrt of the dot product, summed in order).
  RLK_HOST_DEVICE static Scalar norm3(const Scalar* v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

  RLK_HOST_DEVICE static void copy_positions(const physics::data<Scalar, dims>& d, State& s) {
    const int bodies[3] = {fingertip_body, object_body, goal_body};
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 3; ++k) s.xpos[b][k] = d.xpos[bodies[b]][k];
  }

  /// The bodies' positions at the state's qpos (forward kinematics only: they do not depend on
  /// qvel or ctrl).
  RLK_HOST_DEVICE static void body_positions(const Params& p, State& s) {
    physics::data<Scalar, dims> d;  // load_workspace sets what kinematics reads
    detail::load_workspace(d, s, static_cast<const Scalar*>(nullptr), false);
    physics::kinematics(p.model, d);
    copy_positions(d, s);
  }
};

}  // namespace rlkernels
