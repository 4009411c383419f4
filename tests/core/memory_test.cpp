// Owning buffers, views and for_each_index on the backend under test.
#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/error.hpp>
#include <rlkernels/core/host_sync.hpp>
#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/reduce.hpp>
#include <rlkernels/core/thrust_call.hpp>

#include "../test_backend.hpp"

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if defined(RLK_BACKEND_CUDA)
#include <thrust/system/cuda/error.h>
#include <thrust/system_error.h>
#endif

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

// ---- streams and devices -----------------------------------------------------------------------

namespace {
struct square_plus_index {
  view<const int> in;
  view<long long> out;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    out[i] = static_cast<long long>(in[i]) * in[i] + static_cast<long long>(i);
  }
};
struct element_term {
  const long long* v;
  RLK_HOST_DEVICE long long operator()(std::size_t i) const { return v[i]; }
};
struct add_ll {
  RLK_HOST_DEVICE long long operator()(long long a, long long b) const { return a + b; }
};

#if defined(RLK_BACKEND_CUDA)
/// A stream that does not synchronise with the legacy default stream: work that wrongly went to
/// stream 0 (or ran unordered with it) would race with this one instead of being serialised.
struct non_blocking_stream {
  cudaStream_t stream = nullptr;
  non_blocking_stream() { RLK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~non_blocking_stream() {
    (void)cudaStreamSynchronize(stream);
    (void)cudaStreamDestroy(stream);
  }
  non_blocking_stream(const non_blocking_stream&) = delete;
  non_blocking_stream& operator=(const non_blocking_stream&) = delete;
};
int current_device() {
  int d = -1;
  RLK_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}
int device_of_pointer(const void* p) {
  cudaPointerAttributes a{};
  RLK_CUDA_CHECK(cudaPointerGetAttributes(&a, p));
  return a.device;
}
#endif
}  // namespace

TEST_CASE("a backend on a non-blocking stream orders allocation, kernels, copies and reductions on it",
          "[memory][stream]") {
#if defined(RLK_BACKEND_CUDA)
  non_blocking_stream s;
  const cuda_backend backend{s.stream};  // the existing one-argument form
  CHECK(backend.stream == s.stream);
  CHECK(backend.device == current_device());
#else
  const auto backend = rlk_test::backend();  // the same code path; host backends have no stream
#endif
  using Backend = std::remove_const_t<decltype(backend)>;
  // Large enough that a copy or kernel that ran unordered with the one before would read
  // unfinished data (1 Mi elements: several waves of blocks).
  const std::size_t n = std::size_t(1) << 20;
  std::vector<int> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = int(i % 1000) - 500;
  long long want_sum = 0;
  std::vector<long long> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    want[i] = static_cast<long long>(host[i]) * host[i] + static_cast<long long>(i);
    want_sum += want[i];
  }
  for (int round = 0; round < 3; ++round) {  // again on memory the stream just freed
    buffer<int, Backend> in(backend, host);
    buffer<long long, Backend> out(backend, n), copied(backend, n), total(backend, 1);
    for_each_index(backend, n, square_plus_index{in.cview(), out.view()});
    copy(backend, out.cview(), copied.view());
    detail::deterministic_sum_into(backend, n, element_term{copied.data()}, 0LL, add_ll{}, total.data());
    CHECK(detail::deterministic_sum(backend, n, element_term{copied.data()}, 0LL, add_ll{}) == want_sum);
    CHECK(total.get(0) == want_sum);
    buffer<double, Backend> as_double(backend, n);
    convert(backend, copied.cview(), as_double.view());
    const std::vector<long long> got = copied.to_host();
    REQUIRE(got == want);
    const std::vector<double> got_double = as_double.to_host();
    for (std::size_t i = 0; i < n; i += 4099) REQUIRE(got_double[i] == double(want[i]));
    in.zero();
    CHECK(in.to_host() == std::vector<int>(n, 0));
  }  // buffers freed in stream order before the stream goes
  synchronize(backend);
}

#if defined(RLK_BACKEND_CUDA)
TEST_CASE("cuda_backend carries its device: allocations land there and the caller's device is restored",
          "[memory][device]") {
  const int before = current_device();
  CHECK(cuda_backend{}.device == before);            // the device current when the value is made
  CHECK(cuda_backend{nullptr}.device == before);
  const cuda_backend on0{nullptr, 0};                 // device 0, explicitly
  CHECK(on0.device == 0);
  buffer<float, cuda_backend> b(on0, std::vector<float>{1, 2, 3});
  CHECK(device_of_pointer(b.data()) == 0);
  CHECK(b.backend().device == 0);
  CHECK(b.to_host() == std::vector<float>{1, 2, 3});
  CHECK(current_device() == before);

  int count = 0;
  RLK_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count > 1) {
    // A backend on the last device, used while device 0 is current: everything goes there, and
    // the caller's current device is what it was after each call.
    RLK_CUDA_CHECK(cudaSetDevice(0));
    const cuda_backend last{nullptr, count - 1};
    buffer<int, cuda_backend> in(last, std::vector<int>{1, 2, 3, 4});
    buffer<long long, cuda_backend> out(last, 4);
    CHECK(current_device() == 0);
    CHECK(device_of_pointer(in.data()) == count - 1);
    CHECK(device_of_pointer(out.data()) == count - 1);
    for_each_index(last, 4, affine_kernel{in.cview(), out.view()});
    CHECK(out.to_host() == std::vector<long long>{3, 7, 11, 15});
    CHECK(detail::deterministic_sum(last, 4, element_term{out.data()}, 0LL, add_ll{}) == 36);
    CHECK(detail::memory_capacity(last) > 0);
    CHECK(current_device() == 0);
    RLK_CUDA_CHECK(cudaSetDevice(before));
  }

  // A device that does not exist: a clear error, the current device unchanged, and no stale
  // error left for the next launch check to report.
  try {
    buffer<float, cuda_backend> nowhere(cuda_backend{nullptr, count}, 4);
    FAIL("a buffer on device " << count << " of " << count);
  } catch (const cuda_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("cudaSetDevice"));
  }
  CHECK(current_device() == before);
  buffer<int, cuda_backend> in(on0, std::vector<int>{5, 6});
  buffer<long long, cuda_backend> out(on0, 2);
  for_each_index(on0, 2, affine_kernel{in.cview(), out.view()});
  CHECK(out.to_host() == std::vector<long long>{15, 19});

  // A stream created on a device makes a backend on that device.
  non_blocking_stream s;
  CHECK(cuda_backend{s.stream}.device == current_device());
}

TEST_CASE("cuda: memory pools keep freed memory and count it as available", "[memory][device]") {
  const cuda_backend backend{};
  int pools = 0;
  RLK_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, backend.device));
  buffer<char, cuda_backend> warm(backend, 1);  // the first allocation sets the pool up
  CHECK(detail::device_has_memory_pools(backend.device) == (pools != 0));
  if (pools == 0) return;  // cudaMalloc/cudaFree: nothing kept
  cudaMemPool_t pool = nullptr;
  RLK_CUDA_CHECK(cudaDeviceGetMemPool(&pool, backend.device));
  std::uint64_t threshold = 0;
  RLK_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(threshold == UINT64_MAX);

  // An object of 3/5 of the capacity is dropped; one as large fits again straight after (the
  // pool holds the memory: cudaMemGetInfo alone would report 2/5 free, too little).
  const std::size_t capacity = detail::memory_capacity(backend);
  const std::size_t big = capacity / 5 * 3;
  { buffer<char, cuda_backend> b(backend, big); }
  synchronize(backend);
  std::size_t free_bytes = 0, total_bytes = 0;
  RLK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  INFO("cudaMemGetInfo free after the drop: " << free_bytes << " of " << total_bytes
                                               << "; pool-aware capacity: " << detail::memory_capacity(backend));
  CHECK_NOTHROW(detail::expect_fits(backend, big, "rebuilt object"));
  buffer<char, cuda_backend> again(backend, big);
  CHECK(again.size() == big);
}

TEST_CASE("cuda: a failed free in a destructor is reported by the next checked call", "[memory][errors][device]") {
  check_deferred_cuda_error();  // nothing pending
  // What a destructor does when its free fails: record, not throw.
  detail::record_deferred_cuda_error(cudaErrorInvalidValue, "cudaFreeAsync", "somewhere.hpp", 42);
  detail::record_deferred_cuda_error(cudaErrorIllegalAddress, "cudaFree", "elsewhere.hpp", 7);  // the first is kept
  try {
    synchronize(cuda_backend{});
    FAIL("the recorded failure was not reported");
  } catch (const cuda_error& e) {
    CHECK(e.code() == int(cudaErrorInvalidValue));
    CHECK_THAT(std::string(e.what()), Catch::Contains("somewhere.hpp:42: cudaFreeAsync failed") &&
                                          Catch::Contains("cudaErrorInvalidValue"));
  }
  CHECK_NOTHROW(synchronize(cuda_backend{}));  // reported once
  // A real failing free: a pointer CUDA never allocated.
  int not_device_memory = 0;
  detail::memory_ops<cuda_backend>::deallocate(cuda_backend{}, &not_device_memory);
  CHECK_THROWS_AS(check_deferred_cuda_error(), cuda_error);
  CHECK_NOTHROW(check_deferred_cuda_error());
  (void)cudaGetLastError();
  // At process exit the runtime unloads before static buffers are destroyed: not an error.
  detail::record_deferred_cuda_error(cudaErrorCudartUnloading, "cudaFreeAsync", "x.hpp", 1);
  CHECK_NOTHROW(check_deferred_cuda_error());
}

TEST_CASE("cuda: a Thrust failure becomes rlkernels::cuda_error", "[memory][errors][device]") {
  try {
    detail::thrust_call("thrust::something",
                        [] { throw thrust::system_error(cudaErrorLaunchFailure, thrust::cuda_category()); });
    FAIL("no exception");
  } catch (const cuda_error& e) {
    CHECK(e.code() == int(cudaErrorLaunchFailure));
    CHECK_THAT(std::string(e.what()), Catch::Contains("thrust::something failed"));
  }
  CHECK(detail::thrust_call("thrust::value", [] { return 7; }) == 7);
}
#endif

TEST_CASE("thrust_call passes values and host exceptions through", "[memory]") {
  CHECK(detail::thrust_call("f", [] { return 3; }) == 3);
  int calls = 0;
  detail::thrust_call("g", [&] { ++calls; });
  CHECK(calls == 1);
  CHECK_THROWS_AS(detail::thrust_call("h", []() -> int { throw std::invalid_argument("x"); }), std::invalid_argument);
}
