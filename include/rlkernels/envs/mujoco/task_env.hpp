// rlkernels/envs/mujoco/task_env.hpp
// mujoco_env<Task, Scalar>: an env from a generated model and a short task struct (observation,
// reward, termination, reset), with what every MuJoCo env shares built in: frame skip, the time
// limit, a step the engine cannot take ending the episode as truncated, the failed-step and
// capacity counters, and every backend. The eleven bundled Gymnasium envs are mujoco_env with their
// tasks (hopper_task in hopper.hpp, ...); docs/physics.md ("Your own robot") walks through one.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/data.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "mujoco_env.hpp"

#include <type_traits>
#include <utility>

namespace rlkernels {

/// @brief What a task sees of one env step: the model, the state before and after it, the last
/// physics step's workspace (its last forward pass: positions, frames, sites, contacts and forces,
/// as Gymnasium reads mjData after mj_step), the action and the env step's duration.
///
/// The task may write its own fields of `after` (what it keeps of the forward pass for its
/// observation, as Ant keeps its contact forces) and run later stages on `data` (as
/// physics::rne_post_constraint for cfrc_ext). On a step the engine could not take (a task's
/// failed_step), `after` is the state kept, the one before the step, and `data` is not to be read.
/// @tparam Scalar float or double
/// @tparam Dims the model's sizes
/// @tparam State the env's state (mujoco_state, or the task's own `state<S>`)
template <class Scalar, class Dims, class State = mujoco_state<Scalar, Dims>>
struct mujoco_task_step {
  const State& before;                        ///< the state before the step
  State& after;                               ///< the state after it (the task may write its own fields)
  physics::data<Scalar, Dims>& data;          ///< the last forward pass of the step (xpos, xmat, xipos, site_xpos, contacts, cvel, ...)
  const Scalar* action;                       ///< the action (raw: the engine clamps ctrl to ctrlrange)
  Scalar dt;                                  ///< timestep * frame_skip
  const physics::model<Scalar, Dims>& model;  ///< the physics model
};

namespace detail {

/// mujoco_env's optional task members, detected (see mujoco_env's comment).
template <class Task, class Scalar, class = void>
struct task_state {
  using type = mujoco_state<Scalar, typename Task::dims>;
};
template <class Task, class Scalar>
struct task_state<Task, Scalar, std::void_t<typename Task::template state<Scalar>>> {
  using type = typename Task::template state<Scalar>;
};

/// mujoco_env's `step_info` and `step_with_info` exist only for a task with `step_info<S>`.
struct no_step_info {};
template <class Task, class Scalar, class = void>
struct task_step_info {
  static constexpr bool present = false;
  using type = no_step_info;
};
template <class Task, class Scalar>
struct task_step_info<Task, Scalar, std::void_t<typename Task::template step_info<Scalar>>> {
  static constexpr bool present = true;
  using type = typename Task::template step_info<Scalar>;
};
template <class Task, class Scalar, bool = task_step_info<Task, Scalar>::present>
struct task_step_info_type {};
template <class Task, class Scalar>
struct task_step_info_type<Task, Scalar, true> {
  /// The task's step info (Gymnasium's info dict of a step).
  using step_info = typename Task::template step_info<Scalar>;
};

template <class T, class = void>
struct task_parallel_from : std::integral_constant<int, 2> {};
template <class T>
struct task_parallel_from<T, decltype(void(T::parallel_from))> : std::integral_constant<int, T::parallel_from> {};

template <class Task, class Params, class Model, class State, class = void>
struct task_has_forward : std::false_type {};
template <class Task, class Params, class Model, class State>
struct task_has_forward<Task, Params, Model, State,
                        decltype(void(Task::forward(std::declval<const Params&>(), std::declval<const Model&>(),
                                                    std::declval<State&>())))> : std::true_type {};

template <class Task, class Params, class = void>
struct task_has_validate : std::false_type {};
template <class Task, class Params>
struct task_has_validate<Task, Params, decltype(void(Task::validate(std::declval<const Params&>())))> : std::true_type {};

template <class Task, class Params, class Step, class Info, class = void>
struct task_has_failed_step : std::false_type {};
template <class Task, class Params, class Step, class Info>
struct task_has_failed_step<Task, Params, Step, Info,
                            decltype(void(Task::failed_step(std::declval<const Params&>(), std::declval<const Step&>(),
                                                            std::declval<Info&>())))> : std::true_type {};
template <class Task, class Params, class Step>
struct task_has_failed_step<Task, Params, Step, no_step_info,
                            decltype(void(Task::failed_step(std::declval<const Params&>(), std::declval<const Step&>())))>
    : std::true_type {};

}  // namespace detail

/// @brief A MuJoCo env made of a generated model and a task.
///
/// The task is a struct with:
/// @code
/// struct my_task {
///   using dims = models::my_robot_dims;                                    // the generated model's sizes
///   template <class S> static physics::model<S, dims> model() { return models::my_robot<S>(); }
///   static constexpr int observation_size = 33;
///   static constexpr double action_low = -1, action_high = 1;              // the actuators' ctrlrange
///   static constexpr int frame_skip = 4, max_episode_steps = 1000;
///   template <class S> struct params { S forward_weight = 1; };           // the task's own settings
///   template <class S, class Rng>                                         // qpos, qvel (warm start is zeroed after)
///   RLK_HOST_DEVICE static void reset(const params<S>&, const physics::model<S, dims>&, mujoco_state<S, dims>&, Rng&);
///   template <class S>                                                   // reward and termination of a step
///   RLK_HOST_DEVICE static step_result<S> step(const params<S>&, const mujoco_task_step<S, dims>&);
///   template <class S>                                                   // the observation of a state
///   RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const mujoco_state<S, dims>&, S*);
/// };
/// @endcode
/// Optional members, which the bundled Gymnasium envs (hopper.hpp, ant.hpp, ...) use:
/// - `static constexpr int parallel_from`: the batch size from which OpenMP steps envs in
///   parallel (2 by default).
/// - `template <class S> struct state`: the env's State, when the task keeps more than
///   mujoco_state (what it reads from the forward pass, as Ant's contact forces). It has
///   mujoco_state's fields, with their names and in their order, then the task's own; the task's
///   functions then take it where they take mujoco_state above, and
///   `mujoco_task_step<S, dims, state<S>>`.
/// - `forward(const params<S>&, const physics::model<S, dims>&, state<S>&)`: what Gymnasium's
///   mj_forward after set_state leaves that the task keeps, computed from the state's qpos and
///   qvel; called after every reset and by set_state.
/// - `template <class S> struct step_info`: Gymnasium's info terms of a step. The task's `step`
///   then takes a third argument `step_info<S>&` to fill, and the env has `step_info` and
///   `step_with_info(p, s, action, info)`.
/// - `template <class S> static void validate(const params<S>&)` (host): refuses settings that need
///   more contacts or rows than `dims` holds (as Hopper's terminate_when_unhealthy = false with
///   the measured capacities), throwing std::invalid_argument; vec_env calls it at construction.
/// - `failed_step(const params<S>&, const mujoco_task_step<...>&[, step_info<S>&])`: the reward of
///   a step the engine could not take (0 without it; the bundled envs charge the control cost, as
///   the step would have), and its info terms (zero without it).
///
/// One env step sets ctrl = action and takes frame_skip physics steps (detail::simulate); on
/// success the task's step gives the reward and termination. A step the engine cannot take (a bad
/// state, or more contacts or rows than the model's capacities) keeps the state, ends the episode
/// as truncated with failed_step's reward and counts it (mujoco_state's unstable_steps,
/// capacity_overflows). vec_env truncates at Params::max_episode_steps.
/// An observation that needs positions (site frames, body frames) runs physics::kinematics on a
/// physics::data of its own from the state's qpos (see detail::positions), one that reads sensors
/// detail::sensors; or the task keeps them in its state (forward, step).
/// @tparam Task the task (above)
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Task, class Scalar = float>
struct mujoco_env : detail::task_step_info_type<Task, Scalar> {
  using task_type = Task;                                   ///< the task
  using scalar_type = Scalar;                               ///< state, observation, action, reward type
  using dims = typename Task::dims;                         ///< the model's sizes
  using model_type = physics::model<Scalar, dims>;          ///< the physics model type
  using task_params = typename Task::template params<Scalar>;  ///< the task's settings
  static constexpr int nq = dims::nq;                       ///< position coordinates
  static constexpr int nv = dims::nv;                       ///< degrees of freedom
  static constexpr int nu = dims::nu;                       ///< actuators
  static constexpr int observation_size = Task::observation_size;     ///< the task's
  static constexpr action_kind action_space = action_kind::continuous;  ///< one control per actuator
  static constexpr int action_size = nu;                    ///< the actuators' controls
  static constexpr Scalar action_low = Scalar(Task::action_low);    ///< the task's (the ctrlrange)
  static constexpr Scalar action_high = Scalar(Task::action_high);  ///< the task's (the ctrlrange)
  /// The batch size from which OpenMP steps envs in parallel: the task's, or 2.
  static constexpr int parallel_from = detail::task_parallel_from<Task>::value;

  /// qpos, qvel, qacc_warmstart and the failed-step counters (mujoco_state), or the task's `state<S>`.
  using State = typename detail::task_state<Task, Scalar>::type;

  /// @brief The task's settings (its `params<S>`: their fields are this struct's), the model,
  /// frame skip and time limit (the task's defaults).
  struct Params : task_params {
    model_type model = Task::template model<Scalar>();  ///< the physics model
    int frame_skip = Task::frame_skip;                  ///< physics steps per env step (values < 1 act as 1)
    int max_episode_steps = Task::max_episode_steps;    ///< time limit (truncation); 0 = none
  };

 private:
  using info_type = typename detail::task_step_info<Task, Scalar>::type;
  static constexpr bool has_step_info = detail::task_step_info<Task, Scalar>::present;
  using task_step = mujoco_task_step<Scalar, dims, State>;
  static constexpr bool has_forward = detail::task_has_forward<Task, task_params, model_type, State>::value;
  static constexpr bool has_failed_step = detail::task_has_failed_step<Task, task_params, task_step, info_type>::value;

  /// One env step; `info` is the task's step info, or a no_step_info.
  RLK_HOST_DEVICE static step_result<Scalar> step_impl(const Params& p, State& s, const Scalar* action,
                                                       info_type& info) {
    const State before = s;
    physics::data<Scalar, dims> d;  // not zeroed: detail::simulate sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    const task_step step{before, s, d, action, dt, p.model};
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      info = info_type{};
      Scalar reward = Scalar(0);
      if constexpr (has_failed_step) {
        if constexpr (has_step_info)
          reward = Task::failed_step(static_cast<const task_params&>(p), step, info);
        else
          reward = Task::failed_step(static_cast<const task_params&>(p), step);
      }
      return {reward, false, true};  // truncated: the engine failed, the MDP did not end
    }
    if constexpr (has_step_info)
      return Task::step(static_cast<const task_params&>(p), step, info);
    else
      return Task::step(static_cast<const task_params&>(p), step);
  }

 public:
  /// Gymnasium's set_state(qpos, qvel): the state's qpos and qvel, then the task's `forward` (what
  /// mj_forward leaves that the task keeps). qacc_warmstart and the counters are left as they are.
  RLK_HOST_DEVICE static void set_state(const Params& p, State& s, const Scalar* qpos, const Scalar* qvel) {
    for (int i = 0; i < nq; ++i) s.qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) s.qvel[i] = qvel[i];
    if constexpr (has_forward) Task::forward(static_cast<const task_params&>(p), p.model, s);
  }

  /// The task's reset, then qacc_warmstart = 0 (mj_resetData's) and the task's `forward`; the
  /// failed-step counters stay.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    Task::reset(static_cast<const task_params&>(p), p.model, s, gen);
    for (int i = 0; i < nv; ++i) s.qacc_warmstart[i] = Scalar(0);
    if constexpr (has_forward) Task::forward(static_cast<const task_params&>(p), p.model, s);
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    info_type info;
    return step_impl(p, s, action, info);
  }

  /// One env step with the task's step info in `info` (only for a task with `step_info<S>`).
  template <class Info, std::enable_if_t<has_step_info && std::is_same<Info, info_type>::value, int> = 0>
  RLK_HOST_DEVICE static step_result<Scalar> step_with_info(const Params& p, State& s, const Scalar* action,
                                                            Info& info) {
    return step_impl(p, s, action, info);
  }

  /// @brief The task's check of its settings against its capacities (its optional `validate`);
  /// vec_env calls it at construction.
  /// @throw std::invalid_argument naming the setting and the capacities it needs
  static void validate(const Params& p) {
    if constexpr (detail::task_has_validate<Task, task_params>::value) Task::validate(static_cast<const task_params&>(p));
  }
  /// The task's observation of the state.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    Task::observe(static_cast<const task_params&>(p), p.model, s, obs);
  }
};

namespace detail {

/// The position stage (mj_kinematics, mj_comPos) of the state's qpos into `d`: body and geom
/// frames, site frames, centres of mass, for an observation that needs them.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void positions(const physics::model<Scalar, Dims>& m, const mujoco_state<Scalar, Dims>& s,
                               physics::data<Scalar, Dims>& d) {
  load_workspace(d, s, static_cast<const Scalar*>(nullptr), false);
  physics::kinematics(m, d);
  physics::com_pos(m, d);
}

/// The model's sensors (physics/sensor.hpp) at the state's qpos and qvel (time 0) into
/// d.sensordata, as mj_forward computes them there, for an observation that reads sensors. A
/// task's step sees the step's own values in mujoco_task_step::data.sensordata: those of the last
/// physics step's first forward pass, MuJoCo's sensordata after mj_step.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void sensors(const physics::model<Scalar, Dims>& m, const mujoco_state<Scalar, Dims>& s,
                             physics::data<Scalar, Dims>& d) {
  load_workspace(d, s, static_cast<const Scalar*>(nullptr), false);
  physics::sensors(m, d);
}

}  // namespace detail

}  // namespace rlkernels
