// rlkernels/core/backend.hpp
// Where a batch runs. The caller passes a backend value first (Thrust-style): `serial` (a plain
// loop), `openmp` (a parallel loop on the host cores) or `cuda_backend{stream, device}` (a CUDA
// device; only in translation units compiled by nvcc). `for_each_index` runs a functor over [0, n) on one.
#pragma once

#include "config.hpp"
#include "error.hpp"
#include "host_sync.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#if RLK_HAS_OPENMP
#include <omp.h>
#endif

namespace rlkernels {

/// @brief Runs batches in a plain loop on the calling host thread.
struct serial_backend {};

/// @brief Runs batches in parallel on the host with OpenMP (static schedule, so each element is
/// always handled the same way). Without OpenMP enabled at compile time it runs serially.
struct openmp_backend {
  /// Number of threads; 0 uses OpenMP's default (OMP_NUM_THREADS or all cores).
  int num_threads = 0;
  /// Batches with fewer elements run on the calling thread: a parallel region costs about a
  /// microsecond to open, more than stepping a thousand simple envs. Set 0 when each element is
  /// heavy (say, a network forward pass per env). Results are the same either way.
  std::size_t serial_below = 1024;
};

/// The serial host backend.
inline constexpr serial_backend serial{};
/// The OpenMP host backend with OpenMP's default thread count.
inline constexpr openmp_backend openmp{};

#if RLK_HAS_CUDA
namespace detail {
/// The device a backend made from `stream` alone runs on: the stream's own device (a created
/// stream belongs to the device that was current when it was created), else (the default streams,
/// or a toolkit without cudaStreamGetDevice) the device current now. Never throws: if CUDA cannot
/// tell (no device), 0, and the backend's first call reports the real error.
inline int default_device_of(cudaStream_t stream) noexcept {
  // A failed query also sets CUDA's last-error slot; it is reset here, so that the next launch
  // check does not report this query's failure as its own.
  int device = 0;
#if CUDART_VERSION >= 12080
  if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    if (cudaStreamGetDevice(stream, &device) == cudaSuccess) return device;
    (void)cudaGetLastError();
  }
#else
  (void)stream;
#endif
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = 0;
  }
  return device;
}

/// @brief Makes `device` the calling thread's current CUDA device for the guard's lifetime and
/// restores the previous one after (cudaSetDevice only when it differs, so the common one-GPU case
/// costs one cudaGetDevice, a thread-local read).
class device_guard {
 public:
  /// @throw cuda_error if the current device cannot be read or `device` cannot be made current
  explicit device_guard(int device) : device_guard(device, std::nothrow) {
    if (status_ != cudaSuccess) {
      throw_cuda_error(status_, switched_attempted_ ? "cudaSetDevice (rlkernels::detail::device_guard)"
                                                    : "cudaGetDevice (rlkernels::detail::device_guard)",
                       __FILE__, __LINE__);
    }
  }
  /// For calls that cannot throw (frees in destructors): the failure is in status() instead.
  device_guard(int device, std::nothrow_t) noexcept {
    status_ = cudaGetDevice(&previous_);
    if (status_ == cudaSuccess && previous_ != device) {
      switched_attempted_ = true;
      status_ = cudaSetDevice(device);
      switched_ = status_ == cudaSuccess;
    }
    // A failure (say, an invalid device id) is reported through status() or the exception, not
    // left in CUDA's last-error slot for the next launch check to report as its own.
    if (status_ != cudaSuccess) (void)cudaGetLastError();
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() {
    // previous_ was current a moment ago: this cannot fail but for a broken context, which the
    // next checked call reports anyway.
    if (switched_) (void)cudaSetDevice(previous_);
  }
  /// cudaSuccess, or why the nothrow constructor could not make the device current.
  cudaError_t status() const noexcept { return status_; }

 private:
  int previous_ = 0;
  bool switched_attempted_ = false;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};
}  // namespace detail

/// @brief Runs batches on CUDA device `device`, ordered on `stream`. Buffers made with this
/// backend live in that device's memory; every allocation, free, copy, handle creation and launch
/// made through it switches to `device` for the call (and back after), so one program can drive one
/// vec_env per GPU from one thread: `cuda_backend{stream_on_gpu1, 1}`.
///
/// `cuda_backend{stream}` and `cuda_backend{}` keep working: without a device, it is the stream's
/// device for a created stream, otherwise the device current when the backend value is made
/// (device 0 unless the program called cudaSetDevice) — the device the calls would have run on
/// before backends carried one, so such code behaves as before.
struct cuda_backend {
  cudaStream_t stream = nullptr;                     ///< the stream kernels, copies and allocations are ordered on (0: the device's legacy default stream)
  int device = detail::default_device_of(stream);    ///< the CUDA device everything runs on
};
#endif

/// True for backends whose data lives in host memory (serial, openmp).
template <class Backend>
struct is_host_backend
    : std::bool_constant<std::is_same_v<Backend, serial_backend> || std::is_same_v<Backend, openmp_backend>> {};

/// True for every backend type rlkernels knows.
template <class Backend>
struct is_backend : std::bool_constant<is_host_backend<Backend>::value
#if RLK_HAS_CUDA
                                       || std::is_same_v<Backend, cuda_backend>
#endif
                                       > {};

template <class Backend>
inline constexpr bool is_host_backend_v = is_host_backend<Backend>::value;
template <class Backend>
inline constexpr bool is_backend_v = is_backend<Backend>::value;

/// A readable name of the backend ("serial", "openmp", "cuda"), for logs and benchmarks.
inline const char* backend_name(serial_backend) { return "serial"; }
inline const char* backend_name(openmp_backend) { return "openmp"; }

/// Blocks until all work queued on the backend has finished (a no-op on host backends).
inline void synchronize(serial_backend) { detail::count_host_sync(detail::host_sync_kind::synchronization); }
inline void synchronize(openmp_backend) { detail::count_host_sync(detail::host_sync_kind::synchronization); }

#if RLK_HAS_CUDA
inline const char* backend_name(cuda_backend) { return "cuda"; }
inline void synchronize(cuda_backend backend) {
  detail::count_host_sync(detail::host_sync_kind::synchronization);
  const detail::device_guard guard(backend.device);
  RLK_CUDA_CHECK(cudaStreamSynchronize(backend.stream));
}
#endif

namespace detail {
#if RLK_HAS_CUDA
/// The functor is `__grid_constant__`: every thread reads it (an env's Params with its physics
/// model: kilobytes) where the launch put it, in the kernel's constant parameter space, through
/// a const reference. A plain by-value parameter whose address is taken (any call that is not
/// inlined, any array indexed at run time) is first copied into every thread's local memory:
/// 2.3 KB of stack and of copying per thread and launch for hopper<float>.
template <class F>
__global__ void for_each_index_kernel(std::size_t n, const __grid_constant__ F f) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

/// The block size of for_each_index_kernel<F> on `device`: the smallest that reaches the most
/// resident threads per SM that the kernel's registers and stack allow
/// (cudaOccupancyMaxPotentialBlockSize), asked once per kernel and device and kept. A fixed 256
/// would leave SMs partly empty for a kernel whose registers allow only a few warps per SM.
template <class F>
unsigned int block_size_for(int device) {
  constexpr int max_devices = 64;
  static std::atomic<int> cached[max_devices];  // zero (static storage): not asked yet on that device
  const bool cacheable = device >= 0 && device < max_devices;
  if (cacheable) {
    const int known = cached[device].load(std::memory_order_relaxed);
    if (known > 0) return static_cast<unsigned int>(known);
  }
  int min_grid = 0, block = 0;
  RLK_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, for_each_index_kernel<F>, 0, 0));
  if (block <= 0) block = 256;
  if (cacheable) cached[device].store(block, std::memory_order_relaxed);  // racing threads store the same value
  return static_cast<unsigned int>(block);
}

inline unsigned int grid_size_for(std::size_t n, unsigned int block) {
  // Enough blocks to cover n once, capped so that huge n uses the grid-stride loop.
  const std::size_t blocks = (n + block - 1) / block;
  return static_cast<unsigned int>(blocks < 65536u * 8u ? blocks : 65536u * 8u);
}
#endif
}  // namespace detail

/// @brief Calls `f(i)` for every i in [0, n) on `backend`. Each call must be independent of the
/// others. For CUDA, `f` must be a trivially copyable functor whose `operator()` is RLK_HOST_DEVICE
/// (or an extended `__device__` lambda); the launch is asynchronous on the backend's stream, on the
/// backend's device, and checked (with RLK_CUDA_SYNC_CHECK: also waited for, see docs/cuda.md).
template <class F>
void for_each_index(serial_backend, std::size_t n, const F& f) {
  for (std::size_t i = 0; i < n; ++i) f(i);
}

/// @copydoc for_each_index(serial_backend, std::size_t, const F&)
template <class F>
void for_each_index(openmp_backend backend, std::size_t n, const F& f) {
#if RLK_HAS_OPENMP
  if (n < backend.serial_below) {
    // A copy that the parallel region below never sees: with `f` itself (whose address the
    // region takes), GCC reloads its pointers every iteration and does not vectorise the loop.
    const F local = f;
    for_each_index(serial_backend{}, n, local);
    return;
  }
  const std::int64_t count = static_cast<std::int64_t>(n);
  const int threads = backend.num_threads > 0 ? backend.num_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < count; ++i) f(static_cast<std::size_t>(i));
#else
  (void)backend;
  for (std::size_t i = 0; i < n; ++i) f(i);
#endif
}

/// @brief Calls `f(c, begin, end)` for each chunk c of at most `chunk` consecutive indices,
/// [begin, end) = [c * chunk, min((c + 1) * chunk, n)), covering [0, n). Chunks are independent
/// and run in parallel on OpenMP (the whole batch runs on the calling thread when n is under
/// `serial_below`); the indices of one chunk run in order on one thread. The chunks depend only on
/// n and `chunk`, never on the thread count, so per-chunk results are the same for every thread
/// count. Host backends only: a chunk is sequential work.
template <class F>
void for_each_chunk(serial_backend, std::size_t n, std::size_t chunk, const F& f) {
  for (std::size_t c = 0, begin = 0; begin < n; ++c, begin += chunk) f(c, begin, begin + chunk < n ? begin + chunk : n);
}

/// @copydoc for_each_chunk(serial_backend, std::size_t, std::size_t, const F&)
template <class F>
void for_each_chunk(openmp_backend backend, std::size_t n, std::size_t chunk, const F& f) {
#if RLK_HAS_OPENMP
  if (n >= backend.serial_below && n > chunk) {
    const std::int64_t chunks = static_cast<std::int64_t>((n + chunk - 1) / chunk);
    const int threads = backend.num_threads > 0 ? backend.num_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::size_t begin = static_cast<std::size_t>(c) * chunk;
      f(static_cast<std::size_t>(c), begin, begin + chunk < n ? begin + chunk : n);
    }
    return;
  }
#endif
  (void)backend;
  for_each_chunk(serial_backend{}, n, chunk, f);
}

namespace detail {
/// The backend for cheap, memory-bound element-wise work (optimiser steps, scaling, small sums):
/// on OpenMP, batches under 32768 elements stay on the calling thread, where opening a parallel
/// region (microseconds on a loaded machine) would cost more than the loop. Results do not change.
inline openmp_backend light_backend(openmp_backend b) {
  if (b.serial_below < (std::size_t(1) << 15)) b.serial_below = std::size_t(1) << 15;
  return b;
}
template <class Backend>
Backend light_backend(const Backend& b) {
  return b;
}
}  // namespace detail

#if RLK_HAS_CUDA
/// @copydoc for_each_index(serial_backend, std::size_t, const F&)
template <class F>
void for_each_index(cuda_backend backend, std::size_t n, const F& f) {
  static_assert(std::is_trivially_copyable_v<F>, "rlkernels::for_each_index: the functor must be trivially copyable to run on CUDA");
  if (n == 0) return;
  const detail::device_guard guard(backend.device);
  const unsigned int block = detail::block_size_for<F>(backend.device);
  detail::for_each_index_kernel<<<detail::grid_size_for(n, block), block, 0, backend.stream>>>(n, f);
  RLK_CUDA_CHECK(cudaGetLastError());  // with RLK_CUDA_SYNC_CHECK: also waits and reports a fault of this kernel
}
#endif

}  // namespace rlkernels
