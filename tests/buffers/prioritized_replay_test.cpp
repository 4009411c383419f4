// Tests of sum_tree and prioritized_replay_buffer against plain float64 (and long double)
// reference loops: node sums, prefix search (random targets, exact boundaries, zero leaves,
// padding), the duplicate rule, drift after 10^6 updates, sampling frequencies (chi-square),
// importance weights, max-priority insertion, validation, and determinism across backends.
#include "../test_backend.hpp"

#include <rlkernels/buffers/prioritized_replay.hpp>
#include <rlkernels/buffers/sum_tree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_test::backend;
using rlk_test::backend_t;
using u64 = std::uint64_t;

/// A fresh bottom-up build of a sum tree over `leaves` (node layout of sum_tree), in double.
std::vector<double> reference_nodes(const std::vector<double>& leaves, std::size_t leaf_count) {
  std::vector<double> nodes(2 * leaf_count, 0.0);
  for (std::size_t i = 0; i < leaves.size(); ++i) nodes[leaf_count + i] = leaves[i];
  for (std::size_t p = leaf_count - 1; p >= 1; --p) nodes[p] = nodes[2 * p] + nodes[2 * p + 1];
  return nodes;
}

long double exact_sum(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  return s;
}

/// Checks that `leaf` is a correct answer for target u over `leaves`: a non-zero leaf whose
/// cumulative range [lo, hi) (in long double) holds u, up to `tol` near a boundary; targets
/// outside [0, total) must give the first / last non-zero leaf. Away from boundaries the answer
/// must be the unique exact one.
void check_prefix_answer(const std::vector<double>& leaves, double u, u64 leaf, long double tol) {
  INFO("u = " << u << ", leaf = " << leaf);
  REQUIRE(leaf < leaves.size());
  REQUIRE(leaves[leaf] > 0.0);
  std::size_t first = 0, last = leaves.size() - 1;
  while (leaves[first] == 0.0) ++first;
  while (leaves[last] == 0.0) --last;
  const long double total = exact_sum(leaves);
  if (!(u >= 0.0)) {  // negative: the first non-zero leaf (NaN: the last)
    CHECK(leaf == (u < 0.0 ? first : last));
    return;
  }
  if (u >= total + tol) {
    CHECK(leaf == last);
    return;
  }
  long double lo = 0;
  for (std::size_t i = 0; i < leaf; ++i) lo += leaves[i];
  const long double hi = lo + leaves[leaf];
  CHECK(lo - tol <= u);
  CHECK(u < hi + tol);
  // Away from every boundary the answer is exact.
  long double c = 0;
  std::size_t exact = last;
  bool near_boundary = false;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (std::fabs(static_cast<long double>(u) - c) <= tol) near_boundary = true;
    if (leaves[i] > 0.0 && u >= c && u < c + leaves[i]) exact = i;
    c += leaves[i];
  }
  if (std::fabs(static_cast<long double>(u) - c) <= tol) near_boundary = true;
  if (!near_boundary) CHECK(leaf == exact);
}

std::vector<u64> find_all(const rlk::sum_tree<backend_t>& tree, const std::vector<double>& targets) {
  rlk::buffer<double, backend_t> t(backend(), targets);
  rlk::buffer<u64, backend_t> out(backend(), targets.size());
  tree.find_prefix_sum(t.cview(), out.view());
  return out.to_host();
}

void set_all(rlk::sum_tree<backend_t>& tree, const std::vector<u64>& indices, const std::vector<double>& values) {
  rlk::buffer<u64, backend_t> i(backend(), indices);
  rlk::buffer<double, backend_t> v(backend(), values);
  tree.set(i.cview(), v.cview());
}

}  // namespace


namespace {

/// Copies a view of backend memory to a host vector.
template <class B, class T>
std::vector<std::remove_const_t<T>> to_host(B b, rlk::view<T> v) {
  rlk::buffer<std::remove_const_t<T>, B> tmp(b, v.size());
  rlk::copy(b, v, tmp.view());
  return tmp.to_host();
}

/// Upper 0.1% point of the chi-square distribution with `df` degrees of freedom
/// (Wilson-Hilferty; within 0.2% of the exact value for df >= 10).
double chi_square_critical_999(double df) {
  const double z = 3.090232306167813;  // the standard normal's 0.999 quantile
  const double c = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - c + z * std::sqrt(c), 3.0);
}

constexpr int obs_size = 3;
template <class B>
using per_of = rlk::prioritized_replay_buffer<float, std::int32_t, B>;
template <class B>
using batch_of = rlk::replay_batch<float, std::int32_t, B>;

/// The transitions of one row: every value tells its (row, env, component); env 2 of every
/// third row terminates.
struct host_row {
  std::vector<float> obs, rewards, next;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> terminated, truncated;
};

host_row make_row(u64 row, std::size_t n) {
  host_row r;
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < obs_size; ++k) {
      r.obs.push_back(float(row * 1000 + i * 10 + std::size_t(k)));
      r.next.push_back(float(row * 1000 + i * 10 + std::size_t(k)) + 0.5f);
    }
    r.actions.push_back(std::int32_t((row + i) % 5));
    r.rewards.push_back(float(row) + 0.25f * float(i));
    r.terminated.push_back(std::uint8_t(i == 2 && row % 3 == 0));
    r.truncated.push_back(0);
  }
  return r;
}

template <class B>
void add_row(per_of<B>& per, B b, u64 row) {
  const host_row r = make_row(row, per.storage().num_envs());
  rlk::buffer<float, B> obs(b, r.obs), rew(b, r.rewards), next(b, r.next);
  rlk::buffer<std::int32_t, B> act(b, r.actions);
  rlk::buffer<std::uint8_t, B> term(b, r.terminated), trunc(b, r.truncated);
  per.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
}

template <class B>
void update(per_of<B>& per, B b, const std::vector<u64>& indices, const std::vector<float>& td) {
  rlk::buffer<u64, B> i(b, indices);
  rlk::buffer<float, B> t(b, td);
  per.update_priorities(i.cview(), t.cview());
}

/// The stratified sampler in plain host code over a copy of the tree's nodes.
std::vector<u64> reference_sample(const std::vector<double>& nodes, std::size_t leaf_count, u64 seed, u64 draw,
                                  std::size_t b) {
  std::vector<u64> out(b);
  for (std::size_t k = 0; k < b; ++k) {
    rlk::rng gen(seed, draw, k);
    const double u = (double(k) + gen.uniform<double>()) * nodes[1] / double(b);
    std::size_t node = 1;
    double rest = u;
    while (node < leaf_count) {
      const double lw = nodes[2 * node], rw = nodes[2 * node + 1];
      if (rw == 0.0 || (lw > 0.0 && rest < lw)) {
        node = 2 * node;
      } else {
        rest -= lw;
        node = 2 * node + 1;
      }
    }
    out[k] = node - leaf_count;
  }
  return out;
}

}  // namespace

TEST_CASE("sum_tree: nodes equal a fresh bottom-up build after batched updates", "[sum_tree]") {
  for (const std::size_t capacity : {std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(1000), std::size_t(1024)}) {
    INFO("capacity " << capacity);
    rlk::sum_tree<backend_t> tree(backend(), capacity);
    std::size_t leaf_count = 1;
    while (leaf_count < capacity) leaf_count <<= 1;
    CHECK(tree.capacity() == capacity);
    CHECK(tree.leaf_count() == leaf_count);
    CHECK(tree.total() == 0.0);
    CHECK(rlk::sum_tree<backend_t>::bytes_required(capacity) == 2 * leaf_count * sizeof(double));
    std::vector<double> ref(capacity, 0.0);
    std::mt19937_64 gen(11 + capacity);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int batch = 0; batch < 20; ++batch) {
      const std::size_t b = 1 + gen() % (2 * capacity + 3);
      std::vector<u64> idx(b);
      std::vector<double> val(b);
      for (std::size_t k = 0; k < b; ++k) {
        idx[k] = gen() % capacity;
        val[k] = (gen() % 7 == 0) ? 0.0 : std::exp(40.0 * unit(gen) - 20.0);  // wide magnitudes, some zeros
      }
      set_all(tree, idx, val);
      for (std::size_t k = 0; k < b; ++k) ref[idx[k]] = val[k];  // sequential: the last occurrence wins
      const std::vector<double> want = reference_nodes(ref, leaf_count);
      const std::vector<double> got = to_host(backend(), tree.nodes());
      REQUIRE(got.size() == want.size());
      for (std::size_t p = 1; p < want.size(); ++p) {
        INFO("batch " << batch << " node " << p);
        REQUIRE(got[p] == want[p]);  // bit-exact: each node is left + right, as in a fresh build
      }
      CHECK(to_host(backend(), tree.leaves()) == ref);
      CHECK(tree.total() == want[1]);
      CHECK(std::fabs(static_cast<long double>(tree.total()) - exact_sum(ref)) <= 1e-13L * exact_sum(ref));
      const std::size_t probe = gen() % capacity;
      CHECK(tree.get(probe) == ref[probe]);
    }
  }
}

TEST_CASE("sum_tree: duplicates in one batch, the last occurrence wins", "[sum_tree]") {
  rlk::sum_tree<backend_t> tree(backend(), 10);
  set_all(tree, {3, 5, 3, 3, 7, 5, 9}, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5});
  std::vector<double> want(10, 0.0);
  want[3] = 4.0;
  want[5] = 6.0;
  want[7] = 5.0;
  want[9] = 0.5;
  CHECK(to_host(backend(), tree.leaves()) == want);
  CHECK(tree.total() == 15.5);

  // A large batch with many duplicates (and a zero written last over a value), vs the sequential rule.
  rlk::sum_tree<backend_t> big(backend(), 100);
  std::vector<double> ref(100, 0.0);
  std::mt19937_64 gen(5);
  std::vector<u64> idx(5000);
  std::vector<double> val(5000);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    idx[k] = gen() % 100;
    val[k] = (gen() % 5 == 0) ? 0.0 : double(gen() % 1000) * 0.125;
    ref[idx[k]] = val[k];
  }
  set_all(big, idx, val);
  CHECK(to_host(backend(), big.leaves()) == ref);
  const std::vector<double> want_nodes = reference_nodes(ref, 128);
  CHECK(to_host(backend(), big.nodes()) == want_nodes);
}

TEST_CASE("sum_tree: fill sets a range of leaves", "[sum_tree]") {
  rlk::sum_tree<backend_t> tree(backend(), 100);
  std::vector<double> ref(100, 0.0);
  const auto fill = [&](std::size_t first, std::size_t count, double value) {
    tree.fill(first, count, value);
    for (std::size_t i = first; i < first + count; ++i) ref[i] = value;
    CHECK(to_host(backend(), tree.nodes()) == reference_nodes(ref, 128));
  };
  fill(10, 37, 2.5);
  fill(0, 1, 0.125);
  fill(99, 1, 3.0);
  fill(40, 0, 9.0);
  fill(30, 20, 0.0);
  fill(0, 100, 0.1);
  fill(63, 2, 7.0);
}

TEST_CASE("sum_tree: prefix search returns the leaf holding each target, never a zero or padding leaf", "[sum_tree]") {
  SECTION("a small hand-checked tree") {
    rlk::sum_tree<backend_t> tree(backend(), 5);  // 8 leaves, 3 of them padding
    set_all(tree, {0, 1, 2, 3, 4}, {0.0, 2.0, 0.0, 0.0, 3.0});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<u64> got = find_all(tree, {0.0, 1.0, 1.99, 2.0, 2.5, 4.999, 5.0, 100.0, -1.0, nan});
    CHECK(got == std::vector<u64>{1, 1, 1, 4, 4, 4, 4, 4, 1, 4});
  }
  SECTION("boundaries on an all-equal tree (padding never returned)") {
    rlk::sum_tree<backend_t> tree(backend(), 5);
    set_all(tree, {0, 1, 2, 3, 4}, {1.0, 1.0, 1.0, 1.0, 1.0});
    const std::vector<u64> got = find_all(tree, {0.0, 1.0, 2.0, 3.0, 4.0, std::nextafter(5.0, 0.0), 5.0, 1e300});
    CHECK(got == std::vector<u64>{0, 1, 2, 3, 4, 4, 4, 4});
  }
  SECTION("random leaves with zero runs, random and boundary targets") {
    const std::size_t capacity = 1000;
    rlk::sum_tree<backend_t> tree(backend(), capacity);
    std::vector<double> leaves(capacity);
    std::mt19937_64 gen(99);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::size_t i = 0; i < capacity; ++i) {
      const bool zero = i < 5 || i >= 990 || gen() % 4 == 0 || (i >= 500 && i < 540);
      leaves[i] = zero ? 0.0 : (gen() % 3 == 0 ? 0.1 * double(1 + gen() % 10) : std::exp(12.0 * unit(gen) - 6.0));
    }
    std::vector<u64> all(capacity);
    for (std::size_t i = 0; i < capacity; ++i) all[i] = i;
    set_all(tree, all, leaves);
    const double total = tree.total();
    std::vector<double> targets;
    for (int k = 0; k < 3000; ++k) targets.push_back(unit(gen) * total);
    double c = 0;  // boundaries as a sequential double sum sees them, and their neighbours
    long double exact = 0;
    for (std::size_t i = 0; i < capacity; ++i) {
      targets.push_back(c);
      targets.push_back(double(exact));
      targets.push_back(std::nextafter(c, 0.0));
      targets.push_back(std::nextafter(c, 2.0 * total));
      c += leaves[i];
      exact += leaves[i];
    }
    for (const double t : {0.0, std::nextafter(total, 0.0), total, std::nextafter(total, 2.0 * total), 2.0 * total,
                           -1.0, -0.0, 1e-300, total * (1.0 - 1e-16)})
      targets.push_back(t);
    const std::vector<u64> got = find_all(tree, targets);
    const long double tol = 1e-12L * static_cast<long double>(total);
    for (std::size_t k = 0; k < targets.size(); ++k) check_prefix_answer(leaves, targets[k], got[k], tol);
    std::size_t first = 0, last = capacity - 1;
    while (leaves[first] == 0.0) ++first;
    while (leaves[last] == 0.0) --last;
    CHECK(first >= 5);
    CHECK(last < 990);
    CHECK(got[got.size() - 9] == first);  // 0 -> the first non-zero leaf
    CHECK(got[got.size() - 5] == last);   // 2 * total -> the last non-zero leaf
  }
  SECTION("a single non-zero leaf takes every target") {
    rlk::sum_tree<backend_t> tree(backend(), 300);
    set_all(tree, {217}, {1e-300});
    const std::vector<u64> got = find_all(tree, {0.0, 5e-301, 1e-300, 1.0, -3.0});
    CHECK(got == std::vector<u64>(5, 217));
  }
}

TEST_CASE("sum_tree: no drift after 10^6 single-element updates", "[sum_tree]") {
  const std::size_t capacity = 4096, batches = 1000, per_batch = 1000;
  rlk::sum_tree<backend_t> tree(backend(), capacity);
  std::vector<double> ref(capacity, 0.0);
  std::mt19937_64 gen(2024);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<u64> idx(per_batch);
  std::vector<double> val(per_batch);
  rlk::buffer<u64, backend_t> idx_dev(backend(), per_batch);
  rlk::buffer<double, backend_t> val_dev(backend(), per_batch);
  for (std::size_t b = 0; b < batches; ++b) {
    for (std::size_t k = 0; k < per_batch; ++k) {
      idx[k] = gen() % capacity;
      val[k] = std::exp(20.0 * unit(gen) - 10.0);
      ref[idx[k]] = val[k];
    }
    idx_dev.assign(idx);
    val_dev.assign(val);
    tree.set(idx_dev.cview(), val_dev.cview());
  }
  const long double exact = exact_sum(ref);
  const long double drift = std::fabs(static_cast<long double>(tree.total()) - exact) / exact;
  INFO("relative drift " << double(drift));
  CHECK(drift < 1e-9L);
  CHECK(drift < 1e-14L);  // in fact only the rounding of one bottom-up sum
  CHECK(to_host(backend(), tree.nodes()) == reference_nodes(ref, capacity));
}

TEST_CASE("sum_tree: invalid input is rejected and changes nothing", "[sum_tree][errors]") {
  CHECK_THROWS_AS(rlk::sum_tree<backend_t>(backend(), 0), std::invalid_argument);
  rlk::sum_tree<backend_t> tree(backend(), 10);
  set_all(tree, {1, 2}, {1.0, 2.0});
  const std::vector<double> before = to_host(backend(), tree.nodes());
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(set_all(tree, {0, 10}, {1.0, 1.0}), Catch::Contains("indices[1] = 10 >= capacity 10"));
  CHECK_THROWS_WITH(set_all(tree, {0, 1, 2}, {1.0, 1.0, -1.0}), Catch::Contains("values[2] = -1"));
  CHECK_THROWS_AS(set_all(tree, {0}, {nan}), std::invalid_argument);
  CHECK_THROWS_AS(set_all(tree, {0}, {inf}), std::invalid_argument);
  CHECK_THROWS_AS(set_all(tree, {0}, {tree.max_value() * 2.0}), std::invalid_argument);
  rlk::buffer<u64, backend_t> two(backend(), 2);
  rlk::buffer<double, backend_t> three(backend(), 3);
  CHECK_THROWS_AS(tree.set(two.cview(), three.cview()), std::invalid_argument);
  CHECK_THROWS_AS(tree.fill(5, 6, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(tree.fill(0, 1, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(tree.fill(0, 1, nan), std::invalid_argument);
  CHECK_THROWS_AS(tree.get(10), std::out_of_range);
  CHECK(to_host(backend(), tree.nodes()) == before);
  rlk::sum_tree<backend_t> empty(backend(), 4);
  CHECK_THROWS_WITH(find_all(empty, {0.5}), Catch::Contains("empty"));
  rlk::buffer<double, backend_t> targets(backend(), 3);
  CHECK_THROWS_AS(tree.find_prefix_sum(targets.cview(), two.view()), std::invalid_argument);
}

TEST_CASE("prioritized replay: new transitions get the largest priority seen so far", "[per]") {
  const double alpha = 0.6, eps = 1e-6;
  const double tol = rlk_test::on_cuda ? 1e-15 : 0.0;  // CUDA's pow may differ in the last bit
  const auto close = [tol](double got, double want) { return std::fabs(got - want) <= tol * std::fabs(want); };
  const std::size_t n = 4;
  per_of<backend_t> per(backend(), 3, n, obs_size, 1);
  CHECK(per.max_priority() == 1.0);
  CHECK(per.size() == 0);
  CHECK(per.tree().total() == 0.0);
  add_row(per, backend(), 0);
  CHECK(per.size() == n);
  CHECK(to_host(backend(), per.tree().leaves()) == std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0});

  update(per, backend(), {1, 2}, {2.5f, -4.0f});
  CHECK(per.max_priority() == 4.0 + eps);
  std::vector<double> leaves = to_host(backend(), per.tree().leaves());
  CHECK(close(leaves[1], std::pow(2.5 + eps, alpha)));
  CHECK(close(leaves[2], std::pow(4.0 + eps, alpha)));
  const double top = leaves[2];

  add_row(per, backend(), 1);
  leaves = to_host(backend(), per.tree().leaves());
  for (std::size_t i = n; i < 2 * n; ++i) CHECK(close(leaves[i], std::pow(4.0 + eps, alpha)));

  update(per, backend(), {0}, {0.1f});  // a smaller priority does not lower the maximum
  CHECK(per.max_priority() == 4.0 + eps);
  leaves = to_host(backend(), per.tree().leaves());
  CHECK(close(leaves[0], std::pow(double(0.1f) + eps, alpha)));

  add_row(per, backend(), 2);
  add_row(per, backend(), 3);  // the ring wraps: row 0 is overwritten and gets the max priority
  leaves = to_host(backend(), per.tree().leaves());
  for (std::size_t i = 0; i < n; ++i) CHECK(leaves[i] == top);
  for (std::size_t i = 2 * n; i < 3 * n; ++i) CHECK(leaves[i] == top);
  CHECK(to_host(backend(), per.tree().nodes()) == reference_nodes(leaves, 16));
}

TEST_CASE("prioritized replay: sampling frequencies follow the priorities (chi-square)", "[per]") {
  const std::size_t n = 4, rows = 10, stored = rows * n;  // 40 of 64 slots written
  per_of<backend_t> per(backend(), 16, n, obs_size, 1);
  for (u64 r = 0; r < rows; ++r) add_row(per, backend(), r);
  std::vector<u64> slots(stored);
  std::vector<float> td(stored);
  for (std::size_t i = 0; i < stored; ++i) {
    slots[i] = i;
    td[i] = (i % 2 ? -1.0f : 1.0f) * (0.1f + 0.25f * float(i % 9));
  }
  update(per, backend(), slots, td);

  const std::size_t b = 512, draws = 400;
  batch_of<backend_t> batch(backend(), b, obs_size, 1);
  std::vector<double> counts(stored, 0.0);
  for (u64 d = 0; d < draws; ++d) {
    per.sample(7, d, batch, 0.4f);
    for (const u64 i : batch.indices.to_host()) {
      REQUIRE(i < stored);  // never an unwritten slot nor padding
      counts[i] += 1.0;
    }
  }
  const std::vector<double> leaves = to_host(backend(), per.tree().leaves());
  double leaf_sum = 0;
  for (std::size_t i = 0; i < stored; ++i) leaf_sum += leaves[i];
  const double samples = double(b * draws);
  double chi2 = 0, chi2_uniform = 0;
  for (std::size_t i = 0; i < stored; ++i) {
    const double p = std::pow(std::fabs(double(td[i])) + 1e-6, 0.6);  // the float64 reference priority
    const double expected = samples * p / leaf_sum;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    const double expected_uniform = samples / double(stored);
    chi2_uniform += (counts[i] - expected_uniform) * (counts[i] - expected_uniform) / expected_uniform;
  }
  const double critical = chi_square_critical_999(double(stored - 1));
  INFO("chi2 " << chi2 << " (critical " << critical << "), against uniform " << chi2_uniform);
  CHECK(chi2 < critical);
  CHECK(chi2_uniform > 100 * critical);  // the test can tell priorities from uniform sampling
}

TEST_CASE("prioritized replay: indices, importance weights and the gathered batch match the reference", "[per]") {
  const std::size_t n = 8, capacity_steps = 20, rows = 13;  // 104 of 160 slots written (256 leaves)
  per_of<backend_t> per(backend(), capacity_steps, n, obs_size, 1);
  for (u64 r = 0; r < rows; ++r) add_row(per, backend(), r);
  std::vector<u64> slots;
  std::vector<float> td;
  std::mt19937 gen(3);
  for (std::size_t i = 0; i < rows * n; i += 1 + gen() % 2) {  // about 2/3 updated, the rest keep max priority
    slots.push_back(i);
    td.push_back(float(gen() % 1000) * 0.01f - 5.0f);
  }
  update(per, backend(), slots, td);
  const std::size_t b = 256;
  batch_of<backend_t> batch(backend(), b, obs_size, 1);
  for (const float beta : {0.0f, 0.4f, 1.0f}) {
    INFO("beta " << beta);
    per.sample(1234, 77, batch, beta, 1, 0.9f);
    const std::vector<double> nodes = to_host(backend(), per.tree().nodes());
    const std::vector<u64> idx = batch.indices.to_host();
    CHECK(idx == reference_sample(nodes, 256, 1234, 77, b));
    const std::vector<float> w = batch.weights.to_host();
    const double total = nodes[1], size = double(per.size());
    double max_w = 0;
    for (const u64 i : idx) max_w = std::max(max_w, std::pow(size * nodes[256 + i] / total, -double(beta)));
    float largest = 0;
    for (std::size_t k = 0; k < b; ++k) {
      REQUIRE(idx[k] < rows * n);
      const double want = std::pow(size * nodes[256 + idx[k]] / total, -double(beta)) / max_w;
      CHECK(std::fabs(double(w[k]) - want) <= 2e-6 * want);
      largest = std::max(largest, w[k]);
    }
    CHECK(largest == 1.0f);  // normalised by the batch's largest weight
    // The gathered transitions are those of the sampled slots.
    const std::vector<float> obs = batch.observations.to_host(), rew = batch.rewards.to_host(),
                             next = batch.next_observations.to_host(), disc = batch.discounts.to_host();
    const std::vector<std::int32_t> act = batch.actions.to_host();
    const std::vector<std::uint8_t> term = batch.terminated.to_host();
    for (std::size_t k = 0; k < b; ++k) {
      const u64 row = idx[k] / n, env = idx[k] % n;
      const host_row r = make_row(row, n);
      for (int c = 0; c < obs_size; ++c) {
        CHECK(obs[k * obs_size + c] == r.obs[env * obs_size + c]);
        CHECK(next[k * obs_size + c] == r.next[env * obs_size + c]);
      }
      CHECK(act[k] == r.actions[env]);
      CHECK(rew[k] == r.rewards[env]);
      CHECK(term[k] == r.terminated[env]);
      CHECK(disc[k] == 0.9f);
    }
  }
  // The default beta (params().beta) and an n-step sample.
  per.set_beta(1.0);
  batch_of<backend_t> other(backend(), b, obs_size, 1);
  per.sample(1234, 77, other);
  per.sample(1234, 77, batch, 1.0f);
  CHECK(other.weights.to_host() == batch.weights.to_host());
  per.sample(1234, 77, other, 1.0f, 3, 0.5f);
  CHECK(other.indices.to_host() == batch.indices.to_host());
  CHECK(other.weights.to_host() == batch.weights.to_host());
}

namespace {

struct scenario_result {
  std::vector<u64> indices_a, indices_b, indices_c;
  std::vector<float> weights_b;
  std::vector<double> nodes;
};

/// Adds, samples, updates (with duplicates), wraps the ring and samples again.
template <class B>
scenario_result run_scenario(B b, double alpha) {
  const std::size_t n = 32;
  rlk::prioritized_replay_params params;
  params.alpha = alpha;
  per_of<B> per(b, 64, n, obs_size, 1, params);
  for (u64 r = 0; r < 40; ++r) add_row(per, b, r);
  const std::size_t batch_size = 4096;
  batch_of<B> batch(b, batch_size, obs_size, 1);
  per.sample(99, 0, batch, 0.5f, 3, 0.97f);
  scenario_result out;
  out.indices_a = batch.indices.to_host();
  std::vector<float> td(batch_size);
  for (std::size_t k = 0; k < batch_size; ++k) td[k] = float(k % 97) * 0.03f - 1.0f;
  rlk::buffer<float, B> td_dev(b, td);
  per.update_priorities(batch.indices.cview(), td_dev.cview());  // ~1280 slots, many duplicates
  for (u64 r = 40; r < 70; ++r) add_row(per, b, r);             // wraps
  per.sample(99, 1, batch, 0.7f);
  out.indices_b = batch.indices.to_host();
  out.weights_b = batch.weights.to_host();
  per.sample(99, 2, batch, 0.7f);
  out.indices_c = batch.indices.to_host();
  out.nodes = to_host(b, per.tree().nodes());
  return out;
}

}  // namespace

TEST_CASE("prioritized replay: deterministic per (seed, draw), the same on every backend", "[per]") {
  // alpha = 1 keeps pow out of the leaves, so that CUDA's leaves are bit-identical to the host's.
  const double alpha = rlk_test::on_cuda ? 1.0 : 0.6;
  const scenario_result here = run_scenario(backend(), alpha);
  const scenario_result again = run_scenario(backend(), alpha);
  const scenario_result serial = run_scenario(rlk::serial, alpha);
  const scenario_result threads = run_scenario(rlk::openmp_backend{3, 0}, alpha);  // 3 threads, always parallel
  CHECK(here.indices_a == again.indices_a);
  CHECK(here.indices_b == again.indices_b);
  CHECK(here.indices_b != here.indices_c);  // a new draw is a new batch
  for (const scenario_result* other : {&serial, &threads}) {
    CHECK(here.indices_a == other->indices_a);
    CHECK(here.indices_b == other->indices_b);
    CHECK(here.indices_c == other->indices_c);
    CHECK(here.nodes == other->nodes);
    if (rlk_test::on_cuda) {
      for (std::size_t k = 0; k < here.weights_b.size(); ++k)
        CHECK(std::fabs(here.weights_b[k] - other->weights_b[k]) <= 1e-6f * other->weights_b[k]);
    } else {
      CHECK(here.weights_b == other->weights_b);
    }
  }
}

TEST_CASE("prioritized replay: invalid input is rejected and changes nothing", "[per][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto make = [](double alpha, double beta, double epsilon) {
    rlk::prioritized_replay_params p;
    p.alpha = alpha;
    p.beta = beta;
    p.epsilon = epsilon;
    return per_of<backend_t>(backend(), 4, 2, obs_size, 1, p);
  };
  CHECK_THROWS_WITH(make(-0.1, 0.4, 1e-6), Catch::Contains("alpha"));
  CHECK_THROWS_WITH(make(nan, 0.4, 1e-6), Catch::Contains("alpha"));
  CHECK_THROWS_WITH(make(inf, 0.4, 1e-6), Catch::Contains("alpha"));
  CHECK_THROWS_WITH(make(0.6, 1.5, 1e-6), Catch::Contains("beta"));
  CHECK_THROWS_WITH(make(0.6, nan, 1e-6), Catch::Contains("beta"));
  CHECK_THROWS_WITH(make(0.6, 0.4, 0.0), Catch::Contains("epsilon"));
  CHECK_THROWS_WITH(make(0.6, 0.4, -1.0), Catch::Contains("epsilon"));
  CHECK_THROWS_WITH(make(0.6, 0.4, nan), Catch::Contains("epsilon"));
  CHECK_THROWS_AS(per_of<backend_t>(backend(), 0, 2, obs_size, 1), std::invalid_argument);
  CHECK_NOTHROW(make(0.0, 1.0, 1e-6));

  per_of<backend_t> per(backend(), 4, 2, obs_size, 1);
  batch_of<backend_t> batch(backend(), 16, obs_size, 1);
  CHECK_THROWS_WITH(per.sample(1, 0, batch, 0.4f), Catch::Contains("empty"));
  add_row(per, backend(), 0);
  add_row(per, backend(), 1);
  update(per, backend(), {0, 1, 2, 3}, {0.5f, 1.5f, -2.0f, 0.0f});
  per.sample(1, 0, batch, 0.4f);
  const std::vector<u64> indices = batch.indices.to_host();
  const std::vector<float> weights = batch.weights.to_host();
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(per.sample(1, 1, batch, 1.5f), Catch::Contains("beta"));
  CHECK_THROWS_WITH(per.sample(1, 1, batch, -0.1f), Catch::Contains("beta"));
  CHECK_THROWS_WITH(per.sample(1, 1, batch, fnan), Catch::Contains("beta"));
  CHECK_THROWS_WITH(per.sample(1, 1, batch, 0.4f, 0), Catch::Contains("n must be"));
  CHECK_THROWS_WITH(per.sample(1, 1, batch, 0.4f, 1, 1.5f), Catch::Contains("gamma"));
  batch_of<backend_t> wrong(backend(), 16, obs_size + 1, 1);
  CHECK_THROWS_WITH(per.sample(1, 1, wrong, 0.4f), Catch::Contains("observation_size"));
  CHECK(batch.indices.to_host() == indices);
  CHECK(batch.weights.to_host() == weights);
  CHECK_THROWS_AS(per.set_beta(2.0), std::invalid_argument);
  CHECK(per.params().beta == 0.4);

  const std::vector<double> nodes = to_host(backend(), per.tree().nodes());
  const double max_priority = per.max_priority();
  CHECK(max_priority == 2.0 + 1e-6);
  CHECK_THROWS_WITH(update(per, backend(), {0, 1, 2}, {9.0f, 9.0f, fnan}), Catch::Contains("td_errors[2]"));
  CHECK_THROWS_WITH(update(per, backend(), {0, 1}, {9.0f, std::numeric_limits<float>::infinity()}),
                    Catch::Contains("td_errors[1]"));
  CHECK_THROWS_WITH(update(per, backend(), {0, 4, 1}, {9.0f, 9.0f, 9.0f}),
                    Catch::Contains("indices[1] = 4 is not a stored slot"));
  rlk::buffer<u64, backend_t> two(backend(), 2);
  rlk::buffer<float, backend_t> three(backend(), 3);
  CHECK_THROWS_AS(per.update_priorities(two.cview(), three.cview()), std::invalid_argument);
  CHECK(to_host(backend(), per.tree().nodes()) == nodes);
  CHECK(per.max_priority() == max_priority);
}

TEST_CASE("prioritized replay: add, sample and a deferred priority update never wait for the host", "[per][host_sync]") {
  REQUIRE(rlk::host_sync_counting_enabled);
  // The counts must not depend on the batch size or the capacity.
  for (const std::size_t capacity_steps : {std::size_t(3), std::size_t(2000)}) {
    for (const std::size_t b : {std::size_t(1), std::size_t(256), std::size_t(10000)}) {
      INFO("capacity_steps " << capacity_steps << ", batch " << b);
      const std::size_t n = 5;
      per_of<backend_t> per(backend(), capacity_steps, n, obs_size, 1);
      batch_of<backend_t> batch(backend(), b, obs_size, 1);
      add_row(per, backend(), 0);
      const host_row r = make_row(1, n);
      rlk::buffer<float, backend_t> obs(backend(), r.obs), rew(backend(), r.rewards), next(backend(), r.next);
      rlk::buffer<std::int32_t, backend_t> act(backend(), r.actions);
      rlk::buffer<std::uint8_t, backend_t> term(backend(), r.terminated), trunc(backend(), r.truncated);
      std::vector<float> td(b);
      for (std::size_t k = 0; k < b; ++k) td[k] = float(k % 13) * 0.5f - 3.0f;
      rlk::buffer<float, backend_t> td_dev(backend(), td);

      rlk::reset_host_sync_counts();
      per.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
      per.sample(3, 0, batch, 0.5f, 3, 0.9f);
      per.update_priorities_deferred(batch.indices.cview(), td_dev.cview());
      CHECK(rlk::host_sync_counts().total() == 0);
      per.check_priority_updates();  // reads the validation record
      CHECK(rlk::host_sync_counts().reads == 1);
      CHECK(rlk::host_sync_counts().total() == 1);

      // The checked form: one read; max_priority() reads once after an update, then not again.
      rlk::reset_host_sync_counts();
      per.add(obs.cview(), act.cview(), rew.cview(), next.cview(), term.cview(), trunc.cview());
      per.sample(3, 1, batch, 0.5f);
      per.update_priorities(batch.indices.cview(), td_dev.cview());
      CHECK(rlk::host_sync_counts().total() == 1);
      CHECK(per.max_priority() == 3.0 + 1e-6);
      CHECK(per.max_priority() == 3.0 + 1e-6);
      CHECK(rlk::host_sync_counts().reads == 2);
      CHECK(rlk::host_sync_counts().total() == 2);
    }
  }
}

TEST_CASE("sum_tree: set and find_prefix_sum wait once (their checks); the unchecked forms never", "[sum_tree][host_sync]") {
  REQUIRE(rlk::host_sync_counting_enabled);
  for (const std::size_t capacity : {std::size_t(7), std::size_t(100000)}) {
    for (const std::size_t b : {std::size_t(3), std::size_t(20000)}) {
      INFO("capacity " << capacity << ", batch " << b);
      rlk::sum_tree<backend_t> tree(backend(), capacity);
      std::vector<u64> idx(b);
      std::vector<double> val(b), targets(b);
      for (std::size_t k = 0; k < b; ++k) {
        idx[k] = (k * 7919) % capacity;
        val[k] = 0.5 + double(k % 11);
        targets[k] = double(k);
      }
      rlk::buffer<u64, backend_t> i(backend(), idx), out(backend(), b);
      rlk::buffer<double, backend_t> v(backend(), val), t(backend(), targets);
      rlk::reset_host_sync_counts();
      tree.set_unchecked(i.cview(), v.cview());
      tree.fill(0, capacity / 2, 2.0);
      tree.find_prefix_sum_unchecked(t.cview(), out.view());
      CHECK(rlk::host_sync_counts().total() == 0);
      tree.set(i.cview(), v.cview());
      CHECK(rlk::host_sync_counts().total() == 1);
      tree.find_prefix_sum(t.cview(), out.view());
      CHECK(rlk::host_sync_counts().total() == 2);
    }
  }
}

TEST_CASE("prioritized replay: deferred validation skips a rejected batch and reports it at the check", "[per][errors]") {
  const float fnan = std::numeric_limits<float>::quiet_NaN(), finf = std::numeric_limits<float>::infinity();
  per_of<backend_t> per(backend(), 4, 2, obs_size, 1), same(backend(), 4, 2, obs_size, 1);
  for (per_of<backend_t>* p : {&per, &same}) {
    add_row(*p, backend(), 0);
    add_row(*p, backend(), 1);
    update(*p, backend(), {0, 1, 2, 3}, {0.5f, 1.5f, -2.0f, 0.0f});
  }
  const std::vector<double> nodes = to_host(backend(), per.tree().nodes());
  const auto deferred = [&](const std::vector<u64>& indices, const std::vector<float>& td) {
    rlk::buffer<u64, backend_t> i(backend(), indices);
    rlk::buffer<float, backend_t> t(backend(), td);
    per.update_priorities_deferred(i.cview(), t.cview());
    rlk::synchronize(backend());  // the inputs go out of scope
  };
  per.check_priority_updates();  // nothing recorded yet
  deferred({0, 1, 2}, {9.0f, 9.0f, fnan});
  CHECK(to_host(backend(), per.tree().nodes()) == nodes);  // skipped on the backend
  CHECK(per.max_priority() == 2.0 + 1e-6);
  deferred({0, 4, 1}, {9.0f, 9.0f, 9.0f});  // a second rejected batch: the first error is kept
  CHECK(to_host(backend(), per.tree().nodes()) == nodes);
  deferred({3, 1}, {-3.0f, 0.25f});         // a valid batch is applied
  update(same, backend(), {3, 1}, {-3.0f, 0.25f});
  CHECK(to_host(backend(), per.tree().nodes()) == to_host(backend(), same.tree().nodes()));
  CHECK(per.max_priority() == 3.0 + 1e-6);
  CHECK_THROWS_WITH(per.check_priority_updates(), Catch::Contains("td_errors[2] = nan is not finite"));
  CHECK_NOTHROW(per.check_priority_updates());  // reported once
  deferred({0, 4, 1}, {9.0f, finf, 9.0f});
  CHECK_THROWS_WITH(per.check_priority_updates(), Catch::Contains("indices[1] = 4 is not a stored slot (size 4)"));
  deferred({0, 1}, {9.0f, finf});
  CHECK_THROWS_WITH(per.check_priority_updates(), Catch::Contains("td_errors[1] = inf is not finite"));
  CHECK(to_host(backend(), per.tree().nodes()) == to_host(backend(), same.tree().nodes()));
  CHECK(per.max_priority() == 3.0 + 1e-6);
  // Sizes and null views are host facts: rejected at once.
  rlk::buffer<u64, backend_t> two(backend(), 2);
  rlk::buffer<float, backend_t> three(backend(), 3);
  CHECK_THROWS_AS(per.update_priorities_deferred(two.cview(), three.cview()), std::invalid_argument);
  CHECK_NOTHROW(per.check_priority_updates());
}

TEST_CASE("sum_tree: large batches and fills (the grid-wide levels and the marked top) equal a fresh build", "[sum_tree]") {
  // Batches above 8192 elements and fills above 8192 leaves take the multi-launch paths on CUDA;
  // the small tree has fewer nodes than one block's width.
  for (const std::size_t capacity : {std::size_t(1), std::size_t(1500), std::size_t(100000)}) {
    INFO("capacity " << capacity);
    rlk::sum_tree<backend_t> tree(backend(), capacity);
    std::size_t leaf_count = 1;
    while (leaf_count < capacity) leaf_count <<= 1;
    std::vector<double> ref(capacity, 0.0);
    std::mt19937_64 gen(77 + capacity);
    for (int round = 0; round < 3; ++round) {
      const std::size_t b = 9000 + gen() % 20000;
      std::vector<u64> idx(b);
      std::vector<double> val(b);
      for (std::size_t k = 0; k < b; ++k) {
        idx[k] = gen() % capacity;
        val[k] = double(gen() % 100000) * 0.001;
      }
      set_all(tree, idx, val);
      for (std::size_t k = 0; k < b; ++k) ref[idx[k]] = val[k];
      REQUIRE(to_host(backend(), tree.nodes()) == reference_nodes(ref, leaf_count));
      const std::size_t first = gen() % capacity, count = std::min(capacity - first, std::size_t(9000 + gen() % 40000));
      tree.fill(first, count, 0.75 * double(round + 1));
      for (std::size_t i = first; i < first + count; ++i) ref[i] = 0.75 * double(round + 1);
      REQUIRE(to_host(backend(), tree.nodes()) == reference_nodes(ref, leaf_count));
    }
  }
}

#if defined(RLK_BACKEND_CUDA)
TEST_CASE("prioritized replay: on a non-blocking stream, the same results as on the default stream", "[per][stream]") {
  // All of a buffer's work is ordered on its backend's stream; a non-blocking stream does not
  // synchronise with the legacy default stream, so a missing stream argument would race here.
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  const scenario_result on_stream = run_scenario(rlk::cuda_backend{stream}, 1.0);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  const scenario_result on_default = run_scenario(backend(), 1.0);
  CHECK(on_stream.indices_a == on_default.indices_a);
  CHECK(on_stream.indices_b == on_default.indices_b);
  CHECK(on_stream.indices_c == on_default.indices_c);
  CHECK(on_stream.weights_b == on_default.weights_b);
  CHECK(on_stream.nodes == on_default.nodes);
}
#endif
