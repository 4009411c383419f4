// Philox4x32-10 against Random123's published known-answer vectors, the stream layout, and the
// distributions (ranges, moments) drawn on the backend under test.
#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/random.hpp>

#include "../test_backend.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

using namespace rlkernels;

TEST_CASE("philox4x32_10 matches Random123 known-answer vectors", "[random]") {
  // Random123 tests/kat_vectors: philox4x32 10 rounds.
  CHECK(philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}) == uint32x4{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  CHECK(philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, {{0xffffffffu, 0xffffffffu}}) ==
        uint32x4{{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  CHECK(philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {{0xa4093822u, 0x299f31d0u}}) ==
        uint32x4{{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST_CASE("rng: counter layout is (block, stream) under the key seed", "[random]") {
  const std::uint64_t seed = 0x0123456789abcdefull, stream = 0xfedcba9876543210ull;
  rng gen(seed, stream, 7);
  const uint32x4 expected = philox4x32_10({{7u, 0u, 0x76543210u, 0xfedcba98u}}, {{0x89abcdefu, 0x01234567u}});
  for (int k = 0; k < 4; ++k) CHECK(gen.next_u32() == expected[k]);
  CHECK(gen.block() == 8);
  // The next block continues the counter.
  const uint32x4 next = philox4x32_10({{8u, 0u, 0x76543210u, 0xfedcba98u}}, {{0x89abcdefu, 0x01234567u}});
  CHECK(gen.next_u32() == next[0]);
  // Resuming from the stored block reproduces the stream.
  rng again(seed, stream, 8);
  CHECK(again.next_u32() == next[0]);
}

TEST_CASE("rng: different seeds and streams give different bits", "[random]") {
  CHECK(rng(1, 0).next_u64() != rng(2, 0).next_u64());
  CHECK(rng(1, 0).next_u64() != rng(1, 1).next_u64());
  CHECK(rng(1, std::uint64_t(1) << 32).next_u64() != rng(1, 0).next_u64());
}

TEST_CASE("rng: uniform draws stay in range, including the rounding edge", "[random]") {
  rng gen(3, 4);
  for (int i = 0; i < 100000; ++i) {
    const float f = gen.uniform<float>();
    const double d = gen.uniform<double>();
    REQUIRE(f >= 0.0f);
    REQUIRE(f < 1.0f);
    REQUIRE(d >= 0.0);
    REQUIRE(d < 1.0);
    const float g = gen.uniform<float>(-0.05f, 0.05f);
    REQUIRE(g >= -0.05f);
    REQUIRE(g < 0.05f);
    REQUIRE(gen.uniform_int(3) < 3u);
  }
  // The largest 24-bit uniform scaled into [1, 1 + 2^-23) would round to hi; it must not.
  float lo = 1.0f, hi = std::nextafter(1.0f, 2.0f);
  for (int i = 0; i < 1000; ++i) {
    const float x = gen.uniform<float>(lo, hi);
    REQUIRE(x >= lo);
    REQUIRE(x < hi);
  }
}

namespace {
struct draw_kernel {
  std::uint64_t seed;
  double* uniforms;
  double* normals;
  float* uniforms_f;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(seed, i);
    uniforms[i] = gen.uniform<double>();
    uniforms_f[i] = gen.uniform<float>(-2.0f, 3.0f);
    normals[i] = gen.normal<double>();
  }
};
}  // namespace

TEST_CASE("rng: draws on the backend equal host draws and have the right moments", "[random]") {
  const std::size_t n = 200000;
  const std::uint64_t seed = 2024;
  buffer<double, rlk_test::backend_t> u(rlk_test::backend(), n), z(rlk_test::backend(), n);
  buffer<float, rlk_test::backend_t> uf(rlk_test::backend(), n);
  for_each_index(rlk_test::backend(), n, draw_kernel{seed, u.data(), z.data(), uf.data()});
  const std::vector<double> us = u.to_host(), zs = z.to_host();
  const std::vector<float> ufs = uf.to_host();

  // Bit-identical to a host loop for integers-derived uniforms; normals through libm may differ in
  // the last bits between the host and CUDA math libraries.
  std::vector<double> hu(n), hz(n);
  std::vector<float> huf(n);
  for (std::size_t i = 0; i < n; ++i) draw_kernel{seed, hu.data(), hz.data(), huf.data()}(i);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(us[i] == hu[i]);
    REQUIRE(ufs[i] == huf[i]);
    if (rlk_test::on_cuda) {
      REQUIRE(std::abs(zs[i] - hz[i]) <= 1e-13 * (1 + std::abs(hz[i])));
    } else {
      REQUIRE(zs[i] == hz[i]);
    }
  }

  double mu = 0, m2 = 0, zmu = 0, zm2 = 0, zm4 = 0, fmu = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mu += us[i];
    m2 += us[i] * us[i];
    zmu += zs[i];
    zm2 += zs[i] * zs[i];
    zm4 += zs[i] * zs[i] * zs[i] * zs[i];
    fmu += ufs[i];
    REQUIRE(ufs[i] >= -2.0f);
    REQUIRE(ufs[i] < 3.0f);
  }
  mu /= n; m2 /= n; zmu /= n; zm2 /= n; zm4 /= n; fmu /= n;
  // 5-sigma bounds for n = 2e5.
  CHECK(std::abs(mu - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(m2 - 1.0 / 3) < 5 * std::sqrt(4.0 / 45 / n));
  CHECK(std::abs(fmu - 0.5) < 5 * 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(zmu) < 5 * std::sqrt(1.0 / n));
  CHECK(std::abs(zm2 - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(std::abs(zm4 - 3) < 5 * std::sqrt(96.0 / n));
}
