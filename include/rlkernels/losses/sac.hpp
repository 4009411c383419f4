// rlkernels/losses/sac.hpp
// Soft actor-critic losses (Haarnoja et al. 2018) over quantities a network already produced:
// the twin-critic soft target, the twin-critic MSE loss, the actor loss and the temperature loss
// (both common forms), each with gradients wrt its inputs.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/device_value.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "dqn.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

namespace detail {

/// y[i] = r[i] + discount(i) * (min(q1[i], q2[i]) - alpha * log_probs[i]); log_probs may be null
/// (then the entropy term is absent: TD3's target).
template <class T>
struct twin_target_kernel {
  const T* rewards;
  const std::uint8_t* terminated;
  const T* discounts;
  const T* q1;
  const T* q2;
  const T* log_probs;
  T gamma;
  T alpha;
  T* targets;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    T v = q1[i] < q2[i] ? q1[i] : q2[i];
    if (log_probs) v = v - alpha * log_probs[i];
    targets[i] = rewards[i] + vb_discount(discounts, terminated, gamma, i) * v;
  }
};

template <class T>
struct twin_critic_term {
  const T* q1;
  const T* q2;
  const T* targets;
  RLK_HOST_DEVICE vb_sums operator()(std::size_t i) const {
    const double d1 = double(q1[i]) - double(targets[i]);
    const double d2 = double(q2[i]) - double(targets[i]);
    return {d1 * d1, d2 * d2};
  }
};

template <class T>
struct twin_critic_grad_kernel {
  const T* q1;
  const T* q2;
  const T* targets;
  T scale;  // 2 * scale / B
  T* grad_q1;
  T* grad_q2;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    if (grad_q1) grad_q1[i] = scale * (q1[i] - targets[i]);
    if (grad_q2) grad_q2[i] = scale * (q2[i] - targets[i]);
  }
};

template <class T>
struct sac_actor_term {
  const T* log_probs;
  const T* q1;
  const T* q2;
  T alpha;
  RLK_HOST_DEVICE vb_sums operator()(std::size_t i) const {
    const T q = q1[i] < q2[i] ? q1[i] : q2[i];
    return {double(alpha) * double(log_probs[i]) - double(q), double(log_probs[i])};
  }
};

/// d/dq of -min(q1, q2) / B: to the smaller one, split in halves on a tie (PyTorch's torch.minimum).
template <class T>
struct min_q_grad_kernel {
  const T* q1;
  const T* q2;
  T neg_inv_batch;  // -1 / B (or -coefficient / B)
  T* grad_q1;
  T* grad_q2;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T g1 = q1[i] < q2[i] ? neg_inv_batch : (q1[i] == q2[i] ? T(0.5) * neg_inv_batch : T(0));
    const T g2 = q2[i] < q1[i] ? neg_inv_batch : (q1[i] == q2[i] ? T(0.5) * neg_inv_batch : T(0));
    if (grad_q1) grad_q1[i] = g1;
    if (grad_q2) grad_q2[i] = g2;
  }
};

/// The gradients of SAC's actor loss: alpha / B for every log-prob, and min_q_grad_kernel's.
template <class T>
struct sac_actor_grad_kernel {
  T alpha_over_batch;
  T* grad_log_probs;  // null: skip
  min_q_grad_kernel<T> min_q;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    if (grad_log_probs) grad_log_probs[i] = alpha_over_batch;
    min_q(i);
  }
};

template <class T>
struct vb_fill_kernel {
  T value;
  T* out;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value; }
};

template <class T>
struct sum_log_probs_term {
  const T* log_probs;
  RLK_HOST_DEVICE vb_sums operator()(std::size_t i) const { return {double(log_probs[i]), 0.0}; }
};

}  // namespace detail

/// @brief SAC critic targets with twin target critics and the entropy term:
///
///     y[i] = r[i] + d[i] * (1 - terminated[i]) * (min(Q1_t(s', a'), Q2_t(s', a')) - alpha * log pi(a'|s'))
///
/// with a' ~ pi(.|s') sampled by the caller and d[i] = discounts[i] when given, else gamma.
/// @tparam T float or double
/// @param backend where to run; every view is in its memory
/// @param rewards [B] rewards (n-step: discounted sums, with discounts = gamma^m)
/// @param terminated [B] uint8 0/1, 1 where s' is terminal
/// @param q1_next_target [B] Q1_target(s', a')
/// @param q2_next_target [B] Q2_target(s', a')
/// @param next_log_probs [B] log pi(a'|s')
/// @param gamma discount in [0, 1], used where `discounts` is empty
/// @param alpha entropy temperature, finite and >= 0
/// @param targets [B] output y
/// @param discounts [B] per-sample discounts, or an empty view
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, gamma outside
///        [0, 1], or alpha negative / NaN / infinite
template <class Backend, class T>
void sac_critic_targets(const Backend& backend, view<const T> rewards, view<const std::uint8_t> terminated,
                        view<const T> q1_next_target, view<const T> q2_next_target, view<const T> next_log_probs,
                        T gamma, T alpha, view<T> targets, view<const T> discounts = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_critic_targets: T must be float or double");
  constexpr const char* who = "rlkernels::sac_critic_targets";
  detail::vb_check_target_inputs(rewards, terminated, discounts, gamma, targets, who);
  const std::size_t b = rewards.size();
  detail::vb_check_input(q1_next_target, b, who, "q1_next_target");
  detail::vb_check_input(q2_next_target, b, who, "q2_next_target");
  detail::vb_check_input(next_log_probs, b, who, "next_log_probs");
  detail::vb_check_finite(double(alpha), who, "alpha");
  RLK_EXPECTS(alpha >= T(0), std::invalid_argument, who, ": alpha must be >= 0, got ", alpha);
  for_each_index(backend, b,
                 detail::twin_target_kernel<T>{rewards.data(), terminated.data(), discounts.data(),
                                               q1_next_target.data(), q2_next_target.data(), next_log_probs.data(),
                                               gamma, alpha, targets.data()});
}

/// @brief The statistics of twin_critic_loss(): returned by the host form, written to backend
/// memory by the device form (accumulated in double).
struct twin_critic_loss_result {
  double loss = 0;     ///< scale * (q1_loss + q2_loss)
  double q1_loss = 0;  ///< mean((Q1 - y)^2)
  double q2_loss = 0;  ///< mean((Q2 - y)^2)
};

namespace detail {
struct twin_critic_finalize_kernel {
  const vb_sums* sums;
  std::size_t b;
  double scale;
  twin_critic_loss_result* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    twin_critic_loss_result r;
    r.q1_loss = sums->first / double(b);
    r.q2_loss = sums->second / double(b);
    r.loss = scale * (r.q1_loss + r.q2_loss);
    *out = r;
  }
};
}  // namespace detail

/// @brief Twin-critic loss against fixed targets (SAC and TD3), device form (the statistics are
/// written to `out` in backend memory, no host wait):
///
///     loss = scale * (mean_i (Q1_i - y_i)^2 + mean_i (Q2_i - y_i)^2)
///
/// scale = 0.5 is Stable-Baselines3's SAC (0.5 * sum of F.mse_loss); scale = 1 is CleanRL's SAC
/// and TD3 and SB3's TD3. Gradients: d loss / d Q1_i = 2 scale (Q1_i - y_i) / B (likewise Q2);
/// the targets are constants.
/// @param backend where to run; every view is in its memory
/// @param out [1] output: the loss and the two MSEs
/// @param q1 [B] Q1(s, a)
/// @param q2 [B] Q2(s, a)
/// @param targets [B] y
/// @param scale the factor in front of the sum, finite and > 0
/// @param grad_q1 [B] output d loss / d q1, or an empty view to skip
/// @param grad_q2 [B] output d loss / d q2, or an empty view to skip
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, or a bad scale
template <class Backend, class T>
void twin_critic_loss(const Backend& backend, view<twin_critic_loss_result> out, view<const T> q1, view<const T> q2,
                      view<const T> targets, T scale, view<T> grad_q1 = {}, view<T> grad_q2 = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::twin_critic_loss: T must be float or double");
  constexpr const char* who = "rlkernels::twin_critic_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  const std::size_t b = targets.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (targets has 0 elements)");
  detail::vb_check_input(targets, b, who, "targets");
  detail::vb_check_input(q1, b, who, "q1");
  detail::vb_check_input(q2, b, who, "q2");
  detail::vb_check_finite(double(scale), who, "scale");
  RLK_EXPECTS(scale > T(0), std::invalid_argument, who, ": scale must be > 0, got ", scale);
  detail::vb_check_optional(grad_q1, b, who, "grad_q1");
  detail::vb_check_optional(grad_q2, b, who, "grad_q2");
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::twin_critic_term<T>{q1.data(), q2.data(), targets.data()},
                                 detail::vb_sums{0.0, 0.0}, detail::vb_add_sums{}, sums.data());
  if (grad_q1.data() || grad_q2.data()) {
    for_each_index(backend, b,
                   detail::twin_critic_grad_kernel<T>{q1.data(), q2.data(), targets.data(), T(2) * scale / T(b),
                                                      grad_q1.data(), grad_q2.data()});
  }
  detail::run_once(backend, detail::twin_critic_finalize_kernel{sums.data(), b, double(scale), out.data()});
}

/// @brief twin_critic_loss, host form: the device form, then read back (one host wait on CUDA).
/// @return the loss and the two MSEs
template <class Backend, class T>
twin_critic_loss_result twin_critic_loss(const Backend& backend, view<const T> q1, view<const T> q2,
                                         view<const T> targets, T scale, view<T> grad_q1 = {},
                                         view<T> grad_q2 = {}) {
  detail::backend_value<twin_critic_loss_result, Backend> out(backend);
  twin_critic_loss(backend, out.view(), q1, q2, targets, scale, grad_q1, grad_q2);
  return out.read();
}

/// @brief The statistics of sac_actor_loss() (host form's return value, device form's output).
struct sac_actor_loss_result {
  double loss = 0;     ///< mean(alpha * log_pi - min(Q1, Q2))
  double entropy = 0;  ///< -mean(log_pi), the sample estimate of the policy entropy
};

namespace detail {
struct sac_actor_finalize_kernel {
  const vb_sums* sums;
  std::size_t b;
  sac_actor_loss_result* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    *out = sac_actor_loss_result{sums->first / double(b), -sums->second / double(b)};
  }
};
}  // namespace detail

/// @brief SAC actor loss over the reparameterised actions a ~ pi(.|s), device form (the
/// statistics are written to `out` in backend memory, no host wait):
///
///     loss = (1/B) sum_i (alpha * log pi(a_i|s_i) - min(Q1(s_i, a_i), Q2(s_i, a_i)))
///
/// Gradients (alpha is a constant here, as in every implementation: it is detached):
/// d loss / d log_pi_i = alpha / B; d loss / d Q1_i = -1/B where Q1_i < Q2_i, 0 where Q1_i > Q2_i,
/// and -1/(2B) to each on a tie (PyTorch's torch.minimum/torch.min(a, b) rule, which is also the
/// central-difference derivative). Chain them through the critics (wrt the action) and the policy.
/// @param backend where to run; every view is in its memory
/// @param out [1] output: the loss and the entropy estimate
/// @param log_probs [B] log pi(a_i|s_i) (for tanh-Gaussian policies including the squashing correction)
/// @param q1 [B] Q1(s_i, a_i)
/// @param q2 [B] Q2(s_i, a_i)
/// @param alpha temperature, finite and >= 0
/// @param grad_log_probs [B] output, or an empty view to skip
/// @param grad_q1 [B] output, or an empty view to skip
/// @param grad_q2 [B] output, or an empty view to skip
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, or a bad alpha
template <class Backend, class T>
void sac_actor_loss(const Backend& backend, view<sac_actor_loss_result> out, view<const T> log_probs,
                    view<const T> q1, view<const T> q2, T alpha, view<T> grad_log_probs = {}, view<T> grad_q1 = {},
                    view<T> grad_q2 = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_actor_loss: T must be float or double");
  constexpr const char* who = "rlkernels::sac_actor_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  const std::size_t b = log_probs.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (log_probs has 0 elements)");
  detail::vb_check_input(log_probs, b, who, "log_probs");
  detail::vb_check_input(q1, b, who, "q1");
  detail::vb_check_input(q2, b, who, "q2");
  detail::vb_check_finite(double(alpha), who, "alpha");
  RLK_EXPECTS(alpha >= T(0), std::invalid_argument, who, ": alpha must be >= 0, got ", alpha);
  detail::vb_check_optional(grad_log_probs, b, who, "grad_log_probs");
  detail::vb_check_optional(grad_q1, b, who, "grad_q1");
  detail::vb_check_optional(grad_q2, b, who, "grad_q2");
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::sum_and_write_into(
      backend, b, detail::sac_actor_term<T>{log_probs.data(), q1.data(), q2.data(), alpha},
      detail::sac_actor_grad_kernel<T>{
          alpha / T(b), grad_log_probs.data(),
          detail::min_q_grad_kernel<T>{q1.data(), q2.data(), T(-1) / T(b), grad_q1.data(), grad_q2.data()}},
      grad_log_probs.data() != nullptr || grad_q1.data() != nullptr || grad_q2.data() != nullptr,
      detail::vb_sums{0.0, 0.0}, detail::vb_add_sums{}, sums.data());
  detail::run_once(backend, detail::sac_actor_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief sac_actor_loss, host form: the device form, then read back (one host wait on CUDA).
/// @return the loss and the entropy estimate
template <class Backend, class T>
sac_actor_loss_result sac_actor_loss(const Backend& backend, view<const T> log_probs, view<const T> q1,
                                     view<const T> q2, T alpha, view<T> grad_log_probs = {}, view<T> grad_q1 = {},
                                     view<T> grad_q2 = {}) {
  detail::backend_value<sac_actor_loss_result, Backend> out(backend);
  sac_actor_loss(backend, out.view(), log_probs, q1, q2, alpha, grad_log_probs, grad_q1, grad_q2);
  return out.read();
}

/// @brief The two common forms of SAC's temperature loss.
enum class sac_temperature_form {
  /// loss = -mean(log_alpha * (log_pi + target_entropy)): Stable-Baselines3 and CleanRL (the
  /// parameter is log alpha; the gradient is the same as form alpha's with alpha replaced by 1).
  log_alpha,
  /// loss = -mean(alpha * (log_pi + target_entropy)), alpha = exp(log_alpha): the SAC paper's
  /// J(alpha) (Haarnoja et al. 2018b) and e.g. the authors' softlearning and Spinning Up forks.
  alpha
};

/// @brief Result of sac_temperature_loss(): the loss and its gradient wrt both parameterisations
/// (host form's return value, device form's output).
struct sac_temperature_loss_result {
  double loss = 0;            ///< the loss of the selected form
  double grad_log_alpha = 0;  ///< d loss / d log_alpha
  double grad_alpha = 0;      ///< d loss / d alpha (= grad_log_alpha / alpha)
  double mean_log_prob = 0;   ///< mean(log_pi)
};

/// @brief Default SAC target entropy: -|A| (-action_dim), as in the paper, SB3 and CleanRL.
/// @param action_dim the action dimension, >= 1
/// @throw std::invalid_argument if action_dim is 0
inline double sac_target_entropy(std::size_t action_dim) {
  RLK_EXPECTS(action_dim >= 1, std::invalid_argument, "rlkernels::sac_target_entropy: action_dim must be >= 1, got ",
              action_dim);
  return -double(action_dim);
}

namespace detail {
/// The temperature loss from the sum of log-probs. log_alpha is read from `log_alpha_at` (backend
/// memory; alpha = exp on the device) when it is not null, else taken from `log_alpha` with
/// `alpha` = exp(log_alpha) computed on the host.
template <class T>
struct sac_temperature_finalize_kernel {
  const vb_sums* sums;
  std::size_t b;
  const T* log_alpha_at;
  T log_alpha;
  double alpha;
  double target_entropy;
  sac_temperature_form form;
  sac_temperature_loss_result* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double la = log_alpha_at ? double(*log_alpha_at) : double(log_alpha);
    const double a = log_alpha_at ? std::exp(la) : alpha;
    sac_temperature_loss_result r;
    r.mean_log_prob = sums->first / double(b);
    const double m = r.mean_log_prob + target_entropy;
    if (form == sac_temperature_form::log_alpha) {
      r.loss = -la * m;
      r.grad_log_alpha = -m;
      r.grad_alpha = -m / a;
    } else {
      r.loss = -a * m;
      r.grad_alpha = -m;
      r.grad_log_alpha = -a * m;
    }
    *out = r;
  }
};

template <class T>
std::size_t sac_temperature_check(view<const T> log_probs, T target_entropy, sac_temperature_form form,
                                  const char* who) {
  const std::size_t b = log_probs.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (log_probs has 0 elements)");
  vb_check_input(log_probs, b, who, "log_probs");
  vb_check_finite(double(target_entropy), who, "target_entropy");
  RLK_EXPECTS(form == sac_temperature_form::log_alpha || form == sac_temperature_form::alpha, std::invalid_argument,
              who, ": form is not a sac_temperature_form value: ", int(form));
  return b;
}
}  // namespace detail

/// @brief SAC temperature loss, in the form selected (see sac_temperature_form); log_pi is detached.
/// Device form: the result is written to `out` in backend memory, no host wait.
/// With m = mean_i(log pi(a_i|s_i) + target_entropy):
/// - log_alpha form: loss = -log_alpha * m, d loss / d log_alpha = -m, d loss / d alpha = -m / alpha;
/// - alpha form:     loss = -alpha * m,     d loss / d alpha = -m,     d loss / d log_alpha = -alpha * m.
/// @param backend where to run; `log_probs` is in its memory
/// @param out [1] output: the loss, both gradients and mean(log_pi)
/// @param log_probs [B] log pi(a_i|s_i) of fresh actions
/// @param log_alpha the current log temperature, finite (alpha = exp(log_alpha) is computed on the host)
/// @param target_entropy the target entropy (sac_target_entropy(action_dim) by default), finite
/// @param form which loss
/// @throw std::invalid_argument on an empty batch, a null view, or a non-finite parameter
template <class Backend, class T>
void sac_temperature_loss(const Backend& backend, view<sac_temperature_loss_result> out, view<const T> log_probs,
                          T log_alpha, T target_entropy,
                          sac_temperature_form form = sac_temperature_form::log_alpha) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_temperature_loss: T must be float or double");
  constexpr const char* who = "rlkernels::sac_temperature_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  detail::vb_check_finite(double(log_alpha), who, "log_alpha");
  const std::size_t b = detail::sac_temperature_check(log_probs, target_entropy, form, who);
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::sum_log_probs_term<T>{log_probs.data()}, detail::vb_sums{0.0, 0.0},
                                 detail::vb_add_sums{}, sums.data());
  detail::run_once(backend, detail::sac_temperature_finalize_kernel<T>{sums.data(), b, nullptr, log_alpha,
                                                                       std::exp(double(log_alpha)),
                                                                       double(target_entropy), form, out.data()});
}

/// @brief sac_temperature_loss, device form with log_alpha in backend memory (e.g. the parameter an
/// optimiser updates there): alpha = exp(log_alpha) is computed on the device, so its last bit may
/// differ from the host's exp on CUDA. A non-finite log_alpha gives non-finite results (it cannot be
/// checked without reading it).
/// @param log_alpha [1] the current log temperature, in backend memory
/// @throw std::invalid_argument on an empty batch, a null or mis-sized view, or a non-finite target_entropy
template <class Backend, class T>
void sac_temperature_loss(const Backend& backend, view<sac_temperature_loss_result> out, view<const T> log_probs,
                          view<const detail::type_identity_t<T>> log_alpha, T target_entropy,
                          sac_temperature_form form = sac_temperature_form::log_alpha) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_temperature_loss: T must be float or double");
  constexpr const char* who = "rlkernels::sac_temperature_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  detail::check_result_view(log_alpha.size(), log_alpha.data(), who, "log_alpha");
  const std::size_t b = detail::sac_temperature_check(log_probs, target_entropy, form, who);
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::deterministic_sum_into(backend, b, detail::sum_log_probs_term<T>{log_probs.data()}, detail::vb_sums{0.0, 0.0},
                                 detail::vb_add_sums{}, sums.data());
  detail::run_once(backend, detail::sac_temperature_finalize_kernel<T>{sums.data(), b, log_alpha.data(), T(0), 0.0,
                                                                       double(target_entropy), form, out.data()});
}

/// @brief sac_temperature_loss, host form: the device form, then read back (one host wait on CUDA).
/// @return the loss, both gradients and mean(log_pi)
/// @throw std::invalid_argument on an empty batch, a null view, or a non-finite parameter
template <class Backend, class T>
sac_temperature_loss_result sac_temperature_loss(const Backend& backend, view<const T> log_probs, T log_alpha,
                                                 T target_entropy,
                                                 sac_temperature_form form = sac_temperature_form::log_alpha) {
  detail::backend_value<sac_temperature_loss_result, Backend> out(backend);
  sac_temperature_loss(backend, out.view(), log_probs, log_alpha, target_entropy, form);
  return out.read();
}

}  // namespace rlkernels
