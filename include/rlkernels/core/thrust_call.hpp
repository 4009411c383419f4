// rlkernels/core/thrust_call.hpp
// detail::thrust_call: runs a Thrust (or other CUDA library) call and reports its failures as
// rlkernels errors. An asynchronous fault of an earlier kernel often surfaces inside Thrust as a
// thrust::system_error; callers of rlkernels catch rlkernels::cuda_error for every CUDA failure.
#pragma once

#include "config.hpp"
#include "error.hpp"

#include <new>
#include <type_traits>
#include <utility>

#if RLK_HAS_CUDA
#include <thrust/system_error.h>
#endif

namespace rlkernels {
namespace detail {

/// @brief Returns f(). On CUDA, a thrust::system_error that f throws becomes a cuda_error (same
/// code; the message names `what` and Thrust's message) and a failed temporary allocation
/// (std::bad_alloc, which Thrust derives its own from) becomes out_of_memory; with
/// RLK_CUDA_SYNC_CHECK the device is synchronised after f, so a fault of the work it queued is
/// reported here. On the host backends it just returns f().
/// @param what the call, for the message (e.g. "thrust::stable_sort_by_key")
template <class F>
decltype(auto) thrust_call(const char* what, F&& f) {
#if RLK_HAS_CUDA
  check_deferred_cuda_error_fast();
  try {
    if constexpr (std::is_void_v<decltype(std::forward<F>(f)())>) {
      std::forward<F>(f)();
      debug_sync_after(what, __FILE__, __LINE__);
    } else {
      decltype(auto) result = std::forward<F>(f)();
      debug_sync_after(what, __FILE__, __LINE__);
      return result;
    }
  } catch (const thrust::system_error& e) {
    throw cuda_error(e.code().value(), concat(what, " failed: ", e.what()));
  } catch (const std::bad_alloc& e) {
    throw out_of_memory(0, concat(what, ": cannot allocate its temporary device memory: ", e.what()));
  }
#else
  (void)what;
  return std::forward<F>(f)();
#endif
}

}  // namespace detail
}  // namespace rlkernels
