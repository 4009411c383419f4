// tests/envs/gymnasium_tasks.hpp: two bundled envs written again as the minimal tasks a user would
// first write for the generic mujoco_env<Task> (envs/mujoco/task_env.hpp: no step info, no own
// state, no failed-step reward), with the same model, reset, reward, termination and observation,
// so that they must give the bundled envs' bits (mujoco_envs_test "[task]") and can be timed
// beside them (mujoco_bench's "<id>.mujoco_env" rows).
#pragma once

#include <rlkernels/envs/mujoco/hopper.hpp>
#include <rlkernels/envs/mujoco/swimmer.hpp>
#include <rlkernels/envs/mujoco/task_env.hpp>

#include <limits>

namespace rlk_tasks {

/// Swimmer-v5 (fluid forces, no contacts): swimmer<S>.
struct swimmer_task {
  using dims = rlkernels::models::swimmer_dims;
  template <class S> static constexpr rlkernels::physics::model<S, dims> model() { return rlkernels::models::swimmer<S>(); }
  static constexpr int observation_size = 8;
  static constexpr double action_low = -1, action_high = 1;
  static constexpr int frame_skip = 4, max_episode_steps = 1000;
  static constexpr int parallel_from = 8;
  template <class S> struct params {
    S ctrl_cost_weight = S(1e-4);
    S reset_noise_scale = S(0.1);
  };
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const rlkernels::physics::model<S, dims>& m,
                                    rlkernels::mujoco_state<S, dims>& s, Rng& gen) {
    rlkernels::detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }
  template <class S>
  RLK_HOST_DEVICE static rlkernels::step_result<S> step(const params<S>& p, const rlkernels::mujoco_task_step<S, dims>& t) {
    const S ctrl_cost = p.ctrl_cost_weight * rlkernels::detail::sum_of_squares(t.action, dims::nu);
    return {S(1) * ((t.after.qpos[0] - t.before.qpos[0]) / t.dt) - ctrl_cost, false};
  }
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const rlkernels::physics::model<S, dims>&,
                                      const rlkernels::mujoco_state<S, dims>& s, S* obs) {
    for (int i = 2; i < dims::nq; ++i) obs[i - 2] = s.qpos[i];
    for (int i = 0; i < dims::nv; ++i) obs[dims::nq - 2 + i] = s.qvel[i];
  }
};

/// Hopper-v5 (contacts, joint limits, termination): hopper<S>, except on a step the engine cannot
/// take, where this task pays 0 (it has no failed_step) and hopper<S> -ctrl_cost.
struct hopper_task {
  using dims = rlkernels::models::hopper_dims;
  template <class S> static constexpr rlkernels::physics::model<S, dims> model() { return rlkernels::models::hopper<S>(); }
  static constexpr int observation_size = 11;
  static constexpr double action_low = -1, action_high = 1;
  static constexpr int frame_skip = 4, max_episode_steps = 1000;
  template <class S> struct params {
    S ctrl_cost_weight = S(1e-3);
    S healthy_reward = S(1);
    S reset_noise_scale = S(5e-3);
  };
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>& p, const rlkernels::physics::model<S, dims>& m,
                                    rlkernels::mujoco_state<S, dims>& s, Rng& gen) {
    rlkernels::detail::reset_state(m, s, p.reset_noise_scale, false, gen);
  }
  template <class S>
  RLK_HOST_DEVICE static rlkernels::step_result<S> step(const params<S>& p, const rlkernels::mujoco_task_step<S, dims>& t) {
    const S ctrl_cost = p.ctrl_cost_weight * rlkernels::detail::sum_of_squares(t.action, dims::nu);
    const auto& q = t.after.qpos;
    bool healthy = S(0.7) < q[1] && S(-0.2) < q[2] && q[2] < S(0.2);
    for (int i = 2; i < dims::nq; ++i) healthy &= S(-100) < q[i] && q[i] < S(100);
    for (int i = 0; i < dims::nv; ++i) healthy &= S(-100) < t.after.qvel[i] && t.after.qvel[i] < S(100);
    const S forward = (q[0] - t.before.qpos[0]) / t.dt;
    return {(forward + (healthy ? p.healthy_reward : S(0))) - ctrl_cost, !healthy};
  }
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const rlkernels::physics::model<S, dims>&,
                                      const rlkernels::mujoco_state<S, dims>& s, S* obs) {
    rlkernels::detail::observe_state<true>(s, true, obs);
  }
};

}  // namespace rlk_tasks
