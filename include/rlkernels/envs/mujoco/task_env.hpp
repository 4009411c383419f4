// rlkernels/envs/mujoco/task_env.hpp
// mujoco_env<Task, Scalar>: an env from a generated model and a short task struct (observation,
// reward, termination, reset), with what every MuJoCo env shares built in: frame skip, the time
// limit, a step the engine cannot take ending the episode as truncated, the failed-step and
// capacity counters, and every backend. docs/physics.md ("Your own robot") walks through one.
#pragma once

#include "../../core/config.hpp"
#include "../../core/random.hpp"
#include "../../physics/data.hpp"
#include "../../physics/forward.hpp"
#include "../../physics/model.hpp"
#include "../env.hpp"
#include "mujoco_env.hpp"

#include <type_traits>

namespace rlkernels {

/// @brief What a task sees of one env step: the state before and after it, the last physics
/// step's workspace (its last forward pass: positions, frames, sites, contacts and forces, as
/// Gymnasium reads mjData after mj_step), the action and the env step's duration.
/// @tparam Scalar float or double
/// @tparam Dims the model's sizes
template <class Scalar, class Dims>
struct mujoco_task_step {
  const mujoco_state<Scalar, Dims>& before;  ///< the state before the step
  const mujoco_state<Scalar, Dims>& after;   ///< the state after it
  const physics::data<Scalar, Dims>& data;   ///< the last forward pass of the step (xpos, xmat, xipos, site_xpos, contacts, cvel, ...)
  const Scalar* action;                      ///< the action (raw: the engine clamps ctrl to ctrlrange)
  Scalar dt;                                 ///< timestep * frame_skip
};

/// @brief A MuJoCo env made of a generated model and a task.
///
/// The task is a struct with:
/// @code
/// struct my_task {
///   using dims = models::my_robot_dims;                                    // the generated model's sizes
///   template <class S> static constexpr physics::model<S, dims> model() { return models::my_robot<S>(); }
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
/// Optional members: `static constexpr int parallel_from` (the batch size from which OpenMP steps
/// envs in parallel; 2 by default). One env step sets ctrl = action and takes frame_skip physics
/// steps (detail::simulate); on success the task's step gives the reward and termination. A step
/// the engine cannot take (a bad state, or more contacts or rows than the model's capacities) keeps
/// the state, ends the episode as truncated with reward 0 and counts it (mujoco_state's
/// unstable_steps, capacity_overflows). vec_env truncates at Params::max_episode_steps.
/// An observation that needs positions (site frames, body frames) runs physics::kinematics on a
/// physics::data of its own from the state's qpos (see detail::positions), one that reads sensors
/// detail::sensors.
/// @tparam Task the task (above)
/// @tparam Scalar float or double: state, observation, action, reward and engine type
template <class Task, class Scalar = float>
struct mujoco_env {
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

 private:
  template <class T, class = void>
  struct parallel_from_of : std::integral_constant<int, 2> {};
  template <class T>
  struct parallel_from_of<T, decltype(void(T::parallel_from))> : std::integral_constant<int, T::parallel_from> {};

 public:
  /// The batch size from which OpenMP steps envs in parallel: the task's, or 2.
  static constexpr int parallel_from = parallel_from_of<Task>::value;

  /// qpos, qvel, qacc_warmstart and the failed-step counters (mujoco_state).
  using State = mujoco_state<Scalar, dims>;

  /// @brief The model, frame skip and time limit (the task's defaults) and the task's settings.
  struct Params {
    model_type model = Task::template model<Scalar>();  ///< the physics model
    int frame_skip = Task::frame_skip;                  ///< physics steps per env step (values < 1 act as 1)
    int max_episode_steps = Task::max_episode_steps;    ///< time limit (truncation); 0 = none
    task_params task{};                                 ///< the task's own settings
  };

  /// The task's reset, then qacc_warmstart = 0 (mj_resetData's); the failed-step counters stay.
  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Rng& gen) {
    Task::reset(p.task, p.model, s, gen);
    for (int i = 0; i < nv; ++i) s.qacc_warmstart[i] = Scalar(0);
  }

  /// One env step (see the class comment).
  template <class Rng>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, const Scalar* action, Rng&) {
    const State before = s;
    physics::data<Scalar, dims> d;  // not zeroed: detail::simulate sets what the engine reads
    const int warning = detail::simulate(p.model, s, action, p.frame_skip, d);
    if (warning != physics::warning_none) {  // the state is the one before the step
      detail::count_failed_step(s, warning);
      return {Scalar(0), false, true};
    }
    const Scalar dt = p.model.timestep * Scalar(p.frame_skip > 0 ? p.frame_skip : 1);
    const mujoco_task_step<Scalar, dims> step{before, s, d, action, dt};
    return Task::step(p.task, step);
  }

  /// The task's observation of the state.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    Task::observe(p.task, p.model, s, obs);
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
