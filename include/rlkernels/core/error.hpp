// rlkernels/core/error.hpp
// Exceptions thrown by rlkernels and the macros that raise them: RLK_CUDA_CHECK for failed CUDA
// calls (with file, line and CUDA's error string) and RLK_EXPECTS for host-side preconditions.
// CUDA failures in destructors (which cannot throw) are kept and reported by the next checked call.
#pragma once

#include "config.hpp"

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#if RLK_HAS_CUDA
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#endif

#ifndef RLK_CUDA_SYNC_CHECK
/// Debug option: define to 1 (CMake: -DRLK_CUDA_SYNC_CHECK=ON) to synchronise the device after
/// every RLK_CUDA_CHECK'd call, kernel launch, cuBLAS and Thrust call, so that an asynchronous fault
/// is reported by the call that caused it. Slow; not usable during CUDA graph capture. Define it
/// the same way in every translation unit of a program.
#define RLK_CUDA_SYNC_CHECK 0
#endif

namespace rlkernels {

/// @brief Base class of the runtime failures rlkernels reports (not of argument errors, which are
/// `std::invalid_argument` or `std::out_of_range`).
class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// @brief A CUDA runtime call or kernel launch failed.
class cuda_error : public error {
public:
  /// @param code  the CUDA error code, as an int so this header needs no CUDA headers
  /// @param what  "file:line: call: CUDA error string"
  cuda_error(int code, const std::string& what) : error(what), code_(code) {}
  /// The cudaError_t value of the failure.
  int code() const noexcept { return code_; }

private:
  int code_;
};

/// @brief An allocation could not be satisfied; the message gives the bytes asked for and, where
/// known, the bytes free.
class out_of_memory : public error {
public:
  /// @param requested bytes asked for  @param what the full message
  out_of_memory(std::size_t requested, const std::string& what) : error(what), requested_(requested) {}
  /// Bytes that were requested.
  std::size_t requested() const noexcept { return requested_; }

private:
  std::size_t requested_;
};

/// @brief An action given to a batched step is outside the action space (a discrete index out of
/// range, or a NaN in a continuous action). The step that raised it changed nothing.
class invalid_action : public std::invalid_argument {
public:
  /// @param env_index first rejected env  @param value its action value  @param what the full message
  invalid_action(std::size_t env_index, double value, const std::string& what)
      : std::invalid_argument(what), env_index_(env_index), value_(value) {}
  /// Index of the first environment whose action was rejected.
  std::size_t env_index() const noexcept { return env_index_; }
  /// The rejected value (for continuous actions: the first NaN component).
  double value() const noexcept { return value_; }

private:
  std::size_t env_index_;
  double value_;
};

namespace detail {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

#if RLK_HAS_CUDA
inline std::string cuda_error_message(cudaError_t code, const char* call, const char* file, int line) {
  return concat(file, ":", line, ": ", call, " failed: ", cudaGetErrorName(code), ": ", cudaGetErrorString(code));
}
[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw cuda_error(static_cast<int>(code), cuda_error_message(code, call, file, line));
}
/// Throws cuda_error for a failed `status` (no deferred-error check, no debug synchronisation:
/// for rlkernels' own queries, which must not report an unrelated earlier failure).
inline void check_cuda_status(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}

/// The first CUDA failure of a call that could not throw (a free in a destructor, a handle's
/// destruction), kept until a checked call reports it. One slot per process: the failure is
/// reported once, by whichever thread checks next.
struct deferred_cuda_error_slot {
  std::atomic<bool> pending{false};
  std::mutex mutex;
  int code = 0;
  std::string message;
};
inline deferred_cuda_error_slot& deferred_cuda_error() noexcept {
  // Never destroyed: buffers freed by static destructors at exit may still record into it.
  static deferred_cuda_error_slot* slot = new deferred_cuda_error_slot();
  return *slot;
}

/// Records a failure of a call that cannot throw (keeps the first until it is reported). A failure
/// because the CUDA runtime is unloading (destructors of static objects at exit) is not an error:
/// the memory goes with the process.
inline void record_deferred_cuda_error(int code, const char* what, const char* file, int line) noexcept {
  if (code == static_cast<int>(cudaErrorCudartUnloading)) return;
  deferred_cuda_error_slot& slot = deferred_cuda_error();
  try {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.pending.load(std::memory_order_relaxed)) return;
    slot.code = code;
    slot.message = concat(file, ":", line, ": ", what, " failed in a call that cannot throw (reported by the next "
                          "checked CUDA call): ", cudaGetErrorName(static_cast<cudaError_t>(code)), ": ",
                          cudaGetErrorString(static_cast<cudaError_t>(code)));
    slot.pending.store(true, std::memory_order_release);
  } catch (...) {
    // No memory for the message (or the mutex failed): keep the code, which still gets reported.
    slot.code = code;
    slot.pending.store(true, std::memory_order_release);
  }
}
/// @copydoc record_deferred_cuda_error
inline void record_deferred_cuda_error(cudaError_t code, const char* what, const char* file, int line) noexcept {
  record_deferred_cuda_error(static_cast<int>(code), what, file, line);
}

[[noreturn]] inline void throw_deferred_cuda_error() {
  deferred_cuda_error_slot& slot = deferred_cuda_error();
  int code = 0;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    code = slot.code;
    message.swap(slot.message);
    slot.pending.store(false, std::memory_order_relaxed);
  }
  if (message.empty()) message = concat("a CUDA call that cannot throw failed earlier with error ", code);
  throw cuda_error(code, message);
}

/// One atomic load when nothing is pending: cheap enough for every checked call.
inline void check_deferred_cuda_error_fast() {
  if (deferred_cuda_error().pending.load(std::memory_order_acquire)) throw_deferred_cuda_error();
}

/// After a successful call: with RLK_CUDA_SYNC_CHECK, waits for the device and reports a fault of
/// the work queued so far as a failure of `call`.
inline void debug_sync_after(const char* call, const char* file, int line) {
#if RLK_CUDA_SYNC_CHECK
  const cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    throw cuda_error(static_cast<int>(status),
                     concat(cuda_error_message(status, call, file, line),
                            " (RLK_CUDA_SYNC_CHECK: reported by the synchronisation after the call)"));
  }
#else
  (void)call, (void)file, (void)line;
#endif
}
#endif

}  // namespace detail

#if RLK_HAS_CUDA
/// @brief Throws the cuda_error that a CUDA call inside a destructor (a buffer's free, a cuBLAS
/// handle's destruction) recorded since the last report, and clears it; does nothing otherwise.
/// Every RLK_CUDA_CHECK'd call (so every rlkernels CUDA operation and rlkernels::synchronize) does
/// this first, so such a failure surfaces at the next rlkernels CUDA call on any thread.
/// @throw cuda_error naming the call that failed, its file and line, and CUDA's error string
inline void check_deferred_cuda_error() { detail::check_deferred_cuda_error_fast(); }
#endif

}  // namespace rlkernels

#if RLK_HAS_CUDA
/// Evaluates a CUDA runtime call and throws rlkernels::cuda_error (file, line, CUDA's message) if
/// it did not return cudaSuccess. First reports a failure that a destructor recorded earlier
/// (check_deferred_cuda_error); with RLK_CUDA_SYNC_CHECK, also synchronises the device after the
/// call and reports an asynchronous fault as this call's failure.
#define RLK_CUDA_CHECK(call)                                                             \
  do {                                                                                   \
    ::rlkernels::detail::check_deferred_cuda_error_fast();                               \
    const cudaError_t rlk_cuda_status_ = (call);                                         \
    if (rlk_cuda_status_ != cudaSuccess)                                                 \
      ::rlkernels::detail::throw_cuda_error(rlk_cuda_status_, #call, __FILE__, __LINE__); \
    ::rlkernels::detail::debug_sync_after(#call, __FILE__, __LINE__);                    \
  } while (0)
#endif

/// Checks a host-side precondition; on failure throws `exception_type` whose message is the
/// remaining arguments streamed together. Always on (not only in debug builds).
#define RLK_EXPECTS(condition, exception_type, ...)                         \
  do {                                                                      \
    if (!(condition)) throw exception_type(::rlkernels::detail::concat(__VA_ARGS__)); \
  } while (0)
