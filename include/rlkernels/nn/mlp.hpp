// rlkernels/nn/mlp.hpp
// A multilayer perceptron of dense layers for a batch of rows, forward and backward, on every
// backend: Eigen's matrix products on the host (in fixed chunks of rows, so that serial and OpenMP
// give the same bits for every thread count), cuBLAS on CUDA. Parameters and gradients are flat
// arrays in backend memory, so optimisers, Polyak averaging and saving work on plain views.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "eigen_config.hpp"  // before anything else of Eigen's
#include "init.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if RLK_HAS_CUDA
#include <cublas_v2.h>
#endif

namespace rlkernels {

/// @brief Element-wise activation of a dense layer.
enum class activation : int {
  identity = 0,  ///< f(z) = z
  tanh = 1,      ///< f(z) = tanh(z)
  relu = 2,      ///< f(z) = max(z, 0) (derivative 0 at z = 0, as PyTorch)
  elu = 3,       ///< f(z) = z for z > 0, expm1(z) else (PyTorch's ELU, alpha 1; rl_games' MuJoCo networks)
};

/// The activation's name ("identity", "tanh", "relu", "elu").
inline const char* activation_name(activation a) {
  switch (a) {
    case activation::identity: return "identity";
    case activation::tanh: return "tanh";
    case activation::relu: return "relu";
    case activation::elu: return "elu";
  }
  return "unknown";
}

/// @brief The shape of an MLP: layer widths sizes[0] (input) ... sizes.back() (output), the
/// activation after every hidden layer and after the output layer. Parameters are one flat array:
/// for each layer l in order, W_l [sizes[l+1], sizes[l]] row-major (PyTorch's Linear.weight), then
/// b_l [sizes[l+1]].
struct mlp_layout {
  std::vector<int> sizes;                   ///< widths, input first; at least 2 entries, all >= 1
  activation hidden = activation::tanh;     ///< after each hidden layer
  activation output = activation::identity; ///< after the last layer

  /// Number of dense layers (sizes.size() - 1).
  std::size_t num_layers() const noexcept { return sizes.empty() ? 0 : sizes.size() - 1; }
  /// Input width.
  int input_size() const noexcept { return sizes.empty() ? 0 : sizes.front(); }
  /// Output width.
  int output_size() const noexcept { return sizes.empty() ? 0 : sizes.back(); }
  /// Inputs of layer l.
  int fan_in(std::size_t l) const { return sizes.at(l); }
  /// Outputs of layer l.
  int fan_out(std::size_t l) const { return sizes.at(l + 1); }
  /// Activation after layer l.
  activation activation_of(std::size_t l) const noexcept { return l + 1 == num_layers() ? output : hidden; }
  /// Offset of W_l in the flat parameter array.
  std::size_t weight_offset(std::size_t l) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k < l; ++k) off += std::size_t(fan_out(k)) * (std::size_t(fan_in(k)) + 1);
    return off;
  }
  /// Offset of b_l in the flat parameter array.
  std::size_t bias_offset(std::size_t l) const { return weight_offset(l) + std::size_t(fan_out(l)) * std::size_t(fan_in(l)); }
  /// Total number of parameters.
  std::size_t num_parameters() const { return weight_offset(num_layers()); }
  /// Widest layer (input included).
  int max_width() const noexcept {
    int w = 0;
    for (int s : sizes) w = s > w ? s : w;
    return w;
  }
  /// Throws std::invalid_argument naming what is wrong.
  void validate(const char* who) const {
    RLK_EXPECTS(sizes.size() >= 2, std::invalid_argument, who, ": an MLP needs at least an input and an output size, got ",
                sizes.size(), " sizes");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      RLK_EXPECTS(sizes[i] >= 1, std::invalid_argument, who, ": sizes[", i, "] = ", sizes[i], " must be >= 1");
    }
    for (activation a : {hidden, output}) {
      RLK_EXPECTS(a == activation::identity || a == activation::tanh || a == activation::relu || a == activation::elu,
                  std::invalid_argument,
                  who, ": unknown activation ", int(a));
    }
  }
};

namespace detail {

/// Rows per host chunk of the forward and backward passes: each chunk runs on one thread, and the
/// chunk gradients are summed in chunk order, so the bits never depend on the thread count.
inline constexpr std::size_t mlp_chunk_rows = 256;

/// The largest batch of one pass: cuBLAS takes matrix dimensions as int. The host backends, which
/// could take more, take the same, so a program behaves alike on every backend.
inline constexpr std::size_t mlp_max_batch = std::size_t(INT_MAX);

/// Throws std::invalid_argument naming `who` and the batch when it exceeds mlp_max_batch.
inline void check_mlp_batch(std::size_t batch, const char* who) {
  RLK_EXPECTS(batch <= mlp_max_batch, std::invalid_argument, who, ": batch of ", batch, " rows exceeds ", mlp_max_batch,
              " (INT_MAX), the most rows one pass takes (cuBLAS takes the batch as an int)");
}

template <class T>
RLK_HOST_DEVICE inline T activate(activation a, T z) {
  if (a == activation::tanh) return std::tanh(z);
  if (a == activation::relu) return z > T(0) ? z : T(0);
  if (a == activation::elu) return z > T(0) ? z : T(std::expm1(z));
  return z;
}
/// f'(z) from y = f(z).
template <class T>
RLK_HOST_DEVICE inline T activation_derivative(activation a, T y) {
  if (a == activation::tanh) return T(1) - y * y;
  if (a == activation::relu) return y > T(0) ? T(1) : T(0);
  if (a == activation::elu) return y > T(0) ? T(1) : y + T(1);  // expm1(z)' = exp(z) = y + 1
  return T(1);
}

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using row_map = Eigen::Map<row_matrix<T>>;
template <class T>
using const_row_map = Eigen::Map<const row_matrix<T>>;
template <class T>
using vector_map = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
template <class T>
using const_vector_map = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;

template <class T>
void apply_activation_host(activation a, T* y, std::size_t n) {
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(y, Eigen::Index(n));
  if (a == activation::tanh) {
    v = v.tanh();
  } else if (a == activation::relu) {
    v = v.max(T(0));
  } else if (a == activation::elu) {
    v = (v > T(0)).select(v, v.expm1());
  }
}

template <class T>
void multiply_activation_derivative_host(activation a, const T* y, T* delta, std::size_t n) {
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> d(delta, Eigen::Index(n));
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(y, Eigen::Index(n));
  if (a == activation::tanh) {
    d *= T(1) - v.square();
  } else if (a == activation::relu) {
    d = (v > T(0)).select(d, T(0));
  } else if (a == activation::elu) {
    d = (v > T(0)).select(d, d * (v + T(1)));
  }
}

#if RLK_HAS_CUDA
inline const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "unknown cuBLAS status";
  }
}
/// Throws rlkernels::error (file, line, cuBLAS's status) if a cuBLAS call failed; like
/// RLK_CUDA_CHECK, first reports a failure a destructor recorded and, with RLK_CUDA_SYNC_CHECK,
/// synchronises after the call.
#define RLK_CUBLAS_CHECK(call)                                                                              \
  do {                                                                                                      \
    ::rlkernels::detail::check_deferred_cuda_error_fast();                                                  \
    const cublasStatus_t rlk_status_ = (call);                                                              \
    if (rlk_status_ != CUBLAS_STATUS_SUCCESS)                                                               \
      throw ::rlkernels::error(::rlkernels::detail::concat(__FILE__, ":", __LINE__, ": ", #call, " failed: ", \
                                                           ::rlkernels::detail::cublas_status_name(rlk_status_))); \
    ::rlkernels::detail::debug_sync_after(#call, __FILE__, __LINE__);                                       \
  } while (0)

inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* alpha, const double* a, int lda, const double* b, int ldb,
                           const double* beta, double* c, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const float* alpha, const float* a,
                           int lda, const float* x, int incx, const float* beta, float* y, int incy) {
  return cublasSgemv(h, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
inline cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const double* alpha, const double* a,
                           int lda, const double* x, int incx, const double* beta, double* y, int incy) {
  return cublasDgemv(h, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

/// Stands in for the handle in networks of host backends compiled by nvcc.
struct no_cublas_handle {};

/// Owns a cuBLAS handle (move-only) of one backend: created on the backend's device, bound to its
/// stream, with atomics disallowed (deterministic reductions); destroyed with that device current.
class cublas_handle {
 public:
  cublas_handle() = default;
  /// @throw cuda_error if the device cannot be made current; rlkernels::error if cuBLAS fails
  explicit cublas_handle(const cuda_backend& backend) : device_(backend.device) {
    const device_guard guard(device_);
    RLK_CUBLAS_CHECK(cublasCreate(&h_));
    try {
      RLK_CUBLAS_CHECK(cublasSetStream(h_, backend.stream));
      // Deterministic: no atomics in cuBLAS's reductions.
      RLK_CUBLAS_CHECK(cublasSetAtomicsMode(h_, CUBLAS_ATOMICS_NOT_ALLOWED));
    } catch (...) {
      (void)cublasDestroy(std::exchange(h_, nullptr));
      throw;
    }
  }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
  cublas_handle(cublas_handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)), device_(o.device_) {}
  cublas_handle& operator=(cublas_handle&& o) noexcept {
    std::swap(h_, o.h_);
    std::swap(device_, o.device_);
    return *this;
  }
  /// A failure (only on a broken context) is recorded and reported by the next checked CUDA call.
  ~cublas_handle() {
    if (!h_) return;
    const device_guard guard(device_, std::nothrow);
    if (guard.status() != cudaSuccess) {
      record_deferred_cuda_error(guard.status(), "cudaSetDevice (before cublasDestroy)", __FILE__, __LINE__);
      return;
    }
    if (cublasDestroy(h_) != CUBLAS_STATUS_SUCCESS) {
      record_deferred_cuda_error(cudaErrorUnknown, "cublasDestroy", __FILE__, __LINE__);
    }
  }
  /// The handle; calls through it need the handle's device current (the caller's device_guard).
  cublasHandle_t get() const noexcept { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
  int device_ = 0;
};
#endif

template <class T>
struct bias_activation_kernel {
  T* z;
  const T* bias;
  std::size_t width;
  activation act;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { z[i] = activate(act, z[i] + bias[i % width]); }
};
template <class T>
struct delta_kernel {  // out[i] = (g ? g[i] : out[i]) * f'(y[i])
  const T* g;
  const T* y;
  T* out;
  activation act;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    out[i] = (g ? g[i] : out[i]) * activation_derivative(act, y[i]);
  }
};
template <class T>
struct mlp_fill_kernel {
  T* out;
  T value;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value; }
};
template <class T>
struct sum_chunk_gradients_kernel {
  const T* partial;  // [chunks, P]
  T* grads;          // [P]
  std::size_t chunks, num_parameters;
  bool accumulate;
  RLK_HOST_DEVICE void operator()(std::size_t p) const {
    T s = accumulate ? grads[p] : T(0);
    for (std::size_t c = 0; c < chunks; ++c) s += partial[c * num_parameters + p];
    grads[p] = s;
  }
};

}  // namespace detail

template <class T, class Backend>
class mlp;

/// @brief Scratch memory of an MLP's passes for batches of up to `max_batch` rows: every layer's
/// output (kept by forward for backward), the backward deltas, and per-chunk gradients on the
/// host. One workspace per concurrent use (say, one for the rollout and one for the update).
template <class T, class Backend>
class mlp_workspace {
 public:
  /// Allocates scratch for `net`'s layout and up to `max_batch` rows.
  /// @throw std::invalid_argument if max_batch is 0; out_of_memory naming the size
  mlp_workspace(const mlp<T, Backend>& net, std::size_t max_batch);

  /// Largest batch this workspace takes.
  std::size_t max_batch() const noexcept { return max_batch_; }
  /// Rows of the last forward pass (0 before the first).
  std::size_t batch() const noexcept { return batch_; }
  /// Output of layer l after its activation, [batch(), fan_out(l)], from the last forward pass.
  view<const T> layer_output(std::size_t l) const {
    RLK_EXPECTS(l < outputs_.size(), std::out_of_range, "rlkernels::mlp_workspace::layer_output: layer ", l,
                " of ", outputs_.size());
    return view<const T>(outputs_[l].data(), batch_ * std::size_t(widths_[l]));
  }
  /// The network's output [batch(), output_size] from the last forward pass.
  view<const T> output() const { return layer_output(outputs_.size() - 1); }
  /// Bytes this workspace needs for a layout and batch size.
  static std::size_t bytes_required(const mlp_layout& layout, std::size_t max_batch) {
    std::size_t elems = 0;
    for (std::size_t l = 0; l < layout.num_layers(); ++l) elems += max_batch * std::size_t(layout.fan_out(l));
    elems += 2 * max_batch * std::size_t(layout.max_width());
    if constexpr (is_host_backend_v<Backend>) {
      elems += chunks_for(max_batch) * layout.num_parameters();
    } else {
      elems += max_batch;
    }
    return elems * sizeof(T);
  }

 private:
  friend class mlp<T, Backend>;
  static std::size_t chunks_for(std::size_t batch) {
    return (batch + detail::mlp_chunk_rows - 1) / detail::mlp_chunk_rows;
  }
  std::size_t max_batch_ = 0;
  std::size_t batch_ = 0;
  std::size_t num_parameters_ = 0;
  std::vector<int> widths_;
  std::vector<buffer<T, Backend>> outputs_;  // per layer [max_batch, fan_out]
  buffer<T, Backend> delta_a_, delta_b_;     // [max_batch, max_width]
  buffer<T, Backend> chunk_grads_;           // host: [chunks, P]
  buffer<T, Backend> ones_;                  // CUDA: [max_batch] of 1
};

/// @brief A multilayer perceptron y = f_L(W_L ... f_1(W_1 x + b_1) ... + b_L) over a batch of
/// rows x [B, input_size] (row-major), with its parameters and gradients as flat arrays in the
/// memory of `Backend` (layout: see mlp_layout). Move-only.
///
/// - forward(x, ws) writes every layer's output into the workspace; output() is y [B, output_size].
/// - backward(x, dy, ws) computes d loss / d parameters from d loss / d y for the batch of the
///   last forward pass (into gradients(), or added to it), and optionally d loss / d x.
///
/// Host backends compute in chunks of 256 rows (one chunk per thread on OpenMP) with Eigen's
/// matrix products, and add the chunk gradients in chunk order: the same bits for serial and
/// OpenMP and every thread count. CUDA uses cuBLAS (with atomics disallowed: deterministic run to
/// run on one GPU model).
/// @tparam T float or double
template <class T, class Backend>
class mlp {
  static_assert(std::is_floating_point_v<T>, "rlkernels::mlp<T>: T must be float or double");
  static_assert(is_backend_v<Backend>, "rlkernels::mlp<T, Backend>: Backend must be a rlkernels backend");

 public:
  using scalar_type = T;         ///< element type
  using backend_type = Backend;  ///< where parameters live

  /// @brief Allocates a network with zero parameters (call initialize() next).
  /// @param backend where the parameters live and the passes run
  /// @param sizes widths, input first, at least two, all >= 1 (for example {4, 64, 64, 2})
  /// @param hidden activation after each hidden layer
  /// @param output activation after the last layer
  /// @throw std::invalid_argument on bad sizes; out_of_memory naming the size
  mlp(Backend backend, std::vector<int> sizes, activation hidden = activation::tanh,
      activation output = activation::identity)
      : mlp(backend, mlp_layout{std::move(sizes), hidden, output}) {}
  /// @brief Allocates a network of the given layout with zero parameters.
  /// @param backend where the parameters live and the passes run
  /// @param layout sizes and activations (validated)
  /// @throw std::invalid_argument on a bad layout; out_of_memory naming the size
  mlp(Backend backend, mlp_layout layout)
      : backend_(backend), layout_(checked(backend, std::move(layout))),
        parameters_(backend, layout_.num_parameters()), gradients_(backend, layout_.num_parameters())
#if RLK_HAS_CUDA
        , cublas_(make_cublas(backend))
#endif
  {
  }

  /// Takes over another network's memory (move-only: copy parameters with copy_parameters_from).
  mlp(mlp&&) noexcept = default;
  /// Takes over another network's memory.
  mlp& operator=(mlp&&) noexcept = default;

  /// The shape.
  const mlp_layout& layout() const noexcept { return layout_; }
  /// Input width.
  int input_size() const noexcept { return layout_.input_size(); }
  /// Output width.
  int output_size() const noexcept { return layout_.output_size(); }
  /// Number of parameters (weights and biases).
  std::size_t num_parameters() const noexcept { return parameters_.size(); }
  /// The backend.
  const Backend& backend() const noexcept { return backend_; }

  /// All parameters, flat (see mlp_layout for the order), in backend memory.
  view<T> parameters() noexcept { return parameters_.view(); }
  /// @copydoc parameters()
  view<const T> parameters() const noexcept { return parameters_.cview(); }
  /// All gradients, flat, the same layout as parameters().
  view<T> gradients() noexcept { return gradients_.view(); }
  /// @copydoc gradients()
  view<const T> gradients() const noexcept { return gradients_.cview(); }
  /// W_l [fan_out, fan_in] row-major.
  view<T> weight(std::size_t l) { return slice(parameters_, layout_.weight_offset(l), std::size_t(layout_.fan_out(l)) * std::size_t(layout_.fan_in(l))); }
  /// b_l [fan_out].
  view<T> bias(std::size_t l) { return slice(parameters_, layout_.bias_offset(l), std::size_t(layout_.fan_out(l))); }
  /// A host copy of the parameters (waits for queued work on CUDA).
  std::vector<T> parameters_to_host() const { return parameters_.to_host(); }
  /// A host copy of the gradients.
  std::vector<T> gradients_to_host() const { return gradients_.to_host(); }
  /// Overwrites the parameters from the host. @throw std::invalid_argument if the size differs
  void set_parameters(const std::vector<T>& host) {
    RLK_EXPECTS(host.size() == num_parameters(), std::invalid_argument, "rlkernels::mlp::set_parameters: got ",
                host.size(), " values for ", num_parameters(), " parameters");
    parameters_.assign(host);
  }
  /// Copies another network's parameters (same layout) within backend memory (target networks).
  /// @throw std::invalid_argument if the layouts differ
  void copy_parameters_from(const mlp& other) {
    RLK_EXPECTS(other.layout_.sizes == layout_.sizes && other.layout_.hidden == layout_.hidden &&
                    other.layout_.output == layout_.output,
                std::invalid_argument, "rlkernels::mlp::copy_parameters_from: the networks have different layouts");
    copy(backend_, other.parameters_.cview(), parameters_.view());
  }
  /// Sets every gradient to zero.
  void zero_gradients() { gradients_.zero(); }

  /// @brief Initialises every layer: the hidden layers with `hidden`, the last layer with
  /// `output` (CleanRL's PPO: orthogonal with gain sqrt(2) for hidden layers, 0.01 for the policy
  /// head and 1 for the value head; biases 0). Layer l draws from Philox stream l of `seed`, so the
  /// result is the same on every backend.
  void initialize(std::uint64_t seed, const layer_init& hidden = {}, const layer_init& output = {}) {
    std::vector<layer_init> per_layer(layout_.num_layers(), hidden);
    per_layer.back() = output;
    initialize(seed, per_layer);
  }
  /// @brief Initialises layer l with per_layer[l].
  /// @throw std::invalid_argument if per_layer does not have one entry per layer or a gain is
  ///        negative or not finite; nothing changes then
  void initialize(std::uint64_t seed, const std::vector<layer_init>& per_layer) {
    constexpr const char* who = "rlkernels::mlp::initialize";
    RLK_EXPECTS(per_layer.size() == layout_.num_layers(), std::invalid_argument, who, ": got ", per_layer.size(),
                " layer_init entries for ", layout_.num_layers(), " layers");
    std::vector<T> host(num_parameters());
    for (std::size_t l = 0; l < layout_.num_layers(); ++l) {
      const std::size_t rows = std::size_t(layout_.fan_out(l)), cols = std::size_t(layout_.fan_in(l));
      const std::vector<T> w = init_weights<T>(rows, cols, per_layer[l], seed, l);
      std::copy(w.begin(), w.end(), host.begin() + std::ptrdiff_t(layout_.weight_offset(l)));
      const std::vector<T> b = init_biases<T>(rows, cols, per_layer[l], seed, l);
      std::copy(b.begin(), b.end(), host.begin() + std::ptrdiff_t(layout_.bias_offset(l)));
    }
    parameters_.assign(host);
  }

  /// @brief Forward pass of x [B, input_size] (row-major, backend memory), 1 <= B <= ws.max_batch():
  /// stores every layer's output in `ws` and returns the network output [B, output_size] (a view
  /// into `ws`, valid until its next forward pass).
  /// @throw std::invalid_argument if x is null, its size is not a positive multiple of input_size,
  ///        B exceeds ws.max_batch(), or ws was made for another layout
  view<const T> forward(view<const T> x, mlp_workspace<T, Backend>& ws) const {
    const std::size_t batch = check_batch(x, ws, "rlkernels::mlp::forward");
    ws.batch_ = batch;
    const std::size_t layers = layout_.num_layers();
    if constexpr (is_host_backend_v<Backend>) {
      for_each_chunk(chunk_backend(), batch, detail::mlp_chunk_rows, [&](std::size_t, std::size_t r0, std::size_t r1) {
        const Eigen::Index rows = Eigen::Index(r1 - r0);
        for (std::size_t l = 0; l < layers; ++l) {
          const int in = layout_.fan_in(l), out = layout_.fan_out(l);
          const T* src = l == 0 ? x.data() : ws.outputs_[l - 1].data();
          T* dst = ws.outputs_[l].data() + r0 * std::size_t(out);
          detail::const_row_map<T> X(src + r0 * std::size_t(in), rows, in);
          detail::const_row_map<T> W(parameters_.data() + layout_.weight_offset(l), out, in);
          detail::const_vector_map<T> b(parameters_.data() + layout_.bias_offset(l), out);
          detail::row_map<T> Z(dst, rows, out);
          Z.noalias() = X * W.transpose();
          Z.rowwise() += b.transpose();
          detail::apply_activation_host(layout_.activation_of(l), dst, std::size_t(rows) * std::size_t(out));
        }
      });
    }
#if RLK_HAS_CUDA
    else {
      const detail::device_guard guard(backend_.device);
      cublasHandle_t h = cublas_.get();
      const int rows = int(batch);  // <= INT_MAX: check_batch
      const T one = T(1), zero = T(0);
      for (std::size_t l = 0; l < layers; ++l) {
        const int in = layout_.fan_in(l), out = layout_.fan_out(l);
        const T* src = l == 0 ? x.data() : ws.outputs_[l - 1].data();
        T* dst = ws.outputs_[l].data();
        // Column-major view: Z^T [out, B] = W [out, in] (stored as W^T col-major) ^T * X^T [in, B].
        RLK_CUBLAS_CHECK(detail::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one,
                                      parameters_.data() + layout_.weight_offset(l), in, src, in, &zero, dst, out));
        for_each_index(backend_, batch * std::size_t(out),
                       detail::bias_activation_kernel<T>{dst, parameters_.data() + layout_.bias_offset(l),
                                                         std::size_t(out), layout_.activation_of(l)});
      }
    }
#endif
    return ws.output();
  }

  /// @brief Backward pass for the batch of the last forward(x, ws): from grad_output = d loss / d y
  /// [B, output_size], writes d loss / d parameters into gradients() (or adds it, when
  /// `accumulate`) and, when grad_input is given, d loss / d x [B, input_size] into it.
  /// @param x the same input [B, input_size] the forward pass saw, unchanged since
  /// @param grad_output d loss / d y [B, output_size]
  /// @param ws the workspace of the forward pass
  /// @param grad_input d loss / d x [B, input_size] output, or empty
  /// @param accumulate add to gradients() instead of overwriting them
  /// @throw std::invalid_argument on sizes that do not match the last forward pass or null views;
  ///        nothing is written then
  void backward(view<const T> x, view<const T> grad_output, mlp_workspace<T, Backend>& ws, view<T> grad_input = {},
                bool accumulate = false) {
    constexpr const char* who = "rlkernels::mlp::backward";
    const std::size_t batch = check_backward_inputs(x, grad_output, ws, who);
    const bool want_input = detail::check_optional(grad_input.size(), grad_input.data(),
                                                   batch * std::size_t(input_size()), who, "grad_input");
    backward_pass(x, grad_output, ws, grad_input, want_input, accumulate, true);
  }

  /// @brief d loss / d x [B, input_size] alone for the batch of the last forward(x, ws): backward()
  /// without the parameter gradients, which stay unchanged (for a path through a network that is
  /// not being trained by this loss, e.g. dQ/da through a critic in SAC's or TD3's actor loss).
  /// The result equals backward()'s grad_input bit for bit.
  /// @param x the same input [B, input_size] the forward pass saw, unchanged since
  /// @param grad_output d loss / d y [B, output_size]
  /// @param ws the workspace of the forward pass
  /// @param grad_input d loss / d x [B, input_size] output
  /// @throw std::invalid_argument on sizes that do not match the last forward pass or null views
  void input_gradient(view<const T> x, view<const T> grad_output, mlp_workspace<T, Backend>& ws,
                      view<T> grad_input) {
    constexpr const char* who = "rlkernels::mlp::input_gradient";
    const std::size_t batch = check_backward_inputs(x, grad_output, ws, who);
    detail::check_view_size(grad_input.size(), grad_input.data(), batch * std::size_t(input_size()), who,
                            "grad_input");
    backward_pass(x, grad_output, ws, grad_input, true, false, false);
  }

  /// Bytes of backend memory the parameters and gradients take.
  static std::size_t bytes_required(const mlp_layout& layout) { return 2 * layout.num_parameters() * sizeof(T); }

 private:
  /// The backward pass behind backward() and input_gradient(): d loss / d x when want_input,
  /// d loss / d parameters (written or added) when parameter_gradients. Arguments are checked.
  void backward_pass(view<const T> x, view<const T> grad_output, mlp_workspace<T, Backend>& ws, view<T> grad_input,
                     bool want_input, bool accumulate, bool parameter_gradients) {
    const std::size_t batch = ws.batch_;
    const std::size_t layers = layout_.num_layers();
    const std::size_t P = num_parameters();
    if constexpr (is_host_backend_v<Backend>) {
      const std::size_t chunks = mlp_workspace<T, Backend>::chunks_for(batch);
      // One chunk writes (or adds) straight into gradients(): 0 + g == g, so the bits are the same.
      const bool direct = chunks == 1;
      T* const grads = gradients_.data();
      for_each_chunk(chunk_backend(), batch, detail::mlp_chunk_rows, [&](std::size_t c, std::size_t r0, std::size_t r1) {
        const Eigen::Index rows = Eigen::Index(r1 - r0);
        T* g = direct ? grads : ws.chunk_grads_.data() + c * P;
        const int width = layout_.max_width();
        T* delta = ws.delta_a_.data() + r0 * std::size_t(width);
        T* next = ws.delta_b_.data() + r0 * std::size_t(width);
        {
          const int out = output_size();
          const std::size_t n = std::size_t(rows) * std::size_t(out);
          std::copy(grad_output.data() + r0 * std::size_t(out), grad_output.data() + r0 * std::size_t(out) + n, delta);
          detail::multiply_activation_derivative_host(layout_.activation_of(layers - 1),
                                                      ws.outputs_[layers - 1].data() + r0 * std::size_t(out), delta, n);
        }
        for (std::size_t l = layers; l-- > 0;) {
          const int in = layout_.fan_in(l), out = layout_.fan_out(l);
          const T* src = l == 0 ? x.data() : ws.outputs_[l - 1].data();
          detail::const_row_map<T> X(src + r0 * std::size_t(in), rows, in);
          detail::const_row_map<T> D(delta, rows, out);
          if (parameter_gradients) {
            detail::row_map<T> dW(g + layout_.weight_offset(l), out, in);
            detail::vector_map<T> db(g + layout_.bias_offset(l), out);
            if (direct && accumulate) {
              dW.noalias() += D.transpose() * X;
              db.noalias() += D.colwise().sum().transpose();
            } else {
              dW.noalias() = D.transpose() * X;
              db.noalias() = D.colwise().sum().transpose();
            }
          }
          if (l > 0 || want_input) {
            detail::const_row_map<T> W(parameters_.data() + layout_.weight_offset(l), out, in);
            T* dst = l > 0 ? next : grad_input.data() + r0 * std::size_t(in);
            detail::row_map<T> N(dst, rows, in);
            N.noalias() = D * W;
            if (l > 0) {
              detail::multiply_activation_derivative_host(layout_.activation_of(l - 1),
                                                          ws.outputs_[l - 1].data() + r0 * std::size_t(in), next,
                                                          std::size_t(rows) * std::size_t(in));
              std::swap(delta, next);
            }
          }
        }
      });
      if (!direct && parameter_gradients) {
        for_each_index(backend_, P,
                       detail::sum_chunk_gradients_kernel<T>{ws.chunk_grads_.data(), grads, chunks, P, accumulate});
      }
    }
#if RLK_HAS_CUDA
    else {
      const detail::device_guard guard(backend_.device);
      cublasHandle_t h = cublas_.get();
      const int rows = int(batch);  // <= INT_MAX: check_batch saw it in forward (ws.batch_)
      const T one = T(1), zero = T(0), beta = accumulate ? T(1) : T(0);
      T* delta = ws.delta_a_.data();
      T* next = ws.delta_b_.data();
      const int out_last = output_size();
      for_each_index(backend_, batch * std::size_t(out_last),
                     detail::delta_kernel<T>{grad_output.data(), ws.outputs_[layers - 1].data(), delta,
                                             layout_.activation_of(layers - 1)});
      for (std::size_t l = layers; l-- > 0;) {
        const int in = layout_.fan_in(l), out = layout_.fan_out(l);
        const T* src = l == 0 ? x.data() : ws.outputs_[l - 1].data();
        if (parameter_gradients) {
          T* g = gradients_.data();
          // dW^T [in, out] (col-major) = X^T [in, B] * delta [B, out] (delta^T col-major [out, B], transposed).
          RLK_CUBLAS_CHECK(detail::gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &one, src, in, delta, out,
                                        &beta, g + layout_.weight_offset(l), in));
          // db [out] = delta^T [out, B] * ones [B].
          RLK_CUBLAS_CHECK(detail::gemv(h, CUBLAS_OP_N, out, rows, &one, delta, out, ws.ones_.data(), 1, &beta,
                                        g + layout_.bias_offset(l), 1));
        }
        if (l > 0 || want_input) {
          T* dst = l > 0 ? next : grad_input.data();
          // dX^T [in, B] = W^T [in, out] (W row-major is W^T col-major) * delta^T [out, B].
          RLK_CUBLAS_CHECK(detail::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &one,
                                        parameters_.data() + layout_.weight_offset(l), in, delta, out, &zero, dst, in));
          if (l > 0) {
            for_each_index(backend_, batch * std::size_t(in),
                           detail::delta_kernel<T>{nullptr, ws.outputs_[l - 1].data(), next, layout_.activation_of(l - 1)});
            std::swap(delta, next);
          }
        }
      }
    }
#endif
  }

  static mlp_layout checked(const Backend& backend, mlp_layout layout) {
    layout.validate("rlkernels::mlp");
    detail::expect_fits(backend, bytes_required(layout),
                        detail::concat("rlkernels::mlp: ", layout.num_parameters(), " parameters"));
    return layout;
  }
  static view<T> slice(buffer<T, Backend>& b, std::size_t offset, std::size_t n) { return view<T>(b.data() + offset, n); }
#if RLK_HAS_CUDA
  static auto make_cublas(const Backend& backend) {
    if constexpr (std::is_same_v<Backend, cuda_backend>) {
      return detail::cublas_handle(backend);
    } else {
      (void)backend;
      return detail::no_cublas_handle{};
    }
  }
#endif

  auto chunk_backend() const {
    if constexpr (std::is_same_v<Backend, openmp_backend>) {
      openmp_backend b = backend_;
      b.serial_below = 0;  // a chunk of rows is heavy work: always worth a thread
      return b;
    } else {
      return backend_;
    }
  }

  std::size_t check_batch(view<const T> x, const mlp_workspace<T, Backend>& ws, const char* who) const {
    const std::size_t in = std::size_t(input_size());
    RLK_EXPECTS(x.data() != nullptr && x.size() > 0 && x.size() % in == 0, std::invalid_argument, who,
                ": x must be a non-null [B, ", in, "] view with B >= 1; got ", x.size(), " elements");
    const std::size_t batch = x.size() / in;
    detail::check_mlp_batch(batch, who);
    RLK_EXPECTS(batch <= ws.max_batch_, std::invalid_argument, who, ": batch of ", batch,
                " rows exceeds the workspace's max_batch ", ws.max_batch_);
    RLK_EXPECTS(ws.widths_.size() == layout_.num_layers() &&
                    std::equal(ws.widths_.begin(), ws.widths_.end(), layout_.sizes.begin() + 1) &&
                    ws.num_parameters_ == num_parameters(),
                std::invalid_argument, who, ": the workspace was made for a network of another shape");
    return batch;
  }

  /// check_batch, plus: x is the batch of the workspace's last forward pass and grad_output is
  /// [B, output_size] (what backward and input_gradient both need).
  std::size_t check_backward_inputs(view<const T> x, view<const T> grad_output, const mlp_workspace<T, Backend>& ws,
                                    const char* who) const {
    const std::size_t batch = check_batch(x, ws, who);
    RLK_EXPECTS(batch == ws.batch_, std::invalid_argument, who, ": x has ", batch,
                " rows but the workspace's last forward pass had ", ws.batch_);
    detail::check_view_size(grad_output.size(), grad_output.data(), batch * std::size_t(output_size()), who,
                            "grad_output");
    return batch;
  }

  Backend backend_;
  mlp_layout layout_;
  buffer<T, Backend> parameters_;
  buffer<T, Backend> gradients_;
#if RLK_HAS_CUDA
  // Created with the network (on its device, bound to its stream), so the passes, which are const
  // or may run concurrently on other workspaces, never create or reconfigure it.
  std::conditional_t<std::is_same_v<Backend, cuda_backend>, detail::cublas_handle, detail::no_cublas_handle> cublas_;
#endif
};

template <class T, class Backend>
mlp_workspace<T, Backend>::mlp_workspace(const mlp<T, Backend>& net, std::size_t max_batch) {
  constexpr const char* who = "rlkernels::mlp_workspace";
  const mlp_layout& layout = net.layout();
  RLK_EXPECTS(max_batch >= 1, std::invalid_argument, who, ": max_batch must be >= 1");
  RLK_EXPECTS(max_batch <= detail::mlp_max_batch, std::invalid_argument, who, ": max_batch ", max_batch,
              " exceeds ", detail::mlp_max_batch, " rows (INT_MAX: cuBLAS takes the batch as an int)");
  const Backend& backend = net.backend();
  detail::expect_fits(backend, bytes_required(layout, max_batch),
                      detail::concat(who, ": ", max_batch, " rows of a network with ", layout.num_parameters(),
                                     " parameters"));
  max_batch_ = max_batch;
  num_parameters_ = layout.num_parameters();
  for (std::size_t l = 0; l < layout.num_layers(); ++l) {
    widths_.push_back(layout.fan_out(l));
    outputs_.emplace_back(backend, max_batch * std::size_t(layout.fan_out(l)));
  }
  delta_a_ = buffer<T, Backend>(backend, max_batch * std::size_t(layout.max_width()));
  delta_b_ = buffer<T, Backend>(backend, max_batch * std::size_t(layout.max_width()));
  if constexpr (is_host_backend_v<Backend>) {
    const std::size_t chunks = chunks_for(max_batch);
    if (chunks > 1) chunk_grads_ = buffer<T, Backend>(backend, chunks * layout.num_parameters());
  } else {
    ones_ = buffer<T, Backend>(backend, max_batch);
    for_each_index(backend, max_batch, detail::mlp_fill_kernel<T>{ones_.data(), T(1)});
  }
}

}  // namespace rlkernels
