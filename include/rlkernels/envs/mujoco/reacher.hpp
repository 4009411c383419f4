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

#include <cmath>
#include <cstdint>

namespace rlkernels {

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
struct reacher {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::reacher_dims;                           ///< the model's sizes (nq 4, nv 4, nu 2)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates (arm 2, target 2)
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr int observation_size = 10;                  ///< cos 2, sin 2, target 2, velocities 2, vec 2
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (2,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< the two joints' torques
  static constexpr Scalar action_low = Scalar(-1);             ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(1);             ///< actuator_ctrlrange high
  /// A step is microseconds of physics (2 RK4 steps of a 4-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;
  static constexpr int fingertip_body = 3;  ///< body "fingertip"
  static constexpr int target_body = 4;     ///< body "target"

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: fingertip - target of the last forward pass.
  struct State {
    Scalar qpos[nq];                  ///< joint positions (mjData::qpos): the arm's two angles, then the target's x, y
    Scalar qvel[nv];                  ///< joint velocities (mjData::qvel)
    Scalar qacc_warmstart[nv];        ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more constraint rows than the capacity (saturates)
    Scalar vec[3];                    ///< xpos(fingertip) - xpos(target) of the last forward pass
  };

  /// @brief Gymnasium's ReacherEnv keyword arguments with their v5 defaults, plus the time limit.
  /// Not applicable: xml_file (the model is `model`), default_camera_config and the rendering
  /// arguments.
  struct Params {
    model_type model = models::reacher<Scalar>();  ///< the physics model (xml_file = "reacher.xml")
    int frame_skip = 2;                            ///< physics steps per env step (values < 1 act as 1)
    Scalar reward_dist_weight = Scalar(1);         ///< weight of the distance |fingertip - target|
    Scalar reward_control_weight = Scalar(1);      ///< weight of sum(action^2)
    int max_episode_steps = 50;                    ///< time limit of Reacher-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms).
  struct step_info {
    Scalar reward_dist;  ///< -reward_dist_weight * |fingertip - target|
    Scalar reward_ctrl;  ///< -reward_control_weight * sum(action^2)
  };

  /// Gymnasium's set_state(qpos, qvel): the state's qpos and qvel, then the bodies' frames at qpos
  /// for vec. qacc_warmstart and the counters are left as they are.
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) s.qvel[i] = qvel[i];
    fingertip_to_target(p, s);
  }

  /// The arm at qpos0 + U(-0.1, 0.1) with velocities U(-0.005, 0.005), the target uniform in the
  /// disc of radius 0.2 at rest, qacc_warmstart = 0 (see the class comment for the draws' order).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = p.model.qpos0[i] + gen.template uniform<Scalar>(Scalar(-0.1), Scalar(0.1));
    Scalar gx, gy;
    do {
      gx = gen.template uniform<Scalar>(Scalar(-0.2), Scalar(0.2));
      gy = gen.template uniform<Scalar>(Scalar(-0.2), Scalar(0.2));
    } while (!(std::sqrt(gx * gx + gy * gy) < Scalar(0.2)));
    s.qpos[2] = gx;
    s.qpos[3] = gy;
    for (int i = 0; i < nv; ++i) s.qvel[i] = gen.template uniform<Scalar>(Scalar(-0.005), Scalar(0.005));
    s.qvel[2] = s.qvel[3] = Scalar(0);
    for (int i = 0; i < nv; ++i) s.qacc_warmstart[i] = Scalar(0);
    fingertip_to_target(p, s);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    physics::data<Scalar, dims> d;  // simulate() sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    info.reward_ctrl = -(detail::sum_of_squares(action, nu) * p.reward_control_weight);
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.reward_dist = Scalar(0);
      return {info.reward_ctrl, false, true};  // truncated: the engine failed, the MDP did not end
    }
    for (int k = 0; k < 3; ++k) s.vec[k] = d.xpos[fingertip_body][k] - d.xpos[target_body][k];
    info.reward_dist = -(norm3(s.vec) * p.reward_dist_weight);
    return {info.reward_dist + info.reward_ctrl, false};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// cos(qpos[0:2]), sin(qpos[0:2]), qpos[2:4], qvel[0:2], vec[0:2].
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
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

 private:
  /// np.linalg.norm of a 3-vector (sqrt of the dot product, summed in order).
  RLK_HOST_DEVICE static Scalar norm3(const Scalar* v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

  /// vec from the bodies' frames at the state's qpos (forward kinematics only: the frames do not
  /// depend on qvel or ctrl).
  RLK_HOST_DEVICE static void fingertip_to_target(const Params& p, State& s) {
    physics::data<Scalar, dims> d;  // load_workspace sets what kinematics reads
    detail::load_workspace(d, s, static_cast<const Scalar*>(nullptr), false);
    physics::kinematics(p.model, d);
    for (int k = 0; k < 3; ++k) s.vec[k] = d.xpos[fingertip_body][k] - d.xpos[target_body][k];
  }
};

}  // namespace rlkernels
