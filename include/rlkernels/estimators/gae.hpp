// rlkernels/estimators/gae.hpp
// Generalized advantage estimation over time-major [T, N] rollouts with Gymnasium's episode-end
// contract: termination does not bootstrap, truncation bootstraps from V(final observation), and
// the advantage recursion stops at every episode end.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

/// @brief Inputs of the return estimators: a rollout of T steps of N envs, time-major (element
/// [t, i] at t * N + i), in backend memory.
///
/// The value that step t of env i bootstraps from is
/// - 0 where `terminated[t, i]` (also when truncated is set too: termination wins);
/// - `bootstrap_values[t, i]` = V(final_observation of step t) where only `truncated[t, i]`;
/// - `values[t + 1, i]` otherwise, and `last_values[i]` (V of the observations after the last
///   step) for t = T - 1.
/// `bootstrap_values` is read only where truncated is set; writing V(final_observations) there at
/// every step (as vec_env gives them) is correct and simplest.
template <class T>
struct rollout_view {
  std::size_t num_steps = 0;                 ///< T
  std::size_t num_envs = 0;                  ///< N
  view<const T> rewards;                     ///< [T, N] reward of step t
  view<const T> values;                      ///< [T, N] V(s_t), the observation acted on at step t
  view<const T> bootstrap_values;            ///< [T, N] V(final observation of step t), used where truncated
  view<const T> last_values;                 ///< [N] V(observations after step T - 1)
  view<const std::uint8_t> terminated;       ///< [T, N] 1 where step t reached a terminal state
  view<const std::uint8_t> truncated;        ///< [T, N] 1 where step t hit the time limit
};

namespace detail {

/// Checks a rollout_view's sizes and pointers; `who` names the caller in the message.
template <class T>
void check_rollout(const rollout_view<T>& r, const char* who) {
  const std::size_t tn = r.num_steps * r.num_envs;
  RLK_EXPECTS(r.num_steps > 0 && r.num_envs > 0, std::invalid_argument, who, ": num_steps and num_envs must be > 0, got ",
              r.num_steps, " x ", r.num_envs);
  const auto expect = [&](std::size_t size, std::size_t want, const void* data, const char* name) {
    check_view_size(size, data, want, who, name);
  };
  expect(r.rewards.size(), tn, r.rewards.data(), "rewards");
  expect(r.values.size(), tn, r.values.data(), "values");
  expect(r.bootstrap_values.size(), tn, r.bootstrap_values.data(), "bootstrap_values");
  expect(r.last_values.size(), r.num_envs, r.last_values.data(), "last_values");
  expect(r.terminated.size(), tn, r.terminated.data(), "terminated");
  expect(r.truncated.size(), tn, r.truncated.data(), "truncated");
}

/// Checks an output view of the same [T, N] shape.
template <class T>
void check_output(view<T> out, std::size_t want, const char* who, const char* name) {
  check_view_size(out.size(), out.data(), want, who, name);
}

inline void check_discount(double x, const char* who, const char* name) {
  RLK_EXPECTS(x >= 0.0 && x <= 1.0, std::invalid_argument, who, ": ", name, " must be in [0, 1], got ", x);
}

/// The value step t of env i bootstraps from (see rollout_view).
template <class T>
RLK_INLINE T next_value(const rollout_view<T>& r, std::size_t t, std::size_t i) {
  const std::size_t k = t * r.num_envs + i;
  if (r.terminated[k]) return T(0);
  if (r.truncated[k]) return r.bootstrap_values[k];
  return t + 1 < r.num_steps ? r.values[k + r.num_envs] : r.last_values[i];
}

/// Backward GAE recursion for the envs [begin, end), walking t from T-1 to 0; on the host the
/// inner loop runs over consecutive envs (contiguous in memory), on CUDA one env per thread.
template <class T>
struct gae_kernel {
  rollout_view<T> r;
  T gamma;
  T lambda;
  T* advantages;
  T* returns;

  RLK_HOST_DEVICE void run(std::size_t begin, std::size_t end) const {
    const std::size_t n = r.num_envs;
    for (std::size_t step = r.num_steps; step-- > 0;) {
      for (std::size_t i = begin; i < end; ++i) {
        const std::size_t k = step * n + i;
        const bool done = r.terminated[k] || r.truncated[k];
        const T next_advantage = (done || step + 1 == r.num_steps) ? T(0) : advantages[k + n];
        const T delta = r.rewards[k] + gamma * next_value(r, step, i) - r.values[k];
        const T a = delta + gamma * lambda * next_advantage;
        advantages[k] = a;
        if (returns) returns[k] = a + r.values[k];
      }
    }
  }
  RLK_HOST_DEVICE void operator()(std::size_t i) const { run(i, i + 1); }
  void operator()(std::size_t, std::size_t begin, std::size_t end) const { run(begin, end); }
};

/// Runs a per-env backward kernel: chunks of consecutive envs on the host, one env per thread on CUDA.
template <class Backend, class Kernel>
void for_each_env(const Backend& backend, std::size_t num_envs, const Kernel& kernel) {
  if constexpr (is_host_backend_v<Backend>) {
    for_each_chunk(backend, num_envs, 64, kernel);
  } else {
    for_each_index(backend, num_envs, kernel);
  }
}

}  // namespace detail

/// @brief Generalized advantage estimation (Schulman et al. 2016) with separate terminated and
/// truncated masks:
///
///     delta[t] = r[t] + gamma * next_value(t) - V[t]          (next_value: see rollout_view)
///     A[t]     = delta[t] + gamma * lambda * (1 - done[t]) * A[t + 1],   done = terminated | truncated
///     returns[t] = A[t] + V[t]
///
/// with A[T] = 0. lambda = 1 gives Monte-Carlo advantages (bootstrapped at truncation and at the
/// end of the rollout), lambda = 0 the one-step TD error.
/// @param backend where to run; the views are in its memory
/// @param rollout the rollout (sizes checked)
/// @param gamma discount in [0, 1]
/// @param lambda GAE parameter in [0, 1]
/// @param advantages [T, N] output
/// @param returns [T, N] output (advantages + values), or a null view to skip it
/// @throw std::invalid_argument on a size mismatch, a null input, or gamma/lambda outside [0, 1]
template <class Backend, class T>
void gae(const Backend& backend, const rollout_view<T>& rollout, T gamma, T lambda, view<T> advantages,
         view<T> returns = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gae: T must be float or double");
  constexpr const char* who = "rlkernels::gae";
  detail::check_rollout(rollout, who);
  detail::check_discount(double(gamma), who, "gamma");
  detail::check_discount(double(lambda), who, "lambda");
  const std::size_t tn = rollout.num_steps * rollout.num_envs;
  detail::check_output(advantages, tn, who, "advantages");
  if (returns.data() != nullptr || returns.size() != 0) detail::check_output(returns, tn, who, "returns");
  detail::for_each_env(backend, rollout.num_envs,
                       detail::gae_kernel<T>{rollout, gamma, lambda, advantages.data(), returns.data()});
}

}  // namespace rlkernels
