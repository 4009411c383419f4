// rlkernels/losses/dqn.hpp
// DQN-family losses over batch-major arrays: one-step and n-step Q-learning targets, Double-DQN
// targets, and the TD loss (MSE or Huber, optional importance weights) with its gradient wrt the
// Q-values and the TD errors that prioritized replay needs.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/device_value.hpp"
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

/// @brief Where the device form of td_loss records the first action outside [0, num_actions) it met,
/// in backend memory. All zero means none: a zeroed buffer<action_range_flag, Backend>(backend, 1)
/// starts clean. The first failing call since the flag was last cleared is kept; read it with
/// check_action_range() when convenient (say once per iteration).
struct action_range_flag {
  std::uint64_t bad = 0;          ///< 0: every action was in range; else 1 + the batch index of the first bad action
  std::int64_t value = 0;         ///< that action
  std::uint64_t num_actions = 0;  ///< the range it broke: [0, num_actions)
};

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

/// Sentinel of first_bad_action: no bad action.
inline constexpr unsigned long long no_bad_action = ~0ull;

#if RLK_HAS_CUDA
/// The index of the first action outside [0, num_actions) into *first_bad (which starts at
/// no_bad_action): each thread keeps its smallest bad index, the warp reduces them with shuffles,
/// and one atomicMin per warp that found one. (A template so that the header defines it in every
/// translation unit without clashing at link time.)
template <class Action>
__global__ void first_bad_action_kernel(const Action* actions, std::size_t n, Action num_actions,
                                        unsigned long long* first_bad) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  unsigned long long mine = no_bad_action;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Action a = actions[i];
    if (a < 0 || a >= num_actions) {
      mine = i;  // i only grows, so this thread's first is its smallest
      break;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long other = __shfl_down_sync(0xffffffffu, mine, offset);
    mine = other < mine ? other : mine;
  }
  if ((threadIdx.x & 31u) == 0 && mine != no_bad_action) atomicMin(first_bad, mine);
}
#endif

/// Writes the index of the first action outside [0, num_actions), or no_bad_action, to *first_bad
/// in backend memory (no host wait).
template <class Backend>
void find_first_bad_action(const Backend& backend, view<const std::int32_t> actions, std::size_t num_actions,
                           unsigned long long* first_bad) {
  const std::size_t n = actions.size();
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    const device_guard guard(backend.device);
    RLK_CUDA_CHECK(cudaMemsetAsync(first_bad, 0xFF, sizeof(unsigned long long), backend.stream));
    constexpr unsigned int block = 256;
    first_bad_action_kernel<std::int32_t><<<grid_size_for(n, block), block, 0, backend.stream>>>(
        actions.data(), n, static_cast<std::int32_t>(num_actions), first_bad);
    RLK_CUDA_CHECK(cudaGetLastError());
  } else
#endif
  {
    (void)backend;
    const thrust::counting_iterator<std::size_t> first(0), last(n);
    const vb_bad_action_index bad{actions.data(), static_cast<std::int32_t>(num_actions), n};
    const std::size_t index = thrust::transform_reduce(thrust::cpp::par, first, last, bad, n, vb_min_index{});
    *first_bad = index < n ? (unsigned long long)(index) : no_bad_action;
  }
}

/// After find_first_bad_action: keeps the first failing call in the caller's flag.
struct record_bad_action_kernel {
  const unsigned long long* first_bad;
  const std::int32_t* actions;
  std::size_t num_actions;
  action_range_flag* flag;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const unsigned long long i = *first_bad;
    if (i == no_bad_action || flag->bad != 0) return;
    flag->bad = std::uint64_t(i) + 1;
    flag->value = actions[i];
    flag->num_actions = num_actions;
  }
};

/// Throws td_loss's message for a recorded bad action.
inline void throw_bad_action(const action_range_flag& f, const char* who) {
  RLK_EXPECTS(f.bad == 0, std::invalid_argument, who, ": actions[", f.bad - 1, "] = ", f.value,
              " is out of range [0, ", f.num_actions, ")");
}

/// Throws std::invalid_argument naming the first action outside [0, num_actions) (on CUDA: found on
/// the device, then one host read).
template <class Backend>
void vb_check_actions(const Backend& backend, view<const std::int32_t> actions, std::size_t num_actions,
                      const char* who) {
  if constexpr (is_host_backend_v<Backend>) {
    const std::size_t n = actions.size();
    const thrust::counting_iterator<std::size_t> first(0), last(n);
    const vb_bad_action_index bad{actions.data(), static_cast<std::int32_t>(num_actions), n};
    const std::size_t index = thrust::transform_reduce(thrust::cpp::par, first, last, bad, n, vb_min_index{});
    if (index < n) throw_bad_action(action_range_flag{index + 1, actions[index], num_actions}, who);
  } else {
    backend_value<unsigned long long, Backend> first_bad(backend);
    backend_value<action_range_flag, Backend> flag(backend);
    find_first_bad_action(backend, actions, num_actions, first_bad.data());
    run_once(backend, record_bad_action_kernel{first_bad.data(), actions.data(), num_actions, flag.data()});
    throw_bad_action(flag.read(), who);
  }
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

/// @brief The statistics of td_loss(): returned by the host form, written to backend memory by the
/// device form (accumulated in double).
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
    const std::int32_t action = actions[i];
    if (action < 0 || std::size_t(action) >= num_actions) return {0.0, 0.0};  // left out (see action_range_flag)
    const T x = q_values[i * num_actions + std::size_t(action)] - targets[i];
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
    if (actions[i] < 0 || std::size_t(actions[i]) >= num_actions) {  // left out: no error, no gradient
      if (td_errors) td_errors[i] = T(0);
      if (grad)
        for (std::size_t k = 0; k < num_actions; ++k) grad[i * num_actions + k] = T(0);
      return;
    }
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

struct td_loss_finalize_kernel {
  const vb_sums* sums;
  std::size_t b;
  td_loss_result* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    *out = td_loss_result{sums->first / double(b), sums->second / double(b)};
  }
};

template <class T>
void td_loss_check_arguments(view<const T> q_values, std::size_t num_actions, view<const std::int32_t> actions,
                             view<const T> targets, view<const T> importance_weights, const td_loss_options<T>& options,
                             view<T> td_errors, view<T> grad_q_values, const char* who) {
  const std::size_t b = targets.size();
  RLK_EXPECTS(b > 0, std::invalid_argument, who, ": the batch is empty (targets has 0 elements)");
  RLK_EXPECTS(num_actions >= 1 && num_actions <= std::size_t(INT32_MAX), std::invalid_argument, who,
              ": num_actions must be in [1, 2^31), got ", num_actions);
  vb_check_input(targets, b, who, "targets");
  vb_check_input(q_values, b * num_actions, who, "q_values");
  vb_check_input(actions, b, who, "actions");
  vb_check_optional(importance_weights, b, who, "importance_weights");
  RLK_EXPECTS(options.kind == td_loss_kind::mse || options.kind == td_loss_kind::huber, std::invalid_argument, who,
              ": options.kind is not a td_loss_kind value: ", int(options.kind));
  if (options.kind == td_loss_kind::huber) {
    RLK_EXPECTS(std::isfinite(double(options.huber_delta)) && options.huber_delta > T(0), std::invalid_argument, who,
                ": options.huber_delta must be finite and > 0, got ", options.huber_delta);
  }
  vb_check_optional(td_errors, b, who, "td_errors");
  vb_check_optional(grad_q_values, b * num_actions, who, "grad_q_values");
}

}  // namespace detail

/// @brief TD loss of the taken actions' Q-values against fixed targets, with optional
/// prioritized-replay importance weights, device form: the statistics are written to `out` in
/// backend memory and nothing waits for the host:
///
///     delta_i = y_i - Q(s_i, a_i)                       (written to td_errors; rlax's sign)
///     loss    = (1/B) sum_i w_i l(Q(s_i, a_i) - y_i)     (w_i = 1 without weights)
///
/// with l from options.kind (see td_loss_kind). The weighted mean divides by B, not by sum w
/// (Schaul et al. 2016 and Dopamine/SB3-style PER: weights are already normalised by their max).
/// The gradient d loss / d Q(s_i, a) is w_i l'(Q - y) / B at a = a_i and 0 elsewhere; the targets
/// are treated as constants (no gradient flows into them). At |delta| = k both Huber branches have
/// the same value and slope (+-k), so there is no boundary convention to choose.
///
/// Actions are validated on the device: a sample whose action is outside [0, A) is left out of the
/// sums (its TD error and gradient row are 0), and when `action_flag` is given the first such
/// action is recorded there (see action_range_flag, check_action_range). Without a flag the caller
/// vouches for the actions.
/// @tparam T float or double
/// @param backend where to run; every view is in its memory
/// @param out [1] output: the loss and the mean |TD error|
/// @param q_values [B, A] Q(s_i, a), row-major
/// @param num_actions A >= 1
/// @param actions [B] int32 taken actions in [0, A)
/// @param targets [B] y_i (from q_learning_targets() or double_q_learning_targets())
/// @param importance_weights [B] w_i, or an empty view for w_i = 1
/// @param options loss kind and Huber delta
/// @param td_errors [B] output delta_i = y_i - Q(s_i, a_i) (for priorities), or an empty view to skip
/// @param grad_q_values [B, A] output d loss / d q_values, or an empty view to skip
/// @param action_flag [1] where the first out-of-range action is recorded, or an empty view
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, num_actions = 0,
///        or huber_delta <= 0 / NaN / infinite (checked on the host before anything is queued)
template <class Backend, class T>
void td_loss(const Backend& backend, view<td_loss_result> out, view<const T> q_values, std::size_t num_actions,
             view<const std::int32_t> actions, view<const T> targets, view<const T> importance_weights,
             const td_loss_options<T>& options, view<T> td_errors = {}, view<T> grad_q_values = {},
             view<action_range_flag> action_flag = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td_loss: T must be float or double");
  constexpr const char* who = "rlkernels::td_loss";
  detail::check_result_view(out.size(), out.data(), who, "out");
  detail::td_loss_check_arguments(q_values, num_actions, actions, targets, importance_weights, options, td_errors,
                                  grad_q_values, who);
  const bool check_flag = detail::check_optional(action_flag.size(), action_flag.data(), 1, who, "action_flag");
  const std::size_t b = targets.size();
  const bool huber = options.kind == td_loss_kind::huber;
  if (check_flag) {
    detail::backend_value<unsigned long long, Backend> first_bad(backend);
    detail::find_first_bad_action(backend, actions, num_actions, first_bad.data());
    detail::run_once(backend, detail::record_bad_action_kernel{first_bad.data(), actions.data(), num_actions,
                                                               action_flag.data()});
  }
  detail::backend_value<detail::vb_sums, Backend> sums(backend);
  detail::sum_and_write_into(
      backend, b,
      detail::td_loss_term<T>{q_values.data(), actions.data(), targets.data(), importance_weights.data(), num_actions,
                              huber, options.huber_delta},
      detail::td_loss_grad_kernel<T>{q_values.data(), actions.data(), targets.data(), importance_weights.data(),
                                     num_actions, huber, options.huber_delta, T(1) / T(b), td_errors.data(),
                                     grad_q_values.data()},
      td_errors.data() != nullptr || grad_q_values.data() != nullptr, detail::vb_sums{0.0, 0.0}, detail::vb_add_sums{},
      sums.data());
  detail::run_once(backend, detail::td_loss_finalize_kernel{sums.data(), b, out.data()});
}

/// @brief td_loss, host form: the actions are checked first (on CUDA on the device, then one host
/// read), then the device form runs and its statistics are read back.
/// @return the loss and the mean |TD error|
/// @throw std::invalid_argument on an empty batch, a size mismatch, a null view, num_actions = 0,
///        an action outside [0, A), or huber_delta <= 0 / NaN / infinite (checked before anything is written)
template <class Backend, class T>
td_loss_result td_loss(const Backend& backend, view<const T> q_values, std::size_t num_actions,
                       view<const std::int32_t> actions, view<const T> targets, view<const T> importance_weights,
                       const td_loss_options<T>& options, view<T> td_errors = {}, view<T> grad_q_values = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::td_loss: T must be float or double");
  constexpr const char* who = "rlkernels::td_loss";
  detail::td_loss_check_arguments(q_values, num_actions, actions, targets, importance_weights, options, td_errors,
                                  grad_q_values, who);
  detail::vb_check_actions(backend, actions, num_actions, who);
  detail::backend_value<td_loss_result, Backend> out(backend);
  td_loss(backend, out.view(), q_values, num_actions, actions, targets, importance_weights, options, td_errors,
          grad_q_values);
  return out.read();
}

/// @brief Reads an action_range_flag (one host read; on CUDA a wait) and, when it recorded an
/// out-of-range action, clears it and throws td_loss's error naming the index, the value and the
/// range.
/// @param flag [1] the flag the device form of td_loss wrote
/// @param who the name the message starts with
/// @throw std::invalid_argument if an action was out of range, or `flag` is not one element
template <class Backend>
void check_action_range(const Backend& backend, view<action_range_flag> flag, const char* who = "rlkernels::td_loss") {
  detail::check_result_view(flag.size(), flag.data(), "rlkernels::check_action_range", "flag");
  const action_range_flag f = detail::read_value(backend, flag.data());
  if (f.bad == 0) return;
  detail::memory_ops<Backend>::zero(backend, flag.data(), sizeof(action_range_flag));
  detail::throw_bad_action(f, who);
}

}  // namespace rlkernels
