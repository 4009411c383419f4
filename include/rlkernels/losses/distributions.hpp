// rlkernels/losses/distributions.hpp
// Policy distributions for losses: categorical (logits, optional action mask), diagonal Gaussian and
// tanh-squashed Gaussian (mean, clamped log-std). Per-row host/device functions and batched wrappers
// for log-prob, entropy (each with gradients) and sampling with the library's counter-based RNG.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

namespace detail {
/// log(2 pi) / 2 in T.
template <class T>
constexpr T half_log_two_pi = T(0.91893853320467274178032973640561764);
/// log(2) in T.
template <class T>
constexpr T log_two = T(0.69314718055994530941723212145817657);

// NAN and HUGE_VAL rather than std::numeric_limits, whose members are host-only under nvcc.
template <class T>
RLK_INLINE T quiet_nan() {
  return T(NAN);
}
template <class T>
RLK_INLINE T infinity() {
  return T(HUGE_VAL);
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Scalar helpers
// ------------------------------------------------------------------------------------------------

/// @brief softplus(x) = log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) (no overflow).
template <class T>
RLK_INLINE T softplus(T x) {
  return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(x)));
}

/// @brief log(1 - tanh(u)^2) computed as 2 * (log 2 - u - softplus(-2u)): exact for every finite u
/// (the naive form is -inf once tanh(u) rounds to +-1, near |u| = 9 in float, 19 in double).
template <class T>
RLK_INLINE T log1m_tanh_sq(T u) {
  return T(2) * (detail::log_two<T> - u - softplus(T(-2) * u));
}

/// @brief Clamps a log-std to [lo, hi]; `inside` is set to 1 where lo <= x <= hi (the closed interval,
/// like torch.clamp's gradient), 0 outside, and the gradient wrt the raw log-std is multiplied by it.
template <class T>
RLK_INLINE T clamp_log_std(T x, T lo, T hi, T& inside) {
  inside = (x >= lo && x <= hi) ? T(1) : T(0);
  return x < lo ? lo : (x > hi ? hi : x);
}

// ------------------------------------------------------------------------------------------------
// Categorical: per-row functions
// ------------------------------------------------------------------------------------------------

/// @brief The softmax normaliser of one row over its legal entries, split for accuracy: the max
/// legal logit m and log(sum_j exp(z_j - m)), so log p_j = (z_j - m) - that (z_j - m is exact for
/// nearby logits, even of magnitude 1e4 in float).
/// @param logits [A] the row's logits  @param mask [A] 1 = legal (nullptr: all legal)  @param A actions
/// @param max_out set to the max legal logit
/// @return log(sum exp(z - max)) (>= 0), or -inf when every entry is masked
template <class T>
RLK_HOST_DEVICE T categorical_log_normalizer(const T* logits, const std::uint8_t* mask, std::size_t A, T& max_out) {
  T m = -detail::infinity<T>();
  bool any = false;
  for (std::size_t j = 0; j < A; ++j) {
    if (mask && !mask[j]) continue;
    if (!any || logits[j] > m) m = logits[j];
    any = true;
  }
  max_out = m;
  if (!any) return -detail::infinity<T>();
  T s = T(0);
  for (std::size_t j = 0; j < A; ++j) {
    if (mask && !mask[j]) continue;
    s += std::exp(logits[j] - m);
  }
  return std::log(s);
}

/// @brief log p(action) of one categorical row, and optionally `cotangent * d log p / d logits`.
///
/// d log p_a / d z_j = [j = a] - p_j for legal j, 0 for masked j.
/// Conventions: an all-masked row gives log p = 0 and a zero gradient (the row contributes nothing);
/// a masked action in a row with legal actions gives -inf and a zero gradient; an action outside
/// [0, A) gives NaN (value and gradient), on every backend.
/// @param grad [A] output or nullptr
template <class T>
RLK_HOST_DEVICE T categorical_row_log_prob(const T* logits, const std::uint8_t* mask, std::size_t A,
                                           std::int32_t action, T* grad, T cotangent) {
  if (action < 0 || std::size_t(action) >= A) {
    if (grad)
      for (std::size_t j = 0; j < A; ++j) grad[j] = detail::quiet_nan<T>();
    return detail::quiet_nan<T>();
  }
  T m;
  const T log_z = categorical_log_normalizer(logits, mask, A, m);
  const bool all_masked = !(log_z > -detail::infinity<T>());
  const bool action_masked = mask && !mask[action];
  if (all_masked || action_masked) {
    if (grad)
      for (std::size_t j = 0; j < A; ++j) grad[j] = T(0);
    return all_masked ? T(0) : -detail::infinity<T>();
  }
  if (grad) {
    for (std::size_t j = 0; j < A; ++j) {
      if (mask && !mask[j]) {
        grad[j] = T(0);
        continue;
      }
      const T p = std::exp((logits[j] - m) - log_z);
      grad[j] = cotangent * ((std::size_t(action) == j ? T(1) : T(0)) - p);
    }
  }
  return (logits[action] - m) - log_z;
}

/// @brief Entropy H = -sum_j p_j log p_j of one categorical row over its legal entries, and
/// optionally `cotangent * dH / d logits` = -cotangent * p_j (log p_j + H) (0 for masked j).
/// An all-masked row gives H = 0 and a zero gradient.
/// @param grad [A] output or nullptr
template <class T>
RLK_HOST_DEVICE T categorical_row_entropy(const T* logits, const std::uint8_t* mask, std::size_t A, T* grad,
                                          T cotangent) {
  T m;
  const T log_z = categorical_log_normalizer(logits, mask, A, m);
  if (!(log_z > -detail::infinity<T>())) {
    if (grad)
      for (std::size_t j = 0; j < A; ++j) grad[j] = T(0);
    return T(0);
  }
  T h = T(0);
  for (std::size_t j = 0; j < A; ++j) {
    if (mask && !mask[j]) continue;
    const T log_p = (logits[j] - m) - log_z;
    h -= std::exp(log_p) * log_p;
  }
  if (grad) {
    for (std::size_t j = 0; j < A; ++j) {
      if (mask && !mask[j]) {
        grad[j] = T(0);
        continue;
      }
      const T log_p = (logits[j] - m) - log_z;
      grad[j] = -cotangent * std::exp(log_p) * (log_p + h);
    }
  }
  return h;
}

/// @brief Draws one action of a categorical row by inverse CDF from one uniform u of `gen`: the
/// first legal j with sum_{k <= j} exp(z_k - max) > u * sum_k exp(z_k - max) (the last legal action
/// if rounding leaves none). Masked actions are never drawn; an all-masked row gives -1.
template <class T>
RLK_HOST_DEVICE std::int32_t categorical_row_sample(const T* logits, const std::uint8_t* mask, std::size_t A, rng& gen) {
  T m;
  const T log_z = categorical_log_normalizer(logits, mask, A, m);
  const T u = gen.uniform<T>();
  if (!(log_z > -detail::infinity<T>())) return -1;
  T total = T(0);
  for (std::size_t j = 0; j < A; ++j)
    if (!mask || mask[j]) total += std::exp(logits[j] - m);
  const T target = u * total;
  T cumulative = T(0);
  std::int32_t last = -1;
  for (std::size_t j = 0; j < A; ++j) {
    if (mask && !mask[j]) continue;
    cumulative += std::exp(logits[j] - m);
    last = std::int32_t(j);
    if (cumulative > target) return last;
  }
  return last;
}

// ------------------------------------------------------------------------------------------------
// Diagonal Gaussian and tanh-Gaussian: per-element functions (a row's value is the sum over D)
// ------------------------------------------------------------------------------------------------

/// @brief log N(x; mean, exp(log_std)) of one element with log_std already clamped:
/// -0.5 z^2 - log_std - 0.5 log(2 pi), z = (x - mean) / std. Gradients: d/dmean = z / std,
/// d/dlog_std = z^2 - 1.
template <class T>
RLK_INLINE T gaussian_element_log_prob(T x, T mean, T log_std, T& d_mean, T& d_log_std) {
  const T inv_std = std::exp(-log_std);
  const T z = (x - mean) * inv_std;
  d_mean = z * inv_std;
  d_log_std = z * z - T(1);
  return T(-0.5) * z * z - log_std - detail::half_log_two_pi<T>;
}

/// @brief Entropy of one Gaussian element with clamped log_std: 0.5 + 0.5 log(2 pi) + log_std
/// (d/dlog_std = 1).
template <class T>
RLK_INLINE T gaussian_element_entropy(T log_std) {
  return T(0.5) + detail::half_log_two_pi<T> + log_std;
}

/// @brief Log-density contribution of one element of a reparameterised tanh-Gaussian sample,
/// u = mean + std * eps, a = center + half_range * tanh(u):
///
///     log N(u; mean, std) - log(1 - tanh(u)^2) - log(half_range)
///       = -0.5 eps^2 - log_std - 0.5 log(2 pi) - 2 (log 2 - u - softplus(-2u)) - log(half_range)
///
/// and its total derivatives with eps held fixed (the reparameterisation, as SAC's actor needs):
/// d/dmean = 2 tanh(u), d/dlog_std = -1 + 2 tanh(u) * std * eps (log_std already clamped; the
/// caller applies the clamp indicator). Stable for any finite u.
template <class T>
RLK_INLINE T tanh_gaussian_element_log_prob(T mean, T log_std, T eps, T half_range, T& d_mean, T& d_log_std) {
  const T std_ = std::exp(log_std);
  const T u = mean + std_ * eps;
  const T t = std::tanh(u);
  d_mean = T(2) * t;
  d_log_std = T(-1) + T(2) * t * std_ * eps;
  return T(-0.5) * eps * eps - log_std - detail::half_log_two_pi<T> - log1m_tanh_sq(u) - std::log(half_range);
}

/// @brief Parameters of a batch of diagonal Gaussians (or tanh-Gaussians) in backend memory.
/// Element [i, d] at i * dim + d. The log-std used is clamp(log_std, log_std_min, log_std_max);
/// gradients wrt log_std are zero where the raw value lies outside the closed interval.
template <class T>
struct gaussian_view {
  std::size_t dim = 0;          ///< D, action dimensions
  view<const T> mean;           ///< [B, D] means
  view<const T> log_std;        ///< [B, D] raw log standard deviations (clamped when used)
  T log_std_min = T(-20);       ///< lower clamp (SAC implementations' LOG_STD_MIN)
  T log_std_max = T(2);         ///< upper clamp (SAC implementations' LOG_STD_MAX)
};

/// @brief A batch of categorical distributions in backend memory.
template <class T>
struct categorical_view {
  std::size_t num_actions = 0;      ///< A
  view<const T> logits;             ///< [B, A] unnormalised log-probabilities
  view<const std::uint8_t> mask;    ///< [B, A] 1 = legal action, or an empty view: all legal
};

/// @brief Action bounds of a tanh-Gaussian policy: a = (high + low)/2 + (high - low)/2 * tanh(u).
/// Empty views mean [-1, 1] in every dimension.
template <class T>
struct action_bounds {
  view<const T> low;   ///< [D] lower bounds, or empty
  view<const T> high;  ///< [D] upper bounds (> low), or empty
};

namespace detail {

template <class T>
std::size_t check_categorical(const categorical_view<T>& c, const char* who) {
  RLK_EXPECTS(c.num_actions > 0, std::invalid_argument, who, ": num_actions must be > 0");
  RLK_EXPECTS(c.logits.size() % c.num_actions == 0 && c.logits.data() != nullptr, std::invalid_argument, who,
              ": logits must be a non-null [B, A] view; got ", c.logits.size(), " elements for A = ", c.num_actions);
  const std::size_t b = c.logits.size() / c.num_actions;
  check_optional(c.mask.size(), c.mask.data(), c.logits.size(), who, "mask");
  return b;
}

template <class T>
std::size_t check_gaussian(const gaussian_view<T>& g, const char* who) {
  RLK_EXPECTS(g.dim > 0, std::invalid_argument, who, ": dim must be > 0");
  RLK_EXPECTS(g.mean.size() % g.dim == 0 && g.mean.data() != nullptr, std::invalid_argument, who,
              ": mean must be a non-null [B, D] view; got ", g.mean.size(), " elements for D = ", g.dim);
  check_view_size(g.log_std.size(), g.log_std.data(), g.mean.size(), who, "log_std");
  RLK_EXPECTS(g.log_std_min <= g.log_std_max, std::invalid_argument, who, ": log_std_min (", g.log_std_min,
              ") must be <= log_std_max (", g.log_std_max, ") and neither NaN");
  return g.mean.size() / g.dim;
}

template <class T>
struct categorical_log_prob_kernel {
  std::size_t A;
  const T* logits;
  const std::uint8_t* mask;
  const std::int32_t* actions;
  T* log_probs;
  T* grad;
  const T* cotangent;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T c = cotangent ? cotangent[i] : T(1);
    log_probs[i] = categorical_row_log_prob(logits + i * A, mask ? mask + i * A : nullptr, A, actions[i],
                                            grad ? grad + i * A : nullptr, c);
  }
};

template <class T>
struct categorical_entropy_kernel {
  std::size_t A;
  const T* logits;
  const std::uint8_t* mask;
  T* entropy;
  T* grad;
  const T* cotangent;
  T scale;  // multiplies every cotangent (1/B for the mean entropy)
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T c = (cotangent ? cotangent[i] : T(1)) * scale;
    const T h = categorical_row_entropy(logits + i * A, mask ? mask + i * A : nullptr, A, grad ? grad + i * A : nullptr, c);
    if (entropy) entropy[i] = h;
  }
};

template <class T>
struct categorical_sample_kernel {
  std::size_t A;
  const T* logits;
  const std::uint8_t* mask;
  std::uint64_t seed;
  std::uint64_t draw;
  std::int32_t* actions;
  std::uint64_t first_row = 0;  // row i draws from stream first_row + i
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(seed, first_row + i, draw);
    actions[i] = categorical_row_sample(logits + i * A, mask ? mask + i * A : nullptr, A, gen);
  }
};

template <class T>
struct gaussian_log_prob_kernel {
  gaussian_view<T> g;
  const T* actions;
  T* log_probs;
  T* grad_mean;
  T* grad_log_std;
  const T* cotangent;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T c = cotangent ? cotangent[i] : T(1);
    T sum = T(0);
    for (std::size_t d = 0; d < g.dim; ++d) {
      const std::size_t k = i * g.dim + d;
      T inside;
      const T ls = clamp_log_std(g.log_std[k], g.log_std_min, g.log_std_max, inside);
      T dm, dls;
      sum += gaussian_element_log_prob(actions[k], g.mean[k], ls, dm, dls);
      if (grad_mean) grad_mean[k] = c * dm;
      if (grad_log_std) grad_log_std[k] = c * dls * inside;
    }
    log_probs[i] = sum;
  }
};

template <class T>
struct gaussian_entropy_kernel {
  gaussian_view<T> g;
  T* entropy;
  T* grad_log_std;
  const T* cotangent;
  T scale;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T c = (cotangent ? cotangent[i] : T(1)) * scale;
    T sum = T(0);
    for (std::size_t d = 0; d < g.dim; ++d) {
      const std::size_t k = i * g.dim + d;
      T inside;
      const T ls = clamp_log_std(g.log_std[k], g.log_std_min, g.log_std_max, inside);
      sum += gaussian_element_entropy(ls);
      if (grad_log_std) grad_log_std[k] = c * inside;
    }
    if (entropy) entropy[i] = sum;
  }
};

/// Draws eps for element k = i * D + d from rng(seed, k, draw): one block per element and draw.
template <class T>
struct gaussian_sample_kernel {
  gaussian_view<T> g;
  std::uint64_t seed;
  std::uint64_t draw;
  bool squash;
  const T* low;
  const T* high;
  T* actions;
  T* eps_out;
  std::uint64_t first_element = 0;  // element k draws from stream first_element + k
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, first_element + k, draw);
    const T eps = gen.normal<T>();
    T inside;
    const T ls = clamp_log_std(g.log_std[k], g.log_std_min, g.log_std_max, inside);
    const T u = g.mean[k] + std::exp(ls) * eps;
    if (squash) {
      const std::size_t d = k % g.dim;
      const T lo = low ? low[d] : T(-1), hi = high ? high[d] : T(1);
      actions[k] = (hi + lo) * T(0.5) + (hi - lo) * T(0.5) * std::tanh(u);
    } else {
      actions[k] = u;
    }
    if (eps_out) eps_out[k] = eps;
  }
};

template <class T>
struct tanh_gaussian_log_prob_kernel {
  gaussian_view<T> g;
  const T* eps;
  const T* low;
  const T* high;
  T* log_probs;
  T* grad_mean;
  T* grad_log_std;
  const T* cotangent;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T c = cotangent ? cotangent[i] : T(1);
    T sum = T(0);
    for (std::size_t d = 0; d < g.dim; ++d) {
      const std::size_t k = i * g.dim + d;
      T inside;
      const T ls = clamp_log_std(g.log_std[k], g.log_std_min, g.log_std_max, inside);
      const T half = (low && high) ? (high[d] - low[d]) * T(0.5) : T(1);
      T dm, dls;
      sum += tanh_gaussian_element_log_prob(g.mean[k], ls, eps[k], half, dm, dls);
      if (grad_mean) grad_mean[k] = c * dm;
      if (grad_log_std) grad_log_std[k] = c * dls * inside;
    }
    log_probs[i] = sum;
  }
};

/// Chains d(loss)/d(action) of a reparameterised tanh-Gaussian sample back to mean and log_std.
template <class T>
struct tanh_gaussian_action_backward_kernel {
  gaussian_view<T> g;
  const T* eps;
  const T* low;
  const T* high;
  const T* grad_actions;
  T* grad_mean;
  T* grad_log_std;
  bool accumulate;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t d = k % g.dim;
    T inside;
    const T ls = clamp_log_std(g.log_std[k], g.log_std_min, g.log_std_max, inside);
    const T std_ = std::exp(ls);
    const T u = g.mean[k] + std_ * eps[k];
    const T half = (low && high) ? (high[d] - low[d]) * T(0.5) : T(1);
    const T da_du = half * std::exp(log1m_tanh_sq(u));  // half * (1 - tanh(u)^2), no cancellation
    const T gm = grad_actions[k] * da_du;
    const T gl = gm * std_ * eps[k] * inside;
    if (grad_mean) grad_mean[k] = accumulate ? grad_mean[k] + gm : gm;
    if (grad_log_std) grad_log_std[k] = accumulate ? grad_log_std[k] + gl : gl;
  }
};

template <class T>
void check_bounds(const action_bounds<T>& b, std::size_t dim, const char* who) {
  const bool has_low = check_optional(b.low.size(), b.low.data(), dim, who, "bounds.low");
  const bool has_high = check_optional(b.high.size(), b.high.data(), dim, who, "bounds.high");
  RLK_EXPECTS(has_low == has_high, std::invalid_argument, who, ": give both bounds.low and bounds.high or neither");
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Batched wrappers. Gradient outputs are optional (an empty view skips them). Each gradient is the
// vector-Jacobian product with an optional per-row cotangent [B] (empty: 1 for every row), so row i
// of a gradient is cotangent[i] * d value[i] / d (row i of the input): pass dL/dlog_prob from a loss
// (for example ppo_policy_loss's grad_log_probs) to chain straight through.
// ------------------------------------------------------------------------------------------------

/// @brief log p(actions[i]) for a batch of categorical rows, with optional gradient wrt the logits.
/// See categorical_row_log_prob for the masked-row conventions (all-masked row: 0 and zero
/// gradient; masked action: -inf; action outside [0, A): NaN).
/// @param backend where to run; every view is in its memory
/// @param dist logits [B, A] and optional mask [B, A]
/// @param actions [B] int32 action indices
/// @param log_probs [B] output
/// @param grad_logits [B, A] output cotangent[i] * d log_probs[i] / d logits[i, :], or empty
/// @param cotangent [B] per-row weights of the gradient, or empty (all 1)
/// @throw std::invalid_argument on a size mismatch or a null required view
template <class Backend, class T>
void categorical_log_prob(const Backend& backend, const categorical_view<T>& dist,
                          view<const std::int32_t> actions, view<T> log_probs, view<T> grad_logits = {},
                          view<const detail::type_identity_t<T>> cotangent = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::categorical_log_prob: T must be float or double");
  constexpr const char* who = "rlkernels::categorical_log_prob";
  const std::size_t b = detail::check_categorical(dist, who);
  detail::check_view_size(actions.size(), actions.data(), b, who, "actions");
  detail::check_view_size(log_probs.size(), log_probs.data(), b, who, "log_probs");
  detail::check_optional(grad_logits.size(), grad_logits.data(), b * dist.num_actions, who, "grad_logits");
  detail::check_optional(cotangent.size(), cotangent.data(), b, who, "cotangent");
  for_each_index(backend, b,
                 detail::categorical_log_prob_kernel<T>{dist.num_actions, dist.logits.data(), dist.mask.data(),
                                                        actions.data(), log_probs.data(), grad_logits.data(),
                                                        cotangent.data()});
}

/// @brief Entropy of each categorical row (over legal actions; an all-masked row gives 0 and a zero
/// gradient), with optional gradient wrt the logits.
/// @param entropy [B] output
/// @param grad_logits [B, A] output cotangent[i] * d entropy[i] / d logits[i, :], or empty
/// @param cotangent [B] per-row weights, or empty (all 1)
/// @throw std::invalid_argument on a size mismatch or a null required view
template <class Backend, class T>
void categorical_entropy(const Backend& backend, const categorical_view<T>& dist, view<T> entropy,
                         view<T> grad_logits = {}, view<const detail::type_identity_t<T>> cotangent = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::categorical_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::categorical_entropy";
  const std::size_t b = detail::check_categorical(dist, who);
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_logits.size(), grad_logits.data(), b * dist.num_actions, who, "grad_logits");
  detail::check_optional(cotangent.size(), cotangent.data(), b, who, "cotangent");
  for_each_index(backend, b,
                 detail::categorical_entropy_kernel<T>{dist.num_actions, dist.logits.data(), dist.mask.data(),
                                                       entropy.data(), grad_logits.data(), cotangent.data(), T(1)});
}

/// @brief Samples one action per categorical row by inverse CDF; row i uses one uniform from
/// rng(seed, i, draw), so the result is a pure function of (seed, draw, row) on every backend and
/// thread count. Increment `draw` between calls for fresh samples. Masked actions are never drawn;
/// an all-masked row gives -1.
/// @param actions [B] int32 output
/// @param first_row the rows' place in a larger batch: row i draws from rng(seed, first_row + i,
///        draw), so a batch split over processes (data-parallel training) draws what one process
///        drawing the whole batch would
/// @throw std::invalid_argument on a size mismatch or a null view
template <class Backend, class T>
void categorical_sample(const Backend& backend, const categorical_view<T>& dist, std::uint64_t seed,
                        std::uint64_t draw, view<std::int32_t> actions, std::uint64_t first_row = 0) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::categorical_sample: T must be float or double");
  constexpr const char* who = "rlkernels::categorical_sample";
  const std::size_t b = detail::check_categorical(dist, who);
  detail::check_view_size(actions.size(), actions.data(), b, who, "actions");
  for_each_index(backend, b,
                 detail::categorical_sample_kernel<T>{dist.num_actions, dist.logits.data(), dist.mask.data(), seed,
                                                      draw, actions.data(), first_row});
}

/// @brief log N(actions[i]; mean[i], diag(exp(2 * clamped log_std[i]))) summed over D, with
/// optional gradients: d/dmean = (a - mean) / std^2, d/dlog_std = z^2 - 1 inside the clamp, 0 outside.
/// @param dist mean [B, D], log_std [B, D] and the clamp
/// @param actions [B, D]
/// @param log_probs [B] output
/// @param grad_mean [B, D] output (times cotangent[i]), or empty
/// @param grad_log_std [B, D] output (times cotangent[i]), or empty
/// @param cotangent [B] per-row weights, or empty (all 1)
/// @throw std::invalid_argument on a size mismatch, a null required view, or log_std_min > log_std_max
template <class Backend, class T>
void gaussian_log_prob(const Backend& backend, const gaussian_view<T>& dist, view<const detail::type_identity_t<T>> actions,
                       view<T> log_probs, view<T> grad_mean = {}, view<T> grad_log_std = {},
                       view<const detail::type_identity_t<T>> cotangent = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gaussian_log_prob: T must be float or double");
  constexpr const char* who = "rlkernels::gaussian_log_prob";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_view_size(actions.size(), actions.data(), b * dist.dim, who, "actions");
  detail::check_view_size(log_probs.size(), log_probs.data(), b, who, "log_probs");
  detail::check_optional(grad_mean.size(), grad_mean.data(), b * dist.dim, who, "grad_mean");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  detail::check_optional(cotangent.size(), cotangent.data(), b, who, "cotangent");
  for_each_index(backend, b,
                 detail::gaussian_log_prob_kernel<T>{dist, actions.data(), log_probs.data(), grad_mean.data(),
                                                     grad_log_std.data(), cotangent.data()});
}

/// @brief Entropy of each diagonal Gaussian: sum_d (0.5 + 0.5 log(2 pi) + clamped log_std), with
/// optional gradient wrt log_std (cotangent[i] inside the clamp, 0 outside).
/// @param entropy [B] output
/// @param grad_log_std [B, D] output, or empty
/// @param cotangent [B] per-row weights, or empty (all 1)
/// @throw std::invalid_argument on a size mismatch or a null required view
template <class Backend, class T>
void gaussian_entropy(const Backend& backend, const gaussian_view<T>& dist, view<T> entropy, view<T> grad_log_std = {},
                      view<const detail::type_identity_t<T>> cotangent = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gaussian_entropy: T must be float or double");
  constexpr const char* who = "rlkernels::gaussian_entropy";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_view_size(entropy.size(), entropy.data(), b, who, "entropy");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  detail::check_optional(cotangent.size(), cotangent.data(), b, who, "cotangent");
  for_each_index(backend, b,
                 detail::gaussian_entropy_kernel<T>{dist, entropy.data(), grad_log_std.data(), cotangent.data(), T(1)});
}

/// @brief Reparameterised Gaussian sample a = mean + exp(clamped log_std) * eps, eps ~ N(0, 1).
/// Element k = i * D + d draws eps from rng(seed, k, draw) (Box-Muller), a pure function of
/// (seed, draw, k) on every backend. da/dmean = 1, da/dlog_std = std * eps (inside the clamp).
/// @param actions [B, D] output
/// @param eps [B, D] output of the standard-normal noise used, or empty
/// @param first_row the rows' place in a larger batch: element k draws from stream
///        first_row * D + k (see categorical_sample)
/// @throw std::invalid_argument on a size mismatch or a null required view
template <class Backend, class T>
void gaussian_sample(const Backend& backend, const gaussian_view<T>& dist, std::uint64_t seed, std::uint64_t draw,
                     view<T> actions, view<T> eps = {}, std::uint64_t first_row = 0) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::gaussian_sample: T must be float or double");
  constexpr const char* who = "rlkernels::gaussian_sample";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_view_size(actions.size(), actions.data(), b * dist.dim, who, "actions");
  detail::check_optional(eps.size(), eps.data(), b * dist.dim, who, "eps");
  for_each_index(backend, b * dist.dim,
                 detail::gaussian_sample_kernel<T>{dist, seed, draw, false, nullptr, nullptr, actions.data(), eps.data(),
                                                   first_row * dist.dim});
}

/// @brief Reparameterised tanh-Gaussian sample: u = mean + exp(clamped log_std) * eps (the same
/// eps draws as gaussian_sample for the same seed and draw), a = (high + low)/2 + (high - low)/2 * tanh(u).
/// @param bounds per-dimension [low, high] (empty: [-1, 1])
/// @param actions [B, D] output
/// @param eps [B, D] output of the noise (needed by tanh_gaussian_log_prob and the backward pass), or empty
/// @param first_row the rows' place in a larger batch: row i draws as row first_row + i would
///        (a data-parallel rank's, or one part of a sharded or accumulated batch)
/// @throw std::invalid_argument on a size mismatch, a null required view, or only one bound given
template <class Backend, class T>
void tanh_gaussian_sample(const Backend& backend, const gaussian_view<T>& dist, const action_bounds<T>& bounds,
                          std::uint64_t seed, std::uint64_t draw, view<T> actions, view<T> eps = {},
                          std::uint64_t first_row = 0) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::tanh_gaussian_sample: T must be float or double");
  constexpr const char* who = "rlkernels::tanh_gaussian_sample";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_bounds(bounds, dist.dim, who);
  detail::check_view_size(actions.size(), actions.data(), b * dist.dim, who, "actions");
  detail::check_optional(eps.size(), eps.data(), b * dist.dim, who, "eps");
  for_each_index(backend, b * dist.dim,
                 detail::gaussian_sample_kernel<T>{dist, seed, draw, true, bounds.low.data(), bounds.high.data(),
                                                   actions.data(), eps.data(), first_row * dist.dim});
}

/// @brief log pi(a | s) of reparameterised tanh-Gaussian samples given their noise eps:
///
///     log_probs[i] = sum_d [ -0.5 eps^2 - log_std - 0.5 log(2 pi) - log(1 - tanh(u)^2) - log((high - low)/2) ]
///
/// with u = mean + std * eps and log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) (stable for any
/// |u|). The gradients are total derivatives through u with eps fixed, as SAC's actor loss needs:
/// d/dmean = 2 tanh(u), d/dlog_std = -1 + 2 tanh(u) std eps (0 outside the clamp).
/// @param eps [B, D] the noise returned by tanh_gaussian_sample
/// @param log_probs [B] output
/// @param grad_mean, grad_log_std [B, D] outputs (times cotangent[i]), or empty
/// @param cotangent [B] per-row weights, or empty (all 1)
/// @throw std::invalid_argument on a size mismatch, a null required view, or only one bound given
template <class Backend, class T>
void tanh_gaussian_log_prob(const Backend& backend, const gaussian_view<T>& dist, const action_bounds<T>& bounds,
                            view<const detail::type_identity_t<T>> eps, view<T> log_probs, view<T> grad_mean = {},
                            view<T> grad_log_std = {}, view<const detail::type_identity_t<T>> cotangent = {}) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::tanh_gaussian_log_prob: T must be float or double");
  constexpr const char* who = "rlkernels::tanh_gaussian_log_prob";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_bounds(bounds, dist.dim, who);
  detail::check_view_size(eps.size(), eps.data(), b * dist.dim, who, "eps");
  detail::check_view_size(log_probs.size(), log_probs.data(), b, who, "log_probs");
  detail::check_optional(grad_mean.size(), grad_mean.data(), b * dist.dim, who, "grad_mean");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  detail::check_optional(cotangent.size(), cotangent.data(), b, who, "cotangent");
  for_each_index(backend, b,
                 detail::tanh_gaussian_log_prob_kernel<T>{dist, eps.data(), bounds.low.data(), bounds.high.data(),
                                                          log_probs.data(), grad_mean.data(), grad_log_std.data(),
                                                          cotangent.data()});
}

/// @brief Backward pass of the reparameterised tanh-Gaussian action: given g = d(loss)/d(actions)
/// [B, D], writes (or adds, when `accumulate`) g * da/dmean = g * (high - low)/2 * (1 - tanh(u)^2)
/// to grad_mean and g * da/dlog_std = that * std * eps (0 outside the clamp) to grad_log_std.
/// SAC's actor: grad = this (with g = -dQ/da / B) accumulated onto alpha/B times tanh_gaussian_log_prob's.
/// @throw std::invalid_argument on a size mismatch, a null required view, or only one bound given
template <class Backend, class T>
void tanh_gaussian_action_backward(const Backend& backend, const gaussian_view<T>& dist, const action_bounds<T>& bounds,
                                   view<const detail::type_identity_t<T>> eps,
                                   view<const detail::type_identity_t<T>> grad_actions, view<T> grad_mean,
                                   view<T> grad_log_std, bool accumulate = false) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::tanh_gaussian_action_backward: T must be float or double");
  constexpr const char* who = "rlkernels::tanh_gaussian_action_backward";
  const std::size_t b = detail::check_gaussian(dist, who);
  detail::check_bounds(bounds, dist.dim, who);
  detail::check_view_size(eps.size(), eps.data(), b * dist.dim, who, "eps");
  detail::check_view_size(grad_actions.size(), grad_actions.data(), b * dist.dim, who, "grad_actions");
  detail::check_optional(grad_mean.size(), grad_mean.data(), b * dist.dim, who, "grad_mean");
  detail::check_optional(grad_log_std.size(), grad_log_std.data(), b * dist.dim, who, "grad_log_std");
  for_each_index(backend, b * dist.dim,
                 detail::tanh_gaussian_action_backward_kernel<T>{dist, eps.data(), bounds.low.data(), bounds.high.data(),
                                                                 grad_actions.data(), grad_mean.data(),
                                                                 grad_log_std.data(), accumulate});
}

}  // namespace rlkernels
