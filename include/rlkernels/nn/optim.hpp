// rlkernels/nn/optim.hpp
// Optimisers over flat parameter arrays on every backend: Adam (PyTorch's update, optionally
// AdamW-style decoupled weight decay) and SGD with momentum; the global gradient norm and
// clipping by it across several arrays (torch.nn.utils.clip_grad_norm_); a linear schedule for
// learning-rate annealing.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/device_value.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

/// @brief Adam's hyperparameters (PyTorch's defaults; CleanRL's PPO uses epsilon = 1e-5).
struct adam_params {
  double learning_rate = 3e-4;  ///< step size, >= 0
  double beta1 = 0.9;           ///< first-moment decay, in [0, 1)
  double beta2 = 0.999;         ///< second-moment decay, in [0, 1)
  double epsilon = 1e-8;        ///< added to sqrt(v_hat), > 0
  double weight_decay = 0.0;    ///< decoupled (AdamW) decay per step: p -= lr * wd * p, >= 0
};

/// @brief SGD's hyperparameters (PyTorch's SGD without dampening).
struct sgd_params {
  double learning_rate = 1e-2;  ///< step size, >= 0
  double momentum = 0.0;        ///< in [0, 1); 0 is plain SGD
  bool nesterov = false;        ///< Nesterov momentum (needs momentum > 0)
  double weight_decay = 0.0;    ///< L2 term added to the gradient, >= 0
};

namespace detail {

template <class T>
struct adam_kernel {
  T* params;
  const T* grads;
  T* m;
  T* v;
  T beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, inv_sqrt_bc2, epsilon, decay;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T g = grads[i];
    const T mi = beta1 * m[i] + one_minus_beta1 * g;
    const T vi = beta2 * v[i] + one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    T p = params[i];
    if (decay != T(0)) p -= decay * p;
    params[i] = p - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + epsilon);
  }
};

template <class T>
struct sgd_kernel {
  T* params;
  const T* grads;
  T* buf;  // momentum buffer, or null
  T lr, momentum, weight_decay;
  bool nesterov, first;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    T g = grads[i];
    if (weight_decay != T(0)) g += weight_decay * params[i];
    if (buf) {
      const T b = first ? g : momentum * buf[i] + g;
      buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    params[i] -= lr * g;
  }
};

template <class T>
struct square_term {
  const T* x;
  RLK_HOST_DEVICE double operator()(std::size_t i) const { return double(x[i]) * double(x[i]); }
};
struct plus_double {
  RLK_HOST_DEVICE double operator()(double a, double b) const { return a + b; }
};
template <class T>
struct scale_kernel {
  T* x;
  T factor;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { x[i] *= factor; }
};

inline void check_learning_rate(double lr, const char* who) {
  RLK_EXPECTS(std::isfinite(lr) && lr >= 0.0, std::invalid_argument, who, ": learning_rate must be finite and >= 0, got ",
              lr);
}

/// For checkpoints: "" for a usable learning rate, else the reason.
inline std::string learning_rate_check(const double& lr) {
  return std::isfinite(lr) && lr >= 0.0 ? std::string() : "learning rate " + std::to_string(lr) + " is not finite and >= 0";
}

template <class T>
void check_step_views(std::size_t n, view<T> params, view<const T> grads, const char* who) {
  check_view_size(params.size(), params.data(), n, who, "params");
  check_view_size(grads.size(), grads.data(), n, who, "grads");
}

}  // namespace detail

/// @brief Adam over one flat parameter array of a fixed size, with its moment estimates in backend
/// memory. The update is PyTorch's (torch.optim.Adam, or AdamW with weight_decay > 0):
///
///     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  t += 1
///     p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
///
/// Use one optimiser per array (an actor's and a critic's parameters, say), or one over a
/// concatenated array.
template <class T, class Backend>
class adam {
  static_assert(std::is_floating_point_v<T>, "rlkernels::adam<T>: T must be float or double");

 public:
  /// @brief State for `num_parameters` parameters.
  /// @throw std::invalid_argument on a bad hyperparameter; out_of_memory naming the size
  adam(Backend backend, std::size_t num_parameters, adam_params params = {})
      : backend_(backend), params_(checked(params)), m_(backend, num_parameters), v_(backend, num_parameters) {}

  /// One update with gradients `grads` (neither view may alias the other).
  /// @throw std::invalid_argument on a size mismatch or a null view; nothing changes then
  void step(view<T> params, view<const detail::type_identity_t<T>> grads) {
    constexpr const char* who = "rlkernels::adam::step";
    detail::check_step_views(size(), params, grads, who);
    ++steps_;
    const double bc1 = 1.0 - std::pow(params_.beta1, double(steps_));
    const double bc2 = 1.0 - std::pow(params_.beta2, double(steps_));
    for_each_index(detail::light_backend(backend_), size(),
                   detail::adam_kernel<T>{params.data(), grads.data(), m_.data(), v_.data(), T(params_.beta1),
                                          T(params_.beta2), T(1.0 - params_.beta1), T(1.0 - params_.beta2),
                                          T(params_.learning_rate / bc1), T(1.0 / std::sqrt(bc2)), T(params_.epsilon),
                                          T(params_.learning_rate * params_.weight_decay)});
  }
  /// The learning rate of the next steps.
  double learning_rate() const noexcept { return params_.learning_rate; }
  /// Sets the learning rate (annealing). @throw std::invalid_argument if negative or not finite
  void set_learning_rate(double lr) {
    detail::check_learning_rate(lr, "rlkernels::adam::set_learning_rate");
    params_.learning_rate = lr;
  }
  /// The hyperparameters.
  const adam_params& hyperparameters() const noexcept { return params_; }
  /// Steps taken (t).
  std::uint64_t steps() const noexcept { return steps_; }
  /// Number of parameters.
  std::size_t size() const noexcept { return m_.size(); }
  /// First moments m [P] (for saving).
  view<const T> first_moments() const noexcept { return m_.cview(); }
  /// Second moments v [P].
  view<const T> second_moments() const noexcept { return v_.cview(); }
  /// Restores saved state. @throw std::invalid_argument on size mismatch; nothing changes then
  void set_state(std::uint64_t steps, const std::vector<T>& m, const std::vector<T>& v) {
    RLK_EXPECTS(m.size() == size() && v.size() == size(), std::invalid_argument, "rlkernels::adam::set_state: got ",
                m.size(), " and ", v.size(), " moments for ", size(), " parameters");
    m_.assign(m);
    v_.assign(v);
    steps_ = steps;
  }
  /// Forgets the moments and the step count.
  void reset() {
    m_.zero();
    v_.zero();
    steps_ = 0;
  }

  /// @brief Binds the optimiser's state to a checkpoint (rlkernels::checkpoint or anything with
  /// its bind / bind_value): `prefix` + "steps", "learning_rate" (schedules change it; checked
  /// finite and >= 0 on load), "first_moments" and "second_moments". The other hyperparameters
  /// come from the constructor.
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind_value(prefix + "steps", steps_);
    c.bind_value(prefix + "learning_rate", params_.learning_rate, detail::learning_rate_check);
    c.bind(prefix + "first_moments", backend_, m_.view());
    c.bind(prefix + "second_moments", backend_, v_.view());
  }

 private:
  static adam_params checked(const adam_params& p) {
    constexpr const char* who = "rlkernels::adam";
    detail::check_learning_rate(p.learning_rate, who);
    RLK_EXPECTS(p.beta1 >= 0.0 && p.beta1 < 1.0, std::invalid_argument, who, ": beta1 must be in [0, 1), got ", p.beta1);
    RLK_EXPECTS(p.beta2 >= 0.0 && p.beta2 < 1.0, std::invalid_argument, who, ": beta2 must be in [0, 1), got ", p.beta2);
    RLK_EXPECTS(p.epsilon > 0.0 && std::isfinite(p.epsilon), std::invalid_argument, who,
                ": epsilon must be finite and > 0, got ", p.epsilon);
    RLK_EXPECTS(p.weight_decay >= 0.0 && std::isfinite(p.weight_decay), std::invalid_argument, who,
                ": weight_decay must be finite and >= 0, got ", p.weight_decay);
    return p;
  }
  Backend backend_;
  adam_params params_;
  buffer<T, Backend> m_, v_;
  std::uint64_t steps_ = 0;
};

/// @brief SGD (with optional momentum, Nesterov and L2 weight decay) over one flat array, as
/// torch.optim.SGD without dampening: b = momentum * b + g (b = g on the first step),
/// p -= lr * (nesterov ? g + momentum * b : b).
template <class T, class Backend>
class sgd {
  static_assert(std::is_floating_point_v<T>, "rlkernels::sgd<T>: T must be float or double");

 public:
  /// @throw std::invalid_argument on a bad hyperparameter
  sgd(Backend backend, std::size_t num_parameters, sgd_params params = {})
      : backend_(backend), params_(checked(params)), size_(num_parameters),
        buf_(backend, params.momentum > 0.0 ? num_parameters : 0) {}
  /// One update. @throw std::invalid_argument on a size mismatch or a null view
  void step(view<T> params, view<const detail::type_identity_t<T>> grads) {
    detail::check_step_views(size_, params, grads, "rlkernels::sgd::step");
    for_each_index(detail::light_backend(backend_), size_,
                   detail::sgd_kernel<T>{params.data(), grads.data(), buf_.empty() ? nullptr : buf_.data(),
                                         T(params_.learning_rate), T(params_.momentum), T(params_.weight_decay),
                                         params_.nesterov, steps_ == 0});
    ++steps_;
  }
  /// The learning rate of the next steps.
  double learning_rate() const noexcept { return params_.learning_rate; }
  /// Sets the learning rate. @throw std::invalid_argument if negative or not finite
  void set_learning_rate(double lr) {
    detail::check_learning_rate(lr, "rlkernels::sgd::set_learning_rate");
    params_.learning_rate = lr;
  }
  /// Steps taken.
  std::uint64_t steps() const noexcept { return steps_; }

  /// @brief Binds the optimiser's state to a checkpoint: `prefix` + "steps", "learning_rate" and
  /// "momentum" (the momentum buffer; 0 elements without momentum).
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind_value(prefix + "steps", steps_);
    c.bind_value(prefix + "learning_rate", params_.learning_rate, detail::learning_rate_check);
    c.bind(prefix + "momentum", backend_, buf_.view());
  }

 private:
  static sgd_params checked(const sgd_params& p) {
    constexpr const char* who = "rlkernels::sgd";
    detail::check_learning_rate(p.learning_rate, who);
    RLK_EXPECTS(p.momentum >= 0.0 && p.momentum < 1.0, std::invalid_argument, who, ": momentum must be in [0, 1), got ",
                p.momentum);
    RLK_EXPECTS(!p.nesterov || p.momentum > 0.0, std::invalid_argument, who, ": nesterov needs momentum > 0");
    RLK_EXPECTS(p.weight_decay >= 0.0 && std::isfinite(p.weight_decay), std::invalid_argument, who,
                ": weight_decay must be finite and >= 0, got ", p.weight_decay);
    return p;
  }
  Backend backend_;
  sgd_params params_;
  std::size_t size_;
  buffer<T, Backend> buf_;
  std::uint64_t steps_ = 0;
};

namespace detail {

/// The sums of squares of the arrays of one global_norm call, in backend memory (a larger buffer
/// is allocated for calls with more arrays).
struct global_norm_scratch {
  static constexpr std::size_t max_arrays = 8;
  double squares[max_arrays];
};

/// norm = sqrt(0 + s_0 + s_1 + ...), in argument order (the host form's order, so the same bits).
struct global_norm_finalize_kernel {
  const double* squares;
  std::size_t count;
  double* norm;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    double ss = 0.0;
    for (std::size_t k = 0; k < count; ++k) ss += squares[k];
    *norm = std::sqrt(ss);
  }
};

/// The clip factor that clip_grad_norm applies, from the norm in backend memory: max_norm /
/// (norm + 1e-6) rounded to T when the norm is finite and above max_norm; otherwise the
/// gradients are left as they are.
template <class T>
struct clip_factor {
  T factor;
  bool apply;
};

template <class T>
struct clip_factor_kernel {
  const double* norm;
  double max_norm;
  clip_factor<T>* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double n = *norm;
    const bool finite = (n - n) == 0.0;
    out->apply = finite && n > max_norm;
    out->factor = out->apply ? T(max_norm / (n + 1e-6)) : T(1);
  }
};

template <class T>
struct clip_scale_kernel {
  T* x;
  const clip_factor<T>* clip;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    if (clip->apply) x[i] *= clip->factor;
  }
};

}  // namespace detail

/// @brief The global L2 norm sqrt(sum over all arrays of sum x^2), accumulated in double in a fixed
/// order (deterministic), device form: written to `out` in backend memory, no host wait.
/// @param out [1] output: the norm
/// @param arrays the views (empty views are skipped)
/// @throw std::invalid_argument on a null non-empty view or a bad `out`
template <class Backend, class T>
void global_norm(const Backend& backend, view<double> out, std::initializer_list<view<T>> arrays) {
  constexpr const char* who = "rlkernels::global_norm";
  detail::check_result_view(out.size(), out.data(), who, "out");
  for (const view<T>& a : arrays) {
    RLK_EXPECTS(a.size() == 0 || a.data() != nullptr, std::invalid_argument, who, ": null view");
  }
  detail::backend_value<detail::global_norm_scratch, Backend> scratch(backend);
  buffer<double, Backend> more;  // only for calls with more than max_arrays arrays
  double* squares = scratch.data()->squares;
  if (arrays.size() > detail::global_norm_scratch::max_arrays) {
    more = buffer<double, Backend>(backend, arrays.size());
    squares = more.data();
  }
  std::size_t count = 0;
  for (const view<T>& a : arrays) {
    if (a.size() == 0) continue;
    detail::deterministic_sum_into(detail::light_backend(backend), a.size(),
                                   detail::square_term<std::remove_const_t<T>>{a.data()}, 0.0, detail::plus_double{},
                                   squares + count);
    ++count;
  }
  detail::run_once(backend, detail::global_norm_finalize_kernel{squares, count, out.data()});
}

/// @brief global_norm, host form: returns the norm (one host wait on CUDA).
/// @throw std::invalid_argument on a null non-empty view
template <class Backend, class T>
double global_norm(const Backend& backend, std::initializer_list<view<T>> arrays) {
  detail::backend_value<double, Backend> out(backend);
  global_norm(backend, out.view(), arrays);
  return out.read();
}

/// @brief Clips several gradient arrays together by their global norm, as
/// torch.nn.utils.clip_grad_norm_, device form: the norm before clipping is written to `norm` in
/// backend memory, and when it is finite and above max_norm every element is multiplied by
/// max_norm / (norm + 1e-6), on the backend, without a host wait. A NaN or infinite norm leaves the
/// gradients unchanged (read `norm` to find out; the host form throws then).
/// @param norm [1] output: the global norm before clipping
/// @param grads writable views (empty views are skipped)
/// @param max_norm > 0 (PPO's max_grad_norm, 0.5 in CleanRL and SB3)
/// @throw std::invalid_argument if max_norm is not > 0, a view is null, or `norm` is not one element
template <class Backend, class T>
void clip_grad_norm(const Backend& backend, view<double> norm, std::initializer_list<view<T>> grads, double max_norm) {
  static_assert(!std::is_const_v<T>, "rlkernels::clip_grad_norm: the gradients must be writable views");
  RLK_EXPECTS(max_norm > 0.0, std::invalid_argument, "rlkernels::clip_grad_norm: max_norm must be > 0, got ", max_norm);
  detail::check_result_view(norm.size(), norm.data(), "rlkernels::clip_grad_norm", "norm");
  global_norm(backend, norm, grads);
  detail::backend_value<detail::clip_factor<T>, Backend> clip(backend);
  detail::run_once(backend, detail::clip_factor_kernel<T>{norm.data(), max_norm, clip.data()});
  if constexpr (is_host_backend_v<Backend>) {
    // The factor is in host memory already: skip the pass when there is nothing to scale.
    if (!clip.data()->apply) return;
    for (const view<T>& g : grads) {
      if (g.size() != 0)
        for_each_index(detail::light_backend(backend), g.size(), detail::scale_kernel<T>{g.data(), clip.data()->factor});
    }
  } else {
    for (const view<T>& g : grads) {
      if (g.size() != 0)
        for_each_index(backend, g.size(), detail::clip_scale_kernel<T>{g.data(), clip.data()});
    }
  }
}

/// @brief clip_grad_norm, host form: the device form, then the norm read back (one host wait on
/// CUDA). Returns the norm before clipping.
/// @param max_norm > 0 (PPO's max_grad_norm, 0.5 in CleanRL and SB3)
/// @param error_if_nonfinite throw rlkernels::error when the norm is NaN or infinite (nothing is
///        changed then); otherwise return it and leave the gradients unscaled
/// @throw std::invalid_argument if max_norm is not > 0 or a view is null
template <class Backend, class T>
double clip_grad_norm(const Backend& backend, std::initializer_list<view<T>> grads, double max_norm,
                      bool error_if_nonfinite = true) {
  detail::backend_value<double, Backend> out(backend);
  clip_grad_norm(backend, out.view(), grads, max_norm);
  const double norm = out.read();
  if (!std::isfinite(norm) && error_if_nonfinite) {
    throw error(detail::concat("rlkernels::clip_grad_norm: the gradient norm is ", norm,
                               " (a NaN or infinity in the gradients); the gradients were left unchanged"));
  }
  return norm;
}

/// @brief A linear schedule from `start` (at step 0) to `end` (at step `steps` and after), e.g. for
/// learning-rate annealing: CleanRL's PPO uses lr * (1 - (update - 1) / num_updates).
struct linear_schedule {
  double start = 1.0;       ///< value at step 0
  double end = 0.0;         ///< value from step `steps` on
  std::uint64_t steps = 1;  ///< length of the ramp (0: always `end`)
  /// The value at `step`.
  double operator()(std::uint64_t step) const noexcept {
    if (step >= steps) return end;
    const double f = double(step) / double(steps);
    return start + (end - start) * f;
  }
};

}  // namespace rlkernels
