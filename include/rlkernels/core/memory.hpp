// rlkernels/core/memory.hpp
// Owning buffers per backend (host memory for serial/openmp, device memory for CUDA) and the
// trivially copyable views (pointer + extent) that kernels take. Buffers copy to and from host
// vectors for inspection; they are move-only.
#pragma once

#include "backend.hpp"
#include "config.hpp"
#include "error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#if RLK_HAS_CUDA
#include <atomic>
#endif

namespace rlkernels {

/// @brief A non-owning, trivially copyable view of `size` contiguous elements of T: what kernels
/// take. Multi-dimensional arrays are row-major and documented where they are declared (e.g.
/// observations are [N, observation_size]).
template <class T>
class view {
public:
  using value_type = std::remove_cv_t<T>;  ///< element type without const
  using element_type = T;                  ///< element type as viewed (may be const)

  /// An empty view.
  RLK_HOST_DEVICE constexpr view() noexcept : data_(nullptr), size_(0) {}
  /// Views `size` elements starting at `data` (host or device memory; the view does not know).
  RLK_HOST_DEVICE constexpr view(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /// A view of T converts to a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  RLK_HOST_DEVICE constexpr view(view<U> other) noexcept : data_(other.data()), size_(other.size()) {}

  /// Pointer to the first element.
  RLK_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  /// Number of elements.
  RLK_HOST_DEVICE constexpr std::size_t size() const noexcept { return size_; }
  /// True when the view has no elements.
  RLK_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// Element i (unchecked; dereference only in the memory space the data lives in).
  RLK_HOST_DEVICE constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  /// Iterator to the first element.
  RLK_HOST_DEVICE constexpr T* begin() const noexcept { return data_; }
  /// Iterator past the last element.
  RLK_HOST_DEVICE constexpr T* end() const noexcept { return data_ + size_; }
  /// Elements [offset, offset + count).
  RLK_HOST_DEVICE constexpr view subview(std::size_t offset, std::size_t count) const noexcept {
    return view(data_ + offset, count);
  }

private:
  T* data_;
  std::size_t size_;
};

/// Makes a view of a host vector (for host backends, or to pass host data to `buffer::assign`).
template <class T>
view<T> make_view(std::vector<T>& v) { return view<T>(v.data(), v.size()); }
template <class T>
view<const T> make_view(const std::vector<T>& v) { return view<const T>(v.data(), v.size()); }

namespace detail {
/// Makes a parameter a non-deduced context, so a `view<T>` argument converts to `view<const T>`.
template <class T>
struct type_identity {
  using type = T;
};
template <class T>
using type_identity_t = typename type_identity<T>::type;

}  // namespace detail

namespace detail {

inline std::string format_bytes(std::size_t bytes) {
  const double mib = double(bytes) / (1024.0 * 1024.0);
  return concat(bytes, " bytes (", mib, " MiB)");
}

/// Allocation and copies per backend. Host memory is 64-byte aligned; OpenMP buffers are first
/// touched by the threads that will later use them (NUMA placement follows the static schedule).
template <class Backend>
struct memory_ops;

template <>
struct memory_ops<serial_backend> {
  static void* allocate(serial_backend, std::size_t bytes) {
    void* p = ::operator new(bytes, std::align_val_t(64), std::nothrow);
    if (!p) throw out_of_memory(bytes, concat("rlkernels: cannot allocate ", format_bytes(bytes), " of host memory"));
    return p;
  }
  static void deallocate(serial_backend, void* p) noexcept { ::operator delete(p, std::align_val_t(64)); }
  static void zero(serial_backend, void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
  static void to_host(serial_backend, void* dst, const void* src, std::size_t bytes) {
    count_host_sync(host_sync_kind::read);
    std::memcpy(dst, src, bytes);
  }
  static void from_host(serial_backend, void* dst, const void* src, std::size_t bytes) {
    count_host_sync(host_sync_kind::write);
    std::memcpy(dst, src, bytes);
  }
  static void copy(serial_backend, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
};

struct zero_chunk {
  unsigned char* p;
  std::size_t bytes;
  void operator()(std::size_t chunk) const {
    constexpr std::size_t chunk_bytes = std::size_t(1) << 16;
    const std::size_t begin = chunk * chunk_bytes;
    const std::size_t len = bytes - begin < chunk_bytes ? bytes - begin : chunk_bytes;
    std::memset(p + begin, 0, len);
  }
};

template <>
struct memory_ops<openmp_backend> {
  static void* allocate(openmp_backend, std::size_t bytes) { return memory_ops<serial_backend>::allocate(serial, bytes); }
  static void deallocate(openmp_backend, void* p) noexcept { memory_ops<serial_backend>::deallocate(serial, p); }
  static void zero(openmp_backend b, void* p, std::size_t bytes) {
    constexpr std::size_t chunk_bytes = std::size_t(1) << 16;
    for_each_index(b, (bytes + chunk_bytes - 1) / chunk_bytes, zero_chunk{static_cast<unsigned char*>(p), bytes});
  }
  static void to_host(openmp_backend, void* dst, const void* src, std::size_t bytes) {
    memory_ops<serial_backend>::to_host(serial, dst, src, bytes);
  }
  static void from_host(openmp_backend, void* dst, const void* src, std::size_t bytes) {
    memory_ops<serial_backend>::from_host(serial, dst, src, bytes);
  }
  static void copy(openmp_backend, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
};

#if RLK_HAS_CUDA
/// What rlkernels knows about one device's allocator: whether it has stream-ordered memory pools
/// (cudaMallocAsync), and, if so, that the current pool's release threshold has been raised.
enum class device_pool_state : signed char { unknown = 0, pools = 1, no_pools = 2 };
inline constexpr int max_cached_devices = 64;

/// Once per device (on the first allocation there; the device must be current): asks whether the
/// device supports memory pools and, if it does, raises the release threshold of its current pool
/// from the default 0 to "keep everything". With 0, every synchronisation hands the pool's free
/// memory back to the OS and the next allocation maps it again, which costs far more than the
/// allocation itself. A threshold the program set itself (non-zero) is left alone. Two threads
/// that race on the first call both do the (idempotent) set-up. Devices beyond
/// max_cached_devices ask every time.
inline bool device_has_memory_pools(int device) {
  static std::atomic<signed char> cache[max_cached_devices] = {};
  const bool cached = device >= 0 && device < max_cached_devices;
  if (cached) {
    const auto state = static_cast<device_pool_state>(cache[device].load(std::memory_order_acquire));
    if (state != device_pool_state::unknown) return state == device_pool_state::pools;
  }
  int supported = 0;
  check_cuda_status(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device),
                    "cudaDeviceGetAttribute", __FILE__, __LINE__);
  if (supported != 0) {
    cudaMemPool_t pool = nullptr;
    check_cuda_status(cudaDeviceGetMemPool(&pool, device), "cudaDeviceGetMemPool", __FILE__, __LINE__);
    std::uint64_t threshold = 0;
    check_cuda_status(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                      "cudaMemPoolGetAttribute", __FILE__, __LINE__);
    if (threshold == 0) {
      threshold = UINT64_MAX;
      check_cuda_status(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                        "cudaMemPoolSetAttribute", __FILE__, __LINE__);
    }
  }
  if (cached) {
    cache[device].store(static_cast<signed char>(supported != 0 ? device_pool_state::pools : device_pool_state::no_pools),
                        std::memory_order_release);
  }
  return supported != 0;
}

/// Memory the device's current pool holds but does not use (freed by cudaFreeAsync and kept
/// because of the raised threshold): cudaMemGetInfo counts it as taken, yet the next
/// cudaMallocAsync gets it. 0 without pools.
inline std::size_t pool_reserve_unused(int device) {
  if (!device_has_memory_pools(device)) return 0;
  cudaMemPool_t pool = nullptr;
  check_cuda_status(cudaDeviceGetMemPool(&pool, device), "cudaDeviceGetMemPool", __FILE__, __LINE__);
  std::uint64_t reserved = 0, used = 0;
  check_cuda_status(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
                    "cudaMemPoolGetAttribute", __FILE__, __LINE__);
  check_cuda_status(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used),
                    "cudaMemPoolGetAttribute", __FILE__, __LINE__);
  return reserved > used ? static_cast<std::size_t>(reserved - used) : 0;
}

/// Device memory of the backend's device, ordered on its stream: cudaMallocAsync/cudaFreeAsync
/// where the device has memory pools, else cudaMalloc/cudaFree (the free then first waits for the
/// stream, so that queued work on the memory finishes before it goes). Every call runs with the
/// backend's device current (device_guard).
template <>
struct memory_ops<cuda_backend> {
  static void* allocate(cuda_backend b, std::size_t bytes) {
    const device_guard guard(b.device);
    check_deferred_cuda_error_fast();
    const bool pools = device_has_memory_pools(b.device);
    void* p = nullptr;
    cudaError_t status = pools ? cudaMallocAsync(&p, bytes, b.stream) : cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation && pools) {
      // The pool's free memory may be in pieces too small for this request: hand the unused
      // pieces back to the OS and try once more, mapping fresh memory.
      (void)cudaGetLastError();
      cudaMemPool_t pool = nullptr;
      if (cudaDeviceGetMemPool(&pool, b.device) == cudaSuccess && cudaMemPoolTrimTo(pool, 0) == cudaSuccess) {
        status = cudaMallocAsync(&p, bytes, b.stream);
      }
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // an allocation failure is not sticky: reset the last-error slot
      std::size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      (void)cudaGetLastError();
      throw out_of_memory(bytes, concat("rlkernels: cannot allocate ", format_bytes(bytes), " of device memory on device ",
                                        b.device, "; free: ", format_bytes(free_bytes), " of ", format_bytes(total_bytes)));
    }
    if (status != cudaSuccess) throw_cuda_error(status, pools ? "cudaMallocAsync" : "cudaMalloc", __FILE__, __LINE__);
    debug_sync_after(pools ? "cudaMallocAsync" : "cudaMalloc", __FILE__, __LINE__);
    return p;
  }
  /// Cannot throw (buffers free in destructors): a failure is recorded and reported by the next
  /// checked CUDA call (see check_deferred_cuda_error).
  static void deallocate(cuda_backend b, void* p) noexcept {
    const device_guard guard(b.device, std::nothrow);
    if (guard.status() != cudaSuccess) {
      record_deferred_cuda_error(guard.status(), "cudaSetDevice (before freeing device memory)", __FILE__, __LINE__);
      return;
    }
    bool pools = false;
    try {
      pools = device_has_memory_pools(b.device);  // known since the allocation: a cached load
    } catch (const cuda_error& e) {
      record_deferred_cuda_error(e.code(), "cudaDeviceGetAttribute (before freeing device memory)", __FILE__, __LINE__);
      return;
    } catch (...) {
      record_deferred_cuda_error(cudaErrorUnknown, "freeing device memory", __FILE__, __LINE__);
      return;
    }
    if (pools) {
      const cudaError_t status = cudaFreeAsync(p, b.stream);
      if (status != cudaSuccess) record_deferred_cuda_error(status, "cudaFreeAsync", __FILE__, __LINE__);
    } else {
      const cudaError_t waited = cudaStreamSynchronize(b.stream);
      if (waited != cudaSuccess) record_deferred_cuda_error(waited, "cudaStreamSynchronize (before cudaFree)", __FILE__, __LINE__);
      const cudaError_t status = cudaFree(p);
      if (status != cudaSuccess && status != waited) record_deferred_cuda_error(status, "cudaFree", __FILE__, __LINE__);
    }
  }
  static void zero(cuda_backend b, void* p, std::size_t bytes) {
    const device_guard guard(b.device);
    RLK_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, b.stream));
  }
  static void to_host(cuda_backend b, void* dst, const void* src, std::size_t bytes) {
    count_host_sync(host_sync_kind::read);
    const device_guard guard(b.device);
    RLK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, b.stream));
    RLK_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  }
  static void from_host(cuda_backend b, void* dst, const void* src, std::size_t bytes) {
    count_host_sync(host_sync_kind::write);
    const device_guard guard(b.device);
    RLK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, b.stream));
    RLK_CUDA_CHECK(cudaStreamSynchronize(b.stream));  // the host source may go away after return
  }
  static void copy(cuda_backend b, void* dst, const void* src, std::size_t bytes) {
    const device_guard guard(b.device);
    RLK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, b.stream));
  }
};
#endif

/// Upper bound on what one allocation on the backend can get: physical memory on the host (an
/// overcommitting kernel would accept more and kill the process later); on CUDA, the free memory
/// of the backend's device plus what its memory pool holds unused (memory that a dropped object
/// freed and that the pool keeps for the next allocation). Returns SIZE_MAX where it cannot be told.
inline std::size_t memory_capacity(serial_backend) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return std::size_t(pages) * std::size_t(page);
#endif
  return std::size_t(-1);
}
inline std::size_t memory_capacity(openmp_backend) { return memory_capacity(serial); }
#if RLK_HAS_CUDA
inline std::size_t memory_capacity(cuda_backend backend) {
  const device_guard guard(backend.device);
  std::size_t free_bytes = 0, total_bytes = 0;
  RLK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t pooled = pool_reserve_unused(backend.device);
  return free_bytes + pooled < free_bytes ? std::size_t(-1) : free_bytes + pooled;
}
#endif

/// Throws out_of_memory, naming `what`, the bytes asked for and the memory available, when
/// `bytes` cannot fit on the backend; for containers to call before they allocate anything.
template <class Backend>
void expect_fits(const Backend& backend, std::size_t bytes, const std::string& what) {
  const std::size_t available = memory_capacity(backend);
  if (bytes > available) {
    throw out_of_memory(bytes, concat(what, " needs ", format_bytes(bytes), " of ", backend_name(backend),
                                      " memory; available: ", format_bytes(available)));
  }
}

/// Checks a view argument: exactly `want` elements and not null; the message names the function
/// (`who`) and the argument (`name`). Used by every batched function to check its inputs.
inline void check_view_size(std::size_t size, const void* data, std::size_t want, const char* who, const char* name) {
  RLK_EXPECTS(size == want, std::invalid_argument, who, ": ", name, " has ", size, " elements, expected ", want);
  RLK_EXPECTS(data != nullptr, std::invalid_argument, who, ": ", name, " is a null view");
}

/// Checks an optional view argument: empty (null, size 0: skipped, returns false) or exactly `want`
/// elements and not null (returns true).
inline bool check_optional(std::size_t size, const void* data, std::size_t want, const char* who, const char* name) {
  if (size == 0 && data == nullptr) return false;
  check_view_size(size, data, want, who, name);
  return true;
}

/// Throws std::invalid_argument when `data` is not in the backend's memory: on CUDA a pointer
/// must be device (or managed) memory; on the host backends every pointer is accepted.
template <class Backend>
void expect_backend_memory(const Backend& backend, const void* data, const char* who, const char* name) {
  (void)backend, (void)data, (void)who, (void)name;
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    cudaPointerAttributes attributes{};
    RLK_CUDA_CHECK(cudaPointerGetAttributes(&attributes, data));
    RLK_EXPECTS(attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged,
                std::invalid_argument, who, ": ", name,
                " must be in device (or managed) memory for the CUDA backend; copy it into a buffer<..., "
                "cuda_backend> first");
  }
#endif
}

}  // namespace detail

/// @brief An owning, move-only array of `size()` elements of T in the memory of `Backend` (host
/// memory for serial/openmp, device memory for CUDA). Elements are zero-initialised. Hands out
/// views for kernels; `to_host()` and `assign()` copy to and from the host.
/// @tparam T a trivially copyable element type
template <class T, class Backend>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>, "rlkernels::buffer<T>: T must be trivially copyable");
  static_assert(is_backend_v<Backend>, "rlkernels::buffer<T, Backend>: Backend must be serial_backend, openmp_backend or cuda_backend");
  using ops = detail::memory_ops<Backend>;

public:
  using value_type = T;          ///< element type
  using backend_type = Backend;  ///< where the memory lives

  /// An empty buffer (no allocation).
  buffer() = default;
  /// Allocates `size` zeroed elements. @throw out_of_memory naming the bytes asked for (and free).
  buffer(Backend backend, std::size_t size) : backend_(backend), size_(size) {
    if (size_ != 0) {
      RLK_EXPECTS(size_ <= std::size_t(-1) / sizeof(T), std::length_error, "rlkernels::buffer: ", size_,
                  " elements of ", sizeof(T), " bytes overflow the address space");
      data_ = static_cast<T*>(ops::allocate(backend_, bytes()));
      try {
        ops::zero(backend_, data_, bytes());
      } catch (...) {  // no destructor runs for a constructor that throws
        ops::deallocate(backend_, std::exchange(data_, nullptr));
        throw;
      }
    }
  }
  /// Allocates and copies the contents of a host vector.
  buffer(Backend backend, const std::vector<T>& host) : buffer(backend, host.size()) { assign(host); }

  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  /// Takes over the memory of `other`, which becomes empty.
  buffer(buffer&& other) noexcept { swap(other); }
  /// Frees this buffer's memory and takes over that of `other`, which becomes empty.
  buffer& operator=(buffer&& other) noexcept {
    if (this != &other) {
      buffer(std::move(other)).swap(*this);
    }
    return *this;
  }
  ~buffer() {
    if (data_) ops::deallocate(backend_, data_);
  }
  /// Exchanges the contents (and backends) of two buffers.
  void swap(buffer& other) noexcept {
    std::swap(backend_, other.backend_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  /// Number of elements.
  std::size_t size() const noexcept { return size_; }
  /// Size in bytes.
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  /// True when the buffer holds no elements.
  bool empty() const noexcept { return size_ == 0; }
  /// Pointer to the first element (a device pointer for CUDA).
  T* data() noexcept { return data_; }
  /// @copydoc data()
  const T* data() const noexcept { return data_; }
  /// The backend the memory belongs to (for CUDA: the stream its copies use).
  const Backend& backend() const noexcept { return backend_; }

  /// A view of the elements (device pointers for CUDA).
  rlkernels::view<T> view() noexcept { return rlkernels::view<T>(data_, size_); }
  /// A read-only view of the elements.
  rlkernels::view<const T> view() const noexcept { return rlkernels::view<const T>(data_, size_); }
  /// A read-only view even of a non-const buffer.
  rlkernels::view<const T> cview() const noexcept { return rlkernels::view<const T>(data_, size_); }

  /// Copies all elements to a new host vector (waits for queued work on CUDA).
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    if (size_ != 0) ops::to_host(backend_, out.data(), data_, bytes());
    return out;
  }
  /// Copies one element to the host.
  T get(std::size_t i) const {
    RLK_EXPECTS(i < size_, std::out_of_range, "rlkernels::buffer::get: index ", i, " >= size ", size_);
    T out;
    ops::to_host(backend_, &out, data_ + i, sizeof(T));
    return out;
  }
  /// Overwrites all elements from host memory. @throw std::invalid_argument if sizes differ.
  void assign(const T* host, std::size_t count) {
    RLK_EXPECTS(count == size_, std::invalid_argument, "rlkernels::buffer::assign: got ", count,
                " elements for a buffer of ", size_);
    RLK_EXPECTS(host != nullptr || count == 0, std::invalid_argument, "rlkernels::buffer::assign: null source");
    if (count != 0) ops::from_host(backend_, data_, host, bytes());
  }
  /// Overwrites all elements from a host vector of the same size.
  void assign(const std::vector<T>& host) { assign(host.data(), host.size()); }
  /// Sets every byte to zero.
  void zero() {
    if (size_ != 0) ops::zero(backend_, data_, bytes());
  }

private:
  Backend backend_{};
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// @brief Copies `src` into `dst` within the backend's memory (device to device on CUDA,
/// asynchronously on the backend's stream).
/// @throw std::invalid_argument if the sizes differ or a non-empty view is null
template <class Backend, class U, class T>
void copy(const Backend& backend, view<U> src, view<T> dst) {
  static_assert(std::is_same_v<std::remove_const_t<U>, T>,
                "rlkernels::copy: the source and destination element types differ (or the destination is const)");
  RLK_EXPECTS(src.size() == dst.size(), std::invalid_argument, "rlkernels::copy: source has ", src.size(),
              " elements, destination ", dst.size());
  if (src.size() == 0) return;
  RLK_EXPECTS(src.data() != nullptr && dst.data() != nullptr, std::invalid_argument, "rlkernels::copy: null view");
  detail::memory_ops<Backend>::copy(backend, dst.data(), src.data(), src.size() * sizeof(T));
}

namespace detail {
template <class U, class T>
struct convert_kernel {
  const U* src;
  T* dst;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { dst[i] = static_cast<T>(src[i]); }
};
}  // namespace detail

/// @brief dst[i] = static_cast<T>(src[i]) on the backend: for example the float observations of a
/// grid env ([N, obs], values 0 and 1) as uint8 for compact storage (a replay buffer of MinAtar
/// frames takes a quarter of the memory).
/// @throw std::invalid_argument if the sizes differ or a non-empty view is null
template <class Backend, class U, class T>
void convert(const Backend& backend, view<U> src, view<T> dst) {
  static_assert(!std::is_const_v<T>, "rlkernels::convert: the destination must be writable");
  RLK_EXPECTS(src.size() == dst.size(), std::invalid_argument, "rlkernels::convert: source has ", src.size(),
              " elements, destination ", dst.size());
  if (src.size() == 0) return;
  RLK_EXPECTS(src.data() != nullptr && dst.data() != nullptr, std::invalid_argument, "rlkernels::convert: null view");
  for_each_index(backend, src.size(), detail::convert_kernel<std::remove_const_t<U>, T>{src.data(), dst.data()});
}

}  // namespace rlkernels
