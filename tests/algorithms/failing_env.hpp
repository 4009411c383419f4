// tests/algorithms/failing_env.hpp: a toy env whose steps fail on a known schedule, with the
// failed-step counters of the MuJoCo envs' State, so the trainers' failed-step statistics can be
// checked against the envs' own counters with any trainer (a discrete and a continuous variant).
#pragma once

#include <rlkernels/core/config.hpp>
#include <rlkernels/envs/env.hpp>
#include <rlkernels/envs/failed_steps.hpp>

#include <cstdint>
#include <type_traits>

namespace rlk_test {

/// Each env's k-th step (k counted over its whole life, across resets) fails as an overflow when
/// k % 7 == 3 and as unstable when k % 11 == 5 (both truncate the episode, as the MuJoCo envs'
/// failed steps do); episodes otherwise last up to 20 steps.
template <class S, bool Discrete>
struct failing_env {
  using scalar_type = S;
  static constexpr int observation_size = 2;
  static constexpr rlkernels::action_kind action_space =
      Discrete ? rlkernels::action_kind::discrete : rlkernels::action_kind::continuous;
  static constexpr int num_actions = 2;
  static constexpr int action_size = 1;
  static constexpr S action_low = S(-1);
  static constexpr S action_high = S(1);

  struct State {
    S x;
    std::uint32_t steps;  // over the env's life
    std::uint32_t unstable_steps;
    std::uint32_t capacity_overflows;
  };
  struct Params {
    int max_episode_steps = 20;
  };

  template <class Rng>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Rng& gen) {
    s.x = gen.template uniform<S>(S(-1), S(1));  // the counters survive resets, as mujoco_state's
  }
  template <class Rng>
  RLK_HOST_DEVICE static rlkernels::step_result<S> step_impl(State& s, S a, Rng&) {
    const std::uint32_t k = ++s.steps;
    if (k % 7 == 3) {
      ++s.capacity_overflows;
      return {S(0), false, true};
    }
    if (k % 11 == 5) {
      ++s.unstable_steps;
      return {S(0), false, true};
    }
    s.x = S(0.9) * s.x + S(0.1) * a;
    return {-s.x * s.x, false};
  }
  template <class Rng, bool D = Discrete, std::enable_if_t<D, int> = 0>
  RLK_HOST_DEVICE static rlkernels::step_result<S> step(const Params&, State& s, std::int32_t action, Rng& gen) {
    return step_impl(s, action ? S(1) : S(-1), gen);
  }
  template <class Rng, bool D = Discrete, std::enable_if_t<!D, int> = 0>
  RLK_HOST_DEVICE static rlkernels::step_result<S> step(const Params&, State& s, const S* action, Rng& gen) {
    return step_impl(s, action[0], gen);
  }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, S* obs) {
    obs[0] = s.x;
    obs[1] = S(s.steps % 20) / S(20);
  }
};

/// The envs' own counters summed on the host (what the trainers' statistics must add up to).
template <class Trainer>
rlkernels::failed_step_counts counted_failures(Trainer& agent) {
  rlkernels::failed_step_counts c;
  for (const auto& s : agent.envs().states().to_host()) {
    c.capacity_overflows += s.capacity_overflows;
    c.unstable_steps += s.unstable_steps;
  }
  return c;
}

/// Runs `agent` to its end; every iteration's failed_steps must be the change of the envs' own
/// counters, and failed_steps() their totals. Returns the totals.
template <class Trainer, class Check>
rlkernels::failed_step_counts train_and_check_failures(Trainer& agent, Check&& check) {
  rlkernels::failed_step_counts before = counted_failures(agent);
  while (!agent.done()) {
    const auto s = agent.iterate();
    const rlkernels::failed_step_counts now = counted_failures(agent);
    check(s.failed_steps.capacity_overflows, now.capacity_overflows - before.capacity_overflows);
    check(s.failed_steps.unstable_steps, now.unstable_steps - before.unstable_steps);
    check(agent.failed_steps().capacity_overflows, now.capacity_overflows);
    check(agent.failed_steps().unstable_steps, now.unstable_steps);
    before = now;
  }
  return before;
}

}  // namespace rlk_test
