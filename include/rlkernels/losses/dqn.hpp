// rlkernels/losses/dqn.hpp
// DQN-family losses over batch-major arrays: one-step and n-step Q-learning targets, Double-DQN
// targets, and the TD loss (MSE or Huber, optional importance weights) with its gradient wrt the
// Q-values and the TD errors that prioritized replay needs.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cpp/execution_policy.h>
#include <thrust/transform_reduce.h>
#if RLK_HAS_CUDA
#include <thrust/system/cuda/execution_policy.h>
#endif

namespace rlkernels {

namespace detail {

// Helpers shared by dqn.hpp, sac.hpp and td3.hpp (the value-based losses).

/// Checks an input view: `want` elements, not null.
template <class T>
void vb_check_input(view<T> v, std::size_t want, const char* who, const char* name) {
  check_view_size(v.size(), v.data(), want, who, name);
}

/// Checks an optional view: empty, or `want` elements and not null.
template <class T>
void vb_check_optional(view<T> v, std::size_t want, const char* who, const char* name) {
  check_optional(v.size(), v.data(), want, who, name);
}

/// Checks a discount-like parameter in [0, 1] (NaN fails).
inline void vb_check_unit(double x, const char* who, const char* name) {
  RLK_EXPECTS(x >= 0.0 && x <= 1.0, std::invalid_argument, who, ": ", name, " must be in [0, 1], got ", x);
}

/// Checks a finite parameter (NaN and infinities fail).
inline void vb_check_finite(double x, const char* who, const char* name) {
  RLK_EXPECTS(std::isfinite(x), std::invalid_argument, who, ": ", name, " must be finite, got ", x);
}

/// Two sums accumulated in double.
struct vb_sums {
  double first;
  double second;
};

struct vb_add_sums {
  RLK_HOST_DEVICE vb_sums operator()(const vb_sums& a, const vb_sums& b) const {
    return {a.first + b.first, a.second + b.second};
  }
};

/// Sums `term(i)` (a vb_sums) over [0, n) deterministically (see detail::deterministic_sum).
template <class Backend, class Term>
vb_sums vb_reduce(const Backend& backend, std::size_t n, const Term& term) {
  return deterministic_sum(backend, n, term, vb_sums{0.0, 0.0}, vb_add_sums{});
}

/// first = i if actions[i] is outside [0, num_actions), else n (reduced with min).
struct vb_bad_action_index {
  const std::int32_t* actions;
  std::int32_t num_actions;
  std::size_t n;
  RLK_HOST_DEVICE std::size_t operator()(std::size_t i) const {
    return (actions[i] < 0 || actions[i] >= num_actions) ? i : n;
  }
};

struct vb_min_index {
  RLK_HOST_DEVICE std::size_t operator()(std::size_t a, std::size_t b) const { return a < b ? a : b; }
};

/// Throws std::invalid_argument naming the first action outside [0, num_actions).
template <class Backend>
void vb_check_actions(const Backend& backend, view<const std::int32_t> actions, std::size_t num_actions,
                      const char* who) {
  const std::size_t n = actions.size();
  const thrust::counting_iterator<std::size_t> first(0), last(n);
  const vb_bad_action_index bad{actions.data(), static_cast<std::int32_t>(num_actions), n};
  std::size_t index = n;
  std::int32_t value = 0;
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    index = thrust::transform_reduce(thrust::cuda::par_nosync.on(backend.stream), first, last, bad, n, vb_min_index{});
    if (index < n) {
      RLK_CUDA_CHECK(cudaMemcpyAsync(&value, actions.data() + index, sizeof(value), cudaMemcpyDeviceToHost,
                                     backend.stream));
      RLK_CUDA_CHECK(cudaStreamSynchronize(backend.stream));
    }
  } else
#endif
  {
    (void)backend;
    index = thrust::transform_reduce(thrust::cpp::par, first, last, bad, n, vb_min_index{});
    if (index < n) value = actions[index];
  }
  RLK_EXPECTS(index == n, std::invalid_argument, who, ": actions[", index, "] = ", value, " is out of range [0, ",
              num_actions, ")");
}

/// Checks the common inputs of a one-step target: rewards, terminated, optional discounts and gamma.
template <class T>
void vb_check_target_inputs(view<const T> rewards, view<const std::uint8_t> terminated, view<const T> discounts,
                            T gamma, view<T> targets, const char* who) {
  const std::size_t b = rewards.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (rewards has 0 elements)");
  vb_check_input(rewards, b, who, "rewards");
  vb_check_input(terminated, b, who, "terminated");
  vb_check_optional(discounts, b, who, "discounts");
  vb_check_unit(double(gamma), who, "gamma");
  vb_check_input(targets, b, who, "targets");
}

/// The discount of sample i: discounts[i] when given, else gamma; 0 where terminated.
template <class T>
RLK_INLINE T vb_discount(const T* discounts, const std::uint8_t* terminated, T gamma, std::size_t i) {
  if (terminated[i]) return T(0);
  return discounts ? discounts[i] : gamma;
}

/// y[i] = r[i] + discount(i) * max_a q_next[i, a], or with the action chosen by argmax q_select
/// (Double DQN; first index among ties) when q_select is not null.
template <class T>
struct q_target_kernel {
  const T* rewards;
  const std::uint8_t* terminated;
  const T* discounts;  // null: gamma
  const T* q_next;     // [B, A] values
  const T* q_select;   // [B, A] argmax source, or null (then argmax q_next)
  std::size_t num_actions;
  T gamma;
  T* targets;

  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T* value_row = q_next + i * num_actions;
    const T* select_row = q_select ? q_select + i * num_actions : value_row;
    std::size_t best = 0;
    for (std::size_t a = 1; a < num_actions; ++a)
      if (select_row[a] > select_row[best]) best = a;
    targets[i] = rewards[i] + vb_discount(discounts, terminated, gamma, i) * value_row[best];
  }
};

}  // namespace detail

/// @brief One-step (or n-step) Q-learning targets (Mnih et al. 2015):
///
///     y[i] = r[i] + d[i] * (1 - terminated[i]) * max_a Q_target(s'_i, a),   d[i] = discounts[i] or gamma
///
/// For n-step returns pass what replay_buffer::gather_n_step produces: rewards = sum_k gamma^k r_{t+k}
/// and discounts = gamma^m (per sample); gamma is then only validated. Truncation is not a
/// terminal: a truncated transition bootstraps from Q_target(final observation) like any other.
/// @tparam T float or double
/// @param backend where to run; every view is in its memory
/// @param rewards [B] rewards (n-step: discounted reward sums)
/// @param terminated [B] uint8 0/1, 1 where s' is terminal (no bootstrap)
/// @param q_next_target [B, A] Q_target(s'_i, a), row-major
/// @param num_actions A >= 1
/// @param gamma discount in [0, 1], used where `discounts` is empty
/// @param targets [B] output y
/// @param discounts [B] per-sample discounts (e.g. gamma^m from gather_n_step), or an empty view
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, num_actions = 0 or
///        gamma outside [0, 1] (or NaN)
template <class Backend, class T>
void q_learning_targets(const Backend& backend, view<const T> rewards, view<const std::uint8_t> terminated,
                        view<const T> q_next_target, std::size_t num_actions, T gamma, view<T> targets,
                        view<const T> discounts = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::q_learning_targets: T must be float or double");
  constexpr const char* who = "rlkernels::q_learning_targets";
  RLK_EXPECTS(num_actions >= 1, std::invalid_argument, who, ": num_actions must be >= 1, got ", num_actions);
  detail::vb_check_target_inputs(rewards, terminated, discounts, gamma, targets, who);
  detail::vb_check_input(q_next_target, rewards.size() * num_actions, who, "q_next_target");
  for_each_index(backend, rewards.size(),
                 detail::q_target_kernel<T>{rewards.data(), terminated.data(), discounts.data(), q_next_target.data(),
                                            nullptr, num_actions, gamma, targets.data()});
}

/// @brief Double-DQN targets (van Hasselt et al. 2016): the online network picks the action, the
/// target network values it:
///
///     a*_i = argmax_a Q_online(s'_i, a)   (the lowest index among ties, like torch.argmax)
///     y[i] = r[i] + d[i] * (1 - terminated[i]) * Q_target(s'_i, a*_i)
///
/// Parameters as q_learning_targets(), plus q_next_online [B, A] = Q_online(s'_i, a).
/// @throw std::invalid_argument as q_learning_targets()
template <class Backend, class T>
void double_q_learning_targets(const Backend& backend, view<const T> rewards, view<const std::uint8_t> terminated,
                               view<const T> q_next_online, view<const T> q_next_target, std::size_t num_actions,
                               T gamma, view<T> targets, view<const T> discounts = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::double_q_learning_targets: T must be float or double");
  constexpr const char* who = "rlkernels::double_q_learning_targets";
  RLK_EXPECTS(num_actions >= 1, std::invalid_argument, who, ": num_actions must be >= 1, got ", num_actions);
  detail::vb_check_target_inputs(rewards, terminated, discounts, gamma, targets, who);
  detail::vb_check_input(q_next_online, rewards.size() * num_actions, who, "q_next_online");
  detail::vb_check_input(q_next_target, rewards.size() * num_actions, who, "q_next_target");
  for_each_index(backend, rewards.size(),
                 detail::q_target_kernel<T>{rewards.data(), terminated.data(), discounts.data(), q_next_target.data(),
                                            q_next_online.data(), num_actions, gamma, targets.data()});
}

/// @brief The per-sample loss of a TD error.
enum class td_loss_kind {
  mse,   ///< delta^2 (PyTorch's mse_loss, CleanRL's DQN; rlax's l2_loss is half of it)
  huber  ///< 0.5 delta^2 for |delta| <= k, k (|delta| - 0.5 k) beyond (torch huber_loss; k = 1 is SB3's smooth_l1)
};

/// @brief Options of td_loss().
template <class T>
struct td_loss_options {
  td_loss_kind kind = td_loss_kind::huber;  ///< the per-sample loss
  T huber_delta = T(1);                     ///< k of the Huber loss, > 0 (ignored for mse)
};

/// @brief Scalars returned by td_loss() (host values, accumulated in double).
struct td_loss_result {
  double loss = 0;                ///< (1/B) sum_i w_i l(delta_i)
  double mean_abs_td_error = 0;   ///< (1/B) sum_i |delta_i| (unweighted)
};

namespace detail {

/// Per-sample Huber/MSE value and derivative wrt the TD error x = q - y.
template <class T>
RLK_INLINE T td_sample_loss(T x, bool huber, T k) {
  if (!huber) return x * x;
  const T ax = x < T(0) ? -x : x;
  return ax <= k ? T(0.5) * x * x : k * (ax - T(0.5) * k);
}
template <class T>
RLK_INLINE T td_sample_grad(T x, bool huber, T k) {
  if (!huber) return T(2) * x;
  return x > k ? k : (x < -k ? -k : x);
}

template <class T>
struct td_loss_term {
  const T* q_values;
  const std::int32_t* actions;
  const T* targets;
  const T* weights;  // null: all 1
  std::size_t num_actions;
  bool huber;
  T delta;
  RLK_HOST_DEVICE vb_sums operator()(std::size_t i) const {
    const T x = q_values[i * num_actions + std::size_t(actions[i])] - targets[i];
    const double w = weights ? double(weights[i]) : 1.0;
    return {w * double(td_sample_loss(x, huber, delta)), double(x < T(0) ? -x : x)};
  }
};

template <class T>
struct td_loss_grad_kernel {
  const T* q_values;
  const std::int32_t* actions;
  const T* targets;
  const T* weights;
  std::size_t num_actions;
  bool huber;
  T delta;
  T inv_batch;
  T* td_errors;  // null: skip
  T* grad;       // null: skip
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t a = std::size_t(actions[i]);
    const T x = q_values[i * num_actions + a] - targets[i];
    if (td_errors) td_errors[i] = -x;
    if (grad) {
      const T w = weights ? weights[i] : T(1);
      for (std::size_t k = 0; k < num_actions; ++k) grad[i * num_actions + k] = T(0);
      grad[i * num_actions + a] = w * td_sample_grad(x, huber, delta) * inv_batch;
    }
  }
};

}  // namespace detail

/// @brief TD loss of the taken actions' Q-values against fixed targets, with optional
/// prioritized-replay importance weights:
///
///     delta_i = y_i - Q(s_i, a_i)                       (written to td_errors; rlax's sign)
///     loss    = (1/B) sum_i w_i l(Q(s_i, a_i) - y_i)     (w_i = 1 without weights)
///
/// with l from options.kind (see td_loss_kind). The weighted mean divides by B, not by sum w
/// (Schaul et al. 2016 and Dopamine/SB3-style PER: weights are already normalised by their max).
/// The gradient d loss / d Q(s_i, a) is w_i l'(Q - y) / B at a = a_i and 0 elsewhere; the targets
/// are treated as constants (no gradient flows into them). At |delta| = k both Huber branches have
/// the same value and slope (+-k), so there is no boundary convention to choose.
/// @tparam T float or double
/// @param backend where to run; every view is in its memory
/// @param q_values [B, A] Q(s_i, a), row-major
/// @param num_actions A >= 1
/// @param actions [B] int32 taken actions in [0, A)
/// @param targets [B] y_i (from q_learning_targets() or double_q_learning_targets())
/// @param importance_weights [B] w_i, or an empty view for w_i = 1
/// @param options loss kind and Huber delta
/// @param td_errors [B] output delta_i = y_i - Q(s_i, a_i) (for priorities), or an empty view to skip
/// @param grad_q_values [B, A] output d loss / d q_values, or an empty view to skip
/// @return the loss and the mean |TD error|
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, num_actions = 0,
///        an action outside [0, A), or huber_delta <= 0 / NaN / infinite (checked before anything is written)
template <class Backend, class T>
td_loss_result td_loss(const Backend& backend, view<const T> q_values, std::size_t num_actions,
                       view<const std::int32_t> actions, view<const T> targets, view<const T> importance_weights,
                       const td_loss_options<T>& options, view<T> td_errors = {}, view<T> grad_q_values = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td_loss: T must be float or double");
  constexpr const char* who = "rlkernels::td_loss";
  const std::size_t b = targets.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (targets has 0 elements)");
  RLK_EXPECTS(num_actions >= 1 && num_actions <= std::size_t(INT32_MAX), std::invalid_argument, who,
              ": num_actions must be in [1, 2^31), got ", num_actions);
  detail::vb_check_input(targets, b, who, "targets");
  detail::vb_check_input(q_values, b * num_actions, who, "q_values");
  detail::vb_check_input(actions, b, who, "actions");
  detail::vb_check_optional(importance_weights, b, who, "importance_weights");
  RLK_EXPECTS(options.kind == td_loss_kind::mse || options.kind == td_loss_kind::huber, std::invalid_argument, who,
              ": options.kind is not a td_loss_kind value: ", int(options.kind));
  const bool huber = options.kind == td_loss_kind::huber;
  if (huber) {
    RLK_EXPECTS(std::isfinite(double(options.huber_delta)) && options.huber_delta > T(0), std::invalid_argument, who,
                ": options.huber_delta must be finite and > 0, got ", options.huber_delta);
  }
  detail::vb_check_optional(td_errors, b, who, "td_errors");
  detail::vb_check_optional(grad_q_values, b * num_actions, who, "grad_q_values");
  detail::vb_check_actions(backend, actions, num_actions, who);

  const detail::vb_sums sums = detail::sum_and_write(
      backend, b,
      detail::td_loss_term<T>{q_values.data(), actions.data(), targets.data(), importance_weights.data(), num_actions,
                              huber, options.huber_delta},
      detail::td_loss_grad_kernel<T>{q_values.data(), actions.data(), targets.data(), importance_weights.data(),
                                     num_actions, huber, options.huber_delta, T(1) / T(b), td_errors.data(),
                                     grad_q_values.data()},
      td_errors.data() != nullptr || grad_q_values.data() != nullptr, detail::vb_sums{0.0, 0.0},
      detail::vb_add_sums{});
  return {sums.first / double(b), sums.second / double(b)};
}

}  // namespace rlkernels
