// rlkernels/estimators/vtrace.hpp
// V-trace off-policy value targets and policy-gradient advantages (Espeholt et al. 2018, IMPALA)
// over time-major [T, N] rollouts, with the bootstrap convention of gae.hpp: the traces are cut at
// every episode end, truncation bootstraps from V(final observation).
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "gae.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

/// @brief Parameters of V-trace. The defaults are IMPALA's (rho_bar = c_bar = 1) with lambda = 1.
/// @tparam T float or double
template <class T>
struct vtrace_params {
  static_assert(std::is_floating_point_v<T>, "rlkernels::vtrace_params: T must be float or double");
  T gamma = T(0.99);      ///< discount in [0, 1]
  T lambda = T(1);        ///< trace coefficient in [0, 1], multiplies c (IMPALA's remark 2)
  T rho_bar = T(1);       ///< clip of the importance weight in the TD error, > 0 (infinity: no clip)
  T c_bar = T(1);         ///< clip of the trace coefficient, > 0 (infinity: no clip)
  T pg_rho_bar = T(1);    ///< clip of the importance weight of the policy-gradient advantage, > 0

  /// @brief Checks every field.
  /// @throw std::invalid_argument naming the field and its value if gamma or lambda is outside
  ///        [0, 1] or a clip is not > 0 (NaN fails both)
  void validate() const {
    constexpr const char* who = "rlkernels::vtrace";
    detail::check_discount(double(gamma), who, "gamma");
    detail::check_discount(double(lambda), who, "lambda");
    RLK_EXPECTS(rho_bar > T(0), std::invalid_argument, who, ": rho_bar must be > 0, got ", rho_bar);
    RLK_EXPECTS(c_bar > T(0), std::invalid_argument, who, ": c_bar must be > 0, got ", c_bar);
    RLK_EXPECTS(pg_rho_bar > T(0), std::invalid_argument, who, ": pg_rho_bar must be > 0, got ", pg_rho_bar);
  }
};

namespace detail {

/// Backward V-trace recursion for the envs [begin, end) (host: a chunk of consecutive envs; CUDA:
/// one env per thread). vs[t + 1] is read back from the output written one step earlier.
template <class T>
struct vtrace_kernel {
  rollout_view<T> r;
  const T* log_rhos;  // [T, N]
  vtrace_params<T> p;
  T* vs;              // [T, N]
  T* pg_advantages;   // [T, N]

  RLK_HOST_DEVICE void run(std::size_t begin, std::size_t end) const {
    const std::size_t n = r.num_envs;
    for (std::size_t step = r.num_steps; step-- > 0;) {
      for (std::size_t i = begin; i < end; ++i) {
        const std::size_t k = step * n + i;
        const T ratio = std::exp(log_rhos[k]);
        const T rho = ratio < p.rho_bar ? ratio : p.rho_bar;
        const T c = p.lambda * (ratio < p.c_bar ? ratio : p.c_bar);
        const T pg_rho = ratio < p.pg_rho_bar ? ratio : p.pg_rho_bar;
        const bool done = r.terminated[k] || r.truncated[k];
        const bool inside = step + 1 < r.num_steps;
        const T v = r.values[k];
        const T delta = rho * (r.rewards[k] + p.gamma * next_value(r, step, i) - v);
        const T next_correction = (done || !inside) ? T(0) : vs[k + n] - r.values[k + n];
        vs[k] = v + delta + p.gamma * c * next_correction;
        // The policy-gradient target bootstraps from vs[t + 1] where the episode goes on.
        T next_vs;
        if (r.terminated[k]) {
          next_vs = T(0);
        } else if (r.truncated[k]) {
          next_vs = r.bootstrap_values[k];
        } else {
          next_vs = inside ? vs[k + n] : r.last_values[i];
        }
        pg_advantages[k] = pg_rho * (r.rewards[k] + p.gamma * next_vs - v);
      }
    }
  }
  RLK_HOST_DEVICE void operator()(std::size_t i) const { run(i, i + 1); }
  void operator()(std::size_t, std::size_t begin, std::size_t end) const { run(begin, end); }
};

}  // namespace detail

/// @brief V-trace targets and policy-gradient advantages (Espeholt et al. 2018) with separate
/// terminated and truncated masks. With ratio = exp(log_rhos[t]) = pi(a_t|s_t) / mu(a_t|s_t):
///
///     rho[t]    = min(rho_bar, ratio)
///     c[t]      = lambda * min(c_bar, ratio)
///     pg_rho[t] = min(pg_rho_bar, ratio)
///     delta[t]  = rho[t] * (r[t] + gamma * next_value(t) - V[t])           (next_value: see rollout_view)
///     vs[t]     = V[t] + delta[t] + gamma * c[t] * (1 - done[t]) * (vs[t + 1] - V[t + 1])
///     pg_advantages[t] = pg_rho[t] * (r[t] + gamma * next_vs(t) - V[t])
///
/// with vs[T] - V[T] = 0 (the trace is cut at every episode end and at the end of the rollout) and
/// next_vs(t) = 0 where terminated, bootstrap_values[t] where only truncated, vs[t + 1] inside the
/// rollout, last_values at t = T - 1. On-policy (log_rhos = 0) with rho_bar, c_bar >= 1, vs equals
/// lambda_returns(gamma, lambda).
/// @tparam T float or double
/// @param backend where to run; the views are in its memory
/// @param rollout the rollout (sizes checked)
/// @param log_rhos [T, N] log(pi / mu) of the actions taken, dtype T (values are not checked: a NaN
///        gives NaN outputs for that env up to the previous episode end)
/// @param params discount, lambda and clips (validated)
/// @param vs [T, N] output: value targets, dtype T
/// @param pg_advantages [T, N] output: advantages for the policy gradient, dtype T
/// @throw std::invalid_argument on a size mismatch, a null view or a bad parameter; nothing is
///        written then. The outputs must not alias an input or each other.
template <class Backend, class T>
void vtrace(const Backend& backend, const rollout_view<T>& rollout, view<const T> log_rhos,
            const vtrace_params<T>& params, view<T> vs, view<T> pg_advantages) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::vtrace: T must be float or double");
  constexpr const char* who = "rlkernels::vtrace";
  detail::check_rollout(rollout, who);
  params.validate();
  const std::size_t tn = rollout.num_steps * rollout.num_envs;
  RLK_EXPECTS(log_rhos.size() == tn, std::invalid_argument, who, ": log_rhos has ", log_rhos.size(),
              " elements, expected ", tn);
  RLK_EXPECTS(log_rhos.data() != nullptr, std::invalid_argument, who, ": log_rhos is a null view");
  detail::check_output(vs, tn, who, "vs");
  detail::check_output(pg_advantages, tn, who, "pg_advantages");
  detail::for_each_env(backend, rollout.num_envs,
                       detail::vtrace_kernel<T>{rollout, log_rhos.data(), params, vs.data(), pg_advantages.data()});
}

}  // namespace rlkernels
