// rlkernels/losses/ppo.hpp
// PPO losses on a minibatch [B]: the clipped policy surrogate (optional per-minibatch advantage
// normalisation; clip fraction and k1/k3 approximate-KL statistics), the value loss in its plain,
// CleanRL-clipped and SB3-clipped forms, and the mean-entropy bonus, each with gradients.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"
#include "distributions.hpp"

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

/// @brief What ppo_policy_loss returns (host scalars, computed in double).
struct ppo_policy_stats {
  double loss = 0;           ///< -mean(min(r A, clip(r, 1 - eps, 1 + eps) A))
  double clip_fraction = 0;  ///< mean(|r - 1| > eps)
  double approx_kl_k1 = 0;   ///< mean(old_log_prob - log_prob) = mean(-log r)
  double approx_kl_k3 = 0;   ///< mean((r - 1) - log r) (Schulman's low-variance, non-negative estimator)
};

/// @brief Form of the PPO value loss. Every form carries the factor 0.5 (rlax's and CleanRL's
/// convention); SB3's value loss is twice ours (use vf_coef 2 * 0.5 = 1 with ours to match SB3's default).
enum class value_loss_form {
  plain,         ///< 0.5 * mean((v - R)^2)
  clipped_max,   ///< CleanRL: 0.5 * mean(max((v - R)^2, (v_clip - R)^2)), v_clip = v_old + clip(v - v_old, -c, c)
  clipped_only,  ///< SB3: 0.5 * mean((v_clip - R)^2)
};

/// @brief What value_loss returns.
struct value_loss_stats {
  double loss = 0;           ///< the selected form's value
  double clip_fraction = 0;  ///< mean(|v - v_old| > c) for the clipped forms, 0 for plain
};

namespace detail {

/// Sums (in double) that a reduction produces.
struct sum4 {
  double a, b, c, d;
};
struct add_sum4 {
  RLK_HOST_DEVICE sum4 operator()(const sum4& x, const sum4& y) const {
    return sum4{x.a + y.a, x.b + y.b, x.c + y.c, x.d + y.d};
  }
};

/// Deterministic sum over [0, n) of f(i) (see detail::deterministic_sum).
template <class Backend, class F>
sum4 reduce_sum4(const Backend& backend, std::size_t n, const F& f) {
  return deterministic_sum(backend, n, f, sum4{0, 0, 0, 0}, add_sum4{});
}

template <class T>
struct load_sum {  // (x, 0, 0, 0)
  const T* x;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const { return sum4{double(x[i]), 0, 0, 0}; }
};
template <class T>
struct load_squared_deviation {  // ((x - mean)^2, 0, 0, 0)
  const T* x;
  double mean;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const {
    const double d = double(x[i]) - mean;
    return sum4{d * d, 0, 0, 0};
  }
};

/// One sample of the clipped surrogate: its term -min(r A, clip(r) A), clipped flag, -log r,
/// (r - 1) - log r, and d(term)/d(log_prob).
template <class T>
struct ppo_sample {
  const T* log_probs;
  const T* old_log_probs;
  const T* advantages;
  T adv_mean;
  T adv_inv_scale;  // 1 / (std + 1e-8), or 1 without normalisation
  T clip_eps;

  RLK_HOST_DEVICE T evaluate(std::size_t i, T& grad, bool& clipped, T& log_ratio, T& ratio) const {
    const T a = (advantages[i] - adv_mean) * adv_inv_scale;
    log_ratio = log_probs[i] - old_log_probs[i];
    ratio = std::exp(log_ratio);
    const T lo = T(1) - clip_eps, hi = T(1) + clip_eps;
    const bool inside = ratio >= lo && ratio <= hi;  // closed interval: clip passes the gradient
    const T clipped_ratio = ratio < lo ? lo : (ratio > hi ? hi : ratio);
    const T unclipped_term = ratio * a, clipped_term = clipped_ratio * a;
    // min picks the unclipped term on ties; a tie with r outside the interval needs a = 0 (grad 0).
    const bool take_unclipped = unclipped_term <= clipped_term;
    grad = (take_unclipped || inside) ? -a * ratio : T(0);
    clipped = std::fabs(ratio - T(1)) > clip_eps;
    return -(take_unclipped ? unclipped_term : clipped_term);
  }
};

template <class T>
struct ppo_stats_kernel {
  ppo_sample<T> s;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const {
    T grad, log_ratio, ratio;
    bool clipped;
    const T term = s.evaluate(i, grad, clipped, log_ratio, ratio);
    return sum4{double(term), clipped ? 1.0 : 0.0, -double(log_ratio), (double(ratio) - 1.0) - double(log_ratio)};
  }
};

/// ppo_stats_kernel and ppo_grad_kernel in one evaluation (the host's single pass).
template <class T>
struct ppo_stats_and_grad_kernel {
  ppo_sample<T> s;
  T inv_b;
  T* grad;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const {
    T g, log_ratio, ratio;
    bool clipped;
    const T term = s.evaluate(i, g, clipped, log_ratio, ratio);
    grad[i] = g * inv_b;
    return sum4{double(term), clipped ? 1.0 : 0.0, -double(log_ratio), (double(ratio) - 1.0) - double(log_ratio)};
  }
};

template <class T>
struct ppo_grad_kernel {
  ppo_sample<T> s;
  T inv_b;
  T* grad;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    T g, log_ratio, ratio;
    bool clipped;
    s.evaluate(i, g, clipped, log_ratio, ratio);
    grad[i] = g * inv_b;
  }
};

template <class T>
struct value_sample {
  const T* values;
  const T* returns;
  const T* old_values;
  T clip;
  value_loss_form form;

  /// 0.5 * (selected squared error); grad = d/dv of it; clipped = |v - v_old| > c.
  RLK_HOST_DEVICE T evaluate(std::size_t i, T& grad, bool& clipped) const {
    const T v = values[i], r = returns[i];
    const T e = v - r;
    if (form == value_loss_form::plain) {
      grad = e;
      clipped = false;
      return T(0.5) * e * e;
    }
    const T dv = v - old_values[i];
    const bool inside = dv >= -clip && dv <= clip;  // closed interval, as torch.clamp
    clipped = !inside;
    const T vc = old_values[i] + (dv < -clip ? -clip : (dv > clip ? clip : dv));
    const T ec = vc - r;
    const T grad_clipped = inside ? ec : T(0);
    if (form == value_loss_form::clipped_only) {
      grad = grad_clipped;
      return T(0.5) * ec * ec;
    }
    // clipped_max: the unclipped branch on ties (then ec = e or the gradients agree).
    if (e * e >= ec * ec) {
      grad = e;
      return T(0.5) * e * e;
    }
    grad = grad_clipped;
    return T(0.5) * ec * ec;
  }
};

template <class T>
struct value_stats_kernel {
  value_sample<T> s;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const {
    T grad;
    bool clipped;
    const T term = s.evaluate(i, grad, clipped);
    return sum4{double(term), clipped ? 1.0 : 0.0, 0, 0};
  }
};

template <class T>
struct value_grad_kernel {
  value_sample<T> s;
  T inv_b;
  T* grad;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    T g;
    bool clipped;
    s.evaluate(i, g, clipped);
    grad[i] = g * inv_b;
  }
};

template <class T>
struct load_entropy {
  const T* entropy;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const { return sum4{double(entropy[i]), 0, 0, 0}; }
};

}  // namespace detail

/// @brief PPO's clipped surrogate policy loss (Schulman et al. 2017) on a minibatch of B samples:
///
///     r_i = exp(log_probs_i - old_log_probs_i)
///     A_i = normalize ? (adv_i - mean(adv)) / (std(adv, ddof = 1) + 1e-8) : adv_i
///     loss = -mean_i min(r_i A_i, clip(r_i, 1 - eps, 1 + eps) A_i)
///
/// Gradient convention: clip passes the gradient on the closed interval [1 - eps, 1 + eps] (like
/// torch.clamp), so at r exactly 1 +/- eps both branches agree: d loss / d log_probs_i = -A_i r_i / B
/// unless the clipped branch is selected with r outside the interval, where it is 0. The advantage
/// normalisation is a constant for gradients (advantages are not differentiated). Statistics are
/// reduced in double in a fixed order (deterministic run to run).
/// @param backend where to run; every view is in its memory
/// @param log_probs [B] log pi(a|s) under the current policy
/// @param old_log_probs [B] log pi_old(a|s) from the rollout
/// @param advantages [B]
/// @param clip_eps clip epsilon, in (0, 1)
/// @param normalize_advantages per-minibatch normalisation as SB3 and CleanRL (needs B >= 2)
/// @param grad_log_probs [B] output d loss / d log_probs (includes 1/B), or empty
/// @return loss, clip fraction and the k1/k3 approximate KL(old || new)
/// @throw std::invalid_argument on a size mismatch, a null view, B = 0, B < 2 with normalisation,
/// or clip_eps outside (0, 1)
template <class Backend, class T>
ppo_policy_stats ppo_policy_loss(const Backend& backend, view<const detail::type_identity_t<T>> log_probs,
                                 view<const detail::type_identity_t<T>> old_log_probs,
                                 view<const detail::type_identity_t<T>> advantages, T clip_eps,
                                 bool normalize_advantages, view<T> grad_log_probs = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::ppo_policy_loss: T must be float or double");
  constexpr const char* who = "rlkernels::ppo_policy_loss";
  const std::size_t b = log_probs.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": log_probs is empty");
  detail::check_view_size(log_probs.size(), log_probs.data(), b, who, "log_probs");
  detail::check_view_size(old_log_probs.size(), old_log_probs.data(), b, who, "old_log_probs");
  detail::check_view_size(advantages.size(), advantages.data(), b, who, "advantages");
  detail::check_optional(grad_log_probs.size(), grad_log_probs.data(), b, who, "grad_log_probs");
  RLK_EXPECTS(clip_eps > T(0) && clip_eps < T(1), std::invalid_argument, who, ": clip_eps must be in (0, 1), got ",
              clip_eps);
  RLK_EXPECTS(!normalize_advantages || b >= 2, std::invalid_argument, who,
              ": normalize_advantages needs at least 2 samples (std with ddof 1), got ", b);
  T mean = T(0), inv_scale = T(1);
  if (normalize_advantages) {
    const double m = detail::reduce_sum4(backend, b, detail::load_sum<T>{advantages.data()}).a / double(b);
    const double ss = detail::reduce_sum4(backend, b, detail::load_squared_deviation<T>{advantages.data(), m}).a;
    mean = T(m);
    inv_scale = T(1.0 / (std::sqrt(ss / double(b - 1)) + 1e-8));
  }
  const detail::ppo_sample<T> s{log_probs.data(), old_log_probs.data(), advantages.data(), mean, inv_scale, clip_eps};
  detail::sum4 sums;
  if (is_host_backend_v<Backend> && grad_log_probs.data()) {  // one pass: the loss and its gradient
    sums = detail::reduce_sum4(backend, b, detail::ppo_stats_and_grad_kernel<T>{s, T(1) / T(b), grad_log_probs.data()});
  } else {
    sums = detail::sum_and_write(backend, b, detail::ppo_stats_kernel<T>{s},
                                 detail::ppo_grad_kernel<T>{s, T(1) / T(b), grad_log_probs.data()},
                                 grad_log_probs.data() != nullptr, detail::sum4{0, 0, 0, 0}, detail::add_sum4{});
  }
  const double n = double(b);
  return ppo_policy_stats{sums.a / n, sums.b / n, sums.c / n, sums.d / n};
}

/// @brief PPO value loss in the selected form (see value_loss_form; all carry the factor 0.5):
///
///     plain:        0.5 * mean((v - R)^2)
///     clipped_max:  0.5 * mean(max((v - R)^2, (v_clip - R)^2))     (CleanRL, clip_vloss = True)
///     clipped_only: 0.5 * mean((v_clip - R)^2)                      (SB3 with clip_range_vf)
///     v_clip = v_old + clip(v - v_old, -c, c)
///
/// Gradient wrt values: d/dv of the selected squared error / B; clip passes the gradient on the
/// closed interval |v - v_old| <= c, and max takes the unclipped branch on ties.
/// @param values [B] predicted V(s) (differentiated)
/// @param returns [B] targets R
/// @param old_values [B] V(s) at rollout time (clipped forms; may be empty for plain)
/// @param form which loss
/// @param clip c >= 0 (ignored for plain)
/// @param grad_values [B] output d loss / d values (includes 1/B), or empty
/// @throw std::invalid_argument on a size mismatch, a null required view, B = 0 or c < 0 / NaN
template <class Backend, class T>
value_loss_stats value_loss(const Backend& backend, view<const detail::type_identity_t<T>> values,
                            view<const detail::type_identity_t<T>> returns,
                            view<const detail::type_identity_t<T>> old_values, value_loss_form form, T clip,
                            view<T> grad_values = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::value_loss: T must be float or double");
  constexpr const char* who = "rlkernels::value_loss";
  const std::size_t b = values.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": values is empty");
  detail::check_view_size(values.size(), values.data(), b, who, "values");
  detail::check_view_size(returns.size(), returns.data(), b, who, "returns");
  RLK_EXPECTS(form == value_loss_form::plain || form == value_loss_form::clipped_max ||
                  form == value_loss_form::clipped_only,
              std::invalid_argument, who, ": unknown form ", int(form));
  if (form != value_loss_form::plain) {
    detail::check_view_size(old_values.size(), old_values.data(), b, who, "old_values");
    RLK_EXPECTS(clip >= T(0), std::invalid_argument, who, ": clip must be >= 0, got ", clip);
  }
  detail::check_optional(grad_values.size(), grad_values.data(), b, who, "grad_values");
  const detail::value_sample<T> s{values.data(), returns.data(), old_values.data(), clip, form};
  const detail::sum4 sums = detail::sum_and_write(
      backend, b, detail::value_stats_kernel<T>{s}, detail::value_grad_kernel<T>{s, T(1) / T(b), grad_values.data()},
      grad_values.data() != nullptr, detail::sum4{0, 0, 0, 0}, detail::add_sum4{});
  return value_loss_stats{sums.a / double(b), sums.b / double(b)};
}

/// @brief Entropy bonus of a categorical policy: returns mean_i H_i (over legal actions, see
/// categorical_entropy) and writes d mean(H) / d logits (includes 1/B). The loss term is
/// -ent_coef * this; scale the gradient accordingly.
/// @param entropy [B] scratch/output of the per-row entropies (needed for the deterministic mean)
/// @param grad_logits [B, A] output, or empty
/// @throw std::invalid_argument as categorical_entropy, or B = 0
template <class Backend, class T>
double categorical_mean_entropy(const Backend& backend, const categorical_view<T>& dist, view<T> entropy,
                                view<T> grad_logits = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::categorical_mean_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::categorical_mean_entropy";
  const std::size_t b = detail::check_categorical(dist, who);
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty");
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_logits.size(), grad_logits.data(), b * dist.num_actions, who, "grad_logits");
  for_each_index(backend, b,
                 detail::categorical_entropy_kernel<T>{dist.num_actions, dist.logits.data(), dist.mask.data(),
                                                       entropy.data(), grad_logits.data(), nullptr, T(1) / T(b)});
  return detail::reduce_sum4(backend, b, detail::load_entropy<T>{entropy.data()}).a / double(b);
}

/// @brief Entropy bonus of a diagonal Gaussian policy: returns mean_i H_i (see gaussian_entropy;
/// the tanh-squashed policy has no closed form, use -mean log-prob instead) and writes
/// d mean(H) / d log_std (1/B inside the clamp, 0 outside).
/// @param entropy [B] scratch/output of the per-row entropies
/// @param grad_log_std [B, D] output, or empty
/// @throw std::invalid_argument as gaussian_entropy, or B = 0
template <class Backend, class T>
double gaussian_mean_entropy(const Backend& backend, const gaussian_view<T>& dist, view<T> entropy,
                             view<T> grad_log_std = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gaussian_mean_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::gaussian_mean_entropy";
  const std::size_t b = detail::check_gaussian(dist, who);
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty");
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  for_each_index(backend, b,
                 detail::gaussian_entropy_kernel<T>{dist, entropy.data(), grad_log_std.data(), nullptr, T(1) / T(b)});
  return detail::reduce_sum4(backend, b, detail::load_entropy<T>{entropy.data()}).a / double(b);
}

}  // namespace rlkernels
