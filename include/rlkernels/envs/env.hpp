// rlkernels/envs/env.hpp
// The environment concept: what a plain struct needs so that vec_env can batch it, the result of
// one step, and `check_env<Env>()`, which turns a missing or mistyped piece into one readable
// compile error (instead of pages of template errors).
#pragma once

#include "../core/config.hpp"
#include "../core/random.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace rlkernels {

/// Kind of action space an environment has.
enum class action_kind {
  discrete,   ///< one std::int32_t per env in [0, num_actions)
  continuous  ///< action_size scalars per env (a Box); envs clip to their bounds as Gymnasium does
};

/// @brief What `Env::step` returns for one environment: the reward of the transition, whether
/// the episode reached a terminal state (the MDP ended; do not bootstrap), and whether the env
/// could not take the step at all. Time limits are not the env's business: vec_env sets its
/// `truncated` flag from `Params::max_episode_steps`, or from `truncated` here.
///
/// `return {reward, terminated};` leaves `truncated` false. An env sets `truncated` when it
/// could not compute the step (a MuJoCo env whose physics step went unstable or needed more
/// contacts than its workspace holds): the state stays the one before the step, and the episode
/// ends as truncated, not terminated, because that failure is the simulator's, not the MDP's:
/// a learner bootstraps from the kept state's value instead of taking it as terminal. vec_env
/// then reports terminated = 0 for the step, whatever `terminated` says.
template <class Scalar>
struct step_result {
  Scalar reward;           ///< reward of the transition
  bool terminated;         ///< true when the new state is terminal (the MDP ended)
  bool truncated = false;  ///< true when the env could not take the step; the episode ends as truncated
};

namespace detail {

template <class...>
using void_t = void;

template <class Env, class = void> struct has_scalar_type : std::false_type {};
template <class Env> struct has_scalar_type<Env, void_t<typename Env::scalar_type>> : std::true_type {};

template <class Env, class = void> struct has_observation_size : std::false_type {};
template <class Env>
struct has_observation_size<Env, void_t<decltype(Env::observation_size)>>
    : std::is_integral<std::remove_cv_t<decltype(Env::observation_size)>> {};

template <class Env, class = void> struct has_action_space : std::false_type {};
template <class Env>
struct has_action_space<Env, void_t<decltype(Env::action_space)>>
    : std::is_same<std::remove_cv_t<decltype(Env::action_space)>, action_kind> {};

template <class Env, class = void> struct has_num_actions : std::false_type {};
template <class Env>
struct has_num_actions<Env, void_t<decltype(Env::num_actions)>>
    : std::is_integral<std::remove_cv_t<decltype(Env::num_actions)>> {};

template <class Env, class = void> struct has_action_size : std::false_type {};
template <class Env>
struct has_action_size<Env, void_t<decltype(Env::action_size)>>
    : std::is_integral<std::remove_cv_t<decltype(Env::action_size)>> {};

template <class Env, class = void> struct has_action_bounds : std::false_type {};
template <class Env>
struct has_action_bounds<Env, void_t<decltype(Env::action_low), decltype(Env::action_high)>> : std::true_type {};

template <class Env, class = void> struct has_state : std::false_type {};
template <class Env> struct has_state<Env, void_t<typename Env::State>> : std::true_type {};

template <class Env, class = void> struct has_params : std::false_type {};
template <class Env> struct has_params<Env, void_t<typename Env::Params>> : std::true_type {};

template <class Env, class = void> struct has_max_episode_steps : std::false_type {};
template <class Env>
struct has_max_episode_steps<Env, void_t<decltype(std::declval<const typename Env::Params&>().max_episode_steps)>>
    : std::is_integral<std::remove_cv_t<std::remove_reference_t<decltype(std::declval<const typename Env::Params&>().max_episode_steps)>>> {};

template <class Env, class = void> struct has_reset : std::false_type {};
template <class Env>
struct has_reset<Env, void_t<decltype(Env::reset(std::declval<const typename Env::Params&>(),
                                                 std::declval<typename Env::State&>(), std::declval<rng&>()))>>
    : std::true_type {};

/// True when Env declares `static constexpr int parallel_from = K;` (optional): its step is heavy
/// (a physics step costs tens of microseconds), so the OpenMP backend should step batches of K or
/// more envs in parallel, one env per chunk, instead of keeping batches under
/// openmp_backend::serial_below (1024) on one thread in chunks of 64. Results do not depend on it.
template <class Env, class = void> struct has_parallel_from : std::false_type {};
template <class Env>
struct has_parallel_from<Env, void_t<decltype(Env::parallel_from)>> : std::true_type {};

/// True when Env (a discrete env) offers a legal-action mask:
/// `RLK_HOST_DEVICE static void action_mask(const Params&, const State&, std::uint8_t* mask)`,
/// writing num_actions flags (1 = legal). Optional; vec_env::action_masks needs it.
template <class Env, class = void> struct has_action_mask : std::false_type {};
template <class Env>
struct has_action_mask<Env, void_t<decltype(Env::action_mask(std::declval<const typename Env::Params&>(),
                                                             std::declval<const typename Env::State&>(),
                                                             std::declval<std::uint8_t*>()))>> : std::true_type {};

/// True when Env checks its parameters: `static void validate(const Params&)` (host only),
/// throwing std::invalid_argument naming what is wrong. Optional; vec_env calls it at construction.
template <class Env, class = void> struct has_validate_params : std::false_type {};
template <class Env>
struct has_validate_params<Env, void_t<decltype(Env::validate(std::declval<const typename Env::Params&>()))>>
    : std::true_type {};

template <class Env, bool Discrete = (Env::action_space == action_kind::discrete)>
struct action_argument {
  using type = std::int32_t;
};
template <class Env>
struct action_argument<Env, false> {
  using type = const typename Env::scalar_type*;
};

template <class Env, class = void> struct has_step : std::false_type {};
template <class Env>
struct has_step<Env, void_t<decltype(Env::step(std::declval<const typename Env::Params&>(), std::declval<typename Env::State&>(),
                                               std::declval<typename action_argument<Env>::type>(), std::declval<rng&>()))>>
    : std::is_same<decltype(Env::step(std::declval<const typename Env::Params&>(), std::declval<typename Env::State&>(),
                                      std::declval<typename action_argument<Env>::type>(), std::declval<rng&>())),
                   step_result<typename Env::scalar_type>> {};

template <class Env, class = void> struct has_observe : std::false_type {};
template <class Env>
struct has_observe<Env, void_t<decltype(Env::observe(std::declval<const typename Env::Params&>(),
                                                     std::declval<const typename Env::State&>(),
                                                     std::declval<typename Env::scalar_type*>()))>> : std::true_type {};

template <class Env>
constexpr bool check_actions() {
  if constexpr (Env::action_space == action_kind::discrete) {
    static_assert(has_num_actions<Env>::value,
                  "rlkernels env: a discrete env needs `static constexpr int num_actions`");
    if constexpr (has_num_actions<Env>::value) {
      static_assert(Env::num_actions > 0, "rlkernels env: num_actions must be > 0");
    }
  } else {
    static_assert(has_action_size<Env>::value,
                  "rlkernels env: a continuous env needs `static constexpr int action_size`");
    static_assert(has_action_bounds<Env>::value,
                  "rlkernels env: a continuous env needs `static constexpr scalar_type action_low, action_high` (Box bounds)");
    if constexpr (has_action_size<Env>::value) {
      static_assert(Env::action_size > 0, "rlkernels env: action_size must be > 0");
    }
  }
  return true;
}

template <class Env>
constexpr bool check_members() {
  static_assert(std::is_trivially_copyable_v<typename Env::State>,
                "rlkernels env: Env::State must be trivially copyable (plain data, no pointers to owned memory)");
  static_assert(std::is_trivially_copyable_v<typename Env::Params>, "rlkernels env: Env::Params must be trivially copyable");
  static_assert(std::is_default_constructible_v<typename Env::Params>,
                "rlkernels env: Env::Params must be default constructible (defaults = the reference env)");
  static_assert(has_max_episode_steps<Env>::value,
                "rlkernels env: Env::Params needs an integer `max_episode_steps` (the time limit; 0 = none)");
  static_assert(has_reset<Env>::value,
                "rlkernels env: missing `RLK_HOST_DEVICE static void reset(const Params&, State&, rlkernels::rng&)`");
  static_assert(has_step<Env>::value,
                "rlkernels env: missing `RLK_HOST_DEVICE static rlkernels::step_result<scalar_type> step(const Params&, State&, action, rlkernels::rng&)` "
                "(action: std::int32_t for discrete envs, const scalar_type* for continuous ones)");
  static_assert(has_observe<Env>::value,
                "rlkernels env: missing `RLK_HOST_DEVICE static void observe(const Params&, const State&, scalar_type* obs)`");
  return true;
}

/// True when Env satisfies the concept; never fails to compile (unlike check_env, which asserts).
template <class Env>
constexpr bool env_is_valid() {
  if constexpr (!(has_scalar_type<Env>::value && has_observation_size<Env>::value && has_action_space<Env>::value &&
                  has_state<Env>::value && has_params<Env>::value)) {
    return false;
  } else if constexpr (!std::is_floating_point_v<typename Env::scalar_type> || !(Env::observation_size > 0)) {
    return false;
  } else {
    bool actions_ok = false;
    if constexpr (Env::action_space == action_kind::discrete) {
      if constexpr (has_num_actions<Env>::value) actions_ok = Env::num_actions > 0;
    } else {
      if constexpr (has_action_size<Env>::value && has_action_bounds<Env>::value) actions_ok = Env::action_size > 0;
    }
    return actions_ok && std::is_trivially_copyable_v<typename Env::State> &&
           std::is_trivially_copyable_v<typename Env::Params> && std::is_default_constructible_v<typename Env::Params> &&
           has_max_episode_steps<Env>::value && has_reset<Env>::value && has_step<Env>::value && has_observe<Env>::value;
  }
}

/// A minimal valid env that stands in for an invalid user env inside vec_env, so that the user
/// sees check_env's message and not a cascade of errors from vec_env's members.
struct placeholder_env {
  using scalar_type = float;
  static constexpr int observation_size = 1;
  static constexpr action_kind action_space = action_kind::discrete;
  static constexpr int num_actions = 1;
  struct State {
    float x;
  };
  struct Params {
    int max_episode_steps = 0;
  };
  RLK_HOST_DEVICE static void reset(const Params&, State& s, rng&) { s.x = 0; }
  RLK_HOST_DEVICE static step_result<float> step(const Params&, State&, std::int32_t, rng&) { return {0.0f, false}; }
  RLK_HOST_DEVICE static void observe(const Params&, const State& s, float* obs) { obs[0] = s.x; }
};

template <class Env>
using env_or_placeholder_t = std::conditional_t<env_is_valid<Env>(), Env, placeholder_env>;

}  // namespace detail

/// @brief Compile-time check that `Env` is a complete rlkernels environment. Fails with one
/// readable static_assert message naming the missing piece. Used by vec_env; call it after
/// writing your own env to check it early:
/// @code
/// static_assert(rlkernels::check_env<my_env>());
/// @endcode
///
/// An environment provides:
/// - `using scalar_type` (float or double), `static constexpr int observation_size`;
/// - `static constexpr action_kind action_space` and either `num_actions` (discrete) or
///   `action_size`, `action_low`, `action_high` (continuous);
/// - trivially copyable `State` and `Params` (Params default-constructs to the reference
///   settings and has `int max_episode_steps`, 0 meaning no time limit);
/// - static RLK_HOST_DEVICE `reset(params, state, rng)`, `step(params, state, action, rng)` returning
///   `step_result<scalar_type>`, and `observe(params, state, obs)`.
template <class Env>
constexpr bool check_env() {
  using namespace detail;
  // Each piece is checked only once the pieces it needs exist, so a user sees one message.
  static_assert(has_scalar_type<Env>::value, "rlkernels env: missing `using scalar_type = float;` (or double)");
  static_assert(has_observation_size<Env>::value, "rlkernels env: missing `static constexpr int observation_size`");
  static_assert(has_action_space<Env>::value,
                "rlkernels env: missing `static constexpr rlkernels::action_kind action_space` (discrete or continuous)");
  static_assert(has_state<Env>::value, "rlkernels env: missing nested `struct State`");
  static_assert(has_params<Env>::value, "rlkernels env: missing nested `struct Params`");
  if constexpr (has_scalar_type<Env>::value && has_observation_size<Env>::value && has_action_space<Env>::value &&
                has_state<Env>::value && has_params<Env>::value) {
    static_assert(std::is_floating_point_v<typename Env::scalar_type>, "rlkernels env: scalar_type must be float or double");
    static_assert(Env::observation_size > 0, "rlkernels env: observation_size must be > 0");
    if constexpr (check_actions<Env>()) {
      check_members<Env>();
    }
  }
  return true;
}

}  // namespace rlkernels
