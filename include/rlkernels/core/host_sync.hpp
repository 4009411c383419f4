// rlkernels/core/host_sync.hpp
// Counts of the points where the host waits for a backend: copies of backend memory to the host,
// synchronous copies from the host, explicit synchronisations and reductions that return a host
// value. On CUDA each is a round trip that stalls the launch queue; on the host backends the same
// calls are counted, so a test on a CPU machine shows how often a loop would wait on a GPU.
//
// Counting is compiled in only with RLK_COUNT_HOST_SYNCS defined to 1 (the tests do); otherwise
// every function here is an empty inline function and the counts stay zero.
#pragma once

#include "config.hpp"

#include <cstdint>

#ifndef RLK_COUNT_HOST_SYNCS
/// Define to 1 to count host round trips (rlkernels::host_sync_counts); 0 (the default) costs nothing.
#define RLK_COUNT_HOST_SYNCS 0
#endif

#if RLK_COUNT_HOST_SYNCS
#include <atomic>
#endif

namespace rlkernels {

/// @brief Host round trips since the last reset_host_sync_counts() (all zero unless the
/// translation unit was compiled with RLK_COUNT_HOST_SYNCS=1).
struct host_sync_counts_t {
  std::uint64_t reads = 0;             ///< copies of backend memory to the host (buffer::to_host, get, ...)
  std::uint64_t writes = 0;            ///< synchronous copies from the host (buffer::assign, ...)
  std::uint64_t synchronizations = 0;  ///< rlkernels::synchronize calls
  std::uint64_t reductions = 0;        ///< reductions whose result is returned to the host
  /// Every wait of the host on the backend.
  std::uint64_t total() const noexcept { return reads + writes + synchronizations + reductions; }
};

namespace detail {
enum class host_sync_kind { read, write, synchronization, reduction };

#if RLK_COUNT_HOST_SYNCS
struct host_sync_registry {
  std::atomic<std::uint64_t> counts[4];
};
inline host_sync_registry& host_sync_state() noexcept {
  static host_sync_registry registry{};
  return registry;
}
#endif

/// Records one host round trip of `kind` (no-op unless RLK_COUNT_HOST_SYNCS).
inline void count_host_sync(host_sync_kind kind) noexcept {
#if RLK_COUNT_HOST_SYNCS
  host_sync_state().counts[int(kind)].fetch_add(1, std::memory_order_relaxed);
#else
  (void)kind;
#endif
}
}  // namespace detail

/// The host round trips counted so far in this process.
inline host_sync_counts_t host_sync_counts() noexcept {
  host_sync_counts_t c;
#if RLK_COUNT_HOST_SYNCS
  auto& s = detail::host_sync_state();
  c.reads = s.counts[0].load(std::memory_order_relaxed);
  c.writes = s.counts[1].load(std::memory_order_relaxed);
  c.synchronizations = s.counts[2].load(std::memory_order_relaxed);
  c.reductions = s.counts[3].load(std::memory_order_relaxed);
#endif
  return c;
}

/// Sets every count to zero.
inline void reset_host_sync_counts() noexcept {
#if RLK_COUNT_HOST_SYNCS
  for (auto& c : detail::host_sync_state().counts) c.store(0, std::memory_order_relaxed);
#endif
}

/// True when this translation unit counts host round trips (RLK_COUNT_HOST_SYNCS=1).
inline constexpr bool host_sync_counting_enabled = RLK_COUNT_HOST_SYNCS != 0;

}  // namespace rlkernels
