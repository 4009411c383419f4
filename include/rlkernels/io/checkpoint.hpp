// rlkernels/io/checkpoint.hpp
// Checkpoints: named fields bound to memory (host variables, or arrays in any backend's memory)
// written atomically to one checksummed file and read back all-or-nothing, and a directory of
// rotating checkpoints. Components expose their state through a duck-typed member template,
// `bind_checkpoint(checkpoint&, prefix)`, so their headers need not include this one.
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

/// @brief A set of named fields bound to memory: saved from it, loaded into it.
///
/// Names are unique ('/'-separated paths by convention, e.g. "actor/parameters"). A field is an
/// array in any backend's memory (`bind`), a host variable (`bind_value`) or a constant that must
/// match on load (`bind_constant`). The checkpoint keeps pointers to the bound memory: it must
/// outlive neither the memory nor a move of its owner (bind afresh for each save or load, as the
/// trainers do).
///
/// `load` validates the whole file (format, version, byte order, size, checksum, every bound name
/// present with the bound type, element size and count, no unexpected section, constants equal,
/// value checks) before it writes any bound memory: a refused file changes nothing.
class checkpoint {
public:
  /// An empty checkpoint.
  checkpoint() = default;

  /// @brief Binds `v.size()` elements in the memory of `backend` (host or CUDA device).
  /// @tparam T arithmetic (stored with its type code: u8, i8, u16, i16, u32, i32, u64, i64, f32,
  ///         f64, bool) or any other trivially copyable type (stored as "pod" with sizeof(T))
  /// @throw std::logic_error if the name is already bound; std::invalid_argument on an empty or
  ///        too long name, or a null view with elements
  template <class T, class Backend>
  void bind(std::string name, const Backend& backend, view<T> v) {
    static_assert(!std::is_const_v<T>, "rlkernels::checkpoint::bind: the view must be writable (load writes it)");
    static_assert(is_backend_v<Backend>, "rlkernels::checkpoint::bind: Backend must be a rlkernels backend");
    RLK_EXPECTS(v.data() != nullptr || v.size() == 0, std::invalid_argument, "rlkernels::checkpoint::bind: '", name,
                "' is a null view of ", v.size(), " elements");
    RLK_EXPECTS(v.size() <= std::size_t(-1) / sizeof(T), std::invalid_argument, "rlkernels::checkpoint::bind: '", name,
                "' is too large");
    field f;
    f.kind = field_kind::array;
    f.type = std::uint32_t(detail::checkpoint_type_of<T>());
    f.element_size = std::uint32_t(sizeof(T));
    f.count = v.size();
    f.data = v.data();
    f.to_host = [backend](void* dst, const void* src, std::size_t bytes) {
      detail::memory_ops<Backend>::to_host(backend, dst, src, bytes);
    };
    f.from_host = [backend](void* dst, const void* src, std::size_t bytes) {
      detail::memory_ops<Backend>::from_host(backend, dst, src, bytes);
    };
    add(std::move(name), std::move(f));
  }

  /// @brief Binds a host variable (arithmetic or trivially copyable), e.g. a step counter.
  /// @throw as bind()
  template <class T>
  void bind_value(std::string name, T& x) {
    bind_value(std::move(name), x, [](const T&) { return std::string(); });
  }

  /// @brief Binds a host variable whose loaded value `check` accepts: `check(value)` returns an
  /// empty string for a good value, else the reason (e.g. "head row 9 >= capacity 8"), and load
  /// then throws checkpoint_error before changing anything. For values that index memory.
  template <class T, class Check>
  void bind_value(std::string name, T& x, Check check) {
    static_assert(!std::is_const_v<T>, "rlkernels::checkpoint::bind_value: the variable must be writable");
    field f;
    f.kind = field_kind::value;
    f.type = std::uint32_t(detail::checkpoint_type_of<T>());
    f.element_size = std::uint32_t(sizeof(T));
    f.count = 1;
    f.data = &x;
    f.check = [check](const void* bytes) {
      alignas(T) unsigned char storage[sizeof(T)];  // T need not be default-constructible
      std::memcpy(storage, bytes, sizeof(T));
      return std::string(check(*std::launder(reinterpret_cast<const T*>(storage))));
    };
    add(std::move(name), std::move(f));
  }

  /// @brief Binds a constant that must be equal on load, e.g. the hyperparameters as
  /// "key=value\n" lines; on a mismatch the error names the first differing key with both values.
  /// @throw as bind()
  void bind_constant(std::string name, std::string value) {
    field f;
    f.kind = field_kind::constant;
    f.type = std::uint32_t(detail::checkpoint_type::text);
    f.element_size = 1;
    f.count = value.size();
    f.constant = std::move(value);
    add(std::move(name), std::move(f));
  }

  /// Number of bound fields.
  std::size_t size() const noexcept { return fields_.size(); }
  /// True if `name` is bound.
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  /// Size in bytes of the file save() writes.
  std::size_t file_size() const {
    std::size_t bytes = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    for (const field& f : fields_) bytes += 4 + f.name.size() + 16 + f.count * f.element_size;
    return bytes;
  }

  /// @brief The bytes save() would write (the same format, checksum included), in memory: what a
  /// data-parallel trainer gathers from every rank into the checkpoint rank 0 writes.
  /// load_from_memory() reads them back.
  std::vector<std::uint8_t> save_to_memory() const {
    RLK_EXPECTS(detail::host_is_little_endian(), error,
                "rlkernels::checkpoint::save_to_memory: checkpoints are little-endian; this host is big-endian");
    std::vector<std::uint8_t> out;
    out.reserve(std::size_t(file_size()));
    std::uint64_t crc = 0;
    const auto write = [&](const void* data, std::size_t bytes) {
      if (bytes == 0) return;
      crc = detail::crc64(data, bytes, crc);
      const auto* p = static_cast<const std::uint8_t*>(data);
      out.insert(out.end(), p, p + bytes);
    };
    emit(write, crc);
    return out;
  }

  /// @brief Writes every bound field to `path` atomically: to "<path>.tmp.<pid>", flushed and
  /// fsync'ed, renamed over `path`, then the directory is fsync'ed. A crash at any point leaves
  /// either the old file or the new one; on failure the temporary file is removed and `path` is
  /// untouched. Device arrays are copied to the host in chunks (CUDA: waits for the stream).
  /// @throw rlkernels::error naming the path and the system's reason on an I/O failure
  void save(const std::string& path) const {
    RLK_EXPECTS(detail::host_is_little_endian(), error, "rlkernels::checkpoint::save: '", path,
                "': checkpoints are little-endian; this host is big-endian");
    const std::string tmp = path + ".tmp." + std::to_string(process_id());
    detail::temp_file_guard guard{tmp};
    std::FILE* file = std::fopen(tmp.c_str(), "wb");
    if (!file) fail_io("cannot create", tmp);
    std::uint64_t crc = 0;
    bool ok = true;
    int write_error = 0;
    const auto write = [&](const void* data, std::size_t bytes) {
      if (!ok || bytes == 0) return;
      crc = detail::crc64(data, bytes, crc);
      ok = std::fwrite(data, 1, bytes, file) == bytes;
      if (!ok) write_error = errno;
    };
    try {
      emit(write, crc);
    } catch (...) {
      std::fclose(file);
      throw;
    }
    if (!ok || std::fflush(file) != 0) {
      const int code = ok ? errno : write_error;
      std::fclose(file);
      fail_io("cannot write", tmp, code);
    }
#if defined(__unix__) || defined(__APPLE__)
    if (::fsync(::fileno(file)) != 0) {
      const int code = errno;
      std::fclose(file);
      fail_io("cannot fsync", tmp, code);
    }
#endif
    if (std::fclose(file) != 0) fail_io("cannot close", tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail_io("cannot rename the temporary file over", path);
    guard.armed = false;
    sync_directory_of(path);
  }

  /// @brief The bytes of the file at `path` (what load() validates), for a process that reads a
  /// checkpoint once and hands it to others (data-parallel ranks).
  /// @throw checkpoint_error if the file cannot be read
  static std::vector<std::uint8_t> read_bytes(const std::string& path) { return read_file(path); }

  /// @brief Reads `path` and loads it (see load_from_memory()).
  /// @throw checkpoint_error if the file cannot be read or is refused; nothing bound has changed then
  void load(const std::string& path) {
    const std::vector<std::uint8_t> bytes = read_file(path);
    load_from_memory(bytes.data(), bytes.size(), path);
  }

  /// @brief Validates a checkpoint held in memory completely (magic, version, byte order, size,
  /// checksum, structure, every bound name present with the bound type, element size and count, no
  /// unexpected section, constants equal, value checks), then copies every field into its memory.
  /// @param data the file's bytes
  /// @param size number of bytes at `data`
  /// @param source names the data in messages (the path for load())
  /// @throw checkpoint_error naming `source` and the reason; nothing bound has changed then
  void load_from_memory(const std::uint8_t* data, std::size_t size, const std::string& source = "<memory>") {
    const std::vector<const std::uint8_t*> payloads = validate(data, size, source);
    // Everything is valid: copy.
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      const std::size_t bytes = f.count * f.element_size;
      if (bytes == 0 || f.kind == field_kind::constant) continue;
      if (f.kind == field_kind::value) std::memcpy(f.data, payloads[i], bytes);
      else f.from_host(f.data, payloads[i], bytes);
    }
  }

  /// @brief Every check load_from_memory() makes, without writing any bound memory: what a
  /// data-parallel load runs on every rank before any rank loads (all or nothing).
  /// @throw checkpoint_error as load_from_memory() would
  void check_from_memory(const std::uint8_t* data, std::size_t size, const std::string& source = "<memory>") const {
    (void)validate(data, size, source);
  }

  /// @brief A checkpoint held in memory split in two: the sections `keep(name)` accepts as a
  /// checkpoint of their own (the same format, its own checksum), and the payloads of the others,
  /// which must be uint8 sections (each, in a data-parallel checkpoint, one rank's checkpoint).
  struct split_sections {
    std::vector<std::uint8_t> kept;                              ///< a checkpoint of the kept sections
    std::map<std::string, view<const std::uint8_t>> payloads;  ///< the other sections' bytes, in `data`
  };

  /// @brief Splits a checkpoint held in memory after checking it as load_from_memory() checks a
  /// file (magic, version, byte order, size, checksum, structure; not against bindings). The
  /// payload views point into `data`. For a data-parallel load: rank 0 keeps the shared state and
  /// hands each rank its section.
  /// @throw checkpoint_error naming `source`: a refused file, or a section not kept that is not uint8
  template <class Keep>
  static split_sections split_from_memory(const std::uint8_t* data, std::size_t size, Keep&& keep,
                                          const std::string& source = "<memory>") {
    const std::map<std::string, section> sections = parse(data, size, source);
    std::vector<std::pair<std::size_t, const section*>> kept;  // by offset: the file's order
    split_sections out;
    for (const auto& named : sections) {
      const section& s = named.second;
      if (keep(named.first)) {
        kept.emplace_back(s.name_offset, &s);
        continue;
      }
      if (s.type != std::uint32_t(detail::checkpoint_type::u8))
        reject(source, "section '" + named.first + "' holds " + detail::checkpoint_type_name(s.type) +
                           " elements; a rank's section is uint8 bytes");
      out.payloads.emplace(named.first, view<const std::uint8_t>(data + s.payload_offset, std::size_t(s.count)));
    }
    std::sort(kept.begin(), kept.end());
    std::size_t bytes = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    for (const auto& k : kept) bytes += (k.second->payload_offset + k.second->count * k.second->element_size) -
                                        (k.second->name_offset - 4);
    std::vector<std::uint8_t>& image = out.kept;
    image.reserve(bytes);
    image.insert(image.end(), data, data + 16);  // magic, version, byte order
    detail::put_le<std::uint64_t>(image, bytes);
    detail::put_le<std::uint32_t>(image, std::uint32_t(kept.size()));
    detail::put_le<std::uint32_t>(image, 0);
    for (const auto& k : kept)  // a section's bytes, name length to payload end, as they are
      image.insert(image.end(), data + k.second->name_offset - 4,
                   data + k.second->payload_offset + k.second->count * k.second->element_size);
    detail::put_le<std::uint64_t>(image, detail::crc64(image.data(), image.size()));
    return out;
  }

private:
  /// Emits the whole file (header, fields, checksum) through `write(data, bytes)`, which adds
  /// the bytes to its running CRC-64 `crc` as it writes.
  template <class Write>
  void emit(Write&& write, const std::uint64_t& crc) const {
    std::vector<std::uint8_t> header;
    header.insert(header.end(), std::begin(detail::checkpoint_magic), std::end(detail::checkpoint_magic));
    detail::put_le<std::uint32_t>(header, detail::checkpoint_version);
    std::uint8_t order[4];  // native order: a big-endian writer would mark its file as such
    std::memcpy(order, &detail::checkpoint_byte_order, 4);
    header.insert(header.end(), order, order + 4);
    detail::put_le<std::uint64_t>(header, file_size());
    detail::put_le<std::uint32_t>(header, std::uint32_t(fields_.size()));
    detail::put_le<std::uint32_t>(header, 0);
    write(header.data(), header.size());
    std::vector<std::uint8_t> chunk;
    for (const field& f : fields_) {
      std::vector<std::uint8_t> head;
      detail::put_le<std::uint32_t>(head, std::uint32_t(f.name.size()));
      head.insert(head.end(), f.name.begin(), f.name.end());
      detail::put_le<std::uint32_t>(head, f.type);
      detail::put_le<std::uint32_t>(head, f.element_size);
      detail::put_le<std::uint64_t>(head, f.count);
      write(head.data(), head.size());
      const std::size_t bytes = f.count * f.element_size;
      if (f.kind == field_kind::constant) {
        write(f.constant.data(), bytes);
      } else if (f.kind == field_kind::value) {
        write(f.data, bytes);
      } else {
        // Through a bounded host buffer: no second copy of a large (device) array.
        constexpr std::size_t max_chunk = std::size_t(1) << 24;
        for (std::size_t done = 0; done < bytes;) {
          const std::size_t n = std::min(max_chunk, bytes - done);
          chunk.resize(n);
          f.to_host(chunk.data(), static_cast<const unsigned char*>(f.data) + done, n);
          write(chunk.data(), n);
          done += n;
        }
      }
    }
    std::vector<std::uint8_t> tail;
    detail::put_le<std::uint64_t>(tail, crc);
    write(tail.data(), tail.size());
  }


  enum class field_kind { array, value, constant };
  struct field {
    std::string name;
    field_kind kind = field_kind::array;
    std::uint32_t type = 0;
    std::uint32_t element_size = 0;
    std::size_t count = 0;
    void* data = nullptr;
    std::string constant;
    std::function<void(void*, const void*, std::size_t)> to_host, from_host;
    std::function<std::string(const void*)> check;
  };
  /// A section of a parsed file: offsets into the data.
  struct section {
    std::size_t name_offset, name_size;
    std::uint32_t type, element_size;
    std::uint64_t count;
    std::size_t payload_offset;
  };

  void add(std::string name, field f) {
    RLK_EXPECTS(!name.empty() && name.size() <= detail::checkpoint_max_name, std::invalid_argument,
                "rlkernels::checkpoint: a field name must have 1 to ", detail::checkpoint_max_name, " bytes, got ",
                name.size());
    RLK_EXPECTS(name.find('\0') == std::string::npos, std::invalid_argument, "rlkernels::checkpoint: field name '",
                name, "' contains a NUL byte");
    RLK_EXPECTS(index_.count(name) == 0, std::logic_error, "rlkernels::checkpoint: '", name, "' is bound twice");
    RLK_EXPECTS(fields_.size() < detail::checkpoint_max_sections, std::invalid_argument,
                "rlkernels::checkpoint: more than ", detail::checkpoint_max_sections, " fields");
    index_[name] = fields_.size();
    f.name = std::move(name);
    fields_.push_back(std::move(f));
  }

  /// load_from_memory()'s checks; returns each field's payload in `data`.
  std::vector<const std::uint8_t*> validate(const std::uint8_t* data, std::size_t size,
                                            const std::string& source) const {
    const std::map<std::string, section> sections = parse(data, size, source);
    // Constants first: a different configuration explains the other differences best.
    const auto find = [&](const std::string& name) -> const section* {
      const auto it = sections.find(name);
      return it == sections.end() ? nullptr : &it->second;
    };
    for (const field& f : fields_) {
      if (f.kind != field_kind::constant) continue;
      const section* s = find(f.name);
      if (!s) reject(source, "missing section '" + f.name + "'");
      if (s->type != f.type)
        reject(source, "section '" + f.name + "' holds " + detail::checkpoint_type_name(s->type) +
                           " elements; this run binds a text constant");
      const std::string stored(reinterpret_cast<const char*>(data + s->payload_offset), s->count);
      if (stored != f.constant)
        reject(source, "constant '" + f.name + "' differs: " + detail::first_difference(stored, f.constant));
    }
    std::vector<const section*> matched(fields_.size(), nullptr);
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      const section* s = find(f.name);
      if (!s) reject(source, "missing section '" + f.name + "'");
      if (f.kind != field_kind::constant) check_shape(*s, f, source);  // constants: compared above
      matched[i] = s;
    }
    if (sections.size() != fields_.size()) {
      for (const auto& named : sections)
        if (!contains(named.first)) reject(source, "unexpected section '" + named.first + "' (this run does not bind it)");
    }
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      if (f.kind != field_kind::value || !f.check) continue;
      const std::string why = f.check(data + matched[i]->payload_offset);
      if (!why.empty()) reject(source, "section '" + f.name + "' holds a bad value: " + why);
    }
    std::vector<const std::uint8_t*> payloads(fields_.size(), nullptr);
    for (std::size_t i = 0; i < fields_.size(); ++i) payloads[i] = data + matched[i]->payload_offset;
    return payloads;
  }

  [[noreturn]] static void reject(const std::string& source, const std::string& why) {
    throw checkpoint_error("rlkernels::checkpoint::load: '" + source + "': " + why);
  }
  [[noreturn]] static void fail_io(const char* what, const std::string& path, int code = errno) {
    throw error("rlkernels::checkpoint::save: " + std::string(what) + " '" + path + "': " + detail::errno_text(code));
  }

  static long process_id() {
#if defined(__unix__) || defined(__APPLE__)
    return long(::getpid());
#else
    return 0;
#endif
  }

  static void sync_directory_of(const std::string& path) {
#if defined(__unix__) || defined(__APPLE__)
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail_io("cannot open the directory of", path);
    const int status = ::fsync(fd);
    const int code = errno;
    ::close(fd);
    // Some file systems cannot fsync a directory (EINVAL); the rename itself was done.
    if (status != 0 && code != EINVAL && code != EROFS) fail_io("cannot fsync the directory of", path, code);
#else
    (void)path;
#endif
  }

  static std::vector<std::uint8_t> read_file(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) reject(path, "cannot open: " + detail::errno_text(errno));
    std::vector<std::uint8_t> bytes;
    std::uint8_t block[1 << 16];
    for (;;) {
      const std::size_t n = std::fread(block, 1, sizeof(block), file);
      bytes.insert(bytes.end(), block, block + n);
      if (n < sizeof(block)) break;
    }
    const bool failed = std::ferror(file) != 0;
    const int code = errno;
    std::fclose(file);
    if (failed) reject(path, "cannot read: " + detail::errno_text(code));
    return bytes;
  }

  void check_shape(const section& s, const field& f, const std::string& source) const {
    if (s.type != f.type || s.element_size != f.element_size || s.count != f.count) {
      reject(source, "section '" + f.name + "' holds " + std::to_string(s.count) + " " +
                         detail::checkpoint_type_name(s.type) + " elements of " + std::to_string(s.element_size) +
                         " bytes; this run binds " + std::to_string(f.count) + " " +
                         detail::checkpoint_type_name(f.type) + " elements of " + std::to_string(f.element_size) +
                         " bytes");
    }
  }

  /// Checks the header, the size, the checksum and the structure; returns the sections.
  static std::map<std::string, section> parse(const std::uint8_t* data, std::size_t size, const std::string& source) {
    if (size != 0 && data == nullptr) reject(source, "null data");
    constexpr std::size_t magic_bytes = sizeof(detail::checkpoint_magic);
    const std::size_t probe = std::min(size, magic_bytes);
    if (std::memcmp(data ? data : reinterpret_cast<const std::uint8_t*>(""), detail::checkpoint_magic, probe) != 0)
      reject(source, "not a checkpoint (bad magic)");
    constexpr std::size_t minimum = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    if (size < minimum)
      reject(source, "truncated: " + std::to_string(size) + " bytes, a checkpoint has at least " +
                         std::to_string(minimum));
    const std::uint32_t order = detail::get_le<std::uint32_t>(data + 12);
    if (order == 0x04030201u)
      reject(source, "big-endian checkpoint (byte-order marker 01 02 03 04); this build reads little-endian files");
    if (order != detail::checkpoint_byte_order) reject(source, "bad byte-order marker (the header is corrupt)");
    if (!detail::host_is_little_endian()) reject(source, "this host is big-endian; checkpoints are little-endian");
    const std::uint32_t version = detail::get_le<std::uint32_t>(data + 8);
    if (version != detail::checkpoint_version)
      reject(source, "version " + std::to_string(version) + ", this build reads version " +
                         std::to_string(detail::checkpoint_version));
    const std::uint64_t declared = detail::get_le<std::uint64_t>(data + 16);
    if (declared > size)
      reject(source, "truncated: " + std::to_string(size) + " of " + std::to_string(declared) + " bytes");
    if (declared < size)
      reject(source, "size mismatch: " + std::to_string(size) + " bytes, the header records " +
                         std::to_string(declared) + " (trailing data or a corrupt header)");
    const std::size_t body = size - detail::checkpoint_checksum_bytes;
    if (detail::crc64(data, body) != detail::get_le<std::uint64_t>(data + body))
      reject(source, "checksum mismatch (the file is corrupt)");
    // The checksum matched: what follows only fails for files written by something else.
    const std::uint32_t count = detail::get_le<std::uint32_t>(data + 24);
    if (count > detail::checkpoint_max_sections)
      reject(source, "corrupt: " + std::to_string(count) + " sections, at most " +
                         std::to_string(detail::checkpoint_max_sections));
    if (detail::get_le<std::uint32_t>(data + 28) != 0) reject(source, "corrupt: reserved header field is not 0");
    std::map<std::string, section> sections;
    std::size_t at = detail::checkpoint_header_bytes;
    std::uint32_t index = 0;
    const auto need = [&](std::size_t bytes, const char* what) {
      if (bytes > body - at)
        reject(source, "corrupt: section " + std::to_string(index) + " (" + what + ") runs past the end");
    };
    for (std::uint32_t i = 0; i < count; ++i) {
      index = i;
      section s{};
      need(4, "name length");
      const std::uint32_t name_size = detail::get_le<std::uint32_t>(data + at);
      at += 4;
      if (name_size == 0 || name_size > detail::checkpoint_max_name)
        reject(source, "corrupt: section " + std::to_string(i) + " has a name of " + std::to_string(name_size) +
                           " bytes (1 to " + std::to_string(detail::checkpoint_max_name) + " allowed)");
      need(name_size, "name");
      s.name_offset = at;
      s.name_size = name_size;
      if (std::memchr(data + at, 0, name_size) != nullptr)
        reject(source, "corrupt: section " + std::to_string(i) + " has a NUL byte in its name");
      at += name_size;
      need(16, "type, element size and count");
      s.type = detail::get_le<std::uint32_t>(data + at);
      s.element_size = detail::get_le<std::uint32_t>(data + at + 4);
      s.count = detail::get_le<std::uint64_t>(data + at + 8);
      at += 16;
      const std::string name(reinterpret_cast<const char*>(data + s.name_offset), s.name_size);
      const std::uint32_t implied = detail::checkpoint_type_size(s.type);
      const bool known = s.type >= 1 && s.type <= 13;
      if (!known) reject(source, "corrupt: section '" + name + "' has unknown type code " + std::to_string(s.type));
      if (implied != 0 ? s.element_size != implied
                       : (s.element_size == 0 || s.element_size > detail::checkpoint_max_element))
        reject(source, "corrupt: section '" + name + "' of type " + detail::checkpoint_type_name(s.type) +
                           " has elements of " + std::to_string(s.element_size) + " bytes");
      // count * element_size <= remaining, without overflow.
      if (s.count > (body - at) / s.element_size)
        reject(source, "corrupt: section '" + name + "' has " + std::to_string(s.count) + " elements of " +
                           std::to_string(s.element_size) + " bytes, more than the " + std::to_string(body - at) +
                           " bytes left");
      s.payload_offset = at;
      at += std::size_t(s.count) * s.element_size;
      if (s.type == std::uint32_t(detail::checkpoint_type::boolean)) {
        for (std::size_t k = 0; k < s.count; ++k)
          if (data[s.payload_offset + k] > 1)
            reject(source, "corrupt: section '" + name + "' holds a bool that is neither 0 nor 1");
      }
      if (!sections.emplace(name, s).second) reject(source, "corrupt: section '" + name + "' appears twice");
    }
    if (at != body)
      reject(source, "corrupt: " + std::to_string(body - at) + " bytes after the last section");
    return sections;
  }

  std::vector<field> fields_;
  std::map<std::string, std::size_t> index_;
};

/// @brief Rotating checkpoints in a directory: `dir/<prefix>-<step, at least 12 digits>.rlkc`,
/// keeping the newest `keep_last`. Other files in the directory (and temporary files of an
/// interrupted save) are ignored.
class checkpoint_directory {
public:
  /// @brief Creates `dir` (and its parents) if needed.
  /// @param dir the directory of the checkpoints
  /// @param prefix file name prefix: letters, digits, '_', '-' and '.' only
  /// @param keep_last newest files kept by save(), >= 1
  /// @throw std::invalid_argument on an empty dir, a bad prefix or keep_last 0; rlkernels::error
  ///        if the directory cannot be created
  checkpoint_directory(std::string dir, std::string prefix = "checkpoint", std::size_t keep_last = 3)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), keep_last_(keep_last) {
    constexpr const char* who = "rlkernels::checkpoint_directory";
    RLK_EXPECTS(!dir_.empty(), std::invalid_argument, who, ": the directory name is empty");
    RLK_EXPECTS(keep_last_ >= 1, std::invalid_argument, who, ": keep_last must be >= 1, got ", keep_last_);
    RLK_EXPECTS(!prefix_.empty() && std::all_of(prefix_.begin(), prefix_.end(),
                                                [](char c) {
                                                  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                                         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
                                                }),
                std::invalid_argument, who, ": prefix '", prefix_, "' must be non-empty letters, digits, '_', '-' or '.'");
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    RLK_EXPECTS(!ec, error, who, ": cannot create '", dir_, "': ", ec.message());
  }

  /// The directory.
  const std::string& directory() const noexcept { return dir_; }
  /// Path of the checkpoint of `step`: DIR/PREFIX-STEP.rlkc, STEP with at least 12 digits.
  std::string path_for(std::uint64_t step) const {
    std::string digits = std::to_string(step);
    if (digits.size() < 12) digits.insert(0, 12 - digits.size(), '0');
    return (std::filesystem::path(dir_) / (prefix_ + "-" + digits + ".rlkc")).string();
  }

  /// @brief Saves `c` as the checkpoint of `step` (atomically, see checkpoint::save), then removes
  /// the oldest checkpoints beyond keep_last. Returns the path written.
  /// @throw rlkernels::error on an I/O failure (the older checkpoints are then kept)
  std::string save(const checkpoint& c, std::uint64_t step) const {
    const std::string path = path_for(step);
    c.save(path);
    const std::vector<entry> all = entries();
    for (std::size_t i = 0; i + keep_last_ < all.size(); ++i) {
      std::error_code ec;
      std::filesystem::remove(all[i].path, ec);  // best effort: a leftover old file is harmless
    }
    return path;
  }

  /// Checkpoint files of this prefix, oldest (smallest step) first.
  std::vector<std::string> list() const {
    std::vector<std::string> out;
    for (const entry& e : entries()) out.push_back(e.path);
    return out;
  }

  /// The newest checkpoint, or nullopt if there is none.
  std::optional<std::string> latest() const {
    const std::vector<entry> all = entries();
    if (all.empty()) return std::nullopt;
    return all.back().path;
  }

private:
  struct entry {
    std::uint64_t step;
    std::string path;
  };

  std::vector<entry> entries() const {
    std::vector<entry> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir_, ec), end;
    if (ec) return out;
    const std::string head = prefix_ + "-", tail = ".rlkc";
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      const std::string name = it->path().filename().string();
      if (name.size() < head.size() + 12 + tail.size() || name.compare(0, head.size(), head) != 0 ||
          name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
        continue;
      const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
      if (digits.size() > 20 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      errno = 0;
      const unsigned long long step = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) continue;
      out.push_back({std::uint64_t(step), it->path().string()});
    }
    std::sort(out.begin(), out.end(), [](const entry& a, const entry& b) {
      return a.step != b.step ? a.step < b.step : a.path < b.path;
    });
    return out;
  }

  std::string dir_;
  std::string prefix_;
  std::size_t keep_last_;
};

}  // namespace rlkernels
