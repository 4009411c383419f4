// rlkernels/buffers/sum_tree.hpp
// sum_tree<Backend>: a binary sum tree over non-negative double weights (the priorities of a
// prioritized replay buffer), with batched, deterministic updates and batched prefix-sum search
// (proportional sampling) on every backend. Internal nodes are always recomputed as left + right.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#if RLK_HAS_CUDA
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/transform_reduce.h>
#endif

namespace rlkernels {

namespace detail {

/// The lowest i in [0, n) where `bad(i)` holds, or n if none: a plain loop on the host, a min
/// reduction on CUDA (the same answer whatever the thread order). Used to validate batched
/// inputs in backend memory before anything is written.
template <class Pred>
struct index_if {
  Pred bad;
  std::size_t none;
  RLK_HOST_DEVICE std::size_t operator()(std::size_t i) const { return bad(i) ? i : none; }
};

template <class Backend, class Pred>
std::size_t first_index_where(const Backend& backend, std::size_t n, const Pred& bad) {
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    if (n == 0) return 0;
    return thrust::transform_reduce(thrust::cuda::par_nosync.on(backend.stream), thrust::counting_iterator<std::size_t>(0),
                                    thrust::counting_iterator<std::size_t>(n), index_if<Pred>{bad, n}, n,
                                    thrust::minimum<std::size_t>());
  } else
#endif
  {
    (void)backend;
    for (std::size_t i = 0; i < n; ++i)
      if (bad(i)) return i;
    return n;
  }
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
/// After a stable sort of (index, position) pairs by index: the last pair of each run of equal
/// indices is the batch's last occurrence of that index; it alone writes its leaf.
struct sum_tree_write_winners {
  const std::uint64_t* sorted_indices;
  const std::uint64_t* positions;
  const double* values;
  double* leaves;
  std::size_t n;
  __device__ void operator()(std::size_t k) const {
    if (k + 1 == n || sorted_indices[k + 1] != sorted_indices[k]) leaves[sorted_indices[k]] = values[positions[k]];
  }
};

/// Recomputes, at one level, the ancestors of the updated leaves: ancestors of sorted leaves
/// are sorted too, so the last element of each run recomputes its node, once.
struct sum_tree_recompute_marked {
  const std::uint64_t* sorted_indices;
  double* nodes;
  std::size_t leaf_count;
  int level;  // 1: parents of leaves
  std::size_t n;
  __device__ void operator()(std::size_t k) const {
    const std::size_t p = (leaf_count + sorted_indices[k]) >> level;
    if (k + 1 == n || ((leaf_count + sorted_indices[k + 1]) >> level) != p) nodes[p] = nodes[2 * p] + nodes[2 * p + 1];
  }
};
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
/// many updates are made.
///
/// Duplicates: when one `set` batch names the same leaf several times, the *last* occurrence in
/// the batch wins, on every backend.
///
/// Costs of a batch of B updates: host backends apply them sequentially, O(B log L) additions
/// (one walk to the root per update); CUDA sorts the batch (a stable radix sort of B keys), then
/// recomputes the ancestors level by level, O(B) work per level in log2(L) launches.
/// `find_prefix_sum` is one independent descent per target (parallel on OpenMP and CUDA).
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
        levels_(level_count(leaf_count_)), nodes_(allocate_nodes(backend, capacity_)) {}

  /// Bytes of backend memory a tree of `capacity` leaves allocates (without the CUDA scratch of
  /// `set`, 16 bytes per element of the largest batch).
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

  /// The sum of all leaves (the root). Waits for queued work on CUDA.
  double total() const { return nodes_.get(1); }

  /// Leaf i. Waits for queued work on CUDA. @throw std::out_of_range if i >= capacity()
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
  ///        then unchanged. On CUDA the check waits for the stream.
  void set(view<const std::uint64_t> indices, view<const double> values) {
    check_batch(indices, values.size(), values.data() != nullptr || values.empty(), "rlkernels::sum_tree::set", "values");
    const std::size_t bad = detail::first_index_where(
        backend_, indices.size(), detail::sum_tree_bad_update{indices.data(), values.data(), capacity_, max_value()});
    if (bad != indices.size()) {
      const std::uint64_t index = read_one(indices, bad);
      RLK_EXPECTS(index < capacity_, std::invalid_argument, "rlkernels::sum_tree::set: indices[", bad, "] = ", index,
                  " >= capacity ", capacity_);
      throw std::invalid_argument(detail::concat("rlkernels::sum_tree::set: values[", bad, "] = ", read_one(values, bad),
                                                 " is not a finite value in [0, ", max_value(), "]"));
    }
    set_unchecked(indices, values);
  }

  /// @brief `set` without checking the index and value ranges (sizes are checked). For callers
  /// that validated the batch themselves; an index >= capacity() is undefined behaviour.
  void set_unchecked(view<const std::uint64_t> indices, view<const double> values) {
    check_batch(indices, values.size(), values.data() != nullptr || values.empty(), "rlkernels::sum_tree::set_unchecked",
                "values");
    const std::size_t n = indices.size();
    if (n == 0) return;
#if RLK_HAS_CUDA
    if constexpr (std::is_same_v<Backend, cuda_backend>) {
      set_on_device(indices, values);
      return;
    }
#endif
    if constexpr (is_host_backend_v<Backend>) {
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
  /// contiguous range per level: O(count + log L) work, parallel on OpenMP and CUDA).
  /// @throw std::invalid_argument if the range passes capacity() or value is out of range
  void fill(std::size_t first, std::size_t count, double value) {
    RLK_EXPECTS(first <= capacity_ && count <= capacity_ - first, std::invalid_argument,
                "rlkernels::sum_tree::fill: leaves [", first, ", ", first, " + ", count, ") pass the capacity ", capacity_);
    RLK_EXPECTS(value >= 0.0 && value <= max_value(), std::invalid_argument, "rlkernels::sum_tree::fill: value ", value,
                " is not a finite value in [0, ", max_value(), "]");
    if (count == 0) return;
    double* nodes = nodes_.data();
    for_each_index(backend_, count, detail::sum_tree_fill_leaves{nodes + leaf_count_ + first, value});
    std::size_t lo = leaf_count_ + first, hi = leaf_count_ + first + count - 1;
    for (int level = 0; level < levels_; ++level) {
      lo >>= 1;
      hi >>= 1;
      for_each_index(backend_, hi - lo + 1, detail::sum_tree_recompute_range{nodes, lo});
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
  ///        empty (total() == 0; on CUDA this check waits for the stream)
  void find_prefix_sum(view<const double> targets, view<std::uint64_t> out) const {
    check_batch(out, targets.size(), targets.data() != nullptr || targets.empty(), "rlkernels::sum_tree::find_prefix_sum",
                "targets");
    if (targets.empty()) return;
    const double root = total();
    RLK_EXPECTS(root > 0.0, std::invalid_argument, "rlkernels::sum_tree::find_prefix_sum: the tree is empty (total ",
                root, ")");
    find_prefix_sum_unchecked(targets, out);
  }

  /// `find_prefix_sum` without the total() > 0 check (no wait on CUDA); with an empty tree the
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
  void set_on_device(view<const std::uint64_t> indices, view<const double> values) {
    const std::size_t n = indices.size();
    if (sorted_.size() < n) {
      sorted_ = buffer<std::uint64_t, Backend>(backend_, n);
      positions_ = buffer<std::uint64_t, Backend>(backend_, n);
    }
    std::uint64_t* keys = sorted_.data();
    std::uint64_t* pos = positions_.data();
    copy(backend_, indices, view<std::uint64_t>(keys, n));
    const auto policy = thrust::cuda::par_nosync.on(backend_.stream);
    thrust::sequence(policy, pos, pos + n);
    thrust::stable_sort_by_key(policy, keys, keys + n, pos);
    double* nodes = nodes_.data();
    for_each_index(backend_, n, detail::sum_tree_write_winners{keys, pos, values.data(), nodes + leaf_count_, n});
    for (int level = 1; level <= levels_; ++level)
      for_each_index(backend_, n, detail::sum_tree_recompute_marked{keys, nodes, leaf_count_, level, n});
  }
#endif

  Backend backend_;
  std::size_t capacity_;
  std::size_t leaf_count_;
  int levels_;
  buffer<double, Backend> nodes_;  // [2 L]
  // CUDA scratch of set (empty on the host; declared always so that the layout is the same in
  // host-compiled and nvcc-compiled translation units).
  buffer<std::uint64_t, Backend> sorted_;     // the batch's indices, sorted
  buffer<std::uint64_t, Backend> positions_;  // their positions in the batch
};

}  // namespace rlkernels
