// rlkernels/core/device_value.hpp
// The pieces behind the device forms of losses, optimiser helpers and statistics: a value that
// lives in backend memory for one call (a scratch sum, or the result a host form reads back),
// the "sum and write" reduction that leaves its sum there, and the one-thread finalize launch.
#pragma once

#include "backend.hpp"
#include "config.hpp"
#include "host_sync.hpp"
#include "memory.hpp"
#include "reduce.hpp"

#include <cstddef>
#include <type_traits>

namespace rlkernels {
namespace detail {

/// @brief One S in the backend's memory for the length of a call: a local on the host backends (no
/// allocation), a one-element device buffer on CUDA (allocated and freed in stream order, so no
/// wait). A host form of a loss runs its device form into one and then calls read().
template <class S, class Backend>
class backend_value {
public:
  explicit backend_value(const Backend&) {}
  S* data() noexcept { return &value_; }
  rlkernels::view<S> view() noexcept { return rlkernels::view<S>(&value_, 1); }
  /// The value, for the host (counted as one host read, as the CUDA form's copy is).
  S read() const {
    count_host_sync(host_sync_kind::read);
    return value_;
  }

private:
  S value_{};
};

#if RLK_HAS_CUDA
template <class S>
class backend_value<S, cuda_backend> {
public:
  explicit backend_value(const cuda_backend& backend) : buffer_(backend, 1) {}
  S* data() noexcept { return buffer_.data(); }
  rlkernels::view<S> view() noexcept { return buffer_.view(); }
  /// The value, copied to the host (waits for the queued work; counted as a host read).
  S read() const { return buffer_.get(0); }

private:
  buffer<S, cuda_backend> buffer_;
};
#endif

/// @brief Reads element 0 of a view in backend memory to the host (a counted host read).
template <class S, class Backend>
S read_value(const Backend& backend, const S* p) {
  S out;
  memory_ops<Backend>::to_host(backend, &out, p, sizeof(S));
  return out;
}

/// @brief sum_and_write with the sum left in backend memory at `out` (deterministic_sum_into): the
/// same bits as sum_and_write on the host, no host wait on CUDA.
template <class Sum, class Backend, class Term, class Writer, class Combine>
void sum_and_write_into(const Backend& backend, std::size_t n, const Term& term, const Writer& writer,
                        bool write_outputs, Sum zero, Combine combine, Sum* out) {
  if constexpr (is_host_backend_v<Backend>) {
    if (write_outputs) {
      deterministic_sum_into(backend, n, term_and_write<Term, Writer>{term, writer}, zero, combine, out);
    } else {
      deterministic_sum_into(backend, n, term, zero, combine, out);
    }
  } else {
    deterministic_sum_into(backend, n, term, zero, combine, out);
    if (write_outputs) for_each_index(backend, n, writer);
  }
}

/// @brief Runs f(0) once on the backend: the "finalize" step that turns sums in backend memory into
/// statistics there (one thread on CUDA, a call on the host).
template <class Backend, class F>
void run_once(const Backend& backend, const F& f) {
  if constexpr (std::is_same_v<Backend, openmp_backend>) {
    for_each_index(serial_backend{}, 1, f);
  } else {
    for_each_index(backend, 1, f);
  }
}

/// Checks the output view of a device form: one element, not null.
inline void check_result_view(std::size_t size, const void* data, const char* who, const char* name) {
  check_view_size(size, data, 1, who, name);
}

}  // namespace detail
}  // namespace rlkernels
