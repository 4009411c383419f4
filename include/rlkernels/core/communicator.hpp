// rlkernels/core/communicator.hpp
// The collective operations data-parallel training needs (rank, size, all-reduce of a view,
// broadcast, all-gather of small host structs, gather and scatter of byte strings, barrier), as one small
// abstract class, and its dependency-free implementation for a single process. The trainers
// take a `communicator&`; the implementations over MPI and NCCL live in rlkernels/distributed/
// (which needs those libraries) and are chosen at run time, so a trainer is compiled once for
// every launcher.
//
// The interface is on bytes and element kinds (not templates) so that it can be virtual; the
// typed front ends below it (all_reduce(comm, backend, view, ...)) are what callers use.
#pragma once

#include "backend.hpp"
#include "error.hpp"
#include "memory.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

/// @brief The reduction of an all-reduce.
enum class reduce_op {
  sum,  ///< element-wise sum over the ranks
  mean  ///< the sum divided by the number of ranks (after the sum, in the element type)
};

/// @brief How an all-reduce orders its additions.
enum class reduction_order {
  /// Every rank gathers every rank's buffer, then adds them in rank order (((x0 + x1) + x2) + ...):
  /// the result does not depend on the library's algorithm, the network or the number of
  /// machines, and it equals a one-process sum of the same R parts added in order. It moves R
  /// buffers to every rank (R times the bytes of a ring all-reduce's 2 (R - 1) / R) and holds R
  /// copies: the default, since rlkernels' gradients are small.
  ordered,
  /// The library's own all-reduce (MPI_Allreduce, ncclAllReduce): the least traffic; bit
  /// reproducible run to run for a fixed rank count and placement (MPI and NCCL choose their
  /// algorithm from those), but not equal bit for bit to a one-process run.
  native
};

/// @brief The element kinds the collectives reduce.
enum class element_kind : std::uint8_t { f32, f64, u64 };

/// @brief Where a buffer lives.
struct memory_location {
  bool device = false;   ///< true: CUDA device memory (then `stream` orders the access)
  void* stream = nullptr;  ///< the cudaStream_t of device memory
  int device_index = 0;  ///< the CUDA device of device memory
};

/// @brief A collective operation failed, timed out or found ranks that disagree. The message
/// names this rank, the operation and what it was doing ("rank 1 of 2: all_reduce of 'gradients'
/// timed out after 60 s ..."). After it, the communicator is unusable: end the process (and, with
/// MPI, call abort() so that the other ranks end too).
class distributed_error : public error {
 public:
  /// @param rank the rank that reports
  /// @param message the whole message
  distributed_error(int rank, const std::string& message) : error(message), rank_(rank) {}
  /// The rank that reported.
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// @brief What a communicator has done so far on this rank (for the cost of communication in a
/// training run's report).
struct communicator_stats {
  std::uint64_t calls = 0;  ///< collectives called
  std::uint64_t bytes = 0;  ///< bytes this rank contributed to them (an all-reduce's buffer, ...)
  double seconds = 0;       ///< wall-clock seconds inside them (waiting for peers included)
};

namespace detail {

/// The sizes table root sends before scatter_bytes' parts: parts[r].size() for every rank, or
/// (root's `parts` of another length) all ones bits in entry 0, so that every rank refuses alike.
inline std::vector<std::uint64_t> scatter_sizes(const std::vector<view<const std::uint8_t>>& parts, std::size_t ranks,
                                                bool is_root) {
  std::vector<std::uint64_t> sizes(ranks, 0);
  if (!is_root) return sizes;
  if (parts.size() != ranks) {
    sizes[0] = ~std::uint64_t(0);
    return sizes;
  }
  for (std::size_t r = 0; r < ranks; ++r) sizes[r] = parts[r].size();
  return sizes;
}

/// After the sizes table: throws std::invalid_argument on every rank if root's parts were refused.
inline void check_scatter_sizes(const std::vector<std::uint64_t>& sizes, std::size_t given, std::size_t ranks,
                                bool is_root, const char* what) {
  if (sizes.empty() || sizes[0] != ~std::uint64_t(0)) return;
  if (is_root)
    throw std::invalid_argument("rlkernels::communicator::scatter_bytes of '" + std::string(what) + "': root passed " +
                                std::to_string(given) + " parts for " + std::to_string(ranks) + " ranks");
  throw std::invalid_argument("rlkernels::communicator::scatter_bytes of '" + std::string(what) +
                              "': root passed a wrong number of parts (see its message)");
}

}  // namespace detail

/// @brief R processes (ranks 0 .. R-1) working on one job. Every collective must be called by
/// every rank in the same order with the same sizes. Every blocking call has a deadline
/// (timeout_seconds()): a peer that died or never joined ends it with a distributed_error naming
/// this rank and the operation instead of a hang. `what` names the data in messages.
class communicator {
 public:
  virtual ~communicator() = default;
  /// This process's rank, 0 .. size() - 1.
  virtual int rank() const noexcept = 0;
  /// Number of ranks R.
  virtual int size() const noexcept = 0;
  /// The implementation's name ("single process", "MPI", "NCCL").
  virtual std::string name() const = 0;
  /// Seconds a blocking call waits for the other ranks before it throws.
  virtual double timeout_seconds() const noexcept = 0;

  /// @brief In-place all-reduce of `count` elements at `data` (host or device memory per `where`).
  virtual void all_reduce_raw(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                              memory_location where, const char* what) = 0;
  /// @brief Replaces `bytes` bytes at `data` on every rank with root's.
  virtual void broadcast_raw(void* data, std::size_t bytes, int root, memory_location where, const char* what) = 0;
  /// @brief Host memory: every rank's `bytes` bytes, in rank order (R * bytes at `out`).
  virtual void all_gather_raw(const void* data, std::size_t bytes, void* out, const char* what) = 0;
  /// @brief Host memory, sizes may differ: root receives every rank's bytes in rank order (the
  /// others receive an empty list).
  virtual std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                              const char* what) = 0;
  /// @brief Host memory, sizes may differ: root hands rank r the bytes of `parts[r]` (root's
  /// `parts` has size() entries; the others pass an empty list) and every rank returns its own
  /// part, root included. What a data-parallel load uses to give each rank its section of a
  /// checkpoint. This default broadcasts the sizes, then each part in turn (every rank receives
  /// every part and keeps its own: one part's memory at a time, all parts' traffic); MPI sends each
  /// part to its rank only.
  /// @throw std::invalid_argument on every rank if root's `parts` does not have size() entries or
  ///        root is not a rank; distributed_error on a failure or timeout
  virtual std::vector<std::uint8_t> scatter_bytes(const std::vector<view<const std::uint8_t>>& parts, int root,
                                                  const char* what) {
    const std::size_t ranks = std::size_t(size());
    RLK_EXPECTS(root >= 0 && std::size_t(root) < ranks, std::invalid_argument, "rlkernels::communicator::scatter_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", ranks - 1, ")");
    std::vector<std::uint64_t> sizes = detail::scatter_sizes(parts, ranks, rank() == root);
    broadcast_raw(sizes.data(), sizes.size() * sizeof(std::uint64_t), root, memory_location{}, what);
    detail::check_scatter_sizes(sizes, parts.size(), ranks, rank() == root, what);
    std::vector<std::uint8_t> mine, part;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (sizes[r] == 0) continue;
      std::vector<std::uint8_t>& into = r == std::size_t(rank()) ? mine : part;
      into.resize(std::size_t(sizes[r]));
      if (rank() == root) std::memcpy(into.data(), parts[r].data(), into.size());
      broadcast_raw(into.data(), into.size(), root, memory_location{}, what);
    }
    return mine;
  }
  /// @brief Waits for every rank.
  virtual void barrier(const char* what) = 0;
  /// @brief Ends every rank of the job at once with exit code `code` (MPI_Abort); a single
  /// process just exits. For after a distributed_error, when the peers may be waiting.
  [[noreturn]] virtual void abort(int code) noexcept = 0;

  /// Calls, bytes and seconds of the collectives so far (zeros where not measured).
  virtual communicator_stats stats() const noexcept { return {}; }

  /// "rank R of N" for messages.
  std::string where_am_i() const { return "rank " + std::to_string(rank()) + " of " + std::to_string(size()); }
};

/// @brief The default communicator: one process, rank 0 of 1. Every collective is a no-op (a
/// mean divides by 1), so a trainer given it computes exactly what it computes without one.
class single_process_communicator final : public communicator {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string name() const override { return "single process"; }
  double timeout_seconds() const noexcept override { return 0; }
  void all_reduce_raw(void*, std::size_t, element_kind, reduce_op, reduction_order, memory_location,
                      const char*) override {}
  void broadcast_raw(void*, std::size_t, int root, memory_location, const char* what) override {
    RLK_EXPECTS(root == 0, std::invalid_argument, "rlkernels::single_process_communicator::broadcast of '", what,
                "': root ", root, " is not a rank (the only rank is 0)");
  }
  void all_gather_raw(const void* data, std::size_t bytes, void* out, const char*) override {
    if (bytes) std::memmove(out, data, bytes);
  }
  std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                      const char* what) override {
    RLK_EXPECTS(root == 0, std::invalid_argument, "rlkernels::single_process_communicator::gather_bytes of '", what,
                "': root ", root, " is not a rank (the only rank is 0)");
    return {bytes};
  }
  std::vector<std::uint8_t> scatter_bytes(const std::vector<view<const std::uint8_t>>& parts, int root,
                                          const char* what) override {
    RLK_EXPECTS(root == 0, std::invalid_argument, "rlkernels::single_process_communicator::scatter_bytes of '", what,
                "': root ", root, " is not a rank (the only rank is 0)");
    RLK_EXPECTS(parts.size() == 1, std::invalid_argument, "rlkernels::single_process_communicator::scatter_bytes of '",
                what, "': ", parts.size(), " parts for 1 rank");
    return std::vector<std::uint8_t>(parts[0].begin(), parts[0].end());
  }
  void barrier(const char*) override {}
  [[noreturn]] void abort(int code) noexcept override { std::exit(code); }
};

/// The process-wide single-process communicator (stateless) the trainers use by default.
inline communicator& default_communicator() noexcept {
  static single_process_communicator c;
  return c;
}

namespace detail {

template <class T>
constexpr element_kind element_kind_of() {
  if constexpr (std::is_same_v<T, float>) {
    return element_kind::f32;
  } else if constexpr (std::is_same_v<T, double>) {
    return element_kind::f64;
  } else {
    static_assert(std::is_same_v<T, std::uint64_t>, "rlkernels: collectives reduce float, double or uint64");
    return element_kind::u64;
  }
}

template <class Backend>
memory_location location_of(const Backend& backend) {
  memory_location m;
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    m.device = true;
    m.stream = static_cast<void*>(backend.stream);
    m.device_index = backend.device;
  }
#endif
  (void)backend;
  return m;
}

/// out = ((parts[0] + parts[1]) + parts[2]) + ..., divided by `parts` for a mean: the ordered
/// reduction on the host, `count` elements per part, the parts one after the other at `in`.
template <class T>
void fold_in_order(const T* in, std::size_t count, int parts, bool mean, T* out) {
  for (std::size_t i = 0; i < count; ++i) {
    T s = in[i];
    for (int r = 1; r < parts; ++r) s = T(s + in[std::size_t(r) * count + i]);
    out[i] = mean ? T(s / T(parts)) : s;
  }
}

/// f(typed pointer) for the element kind of the buffer at `data`.
template <class F>
void with_element_kind(element_kind kind, void* data, F&& f) {
  switch (kind) {
    case element_kind::f32: f(static_cast<float*>(data)); break;
    case element_kind::f64: f(static_cast<double*>(data)); break;
    case element_kind::u64: f(static_cast<std::uint64_t*>(data)); break;
  }
}

/// fold_in_order for an element kind: `gathered` holds `parts` parts of `count` elements.
inline void fold_host(const void* gathered, std::size_t count, element_kind kind, reduce_op op, int parts, void* out) {
  with_element_kind(kind, out, [&](auto* o) {
    using T = std::remove_pointer_t<decltype(o)>;
    fold_in_order(static_cast<const T*>(gathered), count, parts, op == reduce_op::mean, o);
  });
}

/// data[i] = data[i] / ranks in the element type: the mean after a native sum.
inline void divide_host(void* data, std::size_t count, element_kind kind, int ranks) {
  with_element_kind(kind, data, [&](auto* x) {
    using T = std::remove_pointer_t<decltype(x)>;
    for (std::size_t i = 0; i < count; ++i) x[i] = T(x[i] / T(ranks));
  });
}

inline std::size_t element_bytes(element_kind kind) { return kind == element_kind::f32 ? 4 : 8; }

}  // namespace detail

/// @brief All-reduces `data` (in `backend`'s memory) in place over every rank of `comm`.
/// @param order ordered (bit-reproducible, equal to one process adding the parts in rank order)
///        or native (the library's own; see reduction_order)
/// @throw distributed_error on a failure or timeout
template <class Backend, class T>
void all_reduce(communicator& comm, const Backend& backend, view<T> data, reduce_op op,
                reduction_order order = reduction_order::ordered, const char* what = "data") {
  if (comm.size() == 1 || data.size() == 0) return;
  comm.all_reduce_raw(data.data(), data.size(), detail::element_kind_of<T>(), op, order, detail::location_of(backend),
                      what);
}

/// @brief Replaces `data` (in `backend`'s memory) on every rank with root's.
template <class Backend, class T>
void broadcast(communicator& comm, const Backend& backend, view<T> data, int root = 0, const char* what = "data") {
  static_assert(std::is_trivially_copyable_v<T>, "rlkernels::broadcast: T must be trivially copyable");
  if (comm.size() == 1 || data.size() == 0) return;
  comm.broadcast_raw(data.data(), data.size() * sizeof(T), root, detail::location_of(backend), what);
}

/// @brief Every rank's `value` (a small trivially copyable host struct), in rank order.
template <class T>
std::vector<T> all_gather(communicator& comm, const T& value, const char* what = "value") {
  static_assert(std::is_trivially_copyable_v<T>, "rlkernels::all_gather: T must be trivially copyable");
  std::vector<T> out(std::size_t(comm.size()));
  comm.all_gather_raw(&value, sizeof(T), out.data(), what);
  return out;
}

}  // namespace rlkernels
