// rlkernels/estimators/normalization.hpp
// Normalisers: per-minibatch advantage standardisation, and running_mean_std, the running
// per-dimension mean and variance used to normalise observations or returns (SB3's RunningMeanStd),
// merged batch by batch with Chan et al.'s parallel formula. Statistics are kept in double and
// reduced deterministically (the same numbers for every thread count).
#pragma once

#include "../core/backend.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/device_value.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

/// @brief The moments normalize_advantages used, as its device form writes them to backend memory.
struct advantage_moments {
  double mean = 0;   ///< mean of the advantages
  double var = 0;    ///< sum (A - mean)^2 / (size - ddof)
  double scale = 0;  ///< 1 / (sqrt(var) + epsilon), the factor applied (when mean and var are finite)
};

namespace detail {

template <class T>
struct to_double {
  RLK_HOST_DEVICE double operator()(T x) const { return double(x); }
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

/// What running_mean_std's device-side rejection records (in backend memory).
struct moments_status {
  double bad;                // this batch: the number of non-finite partial moments
  std::uint64_t rejected;    // 1 once a batch was rejected since the last check
  double count_before;       // the count before the first rejected batch
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
  const moments_status* status;  // skip the batch when it (or one since the last check) was rejected

  RLK_HOST_DEVICE void operator()(std::size_t d) const {
    if (status->bad != 0.0 || status->rejected != 0) return;
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

/// Backend memory of one normalize_advantages call.
struct advantage_sums {
  double sum;
  double squared_deviation;
};

template <class T>
struct squared_deviation_at {  // (x - *mean)^2, the mean read from backend memory
  const T* x;
  const double* mean;
  RLK_HOST_DEVICE double operator()(std::size_t i) const {
    const double d = double(x[i]) - *mean;
    return d * d;
  }
};

struct advantage_mean_kernel {
  const advantage_sums* sums;
  std::size_t n;
  advantage_moments* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const { out->mean = sums->sum / double(n); }
};

struct advantage_var_kernel {
  const advantage_sums* sums;
  std::size_t n;
  int ddof;
  double epsilon;
  advantage_moments* out;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    out->var = sums->squared_deviation / double(n - std::size_t(ddof));
    out->scale = 1.0 / (std::sqrt(out->var) + epsilon);
  }
};

RLK_INLINE bool finite_double(double x) { return (x - x) == 0.0; }

/// standardize_kernel with the moments read from backend memory; a no-op when they are not finite.
template <class T>
struct standardize_at_kernel {
  T* data;
  const advantage_moments* m;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    const double mean = m->mean, var = m->var;
    if (!finite_double(mean) || !finite_double(var)) return;
    data[k] = T((double(data[k]) - mean) * m->scale);
  }
};

/// After the merge: records the first rejected batch since the last check.
struct record_rejection_kernel {
  moments_status* status;
  double count;  // the count before this batch
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    if (status->bad != 0.0 && status->rejected == 0) {
      status->rejected = 1;
      status->count_before = count;
    }
  }
};

struct fill_kernel {
  double* data;
  double value;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { data[k] = value; }
};

}  // namespace detail

/// @brief Standardises one minibatch of advantages in place: A <- (A - mean) / (std + epsilon);
/// device form: the moments are reduced into `moments` in backend memory and read there by the
/// standardising kernel, so nothing waits for the host.
///
/// mean and std are over all elements of the view, with std = sqrt(sum (A - mean)^2 / (size -
/// ddof)). ddof = 1 (the default) matches torch's `.std()`, which Stable-Baselines3 and CleanRL use
/// (`(advantages - advantages.mean()) / (advantages.std() + 1e-8)`); ddof = 0 matches NumPy's
/// default. The moments are reduced in double (two passes) in a deterministic order, and each
/// element is computed in double and rounded once to T. When the mean or the variance is not finite
/// (a NaN or infinity among the advantages) the data is left unchanged; read `moments` to find out
/// (the host form throws then).
/// @tparam T float or double
/// @param backend where to run; the views are in its memory
/// @param moments [1] output: the mean, variance and scale used
/// @param advantages the minibatch, any shape (flattened), dtype T; overwritten
/// @param epsilon added to the std, >= 0
/// @param ddof delta degrees of freedom, >= 0; the view needs more than ddof elements
/// @throw std::invalid_argument on a null view, size <= ddof, ddof < 0, epsilon < 0 or NaN, or a bad
///        `moments` view (checked on the host before anything is queued)
template <class Backend, class T>
void normalize_advantages(const Backend& backend, view<advantage_moments> moments, view<T> advantages,
                          T epsilon = T(1e-8), int ddof = 1) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::normalize_advantages: T must be float or double");
  constexpr const char* who = "rlkernels::normalize_advantages";
  detail::check_result_view(moments.size(), moments.data(), who, "moments");
  RLK_EXPECTS(ddof >= 0, std::invalid_argument, who, ": ddof must be >= 0, got ", ddof);
  RLK_EXPECTS(advantages.size() > std::size_t(ddof), std::invalid_argument, who, ": advantages has ",
              advantages.size(), " elements; ddof ", ddof, " needs at least ", ddof + 1);
  RLK_EXPECTS(advantages.data() != nullptr, std::invalid_argument, who, ": advantages is a null view");
  RLK_EXPECTS(epsilon >= T(0), std::invalid_argument, who, ": epsilon must be >= 0, got ", epsilon);
  const std::size_t n = advantages.size();
  detail::backend_value<detail::advantage_sums, Backend> sums(backend);
  advantage_moments* m = moments.data();
  detail::deterministic_sum_into(backend, n, detail::element_term<T, detail::to_double<T>>{advantages.data(), {}}, 0.0,
                                 detail::add_doubles{}, &sums.data()->sum);
  detail::run_once(backend, detail::advantage_mean_kernel{sums.data(), n, m});
  detail::deterministic_sum_into(backend, n, detail::squared_deviation_at<T>{advantages.data(), &m->mean}, 0.0,
                                 detail::add_doubles{}, &sums.data()->squared_deviation);
  detail::run_once(backend, detail::advantage_var_kernel{sums.data(), n, ddof, double(epsilon), m});
  for_each_index(backend, n, detail::standardize_at_kernel<T>{advantages.data(), m});
}

/// @brief normalize_advantages, host form: the device form, then the moments read back (one host
/// wait on CUDA) to report a non-finite mean or variance.
/// @throw std::invalid_argument on a null view, size <= ddof, ddof < 0, epsilon < 0 or NaN, or a
///        non-finite mean or variance (a NaN or infinity among the advantages); the data is
///        unchanged then
template <class Backend, class T>
void normalize_advantages(const Backend& backend, view<T> advantages, T epsilon = T(1e-8), int ddof = 1) {
  detail::backend_value<advantage_moments, Backend> moments(backend);
  normalize_advantages(backend, moments.view(), advantages, epsilon, ddof);
  const advantage_moments m = moments.read();
  RLK_EXPECTS(std::isfinite(m.mean) && std::isfinite(m.var), std::invalid_argument, "rlkernels::normalize_advantages",
              ": the advantages hold a NaN or infinity (mean ", m.mean, ", variance ", m.var, ")");
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
        var_(backend, dim), status_(backend, 1) {
    for_each_index(backend_, dim_, detail::fill_kernel{var_.data(), 1.0});
  }

  /// Bytes of backend memory the statistics take (the per-update scratch comes on top: 16 bytes
  /// per dimension per 256 rows of the largest batch).
  static std::size_t bytes_required(std::size_t dim) { return 2 * dim * sizeof(double); }

  /// @brief Merges a batch into the statistics, host form: update_unchecked() and then check()
  /// (one host read; on CUDA a wait).
  /// @param batch [B, dim] row-major, dtype T, B >= 1
  /// @throw std::invalid_argument on a null view, a size that is not a positive multiple of dim,
  ///        or a NaN or infinity in the batch (or values whose variance overflows double); the
  ///        statistics are unchanged then
  void update(view<const T> batch) {
    update_unchecked(batch);
    check_impl("rlkernels::running_mean_std::update: the batch holds a NaN or infinity (or values whose variance "
               "overflows double)");
  }

  /// @brief Merges a batch into the statistics without waiting for the host: the statistics stay in
  /// backend memory, and a batch with a NaN or infinity (or values whose variance overflows double)
  /// is rejected on the device. From a rejected batch on, the statistics stay as they were before
  /// it (later batches are skipped too) until check() reports it; call check() once in a while
  /// (say once per iteration) and before state() or saving a checkpoint.
  /// @param batch [B, dim] row-major, dtype T, B >= 1
  /// @throw std::invalid_argument on a null view or a size that is not a positive multiple of dim
  void update_unchecked(view<const T> batch) {
    constexpr const char* who = "rlkernels::running_mean_std::update";
    RLK_EXPECTS(batch.size() > 0 && batch.size() % dim_ == 0, std::invalid_argument, who, ": batch has ",
                batch.size(), " elements, expected a positive multiple of dim ", dim_);
    RLK_EXPECTS(batch.data() != nullptr, std::invalid_argument, who, ": batch is a null view");
    const std::size_t rows = batch.size() / dim_;
    const std::size_t chunks = (rows + detail::moments_chunk_rows - 1) / detail::moments_chunk_rows;
    if (scratch_.size() < 2 * chunks * dim_) scratch_ = buffer<double, Backend>(backend_, 2 * chunks * dim_);
    double* partial_mean = scratch_.data();
    double* partial_m2 = scratch_.data() + chunks * dim_;
    detail::moments_status* status = status_.data();
    for_each_index(backend_, chunks * dim_, detail::chunk_moments_kernel<T>{batch.data(), rows, dim_, partial_mean, partial_m2});
    // Reject the batch (on the device) before touching the statistics.
    detail::deterministic_sum_into(backend_, 2 * chunks * dim_,
                                   detail::element_term<double, detail::is_non_finite>{scratch_.data(), {}}, 0.0,
                                   detail::add_doubles{}, &status->bad);
    for_each_index(backend_, dim_,
                   detail::merge_moments_kernel{partial_mean, partial_m2, rows, dim_, chunks, count_, mean_.data(),
                                                var_.data(), status});
    detail::run_once(backend_, detail::record_rejection_kernel{status, count_});
    count_ += double(rows);
  }

  /// @brief update_unchecked() for a batch split over the ranks of `comm` (data-parallel
  /// training): each rank's batch is reduced to its partial moments, the partials are gathered,
  /// and every rank merges rank 0's, then rank 1's, ... batch: the same statistics, bit for bit,
  /// as one process calling update_unchecked() with each rank's batch in rank order. With one
  /// rank it is update_unchecked(batch). Moves 16 bytes per dimension per 256 rows per rank
  /// through the host.
  /// @throw std::invalid_argument as update_unchecked(), or if the ranks' batch sizes differ;
  ///        distributed_error from the communicator
  void update_unchecked(view<const T> batch, communicator& comm) {
    if (comm.size() == 1) {
      update_unchecked(batch);
      return;
    }
    constexpr const char* who = "rlkernels::running_mean_std::update";
    RLK_EXPECTS(batch.size() > 0 && batch.size() % dim_ == 0, std::invalid_argument, who, ": batch has ",
                batch.size(), " elements, expected a positive multiple of dim ", dim_);
    RLK_EXPECTS(batch.data() != nullptr, std::invalid_argument, who, ": batch is a null view");
    const std::size_t rows = batch.size() / dim_;
    const std::vector<std::uint64_t> all_rows = all_gather(comm, std::uint64_t(rows), "normaliser batch sizes");
    for (std::uint64_t r : all_rows)
      RLK_EXPECTS(r == rows, std::invalid_argument, who, ": the ranks' batches differ in size (", r, " and ", rows,
                  " rows)");
    const std::size_t chunks = (rows + detail::moments_chunk_rows - 1) / detail::moments_chunk_rows;
    const std::size_t part = 2 * chunks * dim_, ranks = std::size_t(comm.size());
    if (scratch_.size() < part * (ranks + 1)) scratch_ = buffer<double, Backend>(backend_, part * (ranks + 1));
    double* mine = scratch_.data() + part * ranks;
    for_each_index(backend_, chunks * dim_, detail::chunk_moments_kernel<T>{batch.data(), rows, dim_, mine, mine + chunks * dim_});
    std::vector<double> local(part), gathered(part * ranks);
    detail::memory_ops<Backend>::to_host(backend_, local.data(), mine, part * sizeof(double));
    comm.all_gather_raw(local.data(), part * sizeof(double), gathered.data(), "normaliser moments");
    detail::memory_ops<Backend>::from_host(backend_, scratch_.data(), gathered.data(), part * ranks * sizeof(double));
    detail::moments_status* status = status_.data();
    for (std::size_t r = 0; r < ranks; ++r) {
      double* partial_mean = scratch_.data() + r * part;
      detail::deterministic_sum_into(backend_, part, detail::element_term<double, detail::is_non_finite>{partial_mean, {}},
                                     0.0, detail::add_doubles{}, &status->bad);
      for_each_index(backend_, dim_,
                     detail::merge_moments_kernel{partial_mean, partial_mean + chunks * dim_, rows, dim_, chunks, count_,
                                                  mean_.data(), var_.data(), status});
      detail::run_once(backend_, detail::record_rejection_kernel{status, count_});
      count_ += double(rows);
    }
  }

  /// @brief Reports a batch that update_unchecked() rejected since the last check (one host read;
  /// on CUDA a wait). Afterwards the object is usable again, with the statistics and the count of
  /// the last batch that was merged.
  /// @throw std::invalid_argument if a batch was rejected (a NaN or infinity in it, or values
  ///        whose variance overflows double)
  void check() {
    check_impl("rlkernels::running_mean_std::update_unchecked: a batch held a NaN or infinity (or values whose "
               "variance overflows double); it and the batches after it were not merged");
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
    status_.zero();  // a rejection that update_unchecked recorded before is moot now
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
  void check_impl(const char* message) {
    const detail::moments_status st = detail::read_value(backend_, status_.data());
    if (st.rejected == 0) return;
    count_ = st.count_before;
    status_.zero();
    throw std::invalid_argument(message);
  }

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
  buffer<detail::moments_status, Backend> status_;  // [1] the device-side rejection of update_unchecked
};

}  // namespace rlkernels
