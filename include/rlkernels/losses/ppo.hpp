// rlkernels/losses/ppo.hpp
// PPO losses on a minibatch [B]: the clipped policy surrogate (optional per-minibatch advantage
// normalisation; clip fraction and k1/k3 approximate-KL statistics), the value loss in its plain,
// CleanRL-clipped and SB3-clipped forms, and the mean-entropy bonus, each with gradients.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/device_value.hpp"
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

/// @brief What ppo_policy_loss returns (host form) or writes to backend memory (device form);
/// computed in double.
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

/// @brief What value_loss returns (host form) or writes to backend memory (device form).
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
struct load_squared_deviation {  // ((x - mean)^2, 0, 0, 0), the mean read from backend memory
  const T* x;
  const double* mean;
  RLK_HOST_DEVICE sum4 operator()(std::size_t i) const {
    const double d = double(x[i]) - *mean;
    return sum4{d * d, 0, 0, 0};
  }
};

/// Backend memory of one ppo_policy_loss call: the advantage moments, the normalisation the
/// samples read, and the loss sums.
template <class T>
struct ppo_policy_scratch {
  sum4 adv_sum;
  sum4 adv_squared_deviation;
  double adv_mean;
  T adv_norm[2];  // {T(mean), T(1 / (std + 1e-8))}
  sum4 sums;
};

template <class T>
struct ppo_adv_mean_kernel {  // mean = sum / B
  ppo_policy_scratch<T>* s;
  std::size_t b;
  RLK_HOST_DEVICE void operator()(std::size_t) const { s->adv_mean = s->adv_sum.a / double(b); }
};

template <class T>
struct ppo_adv_scale_kernel {  // the normalisation the samples read: (mean, 1 / (std(ddof 1) + 1e-8))
  ppo_policy_scratch<T>* s;
  std::size_t b;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    s->adv_norm[0] = T(s->adv_mean);
    s->adv_norm[1] = T(1.0 / (std::sqrt(s->adv_squared_deviation.a / double(b - 1)) + 1e-8));
  }
};

template <class T>
struct ppo_policy_finalize_kernel {
  const sum4* sums;
  std::size_t b;
  ppo_policy_stats* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double n = double(b);
    *out = ppo_policy_stats{sums->a / n, sums->b / n, sums->c / n, sums->d / n};
  }
};

struct value_loss_finalize_kernel {
  const sum4* sums;
  std::size_t b;
  value_loss_stats* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    *out = value_loss_stats{sums->a / double(b), sums->b / double(b)};
  }
};

struct mean_entropy_finalize_kernel {
  const sum4* sums;
  std::size_t b;
  double* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const { *out = sums->a / double(b); }
};

/// One sample of the clipped surrogate: its term -min(r A, clip(r) A), clipped flag, -log r,
/// (r - 1) - log r, and d(term)/d(log_prob).
template <class T>
struct ppo_sample {
  const T* log_probs;
  const T* old_log_probs;
  const T* advantages;
  const T* adv_norm;  // {mean, 1 / (std + 1e-8)} in backend memory, or null without normalisation
  T clip_eps;

  RLK_HOST_DEVICE T evaluate(std::size_t i, T& grad, bool& clipped, T& log_ratio, T& ratio) const {
    const T adv_mean = adv_norm ? adv_norm[0] : T(0);
    const T adv_inv_scale = adv_norm ? adv_norm[1] : T(1);
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

/// @brief PPO's clipped surrogate policy loss (Schulman et al. 2017) on a minibatch of B samples,
/// device form: the statistics are written to `out` in backend memory and nothing waits for the
/// host (on CUDA every step is queued on the backend's stream; the advantage normalisation is read
/// from device memory by the kernels that use it):
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
/// @param out [1] output: loss, clip fraction and the k1/k3 approximate KL(old || new)
/// @param log_probs [B] log pi(a|s) under the current policy
/// @param old_log_probs [B] log pi_old(a|s) from the rollout
/// @param advantages [B]
/// @param clip_eps clip epsilon, in (0, 1)
/// @param normalize_advantages per-minibatch normalisation as SB3 and CleanRL (needs B >= 2)
/// @param grad_log_probs [B] output d loss / d log_probs (includes 1/B), or empty
/// @throw std::invalid_argument on a size mismatch, a null view, B = 0, B < 2 with normalisation,
/// or clip_eps outside (0, 1) (checked on the host before anything is queued)
template <class Backend, class T>
void ppo_policy_loss(const Backend& backend, view<ppo_policy_stats> out,
                     view<const detail::type_identity_t<T>> log_probs,
                     view<const detail::type_identity_t<T>> old_log_probs,
                     view<const detail::type_identity_t<T>> advantages, T clip_eps, bool normalize_advantages,
                     view<T> grad_log_probs = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::ppo_policy_loss: T must be float or double");
  constexpr const char* who = "rlkernels::ppo_policy_loss";
  const std::size_t b = log_probs.size();
  detail::check_result_view(out.size(), out.data(), who, "out");
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": log_probs is empty");
  detail::check_view_size(log_probs.size(), log_probs.data(), b, who, "log_probs");
  detail::check_view_size(old_log_probs.size(), old_log_probs.data(), b, who, "old_log_probs");
  detail::check_view_size(advantages.size(), advantages.data(), b, who, "advantages");
  detail::check_optional(grad_log_probs.size(), grad_log_probs.data(), b, who, "grad_log_probs");
  RLK_EXPECTS(clip_eps > T(0) && clip_eps < T(1), std::invalid_argument, who, ": clip_eps must be in (0, 1), got ",
              clip_eps);
  RLK_EXPECTS(!normalize_advantages || b >= 2, std::invalid_argument, who,
              ": normalize_advantages needs at least 2 samples (std with ddof 1), got ", b);
  detail::backend_value<detail::ppo_policy_scratch<T>, Backend> scratch(backend);
  detail::ppo_policy_scratch<T>* sc = scratch.data();
  const detail::sum4 zero{0, 0, 0, 0};
  if (normalize_advantages) {
    detail::deterministic_sum_into(backend, b, detail::load_sum<T>{advantages.data()}, zero, detail::add_sum4{},
                                   &sc->adv_sum);
    detail::run_once(backend, detail::ppo_adv_mean_kernel<T>{sc, b});
    detail::deterministic_sum_into(backend, b, detail::load_squared_deviation<T>{advantages.data(), &sc->adv_mean},
                                   zero, detail::add_sum4{}, &sc->adv_squared_deviation);
    detail::run_once(backend, detail::ppo_adv_scale_kernel<T>{sc, b});
  }
  const detail::ppo_sample<T> s{log_probs.data(), old_log_probs.data(), advantages.data(),
                                normalize_advantages ? sc->adv_norm : nullptr, clip_eps};
  if (is_host_backend_v<Backend> && grad_log_probs.data()) {  // one pass: the loss and its gradient
    detail::deterministic_sum_into(backend, b,
                                   detail::ppo_stats_and_grad_kernel<T>{s, T(1) / T(b), grad_log_probs.data()}, zero,
                                   detail::add_sum4{}, &sc->sums);
  } else {
    detail::sum_and_write_into(backend, b, detail::ppo_stats_kernel<T>{s},
                               detail::ppo_grad_kernel<T>{s, T(1) / T(b), grad_log_probs.data()},
                               grad_log_probs.data() != nullptr, zero, detail::add_sum4{}, &sc->sums);
  }
  detail::run_once(backend, detail::ppo_policy_finalize_kernel<T>{&sc->sums, b, out.data()});
}

/// @brief ppo_policy_loss, host form: the device form into backend memory, then read back (one
/// host wait on CUDA; the same bits as the device form's statistics on every backend).
/// @return loss, clip fraction and the k1/k3 approximate KL(old || new)
/// @throw std::invalid_argument as the device form
template <class Backend, class T>
ppo_policy_stats ppo_policy_loss(const Backend& backend, view<const detail::type_identity_t<T>> log_probs,
                                 view<const detail::type_identity_t<T>> old_log_probs,
                                 view<const detail::type_identity_t<T>> advantages, T clip_eps,
                                 bool normalize_advantages, view<T> grad_log_probs = {}) {
  detail::backend_value<ppo_policy_stats, Backend> out(backend);
  ppo_policy_loss(backend, out.view(), log_probs, old_log_probs, advantages, clip_eps, normalize_advantages,
                  grad_log_probs);
  return out.read();
}

/// @brief PPO value loss in the selected form (see value_loss_form; all carry the factor 0.5),
/// device form (the statistics are written to `out` in backend memory, no host wait):
///
///     plain:        0.5 * mean((v - R)^2)
///     clipped_max:  0.5 * mean(max((v - R)^2, (v_clip - R)^2))     (CleanRL, clip_vloss = True)
///     clipped_only: 0.5 * mean((v_clip - R)^2)                      (SB3 with clip_range_vf)
///     v_clip = v_old + clip(v - v_old, -c, c)
///
/// Gradient wrt values: d/dv of the selected squared error / B; clip passes the gradient on the
/// closed interval |v - v_old| <= c, and max takes the unclipped branch on ties.
/// @param out [1] output: the loss and the value clip fraction
/// @param values [B] predicted V(s) (differentiated)
/// @param returns [B] targets R
/// @param old_values [B] V(s) at rollout time (clipped forms; may be empty for plain)
/// @param form which loss
/// @param clip c >= 0 (ignored for plain)
/// @param grad_values [B] output d loss / d values (includes 1/B), or empty
/// @throw std::invalid_argument on a size mismatch, a null required view, B = 0 or c < 0 / NaN
template <class Backend, class T>
void value_loss(const Backend& backend, view<value_loss_stats> out, view<const detail::type_identity_t<T>> values,
                view<const detail::type_identity_t<T>> returns, view<const detail::type_identity_t<T>> old_values,
                value_loss_form form, T clip, view<T> grad_values = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::value_loss: T must be float or double");
  constexpr const char* who = "rlkernels::value_loss";
  const std::size_t b = values.size();
  detail::check_result_view(out.size(), out.data(), who, "out");
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
  detail::backend_value<detail::sum4, Backend> sums(backend);
  detail::sum_and_write_into(backend, b, detail::value_stats_kernel<T>{s},
                             detail::value_grad_kernel<T>{s, T(1) / T(b), grad_values.data()},
                             grad_values.data() != nullptr, detail::sum4{0, 0, 0, 0}, detail::add_sum4{}, sums.data());
  detail::run_once(backend, detail::value_loss_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief value_loss, host form: the device form, then read back (one host wait on CUDA).
/// @return the loss and the value clip fraction
template <class Backend, class T>
value_loss_stats value_loss(const Backend& backend, view<const detail::type_identity_t<T>> values,
                            view<const detail::type_identity_t<T>> returns,
                            view<const detail::type_identity_t<T>> old_values, value_loss_form form, T clip,
                            view<T> grad_values = {}) {
  detail::backend_value<value_loss_stats, Backend> out(backend);
  value_loss(backend, out.view(), values, returns, old_values, form, clip, grad_values);
  return out.read();
}

/// @brief Entropy bonus of a categorical policy, device form: writes mean_i H_i (over legal
/// actions, see categorical_entropy) to `out` in backend memory and d mean(H) / d logits (includes
/// 1/B). The loss term is -ent_coef * this; scale the gradient accordingly.
/// @param out [1] output: the mean entropy (double)
/// @param entropy [B] scratch/output of the per-row entropies (needed for the deterministic mean)
/// @param grad_logits [B, A] output, or empty
/// @throw std::invalid_argument as categorical_entropy, or B = 0
template <class Backend, class T>
void categorical_mean_entropy(const Backend& backend, view<double> out, const categorical_view<T>& dist,
                              view<T> entropy, view<T> grad_logits = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::categorical_mean_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::categorical_mean_entropy";
  detail::check_result_view(out.size(), out.data(), who, "out");
  const std::size_t b = detail::check_categorical(dist, who);
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty");
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_logits.size(), grad_logits.data(), b * dist.num_actions, who, "grad_logits");
  for_each_index(backend, b,
                 detail::categorical_entropy_kernel<T>{dist.num_actions, dist.logits.data(), dist.mask.data(),
                                                       entropy.data(), grad_logits.data(), nullptr, T(1) / T(b)});
  detail::backend_value<detail::sum4, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::load_entropy<T>{entropy.data()}, detail::sum4{0, 0, 0, 0},
                                 detail::add_sum4{}, sums.data());
  detail::run_once(backend, detail::mean_entropy_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief categorical_mean_entropy, host form: returns mean_i H_i (one host wait on CUDA).
template <class Backend, class T>
double categorical_mean_entropy(const Backend& backend, const categorical_view<T>& dist, view<T> entropy,
                                view<T> grad_logits = {}) {
  detail::backend_value<double, Backend> out(backend);
  categorical_mean_entropy(backend, out.view(), dist, entropy, grad_logits);
  return out.read();
}

/// @brief Entropy bonus of a diagonal Gaussian policy, device form: writes mean_i H_i (see
/// gaussian_entropy; the tanh-squashed policy has no closed form, use -mean log-prob instead) to
/// `out` in backend memory and d mean(H) / d log_std (1/B inside the clamp, 0 outside).
/// @param out [1] output: the mean entropy (double)
/// @param entropy [B] scratch/output of the per-row entropies
/// @param grad_log_std [B, D] output, or empty
/// @throw std::invalid_argument as gaussian_entropy, or B = 0
template <class Backend, class T>
void gaussian_mean_entropy(const Backend& backend, view<double> out, const gaussian_view<T>& dist, view<T> entropy,
                           view<T> grad_log_std = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gaussian_mean_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::gaussian_mean_entropy";
  detail::check_result_view(out.size(), out.data(), who, "out");
  const std::size_t b = detail::check_gaussian(dist, who);
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty");
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  for_each_index(backend, b,
                 detail::gaussian_entropy_kernel<T>{dist, entropy.data(), grad_log_std.data(), nullptr, T(1) / T(b)});
  detail::backend_value<detail::sum4, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::load_entropy<T>{entropy.data()}, detail::sum4{0, 0, 0, 0},
                                 detail::add_sum4{}, sums.data());
  detail::run_once(backend, detail::mean_entropy_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief gaussian_mean_entropy, host form: returns mean_i H_i (one host wait on CUDA).
template <class Backend, class T>
double gaussian_mean_entropy(const Backend& backend, const gaussian_view<T>& dist, view<T> entropy,
                             view<T> grad_log_std = {}) {
  detail::backend_value<double, Backend> out(backend);
  gaussian_mean_entropy(backend, out.view(), dist, entropy, grad_log_std);
  return out.read();
}

}  // namespace rlkernels
