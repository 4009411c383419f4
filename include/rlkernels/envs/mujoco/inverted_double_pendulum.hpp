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

#include <cmath>
#include <cstdint>

namespace rlkernels {

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
struct inverted_double_pendulum {
  using scalar_type = Scalar;                                  ///< state, observation, action, reward type
  using dims = models::inverted_double_pendulum_dims;          ///< the model's sizes (nq 3, nv 3, nu 1)
  using model_type = physics::model<Scalar, dims>;             ///< the physics model type
  static constexpr int nq = dims::nq;                          ///< position coordinates
  static constexpr int nv = dims::nv;                          ///< degrees of freedom
  static constexpr int nu = dims::nu;                          ///< actuators
  static constexpr int observation_size = 9;                   ///< x, sin, sin, cos, cos, 3 velocities, a constraint force
  static constexpr action_kind action_space = action_kind::continuous;  ///< Box(-1, 1, (1,)), float32 in Gymnasium
  static constexpr int action_size = nu;                       ///< the force on the cart
  static constexpr Scalar action_low = Scalar(-1);             ///< actuator_ctrlrange low
  static constexpr Scalar action_high = Scalar(1);             ///< actuator_ctrlrange high
  /// A step is microseconds of physics (5 RK4 steps of a 3-dof model): OpenMP steps batches of 16
  /// or more envs in parallel.
  static constexpr int parallel_from = 16;

  /// @brief qpos, qvel, qacc_warmstart and the count of failed steps (as mujoco_state), plus what
  /// the observation reads from mjData besides them: qfrc_constraint[0] of the last forward pass.
  struct State {
    Scalar qpos[nq];                  ///< joint positions (mjData::qpos)
    Scalar qvel[nv];                  ///< joint velocities (mjData::qvel)
    Scalar qacc_warmstart[nv];        ///< the last step's acceleration, the solver's warm start
    std::uint32_t unstable_steps;     ///< env steps the engine could not compute (saturates)
    std::uint32_t capacity_overflows; ///< env steps that needed more constraint rows than the capacity (saturates)
    Scalar qfrc_constraint0;          ///< qfrc_constraint[0] of the last forward pass (the slider's limit force)
  };

  /// @brief Gymnasium's InvertedDoublePendulumEnv keyword arguments with their v5 defaults, plus
  /// the time limit. Not applicable: xml_file (the model is `model`), default_camera_config and the
  /// rendering arguments.
  struct Params {
    model_type model = models::inverted_double_pendulum<Scalar>();  ///< the physics model (xml_file = "inverted_double_pendulum.xml")
    int frame_skip = 5;                              ///< physics steps per env step (values < 1 act as 1)
    Scalar healthy_reward = Scalar(10);              ///< reward per step while not terminated
    Scalar reset_noise_scale = Scalar(0.1);          ///< reset noise: U(-s, s) on qpos, s * N(0, 1) on qvel
    int max_episode_steps = 1000;                    ///< time limit of InvertedDoublePendulum-v5 (truncation)
  };

  /// @brief Gymnasium's step info (the reward terms).
  struct step_info {
    Scalar reward_survive;    ///< healthy_reward if not terminated, else 0
    Scalar distance_penalty;  ///< -(0.01 x^2 + (y - 2)^2), (x, _, y) the tip's position
    Scalar velocity_penalty;  ///< -(1e-3 qvel[1]^2 + 5e-3 qvel[2]^2)
  };

  /// Gymnasium's set_state(qpos, qvel): the state's qpos and qvel, then a forward pass for
  /// qfrc_constraint[0] (ctrl = 0, warm start 0). qacc_warmstart and the counters are left as they are.
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) s.qvel[i] = qvel[i];
    after_forward(p, s);
  }

  /// qpos = qpos0 + U(-s, s), qvel = s * N(0, 1), qacc_warmstart = 0, then as set_state.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    detail::reset_state(p.model, s, p.reset_noise_scale, true, gen);
    after_forward(p, s);
  }

  /// One env step, with Gymnasium's info terms in *info.
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            step_info& info) {
    physics::data<Scalar, dims> d;  // simulate() sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info.reward_survive = info.distance_penalty = info.velocity_penalty = Scalar(0);
      return {Scalar(0), false, true};  // truncated: the engine failed, the MDP did not end
    }
    s.qfrc_constraint0 = d.qfrc_constraint[0];
    const Scalar x = d.site_xpos[0][0], y = d.site_xpos[0][2];
    const bool terminated = y <= Scalar(1);
    const Scalar v1 = s.qvel[1], v2 = s.qvel[2];
    const Scalar dist_penalty = Scalar(0.01) * (x * x) + (y - Scalar(2)) * (y - Scalar(2));
    const Scalar vel_penalty = Scalar(1e-3) * (v1 * v1) + Scalar(5e-3) * (v2 * v2);
    info.reward_survive = terminated ? Scalar(0) : p.healthy_reward;
    info.distance_penalty = -dist_penalty;
    info.velocity_penalty = -vel_penalty;
    return {info.reward_survive - dist_penalty - vel_penalty, terminated};
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    step_info info;
    return step_with_info(p, s, action, info);
  }

  /// qpos[0], sin(qpos[1:3]), cos(qpos[1:3]), clip(qvel, -10, 10), clip(qfrc_constraint[0], -10, 10).
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, Scalar* obs) {
    using std::cos;
    using std::sin;
    obs[0] = s.qpos[0];
    obs[1] = sin(s.qpos[1]);
    obs[2] = sin(s.qpos[2]);
    obs[3] = cos(s.qpos[1]);
    obs[4] = cos(s.qpos[2]);
    for (int i = 0; i < nv; ++i) obs[5 + i] = clip10(s.qvel[i]);
    obs[8] = clip10(s.qfrc_constraint0);
  }

 private:
  RLK_HOST_DEVICE static Scalar clip10(Scalar v) { return v < Scalar(-10) ? Scalar(-10) : (v > Scalar(10) ? Scalar(10) : v); }

  /// qfrc_constraint[0] of a forward pass at the state's qpos and qvel with ctrl 0 and no warm start.
  RLK_HOST_DEVICE static void after_forward(const Params& p, State& s) {
    physics::data<Scalar, dims> d;  // load_workspace sets what the engine reads
    detail::load_workspace(d, s, static_cast<const Scalar*>(nullptr), false);
    physics::forward(p.model, d);
    s.qfrc_constraint0 = d.qfrc_constraint[0];
  }
};

}  // namespace rlkernels
