// rlkernels/envs/mujoco/humanoid.hpp
// Humanoid-v5 as Gymnasium 1.4 defines it (envs/mujoco/humanoid_v5.py) on the rlkernels physics
// engine: a free-floating 3D biped (17 hinge motors, two fixed tendons, the PGS solver) that
// should walk in +x without falling. Continuous action, terminated when the torso leaves
// 1 < z < 2, truncated at 1000 steps. humanoid_standup.hpp builds HumanoidStandup-v5 on the same
// State and observation.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/data.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../../physics/smooth.hpp"
#include "../env.hpp"
#include "models/humanoid.hpp"
#include "mujoco_env.hpp"
#include "task_env.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace rlkernels {

/// @brief What Humanoid-v5 and HumanoidStandup-v5 keep of MuJoCo's data between env steps: the
/// state (qpos, qvel, qacc_warmstart, the failed-step counters, as mujoco_state) and what
/// Gymnasium reads from mjData after mj_step besides it, all from the **last forward pass** (the
/// last RK4 stage of the last physics step, not the final qpos): cinert, cvel, qfrc_actuator and
/// cfrc_ext for the observation, the centre of mass for the reward, the tendons for the info.
template <class Scalar, class Dims>
struct humanoid_state {
  static constexpr int nbody = Dims::nbody;  ///< bodies of the model, the world (body 0) included
  Scalar qpos[Dims::nq];             ///< joint positions (mjData::qpos; the free joint's 7 first)
  Scalar qvel[Dims::nv];             ///< joint velocities
  Scalar qacc_warmstart[Dims::nv];   ///< the last step's acceleration, the solver's warm start
  std::uint32_t unstable_steps;      ///< env steps the engine could not compute (saturates)
  std::uint32_t capacity_overflows;  ///< env steps that needed more contacts or rows than the capacities (saturates)
  Scalar mass_center_xy[2];          ///< Gymnasium's mass_center(): sum(body_mass * xipos) / sum(body_mass), x and y
  Scalar cinert[nbody - 1][10];      ///< cinert[1:]
  Scalar cvel[nbody - 1][6];         ///< cvel[1:]
  Scalar qfrc_actuator[Dims::nv - 6];///< qfrc_actuator[6:] (the joints after the free one)
  Scalar cfrc_ext[nbody - 1][6];     ///< cfrc_ext[1:] (the world's row is always 0)
  Scalar ten_length[2];              ///< the two fixed tendons' lengths (info)
  Scalar ten_velocity[2];            ///< and velocities (info)
};

namespace detail {

/// What the two Humanoid envs share: the observation, reset, set_state, and one do_simulation that
/// leaves everything the State keeps in it.
template <class Scalar, class Dims, bool ExcludeCurrentPositions, bool Cinert, bool Cvel, bool QfrcActuator,
          bool CfrcExt>
struct humanoid_common {
  using state = humanoid_state<Scalar, Dims>;
  static constexpr int nq = Dims::nq, nv = Dims::nv, nu = Dims::nu, nbody = Dims::nbody;
  static_assert(physics::dims_ntendon<Dims> == 2, "the Humanoid models have two fixed tendons");
  /// 348 with every part
  static constexpr int observation_size = nq + nv - (ExcludeCurrentPositions ? 2 : 0) + (Cinert ? 10 * (nbody - 1) : 0) +
                                          (Cvel ? 6 * (nbody - 1) : 0) + (QfrcActuator ? nv - 6 : 0) +
                                          (CfrcExt ? 6 * (nbody - 1) : 0);

  /// mass_center: the einsum over bodies in order, divided by np.sum of the masses (pairwise).
  RLK_HOST_DEVICE static void mass_center(const physics::model<Scalar, Dims>& m, const physics::data<Scalar, Dims>& d,
                                          Scalar* xy) {
    const Scalar total = numpy_sum<Scalar>([&](int b) { return m.body_mass[b]; }, 0, nbody);
    for (int k = 0; k < 2; ++k) {
      Scalar num = Scalar(0);
      for (int b = 0; b < nbody; ++b) num += m.body_mass[b] * d.xipos[b][k];
      xy[k] = num / total;
    }
  }

  /// Copies what the State keeps from a workspace after forward stages; `with_forces` takes cfrc_ext
  /// too (after rne_post_constraint), else zeroes it (as after mj_forward).
  RLK_HOST_DEVICE static void keep(const physics::model<Scalar, Dims>& m, const physics::data<Scalar, Dims>& d, state& s,
                                   bool with_forces) {
    mass_center(m, d, s.mass_center_xy);
    for (int b = 1; b < nbody; ++b) {
      for (int k = 0; k < 10; ++k) s.cinert[b - 1][k] = d.cinert[b][k];
      for (int k = 0; k < 6; ++k) {
        s.cvel[b - 1][k] = d.cvel[b][k];
        s.cfrc_ext[b - 1][k] = with_forces ? d.cfrc_ext[b][k] : Scalar(0);
      }
    }
    for (int i = 6; i < nv; ++i) s.qfrc_actuator[i - 6] = d.qfrc_actuator[i];
    for (int t = 0; t < 2; ++t) {
      s.ten_length[t] = d.ten_length[t];
      s.ten_velocity[t] = d.ten_velocity[t];
    }
  }

  /// Gymnasium's set_state (then mj_forward): qpos, qvel; the position and velocity stages for
  /// cinert, cvel, the centre of mass and the tendons; qfrc_actuator of zero controls (the data was
  /// reset) and no contact forces. qacc_warmstart and the counters are left as they are.
  RLK_HOST_DEVICE static void set_state(const physics::model<Scalar, Dims>& m, state& s, const Scalar* qpos,
                                        const Scalar* qvel) {
    physics::data<Scalar, Dims> d;  // the stages below read only what is set here
    poison_workspace(d);
    for (int i = 0; i < nq; ++i) d.qpos[i] = s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) d.qvel[i] = s.qvel[i] = qvel[i];
    for (int i = 0; i < nu; ++i) d.ctrl[i] = Scalar(0);
    d.warning = physics::warning_none;
    physics::kinematics(m, d);
    physics::com_pos(m, d);
    physics::tendon(m, d);
    physics::tendon_velocity(m, d);
    physics::com_vel(m, d);
    physics::actuation(m, d);  // ctrl = 0
    keep(m, d, s, false);
  }

  /// What Gymnasium reads after do_simulation: mj_rnePostConstraint on the step's last forward
  /// pass `d`, then what the State keeps of it.
  RLK_HOST_DEVICE static void keep_step(const physics::model<Scalar, Dims>& m, physics::data<Scalar, Dims>& d, state& s) {
    physics::rne_post_constraint(m, d);
    keep(m, d, s, true);
  }

  /// np.sum(np.square(cfrc_ext)) over all 14 x 6 values, the world's zeros first.
  RLK_HOST_DEVICE static Scalar cfrc_ext_square_sum(const state& s) {
    return numpy_sum<Scalar>(
        [&](int k) {
          const Scalar f = k < 6 ? Scalar(0) : s.cfrc_ext[k / 6 - 1][k % 6];
          return f * f;
        },
        0, 6 * nbody);
  }

  /// qpos[2:] (all of qpos when ExcludeCurrentPositions = false), qvel, cinert[1:], cvel[1:],
  /// qfrc_actuator[6:], cfrc_ext[1:] (each part only if included).
  RLK_HOST_DEVICE static void observe(const state& s, Scalar* obs) {
    int k = 0;
    for (int i = ExcludeCurrentPositions ? 2 : 0; i < nq; ++i) obs[k++] = s.qpos[i];
    for (int i = 0; i < nv; ++i) obs[k++] = s.qvel[i];
    if (Cinert)
      for (int b = 0; b < nbody - 1; ++b)
        for (int c = 0; c < 10; ++c) obs[k++] = s.cinert[b][c];
    if (Cvel)
      for (int b = 0; b < nbody - 1; ++b)
        for (int c = 0; c < 6; ++c) obs[k++] = s.cvel[b][c];
    if (QfrcActuator)
      for (int i = 0; i < nv - 6; ++i) obs[k++] = s.qfrc_actuator[i];
    if (CfrcExt)
      for (int b = 0; b < nbody - 1; ++b)
        for (int c = 0; c < 6; ++c) obs[k++] = s.cfrc_ext[b][c];
  }
};

}  // namespace detail

/// @brief Humanoid-v5's task for mujoco_env (humanoid is built as mujoco_env<humanoid_task<...>,
/// Scalar>; see it for the semantics): Gymnasium's keyword arguments (`params`), state,
/// observation, reward, termination, reset and step info. The flags are Gymnasium's
/// exclude_current_positions_from_observation and include_*_in_observation.
template <bool ExcludeCurrentPositions = true, bool IncludeCinert = true, bool IncludeCvel = true,
          bool IncludeQfrcActuator = true, bool IncludeCfrcExt = true, class Dims = models::humanoid_dims>
struct humanoid_task {
  /// The implementation shared with humanoid_standup_task (observation, set_state, what a step keeps).
  template <class S>
  using common = detail::humanoid_common<S, Dims, ExcludeCurrentPositions, IncludeCinert, IncludeCvel,
                                         IncludeQfrcActuator, IncludeCfrcExt>;
  using dims = Dims;  ///< the model's sizes (nq 24, nv 23, nu 17, 14 bodies)
  /// The humanoid.xml model (xml_file) with Dims' capacities.
  template <class S>
  static physics::model<S, Dims> model() {
    return physics::rebind<Dims>(models::humanoid<S>());
  }
  static constexpr int observation_size = common<float>::observation_size;  ///< 348 by default
  static constexpr double action_low = -0.4;  ///< actuator_ctrlrange low (all actuators); Box(-0.4, 0.4, (17,)), float32 in Gymnasium
  static constexpr double action_high = 0.4;  ///< actuator_ctrlrange high
  static constexpr int frame_skip = 5;        ///< physics steps per env step
  static constexpr int max_episode_steps = 1000;  ///< time limit of Humanoid-v5 (truncation)
  /// A step is hundreds of microseconds of physics: OpenMP steps batches of 2 or more in parallel.
  static constexpr int parallel_from = 2;

  /// qpos, qvel, qacc_warmstart, the counters and what Gymnasium reads from mjData (humanoid_state).
  template <class S>
  using state = humanoid_state<S, Dims>;

  /// @brief Gymnasium's HumanoidEnv keyword arguments with their v5 defaults (humanoid's Params adds
  /// model = xml_file, frame_skip and the time limit). Not applicable: the rendering arguments; the
  /// observation flags are template parameters.
  template <class S>
  struct params {
    S forward_reward_weight = S(1.25);  ///< weight of the centre of mass' x velocity
    S ctrl_cost_weight = S(0.1);        ///< weight of sum(ctrl^2)
    S contact_cost_weight = S(5e-7);    ///< weight of sum(cfrc_ext^2)
    S contact_cost_range[2] = {-std::numeric_limits<S>::infinity(), S(10)};  ///< clip of the contact cost
    S healthy_reward = S(5);            ///< reward per step while healthy
    bool terminate_when_unhealthy = true;  ///< terminate when not healthy
    S healthy_z_range[2] = {S(1), S(2)};   ///< open bounds of the torso height qpos[2]
    S reset_noise_scale = S(1e-2);      ///< reset noise: U(-s, s) on qpos and qvel
  };

  /// Refuses terminate_when_unhealthy = false with Dims too small for the robot on the floor.
  template <class S>
  static void validate(const params<S>& p) {
    detail::require_room_for_falls(p.terminate_when_unhealthy, dims::ncon, dims::nefc, 24, 80, "humanoid", "humanoid_dims");
  }

  /// @brief Gymnasium's step info (tendon_length and tendon_velocity are in the State).
  template <class S>
  struct step_info {
    S x_position;            ///< qpos[0] after the step
    S y_position;            ///< qpos[1] after the step
    S distance_from_origin;  ///< |qpos[0:2]|
    S x_velocity;            ///< centre of mass x velocity over the step
    S y_velocity;            ///< centre of mass y velocity over the step
    S reward_survive;        ///< healthy_reward if healthy, else 0
    S reward_forward;        ///< forward_reward_weight * x_velocity
    S reward_ctrl;           ///< -ctrl_cost_weight * sum(ctrl^2)
    S reward_contact;        ///< -clip(contact_cost_weight * sum(cfrc_ext^2), contact_cost_range)
  };

  /// qpos = qpos0 + U(-s, s), qvel = U(-s, s).
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const physics::model<S, Dims>& m, state<S>& s, Rng& gen) {
    detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }

  /// What mj_forward leaves at the state (see humanoid_common::set_state).
  template <class S>
  RLK_HOST_DEVICE static void forward(const params<S>&, const physics::model<S, Dims>& m, state<S>& s) {
    common<S>::set_state(m, s, s.qpos, s.qvel);
  }

  /// Gymnasium's is_healthy: healthy_z_range[0] < qpos[2] < healthy_z_range[1].
  template <class S>
  RLK_HOST_DEVICE static bool is_healthy(const params<S>& p, const state<S>& s) {
    return p.healthy_z_range[0] < s.qpos[2] && s.qpos[2] < p.healthy_z_range[1];
  }

  /// mj_rnePostConstraint and what the State keeps, then reward, termination and info (see humanoid).
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>& p, const mujoco_task_step<S, Dims, state<S>>& t,
                                             step_info<S>& info) {
    state<S>& s = t.after;
    common<S>::keep_step(t.model, t.data, s);
    const S ctrl_cost = -failed_step(p, t, info);
    S contact_cost = p.contact_cost_weight * common<S>::cfrc_ext_square_sum(s);
    contact_cost = contact_cost < p.contact_cost_range[0] ? p.contact_cost_range[0]
                                                          : (contact_cost > p.contact_cost_range[1] ? p.contact_cost_range[1] : contact_cost);
    info.x_velocity = (s.mass_center_xy[0] - t.before.mass_center_xy[0]) / t.dt;
    info.y_velocity = (s.mass_center_xy[1] - t.before.mass_center_xy[1]) / t.dt;
    info.reward_forward = p.forward_reward_weight * info.x_velocity;
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
    const S ctrl_cost = p.ctrl_cost_weight * detail::sum_of_squares(t.action, Dims::nu);  // ctrl: the raw action
    const state<S>& s = t.after;
    info.x_position = s.qpos[0];
    info.y_position = s.qpos[1];
    info.distance_from_origin = std::sqrt(s.qpos[0] * s.qpos[0] + s.qpos[1] * s.qpos[1]);
    info.reward_ctrl = -ctrl_cost;
    return -ctrl_cost;
  }

  /// The observation (see humanoid).
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, Dims>&, const state<S>& s, S* obs) {
    common<S>::observe(s, obs);
  }
};

/// @brief Humanoid-v5: Gymnasium's semantics on `physics::step` with the humanoid.xml model (RK4,
/// 0.003 s, PGS with 50 iterations, frame_skip 5: dt = 0.015 s).
///
/// One step (do_simulation, then mj_rnePostConstraint): ctrl = action (not clipped: MuJoCo clamps
/// ctrl to ctrlrange [-0.4, 0.4]), frame_skip physics steps. Reward = (forward_reward_weight *
/// x_velocity + healthy_reward * healthy) - (ctrl_cost_weight * sum(ctrl^2) + min(contact_cost_weight *
/// sum(cfrc_ext^2), contact_cost_range[1])) (clipped to contact_cost_range), the sums as NumPy's
/// pairwise np.sum, with x_velocity the change of Gymnasium's mass_center() (the mass-weighted mean
/// of the bodies' xipos, of the last forward pass) over dt. Healthy: healthy_z_range[0] < qpos[2] <
/// healthy_z_range[1] (open); terminated when unhealthy (if terminate_when_unhealthy).
///
/// Observation [348] (the default): qpos[2:24], qvel, cinert[1:] (13 x 10), cvel[1:] (13 x 6),
/// qfrc_actuator[6:] (17), cfrc_ext[1:] (13 x 6), all of the last forward pass. The template flags
/// are Gymnasium's exclude_current_positions_from_observation and include_*_in_observation (they
/// change the observation's size).
///
/// Reset: qpos = qpos0 + U(-s, s) (the quaternion left unnormalised), qvel = U(-s, s), s =
/// reset_noise_scale = 0.01; cinert, cvel and the centre of mass of that state (mj_forward);
/// qfrc_actuator and cfrc_ext 0.
///
/// The workspace holds models::humanoid_dims::ncon contacts and nefc rows (16 and 36: measured
/// maxima with a margin, docs/physics.md); a step that needs more ends the episode as truncated
/// and is counted (capacity_overflows()). Pass physics::dims_with_capacity<models::humanoid_dims,
/// NCon, NEfc> as Dims for other capacities. With terminate_when_unhealthy = false the humanoid
/// lies on the floor and needs HumanoidStandup's: dims_with_capacity<models::humanoid_dims, 24, 80>
/// (random actions then reach 12 contacts and 47 rows, and overflow the default 36 rows now and
/// then).
template <class Scalar = float, bool ExcludeCurrentPositions = true, bool IncludeCinert = true, bool IncludeCvel = true,
          bool IncludeQfrcActuator = true, bool IncludeCfrcExt = true, class Dims = models::humanoid_dims>
struct humanoid : mujoco_env<humanoid_task<ExcludeCurrentPositions, IncludeCinert, IncludeCvel, IncludeQfrcActuator,
                                           IncludeCfrcExt, Dims>,
                             Scalar> {
  /// the generic env it is
  using base = mujoco_env<humanoid_task<ExcludeCurrentPositions, IncludeCinert, IncludeCvel, IncludeQfrcActuator,
                                        IncludeCfrcExt, Dims>,
                          Scalar>;
  /// The implementation shared with humanoid_standup (observation, set_state, what a step keeps).
  using common = typename base::task_type::template common<Scalar>;

  /// Gymnasium's is_healthy: healthy_z_range[0] < qpos[2] < healthy_z_range[1].
  RLK_HOST_DEVICE static bool is_healthy(const typename base::Params& p, const typename base::State& s) {
    return base::task_type::is_healthy(p, s);
  }
};

}  // namespace rlkernels
