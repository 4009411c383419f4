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

#if defined(__SANITIZE_ADDRESS__)
#define RLK_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLK_TEST_SANITIZED 1
#endif
#endif
/// True in a build under AddressSanitizer (the sanitizer preset), where the physics runs 5 to 10
/// times slower: the longest cases then run a quarter of their length (`sanitized_length`), enough
/// for the sanitizers to see every code path; the README's test command runs them whole.
inline constexpr bool sanitized =
#if defined(RLK_TEST_SANITIZED)
    true;
#else
    false;
#endif
/// `full`, or a quarter of it (at least 1) in a sanitized build.
constexpr std::size_t sanitized_length(std::size_t full) { return sanitized ? (full / 4 > 0 ? full / 4 : 1) : full; }

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
