// Owning buffers, views and for_each_index on the backend under test.
#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/error.hpp>
#include <rlkernels/core/host_sync.hpp>
#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/reduce.hpp>

#include "../test_backend.hpp"

#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

using namespace rlkernels;

static_assert(std::is_trivially_copyable_v<view<float>>, "views are passed by value into kernels");
static_assert(std::is_convertible_v<view<float>, view<const float>>, "view<T> converts to view<const T>");
static_assert(!std::is_convertible_v<view<const float>, view<float>>, "constness is not dropped");
static_assert(!std::is_copy_constructible_v<buffer<float, serial_backend>>, "buffers are move-only");
static_assert(std::is_nothrow_move_constructible_v<buffer<float, serial_backend>>, "");

namespace {
struct affine_kernel {
  view<const int> in;
  view<long long> out;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { out[i] = 3LL * in[i] + static_cast<long long>(i); }
};
}  // namespace

TEST_CASE("buffer: zero-initialised, round trips through the host", "[memory]") {
  buffer<int, rlk_test::backend_t> b(rlk_test::backend(), 1000);
  CHECK(b.size() == 1000);
  CHECK(b.bytes() == 4000);
  for (int v : b.to_host()) REQUIRE(v == 0);

  std::vector<int> host(1000);
  std::iota(host.begin(), host.end(), -500);
  b.assign(host);
  CHECK(b.to_host() == host);
  CHECK(b.get(999) == 499);
  b.zero();
  CHECK(b.get(10) == 0);

  buffer<int, rlk_test::backend_t> c(rlk_test::backend(), host);
  CHECK(c.to_host() == host);
}

TEST_CASE("buffer: move transfers ownership", "[memory]") {
  buffer<double, rlk_test::backend_t> a(rlk_test::backend(), std::vector<double>{1, 2, 3});
  const double* p = a.data();
  buffer<double, rlk_test::backend_t> b(std::move(a));
  CHECK(b.data() == p);
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  buffer<double, rlk_test::backend_t> c;
  c = std::move(b);
  CHECK(c.to_host() == std::vector<double>{1, 2, 3});
  buffer<double, rlk_test::backend_t> empty(rlk_test::backend(), 0);
  CHECK(empty.empty());
  CHECK(empty.to_host().empty());
}

TEST_CASE("buffer: bad sizes and indices are rejected with the numbers in the message", "[memory][errors]") {
  buffer<int, rlk_test::backend_t> b(rlk_test::backend(), 4);
  CHECK_THROWS_WITH(b.assign(std::vector<int>(5, 1)), Catch::Contains("got 5 elements for a buffer of 4"));
  CHECK(b.to_host() == std::vector<int>(4, 0));  // the rejected assign changed nothing
  CHECK_THROWS_AS(b.get(4), std::out_of_range);
  CHECK_THROWS_AS(b.assign(nullptr, 4), std::invalid_argument);
}

TEST_CASE("buffer: an allocation that cannot fit names the bytes asked for", "[memory][errors]") {
  const std::size_t huge = std::size_t(1) << 60;  // 1 EiB of bytes
  try {
    buffer<unsigned char, rlk_test::backend_t> b(rlk_test::backend(), huge);
    FAIL("allocation of 1 EiB succeeded");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == huge);
    CHECK_THAT(e.what(), Catch::Contains("1152921504606846976 bytes"));
  }
  CHECK_THROWS_AS((buffer<double, rlk_test::backend_t>(rlk_test::backend(), std::size_t(-1) / 2)), std::length_error);
}

TEST_CASE("for_each_index runs every index exactly once on the backend", "[backend]") {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(257), std::size_t(100003)}) {
    std::vector<int> host(n);
    std::iota(host.begin(), host.end(), 7);
    buffer<int, rlk_test::backend_t> in(rlk_test::backend(), host);
    buffer<long long, rlk_test::backend_t> out(rlk_test::backend(), n);
    for_each_index(rlk_test::backend(), n, affine_kernel{in.cview(), out.view()});
    const std::vector<long long> got = out.to_host();
    for (std::size_t i = 0; i < n; ++i) REQUIRE(got[i] == 3LL * host[i] + static_cast<long long>(i));
  }
}

#if defined(RLK_BACKEND_OPENMP)
TEST_CASE("openmp: small batches run serially unless serial_below is lowered; results are the same", "[backend]") {
  for (std::size_t serial_below : {std::size_t(0), std::size_t(1024), std::size_t(1) << 20}) {
    const openmp_backend backend{3, serial_below};
    const std::size_t n = 5000;
    std::vector<int> host(n, 2);
    buffer<int, openmp_backend> in(backend, host);
    buffer<long long, openmp_backend> out(backend, n);
    for_each_index(backend, n, affine_kernel{in.cview(), out.view()});
    const std::vector<long long> got = out.to_host();
    for (std::size_t i = 0; i < n; ++i) REQUIRE(got[i] == 6 + static_cast<long long>(i));
  }
}
#endif

TEST_CASE("view: subview and element access", "[memory]") {
  std::vector<int> v{0, 1, 2, 3, 4, 5};
  view<int> all = make_view(v);
  view<int> mid = all.subview(2, 3);
  CHECK(mid.size() == 3);
  CHECK(mid[0] == 2);
  mid[2] = 40;
  CHECK(v[4] == 40);
  view<const int> c = all;
  CHECK(c.data() == v.data());
}

TEST_CASE("copy: within backend memory, sizes checked", "[memory]") {
  const auto backend = rlk_test::backend();
  buffer<float, rlk_test::backend_t> a(backend, std::vector<float>{1, 2, 3, 4});
  buffer<float, rlk_test::backend_t> b(backend, 4);
  copy(backend, a.cview(), b.view());
  CHECK(b.to_host() == std::vector<float>{1, 2, 3, 4});
  copy(backend, a.view().subview(1, 2), b.view().subview(0, 2));  // a non-const source works too
  CHECK(b.to_host() == std::vector<float>{2, 3, 3, 4});
  buffer<float, rlk_test::backend_t> c(backend, 3);
  CHECK_THROWS_AS(copy(backend, a.cview(), c.view()), std::invalid_argument);
  CHECK(c.to_host() == std::vector<float>{0, 0, 0});
}

TEST_CASE("expect_fits names what does not fit, the size and the memory available", "[memory]") {
  const auto backend = rlk_test::backend();
  CHECK_NOTHROW(detail::expect_fits(backend, 1024, "small"));
  try {
    detail::expect_fits(backend, std::size_t(-1) / 2, "rlkernels::thing: 7 rows");
    FAIL("no exception");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == std::size_t(-1) / 2);
    CHECK_THAT(std::string(e.what()), Catch::Contains("rlkernels::thing: 7 rows needs") && Catch::Contains("available"));
  }
}

namespace {
struct one {
  RLK_HOST_DEVICE double operator()(std::size_t) const { return 1.0; }
};
struct plus {
  RLK_HOST_DEVICE double operator()(double a, double c) const { return a + c; }
};
}  // namespace

TEST_CASE("host round trips are counted on every backend (RLK_COUNT_HOST_SYNCS)", "[memory][host_sync]") {
  static_assert(host_sync_counting_enabled, "the tests are built with RLK_COUNT_HOST_SYNCS=1");
  auto b = rlk_test::zeros<float>(16);
  reset_host_sync_counts();
  REQUIRE(host_sync_counts().total() == 0);
  const std::vector<float> host = b.to_host();  // one read
  (void)b.get(3);                               // one read
  b.assign(host);                               // one write
  synchronize(rlk_test::backend());             // one synchronisation
  CHECK(detail::deterministic_sum(rlk_test::backend(), 100, one{}, 0.0, plus{}) == 100.0);  // one reduction
  // Kernels and device-side copies never wait.
  auto c = rlk_test::zeros<float>(16);
  copy(rlk_test::backend(), b.cview(), c.view());
  const host_sync_counts_t counts = host_sync_counts();
  CHECK(counts.reads == 2);
  CHECK(counts.writes == 1);
  CHECK(counts.synchronizations == 1);
  CHECK(counts.reductions == 1);
  CHECK(counts.total() == 5);
  reset_host_sync_counts();
  CHECK(host_sync_counts().total() == 0);
}

TEST_CASE("deterministic_sum_into leaves the same sum in backend memory without a host round trip", "[memory][host_sync]") {
  auto out = rlk_test::zeros<double>(1);
  reset_host_sync_counts();
  detail::deterministic_sum_into(rlk_test::backend(), 10000, one{}, 0.0, plus{}, out.data());
  CHECK(host_sync_counts().total() == 0);
  CHECK(out.get(0) == detail::deterministic_sum(rlk_test::backend(), 10000, one{}, 0.0, plus{}));
}
