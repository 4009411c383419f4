// rlkernels/buffers/sum_tree.hpp
// sum_tree<Backend>: a binary sum tree over non-negative double weights (the priorities of a
// prioritized replay buffer), with batched, deterministic updates and batched prefix-sum search
// (proportional sampling) on every backend. Internal nodes are always recomputed as left + right.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/host_sync.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#if RLK_HAS_CUDA
#include <cub/device/device_radix_sort.cuh>
#endif

namespace rlkernels {

namespace detail {

/// index_if(i) = i where `bad(i)` holds, else `none`: min-reduced, the lowest bad index.
template <class Pred>
struct index_if {
  Pred bad;
  std::size_t none;
  RLK_HOST_DEVICE std::size_t operator()(std::size_t i) const { return bad(i) ? i : none; }
};

/// The smaller of two indices (an exact, order-free reduction).
struct min_index {
  RLK_HOST_DEVICE std::size_t operator()(std::size_t a, std::size_t b) const { return a < b ? a : b; }
};

/// @brief The lowest i in [0, n) where `bad(i)` holds, or n if none, returned to the host: a min
/// reduction left in `slot` (one element of backend memory), then read back. One host wait on
/// every backend (counted as a read, see host_sync.hpp); for validation that must throw at once.
template <class Backend, class Pred>
std::size_t first_index_where(const Backend& backend, std::size_t n, const Pred& bad, std::size_t* slot) {
  if (n == 0) return 0;
  deterministic_sum_into(backend, n, index_if<Pred>{bad, n}, n, min_index{}, slot);
  std::size_t out = n;
  memory_ops<Backend>::to_host(backend, &out, slot, sizeof(out));
  return out;
}

/// True where a leaf update is invalid: index past the capacity, or a value that is negative,
/// NaN, infinite or above the per-leaf limit.
struct sum_tree_bad_update {
  const std::uint64_t* indices;
  const double* values;
  std::uint64_t capacity;
  double max_value;
  RLK_HOST_DEVICE bool operator()(std::size_t k) const {
    const double v = values[k];
    return indices[k] >= capacity || !(v >= 0.0 && v <= max_value);
  }
};

/// A fill value known on the host.
struct sum_tree_constant {
  double value;
  RLK_HOST_DEVICE double operator()() const { return value; }
};

/// Sets leaves [first, first + n) to `value`.
struct sum_tree_fill_leaves {
  double* leaf;  // &nodes[leaf_count + first]
  double value;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { leaf[i] = value; }
};

/// Recomputes the internal nodes first_node + i as the sum of their two children.
struct sum_tree_recompute_range {
  double* nodes;
  std::size_t first_node;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t p = first_node + i;
    nodes[p] = nodes[2 * p] + nodes[2 * p + 1];
  }
};

/// The leaf whose cumulative range holds `u`, descending from the root (node 1; the children of
/// node p are 2p and 2p + 1; leaf i is node leaf_count + i). A zero-weight child is never
/// entered while its sibling has weight, so a zero leaf (unwritten or padding) is never returned
/// as long as the root is positive: a target on a boundary, or one that rounding pushed past the
/// right edge of a subtree, goes to the neighbouring non-zero leaf; u >= total (or NaN) ends at
/// the last non-zero leaf and u < 0 at the first.
RLK_INLINE std::uint64_t sum_tree_descend(const double* nodes, std::size_t leaf_count, double u) {
  std::size_t node = 1;
  while (node < leaf_count) {
    const std::size_t left = 2 * node;
    const double lw = nodes[left], rw = nodes[left + 1];
    if (!(rw > 0.0) || (lw > 0.0 && u < lw)) {
      node = left;
    } else {
      u -= lw;
      node = left + 1;
    }
  }
  return static_cast<std::uint64_t>(node - leaf_count);
}

struct sum_tree_find_kernel {
  const double* nodes;
  std::size_t leaf_count;
  const double* targets;
  std::uint64_t* out;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { out[k] = sum_tree_descend(nodes, leaf_count, targets[k]); }
};

#if RLK_HAS_CUDA
/// Threads of the single-block kernels that update several tree levels in one launch.
inline constexpr unsigned int sum_tree_fused_block = 1024;
/// The widest level (nodes, or batch elements for set) that the single-block kernel takes: wider
/// levels get one grid-wide launch each, the rest of the tree one launch.
inline constexpr std::size_t sum_tree_fused_width = 8192;
/// Above a batch too large for one block, the levels of at most this many nodes are done in one
/// block from marks (at most 2 * 2048 nodes in all, whatever the batch size).
inline constexpr std::size_t sum_tree_tail_width = 2048;

/// keys[k] = indices[k], positions[k] = k: the (index, position) pairs that set sorts.
struct sum_tree_pairs_kernel {
  const std::uint64_t* indices;
  std::uint64_t* keys;
  std::uint64_t* positions;
  __device__ void operator()(std::size_t k) const {
    keys[k] = indices[k];
    positions[k] = k;
  }
};

/// One level of a set batch after a stable sort of (index, position) pairs by index. Level 0:
/// the last pair of each run of equal indices is the batch's last occurrence of that index; it
/// alone writes its leaf. Level l >= 1: the ancestors of sorted leaves are sorted too, so the last
/// element of each run recomputes its node, once, from its (final) children. Does nothing when
/// `*skip` is non-zero; marks each written node in `marks` when given.
struct sum_tree_set_level {
  const std::uint64_t* sorted_indices;
  const std::uint64_t* positions;
  const double* values;
  double* nodes;
  std::size_t leaf_count;
  std::size_t n;
  int level;
  const std::uint32_t* skip;  // null: never skip
  std::uint8_t* marks;        // null: no marks
  __device__ void operator()(std::size_t k) const {
    if (skip && *skip) return;
    const std::size_t p = (leaf_count + sorted_indices[k]) >> level;
    if (k + 1 != n && ((leaf_count + sorted_indices[k + 1]) >> level) == p) return;
    nodes[p] = level == 0 ? values[positions[k]] : nodes[2 * p] + nodes[2 * p + 1];
    if (marks) marks[p] = 1;
  }
};

/// Levels [level, last_level] of a set batch in one block, a barrier between levels (a level
/// reads the nodes the previous one wrote).
template <class Level>
__global__ void __launch_bounds__(sum_tree_fused_block) sum_tree_set_levels_kernel(Level f, int last_level) {
  for (;; ++f.level) {
    for (std::size_t k = threadIdx.x; k < f.n; k += blockDim.x) f(k);
    if (f.level == last_level) break;
    __syncthreads();
  }
}

/// Levels [level, last_level] above a set batch's grid-wide levels, in one block: node q is
/// recomputed where a child is marked (written in this batch), and then marked itself, so that
/// exactly the ancestors of the updated leaves are recomputed, each after its children. Clears
/// the marks [0, mark_count) at the end.
template <class T>
__global__ void __launch_bounds__(sum_tree_fused_block)
    sum_tree_marked_levels_kernel(T* nodes, std::uint8_t* marks, std::size_t leaf_count, int level, int last_level,
                                  std::size_t mark_count, const std::uint32_t* skip) {
  if (skip && *skip) return;  // nothing was marked either
  for (; level <= last_level; ++level) {
    const std::size_t lo = leaf_count >> level;
    for (std::size_t q = lo + threadIdx.x; q < 2 * lo; q += blockDim.x) {
      if (marks[2 * q] | marks[2 * q + 1]) {
        nodes[q] = nodes[2 * q] + nodes[2 * q + 1];
        marks[q] = 1;
      }
    }
    __syncthreads();
  }
  for (std::size_t i = threadIdx.x; i < mark_count; i += blockDim.x) marks[i] = 0;
}
#endif

/// One level of a fill of the contiguous leaves [first, first + count): the nodes lo + i of the
/// level; level 0 writes the leaves (value()), a level l >= 1 recomputes its nodes.
template <class Value>
struct sum_tree_range_level {
  double* nodes;
  std::size_t lo;
  int level;
  Value value;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t p = lo + i;
    nodes[p] = level == 0 ? value() : nodes[2 * p] + nodes[2 * p + 1];
  }
};

#if RLK_HAS_CUDA
/// Levels [f.level, last_level] of a fill in one block; `hi` is the last node of f.level.
template <class Value>
__global__ void __launch_bounds__(sum_tree_fused_block) sum_tree_range_levels_kernel(sum_tree_range_level<Value> f, std::size_t hi, int last_level) {
  for (;; ++f.level) {
    const std::size_t width = hi - f.lo + 1;
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) f(i);
    if (f.level == last_level) break;
    __syncthreads();
    f.lo >>= 1;
    hi >>= 1;
  }
}
#endif

}  // namespace detail

/// @brief A binary sum tree over `capacity()` non-negative double weights, in the memory of
/// `Backend`, for proportional sampling.
///
/// Layout: `nodes()` holds 2 L doubles, L = `leaf_count()` = capacity rounded up to a power of
/// two; node 1 is the root, the children of node p are 2p and 2p + 1, and leaf i is node L + i.
/// Leaves past the capacity (padding) stay 0. Node 0 is unused.
///
/// Exactness: every internal node is recomputed as (left child + right child) from its children
/// after each update, never adjusted by adding a delta, so a node's value depends only on the
/// current leaves (the same bits as a fresh bottom-up build) and the total never drifts however
/// many updates are made. Only the ancestors of the leaves an update writes are recomputed.
///
/// Duplicates: when one `set` batch names the same leaf several times, the *last* occurrence in
/// the batch wins, on every backend.
///
/// Costs of a batch of B updates: host backends apply them sequentially, O(B log L) additions
/// (one walk to the root per update). CUDA sorts the batch (a stable radix sort of B keys on only
/// the ceil(log2 capacity) bits an index can have), then writes the winning leaves and
/// recomputes their ancestors in one single-block launch when B <= 8192; a larger batch takes one
/// grid-wide launch per level while the level can hold more than 8192 distinct nodes, then one
/// launch for the rest of the tree. `fill` (a contiguous range) likewise: one launch when it
/// covers at most 8192 leaves. `find_prefix_sum` is one independent descent per target (parallel
/// on OpenMP and CUDA).
///
/// Streams and host waits: all work is queued on the stream of the backend the tree was made
/// with. `set`, `find_prefix_sum`, `total` and `get` wait for the host (one read each: a
/// validation result or the value); `set_unchecked`, `fill`, `fill_computed` and
/// `find_prefix_sum_unchecked` never wait.
///
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Backend>
class sum_tree {
  static_assert(is_backend_v<Backend>, "rlkernels::sum_tree<Backend>: Backend must be serial_backend, openmp_backend or cuda_backend");

public:
  using backend_type = Backend;  ///< where the tree lives

  /// @brief A tree of `capacity` zero leaves.
  /// @param backend where the tree lives and its batches run
  /// @param capacity number of leaves, >= 1 (rounded up to a power of two internally)
  /// @throw std::invalid_argument if capacity is 0 or too large
  /// @throw out_of_memory naming the bytes needed if the nodes do not fit
  sum_tree(Backend backend, std::size_t capacity)
      : backend_(backend), capacity_(checked_capacity(capacity)), leaf_count_(leaves_for(capacity_)),
        levels_(level_count(leaf_count_)), nodes_(allocate_nodes(backend, capacity_)), check_(backend, 1) {}

  /// Bytes of backend memory a tree of `capacity` leaves allocates (without the CUDA scratch of
  /// `set`: 32 bytes per element of the largest batch, the radix sort's temporary storage and, for
  /// batches over 8192, at most 8 KiB of marks).
  static std::size_t bytes_required(std::size_t capacity) {
    return 2 * leaves_for(checked_capacity(capacity)) * sizeof(double);
  }

  /// Number of usable leaves.
  std::size_t capacity() const noexcept { return capacity_; }
  /// Number of leaves including the zero padding: the capacity rounded up to a power of two.
  std::size_t leaf_count() const noexcept { return leaf_count_; }
  /// The backend the tree lives on.
  const Backend& backend() const noexcept { return backend_; }
  /// Largest value a leaf accepts: DBL_MAX / leaf_count(), so the total stays finite.
  double max_value() const noexcept { return DBL_MAX / double(leaf_count_); }

  /// All 2 L nodes (see the class comment for the layout), in backend memory.
  view<const double> nodes() const noexcept { return nodes_.cview(); }
  /// The `capacity()` leaves, in backend memory.
  view<const double> leaves() const noexcept { return nodes_.cview().subview(leaf_count_, capacity_); }
  /// The root (the sum of all leaves) in backend memory: the device form of total(), valid once
  /// the backend's stream has reached the work queued before.
  view<const double> total_view() const noexcept { return nodes_.cview().subview(1, 1); }

  /// The sum of all leaves (the root). Waits for queued work on CUDA (one counted read).
  double total() const { return nodes_.get(1); }

  /// Leaf i. Waits for queued work on CUDA (one counted read). @throw std::out_of_range if i >= capacity()
  double get(std::size_t i) const {
    RLK_EXPECTS(i < capacity_, std::out_of_range, "rlkernels::sum_tree::get: index ", i, " >= capacity ", capacity_);
    return nodes_.get(leaf_count_ + i);
  }

  /// Sets every leaf (and so every node) to 0.
  void clear() { nodes_.zero(); }

  /// @brief Sets leaf indices[k] to values[k] for every k, then recomputes the affected
  /// ancestors. Where an index occurs several times in the batch, the last occurrence wins.
  /// @param indices [B] leaf indices, in backend memory
  /// @param values [B] new leaf values, in backend memory: finite, >= 0 and <= max_value()
  /// @throw std::invalid_argument if the sizes differ, a non-empty view is null, an index is
  ///        >= capacity() or a value is out of range (naming the first offender); the tree is
  ///        then unchanged. The check reads one reduction result back: one host wait (counted).
  void set(view<const std::uint64_t> indices, view<const double> values) {
    check_batch(indices, values.size(), values.data() != nullptr || values.empty(), "rlkernels::sum_tree::set", "values");
    const std::size_t bad =
        detail::first_index_where(backend_, indices.size(),
                                  detail::sum_tree_bad_update{indices.data(), values.data(), capacity_, max_value()},
                                  check_.data());
    if (bad != indices.size()) {
      const std::uint64_t index = read_one(indices, bad);
      RLK_EXPECTS(index < capacity_, std::invalid_argument, "rlkernels::sum_tree::set: indices[", bad, "] = ", index,
                  " >= capacity ", capacity_);
      throw std::invalid_argument(detail::concat("rlkernels::sum_tree::set: values[", bad, "] = ", read_one(values, bad),
                                                 " is not a finite value in [0, ", max_value(), "]"));
    }
    set_unchecked(indices, values);
  }

  /// @brief `set` without checking the index and value ranges (sizes are checked); no host wait.
  /// For callers that validated the batch themselves; an index >= capacity() is undefined behaviour.
  void set_unchecked(view<const std::uint64_t> indices, view<const double> values) {
    set_unchecked(indices, values, nullptr);
  }

  /// @brief `set_unchecked` that is skipped on the backend: when `*skip` (one uint32 in backend
  /// memory, written by earlier work on the same stream) is non-zero as the stream reaches this
  /// update, nothing is written. For callers that validate a batch on the backend (without a host
  /// wait) and must not apply a rejected one; indices are then only read if `*skip` is 0.
  /// @param indices [B] leaf indices, in backend memory (< capacity(), unchecked)
  /// @param values [B] new leaf values, in backend memory (finite, in [0, max_value()], unchecked)
  /// @param skip null (never skip) or one uint32 in backend memory
  void set_unchecked(view<const std::uint64_t> indices, view<const double> values, const std::uint32_t* skip) {
    check_batch(indices, values.size(), values.data() != nullptr || values.empty(), "rlkernels::sum_tree::set_unchecked",
                "values");
    const std::size_t n = indices.size();
    if (n == 0) return;
#if RLK_HAS_CUDA
    if constexpr (std::is_same_v<Backend, cuda_backend>) {
      set_on_device(indices, values, skip);
      return;
    }
#endif
    if constexpr (is_host_backend_v<Backend>) {
      if (skip && *skip) return;  // host memory: the flag is current
      // Sequential leaf writes make the last occurrence win; then one walk to the root per
      // update. A node's last recomputation comes after those of all its updated descendants,
      // so every ancestor ends as the sum of its final children.
      double* nodes = nodes_.data();
      for (std::size_t k = 0; k < n; ++k) nodes[leaf_count_ + indices[k]] = values[k];
      for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t p = (leaf_count_ + indices[k]) >> 1; p >= 1; p >>= 1) nodes[p] = nodes[2 * p] + nodes[2 * p + 1];
      }
    }
  }

  /// @brief Sets leaves [first, first + count) to `value` and recomputes their ancestors (a
  /// contiguous range per level: O(count + log L) work, parallel on OpenMP and CUDA; on CUDA one
  /// launch when count <= 8192). No host wait.
  /// @throw std::invalid_argument if the range passes capacity() or value is out of range
  void fill(std::size_t first, std::size_t count, double value) {
    RLK_EXPECTS(first <= capacity_ && count <= capacity_ - first, std::invalid_argument,
                "rlkernels::sum_tree::fill: leaves [", first, ", ", first, " + ", count, ") pass the capacity ", capacity_);
    RLK_EXPECTS(value >= 0.0 && value <= max_value(), std::invalid_argument, "rlkernels::sum_tree::fill: value ", value,
                " is not a finite value in [0, ", max_value(), "]");
    fill_computed(first, count, detail::sum_tree_constant{value});
  }

  /// @brief `fill` with a value computed on the backend: leaves [first, first + count) become
  /// value_of(), evaluated in the kernel that writes them (e.g. a value another kernel left in
  /// backend memory), so the host never waits for it. value_of must be trivially copyable, have an
  /// RLK_HOST_DEVICE `double operator()() const` and return a finite value in [0, max_value()]
  /// (not checked). On the host backends it is evaluated once, at the call.
  /// @throw std::invalid_argument if the range passes capacity()
  template <class Value>
  void fill_computed(std::size_t first, std::size_t count, const Value& value_of) {
    RLK_EXPECTS(first <= capacity_ && count <= capacity_ - first, std::invalid_argument,
                "rlkernels::sum_tree::fill: leaves [", first, ", ", first, " + ", count, ") pass the capacity ", capacity_);
    if (count == 0) return;
    double* nodes = nodes_.data();
    std::size_t lo = leaf_count_ + first, hi = leaf_count_ + first + count - 1;
#if RLK_HAS_CUDA
    if constexpr (std::is_same_v<Backend, cuda_backend>) {
      // Grid-wide launches for the levels wider than one block takes, then the rest in one block.
      const detail::device_guard guard(backend_.device);
      detail::sum_tree_range_level<Value> f{nodes, lo, 0, value_of};
      while (f.level < levels_ && hi - f.lo + 1 > detail::sum_tree_fused_width) {
        for_each_index(backend_, hi - f.lo + 1, f);
        ++f.level;
        f.lo >>= 1;
        hi >>= 1;
      }
      detail::sum_tree_range_levels_kernel<Value>
          <<<1, detail::sum_tree_fused_block, 0, backend_.stream>>>(f, hi, levels_);
      RLK_CUDA_CHECK(cudaGetLastError());
      return;
    }
#endif
    if constexpr (is_host_backend_v<Backend>) {
      for_each_index(backend_, count, detail::sum_tree_fill_leaves{nodes + lo, value_of()});
      for (int level = 0; level < levels_; ++level) {
        lo >>= 1;
        hi >>= 1;
        for_each_index(backend_, hi - lo + 1, detail::sum_tree_recompute_range{nodes, lo});
      }
    }
  }

  /// @brief For each target u = targets[k], the leaf i whose cumulative range
  /// [sum of leaves before i, that + leaf i) holds u, found by descending from the root.
  ///
  /// Never returns a zero leaf (an unwritten slot or the padding): a target on a boundary, or
  /// one that float rounding pushes past a subtree's edge, goes to the neighbouring non-zero
  /// leaf; targets >= total() (or NaN) give the last non-zero leaf and targets < 0 the first.
  /// @param targets [B] in backend memory, normally in [0, total())
  /// @param out [B] leaf indices, in backend memory
  /// @throw std::invalid_argument if the sizes differ, a non-empty view is null, or the tree is
  ///        empty (total() == 0: this check reads the root, one host wait)
  void find_prefix_sum(view<const double> targets, view<std::uint64_t> out) const {
    check_batch(out, targets.size(), targets.data() != nullptr || targets.empty(), "rlkernels::sum_tree::find_prefix_sum",
                "targets");
    if (targets.empty()) return;
    const double root = total();
    RLK_EXPECTS(root > 0.0, std::invalid_argument, "rlkernels::sum_tree::find_prefix_sum: the tree is empty (total ",
                root, ")");
    find_prefix_sum_unchecked(targets, out);
  }

  /// `find_prefix_sum` without the total() > 0 check (no host wait); with an empty tree the
  /// results are unspecified leaves.
  void find_prefix_sum_unchecked(view<const double> targets, view<std::uint64_t> out) const {
    check_batch(out, targets.size(), targets.data() != nullptr || targets.empty(),
                "rlkernels::sum_tree::find_prefix_sum_unchecked", "targets");
    for_each_index(backend_, targets.size(),
                   detail::sum_tree_find_kernel{nodes_.data(), leaf_count_, targets.data(), out.data()});
  }

  /// @brief Binds the tree to a checkpoint (rlkernels::checkpoint or anything with its bind /
  /// bind_constant): `prefix` + "nodes" (all 2 L nodes, float64); the constant `prefix` +
  /// "capacity" must match. Node values are restored as saved, not re-validated.
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind_constant(prefix + "capacity", std::to_string(capacity_));
    c.bind(prefix + "nodes", backend_, nodes_.view());
  }

private:
  static std::size_t checked_capacity(std::size_t capacity) {
    RLK_EXPECTS(capacity >= 1 && capacity <= (std::size_t(1) << 58), std::invalid_argument,
                "rlkernels::sum_tree: capacity must be in [1, 2^58], got ", capacity);
    return capacity;
  }
  static std::size_t leaves_for(std::size_t capacity) {
    std::size_t l = 1;
    while (l < capacity) l <<= 1;
    return l;
  }
  static int level_count(std::size_t leaf_count) {
    int levels = 0;
    while ((std::size_t(1) << levels) < leaf_count) ++levels;
    return levels;
  }
  static buffer<double, Backend> allocate_nodes(const Backend& backend, std::size_t capacity) {
    detail::expect_fits(backend, bytes_required(capacity), "rlkernels::sum_tree: the nodes");
    return buffer<double, Backend>(backend, 2 * leaves_for(capacity));
  }

  template <class I>
  static void check_batch(view<I> indices, std::size_t other_size, bool other_ok, const char* who, const char* other) {
    RLK_EXPECTS(indices.size() == other_size, std::invalid_argument, who, ": ", other, " has ", other_size,
                " elements, indices/out ", indices.size());
    RLK_EXPECTS(indices.data() != nullptr || indices.empty(), std::invalid_argument, who, ": null index view");
    RLK_EXPECTS(other_ok, std::invalid_argument, who, ": ", other, " is a null view");
  }

  /// Element k of a view in backend memory, copied to the host (for error messages).
  template <class T>
  T read_one(view<const T> v, std::size_t k) const {
    T out{};
    detail::memory_ops<Backend>::to_host(backend_, &out, v.data() + k, sizeof(T));
    return out;
  }

#if RLK_HAS_CUDA
  /// Bits an index below the capacity can have set: the radix sort looks at no others.
  int index_bits() const noexcept {
    int bits = 1;
    while (bits < 64 && (std::uint64_t(capacity_ - 1) >> bits) != 0) ++bits;
    return bits;
  }

  void set_on_device(view<const std::uint64_t> indices, view<const double> values, const std::uint32_t* skip) {
    const detail::device_guard guard(backend_.device);  // CUB and the fused kernels run on the backend's device
    const std::size_t n = indices.size();
    if (sorted_.size() < n) {
      // Two (index, position) arrays: the radix sort ping-pongs between them.
      sorted_ = buffer<std::uint64_t, Backend>(backend_, 2 * n);
      positions_ = buffer<std::uint64_t, Backend>(backend_, 2 * n);
    }
    const std::size_t half = sorted_.size() / 2;
    cub::DoubleBuffer<std::uint64_t> keys(sorted_.data(), sorted_.data() + half);
    cub::DoubleBuffer<std::uint64_t> pos(positions_.data(), positions_.data() + half);
    for_each_index(backend_, n, detail::sum_tree_pairs_kernel{indices.data(), keys.Current(), pos.Current()});
    // A stable LSD radix sort on the low index_bits() bits: with every index below the capacity
    // the higher bits are 0, so this is the full stable sort by index (equal indices keep their
    // batch order). A skipped (rejected) batch may hold larger indices: it is sorted wrongly and
    // then not applied.
    const int end_bit = index_bits();
    std::size_t temp_bytes = 0;
    RLK_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, pos, n, 0, end_bit, backend_.stream));
    if (sort_temp_.size() < temp_bytes) sort_temp_ = buffer<unsigned char, Backend>(backend_, temp_bytes);
    RLK_CUDA_CHECK(
        cub::DeviceRadixSort::SortPairs(sort_temp_.data(), temp_bytes, keys, pos, n, 0, end_bit, backend_.stream));
    detail::sum_tree_set_level f{keys.Current(), pos.Current(), values.data(), nodes_.data(), leaf_count_, n, 0, skip,
                                 nullptr};
    if (n <= detail::sum_tree_fused_width) {
      // Leaves and every level in one block.
      detail::sum_tree_set_levels_kernel<detail::sum_tree_set_level><<<1, detail::sum_tree_fused_block, 0, backend_.stream>>>(f, levels_);
      RLK_CUDA_CHECK(cudaGetLastError());
      return;
    }
    // Grid-wide launches while a level may hold more distinct nodes than one block takes; the
    // last of them marks the nodes it wrote, and one block does the levels above from the marks.
    int top = levels_;  // the last grid-wide level: the highest one wider than the tail width
    while (top > 0 && (leaf_count_ >> top) <= detail::sum_tree_tail_width) --top;
    if (top == levels_) {  // a one-leaf tree
      for_each_index(backend_, n, f);
      return;
    }
    const std::size_t mark_count = 2 * (leaf_count_ >> top);  // nodes [0, 2 L / 2^top)
    if (marks_.size() < mark_count) marks_ = buffer<std::uint8_t, Backend>(backend_, mark_count);
    for (; f.level <= top; ++f.level) {
      if (f.level == top) f.marks = marks_.data();
      for_each_index(backend_, n, f);
    }
    detail::sum_tree_marked_levels_kernel<double><<<1, detail::sum_tree_fused_block, 0, backend_.stream>>>(
        nodes_.data(), marks_.data(), leaf_count_, top + 1, levels_, mark_count, skip);
    RLK_CUDA_CHECK(cudaGetLastError());
  }
#endif

  Backend backend_;
  std::size_t capacity_;
  std::size_t leaf_count_;
  int levels_;
  buffer<double, Backend> nodes_;       // [2 L]
  buffer<std::size_t, Backend> check_;  // [1] the validation result of set
  // CUDA scratch of set (empty on the host; declared always so that the layout is the same in
  // host-compiled and nvcc-compiled translation units).
  buffer<std::uint64_t, Backend> sorted_;        // [2 B] the batch's indices and the sort's other half
  buffer<std::uint64_t, Backend> positions_;     // [2 B] their positions in the batch
  buffer<unsigned char, Backend> sort_temp_;     // the radix sort's temporary storage
  buffer<std::uint8_t, Backend> marks_;          // nodes written by a large batch's last grid-wide level
};

}  // namespace rlkernels
