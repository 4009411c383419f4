// rlkernels/core/random.hpp
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11) usable on host and device.
// A generator is keyed by (seed, stream) — rlkernels uses the environment index as the stream — and
// carries only a 64-bit block counter, so there is no global state and every backend and thread
// count draws the same bits for the same environment.
#pragma once

#include "config.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace rlkernels {

/// Four 32-bit words: one Philox counter or output block.
struct uint32x4 {
  std::uint32_t v[4];  ///< the words, v[0] first
  /// Word i.
  RLK_HOST_DEVICE constexpr std::uint32_t operator[](int i) const { return v[i]; }
  /// Word-wise equality.
  RLK_HOST_DEVICE friend constexpr bool operator==(const uint32x4& a, const uint32x4& b) {
    return a.v[0] == b.v[0] && a.v[1] == b.v[1] && a.v[2] == b.v[2] && a.v[3] == b.v[3];
  }
};

/// Two 32-bit words: one Philox key.
struct uint32x2 {
  std::uint32_t v[2];  ///< the words, v[0] first (the low half of a 64-bit seed)
};

namespace detail {
RLK_INLINE std::uint32_t mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi) {
  const std::uint64_t product = std::uint64_t(a) * std::uint64_t(b);
  hi = static_cast<std::uint32_t>(product >> 32);
  return static_cast<std::uint32_t>(product);
}
}  // namespace detail

/// @brief The Philox4x32 block function with 10 rounds: maps (counter, key) to 128 random bits.
/// Matches Random123's philox4x32_10 (and cuRAND's Philox4_32_10 block function).
RLK_INLINE uint32x4 philox4x32_10(uint32x4 counter, uint32x2 key) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  std::uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  std::uint32_t k0 = key.v[0], k1 = key.v[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += w0;
      k1 += w1;
    }
    std::uint32_t hi0, hi1;
    const std::uint32_t lo0 = detail::mulhilo32(m0, c0, hi0);
    const std::uint32_t lo1 = detail::mulhilo32(m1, c2, hi1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return uint32x4{{c0, c1, c2, c3}};
}

/// @brief A Philox4x32-10 stream: key = seed, counter = (block index, stream). Each block gives
/// four 32-bit words; draws consume them in order. The object is small and trivially copyable;
/// construct it where needed from (seed, stream, block) and store `block()` to resume later. Words
/// of a partly used block are discarded when the object is dropped, so every draw sequence is a
/// pure function of (seed, stream, starting block, calls made).
class rng {
public:
  /// @param seed    64-bit key (the same for all environments of a batch)
  /// @param stream  64-bit stream id (the environment index in a batch)
  /// @param block   first block to use (0 for a fresh stream)
  RLK_HOST_DEVICE constexpr rng(std::uint64_t seed, std::uint64_t stream, std::uint64_t block = 0) noexcept
      : key_{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}},
        stream_(stream),
        block_(block),
        cache_{{0, 0, 0, 0}},
        used_(4) {}

  /// Next block index that a draw would generate; store it to continue the stream later.
  RLK_HOST_DEVICE constexpr std::uint64_t block() const noexcept { return block_; }

  /// 32 uniformly random bits.
  RLK_HOST_DEVICE std::uint32_t next_u32() noexcept {
    if (used_ == 4) refill();
    return cache_.v[used_++];
  }
  /// 64 uniformly random bits (two words; the first is the high half).
  RLK_HOST_DEVICE std::uint64_t next_u64() noexcept {
    const std::uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }

  /// Uniform in [0, 1): float from 24 bits, double from 53 bits (one or two words).
  template <class T>
  RLK_HOST_DEVICE T uniform() noexcept {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "rng::uniform<T>: T must be float or double");
    if constexpr (std::is_same_v<T, float>) {
      return float(next_u32() >> 8) * 0x1.0p-24f;
    } else {
      return double(next_u64() >> 11) * 0x1.0p-53;
    }
  }

  /// Uniform in [lo, hi) (requires lo < hi); never returns hi, even after rounding.
  template <class T>
  RLK_HOST_DEVICE T uniform(T lo, T hi) noexcept {
    const T x = lo + (hi - lo) * uniform<T>();
    return x < hi ? x : std::nextafter(hi, lo);
  }

  /// Integer uniform in [0, n) for n >= 1 (Lemire's multiply-shift; bias below 2^-32 * n).
  RLK_HOST_DEVICE std::uint32_t uniform_int(std::uint32_t n) noexcept {
    return static_cast<std::uint32_t>((std::uint64_t(next_u32()) * n) >> 32);
  }

  /// True with probability p.
  template <class T>
  RLK_HOST_DEVICE bool bernoulli(T p) noexcept { return uniform<T>() < p; }

  /// Standard normal draw (Box-Muller from two uniforms; the second variate is discarded so the
  /// generator carries no hidden state). Host and CUDA math libraries may differ in the last bits.
  template <class T>
  RLK_HOST_DEVICE T normal() noexcept {
    const T u1 = T(1) - uniform<T>();  // (0, 1]: log is finite
    const T u2 = uniform<T>();
    constexpr T two_pi = T(6.283185307179586476925286766559);
    return std::sqrt(T(-2) * std::log(u1)) * std::cos(two_pi * u2);
  }
  /// Normal draw with the given mean and standard deviation.
  template <class T>
  RLK_HOST_DEVICE T normal(T mean, T stddev) noexcept { return mean + stddev * normal<T>(); }

private:
  RLK_HOST_DEVICE void refill() noexcept {
    const uint32x4 counter{{static_cast<std::uint32_t>(block_), static_cast<std::uint32_t>(block_ >> 32),
                            static_cast<std::uint32_t>(stream_), static_cast<std::uint32_t>(stream_ >> 32)}};
    cache_ = philox4x32_10(counter, key_);
    ++block_;
    used_ = 0;
  }

  uint32x2 key_;
  std::uint64_t stream_;
  std::uint64_t block_;
  uint32x4 cache_;
  int used_;
};

}  // namespace rlkernels
