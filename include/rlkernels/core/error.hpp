// rlkernels/core/error.hpp
// Exceptions thrown by rlkernels and the macros that raise them: RLK_CUDA_CHECK for failed CUDA
// calls (with file, line and CUDA's error string) and RLK_EXPECTS for host-side preconditions.
#pragma once

#include "config.hpp"

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#if RLK_HAS_CUDA
#include <cuda_runtime.h>
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
inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw cuda_error(static_cast<int>(code),
                   concat(file, ":", line, ": ", call, " failed: ", cudaGetErrorName(code), ": ",
                          cudaGetErrorString(code)));
}
#endif

}  // namespace detail
}  // namespace rlkernels

#if RLK_HAS_CUDA
/// Evaluates a CUDA runtime call and throws rlkernels::cuda_error (file, line, CUDA's message) if
/// it did not return cudaSuccess.
#define RLK_CUDA_CHECK(call)                                                             \
  do {                                                                                   \
    const cudaError_t rlk_cuda_status_ = (call);                                         \
    if (rlk_cuda_status_ != cudaSuccess)                                                 \
      ::rlkernels::detail::throw_cuda_error(rlk_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)
#endif

/// Checks a host-side precondition; on failure throws `exception_type` whose message is the
/// remaining arguments streamed together. Always on (not only in debug builds).
#define RLK_EXPECTS(condition, exception_type, ...)                         \
  do {                                                                      \
    if (!(condition)) throw exception_type(::rlkernels::detail::concat(__VA_ARGS__)); \
  } while (0)
