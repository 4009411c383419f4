// rlkernels/core/reduce.hpp
// Deterministic sums over [0, n) on every backend: the same bits for every thread count on the
// host (fixed chunks summed in order), CUB on CUDA (a fixed tree for a given n and GPU).
#pragma once

#include "backend.hpp"
#include "config.hpp"
#include "host_sync.hpp"
#include "memory.hpp"
#include "thrust_call.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>
#if RLK_HAS_CUDA
#include <cub/device/device_reduce.cuh>
#include <thrust/system/cuda/execution_policy.h>
#endif

namespace rlkernels {
namespace detail {

/// Indices per chunk of a host reduction: each chunk is summed in index order by one thread.
inline constexpr std::size_t reduce_chunk = 4096;

template <class Sum, class Term, class Combine>
struct chunk_sum_kernel {
  const Term* term;
  const Combine* combine;
  Sum zero;
  Sum* partials;
  void operator()(std::size_t c, std::size_t begin, std::size_t end) const {
    Sum s = zero;
    for (std::size_t i = begin; i < end; ++i) s = (*combine)(s, (*term)(i));
    partials[c] = s;
  }
};

/// The host part of deterministic_sum: chunks of reduce_chunk indices in order, then the chunk sums
/// in order.
template <class Sum, class Backend, class Term, class Combine>
Sum host_deterministic_sum(const Backend& backend, std::size_t n, const Term& term, Sum zero, Combine combine) {
  const std::size_t chunks = (n + reduce_chunk - 1) / reduce_chunk;
  std::vector<Sum> partials(chunks, zero);
  for_each_chunk(backend, n, reduce_chunk, chunk_sum_kernel<Sum, Term, Combine>{&term, &combine, zero, partials.data()});
  Sum total = zero;
  for (const Sum& p : partials) total = combine(total, p);
  return total;
}

/// @brief combine-sum of term(i) for i in [0, n), starting from `zero`, returned to the host (a
/// wait on CUDA; counted as a host reduction, see host_sync.hpp). deterministic_sum_into is the
/// form that leaves the result in the backend's memory.
///
/// Host backends: chunks of reduce_chunk consecutive indices are summed in order (in parallel on
/// OpenMP), then the chunk sums in order, so the result never depends on the thread count, and
/// `term(i)` is called exactly once per i: a term may also write per-element outputs (one pass for
/// a loss and its gradient). CUDA: thrust::transform_reduce on the backend's stream (terms should
/// be pure there).
template <class Sum, class Backend, class Term, class Combine>
Sum deterministic_sum(const Backend& backend, std::size_t n, const Term& term, Sum zero, Combine combine) {
  count_host_sync(host_sync_kind::reduction);  // the result comes back to the host (a wait on CUDA)
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    const device_guard guard(backend.device);
    const thrust::counting_iterator<std::size_t> first(0), last(n);
    return thrust_call("thrust::transform_reduce (rlkernels::detail::deterministic_sum)", [&] {
      return thrust::transform_reduce(thrust::cuda::par_nosync.on(backend.stream), first, last, term, zero, combine);
    });
  } else
#endif
  {
    return host_deterministic_sum(backend, n, term, zero, combine);
  }
}

/// @brief deterministic_sum written to `*out`, one Sum in the backend's memory (device memory on
/// CUDA), without the host waiting: on CUDA a CUB reduction queued on the backend's stream (its
/// scratch is allocated and freed in stream order); on the host the same sum as deterministic_sum,
/// bit for bit. Not counted as a host round trip.
template <class Sum, class Backend, class Term, class Combine>
void deterministic_sum_into(const Backend& backend, std::size_t n, const Term& term, Sum zero, Combine combine,
                            Sum* out) {
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    const device_guard guard(backend.device);
    const thrust::counting_iterator<std::size_t> first(0);
    std::size_t temp_bytes = 0;
    RLK_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, first, out, n, combine, term, zero,
                                                      backend.stream));
    void* temp = memory_ops<cuda_backend>::allocate(backend, temp_bytes > 0 ? temp_bytes : 1);
    const cudaError_t status =
        cub::DeviceReduce::TransformReduce(temp, temp_bytes, first, out, n, combine, term, zero, backend.stream);
    memory_ops<cuda_backend>::deallocate(backend, temp);
    if (status != cudaSuccess) throw_cuda_error(status, "cub::DeviceReduce::TransformReduce", __FILE__, __LINE__);
    debug_sync_after("cub::DeviceReduce::TransformReduce", __FILE__, __LINE__);
  } else
#endif
  {
    *out = host_deterministic_sum(backend, n, term, zero, combine);
  }
}

/// term(i) after write(i): a reduction term that also writes per-element outputs.
template <class Term, class Writer>
struct term_and_write {
  Term term;
  Writer write;
  RLK_HOST_DEVICE auto operator()(std::size_t i) const {
    write(i);
    return term(i);
  }
};

/// @brief deterministic_sum of term(i) and, when `write_outputs`, writer(i) for every i: in one
/// pass on the host (each element is read once while it is in cache), in two launches on CUDA
/// (the sum, then the writes). The sum is the same either way.
template <class Sum, class Backend, class Term, class Writer, class Combine>
Sum sum_and_write(const Backend& backend, std::size_t n, const Term& term, const Writer& writer, bool write_outputs,
                  Sum zero, Combine combine) {
  if constexpr (is_host_backend_v<Backend>) {
    if (write_outputs) return deterministic_sum(backend, n, term_and_write<Term, Writer>{term, writer}, zero, combine);
    return deterministic_sum(backend, n, term, zero, combine);
  } else {
    const Sum s = deterministic_sum(backend, n, term, zero, combine);
    if (write_outputs) for_each_index(backend, n, writer);
    return s;
  }
}

}  // namespace detail
}  // namespace rlkernels
