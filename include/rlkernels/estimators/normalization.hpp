// rlkernels/estimators/normalization.hpp
// Normalisers: per-minibatch advantage standardisation, and running_mean_std, the running
// per-dimension mean and variance used to normalise observations or returns (SB3's RunningMeanStd),
// merged batch by batch with Chan et al.'s parallel formula. Statistics are kept in double and
// reduced deterministically (the same numbers for every thread count).
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

namespace detail {

template <class T>
struct to_double {
  RLK_HOST_DEVICE double operator()(T x) const { return double(x); }
};

template <class T>
struct squared_deviation {
  double mean;
  RLK_HOST_DEVICE double operator()(T x) const {
    const double d = double(x) - mean;
    return d * d;
  }
};

/// f(first[i]) as a reduction term.
template <class T, class F>
struct element_term {
  const T* first;
  F f;
  RLK_HOST_DEVICE double operator()(std::size_t i) const { return f(first[i]); }
};

struct add_doubles {
  RLK_HOST_DEVICE double operator()(double a, double b) const { return a + b; }
};

/// Sum of f(x) over [first, first + n) in double (detail::deterministic_sum: fixed chunks in order
/// on the host, in parallel on OpenMP; CUB on CUDA, deterministic for a given size and GPU).
template <class Backend, class T, class F>
double sum_in_double(const Backend& backend, const T* first, std::size_t n, F f) {
  return deterministic_sum(backend, n, element_term<T, F>{first, f}, 0.0, add_doubles{});
}

template <class T>
struct standardize_kernel {
  T* data;
  double mean;
  double scale;  // 1 / (std + epsilon)
  RLK_HOST_DEVICE void operator()(std::size_t k) const { data[k] = T((double(data[k]) - mean) * scale); }
};

/// Rows per partial statistic of running_mean_std::update: each (chunk, dim) pair sums its column
/// slice in order, then the partials are merged in chunk order. Fixed, so the result depends on
/// the batch, never on the backend or thread count.
inline constexpr std::size_t moments_chunk_rows = 256;

/// Partial mean and M2 (sum of squared deviations) of column d over rows [c * chunk, ...).
template <class T>
struct chunk_moments_kernel {
  const T* batch;       // [B, dim]
  std::size_t rows;     // B
  std::size_t dim;
  double* partial_mean; // [C, dim]
  double* partial_m2;   // [C, dim]

  RLK_HOST_DEVICE void operator()(std::size_t j) const {
    const std::size_t c = j / dim, d = j - c * dim;
    const std::size_t begin = c * moments_chunk_rows;
    const std::size_t end = begin + moments_chunk_rows < rows ? begin + moments_chunk_rows : rows;
    double sum = 0.0;
    for (std::size_t row = begin; row < end; ++row) sum += double(batch[row * dim + d]);
    const double mean = sum / double(end - begin);
    double m2 = 0.0;
    for (std::size_t row = begin; row < end; ++row) {
      const double x = double(batch[row * dim + d]) - mean;
      m2 += x * x;
    }
    partial_mean[j] = mean;
    partial_m2[j] = m2;
  }
};

/// 1 for a non-finite value (a NaN or infinity in the batch, or an overflowing M2).
struct is_non_finite {
  RLK_HOST_DEVICE double operator()(double x) const { return (x - x) == 0.0 ? 0.0 : 1.0; }
};

/// Merges the chunk partials of dimension d in chunk order, then the batch into the running
/// statistics (Chan et al.): both are (count, mean, M2) triples.
struct merge_moments_kernel {
  const double* partial_mean;  // [C, dim]
  const double* partial_m2;    // [C, dim]
  std::size_t rows;
  std::size_t dim;
  std::size_t chunks;
  double count;  // running count before the batch
  double* mean;  // [dim] running mean
  double* var;   // [dim] running (population) variance

  RLK_HOST_DEVICE void operator()(std::size_t d) const {
    double n_b = 0.0, mean_b = 0.0, m2_b = 0.0;
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * moments_chunk_rows;
      const double n_c = double((begin + moments_chunk_rows < rows ? begin + moments_chunk_rows : rows) - begin);
      const double mean_c = partial_mean[c * dim + d], m2_c = partial_m2[c * dim + d];
      const double total = n_b + n_c;
      const double delta = mean_c - mean_b;
      mean_b += delta * (n_c / total);
      m2_b += m2_c + delta * delta * (n_b * n_c / total);
      n_b = total;
    }
    // Running statistics as SB3's RunningMeanStd.update_from_moments.
    const double total = count + n_b;
    const double delta = mean_b - mean[d];
    const double m2 = var[d] * count + m2_b + delta * delta * (count * n_b / total);
    mean[d] = mean[d] + delta * (n_b / total);
    var[d] = m2 / total;
  }
};

template <class T>
struct normalize_kernel {
  const T* in;          // [B, dim]
  T* out;               // [B, dim]
  const double* mean;   // [dim]
  const double* var;    // [dim]
  std::size_t dim;
  double clip;
  double epsilon;

  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t d = k % dim;
    double z = (double(in[k]) - mean[d]) / std::sqrt(var[d] + epsilon);
    z = z < -clip ? -clip : (z > clip ? clip : z);
    out[k] = T(z);
  }
};

struct fill_kernel {
  double* data;
  double value;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { data[k] = value; }
};

}  // namespace detail

/// @brief Standardises one minibatch of advantages in place: A <- (A - mean) / (std + epsilon).
///
/// mean and std are over all elements of the view, with std = sqrt(sum (A - mean)^2 / (size -
/// ddof)). ddof = 1 (the default) matches torch's `.std()`, which Stable-Baselines3 and CleanRL use
/// (`(advantages - advantages.mean()) / (advantages.std() + 1e-8)`); ddof = 0 matches NumPy's
/// default. The moments are reduced in double (two passes) in a deterministic order, and each
/// element is computed in double and rounded once to T.
/// @tparam T float or double
/// @param backend where to run; the view is in its memory
/// @param advantages the minibatch, any shape (flattened), dtype T; overwritten
/// @param epsilon added to the std, >= 0
/// @param ddof delta degrees of freedom, >= 0; the view needs more than ddof elements
/// @throw std::invalid_argument on a null view, size <= ddof, ddof < 0, epsilon < 0 or NaN, or a
///        non-finite mean or variance (a NaN or infinity among the advantages); the data is
///        unchanged then
template <class Backend, class T>
void normalize_advantages(const Backend& backend, view<T> advantages, T epsilon = T(1e-8), int ddof = 1) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::normalize_advantages: T must be float or double");
  constexpr const char* who = "rlkernels::normalize_advantages";
  RLK_EXPECTS(ddof >= 0, std::invalid_argument, who, ": ddof must be >= 0, got ", ddof);
  RLK_EXPECTS(advantages.size() > std::size_t(ddof), std::invalid_argument, who, ": advantages has ",
              advantages.size(), " elements; ddof ", ddof, " needs at least ", ddof + 1);
  RLK_EXPECTS(advantages.data() != nullptr, std::invalid_argument, who, ": advantages is a null view");
  RLK_EXPECTS(epsilon >= T(0), std::invalid_argument, who, ": epsilon must be >= 0, got ", epsilon);
  const std::size_t n = advantages.size();
  const double mean = detail::sum_in_double(backend, advantages.data(), n, detail::to_double<T>{}) / double(n);
  const double var =
      detail::sum_in_double(backend, advantages.data(), n, detail::squared_deviation<T>{mean}) / double(n - ddof);
  RLK_EXPECTS(std::isfinite(mean) && std::isfinite(var), std::invalid_argument, who,
              ": the advantages hold a NaN or infinity (mean ", mean, ", variance ", var, ")");
  for_each_index(backend, n, detail::standardize_kernel<T>{advantages.data(), mean, 1.0 / (std::sqrt(var) + double(epsilon))});
}

/// @brief A saved running_mean_std: per-dimension mean and (population) variance, and the count.
struct running_mean_std_state {
  std::vector<double> mean;  ///< [dim]
  std::vector<double> var;   ///< [dim]
  double count = 0.0;        ///< samples seen, plus the initial epsilon_count
};

/// @brief Running per-dimension mean and variance of a stream of [B, dim] batches, for observation
/// or return normalisation, as Stable-Baselines3's RunningMeanStd: it starts at mean 0, var 1 and
/// count = epsilon_count, and each batch is merged with Chan et al.'s parallel formula using the
/// batch's population variance. Statistics live in double in backend memory; the batch moments are
/// reduced in a fixed order (partials over 256-row chunks, merged in order), so the numbers do not
/// depend on the backend's thread count. Move-only.
/// @tparam T the dtype of batches and normalised outputs (float or double)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class T, class Backend>
class running_mean_std {
  static_assert(std::is_floating_point_v<T>, "rlkernels::running_mean_std: T must be float or double");
  static_assert(is_backend_v<Backend>, "rlkernels::running_mean_std: Backend must be a rlkernels backend");

public:
  /// @param backend where the statistics live and the updates run
  /// @param dim the number of dimensions (the row length of every batch), >= 1
  /// @param epsilon_count the initial count (SB3 uses 1e-4: it keeps the first merge finite), >= 0
  /// @throw std::invalid_argument if dim is 0 or epsilon_count is negative, infinite or NaN
  /// @throw out_of_memory if the statistics do not fit
  running_mean_std(Backend backend, std::size_t dim, double epsilon_count = 1e-4)
      : backend_(backend), dim_(checked_dim(backend, dim)), count_(checked_count(epsilon_count)), mean_(backend, dim),
        var_(backend, dim) {
    for_each_index(backend_, dim_, detail::fill_kernel{var_.data(), 1.0});
  }

  /// Bytes of backend memory the statistics take (the per-update scratch comes on top: 16 bytes
  /// per dimension per 256 rows of the largest batch).
  static std::size_t bytes_required(std::size_t dim) { return 2 * dim * sizeof(double); }

  /// @brief Merges a batch into the statistics.
  /// @param batch [B, dim] row-major, dtype T, B >= 1
  /// @throw std::invalid_argument on a null view, a size that is not a positive multiple of dim,
  ///        or a NaN or infinity in the batch (or values whose variance overflows double); the
  ///        statistics are unchanged then
  void update(view<const T> batch) {
    constexpr const char* who = "rlkernels::running_mean_std::update";
    RLK_EXPECTS(batch.size() > 0 && batch.size() % dim_ == 0, std::invalid_argument, who, ": batch has ",
                batch.size(), " elements, expected a positive multiple of dim ", dim_);
    RLK_EXPECTS(batch.data() != nullptr, std::invalid_argument, who, ": batch is a null view");
    const std::size_t rows = batch.size() / dim_;
    const std::size_t chunks = (rows + detail::moments_chunk_rows - 1) / detail::moments_chunk_rows;
    if (scratch_.size() < 2 * chunks * dim_) scratch_ = buffer<double, Backend>(backend_, 2 * chunks * dim_);
    double* partial_mean = scratch_.data();
    double* partial_m2 = scratch_.data() + chunks * dim_;
    for_each_index(backend_, chunks * dim_, detail::chunk_moments_kernel<T>{batch.data(), rows, dim_, partial_mean, partial_m2});
    // Reject the batch before touching the statistics.
    const double bad = detail::sum_in_double(backend_, scratch_.data(), 2 * chunks * dim_, detail::is_non_finite{});
    RLK_EXPECTS(bad == 0.0, std::invalid_argument, who,
                ": the batch holds a NaN or infinity (or values whose variance overflows double)");
    for_each_index(backend_, dim_,
                   detail::merge_moments_kernel{partial_mean, partial_m2, rows, dim_, chunks, count_, mean_.data(), var_.data()});
    count_ += double(rows);
  }

  /// @brief Writes clip((x - mean) / sqrt(var + epsilon), -clip, clip) per dimension, computed in
  /// double and rounded once to T. `in` and `out` may be the same view (in place).
  /// @param in [B, dim] row-major, dtype T
  /// @param out [B, dim] row-major, dtype T
  /// @param clip bound of the result, >= 0 (SB3's clip_obs default: 10)
  /// @param epsilon added to the variance, >= 0
  /// @throw std::invalid_argument on null views, sizes that differ or are not a multiple of dim,
  ///        or a negative or NaN clip or epsilon; nothing is written then
  void normalize(view<const T> in, view<T> out, T clip = T(10), T epsilon = T(1e-8)) const {
    constexpr const char* who = "rlkernels::running_mean_std::normalize";
    RLK_EXPECTS(in.size() % dim_ == 0, std::invalid_argument, who, ": in has ", in.size(),
                " elements, expected a multiple of dim ", dim_);
    RLK_EXPECTS(out.size() == in.size(), std::invalid_argument, who, ": out has ", out.size(), " elements, in has ",
                in.size());
    RLK_EXPECTS(in.size() == 0 || (in.data() != nullptr && out.data() != nullptr), std::invalid_argument, who,
                ": null view");
    RLK_EXPECTS(clip >= T(0), std::invalid_argument, who, ": clip must be >= 0, got ", clip);
    RLK_EXPECTS(epsilon >= T(0), std::invalid_argument, who, ": epsilon must be >= 0, got ", epsilon);
    for_each_index(backend_, in.size(),
                   detail::normalize_kernel<T>{in.data(), out.data(), mean_.data(), var_.data(), dim_, double(clip),
                                               double(epsilon)});
  }

  /// The running mean, [dim], copied to the host.
  std::vector<double> mean() const { return mean_.to_host(); }
  /// The running population variance, [dim], copied to the host.
  std::vector<double> var() const { return var_.to_host(); }
  /// Samples merged so far plus epsilon_count.
  double count() const noexcept { return count_; }
  /// The number of dimensions.
  std::size_t dim() const noexcept { return dim_; }
  /// The running mean in backend memory, [dim] double (for kernels of your own).
  view<const double> mean_view() const noexcept { return mean_.cview(); }
  /// The running variance in backend memory, [dim] double.
  view<const double> var_view() const noexcept { return var_.cview(); }
  /// The backend the statistics live on.
  const Backend& backend() const noexcept { return backend_; }

  /// @brief A copy of the statistics on the host, to save.
  running_mean_std_state state() const { return running_mean_std_state{mean(), var(), count_}; }

  /// @brief Restores statistics saved by state().
  /// @throw std::invalid_argument if the sizes differ from dim, the count is negative or not
  ///        finite, a mean is not finite or a variance is negative or not finite; nothing changes then
  void set_state(const running_mean_std_state& s) {
    constexpr const char* who = "rlkernels::running_mean_std::set_state";
    RLK_EXPECTS(s.mean.size() == dim_ && s.var.size() == dim_, std::invalid_argument, who, ": mean has ",
                s.mean.size(), " and var ", s.var.size(), " elements, expected dim ", dim_);
    RLK_EXPECTS(std::isfinite(s.count) && s.count >= 0.0, std::invalid_argument, who,
                ": count must be finite and >= 0, got ", s.count);
    for (std::size_t d = 0; d < dim_; ++d) {
      RLK_EXPECTS(std::isfinite(s.mean[d]), std::invalid_argument, who, ": mean[", d, "] is ", s.mean[d]);
      RLK_EXPECTS(std::isfinite(s.var[d]) && s.var[d] >= 0.0, std::invalid_argument, who, ": var[", d, "] is ",
                  s.var[d]);
    }
    mean_.assign(s.mean);
    var_.assign(s.var);
    count_ = s.count;
  }

  /// @brief Binds the statistics to a checkpoint (rlkernels::checkpoint or anything with its bind /
  /// bind_value): `prefix` + "mean" and "var" ([dim] float64) and "count" (checked finite and
  /// >= 0 on load).
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind(prefix + "mean", backend_, mean_.view());
    c.bind(prefix + "var", backend_, var_.view());
    c.bind_value(prefix + "count", count_, [](const double& n) {
      return std::isfinite(n) && n >= 0.0 ? std::string() : "count " + std::to_string(n) + " is not finite and >= 0";
    });
  }

private:
  static std::size_t checked_dim(const Backend& backend, std::size_t dim) {
    RLK_EXPECTS(dim >= 1, std::invalid_argument, "rlkernels::running_mean_std: dim must be >= 1, got ", dim);
    RLK_EXPECTS(dim <= std::size_t(-1) / (4 * sizeof(double)), std::invalid_argument,
                "rlkernels::running_mean_std: dim ", dim, " overflows the address space");
    detail::expect_fits(backend, bytes_required(dim), detail::concat("rlkernels::running_mean_std: dim ", dim));
    return dim;
  }
  static double checked_count(double c) {
    RLK_EXPECTS(std::isfinite(c) && c >= 0.0, std::invalid_argument,
                "rlkernels::running_mean_std: epsilon_count must be finite and >= 0, got ", c);
    return c;
  }

  Backend backend_;
  std::size_t dim_;
  double count_;
  buffer<double, Backend> mean_;     // [dim]
  buffer<double, Backend> var_;      // [dim]
  buffer<double, Backend> scratch_;  // [2, C, dim] per-chunk partial means and M2 of the last batch
};

}  // namespace rlkernels
