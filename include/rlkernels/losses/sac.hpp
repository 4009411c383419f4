// rlkernels/losses/sac.hpp
// Soft actor-critic losses (Haarnoja et al. 2018) over quantities a network already produced:
// the twin-critic soft target, the twin-critic MSE loss, the actor loss and the temperature loss
// (both common forms), each with gradients wrt its inputs.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
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

/// @brief Scalars returned by twin_critic_loss() (host values, accumulated in double).
struct twin_critic_loss_result {
  double loss = 0;     ///< scale * (q1_loss + q2_loss)
  double q1_loss = 0;  ///< mean((Q1 - y)^2)
  double q2_loss = 0;  ///< mean((Q2 - y)^2)
};

/// @brief Twin-critic loss against fixed targets (SAC and TD3):
///
///     loss = scale * (mean_i (Q1_i - y_i)^2 + mean_i (Q2_i - y_i)^2)
///
/// scale = 0.5 is Stable-Baselines3's SAC (0.5 * sum of F.mse_loss); scale = 1 is CleanRL's SAC
/// and TD3 and SB3's TD3. Gradients: d loss / d Q1_i = 2 scale (Q1_i - y_i) / B (likewise Q2);
/// the targets are constants.
/// @param backend where to run; every view is in its memory
/// @param q1 [B] Q1(s, a)
/// @param q2 [B] Q2(s, a)
/// @param targets [B] y
/// @param scale the factor in front of the sum, finite and > 0
/// @param grad_q1 [B] output d loss / d q1, or an empty view to skip
/// @param grad_q2 [B] output d loss / d q2, or an empty view to skip
/// @return the loss and the two MSEs
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, or a bad scale
template <class Backend, class T>
twin_critic_loss_result twin_critic_loss(const Backend& backend, view<const T> q1, view<const T> q2,
                                         view<const T> targets, T scale, view<T> grad_q1 = {},
                                         view<T> grad_q2 = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::twin_critic_loss: T must be float or double");
  constexpr const char* who = "rlkernels::twin_critic_loss";
  const std::size_t b = targets.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (targets has 0 elements)");
  detail::vb_check_input(targets, b, who, "targets");
  detail::vb_check_input(q1, b, who, "q1");
  detail::vb_check_input(q2, b, who, "q2");
  detail::vb_check_finite(double(scale), who, "scale");
  RLK_EXPECTS(scale > T(0), std::invalid_argument, who, ": scale must be > 0, got ", scale);
  detail::vb_check_optional(grad_q1, b, who, "grad_q1");
  detail::vb_check_optional(grad_q2, b, who, "grad_q2");
  const detail::vb_sums sums =
      detail::vb_reduce(backend, b, detail::twin_critic_term<T>{q1.data(), q2.data(), targets.data()});
  if (grad_q1.data() || grad_q2.data()) {
    for_each_index(backend, b,
                   detail::twin_critic_grad_kernel<T>{q1.data(), q2.data(), targets.data(), T(2) * scale / T(b),
                                                      grad_q1.data(), grad_q2.data()});
  }
  twin_critic_loss_result out;
  out.q1_loss = sums.first / double(b);
  out.q2_loss = sums.second / double(b);
  out.loss = double(scale) * (out.q1_loss + out.q2_loss);
  return out;
}

/// @brief Scalars returned by sac_actor_loss().
struct sac_actor_loss_result {
  double loss = 0;     ///< mean(alpha * log_pi - min(Q1, Q2))
  double entropy = 0;  ///< -mean(log_pi), the sample estimate of the policy entropy
};

/// @brief SAC actor loss over the reparameterised actions a ~ pi(.|s):
///
///     loss = (1/B) sum_i (alpha * log pi(a_i|s_i) - min(Q1(s_i, a_i), Q2(s_i, a_i)))
///
/// Gradients (alpha is a constant here, as in every implementation: it is detached):
/// d loss / d log_pi_i = alpha / B; d loss / d Q1_i = -1/B where Q1_i < Q2_i, 0 where Q1_i > Q2_i,
/// and -1/(2B) to each on a tie (PyTorch's torch.minimum/torch.min(a, b) rule, which is also the
/// central-difference derivative). Chain them through the critics (wrt the action) and the policy.
/// @param backend where to run; every view is in its memory
/// @param log_probs [B] log pi(a_i|s_i) (for tanh-Gaussian policies including the squashing correction)
/// @param q1 [B] Q1(s_i, a_i)
/// @param q2 [B] Q2(s_i, a_i)
/// @param alpha temperature, finite and >= 0
/// @param grad_log_probs [B] output, or an empty view to skip
/// @param grad_q1 [B] output, or an empty view to skip
/// @param grad_q2 [B] output, or an empty view to skip
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, or a bad alpha
template <class Backend, class T>
sac_actor_loss_result sac_actor_loss(const Backend& backend, view<const T> log_probs, view<const T> q1,
                                     view<const T> q2, T alpha, view<T> grad_log_probs = {}, view<T> grad_q1 = {},
                                     view<T> grad_q2 = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_actor_loss: T must be float or double");
  constexpr const char* who = "rlkernels::sac_actor_loss";
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
  const detail::vb_sums sums = detail::sum_and_write(
      backend, b, detail::sac_actor_term<T>{log_probs.data(), q1.data(), q2.data(), alpha},
      detail::sac_actor_grad_kernel<T>{
          alpha / T(b), grad_log_probs.data(),
          detail::min_q_grad_kernel<T>{q1.data(), q2.data(), T(-1) / T(b), grad_q1.data(), grad_q2.data()}},
      grad_log_probs.data() != nullptr || grad_q1.data() != nullptr || grad_q2.data() != nullptr,
      detail::vb_sums{0.0, 0.0}, detail::vb_add_sums{});
  return {sums.first / double(b), -sums.second / double(b)};
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

/// @brief Result of sac_temperature_loss(): the loss and its gradient wrt both parameterisations.
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

/// @brief SAC temperature loss, in the form selected (see sac_temperature_form); log_pi is detached.
/// With m = mean_i(log pi(a_i|s_i) + target_entropy):
/// - log_alpha form: loss = -log_alpha * m, d loss / d log_alpha = -m, d loss / d alpha = -m / alpha;
/// - alpha form:     loss = -alpha * m,     d loss / d alpha = -m,     d loss / d log_alpha = -alpha * m.
/// @param backend where to run; `log_probs` is in its memory
/// @param log_probs [B] log pi(a_i|s_i) of fresh actions
/// @param log_alpha the current log temperature, finite
/// @param target_entropy the target entropy (sac_target_entropy(action_dim) by default), finite
/// @param form which loss
/// @throw std::invalid_argument on an empty batch, a null view, or a non-finite parameter
template <class Backend, class T>
sac_temperature_loss_result sac_temperature_loss(const Backend& backend, view<const T> log_probs, T log_alpha,
                                                 T target_entropy,
                                                 sac_temperature_form form = sac_temperature_form::log_alpha) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sac_temperature_loss: T must be float or double");
  constexpr const char* who = "rlkernels::sac_temperature_loss";
  const std::size_t b = log_probs.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (log_probs has 0 elements)");
  detail::vb_check_input(log_probs, b, who, "log_probs");
  detail::vb_check_finite(double(log_alpha), who, "log_alpha");
  detail::vb_check_finite(double(target_entropy), who, "target_entropy");
  RLK_EXPECTS(form == sac_temperature_form::log_alpha || form == sac_temperature_form::alpha, std::invalid_argument,
              who, ": form is not a sac_temperature_form value: ", int(form));
  const detail::vb_sums sums = detail::vb_reduce(backend, b, detail::sum_log_probs_term<T>{log_probs.data()});
  sac_temperature_loss_result out;
  out.mean_log_prob = sums.first / double(b);
  const double m = out.mean_log_prob + double(target_entropy);
  const double alpha = std::exp(double(log_alpha));
  if (form == sac_temperature_form::log_alpha) {
    out.loss = -double(log_alpha) * m;
    out.grad_log_alpha = -m;
    out.grad_alpha = -m / alpha;
  } else {
    out.loss = -alpha * m;
    out.grad_alpha = -m;
    out.grad_log_alpha = -alpha * m;
  }
  return out;
}

}  // namespace rlkernels
