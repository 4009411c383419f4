// rlkernels/losses/td3.hpp
// TD3 (Fujimoto et al. 2018) pieces over quantities a network already produced: target policy
// smoothing with the library RNG, the clipped double-Q target, the twin-critic loss, the
// deterministic actor loss with its gradient, and the delayed-update rule.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/device_value.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "dqn.hpp"
#include "sac.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

namespace detail {

template <class T>
RLK_INLINE T td3_clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

template <class T>
struct td3_smoothing_kernel {
  const T* target_actions;
  std::uint64_t seed;
  std::uint64_t draw;
  T noise_std;
  T noise_clip;
  T low;
  T high;
  T* out;
  std::uint64_t first = 0;  // element k draws as element first + k
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, draw, first + k);
    const T noise = td3_clamp(noise_std * gen.normal<T>(), -noise_clip, noise_clip);
    out[k] = td3_clamp(target_actions[k] + noise, low, high);
  }
};

template <class T>
struct td3_actor_term {
  const T* q1;
  RLK_HOST_DEVICE vb_sums operator()(std::size_t i) const { return {double(q1[i]), 0.0}; }
};

}  // namespace detail

/// @brief The standard normal eps that td3_smoothed_target_actions() draws for element k of a
/// draw: `rng(seed, draw, k).normal<T>()` (Philox key = seed, stream = draw, block = k). Exposed so
/// callers and tests can reproduce the noise; the same bits on every backend and thread count
/// (the math library's log/cos may differ in the last bits between host and CUDA).
template <class T>
RLK_HOST_DEVICE T td3_smoothing_eps(std::uint64_t seed, std::uint64_t draw, std::size_t k) {
  rng gen(seed, draw, k);
  return gen.normal<T>();
}

/// @brief Target policy smoothing:
///
///     a'[k] = clip(mu_target(s')[k] + clip(noise_std * eps_k, -noise_clip, noise_clip), low, high)
///
/// for every element k of the [B, D] array (a flat index), with eps_k = td3_smoothing_eps(seed,
/// draw, k): a pure function of (seed, draw, k). Use a fresh `draw` (e.g. the update counter) for
/// every update so the noise is new each time yet reproducible. CleanRL and SB3 clip to the
/// action bounds (SB3 in its normalised [-1, 1] space); pass the bounds of the space the actor
/// outputs (TD3's defaults: noise_std = 0.2, noise_clip = 0.5, times the action scale).
/// @tparam T float or double
/// @param backend where to run; the views are in its memory
/// @param target_actions [B, D] mu_target(s'), any row-major layout (processed element-wise)
/// @param seed Philox key
/// @param draw Philox stream: the counter of this smoothing draw
/// @param noise_std standard deviation of the noise, finite and >= 0
/// @param noise_clip bound of the noise magnitude, finite and >= 0
/// @param low lower action bound, finite
/// @param high upper action bound, finite and >= low
/// @param next_actions [B, D] output a' (may be target_actions itself: the work is element-wise)
/// @param first_element the elements' place in a larger batch: element k draws eps_{first_element + k}
///        (a data-parallel rank's rows, or one part of a sharded or accumulated batch)
/// @throw std::invalid_argument on an empty input, a size mismatch, a null view, or a bad parameter
template <class Backend, class T>
void td3_smoothed_target_actions(const Backend& backend, view<const T> target_actions, std::uint64_t seed,
                                 std::uint64_t draw, T noise_std, T noise_clip, T low, T high, view<T> next_actions,
                                 std::uint64_t first_element = 0) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td3_smoothed_target_actions: T must be float or double");
  constexpr const char* who = "rlkernels::td3_smoothed_target_actions";
  const std::size_t n = target_actions.size();
  RLK_EXPECTS(n > 0, std::invalid_argument, who, ": target_actions is empty");
  detail::vb_check_input(target_actions, n, who, "target_actions");
  detail::vb_check_input(next_actions, n, who, "next_actions");
  detail::vb_check_finite(double(noise_std), who, "noise_std");
  detail::vb_check_finite(double(noise_clip), who, "noise_clip");
  detail::vb_check_finite(double(low), who, "low");
  detail::vb_check_finite(double(high), who, "high");
  RLK_EXPECTS(noise_std >= T(0), std::invalid_argument, who, ": noise_std must be >= 0, got ", noise_std);
  RLK_EXPECTS(noise_clip >= T(0), std::invalid_argument, who, ": noise_clip must be >= 0, got ", noise_clip);
  RLK_EXPECTS(low <= high, std::invalid_argument, who, ": low must be <= high, got low ", low, ", high ", high);
  for_each_index(backend, n,
                 detail::td3_smoothing_kernel<T>{target_actions.data(), seed, draw, noise_std, noise_clip, low, high,
                                                 next_actions.data(), first_element});
}

/// @brief TD3's clipped double-Q target (no entropy term):
///
///     y[i] = r[i] + d[i] * (1 - terminated[i]) * min(Q1_t(s', a'), Q2_t(s', a'))
///
/// with a' from td3_smoothed_target_actions() and d[i] = discounts[i] when given, else gamma.
/// Parameters as sac_critic_targets() without the log-probs and alpha.
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, or gamma outside [0, 1]
template <class Backend, class T>
void td3_critic_targets(const Backend& backend, view<const T> rewards, view<const std::uint8_t> terminated,
                        view<const T> q1_next_target, view<const T> q2_next_target, T gamma, view<T> targets,
                        view<const T> discounts = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td3_critic_targets: T must be float or double");
  constexpr const char* who = "rlkernels::td3_critic_targets";
  detail::vb_check_target_inputs(rewards, terminated, discounts, gamma, targets, who);
  const std::size_t b = rewards.size();
  detail::vb_check_input(q1_next_target, b, who, "q1_next_target");
  detail::vb_check_input(q2_next_target, b, who, "q2_next_target");
  for_each_index(backend, b,
                 detail::twin_target_kernel<T>{rewards.data(), terminated.data(), discounts.data(),
                                               q1_next_target.data(), q2_next_target.data(), nullptr, gamma, T(0),
                                               targets.data()});
}

/// @brief TD3's critic loss: twin_critic_loss() with scale 1 by default (mean (Q1 - y)^2 +
/// mean (Q2 - y)^2, as SB3's and CleanRL's TD3), device form (statistics written to `out` in
/// backend memory).
template <class Backend, class T>
void td3_critic_loss(const Backend& backend, view<twin_critic_loss_result> out, view<const T> q1, view<const T> q2,
                     view<const T> targets, view<T> grad_q1 = {}, view<T> grad_q2 = {}, T scale = T(1)) {
  twin_critic_loss(backend, out, q1, q2, targets, scale, grad_q1, grad_q2);
}

/// @brief TD3's critic loss, host form: returns the statistics (one host wait on CUDA).
template <class Backend, class T>
twin_critic_loss_result td3_critic_loss(const Backend& backend, view<const T> q1, view<const T> q2,
                                        view<const T> targets, view<T> grad_q1 = {}, view<T> grad_q2 = {},
                                        T scale = T(1)) {
  return twin_critic_loss(backend, q1, q2, targets, scale, grad_q1, grad_q2);
}

namespace detail {
struct td3_actor_finalize_kernel {
  const vb_sums* sums;
  std::size_t b;
  double* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *out = -sums->first / double(b); }
};
}  // namespace detail

/// @brief TD3's deterministic actor loss, loss = -mean_i Q1(s_i, mu(s_i)), with d loss / d Q1_i = -1/B
/// (chain it through the critic wrt the action, then through the actor); device form: the loss is
/// written to `out` in backend memory, no host wait.
/// @param backend where to run; the views are in its memory
/// @param out [1] output: the loss
/// @param q1 [B] Q1(s_i, mu(s_i))
/// @param grad_q1 [B] output d loss / d q1, or an empty view to skip
/// @throw std::invalid_argument on an empty batch, a size mismatch or a null view
template <class Backend, class T>
void td3_actor_loss(const Backend& backend, view<double> out, view<const T> q1, view<T> grad_q1 = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td3_actor_loss: T must be float or double");
  constexpr const char* who = "rlkernels::td3_actor_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  const std::size_t b = q1.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (q1 has 0 elements)");
  detail::vb_check_input(q1, b, who, "q1");
  detail::vb_check_optional(grad_q1, b, who, "grad_q1");
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::td3_actor_term<T>{q1.data()}, detail::vb_sums{0.0, 0.0},
                                 detail::vb_add_sums{}, sums.data());
  if (grad_q1.data()) for_each_index(backend, b, detail::vb_fill_kernel<T>{T(-1) / T(b), grad_q1.data()});
  detail::run_once(backend, detail::td3_actor_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief td3_actor_loss, host form: returns the loss (one host wait on CUDA).
/// @throw std::invalid_argument on an empty batch, a size mismatch or a null view
template <class Backend, class T>
double td3_actor_loss(const Backend& backend, view<const T> q1, view<T> grad_q1 = {}) {
  detail::backend_value<double, Backend> out(backend);
  td3_actor_loss(backend, out.view(), q1, grad_q1);
  return out.read();
}

/// @brief TD3's delayed policy update: after the critic update number `critic_updates` (counted from
/// 1, including the one just done), update the actor and the target networks iff
/// critic_updates % policy_delay == 0 — SB3's rule (`_n_updates % policy_delay`); with
/// policy_delay = 2 the actor learns on critic updates 2, 4, 6, ... CleanRL's
/// `global_step % policy_frequency == 0` is the same rule on its own counter.
/// @param critic_updates critic updates done so far, >= 1
/// @param policy_delay d >= 1 (TD3's default 2)
/// @throw std::invalid_argument if policy_delay or critic_updates is 0
inline bool td3_should_update_actor(std::uint64_t critic_updates, std::uint64_t policy_delay = 2) {
  RLK_EXPECTS(policy_delay >= 1, std::invalid_argument, "rlkernels::td3_should_update_actor: policy_delay must be >= 1, got ",
              policy_delay);
  RLK_EXPECTS(critic_updates >= 1, std::invalid_argument,
              "rlkernels::td3_should_update_actor: critic_updates counts from 1, got 0");
  return critic_updates % policy_delay == 0;
}

}  // namespace rlkernels
