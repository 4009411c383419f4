// rlkernels/estimators/returns.hpp
// Return targets over time-major [T, N] rollouts with the bootstrap convention of gae.hpp:
// lambda-returns (TD(lambda) targets, equal to GAE advantages + values) and n-step returns with
// the discount of their bootstrap (for n-step TD or DQN targets).
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "gae.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

namespace detail {

/// Backward lambda-return recursion for the envs [begin, end) (host: a chunk of consecutive envs;
/// CUDA: one env per thread).
template <class T>
struct lambda_returns_kernel {
  rollout_view<T> r;
  T gamma;
  T lambda;
  T* returns;  // [T, N]

  RLK_HOST_DEVICE void run(std::size_t begin, std::size_t end) const {
    const std::size_t n = r.num_envs;
    for (std::size_t step = r.num_steps; step-- > 0;) {
      for (std::size_t i = begin; i < end; ++i) {
        const std::size_t k = step * n + i;
        T next;
        if (r.terminated[k]) {
          next = T(0);
        } else if (r.truncated[k]) {
          next = r.bootstrap_values[k];
        } else if (step + 1 < r.num_steps) {
          next = (T(1) - lambda) * r.values[k + n] + lambda * returns[k + n];
        } else {
          next = r.last_values[i];
        }
        returns[k] = r.rewards[k] + gamma * next;
      }
    }
  }
  RLK_HOST_DEVICE void operator()(std::size_t i) const { run(i, i + 1); }
  void operator()(std::size_t, std::size_t begin, std::size_t end) const { run(begin, end); }
};

/// One n-step window per element [t, i] (k = t * N + i), summed forward in the env's column.
template <class T>
struct n_step_kernel {
  rollout_view<T> r;
  T gamma;
  std::size_t n_steps;
  T* returns;    // [T, N]
  T* discounts;  // [T, N] or null

  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t num_envs = r.num_envs;
    const std::size_t t = k / num_envs;
    const std::size_t i = k - t * num_envs;
    T sum = T(0);
    T discount = T(1);
    std::size_t last = t;  // the last step summed
    for (std::size_t j = 0; j < n_steps && t + j < r.num_steps; ++j) {
      const std::size_t kj = k + j * num_envs;
      sum += discount * r.rewards[kj];
      discount *= gamma;
      last = t + j;
      if (r.terminated[kj] || r.truncated[kj]) break;
    }
    returns[k] = sum + discount * next_value(r, last, i);
    if (discounts) discounts[k] = r.terminated[last * num_envs + i] ? T(0) : discount;
  }
};

}  // namespace detail

/// @brief TD(lambda) returns (lambda-returns) with separate terminated and truncated masks:
///
///     G[t] = r[t] + gamma * 0                                             where terminated[t]
///     G[t] = r[t] + gamma * bootstrap_values[t]                           where only truncated[t]
///     G[t] = r[t] + gamma * ((1 - lambda) * V[t + 1] + lambda * G[t + 1])  otherwise, t + 1 < T
///     G[T - 1] = r[T - 1] + gamma * last_values                           otherwise, t = T - 1
///
/// Mathematically G = GAE advantages + V (what `gae` writes to `returns`); computed by its own
/// recursion, so the two agree to rounding. lambda = 1 gives Monte-Carlo returns (bootstrapped at
/// truncation and at the end of the rollout), lambda = 0 the one-step TD target. The recursion
/// never crosses an episode end or the end of the rollout.
/// @tparam T float or double
/// @param backend where to run; the views are in its memory
/// @param rollout the rollout (sizes checked)
/// @param gamma discount in [0, 1]
/// @param lambda in [0, 1]
/// @param returns [T, N] output, dtype T (must not alias an input)
/// @throw std::invalid_argument on a size mismatch, a null view, or gamma/lambda outside [0, 1]
///        (or NaN); nothing is written then
template <class Backend, class T>
void lambda_returns(const Backend& backend, const rollout_view<T>& rollout, T gamma, T lambda, view<T> returns) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::lambda_returns: T must be float or double");
  constexpr const char* who = "rlkernels::lambda_returns";
  detail::check_rollout(rollout, who);
  detail::check_discount(double(gamma), who, "gamma");
  detail::check_discount(double(lambda), who, "lambda");
  detail::check_output(returns, rollout.num_steps * rollout.num_envs, who, "returns");
  detail::for_each_env(backend, rollout.num_envs, detail::lambda_returns_kernel<T>{rollout, gamma, lambda, returns.data()});
}

/// @brief n-step returns with the discount of their bootstrap.
///
/// For each step t of env i the window holds m = min(n, T - t, steps up to and including the
/// first done step at or after t) rewards (done = terminated | truncated), and
///
///     returns[t, i]   = sum_{k < m} gamma^k * r[t + k, i] + gamma^m * next_value(t + m - 1, i)
///     discounts[t, i] = gamma^m * (1 - terminated[t + m - 1, i])
///
/// where next_value is the bootstrap convention of rollout_view (0 at termination,
/// bootstrap_values at truncation, V[t + m] inside the rollout, last_values at its end).
/// `discounts` is the factor the bootstrap value was multiplied by (0 where the window ends in a
/// termination): a DQN-style learner can recompute the target as
/// `sum + discounts * Q(s_{t+m})`. n = 1 gives the one-step TD target; n >= T gives Monte-Carlo
/// returns equal to lambda_returns with lambda = 1. Costs O(T * N * min(n, T)).
/// @tparam T float or double
/// @param backend where to run; the views are in its memory
/// @param rollout the rollout (sizes checked)
/// @param gamma discount in [0, 1]
/// @param n the window length, >= 1
/// @param returns [T, N] output, dtype T (must not alias an input)
/// @param discounts [T, N] output, dtype T, or a null view to skip it
/// @throw std::invalid_argument on a size mismatch, a null view, gamma outside [0, 1] (or NaN), or
///        n < 1; nothing is written then
template <class Backend, class T>
void n_step_returns(const Backend& backend, const rollout_view<T>& rollout, T gamma, int n, view<T> returns,
                    view<T> discounts = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::n_step_returns: T must be float or double");
  constexpr const char* who = "rlkernels::n_step_returns";
  detail::check_rollout(rollout, who);
  detail::check_discount(double(gamma), who, "gamma");
  RLK_EXPECTS(n >= 1, std::invalid_argument, who, ": n must be >= 1, got ", n);
  const std::size_t tn = rollout.num_steps * rollout.num_envs;
  detail::check_output(returns, tn, who, "returns");
  if (discounts.data() != nullptr || discounts.size() != 0) detail::check_output(discounts, tn, who, "discounts");
  for_each_index(backend, tn,
                 detail::n_step_kernel<T>{rollout, gamma, static_cast<std::size_t>(n), returns.data(), discounts.data()});
}

}  // namespace rlkernels
