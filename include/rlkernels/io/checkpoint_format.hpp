// rlkernels/io/checkpoint_format.hpp
// The checkpoint file format: its constants, type codes, CRC-64 and byte-order helpers, and
// checkpoint_error. io/checkpoint_file.hpp reads and writes files in it.
//
// File format, version 1 (every integer little-endian, no padding; docs/checkpoints.md):
//
//   offset  size  field
//   0       8     magic "RLKCKPT\x1a"
//   8       4     u32 format version (1)
//   12      4     u32 byte-order marker 0x01020304 (bytes 04 03 02 01; a big-endian writer
//                 would give 01 02 03 04, and such files are refused)
//   16      8     u64 file size in bytes, checksum included
//   24      4     u32 section count S
//   28      4     u32 reserved, 0
//   32      ...   S sections, each:
//                   u32 name length L (1..1024), L bytes of name (no NUL),
//                   u32 type code (detail::checkpoint_type), u32 element size in bytes,
//                   u64 element count C, then C * element size bytes of payload
//   size-8  8     u64 CRC-64/XZ (ECMA-182 polynomial, reflected, as xz and Go's crc64.ECMA)
//                 of every byte before it
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace rlkernels {

/// @brief A checkpoint file was refused: it cannot be read, is not a checkpoint, is of another
/// format version or byte order, is truncated or corrupt (checksum), or does not match what this
/// run binds (a section missing, unexpected, or of another type or size; a constant that differs).
/// what() names the file and the reason. Nothing bound was changed when it is thrown.
class checkpoint_error : public error {
public:
  using error::error;
};

namespace detail {

/// Type codes of checkpoint sections (stable: they are written to files).
enum class checkpoint_type : std::uint32_t {
  u8 = 1,
  i8 = 2,
  u16 = 3,
  i16 = 4,
  u32 = 5,
  i32 = 6,
  u64 = 7,
  i64 = 8,
  f32 = 9,
  f64 = 10,
  boolean = 11,
  text = 12,  ///< a constant: bytes of a string
  pod = 13,   ///< any other trivially copyable type, compared by element size only
};

inline constexpr char checkpoint_magic[8] = {'R', 'L', 'K', 'C', 'K', 'P', 'T', '\x1a'};
inline constexpr std::uint32_t checkpoint_version = 1;
inline constexpr std::uint32_t checkpoint_byte_order = 0x01020304u;
inline constexpr std::size_t checkpoint_header_bytes = 32;
inline constexpr std::size_t checkpoint_checksum_bytes = 8;
/// Longest section name accepted (bytes).
inline constexpr std::size_t checkpoint_max_name = 1024;
/// Most sections a file may hold.
inline constexpr std::uint32_t checkpoint_max_sections = 1u << 16;
/// Largest element size of a "pod" section (bytes).
inline constexpr std::uint32_t checkpoint_max_element = 1u << 20;

inline const char* checkpoint_type_name(std::uint32_t code) {
  switch (code) {
    case 1: return "uint8";
    case 2: return "int8";
    case 3: return "uint16";
    case 4: return "int16";
    case 5: return "uint32";
    case 6: return "int32";
    case 7: return "uint64";
    case 8: return "int64";
    case 9: return "float32";
    case 10: return "float64";
    case 11: return "bool";
    case 12: return "text";
    case 13: return "pod";
    default: return "unknown";
  }
}

/// The element size a type code implies (0: any size, for pod).
inline std::uint32_t checkpoint_type_size(std::uint32_t code) {
  switch (code) {
    case 1: case 2: case 11: case 12: return 1;
    case 3: case 4: return 2;
    case 5: case 6: case 9: return 4;
    case 7: case 8: case 10: return 8;
    default: return 0;
  }
}

template <class T>
constexpr checkpoint_type checkpoint_type_of() {
  static_assert(std::is_trivially_copyable_v<T>, "rlkernels::checkpoint: bound types must be trivially copyable");
  if constexpr (std::is_same_v<T, bool>) {
    return checkpoint_type::boolean;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr bool s = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return s ? checkpoint_type::i8 : checkpoint_type::u8;
    else if constexpr (sizeof(T) == 2) return s ? checkpoint_type::i16 : checkpoint_type::u16;
    else if constexpr (sizeof(T) == 4) return s ? checkpoint_type::i32 : checkpoint_type::u32;
    else if constexpr (sizeof(T) == 8) return s ? checkpoint_type::i64 : checkpoint_type::u64;
    else return checkpoint_type::pod;
  } else if constexpr (std::is_same_v<T, float> && sizeof(float) == 4) {
    return checkpoint_type::f32;
  } else if constexpr (std::is_same_v<T, double> && sizeof(double) == 8) {
    return checkpoint_type::f64;
  } else {
    return checkpoint_type::pod;
  }
}

/// CRC-64/XZ: polynomial 0x42F0E1EBA9EA3693 reflected (0xC96C5795D7870F42), initial value and
/// final xor all ones; check value of "123456789" is 0x995DC9BBDF1939FA. Slicing by 8.
struct crc64_tables {
  std::uint64_t t[8][256];
  crc64_tables() {
    constexpr std::uint64_t poly = 0xC96C5795D7870F42ull;
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint64_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

/// Continues a CRC-64/XZ: pass the previous result as `crc` (0 to start).
inline std::uint64_t crc64(const void* data, std::size_t n, std::uint64_t crc = 0) {
  static const crc64_tables tables;
  const auto& t = tables.t;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  while (n >= 8) {
    std::uint64_t w = 0;
    for (int k = 0; k < 8; ++k) w |= std::uint64_t(p[k]) << (8 * k);  // little-endian load
    w ^= crc;
    crc = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^ t[4][(w >> 24) & 0xFF] ^
          t[3][(w >> 32) & 0xFF] ^ t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

/// Little-endian integer encoding and decoding, independent of the host's byte order.
template <class U>
void put_le(std::vector<std::uint8_t>& out, U value) {
  for (std::size_t k = 0; k < sizeof(U); ++k) out.push_back(std::uint8_t(std::uint64_t(value) >> (8 * k)));
}
template <class U>
U get_le(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < sizeof(U); ++k) v |= std::uint64_t(p[k]) << (8 * k);
  return U(v);
}

inline bool host_is_little_endian() {
  const std::uint32_t x = 1;
  unsigned char b;
  std::memcpy(&b, &x, 1);
  return b == 1;
}

/// One "key=value" line per entry of a constant (lines without '=' are keyed by their number).
inline std::vector<std::pair<std::string, std::string>> constant_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::size_t begin = 0, number = 1;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) lines.emplace_back("line " + std::to_string(number), line);
    else lines.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    begin = end + 1;
    ++number;
  }
  return lines;
}

/// Describes the first difference of two constants: "key: file X, this run Y".
inline std::string first_difference(const std::string& file, const std::string& run) {
  const auto a = constant_lines(file), b = constant_lines(run);
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i].first != b[i].first) {
      // Keys in another order, or one side has an extra key: name a key whose value differs or
      // that only one side has.
      for (const auto& kv : b) {
        const auto it = std::find_if(a.begin(), a.end(), [&](const auto& x) { return x.first == kv.first; });
        if (it == a.end()) return kv.first + ": not in the file, this run " + kv.second;
        if (it->second != kv.second) return kv.first + ": file " + it->second + ", this run " + kv.second;
      }
      for (const auto& kv : a) {
        const auto it = std::find_if(b.begin(), b.end(), [&](const auto& x) { return x.first == kv.first; });
        if (it == b.end()) return kv.first + ": file " + kv.second + ", not in this run";
      }
      return "the keys are in another order";
    }
    if (a[i].second != b[i].second) return a[i].first + ": file " + a[i].second + ", this run " + b[i].second;
  }
  if (a.size() > n) return a[n].first + ": file " + a[n].second + ", not in this run";
  if (b.size() > n) return b[n].first + ": not in the file, this run " + b[n].second;
  return "they differ in line endings";
}

/// Removes a file on scope exit unless released.
struct temp_file_guard {
  std::string path;
  bool armed = true;
  ~temp_file_guard() {
    if (armed) std::remove(path.c_str());
  }
};

inline std::string errno_text(int code) { return std::error_code(code, std::generic_category()).message(); }

}  // namespace detail

}  // namespace rlkernels
