// The backend a test executable runs on: each test source is built once per backend with
// RLK_BACKEND_SERIAL, RLK_BACKEND_OPENMP or RLK_BACKEND_CUDA defined (see rlk_add_variants).
#pragma once

#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/memory.hpp>

#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

namespace rlk_test {
#if defined(RLK_BACKEND_CUDA)
using backend_t = rlkernels::cuda_backend;
inline backend_t backend() { return rlkernels::cuda_backend{}; }
#elif defined(RLK_BACKEND_OPENMP)
using backend_t = rlkernels::openmp_backend;
inline backend_t backend() { return rlkernels::openmp; }
#else
using backend_t = rlkernels::serial_backend;
inline backend_t backend() { return rlkernels::serial; }
#endif
inline constexpr bool on_cuda =
#if defined(RLK_BACKEND_CUDA)
    true;
#else
    false;
#endif

/// A buffer in the test backend's memory holding `v`.
template <class T>
rlkernels::buffer<T, backend_t> make(const std::vector<T>& v) {
  return rlkernels::buffer<T, backend_t>(backend(), v);
}
/// A zeroed buffer of n elements in the test backend's memory.
template <class T>
rlkernels::buffer<T, backend_t> zeros(std::size_t n) {
  return rlkernels::buffer<T, backend_t>(backend(), n);
}
}  // namespace rlk_test
