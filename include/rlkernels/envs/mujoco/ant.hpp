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

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace rlkernels {

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
struct ant {
  using scalar_type = Scalar;                       ///< state, observation, action, reward type
  using dims = Dims;                                ///< the model's sizes (nq 15, nv 14, nu 8, 14 bodies)
  using model_type = physics::model<Scalar, dims>;  ///< the physics model type
  static constexpr int nq = dims::nq;               ///< position coordinates (7 of the free joint)
  static constexpr int nv = dims::nv;               ///< degrees of freedom
  static constexpr int nu = dims::nu;               ///< actuators
  static constexpr int nbody = dims::nbody;         ///< bodies, the world included
  static constexpr bool exclude_current_positions_from_observation = ExcludeCurrentPositions;  ///< see the class comment
  static constexpr bool include_cfrc_ext_in_observation = IncludeCfrcExt;                      ///< see the class comment
  /// 105 by default (13 + 14 + 78)
  static constexpr int observation_size = nq + nv - (ExcludeCurrentPositions ? 2 : 0) + (IncludeCfrcExt ? 6 * (nbody - 1) : 0);
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (8,)), float32 in Gymnasium
  static constexpr int action_size = nu;            ///< hip and ankle torques of the four legs
  static constexpr Scalar action_low = Scalar(-1);  ///< actuator_ctrlrange low (all actuators)
  static constexpr Scalar action_high = Scalar(1);  ///< actuator_ctrlrange high
  /// A step is about a hundred microseconds of physics: OpenMP steps batches of 2 or more envs in parallel.
  static constexpr int parallel_from = 2;

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// Gymnasium reads from mjData besides them: the main body's position after the last forward
  /// pass, and the contact forces cfrc_ext of bodies 1..13 (the world's row is always 0).
  struct State {
    Scalar qpos[nq];                  ///< joint positions (mjData::qpos)
    Scalar qvel[nv];                  ///< joint velocities (mjData::qvel)
    Scalar qacc_warmstart[nv];        ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more contacts or rows than the capacities (saturates)
    Scalar main_body_xy[2];           ///< xpos[main_body][0:2] of the last forward pass
    Scalar cfrc_ext[nbody - 1][6];    ///< cfrc_ext[1:] after the last step (raw, not clipped)
  };

  /// @brief Gymnasium's AntEnv keyword arguments with their v5 defaults, plus the time limit. Not
  /// applicable: xml_file (the model is `model`; generate another with scripts/mjcf_to_header.py),
  /// the rendering arguments. exclude_current_positions_from_observation and
  /// include_cfrc_ext_in_observation are template parameters (they change the observation size).
  struct Params {
    model_type model = default_model();            ///< the physics model (xml_file = "ant.xml")
    int frame_skip = 5;                            ///< physics steps per env step (values < 1 act as 1)
    Scalar forward_reward_weight = Scalar(1);      ///< weight of x_velocity
    Scalar ctrl_cost_weight = Scalar(0.5);         ///< weight of sum(action^2)
    Scalar contact_cost_weight = Scalar(5e-4);     ///< weight of sum(clip(cfrc_ext)^2)
    Scalar healthy_reward = Scalar(1);             ///< reward per step while healthy
    int main_body = 1;                             ///< body whose x (and y) velocity is rewarded (1: the torso)
    bool terminate_when_unhealthy = true;          ///< terminate when not healthy
    Scalar healthy_z_range[2] = {Scalar(0.2), Scalar(1)};         ///< closed bounds of the torso height qpos[2]
    Scalar contact_force_range[2] = {Scalar(-1), Scalar(1)};      ///< clip of cfrc_ext (observation and cost)
    Scalar reset_noise_scale = Scalar(0.1);        ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
    int max_episode_steps = 1000;                  ///< time limit of Ant-v5 (truncation)
  };

  /// @brief Gymnasium's step info.
  struct step_info {
    Scalar x_position;            ///< qpos[0] after the step
    Scalar y_position;            ///< qpos[1] after the step
    Scalar distance_from_origin;  ///< |qpos[0:2]|
    Scalar x_velocity;            ///< main body x velocity over the step
    Scalar y_velocity;            ///< main body y velocity over the step
    Scalar reward_forward;        ///< forward_reward_weight * x_velocity
    Scalar reward_ctrl;           ///< -ctrl_cost_weight * sum(action^2)
    Scalar reward_contact;        ///< -contact_cost_weight * sum(clip(cfrc_ext)^2)
    Scalar reward_survive;        ///< healthy_reward if healthy, else 0
  };

  /// Gymnasium's set_state(qpos, qvel) for this env: the state's qpos and qvel, then the
  /// kinematics (mj_forward) for the main body's position; cfrc_ext = 0 (mj_forward does not
  /// compute it). qacc_warmstart and unstable_steps are left as they are.
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) s.qvel[i] = qvel[i];
    after_forward(p, s);
  }

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1), qacc_warmstart = 0 (then as set_state).
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, true, gen);
    after_forward(p, s);
  }

  /// Gymnasium's is_healthy: qpos and qvel finite, z = qpos[2] within healthy_z_range (inclusive).
  RLK_HOST_DEVICE static bool is_healthy(const Params& p, const State& s) {
    bool finite = true;
    for (int i = 0; i < nq; ++i) finite &= std::isfinite(s.qpos[i]);
    for (int i = 0; i < nv; ++i) finite &= std::isfinite(s.qvel[i]);
    const Scalar z = s.qpos[2];
    return finite && p.healthy_z_range[0] <= z && z <= p.healthy_z_range[1];
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    const Scalar x_before = s.main_body_xy[0], y_before = s.main_body_xy[1];
    physics::data<Scalar, dims> d;  // simulate() sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    const Scalar ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(action, nu);
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    info.reward_ctrl = -ctrl_cost;
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      fill_positions(s, info);
      info.x_velocity = info.y_velocity = info.reward_forward = info.reward_survive = info.reward_contact = Scalar(0);
      return {-ctrl_cost, false, true};  // truncated: the engine failed, the MDP did not end
    }
    physics::rne_post_constraint(p.model, d);
    for (int b = 1; b < nbody; ++b)
      for (int k = 0; k < 6; ++k) s.cfrc_ext[b - 1][k] = d.cfrc_ext[b][k];
    s.main_body_xy[0] = d.xpos[p.main_body][0];
    s.main_body_xy[1] = d.xpos[p.main_body][1];
    const Scalar lo = p.contact_force_range[0], hi = p.contact_force_range[1];
    // np.sum(np.square(np.clip(cfrc_ext, lo, hi))) over all 14 x 6 values, the world's zeros first
    const Scalar contact_cost = p.contact_cost_weight * detail::numpy_sum<Scalar>(
                                                            [&](int k) {
                                                              const Scalar f = k < 6 ? Scalar(0) : clip(d.cfrc_ext[k / 6][k % 6], lo, hi);
                                                              return f * f;
                                                            },
                                                            0, 6 * nbody);
    fill_positions(s, info);
    info.x_velocity = (s.main_body_xy[0] - x_before) / dt;
    info.y_velocity = (s.main_body_xy[1] - y_before) / dt;
    info.reward_forward = info.x_velocity * p.forward_reward_weight;
    const bool healthy = is_healthy(p, s);
    info.reward_survive = healthy ? p.healthy_reward : Scalar(0);
    info.reward_contact = -contact_cost;
    const Scalar reward = (info.reward_forward + info.reward_survive) - (ctrl_cost + contact_cost);
    return {reward, !healthy && p.terminate_when_unhealthy};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[2:] (all of qpos with ExcludeCurrentPositions = false), qvel, then clip(cfrc_ext[1:]).
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    int k = 0;
    for (int i = ExcludeCurrentPositions ? 2 : 0; i < nq; ++i) obs[k++] = s.qpos[i];
    for (int i = 0; i < nv; ++i) obs[k++] = s.qvel[i];
    if (IncludeCfrcExt) {
      const Scalar lo = p.contact_force_range[0], hi = p.contact_force_range[1];
      for (int b = 0; b < nbody - 1; ++b)
        for (int c = 0; c < 6; ++c) obs[k++] = clip(s.cfrc_ext[b][c], lo, hi);
    }
  }

 private:
  static model_type default_model() { return physics::rebind<Dims>(models::ant<Scalar>()); }

  /// np.clip: NaN stays NaN.
  RLK_HOST_DEVICE static Scalar clip(Scalar x, Scalar lo, Scalar hi) { return x < lo ? lo : (x > hi ? hi : x); }

  RLK_HOST_DEVICE static void fill_positions(const State& s, step_info& info) {
    info.x_position = s.qpos[0];
    info.y_position = s.qpos[1];
    info.distance_from_origin = std::sqrt(s.qpos[0] * s.qpos[0] + s.qpos[1] * s.qpos[1]);
  }

  /// What mj_forward leaves that the env reads: the main body's position; no contact forces.
  RLK_HOST_DEVICE static void after_forward(const Params& p, State& s) {
    physics::data<Scalar, dims> d;  // the kinematics read only qpos
    detail::poison_workspace(d);
    for (int i = 0; i < nq; ++i) d.qpos[i] = s.qpos[i];
    physics::kinematics(p.model, d);
    s.main_body_xy[0] = d.xpos[p.main_body][0];
    s.main_body_xy[1] = d.xpos[p.main_body][1];
    for (int b = 0; b < nbody - 1; ++b)
      for (int c = 0; c < 6; ++c) s.cfrc_ext[b][c] = Scalar(0);
  }
};

}  // namespace rlkernels
