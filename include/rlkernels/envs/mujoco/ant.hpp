// rlkernels/envs/mujoco/ant.hpp
// Ant-v5 as Gymnasium 1.4 defines it (envs/mujoco/ant_v5.py) on the rlkernels physics engine: a
// free-floating four-legged robot (torso, four two-segment legs, 8 hinge motors) that should walk
// in +x. Continuous action, terminated when unhealthy, truncated at 1000 steps.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/data.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../../physics/smooth.hpp"
#include "../env.hpp"
#include "models/ant.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace rlkernels {

/// @brief Ant-v5's task for mujoco_env (ant is built as mujoco_env<ant_task<...>, Scalar>; see it
/// for the semantics): Gymnasium's keyword arguments (`params`), state, observation, reward,
/// termination, reset and step info.
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
/// @tparam IncludeCfrcExt Gymnasium's include_cfrc_ext_in_observation
/// @tparam Dims the model's sizes (see ant)
template <bool ExcludeCurrentPositions = true, bool IncludeCfrcExt = true, class Dims = models::ant_dims>
struct ant_task {
  using dims = Dims;                         ///< the model's sizes (nq 15, nv 14, nu 8, 14 bodies)
  static constexpr int nbody = Dims::nbody;  ///< bodies, the world included
  /// The ant.xml model (xml_file) with Dims' capacities.
  template <class S>
  static physics::model<S, Dims> model() {
    return physics::rebind<Dims>(models::ant<S>());
  }
  /// 105 by default (13 + 14 + 78)
  static constexpr int observation_size =
      Dims::nq + Dims::nv - (ExcludeCurrentPositions ? 2 : 0) + (IncludeCfrcExt ? 6 * (nbody - 1) : 0);
  static constexpr double action_low = -1;   ///< actuator_ctrlrange low (all actuators); Box(-1, 1, (8,)), float32 in Gymnasium
  static constexpr double action_high = 1;   ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;       ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of Ant-v5 (truncation)
  /// A step is about a hundred microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// Gymnasium reads from mjData besides them: the main body's position after the last forward
  /// pass, and the contact forces cfrc_ext of bodies 1..13 (the world's row is always 0).
  template <class S>
  struct state {
    S qpos[Dims::nq];                 ///< joint positions (mjData::qpos)
    S qvel[Dims::nv];                 ///< joint velocities (mjData::qvel)
    S qacc_warmstart[Dims::nv];       ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more contacts or rows than the capacities (saturates)
    S main_body_xy[2];                ///< xpos[main_body][0:2] of the last forward pass
    S cfrc_ext[nbody - 1][6];         ///< cfrc_ext[1:] after the last step (raw, not clipped)
  };

  /// @brief Gymnasium's AntEnv keyword arguments with their v5 defaults (ant's Params adds model =
  /// xml_file, frame_skip and the time limit). Not applicable: the rendering arguments.
  /// exclude_current_positions_from_observation and include_cfrc_ext_in_observation are template
  /// parameters (they change the observation size).
  template <class S>
  struct params {
    S forward_reward_weight = S(1);   ///< weight of x_velocity
    S ctrl_cost_weight = S(0.5);      ///< weight of sum(action^2)
    S contact_cost_weight = S(5e-4);  ///< weight of sum(clip(cfrc_ext)^2)
    S healthy_reward = S(1);          ///< reward per step while healthy
    int main_body = 1;                ///< body whose x (and y) velocity is rewarded (1: the torso)
    bool terminate_when_unhealthy = true;      ///< terminate when not healthy
    S healthy_z_range[2] = {S(0.2), S(1)};     ///< closed bounds of the torso height qpos[2]
    S contact_force_range[2] = {S(-1), S(1)};  ///< clip of cfrc_ext (observation and cost)
    S reset_noise_scale = S(0.1);     ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
  };

  /// @brief Gymnasium's step info.
  template <class S>
  struct step_info {
    S x_position;            ///< qpos[0] after the step
    S y_position;            ///< qpos[1] after the step
    S distance_from_origin;  ///< |qpos[0:2]|
    S x_velocity;            ///< main body x velocity over the step
    S y_velocity;            ///< main body y velocity over the step
    S reward_forward;        ///< forward_reward_weight * x_velocity
    S reward_ctrl;           ///< -ctrl_cost_weight * sum(action^2)
    S reward_contact;        ///< -contact_cost_weight * sum(clip(cfrc_ext)^2)
    S reward_survive;        ///< healthy_reward if healthy, else 0
  };

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, Dims>& m, state<S>& s, Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, true, gen);
  }

  /// What mj_forward leaves that the env reads: the main body's position; no contact forces.
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>& p, const physics::model<S, Dims>& m, state<S>& s) {
    physics::data<S, Dims> d;  // the kinematics read only qpos
    detail::poison_workspace(d);
    for (int i = 0; i < Dims::nq; ++i) d.qpos[i] = s.qpos[i];
    physics::kinematics(m, d);
    s.main_body_xy[0] = d.xpos[p.main_body][0];
    s.main_body_xy[1] = d.xpos[p.main_body][1];
    for (int b = 0; b < nbody - 1; ++b)
      for (int c = 0; c < 6; ++c) s.cfrc_ext[b][c] = S(0);
  }

  /// Gymnasium's is_healthy: qpos and qvel finite, z = qpos[2] within healthy_z_range (inclusive).
  template <class S>
  RLK_HOST_DEVICE static bool is_healthy(const params<S>& p, const state<S>& s) {
    bool finite = true;
    for (int i = 0; i < Dims::nq; ++i) finite &= std::isfinite(s.qpos[i]);
    for (int i = 0; i < Dims::nv; ++i) finite &= std::isfinite(s.qvel[i]);
    const S z = s.qpos[2];
    return finite && p.healthy_z_range[0] <= z && z <= p.healthy_z_range[1];
  }

  /// mj_rnePostConstraint for cfrc_ext, then reward, termination and info (see ant).
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, Dims, state<S>>& t,
                                             step_info<S>& info) {
    const S ctrl_cost = -failed_step(p, t, info);
    state<S>& s = t.after;
    physics::rne_post_constraint(t.model, t.data);
    for (int b = 1; b < nbody; ++b)
      for (int k = 0; k < 6; ++k) s.cfrc_ext[b - 1][k] = t.data.cfrc_ext[b][k];
    s.main_body_xy[0] = t.data.xpos[p.main_body][0];
    s.main_body_xy[1] = t.data.xpos[p.main_body][1];
    const S lo = p.contact_force_range[0], hi = p.contact_force_range[1];
    // np.sum(np.square(np.clip(cfrc_ext, lo, hi))) over all 14 x 6 values, the world's zeros first
    const S contact_cost = p.contact_cost_weight * detail::numpy_sum<S>(
                                                       [&](int k) {
                                                         const S f = k < 6 ? S(0) : clip(t.data.cfrc_ext[k / 6][k % 6], lo, hi);
                                                         return f * f;
                                                       },
                                                       0, 6 * nbody);
    info.x_velocity = (s.main_body_xy[0] - t.before.main_body_xy[0]) / t.dt;
    info.y_velocity = (s.main_body_xy[1] - t.before.main_body_xy[1]) / t.dt;
    info.reward_forward = info.x_velocity * p.forward_reward_weight;
    const bool healthy = is_healthy(p, s);
    info.reward_survive = healthy ? p.healthy_reward : S(0);
    info.reward_contact = -contact_cost;
    const S reward = (info.reward_forward + info.reward_survive) - (ctrl_cost + contact_cost);
    return {reward, !healthy && p.terminate_when_unhealthy};
  }

  /// A step the engine could not take: the positions of the state kept and the control cost, which
  /// is the reward (negated).
  template <class S>
  RLK_HOST_DEVICE static S failed_step(const params<S>& p, const mujoco_task_step<S, Dims, state<S>>& t,
                                       step_info<S>& info) {
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, Dims::nu);
    const state<S>& s = t.after;
    info.x_position = s.qpos[0];
    info.y_position = s.qpos[1];
    info.distance_from_origin = std::sqrt(s.qpos[0] * s.qpos[0] + s.qpos[1] * s.qpos[1]);
    info.reward_ctrl = -ctrl_cost;
    return -ctrl_cost;
  }

  /// qpos[2:] (all of qpos with ExcludeCurrentPositions = false), qvel, then clip(cfrc_ext[1:]).
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>& p, const physics::model<S, Dims>&, const state<S>& s, S* obs) {
    int k = 0;
    for (int i = ExcludeCurrentPositions ? 2 : 0; i < Dims::nq; ++i) obs[k++] = s.qpos[i];
    for (int i = 0; i < Dims::nv; ++i) obs[k++] = s.qvel[i];
    if (IncludeCfrcExt) {
      const S lo = p.contact_force_range[0], hi = p.contact_force_range[1];
      for (int b = 0; b < nbody - 1; ++b)
        for (int c = 0; c < 6; ++c) obs[k++] = clip(s.cfrc_ext[b][c], lo, hi);
    }
  }

  /// np.clip: NaN stays NaN.
  template <class S>
  RLK_HOST_DEVICE static S clip(S x, S lo, S hi) {
    return x < lo ? lo : (x > hi ? hi : x);
  }
};

/// @brief Ant-v5: Gymnasium's semantics on `physics::step` with the ant.xml model (RK4, 0.01 s,
/// Newton solver, frame_skip 5: dt = 0.05 s).
///
/// One step (Gymnasium's do_simulation, then mj_rnePostConstraint): ctrl = action (not clipped:
/// MuJoCo clamps ctrl to ctrlrange [-1, 1]), frame_skip physics steps, then the contact forces
/// cfrc_ext of the last forward pass. Reward = (forward_reward_weight * x_velocity + healthy_reward
/// * healthy) - (ctrl_cost_weight * sum(action^2) + contact_cost_weight * sum(clip(cfrc_ext)^2)),
/// the sums as NumPy's pairwise np.sum. x_velocity is the change of the main body's xpos[0] over
/// dt, where xpos is, as in MuJoCo's mjData after mj_step, that of the last RK4 stage of the last
/// physics step (not the final qpos): the State keeps it. Healthy: every qpos and qvel finite and
/// healthy_z_range[0] <= qpos[2] <= healthy_z_range[1] (closed interval, as Gymnasium's Ant).
///
/// Observation [105] with the default template arguments: qpos[2:15], qvel[0:14], then
/// clip(cfrc_ext[1:14], contact_force_range) (13 bodies x (torque, force)); qpos[0:2] first with
/// ExcludeCurrentPositions = false [107]; without the contact forces (IncludeCfrcExt = false) [27].
/// Gymnasium v4's use_contact_forces is v5's include_cfrc_ext_in_observation (v5 always charges
/// the contact cost; set contact_cost_weight = 0 for v4's default).
///
/// Reset: qpos = qpos0 + U(-s, s) (the free joint's quaternion included, left unnormalised as
/// Gymnasium leaves it), qvel = s * N(0, 1), s = reset_noise_scale; qacc_warmstart = 0; the main
/// body's position from the kinematics (mj_forward); cfrc_ext = 0 (Gymnasium's reset observation
/// has no contact forces: mj_forward does not compute them).
///
/// ant<double> reproduces Gymnasium (float64 actions) to the engine's accuracy (docs/physics.md).
/// A step the engine cannot compute ends the episode as truncated (see mujoco_state, unstable_steps()).
/// @tparam Scalar float or double: state, observation, action, reward and engine type
/// @tparam ExcludeCurrentPositions Gymnasium's exclude_current_positions_from_observation
/// @tparam IncludeCfrcExt Gymnasium's include_cfrc_ext_in_observation
/// @tparam Dims the model's sizes: models::ant_dims (16 contacts and 64 constraint rows, over the
///         measured peaks 6 / 27 of random actions and 5 / 26 of a trained policy; the pairs could
///         make 25 and 116), or physics::dims_with_capacity<models::ant_dims,
///         NCon, NEfc> for other capacities (a step that needs more ends the episode as truncated
///         and is counted: capacity_overflows())
template <class Scalar = float, bool ExcludeCurrentPositions = true, bool IncludeCfrcExt = true,
          class Dims = models::ant_dims>
struct ant : mujoco_env<ant_task<ExcludeCurrentPositions, IncludeCfrcExt, Dims>, Scalar> {
  using base = mujoco_env<ant_task<ExcludeCurrentPositions, IncludeCfrcExt, Dims>, Scalar>;  ///< the generic env it is
  static constexpr int nbody = Dims::nbody;  ///< bodies, the world included
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
  static constexpr bool include_cfrc_ext_in_observation = IncludeCfrcExt;                      ///< see the class comment

  /// Gymnasium's is_healthy: qpos and qvel finite, z = qpos[2] within healthy_z_range (inclusive).
  RLK_HOST_DEVICE static bool is_healthy(const typename base::Params& p, const typename base::State& s) {
    return base::task_type::is_healthy(p, s);
  }
};

}  // namespace rlkernels
